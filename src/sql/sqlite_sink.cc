#include "sql/sqlite_sink.h"

#include <sqlite3.h>

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "sql/loaded_library.h"

namespace hush::sql {
namespace {
constexpr std::size_t kBatchRows = 32;     // rows of one INSERT statement
constexpr std::size_t kBlockRows = 1024;    // rows of one block handed to the writer thread
constexpr std::size_t kQueueBlocks = 16;    // blocks queued at most (memory bound)

using T = ColumnType;
// The physical tables of `events` (sqlite_sink.h). Columns in the order of the view's join.
constexpr Column kEventRows[] = {
    {"tid", T::kUInt32},   {"ts_ns", T::kInt64}, {"seq", T::kInt64},
    {"source", T::kInt64}, {"class", T::kInt64}, {"fields", T::kString},
};
// event_rows is stored in the order of its key (a WITHOUT ROWID table): the rows of one thread
// in time order are next to each other, so the before-trigger query reads a range of it and no
// index is built (seq, the row's number in the file, only makes the key unique).
constexpr const char* kEventRowsKey = "PRIMARY KEY (tid, ts_ns, seq)";
// The physical tables of `spans` and `counters`: names as numbers of `names` rows.
constexpr Column kSpanRows[] = {
    {"source", T::kInt64}, {"tid", T::kUInt32},   {"id", T::kInt64},     {"parent_id", T::kInt64},
    {"depth", T::kUInt32}, {"ts_ns", T::kInt64},  {"dur_ns", T::kInt64}, {"self_ns", T::kInt64},
    {"provider", T::kInt64}, {"name", T::kInt64},
};
constexpr Column kCounterRows[] = {
    {"source", T::kInt64}, {"ts_ns", T::kInt64}, {"name", T::kInt64}, {"value", T::kFloat64}};
constexpr Column kSources[] = {
    {"source", T::kInt64}, {"trace_id", T::kString}, {"host", T::kString}, {"pid", T::kUInt32}};
constexpr Column kClasses[] = {
    {"class", T::kInt64}, {"provider", T::kString}, {"name", T::kString}, {"kind", T::kString}};
constexpr Column kNames[] = {{"id", T::kInt64}, {"name", T::kString}};
constexpr std::size_t kSourcesTable = kTableCount, kClassesTable = kTableCount + 1,
                      kNamesTable = kTableCount + 2;

// libsqlite3 is loaded by the first sink, not linked (loaded_library.h): linked, every hushtrace
// command paid ~0.2 ms to load it (docs/architecture.md, "The CLI's start").
struct SqliteApi {
  decltype(&::sqlite3_bind_double) bind_double = nullptr;
  decltype(&::sqlite3_bind_int64) bind_int64 = nullptr;
  decltype(&::sqlite3_bind_text) bind_text = nullptr;
  decltype(&::sqlite3_close) close = nullptr;
  decltype(&::sqlite3_column_int64) column_int64 = nullptr;
  decltype(&::sqlite3_column_text) column_text = nullptr;
  decltype(&::sqlite3_config) config = nullptr;
  decltype(&::sqlite3_errmsg) errmsg = nullptr;
  decltype(&::sqlite3_errstr) errstr = nullptr;
  decltype(&::sqlite3_exec) exec = nullptr;
  decltype(&::sqlite3_finalize) finalize = nullptr;
  decltype(&::sqlite3_free) free = nullptr;
  decltype(&::sqlite3_open_v2) open_v2 = nullptr;
  decltype(&::sqlite3_prepare_v2) prepare_v2 = nullptr;
  decltype(&::sqlite3_prepare_v3) prepare_v3 = nullptr;
  decltype(&::sqlite3_reset) reset = nullptr;
  decltype(&::sqlite3_step) step = nullptr;
  std::string error;  // why libsqlite3 is not usable; empty once loaded
};

const SqliteApi& Sqlite() {
  static const SqliteApi api = [] {
    SqliteApi a;
    LoadedLibrary lib("libsqlite3.so.0", "libsqlite3-0", &a.error);
    lib.Resolve("sqlite3_bind_double", &a.bind_double);
    lib.Resolve("sqlite3_bind_int64", &a.bind_int64);
    lib.Resolve("sqlite3_bind_text", &a.bind_text);
    lib.Resolve("sqlite3_close", &a.close);
    lib.Resolve("sqlite3_column_int64", &a.column_int64);
    lib.Resolve("sqlite3_column_text", &a.column_text);
    lib.Resolve("sqlite3_config", &a.config);
    lib.Resolve("sqlite3_errmsg", &a.errmsg);
    lib.Resolve("sqlite3_errstr", &a.errstr);
    lib.Resolve("sqlite3_exec", &a.exec);
    lib.Resolve("sqlite3_finalize", &a.finalize);
    lib.Resolve("sqlite3_free", &a.free);
    lib.Resolve("sqlite3_open_v2", &a.open_v2);
    lib.Resolve("sqlite3_prepare_v2", &a.prepare_v2);
    lib.Resolve("sqlite3_prepare_v3", &a.prepare_v3);
    lib.Resolve("sqlite3_reset", &a.reset);
    lib.Resolve("sqlite3_step", &a.step);
    return a;
  }();
  return api;
}

// The views of the file, each a table of schema.h over the tables that hold its rows: its
// columns' expressions in schema.h's order, then the tables they come from.
struct View {
  TableId id;
  std::initializer_list<const char*> columns;
  const char* from;
};
const View kViews[] = {
    {TableId::kEvents,
     {"s.trace_id", "s.host", "s.pid", "e.tid", "e.ts_ns", "c.provider", "c.name", "c.kind",
      "e.fields"},
     "event_rows e JOIN sources s ON s.source = e.source"
     " JOIN event_classes c ON c.class = e.class"},
    {TableId::kSpans,
     {"s.trace_id", "s.host", "s.pid", "r.tid", "r.id", "r.parent_id", "r.depth", "r.ts_ns",
      "r.dur_ns", "r.self_ns", "p.name", "n.name"},
     "span_rows r JOIN sources s ON s.source = r.source JOIN names p ON p.id = r.provider"
     " JOIN names n ON n.id = r.name"},
    {TableId::kCounters,
     {"s.trace_id", "s.host", "s.pid", "r.ts_ns", "n.name", "r.value"},
     "counter_rows r JOIN sources s ON s.source = r.source JOIN names n ON n.id = r.name"},
};

// A table of the file: the tables of schema.h, with event_rows, span_rows and counter_rows in
// the places of the views, then sources, event_classes and names.
struct FileTable {
  const char* name;
  std::span<const Column> columns;
  const char* indexes;  // as TableDef::sqlite_indexes
  const char* constraint = "";  // a table constraint after the columns, "" none
  bool without_rowid = false;   // the constraint is its PRIMARY KEY
};
FileTable FileTableAt(std::size_t t) {
  if (t == kSourcesTable) return {"sources", kSources, ""};
  if (t == kClassesTable) return {"event_classes", kClasses, ""};
  // UNIQUE: the index lets a query for a name (spans WHERE name = ...) start from names and
  // go to span_rows through spans_by_name, rather than scan span_rows.
  if (t == kNamesTable) return {"names", kNames, "", "UNIQUE (name)"};
  const TableDef& def = Tables()[t];
  if (def.id == TableId::kEvents)
    return {"event_rows", kEventRows, def.sqlite_indexes, kEventRowsKey, true};
  if (def.id == TableId::kSpans) return {"span_rows", kSpanRows, def.sqlite_indexes};
  if (def.id == TableId::kCounters) return {"counter_rows", kCounterRows, def.sqlite_indexes};
  return {def.name, def.columns, def.sqlite_indexes};
}

std::string ColumnList(std::span<const Column> columns, bool first_is_key,
                       const char* constraint = "", bool without_rowid = false) {
  std::string sql = " (";
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (i != 0) sql += ", ";
    sql += columns[i].name;
    if (i == 0 && first_is_key) {
      sql += " INTEGER PRIMARY KEY";  // the rowid: the view's joins are rowid lookups
      continue;
    }
    switch (columns[i].type) {
      case ColumnType::kInt64:
      case ColumnType::kUInt32: sql += " INTEGER NOT NULL"; break;
      case ColumnType::kFloat64: sql += " REAL NOT NULL"; break;
      case ColumnType::kString: sql += " TEXT NOT NULL"; break;
    }
  }
  if (*constraint != '\0') sql += std::string(", ") + constraint;
  return sql + (without_rowid ? ") WITHOUT ROWID" : ")");
}

std::string ViewSql(const View& view) {
  const TableDef& def = Table(view.id);
  std::string sql = std::string("CREATE VIEW IF NOT EXISTS ") + def.name + " AS SELECT ";
  std::size_t i = 0;
  for (const char* expr : view.columns) {
    sql += std::string(i == 0 ? "" : ", ") + expr + " AS " + def.columns[i].name;
    ++i;
  }
  return sql + " FROM " + view.from;
}
}  // namespace

