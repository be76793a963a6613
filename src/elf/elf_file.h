// A small, defensive reader of ELF64 little-endian files (executables, shared libraries and
// relocatable objects), used by `hushtrace list`. No libelf: the headers are parsed here with the
// <elf.h> types.
//
// Nothing in the file is trusted. The file is read with pread() into small buffers (no mapping,
// so a file truncated while it is read gives an error, not SIGBUS); every offset, size and count
// is checked against the file size with overflow-safe arithmetic, and the tables read are capped
// (see the k* limits). Errors name the file and, where there is one, the offset:
//   "prog: section header table (64 x 64 bytes at offset 0x3a18) extends past the end of the file
//   (size 0x2000)"
//
// Addresses: for executables and shared libraries, virtual addresses are the link-time ones (load
// base 0) and are mapped to file offsets through the PT_LOAD segments (the section headers when
// there are no segments). Relocatable objects (.o) have no addresses: every allocated section gets
// a synthetic one, laid out in section order, so that the same code resolves pointers in all three.
#ifndef HUSHTRACE_SRC_ELF_ELF_FILE_H_
#define HUSHTRACE_SRC_ELF_ELF_FILE_H_

#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"

namespace hush::elf {

class ElfFile {
 public:
  static constexpr std::uint64_t kMaxFileSize = std::uint64_t{4} << 30;      // 4 GiB
  static constexpr std::uint64_t kMaxTableBytes = std::uint64_t{256} << 20;  // one table read whole
  static constexpr std::uint32_t kMaxSections = 1u << 20;

  struct Section {
    std::string name;
    Elf64_Shdr header{};
    // sh_addr, or the synthetic address of an allocated section of a relocatable object
    // (0 for sections that are not allocated).
    std::uint64_t addr = 0;
  };

  // A note (docs: ELF gABI "Note Section"), with its descriptor's file offset and address.
  struct Note {
    std::uint32_t type = 0;
    std::string name;               // without the terminating NUL
    std::uint64_t desc_offset = 0;  // file offset of the descriptor
    std::uint64_t desc_size = 0;
    std::uint64_t desc_addr = 0;  // its address (0 if the note is not allocated)
  };

  // How a pointer stored in the file gets its run-time value.
  enum class Relocation {
    kNone,          // no relocation: the stored value (non-PIE executables)
    kRelaRelative,  // RELA relative relocation: the addend
    kRelaSymbol,    // RELA absolute relocation against a symbol: symbol value + addend
    kRelr,          // DT_RELR packed relative relocation: the stored value is the addend
  };

  struct Pointer {
    bool ok = false;
    std::uint64_t value = 0;
    Relocation relocation = Relocation::kNone;
    std::string error;  // when !ok
  };

  // Opens `path` and parses its ELF, program and section headers. On failure returns nullptr and
  // sets *error to a message beginning with `path`.
  static std::unique_ptr<ElfFile> Open(const std::string& path, std::string* error);
  // The same over an image in memory; `name` stands for the file name in messages.
  static std::unique_ptr<ElfFile> FromMemory(std::string name, std::string image,
                                             std::string* error);

  ~ElfFile();
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  const std::string& name() const { return name_; }
  std::uint64_t size() const { return size_; }
  const Elf64_Ehdr& header() const { return ehdr_; }
  std::uint16_t type() const { return ehdr_.e_type; }
  const std::vector<Elf64_Phdr>& segments() const { return phdrs_; }
  const std::vector<Section>& sections() const { return sections_; }

  // The first section named `name`, or nullptr.
  const Section* FindSection(std::string_view name) const;

  // Copies `len` bytes at file offset `offset` into `out`. False (and *error, if given) when the
  // range is not inside the file or the read fails.
  bool Read(std::uint64_t offset, std::size_t len, void* out, std::string* error = nullptr) const;

  // Maps a virtual address to a file offset. *avail gets the number of file bytes from there to
  // the end of the segment (or section) holding it. False if no loaded file data is at `addr`.
  bool AddressToOffset(std::uint64_t addr, std::uint64_t* offset, std::uint64_t* avail) const;
  // Reads `len` bytes at virtual address `addr` (all in one segment or section).
  bool ReadAddress(std::uint64_t addr, std::size_t len, void* out, std::string* error) const;

