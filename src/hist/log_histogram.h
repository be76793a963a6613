// A log-linear histogram with bounded relative error, constant memory, for `hushtrace hist`.
//
// Each power of two [2^k, 2^(k+1)) is split into 64 equal sub-buckets, so a bucket's width is at
// most 1/64 of its lower bound. Percentiles report the middle of the bucket holding the sample of
// the requested rank (nearest rank: the smallest sample with at least p% of the samples at or
// below it), clamped to [min, max] (the first and last ranks are min and max themselves): the
// reported value is within 1/128 (0.79%) of the true one. For integer data, buckets one unit wide
// or narrower (|v| < 128) report their lower bound, which is then exact. Negative values go to a
// mirrored histogram; zero has its own count. min, max, mean and count are exact.
//
//   LogHistogram h(/*integer=*/true);
//   for (...) h.Add(v);
//   h.Percentile(99.9); h.Octaves();   // rows for a log2 chart
//
// Memory: 64 counters per power of two that holds a sample (at most ~2100 for doubles).
#ifndef HUSHTRACE_SRC_HIST_LOG_HISTOGRAM_H_
#define HUSHTRACE_SRC_HIST_LOG_HISTOGRAM_H_

#include <array>
#include <cstdint>
#include <map>
#include <vector>

namespace hush::hist {

class LogHistogram {
 public:
  static constexpr int kSubBuckets = 64;
  static constexpr double kMaxRelativeError = 1.0 / (2 * kSubBuckets);

  explicit LogHistogram(bool integer) : integer_(integer) {}

  void Add(double v);
  std::uint64_t count() const { return count_; }
  double min() const { return min_; }
  double max() const { return max_; }
  double mean() const { return count_ == 0 ? 0 : sum_ / static_cast<double>(count_); }
  // p in [0, 100]; 0 when empty.
  double Percentile(double p) const;

  // One row per power of two between the lowest and highest populated ones (empty rows
  // included), from the most negative to the most positive; zero is a row of its own.
  struct Row {
    double lower, upper;  // [lower, upper); for the zero row both are 0
    std::uint64_t count;
  };
  std::vector<Row> Octaves() const;

 private:
  using Buckets = std::array<std::uint64_t, kSubBuckets>;
  struct Locator {
    int exponent;  // v in [2^(exponent-1), 2^exponent)
    int sub;
  };
  static Locator Locate(double magnitude);
  double Representative(int exponent, int sub, bool negative) const;

  bool integer_;
  std::map<int, Buckets> positive_, negative_;  // by exponent
  std::uint64_t zeros_ = 0, count_ = 0;
  double min_ = 0, max_ = 0, sum_ = 0;
};

}  // namespace hush::hist

#endif  // HUSHTRACE_SRC_HIST_LOG_HISTOGRAM_H_
