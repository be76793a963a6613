// Session clock calibration. Runs when a session starts, refines and stops; never per event.
#include "clock/clock.h"

#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#if __has_include(<sys/platform/x86.h>)
// glibc >= 2.33: the CPUID leaves ld.so read at start-up. The header is C: its inline functions
// return _Bool, which GCC accepts in C++ and clang does not.
#if defined(__clang__)
#define _Bool bool
#include <sys/platform/x86.h>
#undef _Bool
#else
#include <sys/platform/x86.h>
#endif
#endif
#endif

#include <atomic>
#include <cmath>

#include "hushtrace/internal/cycle_clock.h"

namespace hush::clock {
namespace {

std::uint64_t ReadNs(clockid_t id) {
  timespec ts;
  ::clock_gettime(id, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// Pairs a counter value with a clock reading, taking the tightest of a few tries; the counter
// value is the midpoint of the reads around the clock read.
void SamplePair(bool use_tsc, clockid_t id, std::uint64_t* ticks, std::uint64_t* ns) {
  std::uint64_t best = ~std::uint64_t{0};
  for (int i = 0; i < 5; ++i) {
    const std::uint64_t a = Now(use_tsc);
    const std::uint64_t t = ReadNs(id);
    const std::uint64_t b = Now(use_tsc);
    if (b - a < best) {
      best = b - a;
      *ticks = a + (b - a) / 2;
      *ns = t;
    }
  }
}

void ComputeOffset(Calibration& c) {
  // Wall-clock ns of counter 0 = realtime at the reference - reference ticks / freq.
  const long double base_ns =
      static_cast<long double>(c.ref_real_ns) - c.ref_ticks * 1e9L / c.freq_hz;
  c.offset_s = static_cast<std::int64_t>(std::floor(base_ns / 1e9L));
  c.offset_cycles =
      static_cast<std::int64_t>(std::llround((base_ns - c.offset_s * 1e9L) * c.freq_hz / 1e9L));
}

// The best TSC frequency measured in this process so far and the span it was measured over (an
// invariant TSC never changes rate): a session starts from it instead of spinning again, and
// refines it only over a longer span. Atomics, not a mutex: Calibrate may run in a fork child.
// A reader may pair one writer's frequency with another's span: both are valid estimates, the
// span only decides when Refine() replaces the frequency.
std::atomic<std::uint64_t> g_best_freq{0};
std::atomic<std::uint64_t> g_best_span{0};
std::atomic<bool> g_best_refined{false};

void Remember(const Calibration& c) {
  if (c.span_ns <= g_best_span.load(std::memory_order_relaxed)) return;
  g_best_span.store(c.span_ns, std::memory_order_relaxed);
  g_best_freq.store(c.freq_hz, std::memory_order_relaxed);
  g_best_refined.store(c.freq_source == "span", std::memory_order_relaxed);
}

std::uint64_t FrequencyOver(const Calibration& c, std::uint64_t ticks, std::uint64_t mono_ns) {
  return static_cast<std::uint64_t>(
      std::llround((ticks - c.ref_ticks) * 1e9L / (mono_ns - c.ref_mono_ns)));
}

}  // namespace

bool TscIsInvariant() {
  // CPUID traps to the hypervisor in a VM: asked once, and not at all where glibc gives the bit
  // from the leaves its dynamic loader read at the process's start (two CPUID calls cost ~15 us
  // of every traced exec on a Firecracker VM, docs/benchmarks.md "Per exec under a session").
  static const bool invariant = [] {
#if defined(__x86_64__) && defined(CPU_FEATURE_PRESENT)
    return CPU_FEATURE_PRESENT(INVARIANT_TSC) != 0;
#elif defined(__x86_64__)
    unsigned a, b, c, d;
    if (__get_cpuid(0x80000000, &a, &b, &c, &d) == 0 || a < 0x80000007) return false;
    __get_cpuid(0x80000007, &a, &b, &c, &d);
    return (d & (1u << 8)) != 0;
#elif defined(__aarch64__)
    // The generic timer's virtual count is system-wide and runs at a constant rate by
    // definition (Arm ARM D11.1.2, "The system counter"); Linux lets EL0 read it (its vDSO
    // does). Usable unless the firmware left CNTFRQ_EL0 unprogrammed (0).
    return CounterFrequency() != 0;
#else
    return false;
#endif
  }();
  return invariant;
}

std::uint64_t CounterFrequency() {
#if defined(__aarch64__)
  std::uint64_t f;
  // Written by the firmware at boot and constant after: no barrier needed.
  asm volatile("mrs %0, cntfrq_el0" : "=r"(f));
  return f & 0xffffffffu;  // bits 63:32 are RES0
#else
  return 0;
#endif
}

#if defined(__aarch64__)
const char* CounterName() { return "cntvct"; }
const char* CounterDescription() { return "CNTVCT_EL0, calibrated to CLOCK_REALTIME"; }
#else
const char* CounterName() { return "tsc"; }
const char* CounterDescription() { return "TSC, calibrated to CLOCK_REALTIME"; }
#endif

std::uint64_t Now(bool use_tsc) {
  return use_tsc ? internal::ReadCycleCounter() : ReadNs(CLOCK_MONOTONIC);
}

Calibration CalibrateBegin() {
  Calibration c;
  c.use_tsc = TscIsInvariant();
  if (!c.use_tsc) {
    // CLOCK_MONOTONIC in ns: exact by definition.
    c.freq_hz = 1000000000;
    c.freq_source = "nominal";
    SamplePair(false, CLOCK_REALTIME, &c.ref_ticks, &c.ref_real_ns);
    c.ref_mono_ns = c.ref_ticks;
    ComputeOffset(c);
    return c;
  }
  SamplePair(true, CLOCK_MONOTONIC_RAW, &c.ref_ticks, &c.ref_mono_ns);
  SamplePair(true, CLOCK_REALTIME, &c.ref_second_ticks, &c.ref_second_real_ns);
  if (const std::uint64_t best = g_best_freq.load(std::memory_order_relaxed); best != 0) {
    // An earlier session's (or Prepare's) estimate: Refine() replaces it once this session has
    // run longer than the span it was measured over.
    c.freq_hz = best;
    c.span_ns = g_best_span.load(std::memory_order_relaxed);
    c.freq_source = g_best_refined.load(std::memory_order_relaxed) ? "span" : "spin";
  } else if (const std::uint64_t nominal = CounterFrequency(); nominal != 0) {
    // aarch64: the counter states its own frequency (CNTFRQ_EL0), so there is nothing to spin
    // for; Refine() measures it over the session's span like the TSC's (a wrongly programmed
    // CNTFRQ_EL0 is then corrected) but does not make it the process's best estimate before.
    c.freq_hz = nominal;
    c.span_ns = 0;
    c.freq_source = "cntfrq";
  } else {
    c.freq_source = "pending";  // CalibrateEnd measures it
  }
  return c;
}

void CalibrateEnd(Calibration& c) {
  if (!c.use_tsc) return;
  if (c.freq_source == "pending") {
    // Provisional frequency over >= 50 us since the reference; Refine() replaces it.
    std::uint64_t ticks, mono;
    do {
      SamplePair(true, CLOCK_MONOTONIC_RAW, &ticks, &mono);
    } while (mono - c.ref_mono_ns < 50000);
    c.freq_hz = FrequencyOver(c, ticks, mono);
    c.span_ns = mono - c.ref_mono_ns;
    c.freq_source = "spin";
    Remember(c);
  }
  // Realtime at the reference tick, from the realtime pair taken just after it (< 1 us apart).
  c.ref_real_ns = c.ref_second_real_ns -
                  static_cast<std::uint64_t>((c.ref_second_ticks - c.ref_ticks) * 1e9L / c.freq_hz);
  ComputeOffset(c);
}

Calibration Calibrate() {
  Calibration c = CalibrateBegin();
  CalibrateEnd(c);
  return c;
}

void Refine(Calibration& c) {
  if (!c.use_tsc) return;
  std::uint64_t ticks, mono;
  SamplePair(true, CLOCK_MONOTONIC_RAW, &ticks, &mono);
  if (mono - c.ref_mono_ns <= c.span_ns) return;
  c.freq_hz = FrequencyOver(c, ticks, mono);
  c.span_ns = mono - c.ref_mono_ns;
  c.freq_source = "span";
  ComputeOffset(c);
  Remember(c);
}

void Prepare() {
  if (TscIsInvariant() && g_best_freq.load(std::memory_order_relaxed) == 0) static_cast<void>(Calibrate());
}

}  // namespace hush::clock
