// Runs exactly N iterations of one kind of hushtrace event after a warm-up, for callgrind
// (instructions per event, docs/benchmarks.md) and for the bytes-per-event measurement.
//
//   hush_insn_driver MODE N [TRACE_DIR]
//   MODE: empty | disabled | disabled_flag | enabled2int | string32 | span | span_flight |
//         span_trigger | span_quantile
//
// `span_flight`: the span in a flight-mode session whose snapshot trigger is a duration on
// another span (hushbench:span_other>1s): the span's own path, unchanged by triggers elsewhere.
// `span_trigger`: the span with a duration trigger of its own (hushbench:span>1s) that never
// fires: every begin and end take the slow path and the trigger check.
// `span_quantile`: the same with an adaptive threshold (hushbench:span>p99.9): every end also
// feeds the running estimate (session/quantile_threshold.h). It fires on the spans beyond the
// estimate (a preempted iteration), at most once per snapshot interval (1 s by default).
// Every enabled mode also prints the wall-clock ns per iteration of the N loop (no valgrind).
//
// `disabled` is a static-key site (a 5-byte NOP, unless the build is HUSH_STATIC_KEYS=OFF);
// `disabled_flag` the same tracepoint as a load-and-branch site (insn_driver_flag.cc).
//
// The loop of each mode is its own extern "C" function bench_loop_MODE, so that
//   valgrind --tool=callgrind --toggle-collect='bench_loop_*' hush_insn_driver MODE N DIR
// counts only the loop (and what it calls, e.g. the slow path), not start-up or the session's
// consumer thread. Instructions per event = (Ir(N2) - Ir(N1)) / (N2 - N1): the warm-up and any
// fixed cost cancel. The enabled modes run a stream-mode session (64 MiB ring) writing to
// TRACE_DIR, which must not exist yet; its statistics are printed as one JSON line on stdout.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "hush_tracepoints.h"
#include "hushtrace/session.h"

#define HUSHBENCH_LOOP_BARRIER(i) asm volatile("" : "+r"(i) : : "memory")

extern "C" {

void bench_loop_disabled_flag(std::int32_t n);  // insn_driver_flag.cc

[[gnu::noinline]] void bench_loop_empty(std::int32_t n) {
  for (std::int32_t i = 0; i < n; ++i) {
    HUSHBENCH_LOOP_BARRIER(i);
  }
}

[[gnu::noinline]] void bench_loop_disabled(std::int32_t n) {
  for (std::int32_t i = 0; i < n; ++i) {
    HUSH_TRACE(hushbench_off, disabled, i, i);
    HUSHBENCH_LOOP_BARRIER(i);
  }
}

[[gnu::noinline]] void bench_loop_enabled2int(std::int32_t n) {
  for (std::int32_t i = 0; i < n; ++i) {
    HUSH_TRACE(hushbench, two_int, i, i);
    HUSHBENCH_LOOP_BARRIER(i);
  }
}

[[gnu::noinline]] void bench_loop_string32(std::int32_t n, const char* s) {
  for (std::int32_t i = 0; i < n; ++i) {
    HUSH_TRACE(hushbench, str32, s);
    HUSHBENCH_LOOP_BARRIER(i);
  }
}

[[gnu::noinline]] void bench_loop_span(std::int32_t n) {
  for (std::int32_t i = 0; i < n; ++i) {
    HUSH_SPAN(hushbench, span);
    HUSHBENCH_LOOP_BARRIER(i);
  }
}

// The same loop under the names callgrind collects for the trigger modes.
[[gnu::noinline]] void bench_loop_span_flight(std::int32_t n) { bench_loop_span(n); }
[[gnu::noinline]] void bench_loop_span_trigger(std::int32_t n) { bench_loop_span(n); }
[[gnu::noinline]] void bench_loop_span_quantile(std::int32_t n) { bench_loop_span(n); }

// Never called: a span for span_flight's trigger to name.
[[gnu::noinline, gnu::used]] void bench_span_other() { HUSH_SPAN(hushbench, span_other); }

}  // extern "C"

