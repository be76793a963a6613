// 10,000 traced functions (ft_many_gen.cc). Modes:
//   check      call every function once, check each result (trace: one entry/exit each)
//   threaded   starts function tracing while another program thread exists; prints
//              "patched P refused R" (gcc's five-NOP entries must be refused then)
//   patch N    N rounds of patching all 10,000 entries in one batch and back while two threads
//              call them; prints "patch_us <median> <max> unpatch_us <median> <max> start_us
//              <median>" (batches only; start_us: all of Start(), ELF reading included), then
//              "patch_us_all" and every batch's time, in order, '*' where the patching thread
//              was preempted during the batch (Stats::last_batch_preempted)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "functrace/functrace.h"

using Fn = long (*)(long);
extern Fn ft_many_table[10000];

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  if (mode == "check") {
    int bad = 0;
    for (long i = 0; i < 10000; ++i) bad += ft_many_table[i](5) != 5 + i;
    std::printf("bad %d\n", bad);
    return bad == 0 ? 0 : 3;
  }
  if (mode == "threaded") {
    std::atomic<bool> done{false};
    std::thread other([&] {
      while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    hush::functrace::Options o;
    o.globs = {"ft_many_*"};
    std::string error;
    if (!hush::functrace::Start(o, &error)) {
      std::fprintf(stderr, "Start: %s\n", error.c_str());
      return 1;
    }
    const hush::functrace::Stats s = hush::functrace::GetStats();
    long bad = 0;
    for (long i = 0; i < 10000; ++i) bad += ft_many_table[i](5) != 5 + i;
    hush::functrace::Stop();
    done.store(true);
    other.join();
    std::printf("patched %llu refused %llu\n", static_cast<unsigned long long>(s.patched),
                static_cast<unsigned long long>(s.refused_split));
    return bad == 0 ? 0 : 3;
  }
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 10;
  std::atomic<bool> stop{false};
  std::atomic<long> bad{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([&, t] {
      for (long i = t; !stop.load(std::memory_order_relaxed); ++i) {
        const long k = i % 10000;
        if (ft_many_table[k](1) != 1 + k) bad.fetch_add(1);
      }
    });
  }
  hush::functrace::Options o;
  o.globs = {"ft_many_*"};
  std::vector<double> us, unpatch_us, start_us;
  std::vector<bool> preempted;  // the patching thread lost its CPU during the batch
  // The longest batches that kept their CPU, and how many patch batches did not.
  double max_patch_kept = 0, max_unpatch_kept = 0;
  std::size_t npreempted = 0;
  std::string error;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const bool started = hush::functrace::Start(o, &error);
    start_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (!started) {
      std::fprintf(stderr, "Start: %s\n", error.c_str());
      return 1;
    }
    const hush::functrace::Stats s = hush::functrace::GetStats();
    if (s.patched != 10000) {
      std::fprintf(stderr, "patched %llu\n", static_cast<unsigned long long>(s.patched));
      return 1;
    }
    us.push_back(s.last_batch_us);
    preempted.push_back(s.last_batch_preempted);
    if (s.last_batch_preempted) {
      ++npreempted;
    } else {
      max_patch_kept = std::max(max_patch_kept, s.last_batch_us);
    }
    hush::functrace::Stop();
    const hush::functrace::Stats after = hush::functrace::GetStats();
    unpatch_us.push_back(after.last_batch_us);
    if (!after.last_batch_preempted) {
      max_unpatch_kept = std::max(max_unpatch_kept, after.last_batch_us);
    }
  }
  stop.store(true);
  for (auto& w : workers) w.join();
  const std::vector<double> in_order = us;
  for (auto* v : {&us, &unpatch_us, &start_us}) std::sort(v->begin(), v->end());
  std::printf("patch_us %.1f %.1f unpatch_us %.1f %.1f start_us %.1f\n", us[us.size() / 2],
              us.back(), unpatch_us[unpatch_us.size() / 2], unpatch_us.back(),
              start_us[start_us.size() / 2]);
  // Every batch, in order, '*' where the patching thread was preempted (by a caller: three
  // runnable threads on two CPUs, a few ms each).
  std::printf("patch_us_all");
  for (std::size_t i = 0; i < in_order.size(); ++i) {
    std::printf(" %.0f%s", in_order[i], preempted[i] ? "*" : "");
  }
  std::printf("\npatch_us_max_unpreempted %.1f preempted %zu of %zu unpatch_us_max_unpreempted %.1f\n",
              max_patch_kept, npreempted, in_order.size(), max_unpatch_kept);
  return bad.load() == 0 ? 0 : 3;
}
