// LogHistogram (see log_histogram.h).
#include "hist/log_histogram.h"

#include <algorithm>
#include <cmath>

namespace hush::hist {

LogHistogram::Locator LogHistogram::Locate(double magnitude) {
  int e = 0;
  const double m = std::frexp(magnitude, &e);  // magnitude = m * 2^e, m in [0.5, 1)
  int sub = static_cast<int>((m - 0.5) * 2 * kSubBuckets);
  sub = std::clamp(sub, 0, kSubBuckets - 1);
  return Locator{e, sub};
}

void LogHistogram::Add(double v) {
  if (std::isnan(v)) return;
  if (count_ == 0) {
    min_ = max_ = v;
  } else {
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
  }
  ++count_;
  sum_ += v;
  if (v == 0) {
    ++zeros_;
    return;
  }
  const bool neg = v < 0;
  const double mag = std::min(std::fabs(v), 1.7e308);  // infinities count in the top bucket
  const Locator at = Locate(mag);
  ++(neg ? negative_ : positive_)[at.exponent][static_cast<std::size_t>(at.sub)];
}

double LogHistogram::Representative(int exponent, int sub, bool negative) const {
  const double width = std::ldexp(1.0, exponent - 1) / kSubBuckets;
  const double lower = std::ldexp(1.0, exponent - 1) + width * sub;
  double mag = integer_ && width <= 1 ? lower : lower + width / 2;
  if (negative) mag = -mag;
  return std::clamp(mag, min_, max_);
}

double LogHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  // p% of n in doubles is not exact (99.9% of 1000 is 999.0000000000001): shave the rounding
  // error off before ceil().
  const double x = p / 100.0 * static_cast<double>(count_);
  auto rank = static_cast<std::uint64_t>(std::ceil(x - x * 1e-12));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  if (rank == 1) return min_;  // the extremes are known exactly
  if (rank == count_) return max_;
  std::uint64_t seen = 0;
  // Most negative first: the largest exponents of negative_, highest sub-bucket first.
  for (auto it = negative_.rbegin(); it != negative_.rend(); ++it) {
    for (int s = kSubBuckets - 1; s >= 0; --s) {
      seen += it->second[static_cast<std::size_t>(s)];
      if (seen >= rank) return Representative(it->first, s, true);
    }
  }
  seen += zeros_;
  if (seen >= rank) return 0;
  for (const auto& [e, buckets] : positive_) {
    for (int s = 0; s < kSubBuckets; ++s) {
      seen += buckets[static_cast<std::size_t>(s)];
      if (seen >= rank) return Representative(e, s, false);
    }
  }
  return max_;
}

std::vector<LogHistogram::Row> LogHistogram::Octaves() const {
  std::vector<Row> rows;
  auto total = [](const Buckets& b) {
    std::uint64_t n = 0;
    for (const std::uint64_t c : b) n += c;
    return n;
  };
  if (!negative_.empty()) {
    for (int e = negative_.rbegin()->first; e >= negative_.begin()->first; --e) {
      const auto it = negative_.find(e);
      rows.push_back(Row{-std::ldexp(1.0, e), -std::ldexp(1.0, e - 1),
                         it == negative_.end() ? 0 : total(it->second)});
    }
  }
  if (zeros_ != 0) rows.push_back(Row{0, 0, zeros_});
  if (!positive_.empty()) {
    for (int e = positive_.begin()->first; e <= positive_.rbegin()->first; ++e) {
      const auto it = positive_.find(e);
      rows.push_back(Row{std::ldexp(1.0, e - 1), std::ldexp(1.0, e),
                         it == positive_.end() ? 0 : total(it->second)});
    }
  }
  return rows;
}

}  // namespace hush::hist
