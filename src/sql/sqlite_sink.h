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
// virtual machine is paid once for them). Commit() creates the indexes of the documented
// queries and commits. The file is written for speed, not crash safety: journal_mode=OFF and
// synchronous=OFF (an export that dies midway leaves a file to delete, as a half-written
// Perfetto export does).
#ifndef HUSHTRACE_SRC_SQL_SQLITE_SINK_H_
#define HUSHTRACE_SRC_SQL_SQLITE_SINK_H_

#include <array>
#include <memory>
#include <string>
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
  // Rows of one table not yet inserted; strings copied into `text` (values[].s is rebuilt
  // from `offsets` when the batch is bound, as `text` may move while it grows).
  struct Pending {
    std::vector<Value> values;
    std::vector<std::size_t> offsets;
    std::string text;
    std::size_t rows = 0;
  };
  SqliteSink() = default;
  bool Exec(const std::string& sql);
  bool Prepare(const TableDef& table, std::size_t rows, Stmt* out);
  // Inserts the first `rows` pending rows of `table` with `stmt` (an INSERT of that many rows).
  bool Insert(const TableDef& table, sqlite3_stmt* stmt, std::size_t first_row, std::size_t rows);
  bool FlushPending();

  std::unique_ptr<sqlite3, DbCloser> db_;
  std::array<Stmt, kTableCount> insert_one_, insert_batch_;
  std::array<Pending, kTableCount> pending_;
  std::string error_;
};

}  // namespace hush::sql

#endif  // HUSHTRACE_SRC_SQL_SQLITE_SINK_H_
