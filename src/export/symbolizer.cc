// See symbolizer.h.
#include "export/symbolizer.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace hush::exporter {

std::string Demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

Symbolizer::Symbolizer(const reader::Trace& trace) {
  for (const reader::EventClass& ec : trace.metadata().events) {
    if (ec.name == "func:module") module_class_ = ec.index;
  }
}

void Symbolizer::Observe(const reader::Event& event) {
  if (event.event_class().index != module_class_) return;
  AddModule(std::string(event.GetString("path").value_or("")),
            std::string(event.GetString("build_id").value_or("")),
            event.GetUint64("base").value_or(0));
}

void Symbolizer::AddModule(std::string path, std::string build_id, std::uint64_t base) {
  modules_.push_back(Module{std::move(path), std::move(build_id), base});
  names_.clear();  // an address may now belong to the new module
}

const Symbolizer::SymbolFile& Symbolizer::FileOf(const Module& m) const {
  SymbolFile& f = files_[m.path];
  if (f.loaded) return f;
  f.loaded = true;
  std::string error;
  const std::unique_ptr<elf::ElfFile> file = elf::ElfFile::Open(m.path, &error);
  if (!file) {
    warnings_.push_back(error);
    return f;
  }
  if (!m.build_id.empty() && file->BuildId() != m.build_id) {
    warnings_.push_back(m.path + ": build-id differs from the traced module's; names may be wrong");
  }
  if (!file->FunctionSymbols(&f.symbols, &error)) warnings_.push_back(error);
  return f;
}

std::string Symbolizer::Resolve(std::uint64_t addr) const {
  if (auto it = names_.find(addr); it != names_.end()) return it->second;
  const Module* best = nullptr;
  for (const Module& m : modules_) {
    if (m.base <= addr && (best == nullptr || m.base >= best->base)) best = &m;
  }
  std::string name;
  if (best == nullptr) {
    name = HexAddressResolver().Resolve(addr);
  } else {
    const std::vector<elf::ElfFile::Symbol>& symbols = FileOf(*best).symbols;
    const std::uint64_t link = addr - best->base;
    auto it = std::upper_bound(
        symbols.begin(), symbols.end(), link,
        [](std::uint64_t v, const elf::ElfFile::Symbol& s) { return v < s.value; });
    if (it != symbols.begin() &&
        link < std::prev(it)->value + std::max<std::uint64_t>(std::prev(it)->size, 1)) {
      name = Demangle(std::prev(it)->name);
    } else {
      const std::size_t slash = best->path.rfind('/');
      name = best->path.substr(slash == std::string::npos ? 0 : slash + 1) + "+" +
             HexAddressResolver().Resolve(link);
    }
  }
  names_.emplace(addr, name);
  return name;
}

}  // namespace hush::exporter
