// Google Benchmark micro-benchmarks of the hushtrace fast path (docs/benchmarks.md).
//
//   BM_EmptyLoop        the loop alone (the baseline of BM_Disabled)
//   BM_Disabled         a compiled-in tracepoint whose event is not enabled, no session running
//   BM_Enabled2Int      an enabled event with two int32 fields, 1 and 2 threads
//   BM_EnabledString32  an enabled event with one 32-character string field
//   BM_Span             HUSH_SPAN: one begin and one end event per iteration
//
// The enabled benchmarks share one stream-mode session (started by the first of them, 64 MiB ring
// per thread, HUSHBENCH_BUFFER_SIZE overrides) that writes to a scratch directory under /dev/shm
// (HUSHBENCH_TMP overrides), removed at exit. To bound memory, the stream files are truncated after
// each benchmark run (outside the timed loop): the trace of this binary is not meant to be read,
// the bytes-per-event figure comes from insn_driver. LTTng-UST is measured by the separate
// lttng_bench so that this binary pays no LTTng start-up.
//
// Counters: events_per_s (all threads together), ns_per_event_thread (each thread's own wall time
// per event, averaged over the threads), cpu_ns_per_event_thread (the same in the thread's CPU
// time: on this shared 2-CPU machine a thread may wait for a CPU, which wall time counts and CPU
// time does not), discarded (events the ring dropped because the consumer fell behind, per event
// emitted: should be 0; if not, the figure is not that of the normal path).
#include <benchmark/benchmark.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "bench_common.h"
#include "hush_tracepoints.h"
#include "hushtrace/session.h"

namespace {

std::mutex g_mu;
std::unique_ptr<hush::Session> g_session;
std::string g_scratch;

hush::Session* EnsureSession() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_session) return g_session.get();
  g_scratch = hushbench::MakeScratchDir("hushtrace_bench");
  if (g_scratch.empty()) {
    std::fprintf(stderr, "hushtrace_bench: cannot create a scratch directory under %s\n",
                 hushbench::ScratchBase().c_str());
    std::exit(2);
  }
  hush::SessionOptions options;
  options.events = {"hushbench:*"};
  options.output_dir = g_scratch + "/trace";
  options.mode = hush::Mode::kStream;
  // HUSHBENCH_MODE=flight: no consumer thread, so the per-thread figures at 2 threads measure the
  // fast path alone (on a 2-vCPU machine the consumer otherwise competes with the producers).
  if (const char* mode = std::getenv("HUSHBENCH_MODE"); mode != nullptr && std::string(mode) == "flight") {
    options.mode = hush::Mode::kFlight;
  }
  options.buffer_size = std::size_t{64} << 20;
  if (const char* size = std::getenv("HUSHBENCH_BUFFER_SIZE"); size != nullptr && *size != '\0') {
    if (!hush::ParseSize(size, &options.buffer_size)) {
      std::fprintf(stderr, "hushtrace_bench: bad HUSHBENCH_BUFFER_SIZE '%s'\n", size);
      std::exit(2);
    }
  }
  std::string error;
  g_session = hush::Session::Start(options, &error);
  if (!g_session) {
    std::fprintf(stderr, "hushtrace_bench: cannot start the session: %s\n", error.c_str());
    std::exit(2);
  }
  return g_session.get();
}

void TruncateStreams() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(g_scratch + "/trace", ec)) {
    if (entry.path().filename().string().rfind("stream_", 0) == 0) {
      std::filesystem::resize_file(entry.path(), 0, ec);
    }
  }
}

void Cleanup() {
  if (g_session) {
    g_session->Stop();
    g_session.reset();
  }
  if (!g_scratch.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(g_scratch, ec);
  }
}

using Clock = std::chrono::steady_clock;

double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Runs `body` per iteration with the bookkeeping shared by the enabled benchmarks.
template <typename Body>
void RunEnabled(benchmark::State& state, int events_per_iteration, Body body) {
  hush::Session* session = nullptr;
  hush::SessionStats before;
  if (state.thread_index() == 0) {
    session = EnsureSession();  // before the loop: the loop's start barrier waits for it
    before = session->Stats();
  }
  const auto t0 = Clock::now();
  const double c0 = ThreadCpuNs();
  std::int32_t i = 0;
  for (auto _ : state) {
    body(i);
    ++i;
    benchmark::DoNotOptimize(i);
  }
  const double c1 = ThreadCpuNs();
  const auto t1 = Clock::now();
  const double events = static_cast<double>(state.iterations()) * events_per_iteration;
  state.counters["events_per_s"] = benchmark::Counter(events, benchmark::Counter::kIsRate);
  state.counters["ns_per_event_thread"] =
      benchmark::Counter(std::chrono::duration<double, std::nano>(t1 - t0).count() / events,
                         benchmark::Counter::kAvgThreads);
  state.counters["cpu_ns_per_event_thread"] =
      benchmark::Counter((c1 - c0) / events, benchmark::Counter::kAvgThreads);
  if (state.thread_index() == 0) {
    const hush::SessionStats after = session->Stats();
    const double total_events = events * state.threads();
    state.counters["discarded"] =
        static_cast<double>(after.events_discarded - before.events_discarded) / total_events;
    TruncateStreams();
  }
}

void BM_EmptyLoop(benchmark::State& state) {
  std::int32_t i = 0;
  for (auto _ : state) {
    ++i;
    benchmark::DoNotOptimize(i);
  }
}
BENCHMARK(BM_EmptyLoop);

void BM_Disabled(benchmark::State& state) {
  state.counters["session_active"] = g_session ? 1 : 0;
  std::int32_t i = 0;
  for (auto _ : state) {
    HUSH_TRACE(hushbench_off, disabled, i, i);
    ++i;
    benchmark::DoNotOptimize(i);
  }
}
BENCHMARK(BM_Disabled);

void BM_Enabled2Int(benchmark::State& state) {
  RunEnabled(state, 1, [](std::int32_t i) { HUSH_TRACE(hushbench, two_int, i, i); });
}
BENCHMARK(BM_Enabled2Int)->Threads(1)->Threads(2)->UseRealTime();

void BM_EnabledString32(benchmark::State& state) {
  const char* s = hushbench::Opaque(hushbench::kString32);
  RunEnabled(state, 1, [s](std::int32_t) { HUSH_TRACE(hushbench, str32, s); });
}
BENCHMARK(BM_EnabledString32)->UseRealTime();

void BM_Span(benchmark::State& state) {
  RunEnabled(state, 2, [](std::int32_t i) {
    HUSH_SPAN(hushbench, span);
    benchmark::DoNotOptimize(i);
  });
}
BENCHMARK(BM_Span)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("tracer", "hushtrace");
  benchmark::AddCustomContext("scratch_base", hushbench::ScratchBase());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  Cleanup();
  return 0;
}