  // Computes the run-time value (at load base 0) of the 8-byte pointers stored at `addrs`,
  // applying the file's relocations: RELA (x86-64, AArch64 and RISC-V relative and 64-bit
  // absolute relocations; in relocatable objects the section relocation tables) and DT_RELR.
  // Relocation tables are scanned once per call, so resolve addresses in batches. Problems with
  // the relocation tables themselves are added to *warnings.
  std::vector<Pointer> ResolvePointers(const std::vector<std::uint64_t>& addrs,
                                       std::vector<std::string>* warnings = nullptr) const;

  // Calls `fn` for each note of the PT_NOTE segments (or, without segments, of the SHT_NOTE
  // sections). Malformed notes end the walk of their segment and add a message to *warnings.
  void ForEachNote(const std::function<void(const Note&)>& fn,
                   std::vector<std::string>* warnings) const;

  // A defined function symbol (STT_FUNC or STT_GNU_IFUNC) at its link-time address.
  struct Symbol {
    std::string name;  // as stored (mangled)
    std::uint64_t value = 0;
    std::uint64_t size = 0;
  };
  // The function symbols of .symtab, or of .dynsym when the file is stripped, sorted by value.
  // False (and *error) when the table is unreadable.
  bool FunctionSymbols(std::vector<Symbol>* out, std::string* error) const;
  // The link-time address of the defined function `name` (STT_FUNC, value not 0), looked up in
  // .dynsym, then in .symtab. Each table and its strings are read whole, once (a lookup symbol by
  // symbol made ~1,800 reads of 24 bytes of a live attach's critical path). False if absent or
  // unreadable.
  bool FindFunction(std::string_view name, std::uint64_t* value) const;

  // What the dynamic loader reads to find the libraries this module needs: the DT_NEEDED names in
  // order, and the search path of DT_RUNPATH (or, without one, DT_RPATH: `rpath` is then true)
  // split at ':', as stored ($ORIGIN not expanded). Empty for a module without a dynamic
  // section (static executables, objects). False (and *error) when the section or its string
  // table cannot be read; at most kMaxNeeded names, each at most 4 KiB.
  struct Dependencies {
    std::vector<std::string> needed;
    std::vector<std::string> search;
    bool rpath = false;
  };
  static constexpr std::size_t kMaxNeeded = 1024;
  bool ReadDependencies(Dependencies* out, std::string* error) const;

  // The NT_GNU_BUILD_ID note as lowercase hex, or "" if there is none.
  std::string BuildId() const;

  // "<name>: <what> (offset 0x<offset>)".
  std::string ErrorAt(std::uint64_t offset, const std::string& what) const;
  std::string Error(const std::string& what) const { return name_ + ": " + what; }

 private:
  ElfFile() = default;
  bool Parse(std::string* error);
  bool ParseSections(std::string* error);
  bool ParseSegments(std::string* error);
  void LayoutRelocatable();

  struct Region {
    std::uint64_t addr;
    std::uint64_t size;  // bytes backed by the file
    std::uint64_t offset;
  };
  struct SymbolTable {
    std::uint64_t offset = 0;  // file offset of entry 0
    std::uint64_t count = 0;   // entries readable (bounded by the file or the section)
    std::uint64_t str_offset = 0;
    std::uint64_t str_size = 0;
  };
  struct RelocTable {
    std::uint64_t offset = 0;  // file offset
    std::uint64_t size = 0;    // bytes
    std::uint64_t entsize = 0;
    bool relr = false;
    std::uint64_t base = 0;  // added to r_offset (relocatable objects: the target section address)
    SymbolTable symbols;
  };
  std::vector<RelocTable> RelocationTables(std::vector<std::string>* warnings) const;
  bool ResolveSymbol(const SymbolTable& table, std::uint64_t index, std::uint64_t* value,
                     std::string* error) const;
  std::string SymbolName(const SymbolTable& table, const Elf64_Sym& sym) const;

  std::string name_;
  base::UniqueFd fd_;  // Open; FromMemory: none
  std::string image_;  // FromMemory
  std::uint64_t size_ = 0;
  Elf64_Ehdr ehdr_{};
  std::vector<Elf64_Phdr> phdrs_;
  std::vector<Section> sections_;
  std::vector<Region> regions_;
};

const char* RelocationName(ElfFile::Relocation r);

}  // namespace hush::elf

#endif  // HUSHTRACE_SRC_ELF_ELF_FILE_H_
