// Session clock: which counter timestamps events and how it maps to wall-clock time.
//
// The fast path reads the cycle counter (include/hushtrace/internal/cycle_clock.h). A session
// uses it only when the TSC is invariant (CPUID 0x80000007 EDX bit 8); otherwise every event takes
// the slow path and is stamped with CLOCK_MONOTONIC in nanoseconds.
//
// Calibration costs nothing measurable at session start: it records one reference pair
// (counter, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME) and estimates the frequency over at least 50 us,
// only in the process's first calibration: later sessions start from the best estimate so far
// (the TSC is invariant), which Prepare() can take ahead of time (the control server does). The
// 50 us need not be a spin: CalibrateBegin() takes the reference and CalibrateEnd() the second
// pair after whatever work the caller did in between, spinning only for what is left of them
// (a session's start creates its directories and scans the registry there: no spin at all).
// Refine() later measures the frequency over the whole span since the reference, which bounds
// the error of any timestamp to about twice the sampling error of the two pairs (tens of ns),
// whatever the session length. The consumer refines periodically and Stop() once more; the
// metadata file is rewritten each time, so a crashed trace has a recent calibration.
#ifndef HUSHTRACE_SRC_CLOCK_CLOCK_H_
#define HUSHTRACE_SRC_CLOCK_CLOCK_H_

#include <cstdint>
#include <string>

namespace hush::clock {

struct Calibration {
  bool use_tsc = false;
  std::uint64_t freq_hz = 1000000000;
  // "nominal" (ns clock), "spin" (start estimate), "cntfrq" (aarch64 start), "span" (refined);
  // "pending" between CalibrateBegin and CalibrateEnd in a process's first calibration
  std::string freq_source;
  // Wall-clock time of counter value 0, split as CTF wants it: offset_s seconds plus
  // offset_cycles counter cycles.
  std::int64_t offset_s = 0;
  std::int64_t offset_cycles = 0;
  // The reference taken at session start.
  std::uint64_t ref_ticks = 0;
  std::uint64_t ref_mono_ns = 0;
  std::uint64_t ref_real_ns = 0;
  std::uint64_t span_ns = 0;  // length of the span the frequency was measured over
  // The (counter, CLOCK_REALTIME) pair taken right after the reference, from which CalibrateEnd
  // derives ref_real_ns once the frequency is known.
  std::uint64_t ref_second_ticks = 0;
  std::uint64_t ref_second_real_ns = 0;
};

// Whether the cycle counter can time a session: an invariant TSC (x86-64) or the generic
// timer's CNTVCT_EL0 with a programmed CNTFRQ_EL0 (aarch64).
bool TscIsInvariant();
// The counter's frequency as the hardware states it: CNTFRQ_EL0 on aarch64 (the start estimate,
// freq_source "cntfrq"); 0 where there is none (x86-64: the TSC frequency is measured).
std::uint64_t CounterFrequency();
// The counter's name in the trace metadata (hushtrace_clock_source): "tsc" or "cntvct".
const char* CounterName();
// The metadata's clock description when the counter is used.
const char* CounterDescription();
// Reads the session clock (cycle counter or CLOCK_MONOTONIC ns).
std::uint64_t Now(bool use_tsc);
Calibration Calibrate();  // CalibrateBegin() then CalibrateEnd()
Calibration CalibrateBegin();
void CalibrateEnd(Calibration& c);
// Re-measures the frequency over the span since the reference and recomputes the offset.
void Refine(Calibration& c);
// Takes the first frequency estimate now (a ~50 us spin), if none was taken yet.
void Prepare();

}  // namespace hush::clock

#endif  // HUSHTRACE_SRC_CLOCK_CLOCK_H_
