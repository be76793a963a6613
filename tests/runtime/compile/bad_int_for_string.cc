// Must not compile: an integer argument for a string field.
#include <hushtrace/hushtrace.h>

#include <string_view>

HUSH_TRACEPOINT(bad, path, (std::string_view, path))

void Emit(int n) { HUSH_TRACE(bad, path, n); }
