/* The LTTng-UST tracepoint provider of the benchmarks (2.13 API): the same events as
 * hush_tracepoints.h. Probes are built into the benchmark executables (lttng_tp.c). */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER hushbench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "lttng_tp.h"

#if !defined(HUSHBENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define HUSHBENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

// clang-format off
// (the layout LTTng-UST documents for these macros)
LTTNG_UST_TRACEPOINT_EVENT(hushbench, two_int,
    LTTNG_UST_TP_ARGS(int32_t, a, int32_t, b),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(int32_t, a, a)
        lttng_ust_field_integer(int32_t, b, b)))

LTTNG_UST_TRACEPOINT_EVENT(hushbench, str32,
    LTTNG_UST_TP_ARGS(const char *, s),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_string(s, s)))

LTTNG_UST_TRACEPOINT_EVENT(hushbench, span_begin,
    LTTNG_UST_TP_ARGS(),
    LTTNG_UST_TP_FIELDS())

LTTNG_UST_TRACEPOINT_EVENT(hushbench, span_end,
    LTTNG_UST_TP_ARGS(),
    LTTNG_UST_TP_FIELDS())

LTTNG_UST_TRACEPOINT_EVENT(hushbench, startup,
    LTTNG_UST_TP_ARGS(int32_t, i),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(int32_t, i, i)))
// clang-format on

#endif /* HUSHBENCH_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
