// A trace as the rows of the relational schema (schema.h, docs/sql.md), for a RowSink.
//
//   reader::Trace  --events-->  TraceTables  --rows-->  RowSink (SqliteSink, ClickHouseSink)
//                                   |  ^
//                                   v  |  slices, counter samples, thread names
//                          exporter::TimelineBuilder (src/export/timeline.h)
//
// Every event becomes an `events` row. The same events go through the export timeline, which
// pairs span begin/end and func:entry/exit into slices (the same pairing as the Perfetto and
// Chrome exports: an end closes the innermost open slice of its key, slices still open at the
// end are closed at the last event); TraceTables turns its slices into `spans` rows (id, parent,
// depth, self time from the slice stack of each thread), its "running" slices into
// `sched_slices`, its counter samples into `counters`. Threads, processes and losses are
// written by Finish(), from the trace's packet contexts and stream headers.
//
//   SqliteSink sink(...);
//   TraceTables tables(*trace, sink, {});
//   reader::EventIterator it(*trace);
//   while (it.Next()) if (!tables.Add(it.event())) break;   // false: the sink failed
//   // or: AddEventRow() for every event in any order, AddToTimeline() for every event in order
//   bool ok = tables.Finish();
//
// Memory: that of the timeline (threads x stack depth + names), independent of the number of
// events. Single-threaded.
#ifndef HUSHTRACE_SRC_SQL_TABLES_H_
#define HUSHTRACE_SRC_SQL_TABLES_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "export/output_buffer.h"
#include "export/symbol_resolver.h"
#include "export/timeline.h"
#include "hushtrace/reader.h"
#include "sql/schema.h"

namespace hush::sql {

// Receives rows; values in the order of the table's columns (schema.h).
class RowSink {
 public:
  virtual ~RowSink() = default;
  // False when the sink failed: no further row is sent.
  virtual bool Row(TableId table, std::span<const Value> values) = 0;
};

struct TableOptions {
  std::string host;  // "" : the trace's env.hostname
};

// The trace id of the rows: the metadata uuid, or (a trace without one) "dir:<absolute dir>".
// A triggered snapshot (docs/format.md, "Snapshots") carries its session's uuid: its id is
// "<uuid>/snapshot/<tid>-<trigger timestamp>", one per snapshot (the session's own trace and
// each of its snapshots are separate traces in the tables, and shipping each is idempotent).
std::string TraceId(const reader::Trace& trace);

// The trace's stream indexes in groups, for reading the events thread by thread
// (reader::EventIterator over one group at a time, AddEventRow): the streams that carried
// packets of one thread are in one group, groups in order of the lowest tid whose packets they
// carried, streams of no known thread last. A trace of one stream a thread (the rings of a
// session) gives its events in order of (tid, time).
std::vector<std::vector<std::uint32_t>> StreamsByThread(const reader::Trace& trace);

class TraceTables {
 public:
  TraceTables(const reader::Trace& trace, RowSink& sink, const TableOptions& options);
  ~TraceTables();
  TraceTables(const TraceTables&) = delete;
  TraceTables& operator=(const TraceTables&) = delete;

  // False once the sink has failed. Add(e) is AddEventRow(e) then AddToTimeline(e).
  bool Add(const reader::Event& event);
  // The two halves of Add(), for a sink that wants the `events` rows in another order than
  // time (the SQLite file stores them by thread and time: export_sqlite.cc reads the trace
  // thread by thread for them): AddEventRow() writes the event's `events` row alone, in any
  // order; AddToTimeline() must see every event in the iterator's time order, as Add() does,
  // and writes the spans, counters and sched_slices rows they make.
  bool AddEventRow(const reader::Event& event);
  bool AddToTimeline(const reader::Event& event);
  // Closes open slices, writes threads, losses and the process row. False when the sink failed.
  bool Finish();

  const std::string& trace_id() const { return trace_id_; }
  const std::string& host() const { return host_; }
  std::uint64_t rows(TableId table) const { return rows_[static_cast<std::size_t>(table)]; }
  const exporter::TimelineStats& timeline_stats() const { return builder_->stats(); }

 private:
  class Slices;  // the TimelineSink side
  struct ClassText {
    std::string provider, name;
    std::vector<std::string> keys;  // "\"field\":" of each field ("" for hidden ones)
  };

  // The columns every table starts with: trace_id, host, pid.
  void Common(Value* v) const;
  bool Emit(TableId table, std::span<const Value> values);
  bool EventRow(const reader::Event& event, std::int64_t ns);
  bool Timeline(const reader::Event& event);
  void AppendFields(const reader::Event& event, const ClassText& text);

  const reader::Trace& trace_;
  RowSink& sink_;
  std::string trace_id_, host_;
  std::int64_t pid_;  // Trace::pid() looks it up in the environment
  bool ok_ = true;
  std::array<std::uint64_t, kTableCount> rows_{};
  std::vector<ClassText> classes_;
  // Add() converts with clock_, AddEventRow() with row_clock_: its order may differ from time's,
  // and a converter is fast for steps forward in time.
  exporter::EpochNsConverter clock_, row_clock_;
  exporter::OutputBuffer fields_{nullptr};  // the JSON of the current event (never flushed)
  std::int64_t first_ns_ = 0, last_ns_ = 0;
  std::uint64_t events_ = 0;
  const exporter::HexAddressResolver resolver_;
  std::unique_ptr<Slices> slices_;
  std::unique_ptr<exporter::TimelineBuilder> builder_;
};

}  // namespace hush::sql

#endif  // HUSHTRACE_SRC_SQL_TABLES_H_
