// Patch/unpatch while other threads call the patched functions (functrace_test.cc,
// ConcurrentPatching). Workers call traced functions in a loop and check every result; the main
// thread starts and stops function tracing `rounds` times (one patch batch each), inside one
// session started from the environment (HUSHTRACE_EVENTS=func:*). Prints "calls N batches M".
// Built in the flavor whose entries may be patched while threads run (tests/functrace/
// CMakeLists.txt, HUSH_FT_THREADED): x86-64 gcc -mfentry -mnop-mcount -mrecord-mcount (one 5-byte
// NOP per entry), aarch64 -fpatchable-function-entry=2 (two NOPs, the first one patched).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "functrace/functrace.h"

#define NI __attribute__((noinline, noipa))

NI long cc_leaf(long x) { return x * 7 + 3; }
NI double cc_float(double a, double b, int c) { return a * b + c; }
NI long cc_rec(int n) { return n == 0 ? 1 : 2 * cc_rec(n - 1); }

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
  std::atomic<bool> stop{false};
  std::atomic<long> calls{0}, bad{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([&, t] {
      long n = 0;
      for (long i = t; !stop.load(std::memory_order_relaxed); ++i) {
        if (cc_leaf(i) != i * 7 + 3) bad.fetch_add(1);
        if (cc_float(1.5, static_cast<double>(i & 255), 3) != 1.5 * static_cast<double>(i & 255) + 3)
          bad.fetch_add(1);
        if ((i & 15) == 0 && cc_rec(10) != 1024) bad.fetch_add(1);
        n += 3;
      }
      calls.fetch_add(n);
    });
  }
  hush::functrace::Options o;
  o.globs = {"cc_*"};
  std::string error;
  int batches = 0;
  for (int r = 0; r < rounds; ++r) {
    if (!hush::functrace::Start(o, &error)) {
      std::fprintf(stderr, "Start: %s\n", error.c_str());
      return 1;
    }
    if (hush::functrace::GetStats().patched != 3) {
      std::fprintf(stderr, "patched %llu entries, expected 3\n",
                   static_cast<unsigned long long>(hush::functrace::GetStats().patched));
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    hush::functrace::Stop();
    batches += 2;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  stop.store(true);
  for (auto& w : workers) w.join();
  std::printf("calls %ld batches %d\n", calls.load(), batches);
  return bad.load() == 0 ? 0 : 3;
}
