// Names of traced functions, for every view of a trace (report, dump, hist, export).
//
// A function-tracing trace records addresses (func:entry/exit/call {addr}) and, once per loaded
// module, where it was mapped (func:module {path, build_id, base}). Symbolizer learns that module
// map from the events it is shown (Observe) and names an address as
//
//   calc::fib(int)             the demangled ELF symbol (.symtab, else .dynsym) containing it
//   libfoo.so+0x1a2b           module and offset, when no symbol covers it or the file is gone
//   0x7f0012345678             the address, when no module of the trace contains it
//
// The module of an address is the one with the greatest base at or below it (of two at the same
// base, the later: a library loaded again after dlclose). A module's file is opened once, on the
// first address resolved in it; a file whose build-id differs from the traced module's is used
// with a warning. Names are cached per address; a new module clears that cache.
//
// Every view feeds all events, in time order, to Observe() before resolving the addresses they
// carry: the runtime writes a module's func:module event before it patches the module, so the
// map is complete for every address that can appear. Single-threaded.
#ifndef HUSHTRACE_SRC_EXPORT_SYMBOLIZER_H_
#define HUSHTRACE_SRC_EXPORT_SYMBOLIZER_H_

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "elf/elf_file.h"
#include "export/symbol_resolver.h"
#include "hushtrace/reader.h"

namespace hush::exporter {

// "calc::fib(int)" for "_ZN4calc3fibEi"; the name itself when it is not a mangled C++ name.
std::string Demangle(const std::string& name);

class Symbolizer final : public SymbolResolver {
 public:
  explicit Symbolizer(const reader::Trace& trace);
  // Adds the module of a func:module event to the map; other events are ignored (cheap).
  void Observe(const reader::Event& event);
  void AddModule(std::string path, std::string build_id, std::uint64_t base);
  std::string Resolve(std::uint64_t addr) const override;
  // Files that could not be read or did not match their build-id, one line each.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  struct Module {
    std::string path, build_id;
    std::uint64_t base = 0;
  };
  struct SymbolFile {
    bool loaded = false;
    std::vector<elf::ElfFile::Symbol> symbols;  // sorted by value
  };
  const SymbolFile& FileOf(const Module& m) const;

  std::size_t module_class_ = SIZE_MAX;
  std::vector<Module> modules_;
  mutable std::map<std::string, SymbolFile> files_;  // by path
  mutable std::unordered_map<std::uint64_t, std::string> names_;
  mutable std::vector<std::string> warnings_;
};

}  // namespace hush::exporter

#endif  // HUSHTRACE_SRC_EXPORT_SYMBOLIZER_H_
