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
  // Pairs every 50 ms for 2 s; records 0..50 ms away from the latest anchor (either side).
  for (std::uint64_t k = 1; k <= 40; ++k) {
    const std::uint64_t raw = raw0 + k * 50000000ull;
    m.AddPair(tsc(raw), raw);
    for (std::uint64_t back : {0ull, 1ull, 1000ull, 49999999ull}) {
      const std::int64_t err = static_cast<std::int64_t>(m.ToSession(raw - back)) -
                               static_cast<std::int64_t>(tsc(raw - back));
      EXPECT_LE(err < 0 ? -err : err, 1) << "k " << k << " back " << back;
    }
  }
  EXPECT_NEAR(static_cast<double>(m.slope()), static_cast<double>(b), 1e-9);
}

TEST(ClockMap, PairsTooCloseToTheFirstKeepTheProvisionalSlope) {
  ClockMap m(true, 3.0L);
  m.AddPair(1000, 1000);
  m.AddPair(4000, 1500);  // 500 ns later: a slope of 6 would be noise
  EXPECT_EQ(static_cast<double>(m.slope()), 3.0);
  EXPECT_EQ(m.ToSession(1600), 4300u);
}

}  // namespace