std::string SqliteCreateTable(const TableDef& table) {
  return std::string("CREATE TABLE IF NOT EXISTS ") + table.name + ColumnList(table.columns, false);
}

void SqliteSink::DbCloser::operator()(sqlite3* db) const { Sqlite().close(db); }
void SqliteSink::StmtFinalizer::operator()(sqlite3_stmt* stmt) const { Sqlite().finalize(stmt); }

bool SqliteSink::Exec(const std::string& sql) {
  char* message = nullptr;
  if (Sqlite().exec(db_.get(), sql.c_str(), nullptr, nullptr, &message) == SQLITE_OK) return true;
  if (error_.empty())
    error_ = std::string(message != nullptr ? message : "unknown error") + " (in: " + sql + ")";
  Sqlite().free(message);
  return false;
}

std::unique_ptr<SqliteSink> SqliteSink::Create(const std::string& path, std::string* error) {
  // SQLite's allocation statistics take a global mutex around every malloc and free of the
  // library (the index sorter allocates per row): off. Possible only before SQLite initialises,
  // so in a process that used SQLite already this changes nothing (SQLITE_MISUSE, ignored).
  if (!Sqlite().error.empty()) {
    *error = Sqlite().error;
    return nullptr;
  }
  static const bool kMemstatusOff = Sqlite().config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK;
  (void)kMemstatusOff;
  std::unique_ptr<SqliteSink> sink(new SqliteSink);
  sqlite3* db = nullptr;
  const int rc = Sqlite().open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                  nullptr);
  sink->db_.reset(db);  // sqlite3_open_v2 hands out a handle to close even on failure
  if (rc != SQLITE_OK) {
    *error = "cannot open " + path + ": " +
             (db != nullptr ? Sqlite().errmsg(db) : Sqlite().errstr(rc));
    return nullptr;
  }
  // A new file: 64 KiB pages (fewer, fuller B-tree pages for the long events table), a page
  // cache of 32 MiB: rows are appended (event_rows in key order, the other tables by rowid), so
  // the pages written to stay few and the others can go to the file (cache spill: allowed with
  // journal_mode=OFF) and be reread from the OS's cache by CREATE INDEX; a larger cache only
  // costs memory (the export's RSS was 160 MB with 256 MiB).
  bool ok = sink->Exec("PRAGMA page_size=65536") && sink->Exec("PRAGMA journal_mode=OFF") &&
            sink->Exec("PRAGMA synchronous=OFF") && sink->Exec("PRAGMA locking_mode=EXCLUSIVE") &&
            sink->Exec("PRAGMA cache_size=-32768") && sink->Exec("PRAGMA temp_store=MEMORY") &&
            sink->Exec("BEGIN");
  for (std::size_t t = 0; t < kFileTableCount; ++t) {
    const FileTable table = FileTableAt(t);
    const bool keyed = t == kSourcesTable || t == kClassesTable || t == kNamesTable;
    ok = ok &&
         sink->Exec(std::string("CREATE TABLE IF NOT EXISTS ") + table.name +
                    ColumnList(table.columns, keyed, table.constraint, table.without_rowid)) &&
         sink->Prepare(t, 1, &sink->insert_one_[t]) &&
         sink->Prepare(t, kBatchRows, &sink->insert_batch_[t]);
  }
  // A file from before the views holds tables `events`, `spans`, `counters`: CREATE VIEW IF NOT
  // EXISTS would keep them (LoadNumbers refuses such a file).
  for (const View& view : kViews) ok = ok && sink->Exec(ViewSql(view));
  ok = ok && sink->LoadNumbers();
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

