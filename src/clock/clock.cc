// Session clock calibration. Runs when a session starts or stops, never on the event path.
#include "clock/clock.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <cmath>
#include <cstring>

#include "hushtrace/internal/cycle_clock.h"

namespace hush::clock {
namespace {

std::uint64_t ReadNs(clockid_t id) {
  timespec ts;
  ::clock_gettime(id, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// The kernel's TSC-to-ns factors from a perf_event mmap page: ns = (ticks * mult) >> shift.
bool FrequencyFromPerf(std::uint64_t* freq_hz) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const long fd = ::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return false;
  const long page = ::sysconf(_SC_PAGESIZE);
  void* p = ::mmap(nullptr, static_cast<std::size_t>(page), PROT_READ, MAP_SHARED, static_cast<int>(fd), 0);
  bool ok = false;
  if (p != MAP_FAILED) {
    const auto* meta = static_cast<const perf_event_mmap_page*>(p);
    std::uint32_t seq;
    std::uint32_t mult = 0;
    std::uint16_t shift = 0;
    bool cap = false;
    do {
      seq = __atomic_load_n(&meta->lock, __ATOMIC_ACQUIRE);
      cap = meta->cap_user_time;
      mult = meta->time_mult;
      shift = meta->time_shift;
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
    } while (__atomic_load_n(&meta->lock, __ATOMIC_RELAXED) != seq);
    if (cap && mult != 0) {
      *freq_hz = static_cast<std::uint64_t>(std::llround(std::ldexp(1e9L, shift) / mult));
      ok = true;
    }
    ::munmap(p, static_cast<std::size_t>(page));
  }
  ::close(static_cast<int>(fd));
  return ok;
}

// Pairs a counter value with a clock reading, taking the tightest of a few tries.
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

}  // namespace

bool TscIsInvariant() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (__get_cpuid(0x80000000, &a, &b, &c, &d) == 0 || a < 0x80000007) return false;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return (d & (1u << 8)) != 0;
#else
  return false;
#endif
}

std::uint64_t Now(bool use_tsc) {
  return use_tsc ? internal::ReadCycleCounter() : ReadNs(CLOCK_MONOTONIC);
}

std::uint64_t MonotonicRawNs() { return ReadNs(CLOCK_MONOTONIC_RAW); }

Calibration Calibrate() {
  Calibration c;
  c.use_tsc = TscIsInvariant();
  if (!c.use_tsc) {
    c.freq_hz = 1000000000;
    c.freq_source = "nominal";
  } else if (FrequencyFromPerf(&c.freq_hz)) {
    c.freq_source = "perf";
  } else {
    // Measure over ~1 ms against CLOCK_MONOTONIC_RAW; Refine() improves it at session end.
    std::uint64_t t0, n0, t1, n1;
    SamplePair(true, CLOCK_MONOTONIC_RAW, &t0, &n0);
    timespec pause{0, 1000000};
    ::nanosleep(&pause, nullptr);
    SamplePair(true, CLOCK_MONOTONIC_RAW, &t1, &n1);
    c.freq_hz = static_cast<std::uint64_t>(std::llround((t1 - t0) * 1e9L / (n1 - n0)));
    c.freq_source = "measured";
  }
  SamplePair(c.use_tsc, CLOCK_MONOTONIC_RAW, &c.ref_ticks, &c.ref_mono_ns);
  // Wall-clock time of counter value 0.
  std::uint64_t ticks, real_ns;
  SamplePair(c.use_tsc, CLOCK_REALTIME, &ticks, &real_ns);
  const long double base_ns = static_cast<long double>(real_ns) - ticks * 1e9L / c.freq_hz;
  c.offset_s = static_cast<std::int64_t>(std::floor(base_ns / 1e9L));
  c.offset_cycles = static_cast<std::int64_t>(
      std::llround((base_ns - c.offset_s * 1e9L) * c.freq_hz / 1e9L));
  return c;
}

void Refine(Calibration& c) {
  if (c.freq_source != "measured") return;
  std::uint64_t ticks, ns;
  SamplePair(true, CLOCK_MONOTONIC_RAW, &ticks, &ns);
  if (ns - c.ref_mono_ns < 20000000) return;  // under 20 ms: the first estimate is better
  c.freq_hz = static_cast<std::uint64_t>(
      std::llround((ticks - c.ref_ticks) * 1e9L / (ns - c.ref_mono_ns)));
}

}  // namespace hush::clock
