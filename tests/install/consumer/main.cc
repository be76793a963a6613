// Uses an installed hushtrace through its public header only.
#include <hushtrace/hushtrace.h>

HUSH_TRACEPOINT(consumer, hello, (int32_t, answer), (const char*, who))

int main() {
  HUSH_TRACE(consumer, hello, 42, "installed");
  return 0;
}
