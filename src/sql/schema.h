// The relational schema of a trace (docs/sql.md): one definition, two engines.
//
// Every table starts with the same three columns, so rows of many traces from many hosts share
// one table: trace_id (the metadata uuid), host (env.hostname, or `ship --host`), pid. The
// column lists below are the only place the schema is written: the SQLite sink
// (sqlite_sink.h) and the ClickHouse sink (clickhouse.h) derive their CREATE TABLE statements
// and their row encodings from them, so the two stores cannot drift apart.
//
//   processes     one row a trace: command, clock, time range, event count
//   threads       one row a thread of the trace's packet contexts (and sched:thread_name)
//   events        one row an event, every event: ts, tid, provider, name, kind, fields (JSON)
//   spans         one row a closed slice: spans (begin/end) and function calls (entry/exit),
//                 paired by the export timeline (src/export/timeline.h): start, duration, self
//                 time, depth, id and parent id
//   counters      one row a counter sample
//   sched_slices  one row a "running" slice of a thread (sched:switch_in .. switch_out)
//   losses        one row a stream: events discarded and overwritten, lost packets, time range
//
// Event fields are a JSON object string (docs/sql.md, "Why fields are JSON"): the field sets are
// defined by each program's tracepoints, so no fixed set of typed columns can hold them; the
// questions that need typed values (durations, counter values, scheduling) have typed tables.
#ifndef HUSHTRACE_SRC_SQL_SCHEMA_H_
#define HUSHTRACE_SRC_SQL_SCHEMA_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace hush::sql {

enum class ColumnType : std::uint8_t {
  kInt64,    // SQLite INTEGER, ClickHouse Int64
  kUInt32,   // SQLite INTEGER, ClickHouse UInt32
  kFloat64,  // SQLite REAL,    ClickHouse Float64
  kString,   // SQLite TEXT,    ClickHouse String (valid UTF-8: strings of the trace are repaired)
};

struct Column {
  const char* name;
  ColumnType type;
};

enum class TableId : std::uint8_t {
  kProcesses,
  kThreads,
  kEvents,
  kSpans,
  kCounters,
  kSchedSlices,
  kLosses,
};
inline constexpr std::size_t kTableCount = 7;

struct TableDef {
  TableId id;
  const char* name;
  std::span<const Column> columns;
  // ClickHouse sorting key (ORDER BY), chosen for the queries of docs/sql.md; ", trace_id, seq"
  // follows it (clickhouse.h), so it must not name trace_id itself.
  const char* clickhouse_order;
  // SQLite indexes created after the rows are in ("" none): "name(col, col)" each, ';'-separated.
  const char* sqlite_indexes;
};

// The tables, indexed by TableId.
std::span<const TableDef> Tables();
inline const TableDef& Table(TableId id) { return Tables()[static_cast<std::size_t>(id)]; }

// One value of a row; which member counts is given by the column's type.
struct Value {
  std::int64_t i = 0;  // kInt64, kUInt32
  double d = 0;        // kFloat64
  std::string_view s;  // kString
};

}  // namespace hush::sql

#endif  // HUSHTRACE_SRC_SQL_SCHEMA_H_
