// Issue 17's "2,000 live threads": N threads (default 2000) each record 5 events, then park on a
// condition variable until all have; the process prints its VmSize and VmRSS at that moment.
//   /usr/bin/time -f '%e s %M KB' build/tools/hushtrace/hushtrace record [--buffer-budget SIZE] \
//       -o DIR -e 'mt:*' -- build/bench/many_threads 2000
// docs/architecture.md, "the buffer budget", has the figures.
#include <hushtrace/hushtrace.h>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
HUSH_TRACEPOINT(mt, ev, (std::uint32_t, t), (std::uint32_t, i))
int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2000;
  std::mutex mu; std::condition_variable cv; bool go = false; int ready = 0;
  std::vector<std::thread> ts;
  for (int k = 0; k < n; ++k) ts.emplace_back([&, k] {
    for (std::uint32_t i = 0; i < 5; ++i) HUSH_TRACE(mt, ev, static_cast<std::uint32_t>(k), i);
    std::unique_lock<std::mutex> l(mu); ++ready; cv.notify_all(); cv.wait(l, [&] { return go; });
  });
  { std::unique_lock<std::mutex> l(mu); cv.wait(l, [&] { return ready == n; }); }
  std::ifstream st("/proc/self/status"); std::string line;
  while (std::getline(st, line)) if (line.rfind("VmRSS", 0) == 0 || line.rfind("VmSize", 0) == 0) std::fprintf(stderr, "%s\n", line.c_str());
  { std::lock_guard<std::mutex> l(mu); go = true; } cv.notify_all();
  for (auto& t : ts) t.join();
}
