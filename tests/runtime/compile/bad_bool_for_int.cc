// Must not compile: a bool argument for an integer field.
#include <hushtrace/hushtrace.h>

#include <cstdint>

HUSH_TRACEPOINT(bad, count, (std::uint64_t, n))

void Emit(bool b) { HUSH_TRACE(bad, count, b); }
