// Google Benchmark micro-benchmarks of LTTng-UST 2.13, the peer of hushtrace_bench (same loops,
// same events). The tracepoint provider is lttng_tp.h (probes built into this executable).
//
// The session is external and must be real: bench/run_all.sh starts lttng-sessiond, creates a
// session writing to a directory, enables 'hushbench:*', starts it, runs this binary, stops the
// session and checks with babeltrace2 that events were recorded. Run by hand without such a
// session, every enabled benchmark is skipped with an error instead of timing a disabled probe.
//
//   BM_LttngEmptyLoop, BM_LttngDisabled (provider hushbench_off, never enabled),
//   BM_Lttng2Int (1 and 2 threads), BM_LttngString32, BM_LttngSpan (span_begin + span_end).
#include <benchmark/benchmark.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "bench_common.h"

#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"
#include "lttng_tp_off.h"

namespace {

using Clock = std::chrono::steady_clock;

double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

bool RequireEnabled(benchmark::State& state, bool enabled, const char* event) {
  if (enabled) return true;
  static char message[256];
  std::snprintf(message, sizeof message,
                "%s is not enabled: run under an LTTng session with 'hushbench:*' enabled "
                "(bench/run_all.sh does)",
                event);
  state.SkipWithError(message);
  return false;
}

template <typename Body>
void RunEnabled(benchmark::State& state, int events_per_iteration, Body body) {
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
}

void BM_LttngEmptyLoop(benchmark::State& state) {
  std::int32_t i = 0;
  for (auto _ : state) {
    ++i;
    benchmark::DoNotOptimize(i);
  }
}
BENCHMARK(BM_LttngEmptyLoop);

void BM_LttngDisabled(benchmark::State& state) {
  if (lttng_ust_tracepoint_enabled(hushbench_off, disabled)) {
    state.SkipWithError("hushbench_off:disabled is enabled: enable 'hushbench:*' only");
    return;
  }
  std::int32_t i = 0;
  for (auto _ : state) {
    lttng_ust_tracepoint(hushbench_off, disabled, i, i);
    ++i;
    benchmark::DoNotOptimize(i);
  }
}
BENCHMARK(BM_LttngDisabled);

void BM_Lttng2Int(benchmark::State& state) {
  if (!RequireEnabled(state, lttng_ust_tracepoint_enabled(hushbench, two_int), "hushbench:two_int"))
    return;
  RunEnabled(state, 1, [](std::int32_t i) { lttng_ust_tracepoint(hushbench, two_int, i, i); });
}
BENCHMARK(BM_Lttng2Int)->Threads(1)->Threads(2)->UseRealTime();

void BM_LttngString32(benchmark::State& state) {
  if (!RequireEnabled(state, lttng_ust_tracepoint_enabled(hushbench, str32), "hushbench:str32"))
    return;
  const char* s = hushbench::Opaque(hushbench::kString32);
  RunEnabled(state, 1, [s](std::int32_t) { lttng_ust_tracepoint(hushbench, str32, s); });
}
BENCHMARK(BM_LttngString32)->UseRealTime();

void BM_LttngSpan(benchmark::State& state) {
  if (!RequireEnabled(state,
                      lttng_ust_tracepoint_enabled(hushbench, span_begin) &&
                          lttng_ust_tracepoint_enabled(hushbench, span_end),
                      "hushbench:span_begin/span_end"))
    return;
  RunEnabled(state, 2, [](std::int32_t i) {
    lttng_ust_tracepoint(hushbench, span_begin);
    benchmark::DoNotOptimize(i);
    lttng_ust_tracepoint(hushbench, span_end);
  });
}
BENCHMARK(BM_LttngSpan)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("tracer", "lttng-ust");
  const bool enabled = lttng_ust_tracepoint_enabled(hushbench, two_int);
  benchmark::AddCustomContext("lttng_enabled_at_main", enabled ? "yes" : "no");
  if (!enabled && std::getenv("HUSHBENCH_REQUIRE_LTTNG") != nullptr) {
    std::fprintf(stderr,
                 "lttng_bench: hushbench:two_int is not enabled at main(): no LTTng session with "
                 "'hushbench:*' enabled reached this process (is lttng-sessiond running and the "
                 "session started?)\n");
    return 3;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
