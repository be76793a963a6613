// LogHistogram: exact counts and extremes, percentiles within the documented bound.
#include "hist/log_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace hush::hist {
namespace {

// Nearest-rank percentile of sorted samples.
double TruePercentile(const std::vector<double>& sorted, double p) {
  // Exact integer arithmetic on p in thousandths of a percent.
  const auto milli = static_cast<std::size_t>(std::llround(p * 1000));
  auto rank = (milli * sorted.size() + 100000 - 1) / 100000;
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

void ExpectWithinBound(const LogHistogram& h, std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  for (const double p : {0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
    const double want = TruePercentile(samples, p);
    EXPECT_NEAR(h.Percentile(p), want, std::fabs(want) * LogHistogram::kMaxRelativeError + 1e-12)
        << "p" << p;
  }
}

TEST(LogHistogramTest, EmptyReportsZero) {
  LogHistogram h(true);
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.Percentile(50), 0);
  EXPECT_TRUE(h.Octaves().empty());
}

TEST(LogHistogramTest, SmallIntegersAreExact) {
  LogHistogram h(true);
  for (int v = 1; v <= 100; ++v) h.Add(v);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.min(), 1);
  EXPECT_EQ(h.max(), 100);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
  EXPECT_EQ(h.Percentile(50), 50);
  EXPECT_EQ(h.Percentile(90), 90);
  EXPECT_EQ(h.Percentile(99), 99);
  EXPECT_EQ(h.Percentile(99.9), 100);
  EXPECT_EQ(h.Percentile(0), 1);
}

TEST(LogHistogramTest, RankIsNotOffByOneFromRounding) {
  LogHistogram h(true);
  for (int v = 1; v <= 1000; ++v) h.Add(v);
  // 99.9% of 1000 is 999 in exact arithmetic, 999.0000000000001 in doubles.
  EXPECT_NEAR(h.Percentile(99.9), 999, 999.0 / 128);
  EXPECT_LT(h.Percentile(99.9), 1000);
}

TEST(LogHistogramTest, UniformIntegersWithinBound) {
  LogHistogram h(true);
  std::vector<double> samples;
  for (int v = 1; v <= 100000; ++v) {
    h.Add(v);
    samples.push_back(v);
  }
  ExpectWithinBound(h, samples);
  EXPECT_EQ(h.Percentile(100), 100000);
}

TEST(LogHistogramTest, LogNormalDoublesWithinBound) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(8.0, 2.0);
  LogHistogram h(false);
  std::vector<double> samples;
  for (int i = 0; i < 200000; ++i) {
    const double v = dist(rng);
    h.Add(v);
    samples.push_back(v);
  }
  ExpectWithinBound(h, samples);
  EXPECT_EQ(h.min(), *std::min_element(samples.begin(), samples.end()));
  EXPECT_EQ(h.max(), *std::max_element(samples.begin(), samples.end()));
}

TEST(LogHistogramTest, NegativeZeroAndPositive) {
  LogHistogram h(true);
  std::vector<double> samples;
  for (int v = -500; v <= 500; ++v) {
    h.Add(v);
    samples.push_back(v);
  }
  ExpectWithinBound(h, samples);
  EXPECT_EQ(h.Percentile(50), 0);
  EXPECT_EQ(h.min(), -500);
}

TEST(LogHistogramTest, OctaveRowsCountEverySample) {
  LogHistogram h(true);
  h.Add(0);
  h.Add(-3);
  h.Add(1);
  h.Add(5);
  h.Add(6);
  h.Add(1000);
  const auto rows = h.Octaves();
  std::uint64_t total = 0;
  for (const auto& r : rows) total += r.count;
  EXPECT_EQ(total, 6u);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[0].lower, -4);  // -3 in (-4, -2]
  EXPECT_EQ(rows[0].upper, -2);
  EXPECT_EQ(rows[1].count, 1u);  // the zero row
  EXPECT_EQ(rows[1].lower, 0);
  EXPECT_EQ(rows[2].lower, 1);  // 1 in [1, 2)
  EXPECT_EQ(rows.back().lower, 512);
  EXPECT_EQ(rows.back().upper, 1024);
  // Empty octaves between the populated ones are rows too: [1,2) [2,4) [4,8) ... [512,1024).
  EXPECT_EQ(rows.size(), 2u + 10u);
}

TEST(LogHistogramTest, NanIsIgnored) {
  LogHistogram h(false);
  h.Add(std::nan(""));
  h.Add(2.5);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(h.Percentile(50), 2.5);
}

}  // namespace
}  // namespace hush::hist
