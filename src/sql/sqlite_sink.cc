#include "sql/sqlite_sink.h"

#include <sqlite3.h>

#include <string_view>

namespace hush::sql {
namespace {
constexpr std::size_t kBatchRows = 32;
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
  if (!error_.empty()) return false;
  Pending& p = pending_[static_cast<std::size_t>(table)];
  const TableDef& def = Table(table);
  for (std::size_t i = 0; i < values.size(); ++i) {
    p.values.push_back(values[i]);
    if (def.columns[i].type == ColumnType::kString) {
      p.offsets.push_back(p.text.size());
      p.text.append(values[i].s);
    }
  }
  if (++p.rows < kBatchRows) return true;
  const bool ok = Insert(def, insert_batch_[static_cast<std::size_t>(table)].get(), 0, p.rows);
  p.values.clear();
  p.offsets.clear();
  p.text.clear();
  p.rows = 0;
  return ok;
}

bool SqliteSink::Insert(const TableDef& def, sqlite3_stmt* stmt, std::size_t first_row,
                        std::size_t rows) {
  Pending& p = pending_[static_cast<std::size_t>(def.id)];
  const std::size_t columns = def.columns.size();
  std::size_t string_index = 0;
  for (std::size_t r = 0; r < first_row; ++r)
    for (const Column& c : def.columns) string_index += c.type == ColumnType::kString;
  int param = 1;
  for (std::size_t r = first_row; r < first_row + rows; ++r) {
    for (std::size_t i = 0; i < columns; ++i, ++param) {
      const Value& v = p.values[r * columns + i];
      switch (def.columns[i].type) {
        case ColumnType::kInt64:
        case ColumnType::kUInt32: sqlite3_bind_int64(stmt, param, v.i); break;
        case ColumnType::kFloat64: sqlite3_bind_double(stmt, param, v.d); break;
        case ColumnType::kString:
          // SQLITE_STATIC: `text` stays put until sqlite3_step() below has copied the bytes.
          sqlite3_bind_text(stmt, param, p.text.data() + p.offsets[string_index++],
                            static_cast<int>(v.s.size()), SQLITE_STATIC);
          break;
      }
    }
  }
  const int rc = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  if (rc == SQLITE_DONE) return true;
  error_ = std::string("insert into ") + def.name + ": " + sqlite3_errmsg(db_.get());
  return false;
}

bool SqliteSink::FlushPending() {
  for (const TableDef& table : Tables()) {
    const auto t = static_cast<std::size_t>(table.id);
    for (std::size_t r = 0; r < pending_[t].rows; ++r)
      if (!Insert(table, insert_one_[t].get(), r, 1)) return false;
    pending_[t] = Pending();
  }
  return true;
}

bool SqliteSink::Commit(std::string* error) {
  bool ok = error_.empty() && FlushPending();
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