namespace {

constexpr std::int32_t kWarmup = 10000;

void Run(const std::string& mode, std::int32_t n) {
  if (mode == "empty") {
    bench_loop_empty(n);
  } else if (mode == "disabled") {
    bench_loop_disabled(n);
  } else if (mode == "disabled_flag") {
    bench_loop_disabled_flag(n);
  } else if (mode == "enabled2int") {
    bench_loop_enabled2int(n);
  } else if (mode == "string32") {
    bench_loop_string32(n, hushbench::Opaque(hushbench::kString32));
  } else if (mode == "span") {
    bench_loop_span(n);
  } else if (mode == "span_flight") {
    bench_loop_span_flight(n);
  } else if (mode == "span_trigger") {
    bench_loop_span_trigger(n);
  } else if (mode == "span_quantile") {
    bench_loop_span_quantile(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s empty|disabled|disabled_flag|enabled2int|string32|span|span_flight|span_trigger|span_quantile N "
                 "[TRACE_DIR]\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const long n = std::strtol(argv[2], nullptr, 10);
  const bool triggers = mode == "span_flight" || mode == "span_trigger" || mode == "span_quantile";
  const bool enabled = mode == "enabled2int" || mode == "string32" || mode == "span" || triggers;
  if (!(enabled || mode == "empty" || mode == "disabled" || mode == "disabled_flag") || n < 0 ||
      n > INT32_MAX) {
    std::fprintf(stderr, "hush_insn_driver: bad mode or count\n");
    return 2;
  }
  std::unique_ptr<hush::Session> session;
  if (enabled) {
    if (argc < 4) {
      std::fprintf(stderr, "hush_insn_driver: mode %s needs TRACE_DIR\n", mode.c_str());
      return 2;
    }
    hush::SessionOptions options;
    options.events = {"hushbench:*"};
    options.output_dir = argv[3];
    options.mode = hush::Mode::kStream;
    options.buffer_size = std::size_t{64} << 20;
    if (triggers) {
      options.mode = hush::Mode::kFlight;
      options.snapshot_on = {mode == "span_trigger"    ? "hushbench:span>1s"
                             : mode == "span_quantile" ? "hushbench:span>p99.9"
                                                       : "hushbench:span_other>1s"};
    }
    std::string error;
    session = hush::Session::Start(options, &error);
    if (!session) {
      std::fprintf(stderr, "hush_insn_driver: cannot start the session: %s\n", error.c_str());
      return 2;
    }
  }
  Run(mode, kWarmup);
  const auto start = std::chrono::steady_clock::now();
  Run(mode, static_cast<std::int32_t>(n));
  const double ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::steady_clock::now() - start).count());
  const int events_per_iteration = mode.compare(0, 4, "span") == 0 ? 2 : 1;
  if (session) {
    session->Stop();
    const hush::SessionStats s = session->Stats();
    std::printf(
        "{\"tracer\":\"hushtrace\",\"mode\":\"%s\",\"n\":%ld,\"warmup\":%d,\"events_expected\":%ld,"
        "\"events_written\":%llu,\"events_discarded\":%llu,\"events_lost_on_write\":%llu,"
        "\"bytes_written\":%llu,\"ns_per_iteration\":%.2f,\"snapshots_triggered\":%llu}\n",
        mode.c_str(), n, kWarmup, (n + kWarmup) * events_per_iteration,
        static_cast<unsigned long long>(s.events_written),
        static_cast<unsigned long long>(s.events_discarded),
        static_cast<unsigned long long>(s.events_lost_on_write),
        static_cast<unsigned long long>(s.bytes_written), n > 0 ? ns / static_cast<double>(n) : 0.0,
        static_cast<unsigned long long>(s.snapshots_triggered));
  } else {
    std::printf("{\"tracer\":\"hushtrace\",\"mode\":\"%s\",\"n\":%ld,\"warmup\":%d}\n",
                mode.c_str(), n, kWarmup);
  }
  return 0;
}
