/* The probes of the hushbench provider, linked into each LTTng benchmark executable. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "lttng_tp.h"
