// The tracepoints compiled into an ELF module, read from the file (docs/format.md, section 5).
//
// Section `hush_desc` is an array of 8-byte pointers to hush::internal::Descriptor objects
// {uint32 state, uint32 reserved, const char* meta}; `meta` points to a self-contained HTP1 record.
// Both pointers are resolved as the loader would (ElfFile::ResolvePointers: RELA relative and
// symbol relocations, DT_RELR, or the stored value in non-PIE executables), then each record is
// parsed with hush::registry::ParseMetaRecord. When the section headers are gone (sstrip), the
// array is found through the module's `.note.hushtrace` note, as the runtime does.
//
// Section `hush_jump` (x86-64 static-key sites) is counted per tracepoint: each entry names the
// descriptor of its site.
//
// Sites with the same "provider:name", kind and field layout form one tracepoint, as in the
// runtime registry; its locations are those of all its sites.
#ifndef HUSHTRACE_SRC_ELF_TRACEPOINTS_H_
#define HUSHTRACE_SRC_ELF_TRACEPOINTS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "elf/elf_file.h"
#include "registry/meta_record.h"

namespace hush::elf {

struct Tracepoint {
  registry::MetaRecord meta;           // file and line: those of the first location
  std::vector<std::string> locations;  // "file:line" of every site, sorted, without duplicates
  std::size_t sites = 0;               // descriptors (one per site and translation unit)
  std::size_t jump_sites = 0;          // static-key sites (hush_jump entries) of its descriptors
};

struct ModuleTracepoints {
  std::string path;
  std::string build_id;        // NT_GNU_BUILD_ID as lowercase hex; "" if the module has none
  std::uint16_t elf_type = 0;  // ET_EXEC, ET_DYN or ET_REL
  bool has_section = false;    // the module has a hush_desc array (possibly empty)
  std::uint64_t slots = 0;     // entries in hush_desc (null entries included)
  std::vector<Tracepoint> tracepoints;  // sorted by name, then kind, then field layout
  // Entries, descriptors or records that could not be read and were skipped; each message names
  // the file and the address or offset.
  std::vector<std::string> warnings;
};

// Reads the module's tracepoints. False with *error for problems that stop the whole reading (a
// malformed hush_desc section); per-site problems go to out->warnings.
bool ReadTracepoints(const ElfFile& file, ModuleTracepoints* out, std::string* error);
// Opens `path` (ElfFile::Open) and reads its tracepoints.
bool ReadTracepointsFromFile(const std::string& path, ModuleTracepoints* out, std::string* error);

}  // namespace hush::elf

#endif  // HUSHTRACE_SRC_ELF_TRACEPOINTS_H_
