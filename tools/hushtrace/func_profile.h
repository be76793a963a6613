// The function profile of `hushtrace report`: calls, total, self, average and maximum time per
// traced function, from func:entry/func:exit (or func:call) events, with addresses named by the
// shared exporter::Symbolizer (demangled symbols, else module+offset), and the call graph
// (caller -> callee edges) behind `report --callers/--callees`.
//
// The figures follow uftrace's `report`:
//   calls  every call, at every depth of recursion;
//   total  time between entry and exit of the OUTERMOST frames of the function on their thread
//          only: a recursive call inside another call of the same function adds nothing (its
//          time is already inside the outer one), so a function's total never exceeds the time
//          of the frames that contain it;
//   self   total minus the time of its direct callees, summed over every call (recursive ones
//          included): the self times of all functions add up to the total of the outermost ones;
//   max    the longest single call.
// Recursion is by address (the function, not its name).
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_FUNC_PROFILE_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_FUNC_PROFILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "export/symbolizer.h"
#include "hushtrace/reader.h"

namespace hush::cli {

// Whether `name` (demangled) matches `glob` (fnmatch): the whole name, or the part before its
// parameter list ("calc::fib" and "calc::fib(int)" both match "calc::fib(int)").
bool FunctionNameMatches(const std::string& glob, const std::string& name);

class FunctionProfile {
 public:
  explicit FunctionProfile(const reader::Trace& trace);
  // Feed every event in time order.
  void Add(const reader::Event& e);
  bool empty() const { return by_addr_.empty(); }
  // Prints the section (nothing when no function event was seen); at most `max_rows` rows.
  void Print(const reader::Trace& trace, std::size_t max_rows) const;

  struct Row {
    std::string name;
    std::uint64_t calls = 0;
    std::int64_t total = 0, self = 0, max = 0;  // clock cycles
  };
  // Per resolved function, sorted by total time (for Print and tests).
  std::vector<Row> Rows() const;

  // The direct callers (`callers` true) or callees of the functions whose name matches `glob`
  // (fnmatch, against the full demangled name or the part before its parameter list): per other
  // function, the calls and the time of the callee's frames in them (total: every call; self and
  // max as in Row). Sorted by total. Empty when no function matches (see Matches()).
  std::vector<Row> Edges(const std::string& glob, bool callers) const;
  // Whether any traced function's name matches `glob` (as in Edges()).
  bool Matches(const std::string& glob) const;
  // Prints "callers of GLOB" / "callees of GLOB" (Edges()).
  void PrintEdges(const reader::Trace& trace, const std::string& glob, bool callers,
                  std::size_t max_rows) const;

  // Module files that could not be read or did not match their build-id.
  const std::vector<std::string>& warnings() const { return symbols_.warnings(); }

  // "name" of the function at `addr` (exporter::Symbolizer::Resolve).
  std::string Resolve(std::uint64_t addr) const { return symbols_.Resolve(addr); }

 private:
  struct Stats {
    std::uint64_t calls = 0;
    std::int64_t total = 0, self = 0, max = 0;
  };
  struct Open {
    std::uint64_t addr, begin;
    std::int64_t children = 0;
  };
  // func:call mode: a completed call not yet claimed by its parent, with the outermost-frame
  // totals already counted inside its subtree (function totals: caller kNoCaller; edge totals),
  // which a later enclosing call of the same callee takes back.
  static constexpr std::uint64_t kNoCaller = ~std::uint64_t{0};
  struct Counted {
    std::uint64_t caller, callee;
    std::int64_t amount;
  };
  struct Done {
    std::uint64_t addr, begin;
    std::int64_t duration, children;
    std::vector<Counted> counted;
  };
  struct Thread {
    std::vector<Open> stack;
    std::unordered_map<std::uint64_t, std::uint32_t> depth;  // open frames per address
    std::vector<Done> done;
  };
  void Record(std::uint64_t addr, std::int64_t duration, std::int64_t children);
  // A call of `callee` from `caller`; its time adds to the edge's total when `outermost`.
  void Edge(std::uint64_t caller, std::uint64_t callee, std::int64_t duration,
            std::int64_t children, bool outermost);
  std::int64_t& TotalOf(std::uint64_t caller, std::uint64_t callee);
  static void AddCounted(std::vector<Counted>& list, const Counted& k);
  // Adds `s` to the row `name` (aliases, clones and edges of one name are merged).
  static void MergeInto(std::map<std::string, Row>& rows, const std::string& name, const Stats& s);
  static void AddTo(Stats& s, std::int64_t duration, std::int64_t children);
  void PrintTable(const reader::Trace& trace, const char* title, const std::vector<Row>& rows,
                  std::size_t max_rows) const;

  int entry_ = -1, exit_ = -1, call_ = -1;
  exporter::Symbolizer symbols_;
  std::unordered_map<std::uint32_t, Thread> threads_;
  std::unordered_map<std::uint64_t, Stats> by_addr_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, Stats> edges_;  // (caller, callee)
  std::uint64_t unmatched_ = 0;
};

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_FUNC_PROFILE_H_
