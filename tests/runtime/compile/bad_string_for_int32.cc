// Must not compile: a string argument for an int32_t field.
#include <hushtrace/hushtrace.h>

#include <cstdint>

HUSH_TRACEPOINT(bad, fd, (std::int32_t, fd))

void Emit() { HUSH_TRACE(bad, fd, "not a number"); }
