#include "sql/schema.h"

#include <array>

namespace hush::sql {
namespace {

using T = ColumnType;

// Column order is the row order of TraceTables (tables.cc) and of the ClickHouse RowBinary rows.
constexpr Column kProcesses[] = {
    {"trace_id", T::kString},  {"host", T::kString},      {"pid", T::kUInt32},
    {"command", T::kString},   {"clock", T::kString},     {"clock_freq", T::kInt64},
    {"start_ns", T::kInt64},   {"end_ns", T::kInt64},     {"events", T::kInt64},
    {"bytes", T::kInt64},      {"dir", T::kString},
};
constexpr Column kThreads[] = {
    {"trace_id", T::kString}, {"host", T::kString}, {"pid", T::kUInt32},
    {"tid", T::kUInt32},      {"name", T::kString},
};
constexpr Column kEvents[] = {
    {"trace_id", T::kString}, {"host", T::kString},   {"pid", T::kUInt32},
    {"tid", T::kUInt32},      {"ts_ns", T::kInt64},   {"provider", T::kString},
    {"name", T::kString},     {"kind", T::kString},   {"fields", T::kString},
};
constexpr Column kSpans[] = {
    {"trace_id", T::kString}, {"host", T::kString},    {"pid", T::kUInt32},
    {"tid", T::kUInt32},      {"id", T::kInt64},       {"parent_id", T::kInt64},
    {"depth", T::kUInt32},    {"ts_ns", T::kInt64},    {"dur_ns", T::kInt64},
    {"self_ns", T::kInt64},   {"provider", T::kString}, {"name", T::kString},
};
constexpr Column kCounters[] = {
    {"trace_id", T::kString}, {"host", T::kString}, {"pid", T::kUInt32},
    {"ts_ns", T::kInt64},     {"name", T::kString}, {"value", T::kFloat64},
};
constexpr Column kSchedSlices[] = {
    {"trace_id", T::kString}, {"host", T::kString},  {"pid", T::kUInt32},
    {"tid", T::kUInt32},      {"ts_ns", T::kInt64},  {"dur_ns", T::kInt64},
    {"cpu", T::kInt64},       {"preempted", T::kInt64},
};
constexpr Column kLosses[] = {
    {"trace_id", T::kString},   {"host", T::kString},        {"pid", T::kUInt32},
    {"stream", T::kUInt32},     {"first_ns", T::kInt64},     {"last_ns", T::kInt64},
    {"discarded", T::kInt64},   {"overwritten", T::kInt64},  {"lost_packets", T::kInt64},
    {"truncated", T::kInt64},
};

constexpr std::array<TableDef, kTableCount> kTables = {{
    {TableId::kProcesses, "processes", kProcesses, "host", ""},
    {TableId::kThreads, "threads", kThreads, "host, pid, tid", ""},
    // SQLite: no index; its events are stored by (tid, ts_ns) (sqlite_sink.h).
    {TableId::kEvents, "events", kEvents, "host, pid, tid, ts_ns", ""},
    {TableId::kSpans, "spans", kSpans, "name, host, ts_ns", "spans_by_name(name)"},
    {TableId::kCounters, "counters", kCounters, "name, host, ts_ns", ""},
    {TableId::kSchedSlices, "sched_slices", kSchedSlices, "host, pid, tid, ts_ns", ""},
    {TableId::kLosses, "losses", kLosses, "host, pid, stream", ""},
}};

}  // namespace

std::span<const TableDef> Tables() { return kTables; }

}  // namespace hush::sql
