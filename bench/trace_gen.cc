// Writes a trace of N events for the reader/export benchmarks (bench/export_bench.sh).
//
//   trace_gen DIR N [THREADS]
//
// Each thread repeats a request-shaped group of 8 events: span gen:request (begin + end) around
// an event gen:recv {u32 worker, u64 id, string path}, a nested span gen:handle, a counter
// gen:depth, an event gen:send {u64 id, u32 status, u32 bytes} and an instant gen:tick. Values
// are fixed functions of the loop index, so two runs differ only in timestamps and tids.
// The producers pause when the consumer falls behind, so no event is discarded (the program
// checks it and fails otherwise).
#include <hushtrace/hushtrace.h>
#include <hushtrace/session.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

HUSH_TRACEPOINT(gen, recv, (std::uint32_t, worker), (std::uint64_t, id), (const char*, path))
HUSH_TRACEPOINT(gen, send, (std::uint64_t, id), (std::uint32_t, status), (std::uint32_t, bytes))

namespace {

constexpr std::uint64_t kEventsPerGroup = 8;
// Events not yet written, all threads: more than a sub-buffer (1/8 of a ring) per thread, since
// only full sub-buffers are written, and well below a ring (64 MiB, ~6 M events).
constexpr std::uint64_t kMaxUnwritten = 2 * 1024 * 1024;
std::atomic<std::uint64_t> g_emitted{0};  // relaxed: only a pacing estimate
const char* const kPaths[] = {"/index.html", "/api/users", "/static/app.js", "/api/orders?id=42"};

void Produce(hush::Session* session, std::uint32_t worker, std::uint64_t groups) {
  for (std::uint64_t i = 0; i < groups; ++i) {
    {
      HUSH_SPAN(gen, request);
      HUSH_TRACE(gen, recv, worker, i, kPaths[i & 3]);
      {
        HUSH_SPAN(gen, handle);
        HUSH_COUNTER(gen, depth, static_cast<double>(i % 17));
      }
      HUSH_TRACE(gen, send, i, static_cast<std::uint32_t>(200 + (i % 7 == 0) * 300),
                 static_cast<std::uint32_t>(i * 37 % 65536));
    }
    HUSH_INSTANT(gen, tick);
    if ((i & 1023) == 1023) {
      // Keep the ring from overflowing: wait while too many events are not written yet.
      const std::uint64_t emitted =
          g_emitted.fetch_add(1024 * kEventsPerGroup, std::memory_order_relaxed);
      while (emitted > session->Stats().events_written + kMaxUnwritten) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: trace_gen DIR N [THREADS]\n");
    return 2;
  }
  const std::uint64_t n = std::strtoull(argv[2], nullptr, 10);
  const unsigned threads = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 2;
  if (n < kEventsPerGroup * threads || threads == 0 || threads > 64) {
    std::fprintf(stderr, "trace_gen: N must be at least %llu, THREADS 1 to 64\n",
                 static_cast<unsigned long long>(kEventsPerGroup * threads));
    return 2;
  }
  hush::SessionOptions options;
  options.events = {"gen:*"};
  options.output_dir = argv[1];
  options.buffer_size = 64 << 20;
  std::string error;
  auto session = hush::Session::Start(options, &error);
  if (!session) {
    std::fprintf(stderr, "trace_gen: %s\n", error.c_str());
    return 1;
  }
  const std::uint64_t groups = n / kEventsPerGroup / threads;
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back(Produce, session.get(), t, groups);
  }
  for (std::thread& w : workers) w.join();
  session->Stop();
  const hush::SessionStats s = session->Stats();
  std::printf("trace_gen: %llu events written, %llu discarded, %llu bytes\n",
              static_cast<unsigned long long>(s.events_written),
              static_cast<unsigned long long>(s.events_discarded),
              static_cast<unsigned long long>(s.bytes_written));
  return s.events_discarded == 0 ? 0 : 1;
}
