// Start-up benchmark: an otherwise empty program linked with LTTng-UST (provider lttng_tp.h built
// in) that emits 100 hushbench:startup events at the top of main().
#include <cstdint>

#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"

int main() {
  for (std::int32_t i = 0; i < 100; ++i) lttng_ust_tracepoint(hushbench, startup, i);
  return 0;
}
