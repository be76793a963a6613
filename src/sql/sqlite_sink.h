// A RowSink writing the schema (schema.h) into a SQLite database file, through libsqlite3.
//
//   std::string error;
//   auto sink = SqliteSink::Create("trace.db", &error);   // nullptr + error on failure
//   TraceTables tables(*trace, *sink, {});  ... tables.Finish();
//   if (!sink->Commit(&error)) ...
//
// Create() makes the tables (CREATE TABLE IF NOT EXISTS: several traces may go into one file,
// their rows told apart by trace_id) and opens one transaction; rows go through one prepared
// multi-row INSERT a table (kBatchRows rows a statement: the per-statement cost of SQLite's
// virtual machine is paid once for them). SQLite's work runs on a writer thread of the sink:
// Row() copies the row into a block of its table and hands full blocks over a bounded queue, so
// reading the trace and building rows overlap with the inserts. Commit() drains the queue,
// creates the indexes of the documented queries and commits. The file is written for speed,
// not crash safety: journal_mode=OFF and synchronous=OFF (an export that dies midway leaves a
// file to delete, as a half-written Perfetto export does).
//
// `events`, `spans` and `counters` are views, not tables, in the SQLite file. Their rows are
// nearly all of a trace's rows, and most of their columns repeat per row what there are only a
// few of: trace_id, host and pid (one triple a trace), an event's provider, name and kind (one
// triple an event class), a span's provider and name, a counter's name. Stored as they are
// (ClickHouse compresses them away; SQLite does not), they made an event row ~150 bytes and
// SQLite's record building and B-tree inserts most of the export's CPU. So the file holds
//
//   event_rows(tid, ts_ns, seq, source, class, fields)   one row an event, ~50 bytes,
//       PRIMARY KEY (tid, ts_ns, seq) WITHOUT ROWID      stored in the order of its key
//   span_rows(source, tid, id, parent_id, depth, ts_ns, dur_ns, self_ns, provider, name)
//   counter_rows(source, ts_ns, name, value)
//   sources(source INTEGER PRIMARY KEY, trace_id, host, pid)   one row a trace
//   event_classes(class INTEGER PRIMARY KEY, provider, name, kind)
//   names(id INTEGER PRIMARY KEY, name UNIQUE)           span providers and names, counter names
//   VIEW events, spans, counters: the rows joined with those (rowid lookups), the columns of
//                                 schema.h in its order
//
// and every documented query reads the views as schema.h defines them. The numbers are given by
// Row() from maps loaded at Create() (a file that already holds traces keeps its numbers; seq
// continues after the file's largest, found by a scan of event_rows). spans_by_name is on
// span_rows(name): a query for one name finds it in names (its UNIQUE index) and its rows
// through spans_by_name.
//
// event_rows needs no index for "one thread's events in a time range": its key is one. Rows
// given in the key's order (thread by thread, each in time order: TraceTables::AddEventRow,
// StreamsByThread) are appended at the right edge of its B-tree, which is as cheap as inserting
// into a rowid table; rows in time order across threads are stored right too, only slower
// (SQLite splits pages in the middle of the tree then).
#ifndef HUSHTRACE_SRC_SQL_SQLITE_SINK_H_
#define HUSHTRACE_SRC_SQL_SQLITE_SINK_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sql/schema.h"
#include "sql/tables.h"

struct sqlite3;
struct sqlite3_stmt;

namespace hush::sql {

// The CREATE TABLE statement of `table` in SQLite's dialect.
std::string SqliteCreateTable(const TableDef& table);

class SqliteSink final : public RowSink {
 public:
  static std::unique_ptr<SqliteSink> Create(const std::string& path, std::string* error);
  ~SqliteSink() override;
  SqliteSink(const SqliteSink&) = delete;
  SqliteSink& operator=(const SqliteSink&) = delete;

  bool Row(TableId table, std::span<const Value> values) override;
  // Indexes and COMMIT; the first error met (of a Row() too) in `error`.
  bool Commit(std::string* error);

