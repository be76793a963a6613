// A module with tracepoints that probe_test dlopen()s and dlclose()s while sessions run and
// probes come and go.
#include <hushtrace/hushtrace.h>

#include <cstdint>

HUSH_TRACEPOINT(prbmod, call, (std::uint32_t, n))

extern "C" __attribute__((visibility("default"))) int probe_module_emit(int count) {
  for (int i = 0; i < count; ++i) HUSH_TRACE(prbmod, call, static_cast<std::uint32_t>(i));
  return count;
}
