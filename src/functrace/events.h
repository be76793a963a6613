// The function-tracing events (docs/format.md, "Function tracing events"). Defined in the
// runtime itself, so every program that gets the runtime (linked or LD_PRELOADed) has them.
#ifndef HUSHTRACE_SRC_FUNCTRACE_EVENTS_H_
#define HUSHTRACE_SRC_FUNCTRACE_EVENTS_H_

#include <cstdint>

#include "hushtrace/hushtrace.h"

HUSH_TRACEPOINT(func, entry, (std::uint64_t, addr))
HUSH_TRACEPOINT(func, exit, (std::uint64_t, addr))
HUSH_TRACEPOINT(func, call, (std::uint64_t, addr), (std::uint64_t, entry_ts))
HUSH_TRACEPOINT(func, module, (const char*, path), (const char*, build_id), (std::uint64_t, base))

#endif  // HUSHTRACE_SRC_FUNCTRACE_EVENTS_H_