bool SqliteSink::LoadNumbers() {
  sqlite3_stmt* raw = nullptr;
  if (Sqlite().prepare_v2(db_.get(),
                          "SELECT name FROM sqlite_master WHERE name IN ('events', 'spans', "
                          "'counters') AND type <> 'view' ORDER BY name",
                          -1, &raw, nullptr) != SQLITE_OK) {
    error_ = Sqlite().errmsg(db_.get());
    return false;
  }
  Stmt stmt(raw);
  if (Sqlite().step(stmt.get()) == SQLITE_ROW) {
    error_ = std::string("the file holds a table `") +
             reinterpret_cast<const char*>(Sqlite().column_text(stmt.get(), 0)) +
             "` of an earlier hushtrace; export into a new file";
    return false;
  }
  // event_rows of an earlier hushtrace: a rowid table, without seq.
  if (Sqlite().prepare_v2(db_.get(), "SELECT COALESCE(MAX(seq), 0) FROM event_rows", -1, &raw,
                          nullptr) != SQLITE_OK) {
    error_ = std::string("the file holds a table `event_rows` of an earlier hushtrace (") +
             Sqlite().errmsg(db_.get()) + "); export into a new file";
    return false;
  }
  stmt.reset(raw);
  if (Sqlite().step(stmt.get()) == SQLITE_ROW) next_seq_ = Sqlite().column_int64(stmt.get(), 0) + 1;
  const auto text = [](sqlite3_stmt* st, int col) {
    const unsigned char* p = Sqlite().column_text(st, col);
    return std::string(p != nullptr ? reinterpret_cast<const char*>(p) : "");
  };
  for (const char* query : {"SELECT source, trace_id, host, pid FROM sources",
                            "SELECT class, provider, name, kind FROM event_classes",
                            "SELECT id, name FROM names"}) {
    const bool sources = query[7] == 's', names = query[7] == 'i';
    if (Sqlite().prepare_v2(db_.get(), query, -1, &raw, nullptr) != SQLITE_OK) {
      error_ = Sqlite().errmsg(db_.get());
      return false;
    }
    stmt.reset(raw);
    while (Sqlite().step(stmt.get()) == SQLITE_ROW) {
      const std::int64_t n = Sqlite().column_int64(stmt.get(), 0);
      if (sources) {
        const std::int64_t pid = Sqlite().column_int64(stmt.get(), 3);
        sources_[{text(stmt.get(), 1), text(stmt.get(), 2), pid}] = n;
        next_source_ = std::max(next_source_, n + 1);
      } else if (names) {
        names_[text(stmt.get(), 1)] = n;
        next_name_ = std::max(next_name_, n + 1);
      } else {
        classes_[text(stmt.get(), 1) + '\n' + text(stmt.get(), 2) + '\n' + text(stmt.get(), 3)] = n;
        next_class_ = std::max(next_class_, n + 1);
      }
    }
  }
  return true;
}

