// The function profile of `hushtrace report`: calls, total, self, average and maximum time per
// traced function, from func:entry/func:exit (or func:call) events, with addresses resolved to
// demangled symbols through the func:module map and the modules' ELF symbol tables.
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_FUNC_PROFILE_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_FUNC_PROFILE_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "hushtrace/reader.h"

namespace hush::cli {

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

  struct Module {
    std::string path, build_id;
    std::uint64_t base = 0;
  };
  // "name" of the function at `addr`: demangled symbol, else "module+0xoff", else "0xaddr".
  std::string Resolve(std::uint64_t addr) const;

 private:
  struct Stats {
    std::uint64_t calls = 0;
    std::int64_t total = 0, self = 0, max = 0;
  };
  struct Open {
    std::uint64_t addr, begin;
    std::int64_t children = 0;
  };
  struct Done {  // func:call mode: completed calls not yet claimed by their parent
    std::uint64_t begin;
    std::int64_t duration;
  };
  struct Thread {
    std::vector<Open> stack;
    std::vector<Done> done;
  };
  void Record(std::uint64_t addr, std::int64_t duration, std::int64_t children);

  int entry_ = -1, exit_ = -1, call_ = -1, module_ = -1;
  std::unordered_map<std::uint32_t, Thread> threads_;
  std::unordered_map<std::uint64_t, Stats> by_addr_;
  std::vector<Module> modules_;
  std::uint64_t unmatched_ = 0;
  mutable std::vector<std::string> warnings_;
};

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_FUNC_PROFILE_H_
