// Start-up benchmark: an otherwise empty program linked with libhushtrace.so that emits 100 events
// at the top of main(). Without HUSHTRACE_EVENTS no session starts; with it the session is
// started before main() by the library's constructor, so none of the 100 should be lost.
#include <hushtrace/hushtrace.h>

#include <cstdint>

HUSH_TRACEPOINT(hushbench, startup, (std::int32_t, i))

int main() {
  for (std::int32_t i = 0; i < 100; ++i) HUSH_TRACE(hushbench, startup, i);
  return 0;
}
