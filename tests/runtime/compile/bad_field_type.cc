// Must not compile: a field type hushtrace does not support.
#include <hushtrace/hushtrace.h>

#include <vector>

HUSH_TRACEPOINT(bad, vec, (std::vector<int>, v))

void Emit(const std::vector<int>& v) { HUSH_TRACE(bad, vec, v); }
