// The raw timestamp source of the fast path: the platform's cycle counter.
//
// One seam per platform (x86-64 rdtsc; aarch64 cntvct_el0; elsewhere the vDSO clock). The session
// decides at start whether the counter can be trusted (invariant TSC). When it cannot, every
// thread's writer is put in "slow mode" (ThreadWriter::end == nullptr), so the fast path always
// defers to the out-of-line path, which timestamps with CLOCK_MONOTONIC instead. Readers never
// see a mix: one session uses one clock, named in the trace metadata.
#ifndef HUSHTRACE_INTERNAL_CYCLE_CLOCK_H_
#define HUSHTRACE_INTERNAL_CYCLE_CLOCK_H_

#include <cstdint>

#if !defined(__x86_64__) && !defined(__aarch64__)
#include <time.h>
#endif

namespace hush::internal {

inline std::uint64_t ReadCycleCounter() {
#if defined(__x86_64__)
  // 64-bit outputs: rdtsc clears the upper halves of rax and rdx, and saying so spares the
  // compiler a zero-extending `mov %eax, %eax` on every event.
  std::uint64_t lo, hi;
  // Not serializing (no lfence): an event's timestamp may be taken a few instructions early,
  // which is below the clock's precision as declared in the metadata.
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (hi << 32) | lo;
#elif defined(__aarch64__)
  std::uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
#endif
}

}  // namespace hush::internal

#endif  // HUSHTRACE_INTERNAL_CYCLE_CLOCK_H_
