// The adaptive threshold of a duration trigger (`--snapshot-on 'app:request>p99.9'`): an online
// estimate of a high quantile of one span's durations, fed by every thread that ends such a span,
// without a lock.
//
//   QuantileThreshold t(0.999);
//   if (t.Exceeds(duration_cycles)) Fire(...);   // on the span end of each thread
//
// The estimate is a log-linear histogram: durations below 16 cycles have a bucket each, longer
// ones 16 buckets per power of two, so a bucket spans at most 2^(1/16) - 1 = 4.4 % of its lower
// edge (the relative error of the estimate). 64 octaves x 16 = 1024 counters: 8 KiB a rule.
// The threshold is the upper edge of the bucket holding the quantile's rank (nearest rank,
// ceil(q * n)); a span fires when it lasted longer than that. So the estimate never undercuts the
// quantile by more than a bucket's width, and a steady distribution whose slowest spans share the
// top bucket fires nothing: only what lies beyond the bucket of the p-th quantile does.
//
// Exceeds() adds one count to the duration's bucket and one to the total (relaxed fetch_adds:
// counters only, no data is published through them) and compares with the threshold of the last
// recomputation (one relaxed load). Every kRecomputeEvery-th sample, the thread whose sample
// completes the batch rescans the counters (1024 loads, ~1 us, once per 256 spans) and stores the
// new threshold; another recomputation at the same time is skipped (a test-and-set flag). The
// counts a scan reads may be a few samples stale: one batch at most, a bounded error the
// recompute interval already accepts.
//
// Warm-up: no span fires until max(kMinWarmup, 10 / (1 - q)) spans were counted, so that the
// estimate rests on at least ten spans beyond the quantile (p99.9: 10,000 spans, p99: 1,000).
// Drift: when the total reaches kWindow, every counter is halved (by the recomputing thread; an
// increment racing with the halving may be lost, a few counts among a million), so the estimate
// follows a distribution that changes, weighted toward the last ~million spans.
#ifndef HUSHTRACE_SRC_SESSION_QUANTILE_THRESHOLD_H_
#define HUSHTRACE_SRC_SESSION_QUANTILE_THRESHOLD_H_

#include <array>
#include <atomic>
#include <cstdint>

namespace hush::session {

class QuantileThreshold {
 public:
  static constexpr int kSubBits = 4;  // 16 buckets per octave
  static constexpr int kBuckets = 64 << kSubBits;
  static constexpr std::uint64_t kRecomputeEvery = 256;
  static constexpr std::uint64_t kMinWarmup = 1000;
  static constexpr std::uint64_t kWindow = std::uint64_t{1} << 20;

  // `quantile` in (0, 1), e.g. 0.999.
  explicit QuantileThreshold(double quantile);
  QuantileThreshold(const QuantileThreshold&) = delete;
  QuantileThreshold& operator=(const QuantileThreshold&) = delete;

  // Counts `duration` (any unit, > 0) and says whether it is beyond the current threshold
  // (false during warm-up), which goes to *compared. Any thread, concurrently.
  bool Exceeds(std::uint64_t duration, std::uint64_t* compared = nullptr);
  // The threshold the next Exceeds() compares with; 0 during warm-up.
  std::uint64_t threshold() const { return threshold_.load(std::memory_order_relaxed); }
  std::uint64_t warmup() const { return warmup_; }

  static int Bucket(std::uint64_t v);
  static std::uint64_t UpperEdge(int bucket);

 private:
  void Recompute(std::uint64_t total);

  const double quantile_;
  const std::uint64_t warmup_;
  std::array<std::atomic<std::uint64_t>, kBuckets> counts_{};
  std::atomic<std::uint64_t> total_{0};
  std::atomic<std::uint64_t> threshold_{0};
  std::atomic_flag recomputing_ = ATOMIC_FLAG_INIT;
};

}  // namespace hush::session

#endif  // HUSHTRACE_SRC_SESSION_QUANTILE_THRESHOLD_H_
