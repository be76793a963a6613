// Maps perf record timestamps (perf_event_attr.use_clockid) onto the session clock.
//
// Session clock = CLOCK_MONOTONIC ns (no invariant TSC): perf uses CLOCK_MONOTONIC too and the
// map is the identity (exact).
// Session clock = TSC: perf uses CLOCK_MONOTONIC_RAW, which the kernel derives from the same TSC
// with a fixed multiplier, so TSC = a + b * raw_ns exactly up to rounding. The map is that line,
// estimated from (TSC, raw) pairs taken by the reader: the slope over the span from the first pair
// to the latest one, anchored at the latest pair. Error of one converted timestamp: the anchor's
// sampling error (half the rdtsc..clock_gettime..rdtsc window, tens of ns) plus the slope error
// (about 2 windows / span) times the distance to the anchor (records are converted within one
// drain period, <= 50 ms, of the anchor). docs/format.md quotes the measured figures.
#ifndef HUSHTRACE_SRC_SCHED_CLOCK_MAP_H_
#define HUSHTRACE_SRC_SCHED_CLOCK_MAP_H_

#include <time.h>

#include <cstdint>

namespace hush::sched {

class ClockMap {
 public:
  // `ticks_per_ns`: the provisional estimate used until two pairs span at least 1 ms.
  ClockMap(bool use_tsc, long double ticks_per_ns) : use_tsc_(use_tsc), slope_(ticks_per_ns) {}

  clockid_t perf_clock() const { return use_tsc_ ? CLOCK_MONOTONIC_RAW : CLOCK_MONOTONIC; }

  // Adds a pair (session ticks, perf clock ns) taken at the same instant.
  void AddPair(std::uint64_t ticks, std::uint64_t ns) {
    if (!have_first_) {
      first_ticks_ = ticks;
      first_ns_ = ns;
      have_first_ = true;
    } else if (ns > first_ns_ + 1000000 && ticks > first_ticks_) {
      slope_ = static_cast<long double>(ticks - first_ticks_) / static_cast<long double>(ns - first_ns_);
    }
    anchor_ticks_ = ticks;
    anchor_ns_ = ns;
  }

  std::uint64_t ToSession(std::uint64_t ns) const {
    if (!use_tsc_) return ns;
    const long double delta = (static_cast<long double>(ns) - static_cast<long double>(anchor_ns_)) * slope_;
    const long double t = static_cast<long double>(anchor_ticks_) + delta;
    return t <= 0 ? 0 : static_cast<std::uint64_t>(t + 0.5L);
  }

  long double slope() const { return slope_; }

 private:
  bool use_tsc_;
  long double slope_;
  bool have_first_ = false;
  std::uint64_t first_ticks_ = 0, first_ns_ = 0;
  std::uint64_t anchor_ticks_ = 0, anchor_ns_ = 0;
};

}  // namespace hush::sched

#endif  // HUSHTRACE_SRC_SCHED_CLOCK_MAP_H_
