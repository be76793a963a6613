// The scheduler events of --sched (docs/format.md, "Scheduler events"). Exporters map them by
// name: the subject thread is always the `tid` field, never the stream's vtid.
#ifndef HUSHTRACE_SRC_SCHED_SCHED_EVENTS_H_
#define HUSHTRACE_SRC_SCHED_SCHED_EVENTS_H_

#include <cstdint>
#include <string_view>

#include "hushtrace/hushtrace.h"

HUSH_TRACEPOINT(sched, switch_out, (std::uint32_t, tid), (std::uint8_t, preempted), (std::uint32_t, cpu))
HUSH_TRACEPOINT(sched, switch_in, (std::uint32_t, tid), (std::uint32_t, cpu))
HUSH_TRACEPOINT(sched, thread_start, (std::uint32_t, tid))
HUSH_TRACEPOINT(sched, thread_exit, (std::uint32_t, tid))
HUSH_TRACEPOINT(sched, thread_name, (std::uint32_t, tid), (std::string_view, name))

namespace hush::sched {
// The globs a --sched session enables in addition to the user's.
inline constexpr std::string_view kSchedEventGlobs[] = {
    "sched:switch_out", "sched:switch_in", "sched:thread_start", "sched:thread_exit",
    "sched:thread_name"};
}  // namespace hush::sched

#endif  // HUSHTRACE_SRC_SCHED_SCHED_EVENTS_H_
