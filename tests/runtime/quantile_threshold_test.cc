// The adaptive threshold of duration triggers (src/session/quantile_threshold.h): bucket bounds,
// accuracy against the exact quantile, warm-up, no fires on a steady bounded distribution, fires
// on injected outliers, drift, and concurrent feeding (the TSan build runs this too).
#include "session/quantile_threshold.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace hush::session {
namespace {

TEST(QuantileThreshold, BucketsHoldTheirValuesWithinAFifteenthAndAreOrdered) {
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> values = {0, 1, 15, 16, 17, 31, 32, 33, 1000, 1u << 20,
                                       (std::uint64_t{1} << 40) + 12345, ~std::uint64_t{0}};
  for (int i = 0; i < 100000; ++i) values.push_back(rng() >> (rng() % 64));
  for (const std::uint64_t v : values) {
    const int b = QuantileThreshold::Bucket(v);
    ASSERT_GE(b, 0);
    ASSERT_LT(b, QuantileThreshold::kBuckets);
    const std::uint64_t upper = QuantileThreshold::UpperEdge(b);
    ASSERT_GE(upper, v) << v;
    ASSERT_LE(upper - v, v / 16 + 1) << v;  // the documented 2^(1/16) - 1 < 1/16 relative width
    if (b > 0) ASSERT_LT(QuantileThreshold::UpperEdge(b - 1), v) << v;  // v is not in the one below
  }
}

// The exact nearest-rank quantile of `v`.
std::uint64_t Exact(std::vector<std::uint64_t> v, double q) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[rank - 1];
}

TEST(QuantileThreshold, EstimateIsTheQuantileWithinOneBucket) {
  for (const double q : {0.5, 0.99, 0.999}) {
    SCOPED_TRACE(q);
    std::mt19937_64 rng(42);
    std::lognormal_distribution<double> dist(10.0, 1.0);  // median ~22,000 cycles, long tail
    QuantileThreshold t(q);
    std::vector<std::uint64_t> seen;
    for (int i = 0; i < 200000; ++i) {
      const auto d = static_cast<std::uint64_t>(dist(rng)) + 1;
      seen.push_back(d);
      t.Exceeds(d);
    }
    const std::uint64_t exact = Exact(seen, q);
    // The last recomputation may lag the end by < kRecomputeEvery samples of 200,000.
    EXPECT_GE(t.threshold(), exact * 0.99);
    EXPECT_LE(t.threshold(), exact * 1.0625 + 1);
  }
}

TEST(QuantileThreshold, NothingFiresDuringWarmUp) {
  QuantileThreshold t(0.999);
  EXPECT_EQ(t.warmup(), 10000u);  // ten spans beyond p99.9
  for (std::uint64_t i = 0; i < 9999; ++i) {
    ASSERT_FALSE(t.Exceeds(i % 97 == 0 ? 1000000 : 100)) << i;
  }
  EXPECT_EQ(t.threshold(), 0u);
  EXPECT_EQ(QuantileThreshold(0.5).warmup(), QuantileThreshold::kMinWarmup);
}

TEST(QuantileThreshold, SteadyBoundedDistributionFiresNothingOutliersFireEachTime) {
  QuantileThreshold t(0.999);
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<std::uint64_t> steady(1000, 1050);
  int fired = 0;
  for (int i = 0; i < 200000; ++i) fired += t.Exceeds(steady(rng));
  EXPECT_EQ(fired, 0) << "threshold " << t.threshold();
  EXPECT_GE(t.threshold(), 1050u);
  EXPECT_LE(t.threshold(), 1120u);
  for (int i = 0; i < 20; ++i) {
    for (int k = 0; k < 5000; ++k) EXPECT_FALSE(t.Exceeds(steady(rng)));
    EXPECT_TRUE(t.Exceeds(20000)) << "an outlier after " << i << " steady batches";
  }
}

TEST(QuantileThreshold, FollowsADistributionThatMoves) {
  QuantileThreshold t(0.99);
  for (std::uint64_t i = 0; i < 3 * QuantileThreshold::kWindow; ++i) t.Exceeds(1000 + i % 10);
  EXPECT_LE(t.threshold(), 1100u);
  for (std::uint64_t i = 0; i < 3 * QuantileThreshold::kWindow; ++i) t.Exceeds(10000 + i % 100);
  EXPECT_GE(t.threshold(), 10000u) << "the estimate still weighs the old durations";
  EXPECT_LE(t.threshold(), 10700u);
}

TEST(QuantileThreshold, ThreadsFeedItTogether) {
  QuantileThreshold t(0.99);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&t, k] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(k));
      std::uniform_int_distribution<std::uint64_t> d(5000, 6000);
      for (int i = 0; i < 100000; ++i) t.Exceeds(d(rng));
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_GE(t.threshold(), 5900u);
  EXPECT_LE(t.threshold(), 6000u * 1.0625);
}

}  // namespace
}  // namespace hush::session
