// Must not compile: a double argument for a bool field.
#include <hushtrace/hushtrace.h>

HUSH_TRACEPOINT(bad, flag, (bool, ok))

void Emit(double d) { HUSH_TRACE(bad, flag, d); }
