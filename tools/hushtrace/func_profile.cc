// See func_profile.h.
#include "func_profile.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstdio>

namespace hush::cli {
namespace {

std::string FormatNs(std::int64_t ns) {
  char buf[64];
  const double v = static_cast<double>(ns);
  if (ns < 1000)
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  else if (ns < 1000000)
    std::snprintf(buf, sizeof buf, "%.1f us", v / 1e3);
  else if (ns < 1000000000)
    std::snprintf(buf, sizeof buf, "%.2f ms", v / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.3f s", v / 1e9);
  return buf;
}

std::vector<FunctionProfile::Row> SortedRows(
    std::map<std::string, FunctionProfile::Row>&& by_name) {
  std::vector<FunctionProfile::Row> rows;
  for (auto& [name, r] : by_name) rows.push_back(std::move(r));
  std::sort(rows.begin(), rows.end(),
            [](const FunctionProfile::Row& a, const FunctionProfile::Row& b) {
              return a.total != b.total ? a.total > b.total : a.name < b.name;
            });
  return rows;
}

}  // namespace

// One entry per (caller, callee): the list stays as short as the subtree's distinct edges.
void FunctionProfile::AddCounted(std::vector<Counted>& list, const Counted& k) {
  for (Counted& c : list) {
    if (c.caller == k.caller && c.callee == k.callee) {
      c.amount += k.amount;
      return;
    }
  }
  list.push_back(k);
}

bool FunctionNameMatches(const std::string& glob, const std::string& name) {
  if (::fnmatch(glob.c_str(), name.c_str(), 0) == 0) return true;
  const std::size_t paren = name.find('(');
  return paren != std::string::npos &&
         ::fnmatch(glob.c_str(), name.substr(0, paren).c_str(), 0) == 0;
}

FunctionProfile::FunctionProfile(const reader::Trace& trace) : symbols_(trace) {
  for (const reader::EventClass& ec : trace.metadata().events) {
    const int i = static_cast<int>(ec.index);
    if (ec.name == "func:entry") entry_ = i;
    if (ec.name == "func:exit") exit_ = i;
    if (ec.name == "func:call") call_ = i;
  }
}

void FunctionProfile::AddTo(Stats& s, std::int64_t duration, std::int64_t children) {
  ++s.calls;
  s.self += std::max<std::int64_t>(0, duration - children);
  s.max = std::max(s.max, duration);
}

void FunctionProfile::Record(std::uint64_t addr, std::int64_t duration, std::int64_t children) {
  AddTo(by_addr_[addr], duration, children);
}

void FunctionProfile::Edge(std::uint64_t caller, std::uint64_t callee, std::int64_t duration,
                           std::int64_t children, bool outermost) {
  Stats& s = edges_[{caller, callee}];
  AddTo(s, duration, children);
  if (outermost) s.total += duration;
}

std::int64_t& FunctionProfile::TotalOf(std::uint64_t caller, std::uint64_t callee) {
  return caller == kNoCaller ? by_addr_[callee].total : edges_[{caller, callee}].total;
}

void FunctionProfile::Add(const reader::Event& e) {
  symbols_.Observe(e);
  const int ci = static_cast<int>(e.event_class().index);
  if (ci != entry_ && ci != exit_ && ci != call_) return;
  const std::uint64_t addr = e.GetUint64("addr").value_or(0);
  const std::uint64_t ts = e.timestamp();
  Thread& t = threads_[e.tid()];
  if (ci == entry_) {
    t.stack.push_back(Open{addr, ts});
    ++t.depth[addr];
  } else if (ci == exit_) {
    // Frames above the match were left without an exit (should not happen: counted).
    std::size_t depth = t.stack.size();
    while (depth > 0 && t.stack[depth - 1].addr != addr) --depth;
    if (depth == 0) {
      ++unmatched_;
      return;
    }
    unmatched_ += t.stack.size() - depth;
    for (std::size_t i = depth - 1; i < t.stack.size(); ++i) --t.depth[t.stack[i].addr];
    const Open o = t.stack[depth - 1];
    t.stack.resize(depth - 1);
    const std::int64_t d = ts >= o.begin ? static_cast<std::int64_t>(ts - o.begin) : 0;
    Record(addr, d, o.children);
    const bool outermost = t.depth[addr] == 0;  // no other frame of the function is open
    if (outermost) by_addr_[addr].total += d;
    if (!t.stack.empty()) {
      t.stack.back().children += d;
      Edge(t.stack.back().addr, addr, d, o.children, outermost);
    }
  } else {
    // func:call: children exit (and are written) before their parent and began after it.
    const std::uint64_t begin = e.GetUint64("entry_ts").value_or(ts);
    const std::int64_t d = ts >= begin ? static_cast<std::int64_t>(ts - begin) : 0;
    Done self{addr, begin, d, 0, {}};
    while (!t.done.empty() && t.done.back().begin >= begin) {
      Done& c = t.done.back();
      self.children += c.duration;
      // A direct call of this function from itself is nested in this frame: not outermost.
      Edge(addr, c.addr, c.duration, c.children, c.addr != addr);
      if (c.addr != addr) AddCounted(self.counted, Counted{addr, c.addr, c.duration});
      for (const Counted& k : c.counted) AddCounted(self.counted, k);
      t.done.pop_back();
    }
    // Frames of this function inside this call were counted as outermost: this one is, now.
    std::erase_if(self.counted, [&](const Counted& k) {
      if (k.callee != addr) return false;
      TotalOf(k.caller, k.callee) -= k.amount;
      return true;
    });
    self.counted.push_back(Counted{kNoCaller, addr, d});
    Record(addr, d, self.children);
    by_addr_[addr].total += d;
    t.done.push_back(std::move(self));
  }
}

std::vector<FunctionProfile::Row> FunctionProfile::Rows() const {
  std::map<std::string, Row> by_name;  // aliases and clones with one name are merged
  for (const auto& [addr, s] : by_addr_) {
    MergeInto(by_name, Resolve(addr), s);
  }
  return SortedRows(std::move(by_name));
}

void FunctionProfile::MergeInto(std::map<std::string, Row>& rows, const std::string& name,
                                const Stats& s) {
  Row& r = rows[name];
  r.name = name;
  r.calls += s.calls;
  r.total += s.total;
  r.self += s.self;
  r.max = std::max(r.max, s.max);
}

bool FunctionProfile::Matches(const std::string& glob) const {
  for (const auto& [addr, s] : by_addr_) {
    if (FunctionNameMatches(glob, Resolve(addr))) return true;
  }
  return false;
}

std::vector<FunctionProfile::Row> FunctionProfile::Edges(const std::string& glob,
                                                         bool callers) const {
  std::map<std::string, Row> by_name;
  for (const auto& [edge, s] : edges_) {
    if (!FunctionNameMatches(glob, Resolve(callers ? edge.second : edge.first))) continue;
    MergeInto(by_name, Resolve(callers ? edge.first : edge.second), s);
  }
  return SortedRows(std::move(by_name));
}

void FunctionProfile::PrintTable(const reader::Trace& trace, const char* title,
                                 const std::vector<Row>& rows, std::size_t max_rows) const {
  std::size_t width = 24;
  for (std::size_t i = 0; i < rows.size() && i < max_rows; ++i)
    width = std::max(width, std::min<std::size_t>(rows[i].name.size() + 2, 60));
  const int w = static_cast<int>(width);
  std::printf("\n%-*s %10s %10s %10s %10s %10s\n", w, title, "calls", "total", "self", "avg",
              "max");
  for (std::size_t i = 0; i < rows.size() && i < max_rows; ++i) {
    const Row& r = rows[i];
    std::string name = r.name;
    if (name.size() > width - 2) name = name.substr(0, width - 5) + "...";
    const std::int64_t avg = r.calls == 0 ? 0 : r.total / static_cast<std::int64_t>(r.calls);
    std::printf("  %-*s %10llu %10s %10s %10s %10s\n", w - 2, name.c_str(),
                static_cast<unsigned long long>(r.calls),
                FormatNs(trace.CyclesToNs(r.total)).c_str(),
                FormatNs(trace.CyclesToNs(r.self)).c_str(), FormatNs(trace.CyclesToNs(avg)).c_str(),
                FormatNs(trace.CyclesToNs(r.max)).c_str());
  }
  if (rows.size() > max_rows) std::printf("  ... %zu more\n", rows.size() - max_rows);
}

void FunctionProfile::Print(const reader::Trace& trace, std::size_t max_rows) const {
  if (by_addr_.empty()) return;
  PrintTable(trace, "functions (by total time)", Rows(), max_rows);
  std::uint64_t open = 0;
  for (const auto& [tid, t] : threads_) open += t.stack.size();
  if (open != 0 || unmatched_ != 0) {
    std::printf("  (%llu calls still open at the end of the trace, %llu exits without an entry)\n",
                static_cast<unsigned long long>(open), static_cast<unsigned long long>(unmatched_));
  }
  for (const std::string& w : symbols_.warnings()) std::printf("WARNING: %s\n", w.c_str());
}

void FunctionProfile::PrintEdges(const reader::Trace& trace, const std::string& glob, bool callers,
                                 std::size_t max_rows) const {
  const std::string title = (callers ? "callers of " : "callees of ") + glob;
  PrintTable(trace, title.c_str(), Edges(glob, callers), max_rows);
}

}  // namespace hush::cli
