#include "sql/sqlite_sink.h"

#include <sqlite3.h>

#include <string_view>

namespace hush::sql {
namespace {
constexpr std::size_t kBatchRows = 32;     // rows of one INSERT statement
constexpr std::size_t kBlockRows = 1024;    // rows of one block handed to the writer thread
constexpr std::size_t kQueueBlocks = 16;    // blocks queued at most (memory bound)
}  // namespace

std::string SqliteCreateTable(const TableDef& table) {
  std::string sql = std::string("CREATE TABLE IF NOT EXISTS ") + table.name + " (";
  for (std::size_t i = 0; i < table.columns.size(); ++i) {
    if (i != 0) sql += ", ";
    sql += table.columns[i].name;
    switch (table.columns[i].type) {
      case ColumnType::kInt64:
      case ColumnType::kUInt32: sql += " INTEGER NOT NULL"; break;
      case ColumnType::kFloat64: sql += " REAL NOT NULL"; break;
      case ColumnType::kString: sql += " TEXT NOT NULL"; break;
    }
  }
  return sql + ")";
}

void SqliteSink::DbCloser::operator()(sqlite3* db) const { sqlite3_close(db); }
void SqliteSink::StmtFinalizer::operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }

bool SqliteSink::Exec(const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &message) == SQLITE_OK) return true;
  if (error_.empty())
    error_ = std::string(message != nullptr ? message : "unknown error") + " (in: " + sql + ")";
  sqlite3_free(message);
  return false;
}

std::unique_ptr<SqliteSink> SqliteSink::Create(const std::string& path, std::string* error) {
  std::unique_ptr<SqliteSink> sink(new SqliteSink);
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
  sink->db_.reset(db);  // sqlite3_open_v2 hands out a handle to close even on failure
  if (rc != SQLITE_OK) {
    *error = "cannot open " + path + ": " +
             (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    return nullptr;
  }
  // A new file: 64 KiB pages (fewer, fuller B-tree pages for the long events table), a page
  // cache of 256 MiB at most so that building the indexes rereads little from the file.
  bool ok = sink->Exec("PRAGMA page_size=65536") && sink->Exec("PRAGMA journal_mode=OFF") &&
            sink->Exec("PRAGMA synchronous=OFF") && sink->Exec("PRAGMA locking_mode=EXCLUSIVE") &&
            sink->Exec("PRAGMA cache_size=-262144") && sink->Exec("PRAGMA temp_store=MEMORY") &&
            sink->Exec("BEGIN");
  for (const TableDef& table : Tables()) {
    const auto t = static_cast<std::size_t>(table.id);
    ok = ok && sink->Exec(SqliteCreateTable(table)) &&
         sink->Prepare(table, 1, &sink->insert_one_[t]) &&
         sink->Prepare(table, kBatchRows, &sink->insert_batch_[t]);
  }
  if (!ok) {
    *error = path + ": " + sink->error_;
    return nullptr;
  }
  return sink;
}

SqliteSink::~SqliteSink() {
  StopWriter();
  for (auto& stmt : insert_one_) stmt.reset();  // statements before the database they belong to
  for (auto& stmt : insert_batch_) stmt.reset();
}

bool SqliteSink::Prepare(const TableDef& table, std::size_t rows, Stmt* out) {
  std::string sql = std::string("INSERT INTO ") + table.name + " VALUES ";
  for (std::size_t r = 0; r < rows; ++r) {
    sql += r == 0 ? "(" : ",(";
    for (std::size_t i = 0; i < table.columns.size(); ++i) sql += i == 0 ? "?" : ",?";
    sql += ")";
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db_.get(), sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt,
                         nullptr) != SQLITE_OK) {
    error_ = std::string(sqlite3_errmsg(db_.get())) + " (preparing the INSERT into " +
             table.name + ")";
    return false;
  }
  out->reset(stmt);
  return true;
}

bool SqliteSink::Row(TableId table, std::span<const Value> values) {
  if (failed_.load(std::memory_order_relaxed)) return false;
  Block& b = pending_[static_cast<std::size_t>(table)];
  const TableDef& def = Table(table);
  for (std::size_t i = 0; i < values.size(); ++i) {
    b.values.push_back(values[i]);
    if (def.columns[i].type == ColumnType::kString) {
      b.offsets.push_back(b.text.size());
      b.text.append(values[i].s);
    }
  }
  if (++b.rows == kBlockRows) {
    b.table = table;
    Push(std::move(b));
    b = Block();
  }
  return true;
}

