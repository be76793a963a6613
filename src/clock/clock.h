// Session clock: which counter timestamps events and how it maps to wall-clock time.
//
// The fast path reads the cycle counter (include/hushtrace/internal/cycle_clock.h). A session
// uses it only when the TSC is invariant (CPUID 0x80000007 EDX bit 8); otherwise every event takes
// the slow path and is stamped with CLOCK_MONOTONIC in nanoseconds. The frequency comes from the
// kernel's own TSC conversion in the perf_event mmap page when available, else from a short
// measurement against CLOCK_MONOTONIC_RAW refined over the session's whole duration.
#ifndef HUSHTRACE_SRC_CLOCK_CLOCK_H_
#define HUSHTRACE_SRC_CLOCK_CLOCK_H_

#include <cstdint>
#include <string>

namespace hush::clock {

struct Calibration {
  bool use_tsc = false;
  std::uint64_t freq_hz = 1000000000;
  std::string freq_source;  // "perf", "measured", "nominal"
  // Wall-clock time of counter value 0, split as CTF wants it: offset_s seconds plus
  // offset_cycles counter cycles.
  std::int64_t offset_s = 0;
  std::int64_t offset_cycles = 0;
  // A reference pair taken at calibration time, for refining the frequency later.
  std::uint64_t ref_ticks = 0;
  std::uint64_t ref_mono_ns = 0;
};

bool TscIsInvariant();
// Reads the session clock (cycle counter or CLOCK_MONOTONIC ns).
std::uint64_t Now(bool use_tsc);
std::uint64_t MonotonicRawNs();
// Calibrates the session clock. Costs tens of microseconds (perf page) or ~1 ms (measurement).
Calibration Calibrate();
// Refines a measured frequency with the span since calibration (no effect for "perf").
void Refine(Calibration& c);
// Ticks of the session clock per the given number of nanoseconds.
inline std::uint64_t NsToTicks(const Calibration& c, std::uint64_t ns) {
  return static_cast<std::uint64_t>(static_cast<long double>(ns) * c.freq_hz / 1e9L);
}

}  // namespace hush::clock

#endif  // HUSHTRACE_SRC_CLOCK_CLOCK_H_
