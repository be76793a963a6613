// Maps perf record timestamps (perf_event_attr.use_clockid) onto the session clock.
//
// Session clock = CLOCK_MONOTONIC ns (no invariant TSC): perf uses CLOCK_MONOTONIC too and the
// map is the identity (exact).
// Session clock = TSC: perf uses CLOCK_MONOTONIC_RAW, which the kernel derives from the same TSC
// with a fixed multiplier, so TSC = a + b * raw_ns exactly up to rounding. The map is that line,
// through the last two (TSC, raw) pairs the reader took (at least 1 ms apart). The reader takes a
// pair at every drain after loading the ring heads, so the records it converts were written
// between the previous pair and this one (or a few µs before the previous): the conversion
// interpolates, and its error is bounded by the pairs' own sampling errors (half an rdtsc window
// each, tens of ns) whatever the slope error. docs/format.md quotes the measured figures.
#ifndef HUSHTRACE_SRC_SCHED_CLOCK_MAP_H_
#define HUSHTRACE_SRC_SCHED_CLOCK_MAP_H_

#include <time.h>

#include <cstdint>

#include "hushtrace/internal/cycle_clock.h"

namespace hush::sched {

// Takes a (TSC, CLOCK_MONOTONIC_RAW ns) pair: the rdtsc / clock_gettime / rdtsc triple with the
// tightest rdtsc window out of up to 16, stopping at one under 60 ns; the ticks are the window's
// midpoint. A preempted or interrupted triple has a wide window and is not used unless all are.
inline void SampleRawPair(long double ticks_per_ns, std::uint64_t* ticks, std::uint64_t* ns) {
  const auto good = static_cast<std::uint64_t>(60 * ticks_per_ns);
  std::uint64_t best = ~std::uint64_t{0};
  for (int i = 0; i < 16 && best > good; ++i) {
    const std::uint64_t a = internal::ReadCycleCounter();
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    const std::uint64_t b = internal::ReadCycleCounter();
    if (b - a < best) {
      best = b - a;
      *ticks = a + (b - a) / 2;
      *ns = static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
    }
  }
}

class ClockMap {
 public:
  // Pairs closer than this to the previous kept pair are dropped: the line through two pairs
  // that close would amplify their sampling errors.
  static constexpr std::uint64_t kMinPairGapNs = 1000000;
  // `ticks_per_ns`: the slope used while there is a single pair.
  ClockMap(bool use_tsc, long double ticks_per_ns) : use_tsc_(use_tsc), slope_(ticks_per_ns) {}

  clockid_t perf_clock() const { return use_tsc_ ? CLOCK_MONOTONIC_RAW : CLOCK_MONOTONIC; }

  // Adds a pair (session ticks, perf clock ns) taken at the same instant.
  void AddPair(std::uint64_t ticks, std::uint64_t ns) {
    if (pairs_ > 0 && (ns < cur_ns_ + kMinPairGapNs || ticks <= cur_ticks_)) return;
    if (pairs_ > 0) {
      slope_ = static_cast<long double>(ticks - cur_ticks_) / static_cast<long double>(ns - cur_ns_);
    }
    cur_ticks_ = ticks;
    cur_ns_ = ns;
    ++pairs_;
  }

  // The line through the last two kept pairs (interpolation for a record written between them,
  // which is what the reader converts: see SchedRecorder::DrainAll).
  std::uint64_t ToSession(std::uint64_t ns) const {
    if (!use_tsc_) return ns;
    const long double delta = (static_cast<long double>(ns) - static_cast<long double>(cur_ns_)) * slope_;
    const long double t = static_cast<long double>(cur_ticks_) + delta;
    return t <= 0 ? 0 : static_cast<std::uint64_t>(t + 0.5L);
  }

  long double slope() const { return slope_; }

 private:
  bool use_tsc_;
  long double slope_;
  std::uint64_t pairs_ = 0;
  std::uint64_t cur_ticks_ = 0, cur_ns_ = 0;
};

}  // namespace hush::sched

#endif  // HUSHTRACE_SRC_SCHED_CLOCK_MAP_H_
