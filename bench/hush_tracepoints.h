// The hushtrace tracepoints of the benchmarks. LTTng-UST declares the same events in lttng_tp.h.
#ifndef HUSHTRACE_BENCH_HUSH_TRACEPOINTS_H_
#define HUSHTRACE_BENCH_HUSH_TRACEPOINTS_H_

#include <hushtrace/hushtrace.h>

#include <cstdint>

#include "bench_common.h"

// Enabled by the benchmarks' sessions.
HUSH_TRACEPOINT(hushbench, two_int, (std::int32_t, a), (std::int32_t, b))
HUSH_TRACEPOINT(hushbench, str32, (const char*, s))
// Compiled in, never enabled.
HUSH_TRACEPOINT(hushbench_off, disabled, (std::int32_t, a), (std::int32_t, b))

#endif  // HUSHTRACE_BENCH_HUSH_TRACEPOINTS_H_
