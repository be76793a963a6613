// A TimelineSink writing folded stacks, the input of flamegraph.pl and speedscope:
//
//   main;compute;fib 1234567
//   main;compute;fib;fib 98765
//   worker;demo:handle 4000
//
// One line per distinct stack of slices on a thread's track (spans and function calls, outermost
// first, names joined by ';'), with the SELF time of its innermost frame in nanoseconds summed
// over the trace (time spent in the frame and not in a slice nested in it), so a frame's width in
// the flame graph is its total time. Stacks of all threads are merged (as uftrace's and perf's
// flame graphs do); lines are sorted by stack; stacks with no self time are left out. ';' in a
// name becomes ':' and control characters become ' ', so every line splits back into its frames.
// Instants, counters and scheduler slices are not part of a flame graph and are ignored.
//
// Memory: O(distinct stacks x depth), independent of the number of events; output at Finish().
#ifndef HUSHTRACE_SRC_EXPORT_FOLDED_WRITER_H_
#define HUSHTRACE_SRC_EXPORT_FOLDED_WRITER_H_

#include <cstdio>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "export/timeline.h"

namespace hush::exporter {

class FoldedWriter final : public TimelineSink {
 public:
  explicit FoldedWriter(std::FILE* out) : out_(out) {}

  void Process(const ProcessInfo&) override {}
  void Thread(std::uint32_t, std::string_view) override {}
  void CounterTrack(std::uint32_t, Name, Name) override {}
  void SliceBegin(std::int64_t ns, Track track, Name name, Name category,
                  std::span<const Arg> args) override;
  void SliceEnd(std::int64_t ns, Track track, std::span<const Arg> args) override;
  void Instant(std::int64_t, Track, Name, Name, std::span<const Arg>) override {}
  void CounterSample(std::int64_t, std::uint32_t, double) override {}
  bool Finish() override;

 private:
  struct Frame {
    std::uint32_t name;
    std::int64_t begin, children = 0;
  };
  std::FILE* out_;
  std::vector<std::string> names_;                                // cleaned, by name id
  std::unordered_map<std::uint32_t, std::vector<Frame>> stacks_;  // by tid
  std::map<std::vector<std::uint32_t>, std::int64_t> self_;       // stack of name ids -> self ns
  std::vector<std::uint32_t> key_;
};

}  // namespace hush::exporter

#endif  // HUSHTRACE_SRC_EXPORT_FOLDED_WRITER_H_