 private:
  struct DbCloser {
    void operator()(sqlite3* db) const;
  };
  struct StmtFinalizer {
    void operator()(sqlite3_stmt* stmt) const;
  };
  using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;
  // Rows of one table not yet inserted; strings copied into `text` (values[].s is not used:
  // the bytes are found through `offsets`, as `text` may move while it grows).
  struct Block {
    std::size_t table = 0;  // a table of the file (sqlite_sink.cc: kFileTables)
    std::vector<Value> values;
    std::vector<std::size_t> offsets;
    std::string text;
    std::size_t rows = 0;
  };
  SqliteSink() = default;
  bool Exec(const std::string& sql);
  bool Prepare(std::size_t table, std::size_t rows, Stmt* out);
  // The numbers of the sources, event classes and names a file already holds.
  bool LoadNumbers();
  // Copies a row of file table `table` into its pending block; hands the block over when full.
  void Append(std::size_t table, std::span<const Value> values);
  // The source number of a row (appends a sources row for a triple not seen before).
  std::int64_t SourceOf(std::string_view trace_id, std::string_view host, std::int64_t pid);
  // The number of an event class (texts: provider, name, kind) in classes_, of a span's
  // provider or name or a counter's name in names_: a new one gets `next` (then incremented)
  // and a row of its table (the number, then the texts).
  std::int64_t Number(std::unordered_map<std::string, std::int64_t>& numbers, std::int64_t& next,
                      std::size_t table, std::initializer_list<std::string_view> texts);
  // Hands a block to the writer thread (waits while the queue is full).
  void Push(Block&& block);
  void WriterLoop();
  // Writer thread: inserts a block, kBatchRows rows a statement, the rest one by one.
  bool WriteBlock(const Block& block);
  bool Insert(const Block& block, sqlite3_stmt* stmt, std::size_t first_row, std::size_t rows,
              std::size_t first_string);
  void StopWriter();

  std::unique_ptr<sqlite3, DbCloser> db_;
  // The tables of schema.h (with event_rows, span_rows, counter_rows for the views), then
  // sources, event_classes and names.
  static constexpr std::size_t kFileTableCount = kTableCount + 3;
  std::array<Stmt, kFileTableCount> insert_one_, insert_batch_;
  std::array<Block, kFileTableCount> pending_;  // filled by Row(), on the caller's thread
  std::string error_;  // caller's thread; the writer's goes to writer_error_

  // Caller's thread: the numbers given so far. The key of a class is "provider\nname\nkind",
  // of a name the name (key_ is reused to look them up without an allocation); the last source
  // is kept apart, as every row of one trace has the same.
  std::map<std::tuple<std::string, std::string, std::int64_t>, std::int64_t> sources_;
  std::unordered_map<std::string, std::int64_t> classes_, names_;
  std::string key_;
  std::int64_t next_name_ = 1;
  std::string last_trace_id_, last_host_;
  std::int64_t last_pid_ = 0, last_source_ = -1, next_source_ = 1, next_class_ = 1;
  std::int64_t next_seq_ = 1;  // event_rows.seq of the next row

  // The queue between Row() and the writer thread. A mutex and condition variables, not a
  // lock-free ring: a block carries ~1000 rows, so the queue sees a few thousand operations
  // per million events and their cost does not show.
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<Block> queue_;     // guarded by mu_
  std::vector<Block> spare_;    // guarded by mu_: written blocks, their capacity kept for reuse
  bool closed_ = false;         // guarded by mu_: no more blocks come
  std::string writer_error_;    // guarded by mu_
  // Set by the writer when an insert failed, read by Row() to stop early. Relaxed: it carries
  // no data (the message is read under mu_ after join), a late view costs a few more rows.
  std::atomic<bool> failed_{false};
  std::thread writer_;
};

}  // namespace hush::sql

#endif  // HUSHTRACE_SRC_SQL_SQLITE_SINK_H_
