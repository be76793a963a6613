// Error of the perf-clock -> session-clock conversion of --sched (src/sched/clock_map.h), on
// this machine. The reader's ClockMap gets a (TSC, CLOCK_MONOTONIC_RAW) pair every 50 ms, as the
// hush-sched thread does at each drain (its poll timeout); between pairs, probes read rdtsc /
// CLOCK_MONOTONIC_RAW / rdtsc, and their raw readings are converted after the next pair, as the
// records of a drain are. Error = converted - midpoint of the two rdtsc reads, kept
// only for probes whose rdtsc window is under 100 ns (the probe's own uncertainty is half the
// window). Prints the distribution in ns.
//
//   sched_clock_error [seconds=3]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "clock/clock.h"
#include "sched/clock_map.h"

namespace {

std::uint64_t RawNs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3;
  if (!hush::clock::TscIsInvariant()) {
    std::printf("no invariant TSC: the session clock is CLOCK_MONOTONIC and the map is exact\n");
    return 0;
  }
  hush::clock::Calibration c = hush::clock::Calibrate();
  const long double ticks_per_ns = static_cast<long double>(c.freq_hz) / 1e9L;
  hush::sched::ClockMap map(true, ticks_per_ns);
  std::uint64_t t = 0, ns = 0;
  hush::sched::SampleRawPair(ticks_per_ns, &t, &ns);
  map.AddPair(t, ns);
  std::vector<double> errors;
  struct Probe {
    std::uint64_t a, raw, b;
  };
  std::vector<Probe> pending;  // records since the last pair, converted at the next one
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto next_pair = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (std::chrono::steady_clock::now() < end) {
    if (std::chrono::steady_clock::now() >= next_pair) {
      hush::sched::SampleRawPair(ticks_per_ns, &t, &ns);
      map.AddPair(t, ns);
      for (const Probe& p : pending) {
        const double mid = static_cast<double>(p.a) + static_cast<double>(p.b - p.a) / 2;
        errors.push_back((static_cast<double>(map.ToSession(p.raw)) - mid) / static_cast<double>(ticks_per_ns));
      }
      pending.clear();
      next_pair += std::chrono::milliseconds(50);
    }
    const std::uint64_t a = hush::clock::Now(true);
    const std::uint64_t raw = RawNs();
    const std::uint64_t b = hush::clock::Now(true);
    if ((b - a) / ticks_per_ns < 100) pending.push_back({a, raw, b});
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::vector<double> abs_err;
  for (double e : errors) abs_err.push_back(std::fabs(e));
  std::sort(abs_err.begin(), abs_err.end());
  std::sort(errors.begin(), errors.end());
  auto q = [&](const std::vector<double>& v, double p) { return v[static_cast<std::size_t>(p * (v.size() - 1))]; };
  std::printf("%zu probes over %.1f s, TSC %.0f MHz\n", errors.size(), seconds, static_cast<double>(ticks_per_ns) * 1000);
  std::printf("signed error ns: min %.1f  median %.1f  max %.1f\n", errors.front(), q(errors, 0.5), errors.back());
  std::printf("|error| ns: median %.1f  p99 %.1f  max %.1f\n", q(abs_err, 0.5), q(abs_err, 0.99), abs_err.back());
  return 0;
}
