// See quantile_threshold.h.
#include "session/quantile_threshold.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hush::session {

QuantileThreshold::QuantileThreshold(double quantile)
    : quantile_(quantile),
      warmup_(std::max<std::uint64_t>(kMinWarmup,
                                      static_cast<std::uint64_t>(std::ceil(10.0 / (1.0 - quantile))))) {}

int QuantileThreshold::Bucket(std::uint64_t v) {
  if (v < (1u << kSubBits)) return static_cast<int>(v);
  const int octave = 63 - __builtin_clzll(v);  // >= kSubBits
  const int sub = static_cast<int>(v >> (octave - kSubBits)) & ((1 << kSubBits) - 1);
  return ((octave - kSubBits + 1) << kSubBits) + sub;
}

std::uint64_t QuantileThreshold::UpperEdge(int bucket) {
  if (bucket < (1 << kSubBits)) return static_cast<std::uint64_t>(bucket);
  const int octave = (bucket >> kSubBits) + kSubBits - 1;
  const std::uint64_t sub = static_cast<std::uint64_t>(bucket & ((1 << kSubBits) - 1));
  const std::uint64_t next = (std::uint64_t{1} << kSubBits) + sub + 1;  // 17..32
  const unsigned __int128 end = static_cast<unsigned __int128>(next) << (octave - kSubBits);
  return end > std::numeric_limits<std::uint64_t>::max() ? std::numeric_limits<std::uint64_t>::max()
                                                         : static_cast<std::uint64_t>(end - 1);
}

bool QuantileThreshold::Exceeds(std::uint64_t duration, std::uint64_t* compared) {
  const std::uint64_t limit = threshold_.load(std::memory_order_relaxed);
  if (compared != nullptr) *compared = limit;
  counts_[static_cast<std::size_t>(Bucket(duration))].fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t total = total_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (total % kRecomputeEvery == 0 && !recomputing_.test_and_set(std::memory_order_acquire)) {
    Recompute(total);
    recomputing_.clear(std::memory_order_release);
  }
  return limit != 0 && duration > limit;
}

void QuantileThreshold::Recompute(std::uint64_t total) {
  std::uint64_t sum = 0;
  for (const auto& c : counts_) sum += c.load(std::memory_order_relaxed);
  if (sum < warmup_) return;
  const auto rank = static_cast<std::uint64_t>(std::ceil(quantile_ * static_cast<double>(sum)));
  std::uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts_[static_cast<std::size_t>(b)].load(std::memory_order_relaxed);
    if (seen >= rank) {
      threshold_.store(std::max<std::uint64_t>(UpperEdge(b), 1), std::memory_order_relaxed);
      break;
    }
  }
  if (total >= kWindow) {
    for (auto& c : counts_) c.store(c.load(std::memory_order_relaxed) / 2, std::memory_order_relaxed);
    total_.fetch_sub(total / 2, std::memory_order_relaxed);
  }
}

}  // namespace hush::session
