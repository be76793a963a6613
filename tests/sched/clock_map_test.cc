// The perf clock -> session clock map of --sched (src/sched/clock_map.h) on synthetic clocks.
#include "sched/clock_map.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using hush::sched::ClockMap;

TEST(ClockMap, MonotonicSessionClockIsTheIdentity) {
  ClockMap m(false, 1.0L);
  EXPECT_EQ(m.perf_clock(), CLOCK_MONOTONIC);
  m.AddPair(5, 7);  // ignored: nothing to map
  EXPECT_EQ(m.ToSession(123456789), 123456789u);
}

// TSC = a + b * raw, as the kernel's MONOTONIC_RAW is a fixed multiple of the TSC.
TEST(ClockMap, TscSessionClockFollowsTheLineThroughThePairs) {
  const long double b = 2.987654321L;  // ticks per ns
  const std::uint64_t a = 1000000;
  auto tsc = [&](std::uint64_t raw) { return static_cast<std::uint64_t>(a + b * raw + 0.5L); };
  ClockMap m(true, 2.9L);  // a wrong provisional slope
  EXPECT_EQ(m.perf_clock(), CLOCK_MONOTONIC_RAW);
  const std::uint64_t raw0 = 5000000000ull;
  m.AddPair(tsc(raw0), raw0);
  // With one pair the provisional slope applies: exact at the anchor only.
  EXPECT_EQ(m.ToSession(raw0), tsc(raw0));
  // Pairs every 50 ms; records between the last two pairs.
  for (std::uint64_t k = 1; k <= 40; ++k) {
    const std::uint64_t raw = raw0 + k * 50000000ull;
    m.AddPair(tsc(raw), raw);
    for (std::uint64_t back : {0ull, 1ull, 1000ull, 49999999ull}) {
      const std::int64_t err = static_cast<std::int64_t>(m.ToSession(raw - back)) -
                               static_cast<std::int64_t>(tsc(raw - back));
      EXPECT_LE(err < 0 ? -err : err, 1) << "k " << k << " back " << back;
    }
  }
  EXPECT_NEAR(static_cast<double>(m.slope()), static_cast<double>(b), 1e-7);  // rounding over 50 ms
}

TEST(ClockMap, APairTooCloseToThePreviousIsDropped) {
  ClockMap m(true, 3.0L);
  m.AddPair(1000, 1000);
  m.AddPair(4000, 1500);  // 500 ns later (< kMinPairGapNs): a slope of 6 would be noise
  EXPECT_EQ(static_cast<double>(m.slope()), 3.0);
  EXPECT_EQ(m.ToSession(1600), 2800u);  // still anchored at the first pair
}

// Sampling errors of the pairs bound the error of records between them, even with a wrong
// provisional slope: interpolation, not extrapolation.
TEST(ClockMap, InterpolationErrorIsBoundedByThePairErrors) {
  ClockMap m(true, 2.0L);  // 33% off
  const long double b = 3.0L;
  m.AddPair(30000000 + 20, 10000000);  // +20 ticks of sampling error
  m.AddPair(static_cast<std::uint64_t>(b * 60000000) - 15, 60000000);  // -15 ticks
  for (std::uint64_t ns = 10000000; ns <= 60000000; ns += 1000000) {
    const long double err = static_cast<long double>(m.ToSession(ns)) - b * ns;
    EXPECT_LE(err, 21);
    EXPECT_GE(err, -16);
  }
}

}  // namespace