void SqliteSink::Push(Block&& block) {
  if (!writer_.joinable()) writer_ = std::thread([this] { WriterLoop(); });
  std::unique_lock lock(mu_);
  not_full_.wait(lock, [this] { return queue_.size() < kQueueBlocks; });
  queue_.push_back(std::move(block));
  not_empty_.notify_one();
}

void SqliteSink::WriterLoop() {
  for (;;) {
    Block block;
    {
      std::unique_lock lock(mu_);
      not_empty_.wait(lock, [this] { return !queue_.empty() || closed_; });
      if (queue_.empty()) return;  // closed and drained
      block = std::move(queue_.front());
      queue_.pop_front();
      not_full_.notify_one();
    }
    if (!failed_.load(std::memory_order_relaxed) && !WriteBlock(block))
      failed_.store(true, std::memory_order_relaxed);
  }
}

void SqliteSink::StopWriter() {
  if (!writer_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_empty_.notify_one();
  }
  writer_.join();
}

bool SqliteSink::WriteBlock(const Block& block) {
  const TableDef& def = Table(block.table);
  const auto t = static_cast<std::size_t>(block.table);
  std::size_t strings_per_row = 0;
  for (const Column& c : def.columns) strings_per_row += c.type == ColumnType::kString;
  std::size_t row = 0;
  for (; row + kBatchRows <= block.rows; row += kBatchRows)
    if (!Insert(block, insert_batch_[t].get(), row, kBatchRows, row * strings_per_row))
      return false;
  for (; row < block.rows; ++row)
    if (!Insert(block, insert_one_[t].get(), row, 1, row * strings_per_row)) return false;
  return true;
}

bool SqliteSink::Insert(const Block& block, sqlite3_stmt* stmt, std::size_t first_row,
                        std::size_t rows, std::size_t first_string) {
  const TableDef& def = Table(block.table);
  const std::size_t columns = def.columns.size();
  std::size_t string_index = first_string;
  int param = 1;
  for (std::size_t r = first_row; r < first_row + rows; ++r) {
    for (std::size_t i = 0; i < columns; ++i, ++param) {
      const Value& v = block.values[r * columns + i];
      switch (def.columns[i].type) {
        case ColumnType::kInt64:
        case ColumnType::kUInt32: sqlite3_bind_int64(stmt, param, v.i); break;
        case ColumnType::kFloat64: sqlite3_bind_double(stmt, param, v.d); break;
        case ColumnType::kString:
          // SQLITE_STATIC: the block outlives sqlite3_step() below, which copies the bytes.
          sqlite3_bind_text(stmt, param, block.text.data() + block.offsets[string_index++],
                            static_cast<int>(v.s.size()), SQLITE_STATIC);
          break;
      }
    }
  }
  const int rc = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  if (rc == SQLITE_DONE) return true;
  std::lock_guard lock(mu_);
  writer_error_ = std::string("insert into ") + def.name + ": " + sqlite3_errmsg(db_.get());
  return false;
}

bool SqliteSink::Commit(std::string* error) {
  for (std::size_t t = 0; t < kTableCount; ++t) {
    if (pending_[t].rows == 0) continue;
    pending_[t].table = static_cast<TableId>(t);
    Push(std::move(pending_[t]));
    pending_[t] = Block();
  }
  StopWriter();  // joined: the database is this thread's again
  if (error_.empty()) error_ = writer_error_;
  bool ok = error_.empty();
  for (const TableDef& table : Tables()) {
    std::string_view list = table.sqlite_indexes;
    while (ok && !list.empty()) {
      const std::size_t semi = list.find(';');
      const std::string_view one = list.substr(0, semi);
      const std::size_t paren = one.find('(');
      ok = Exec("CREATE INDEX IF NOT EXISTS " + std::string(one.substr(0, paren)) + " ON " +
                table.name + std::string(one.substr(paren)));
      list = semi == std::string_view::npos ? std::string_view() : list.substr(semi + 1);
    }
  }
  ok = ok && Exec("COMMIT");
  if (!ok) *error = error_;
  return ok;
}

}  // namespace hush::sql
