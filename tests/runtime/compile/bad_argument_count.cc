// Must not compile: HUSH_TRACE with fewer arguments than the tracepoint has fields.
#include <hushtrace/hushtrace.h>

#include <cstdint>

HUSH_TRACEPOINT(bad, pair, (std::int32_t, a), (std::int32_t, b))

void Emit(std::int32_t a) { HUSH_TRACE(bad, pair, a); }
