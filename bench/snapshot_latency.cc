// Time from the end of a slow span to its snapshot on disk (docs/benchmarks.md, "Triggered
// snapshots").
//
//   hush_snapshot_latency TRACE_DIR [SPANS] [BUFFER_SIZE]
//
// A flight-mode session with the trigger 'hushbench:slow>1ms', snapshot_after 0, interval 0 and
// BUFFER_SIZE rings (default 1M). The main thread fills its ring with 2 x int32 events, then
// SPANS times (default 50): a span lasting 2 ms ends, and the thread polls DIR/snapshots until the
// snapshot's directory appears under its final name (the rename that completes it) and notes the
// time. A second thread keeps emitting events meanwhile, so that two rings are copied. Prints the
// median, 90th percentile and maximum, in microseconds, as one JSON line.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "hush_tracepoints.h"
#include "hushtrace/session.h"

HUSH_TRACEPOINT(hushbench, tick, (std::uint32_t, seq))

namespace {

// Complete snapshots in `dir` (a partial one is named ".<name>.partial").
int CountSnapshots(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  int n = 0;
  while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.' ? 1 : 0;
  ::closedir(d);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TRACE_DIR [SPANS] [BUFFER_SIZE]\n", argv[0]);
    return 2;
  }
  const int spans = argc > 2 ? std::atoi(argv[2]) : 50;
  hush::SessionOptions options;
  options.events = {"hushbench:*"};
  options.output_dir = argv[1];
  options.mode = hush::Mode::kFlight;
  options.snapshot_on = {"hushbench:slow>1ms"};
  options.snapshot_interval_ms = 0;
  options.snapshot_keep = 0;
  if (argc > 3 && !hush::ParseSize(argv[3], &options.buffer_size)) return 2;
  std::string error;
  auto session = hush::Session::Start(options, &error);
  if (!session) {
    std::fprintf(stderr, "hush_snapshot_latency: %s\n", error.c_str());
    return 1;
  }
  std::atomic<bool> done{false};
  std::thread other([&done] {
    for (std::uint32_t i = 0; !done.load(std::memory_order_relaxed); ++i) {
      HUSH_TRACE(hushbench, tick, i);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  const std::string snapshots = options.output_dir + "/snapshots";
  std::vector<double> us;
  for (int k = 0; k < spans; ++k) {
    for (std::int32_t i = 0; i < 200000; ++i) HUSH_TRACE(hushbench, two_int, i, k);
    std::chrono::steady_clock::time_point end;
    {
      HUSH_SPAN(hushbench, slow);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      end = std::chrono::steady_clock::now();
    }
    while (CountSnapshots(snapshots) <= k) {
    }
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - end).count());
  }
  done.store(true, std::memory_order_relaxed);
  other.join();
  session->Stop();
  std::sort(us.begin(), us.end());
  std::printf("{\"spans\":%d,\"buffer_size\":%zu,\"snapshots\":%llu,\"median_us\":%.1f,\"p90_us\":%.1f,"
              "\"max_us\":%.1f}\n",
              spans, options.buffer_size,
              static_cast<unsigned long long>(session->Stats().snapshots_triggered), us[us.size() / 2],
              us[us.size() * 9 / 10], us.back());
  return 0;
}
