/* A second LTTng-UST provider whose event is never enabled ('hushbench:*' does not match it):
 * the disabled-tracepoint benchmark. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER hushbench_off

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "lttng_tp_off.h"

#if !defined(HUSHBENCH_LTTNG_TP_OFF_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define HUSHBENCH_LTTNG_TP_OFF_H

#include <lttng/tracepoint.h>
#include <stdint.h>

// clang-format off
// (the layout LTTng-UST documents for these macros)
LTTNG_UST_TRACEPOINT_EVENT(hushbench_off, disabled,
    LTTNG_UST_TP_ARGS(int32_t, a, int32_t, b),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(int32_t, a, a)
        lttng_ust_field_integer(int32_t, b, b)))
// clang-format on

#endif /* HUSHBENCH_LTTNG_TP_OFF_H */

#include <lttng/tracepoint-event.h>