bool SqliteSink::Prepare(std::size_t t, std::size_t rows, Stmt* out) {
  const FileTable table = FileTableAt(t);
  std::string sql = std::string("INSERT INTO ") + table.name + " VALUES ";
  for (std::size_t r = 0; r < rows; ++r) {
    sql += r == 0 ? "(" : ",(";
    for (std::size_t i = 0; i < table.columns.size(); ++i) sql += i == 0 ? "?" : ",?";
    sql += ")";
  }
  sqlite3_stmt* stmt = nullptr;
  if (Sqlite().prepare_v3(db_.get(), sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt,
                          nullptr) != SQLITE_OK) {
    error_ = std::string(Sqlite().errmsg(db_.get())) + " (preparing the INSERT into " +
             table.name + ")";
    return false;
  }
  out->reset(stmt);
  return true;
}

bool SqliteSink::Row(TableId table, std::span<const Value> values) {
  if (failed_.load(std::memory_order_relaxed)) return false;
  if (table == TableId::kSpans) {
    // trace_id, host, pid, tid, id, parent_id, depth, ts_ns, dur_ns, self_ns, provider, name
    Value row[10];
    row[0].i = SourceOf(values[0].s, values[1].s, values[2].i);
    std::copy(values.begin() + 3, values.begin() + 10, row + 1);
    row[8].i = Number(names_, next_name_, kNamesTable, {values[10].s});
    row[9].i = Number(names_, next_name_, kNamesTable, {values[11].s});
    Append(static_cast<std::size_t>(table), row);
    return true;
  }
  if (table == TableId::kCounters) {
    // trace_id, host, pid, ts_ns, name, value
    Value row[4];
    row[0].i = SourceOf(values[0].s, values[1].s, values[2].i);
    row[1] = values[3];
    row[2].i = Number(names_, next_name_, kNamesTable, {values[4].s});
    row[3] = values[5];
    Append(static_cast<std::size_t>(table), row);
    return true;
  }
  if (table != TableId::kEvents) {
    Append(static_cast<std::size_t>(table), values);
    return true;
  }
  // trace_id, host, pid, tid, ts_ns, provider, name, kind, fields (schema.cc)
  Value row[6];
  row[0] = values[3];
  row[1] = values[4];
  row[2].i = next_seq_++;
  row[3].i = SourceOf(values[0].s, values[1].s, values[2].i);
  row[4].i = Number(classes_, next_class_, kClassesTable, {values[5].s, values[6].s, values[7].s});
  row[5] = values[8];
  Append(static_cast<std::size_t>(TableId::kEvents), row);
  return true;
}

