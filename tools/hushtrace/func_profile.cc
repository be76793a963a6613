// See func_profile.h.
#include "func_profile.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "elf/elf_file.h"

namespace hush::cli {
namespace {

std::string Demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

std::string Hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string FormatNs(std::int64_t ns) {
  char buf[64];
  const double v = static_cast<double>(ns);
  if (ns < 1000) std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  else if (ns < 1000000) std::snprintf(buf, sizeof buf, "%.1f us", v / 1e3);
  else if (ns < 1000000000) std::snprintf(buf, sizeof buf, "%.2f ms", v / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3f s", v / 1e9);
  return buf;
}

// Symbols of one module file, loaded on first use.
struct SymbolFile {
  bool loaded = false;
  std::vector<elf::ElfFile::Symbol> symbols;
};

}  // namespace

FunctionProfile::FunctionProfile(const reader::Trace& trace) {
  for (const reader::EventClass& ec : trace.metadata().events) {
    const int i = static_cast<int>(ec.index);
    if (ec.name == "func:entry") entry_ = i;
    if (ec.name == "func:exit") exit_ = i;
    if (ec.name == "func:call") call_ = i;
    if (ec.name == "func:module") module_ = i;
  }
}

void FunctionProfile::Record(std::uint64_t addr, std::int64_t duration, std::int64_t children) {
  Stats& s = by_addr_[addr];
  ++s.calls;
  s.total += duration;
  s.self += std::max<std::int64_t>(0, duration - children);
  s.max = std::max(s.max, duration);
}

void FunctionProfile::Add(const reader::Event& e) {
  const int ci = static_cast<int>(e.event_class().index);
  if (ci < 0 || (ci != entry_ && ci != exit_ && ci != call_ && ci != module_)) return;
  if (ci == module_) {
    Module m;
    m.path = std::string(e.GetString("path").value_or(""));
    m.build_id = std::string(e.GetString("build_id").value_or(""));
    m.base = e.GetUint64("base").value_or(0);
    modules_.push_back(std::move(m));
    return;
  }
  const std::uint64_t addr = e.GetUint64("addr").value_or(0);
  const std::uint64_t ts = e.timestamp();
  Thread& t = threads_[e.tid()];
  if (ci == entry_) {
    t.stack.push_back(Open{addr, ts});
  } else if (ci == exit_) {
    // Frames above the match were left without an exit (should not happen: counted).
    std::size_t depth = t.stack.size();
    while (depth > 0 && t.stack[depth - 1].addr != addr) --depth;
    if (depth == 0) {
      ++unmatched_;
      return;
    }
    unmatched_ += t.stack.size() - depth;
    const Open o = t.stack[depth - 1];
    t.stack.resize(depth - 1);
    const std::int64_t d = ts >= o.begin ? static_cast<std::int64_t>(ts - o.begin) : 0;
    Record(addr, d, o.children);
    if (!t.stack.empty()) t.stack.back().children += d;
  } else {
    // func:call: children exit (and are written) before their parent and began after it.
    const std::uint64_t begin = e.GetUint64("entry_ts").value_or(ts);
    const std::int64_t d = ts >= begin ? static_cast<std::int64_t>(ts - begin) : 0;
    std::int64_t children = 0;
    while (!t.done.empty() && t.done.back().begin >= begin) {
      children += t.done.back().duration;
      t.done.pop_back();
    }
    Record(addr, d, children);
    t.done.push_back(Done{begin, d});
  }
}

std::string FunctionProfile::Resolve(std::uint64_t addr) const {
  static std::map<std::string, SymbolFile> files;
  // The module with the greatest base at or below addr.
  const Module* best = nullptr;
  for (const Module& m : modules_) {
    if (m.base <= addr && (best == nullptr || m.base > best->base)) best = &m;
  }
  if (best == nullptr) return Hex(addr);
  SymbolFile& f = files[best->path];
  if (!f.loaded) {
    f.loaded = true;
    std::string error;
    std::unique_ptr<elf::ElfFile> file = elf::ElfFile::Open(best->path, &error);
    if (!file) {
      warnings_.push_back(error);
    } else {
      if (!best->build_id.empty() && file->BuildId() != best->build_id) {
        warnings_.push_back(best->path + ": build-id differs from the traced module's; names may "
                                         "be wrong");
      }
      if (!file->FunctionSymbols(&f.symbols, &error)) warnings_.push_back(error);
    }
  }
  const std::uint64_t link = addr - best->base;
  auto it = std::upper_bound(
      f.symbols.begin(), f.symbols.end(), link,
      [](std::uint64_t v, const elf::ElfFile::Symbol& s) { return v < s.value; });
  if (it != f.symbols.begin()) {
    --it;
    if (link < it->value + std::max<std::uint64_t>(it->size, 1)) return Demangle(it->name);
  }
  const std::size_t slash = best->path.rfind('/');
  return best->path.substr(slash == std::string::npos ? 0 : slash + 1) + "+" + Hex(link);
}

std::vector<FunctionProfile::Row> FunctionProfile::Rows() const {
  std::map<std::string, Row> by_name;  // aliases and clones with one name are merged
  for (const auto& [addr, s] : by_addr_) {
    const std::string name = Resolve(addr);
    Row& r = by_name[name];
    r.name = name;
    r.calls += s.calls;
    r.total += s.total;
    r.self += s.self;
    r.max = std::max(r.max, s.max);
  }
  std::vector<Row> rows;
  for (auto& [name, r] : by_name) rows.push_back(r);
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.total != b.total ? a.total > b.total : a.name < b.name;
  });
  return rows;
}

void FunctionProfile::Print(const reader::Trace& trace, std::size_t max_rows) const {
  if (by_addr_.empty()) return;
  const std::vector<Row> rows = Rows();
  std::size_t width = 24;
  for (std::size_t i = 0; i < rows.size() && i < max_rows; ++i)
    width = std::max(width, std::min<std::size_t>(rows[i].name.size() + 2, 60));
  const int w = static_cast<int>(width);
  std::printf("\n%-*s %10s %10s %10s %10s %10s\n", w, "functions (by total time)", "calls", "total",
              "self", "avg", "max");
  for (std::size_t i = 0; i < rows.size() && i < max_rows; ++i) {
    const Row& r = rows[i];
    std::string name = r.name;
    if (name.size() > width - 2) name = name.substr(0, width - 5) + "...";
    std::printf("  %-*s %10llu %10s %10s %10s %10s\n", w - 2, name.c_str(),
                static_cast<unsigned long long>(r.calls),
                FormatNs(trace.CyclesToNs(r.total)).c_str(),
                FormatNs(trace.CyclesToNs(r.self)).c_str(),
                FormatNs(trace.CyclesToNs(r.total / static_cast<std::int64_t>(r.calls))).c_str(),
                FormatNs(trace.CyclesToNs(r.max)).c_str());
  }
  if (rows.size() > max_rows) std::printf("  ... %zu more\n", rows.size() - max_rows);
  std::uint64_t open = 0;
  for (const auto& [tid, t] : threads_) open += t.stack.size();
  if (open != 0 || unmatched_ != 0) {
    std::printf("  (%llu calls still open at the end of the trace, %llu exits without an entry)\n",
                static_cast<unsigned long long>(open), static_cast<unsigned long long>(unmatched_));
  }
  for (const std::string& w2 : warnings_) std::printf("WARNING: %s\n", w2.c_str());
}

}  // namespace hush::cli
