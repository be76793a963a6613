// The LTTng-UST counterpart of insn_driver.cc: exactly N iterations of one kind of event after a
// warm-up, each mode's loop in its own extern "C" function bench_loop_MODE for
// `valgrind --tool=callgrind --toggle-collect='bench_loop_*'`.
//
//   lttng_insn_driver MODE N        MODE: empty | disabled | enabled2int | string32 | span
//
// The LTTng session is external (bench/run_all.sh). An enabled mode whose events are not enabled
// when the loop starts exits with status 3, so a missing session never passes for a measurement.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_common.h"

#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"
#include "lttng_tp_off.h"

#define HUSHBENCH_LOOP_BARRIER(i) asm volatile("" : "+r"(i) : : "memory")

extern "C" {

[[gnu::noinline]] void bench_loop_empty(std::int32_t n) {
  for (std::int32_t i = 0; i < n; ++i) {
    HUSHBENCH_LOOP_BARRIER(i);
  }
}

[[gnu::noinline]] void bench_loop_disabled(std::int32_t n) {
  for (std::int32_t i = 0; i < n; ++i) {
    lttng_ust_tracepoint(hushbench_off, disabled, i, i);
    HUSHBENCH_LOOP_BARRIER(i);
  }
}

[[gnu::noinline]] void bench_loop_enabled2int(std::int32_t n) {
  for (std::int32_t i = 0; i < n; ++i) {
    lttng_ust_tracepoint(hushbench, two_int, i, i);
    HUSHBENCH_LOOP_BARRIER(i);
  }
}

[[gnu::noinline]] void bench_loop_string32(std::int32_t n, const char* s) {
  for (std::int32_t i = 0; i < n; ++i) {
    lttng_ust_tracepoint(hushbench, str32, s);
    HUSHBENCH_LOOP_BARRIER(i);
  }
}

[[gnu::noinline]] void bench_loop_span(std::int32_t n) {
  for (std::int32_t i = 0; i < n; ++i) {
    lttng_ust_tracepoint(hushbench, span_begin);
    HUSHBENCH_LOOP_BARRIER(i);
    lttng_ust_tracepoint(hushbench, span_end);
  }
}

}  // extern "C"

namespace {

constexpr std::int32_t kWarmup = 10000;

bool Enabled(const std::string& mode) {
  if (mode == "enabled2int") return lttng_ust_tracepoint_enabled(hushbench, two_int);
  if (mode == "string32") return lttng_ust_tracepoint_enabled(hushbench, str32);
  if (mode == "span") {
    return lttng_ust_tracepoint_enabled(hushbench, span_begin) &&
           lttng_ust_tracepoint_enabled(hushbench, span_end);
  }
  return true;
}

void Run(const std::string& mode, std::int32_t n) {
  if (mode == "empty") {
    bench_loop_empty(n);
  } else if (mode == "disabled") {
    bench_loop_disabled(n);
  } else if (mode == "enabled2int") {
    bench_loop_enabled2int(n);
  } else if (mode == "string32") {
    bench_loop_string32(n, hushbench::Opaque(hushbench::kString32));
  } else if (mode == "span") {
    bench_loop_span(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s empty|disabled|enabled2int|string32|span N\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const long n = std::strtol(argv[2], nullptr, 10);
  const bool enabled = mode == "enabled2int" || mode == "string32" || mode == "span";
  if (!(enabled || mode == "empty" || mode == "disabled") || n < 0 || n > INT32_MAX) {
    std::fprintf(stderr, "lttng_insn_driver: bad mode or count\n");
    return 2;
  }
  if (lttng_ust_tracepoint_enabled(hushbench_off, disabled)) {
    std::fprintf(
        stderr,
        "lttng_insn_driver: hushbench_off:disabled is enabled; enable 'hushbench:*' only\n");
    return 3;
  }
  if (!Enabled(mode)) {
    std::fprintf(stderr,
                 "lttng_insn_driver: the events of mode %s are not enabled: no LTTng session with "
                 "'hushbench:*' reached this process\n",
                 mode.c_str());
    return 3;
  }
  Run(mode, kWarmup);
  Run(mode, static_cast<std::int32_t>(n));
  const int events_per_iteration = mode == "span" ? 2 : 1;
  std::printf(
      "{\"tracer\":\"lttng-ust\",\"mode\":\"%s\",\"n\":%ld,\"warmup\":%d,\"events_expected\":%ld}"
      "\n",
      mode.c_str(), n, kWarmup, enabled ? (n + kWarmup) * events_per_iteration : 0L);
  return 0;
}