std::int64_t SqliteSink::SourceOf(std::string_view trace_id, std::string_view host,
                                  std::int64_t pid) {
  if (last_source_ >= 0 && pid == last_pid_ && trace_id == last_trace_id_ && host == last_host_)
    return last_source_;
  auto [it, added] =
      sources_.try_emplace({std::string(trace_id), std::string(host), pid}, next_source_);
  if (added) {
    Value row[4];
    row[0].i = next_source_++;
    row[1].s = trace_id;
    row[2].s = host;
    row[3].i = pid;
    Append(kSourcesTable, row);
  }
  last_trace_id_ = trace_id;
  last_host_ = host;
  last_pid_ = pid;
  return last_source_ = it->second;
}

std::int64_t SqliteSink::Number(std::unordered_map<std::string, std::int64_t>& numbers,
                                std::int64_t& next, std::size_t table,
                                std::initializer_list<std::string_view> texts) {
  key_.clear();
  for (const std::string_view& t : texts) {
    if (&t != texts.begin()) key_ += '\n';  // as LoadNumbers() joins them
    key_ += t;
  }
  if (const auto it = numbers.find(key_); it != numbers.end()) return it->second;
  const std::int64_t n = next++;
  numbers.emplace(key_, n);
  Value row[4];
  row[0].i = n;
  std::size_t i = 1;
  for (const std::string_view t : texts) row[i++].s = t;
  Append(table, std::span<const Value>(row, i));
  return n;
}

void SqliteSink::Append(std::size_t table, std::span<const Value> values) {
  Block& b = pending_[table];
  const std::span<const Column> columns = FileTableAt(table).columns;
  if (b.rows == 0 && b.values.capacity() == 0) {
    // A block's capacity is set once: full blocks come back from the writer for reuse (spare_).
    std::lock_guard lock(mu_);
    if (!spare_.empty()) {
      b = std::move(spare_.back());
      spare_.pop_back();
    }
    b.values.reserve(kBlockRows * columns.size());
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    b.values.push_back(values[i]);
    if (columns[i].type == ColumnType::kString) {
      b.offsets.push_back(b.text.size());
      b.text.append(values[i].s);
    }
  }
  if (++b.rows == kBlockRows) {
    b.table = table;
    Push(std::move(b));
    b = Block();
  }
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
    block.values.clear();
    block.offsets.clear();
    block.text.clear();
    block.rows = 0;
    std::lock_guard lock(mu_);
    if (spare_.size() < kQueueBlocks) spare_.push_back(std::move(block));
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
  const std::size_t t = block.table;
  std::size_t strings_per_row = 0;
  for (const Column& c : FileTableAt(t).columns) strings_per_row += c.type == ColumnType::kString;
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
  const SqliteApi& sqlite = Sqlite();  // once, not per value bound
  const FileTable def = FileTableAt(block.table);
  const std::size_t columns = def.columns.size();
  std::size_t string_index = first_string;
  int param = 1;
  for (std::size_t r = first_row; r < first_row + rows; ++r) {
    for (std::size_t i = 0; i < columns; ++i, ++param) {
      const Value& v = block.values[r * columns + i];
      switch (def.columns[i].type) {
        case ColumnType::kInt64:
        case ColumnType::kUInt32: sqlite.bind_int64(stmt, param, v.i); break;
        case ColumnType::kFloat64: sqlite.bind_double(stmt, param, v.d); break;
        case ColumnType::kString:
          // SQLITE_STATIC: the block outlives sqlite3_step() below, which copies the bytes.
          sqlite.bind_text(stmt, param, block.text.data() + block.offsets[string_index++],
                           static_cast<int>(v.s.size()), SQLITE_STATIC);
          break;
      }
    }
  }
  const int rc = sqlite.step(stmt);
  sqlite.reset(stmt);
  if (rc == SQLITE_DONE) return true;
  std::lock_guard lock(mu_);
  writer_error_ = std::string("insert into ") + def.name + ": " + sqlite.errmsg(db_.get());
  return false;
}

bool SqliteSink::Commit(std::string* error) {
  for (std::size_t t = 0; t < kFileTableCount; ++t) {
    if (pending_[t].rows == 0) continue;
    pending_[t].table = t;
    Push(std::move(pending_[t]));
    pending_[t] = Block();
  }
  StopWriter();  // joined: the database is this thread's again
  if (error_.empty()) error_ = writer_error_;
  bool ok = error_.empty();
  for (std::size_t t = 0; t < kFileTableCount; ++t) {
    const FileTable table = FileTableAt(t);
    std::string_view list = table.indexes;
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
