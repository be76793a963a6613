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
// virtual machine is paid once for them). SQLite's work (two thirds of the export's CPU) runs on
// a writer thread of the sink: Row() copies the row into a block of its table and hands full
// blocks over a bounded queue, so reading the trace and building rows overlap with the inserts.
// Commit() drains the queue, creates the indexes of the documented queries and commits. The file is written for speed, not crash safety: journal_mode=OFF and
// synchronous=OFF (an export that dies midway leaves a file to delete, as a half-written
// Perfetto export does).
#ifndef HUSHTRACE_SRC_SQL_SQLITE_SINK_H_
#define HUSHTRACE_SRC_SQL_SQLITE_SINK_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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
    TableId table = TableId::kEvents;
    std::vector<Value> values;
    std::vector<std::size_t> offsets;
    std::string text;
    std::size_t rows = 0;
  };
  SqliteSink() = default;
  bool Exec(const std::string& sql);
  bool Prepare(const TableDef& table, std::size_t rows, Stmt* out);
  // Hands a block to the writer thread (waits while the queue is full).
  void Push(Block&& block);
  void WriterLoop();
  // Writer thread: inserts a block, kBatchRows rows a statement, the rest one by one.
  bool WriteBlock(const Block& block);
  bool Insert(const Block& block, sqlite3_stmt* stmt, std::size_t first_row, std::size_t rows,
              std::size_t first_string);
  void StopWriter();

  std::unique_ptr<sqlite3, DbCloser> db_;
  std::array<Stmt, kTableCount> insert_one_, insert_batch_;
  std::array<Block, kTableCount> pending_;  // filled by Row(), on the caller's thread
  std::string error_;                       // caller's thread; the writer's goes to writer_error_

  // The queue between Row() and the writer thread. A mutex and condition variables, not a
  // lock-free ring: a block carries ~1000 rows, so the queue sees a few thousand operations
  // per million events and their cost does not show.
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<Block> queue_;     // guarded by mu_
  bool closed_ = false;         // guarded by mu_: no more blocks come
  std::string writer_error_;    // guarded by mu_
  // Set by the writer when an insert failed, read by Row() to stop early. Relaxed: it carries
  // no data (the message is read under mu_ after join), a late view costs a few more rows.
  std::atomic<bool> failed_{false};
  std::thread writer_;
};

}  // namespace hush::sql

#endif  // HUSHTRACE_SRC_SQL_SQLITE_SINK_H_
