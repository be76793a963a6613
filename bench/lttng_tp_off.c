/* The probes of the hushbench_off provider (never enabled). */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "lttng_tp_off.h"
