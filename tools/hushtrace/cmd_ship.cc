// hushtrace ship: traces into ClickHouse over HTTP (docs/sql.md, "Fleet: hushtrace ship").
//
// Delivery is at-least-once with idempotent inserts (src/sql/clickhouse.h): every row carries
// (trace_id, seq); before a trace the shipper asks which of its chunks are on the server and
// skips them; a failed insert is retried with backoff, after asking again whether it got in.
// So a shipper killed midway and run again, or a server killed and restarted under it, neither
// loses nor doubles rows. --watch DIR is the per-host agent: it ships each trace that completes
// under DIR (and each snapshot a flight recorder there triggers), remembers what it shipped in a
// small state file, and bounds what waits on disk.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/dir_stream.h"
#include "cli_app.h"
#include "commands.h"
#include "export/text_escape.h"
#include "hushtrace/reader.h"
#include "open_trace.h"
#include "recover/recover.h"
#ifdef HUSH_HAVE_SQL
#include "sql/clickhouse.h"
#include "sql/tables.h"
#endif

namespace hush::cli {

#ifndef HUSH_HAVE_SQL
// A build without src/sql (a cross build whose sysroot has no libcurl: make test-aarch64).
void DescribeShip(CLI::App& app) {
  DescribeCommand(app, "ship", "ship", "Not built into this hushtrace (built without libcurl).", "");
}

int RunShip(int, char**) {
  std::fprintf(stderr, "hushtrace ship: not built into this hushtrace (built without libcurl)\n");
  return 1;
}
#else
namespace {

constexpr char kUsage[] =
    "ship [options] TRACE... --to http://HOST:8123/DB\n"
    "       hushtrace ship [options] --watch DIR --to http://HOST:8123/DB";
constexpr char kDescription[] =
    "Inserts traces (sessions, flight snapshots, recovered crash traces) into ClickHouse over its\n"
    "HTTP interface, as the tables of docs/sql.md (created on first use, with the database).\n"
    "RowBinary, gzip-compressed, in chunks; a chunk already on the server is not sent again, so\n"
    "shipping a trace twice, or after a crash, never doubles rows.\n"
    "\n"
    "With --watch, ships every trace directory that completes under DIR (a `metadata` file, and\n"
    "no session still writing it; one whose writer died is recovered first), and every triggered snapshot\n"
    "(DIR/snapshots/NAME, DIR/TRACE/snapshots/NAME) as it completes, oldest first, and keeps\n"
    "watching. Shipped traces are listed in the state file; a server that is down is retried\n"
    "with backoff while the traces wait on disk; past --max-bytes of waiting traces the oldest\n"
    "are deleted (and said so).";
constexpr char kFooter[] = "exit status: 0 ok, 1 a trace could not be read or shipped, 2 bad arguments\n";

struct Args {
  std::vector<std::string> traces;
  std::string to, host, cluster, watch, state, chunk_rows, retries, rows_per_s, interval, max_bytes;
  bool once = false;
};

// The grammar of `ship`: one line per option.
// clang-format off
void Define(CLI::App& app, Args& a) {
  DescribeCommand(app, "ship", kUsage, kDescription, kFooter);
  AddPositionals(app, "TRACE", a.traces, "trace directories to ship")->type_name("");
  app.add_option("--to", a.to, "http://HOST[:PORT][/DB] of the ClickHouse HTTP interface (DB: default)")->type_name("URL");
  app.add_option("--host", a.host, "the host column (default: the hostname recorded in each trace)")->type_name("NAME");
  app.add_option("--cluster", a.cluster, "also create TABLE_all, a Distributed table over the cluster NAME of\nthe server's <remote_servers> (each host ships into its own shard;\nfleet queries read the _all tables)")->type_name("NAME");
  app.add_option("--chunk-rows", a.chunk_rows, "rows per INSERT (default 65536)")->type_name("N");
  app.add_option("--retries", a.retries, "attempts of a request before giving up on it (default 8; backoff\n0.1 s doubling to 5 s between them)")->type_name("N");
  app.add_option("--rows-per-s", a.rows_per_s, "send at most N rows a second (default: no limit)")->type_name("N");
  app.add_option("--watch", a.watch, "agent mode (see above)")->type_name("DIR");
  app.add_option("--state", a.state, "agent state (default DIR/.hushtrace-ship-state)")->type_name("FILE");
  app.add_option("--interval", a.interval, "seconds between scans of DIR (default 2)")->type_name("S");
  app.add_option("--max-bytes", a.max_bytes, "bound of the traces waiting under DIR (default: none)")->type_name("N");
  app.add_flag("--once", a.once, "agent: one scan, ship what is there, exit");
}
// clang-format on

int BadArgs(const std::string& message) {
  std::fprintf(stderr, "hushtrace ship: %s\n(see 'hushtrace ship --help')\n", message.c_str());
  return 2;
}

bool ParseCount(const std::string& text, std::uint64_t* out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  *out = std::strtoull(text.c_str(), nullptr, 10);
  return errno == 0;
}

// Set by SIGTERM/SIGINT in agent mode (Watch installs the handler): the shipper stops before
// its next chunk, the agent before its next trace.
volatile sig_atomic_t g_stop = 0;
void OnStop(int) { g_stop = 1; }

struct Options {
  sql::ClickHouseUrl url;
  std::string host;
  std::string cluster;
  std::uint64_t chunk_rows = 65536;
  std::uint64_t retries = 8;
  std::uint64_t rows_per_s = 0;
};

class Shipper {
 public:
  explicit Shipper(const Options& options) : options_(options), client_(options.url) {}

  // Ships one trace directory; false with a message on stderr.
  bool Ship(const std::string& dir) {
    std::string error;
    std::unique_ptr<reader::Trace> trace = OpenTraceRecovering(dir, "hushtrace ship", &error);
    if (!trace) {
      std::fprintf(stderr, "hushtrace ship: %s\n", error.c_str());
      return false;
    }
    if (!tables_ready_ && !Retry([&](std::string* e) { return CreateTables(e); }, &error)) {
      std::fprintf(stderr, "hushtrace ship: creating the tables failed: %s\n", error.c_str());
      return false;
    }
    tables_ready_ = true;
    trace_id_ = sql::TraceId(*trace);
    host_ = exporter::ToValidUtf8(options_.host.empty() ? trace->hostname() : options_.host);
    if (!Retry([&](std::string* e) { return LoadPresent(e); }, &error)) {
      std::fprintf(stderr, "hushtrace ship: %s: %s\n", dir.c_str(), error.c_str());
      return false;
    }
    sent_ = skipped_ = 0;
    const std::uint64_t bytes_before = client_.bytes_sent();
    sql::RowBinarySink sink(options_.chunk_rows,
                            [&](const sql::Chunk& chunk) { return SendChunk(chunk, &error); });
    sql::TableOptions table_options;
    table_options.host = options_.host;
    sql::TraceTables tables(*trace, sink, table_options);
    reader::EventIterator it(*trace);
    bool ok = true;
    while (ok && it.Next()) ok = tables.Add(it.event());
    ok = ok && tables.Finish() && sink.Flush();
    if (!it.error().empty()) {
      std::fprintf(stderr, "hushtrace ship: %s: %s\n", dir.c_str(), it.error().c_str());
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "hushtrace ship: %s: %s\n", dir.c_str(), error.c_str());
      return false;
    }
    std::uint64_t rows = 0;
    for (const sql::TableDef& t : sql::Tables()) rows += sink.rows(t.id);
    std::fprintf(stderr,
                 "hushtrace ship: %s: trace %s, host %s: %llu events, %llu rows; %llu chunks "
                 "sent, %llu already there; %llu bytes sent\n",
                 dir.c_str(), trace_id_.c_str(), tables.host().c_str(),
                 static_cast<unsigned long long>(sink.rows(sql::TableId::kEvents)),
                 static_cast<unsigned long long>(rows), static_cast<unsigned long long>(sent_),
                 static_cast<unsigned long long>(skipped_),
                 static_cast<unsigned long long>(client_.bytes_sent() - bytes_before));
    return true;
  }

 private:
  template <typename F>
  bool Retry(F&& attempt, std::string* error) {
    auto backoff = std::chrono::milliseconds(100);
    for (std::uint64_t i = 0;; ++i) {
      if (attempt(error)) return true;
      if (i + 1 >= options_.retries || !client_.retryable()) return false;
      std::fprintf(stderr, "hushtrace ship: %s; retrying in %lld ms\n", error->c_str(),
                   static_cast<long long>(backoff.count()));
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
  }

  bool CreateTables(std::string* error) {
    std::string result;
    if (!client_.Query("CREATE DATABASE IF NOT EXISTS " + options_.url.database, &result, error))
      return false;
    const std::string& db = options_.url.database;
    for (const sql::TableDef& t : sql::Tables()) {
      if (!client_.Query(sql::ClickHouseCreateTable(t, db), &result, error)) return false;
      // Reads fan out to every shard's `t`; nothing is inserted through it (no sharding key).
      if (!options_.cluster.empty() &&
          !client_.Query("CREATE TABLE IF NOT EXISTS " + db + "." + t.name + "_all AS " + db +
                             "." + t.name + " ENGINE = Distributed(" + options_.cluster + ", " +
                             db + ", " + t.name + ")",
                         &result, error))
        return false;
    }
    return true;
  }

  // The rows of this trace from this host (two hosts shipping copies of one trace stay apart).
  std::string Where() const {
    return " WHERE trace_id = " + sql::ClickHouseQuote(trace_id_) +
           " AND host = " + sql::ClickHouseQuote(host_);
  }

  // The chunks of this trace on the server: (table, chunk number) -> rows.
  bool LoadPresent(std::string* error) {
    present_.clear();
    for (const sql::TableDef& t : sql::Tables()) {
      const std::string k = std::to_string(options_.chunk_rows);
      std::string result;
      if (!client_.Query("SELECT intDiv(seq, " + k + "), count() FROM " + options_.url.database +
                             "." + t.name + Where() + " GROUP BY intDiv(seq, " + k +
                             ") FORMAT TabSeparated",
                         &result, error))
        return false;
      std::size_t pos = 0;
      while (pos < result.size()) {
        std::size_t end = result.find('\n', pos);
        if (end == std::string::npos) end = result.size();
        const std::string line = result.substr(pos, end - pos);
        pos = end + 1;
        const std::size_t tab = line.find('\t');
        if (tab == std::string::npos) continue;
        present_[{t.id, std::strtoull(line.c_str(), nullptr, 10)}] =
            std::strtoull(line.c_str() + tab + 1, nullptr, 10);
      }
    }
    return true;
  }

  // Rows of the chunk on the server (after a failed insert: did it get in?).
  bool CountChunk(const sql::Chunk& chunk, std::uint64_t* count, std::string* error) {
    std::string result;
    if (!client_.Query("SELECT count() FROM " + options_.url.database + "." +
                           sql::Table(chunk.table).name + Where() + " AND seq >= " +
                           std::to_string(chunk.first_seq) + " AND seq < " +
                           std::to_string(chunk.first_seq + chunk.rows),
                       &result, error))
      return false;
    *count = std::strtoull(result.c_str(), nullptr, 10);
    return true;
  }

  bool SendChunk(const sql::Chunk& chunk, std::string* error) {
    if (g_stop != 0) {
      *error = "stopped by a signal before chunk " + std::to_string(chunk.number) + " of " +
               sql::Table(chunk.table).name + " (the next run sends the rest)";
      return false;
    }
    const auto it = present_.find({chunk.table, chunk.number});
    if (it != present_.end() && it->second == chunk.rows) {
      ++skipped_;
      return true;
    }
    Pace(chunk.rows);
    bool failed_before = false;
    const bool ok = Retry(
        [&](std::string* e) {
          if (failed_before) {  // the last attempt may have landed before its answer was lost
            std::uint64_t count = 0;
            if (!CountChunk(chunk, &count, e)) return false;
            if (count == chunk.rows) return true;
          }
          failed_before = true;
          return client_.Insert(chunk.table, chunk.data, e);
        },
        error);
    if (ok) ++sent_;
    return ok;
  }

  void Pace(std::uint64_t rows) {
    if (options_.rows_per_s == 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (paced_rows_ == 0) pace_start_ = now;
    paced_rows_ += rows;
    const auto due = pace_start_ + std::chrono::microseconds(paced_rows_ * 1000000 /
                                                             options_.rows_per_s);
    if (due > now) std::this_thread::sleep_until(due);
  }

  Options options_;
  sql::ClickHouseClient client_;
  bool tables_ready_ = false;
  std::string trace_id_, host_;
  std::map<std::pair<sql::TableId, std::uint64_t>, std::uint64_t> present_;
  std::uint64_t sent_ = 0, skipped_ = 0;
  std::uint64_t paced_rows_ = 0;
  std::chrono::steady_clock::time_point pace_start_;
};

// --- the agent (--watch) ---

struct WatchOptions {
  std::string dir, state;
  std::uint64_t interval_s = 2;
  std::uint64_t max_bytes = 0;
  bool once = false;
};

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Bytes of the regular files directly in `dir` (trace directories are flat).
std::uint64_t DirBytes(const std::string& dir) {
  std::uint64_t total = 0;
  base::DirStream list = base::DirStream::Open(dir.c_str());
  while (const char* name = list.Next()) {
    struct stat st;
    if (::stat((dir + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode))
      total += static_cast<std::uint64_t>(st.st_size);
  }
  return total;
}

bool RemoveTraceDir(const std::string& dir) {
  {
    base::DirStream list = base::DirStream::Open(dir.c_str());
    while (const char* name = list.Next()) ::unlink((dir + "/" + name).c_str());
  }
  return ::rmdir(dir.c_str()) == 0;
}

struct Pending {
  std::string name;
  std::int64_t mtime_ns = 0;
  std::uint64_t bytes = 0;
};

// A completed trace at `path` (a `metadata` file; no session still writing it: its lock, or ring
// files a live process maps), and its metadata's mtime.
bool CompletedTrace(const std::string& path, std::int64_t* mtime_ns) {
  struct stat st;
  if (::stat((path + "/metadata").c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (recover::TraceBeingWritten(path)) return false;
  if (recover::HasLeftovers(path)) {
    // Rings left: a session still running (skip it for now), or a writer that died, whose
    // trace Ship() recovers first (OpenTraceRecovering) and ships like any other.
    recover::Options probe;
    probe.dry_run = true;
    recover::Report report;
    recover::Recover(path, probe, &report);
    if (report.writer_running) return false;
  }
  *mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

// Completed, unshipped traces under `dir`, oldest first, named by their path under `dir`: the
// trace directories in it, and the triggered snapshots of a flight recorder (docs/format.md,
// "Snapshots"): `snapshots/<UTC>-<n>` when `dir` is the recorder's directory, and
// `<trace>/snapshots/<UTC>-<n>` for each trace directory in it. A snapshot appears there whole
// (renamed from `.<name>.partial` once written: names with a dot are skipped), while its session
// still runs.
std::vector<Pending> ScanPending(const std::string& dir, const std::set<std::string>& shipped) {
  std::vector<Pending> out;
  const auto consider = [&](const std::string& name) {
    if (shipped.count(name) != 0) return;
    const std::string path = dir + "/" + name;
    std::int64_t mtime_ns = 0;
    if (CompletedTrace(path, &mtime_ns)) out.push_back({name, mtime_ns, DirBytes(path)});
  };
  const auto snapshots_of = [&](const std::string& prefix) {
    base::DirStream list = base::DirStream::Open((dir + "/" + prefix + "snapshots").c_str());
    while (const char* entry = list.Next()) {
      if (entry[0] != '.') consider(prefix + "snapshots/" + entry);
    }
  };
  snapshots_of("");
  base::DirStream list = base::DirStream::Open(dir.c_str());
  while (const char* entry = list.Next()) {
    const std::string name = entry;
    if (name.empty() || name[0] == '.' || name == "snapshots") continue;
    consider(name);
    snapshots_of(name + "/");
  }
  std::sort(out.begin(), out.end(), [](const Pending& a, const Pending& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns < b.mtime_ns : a.name < b.name;
  });
  return out;
}

std::set<std::string> LoadState(const std::string& path) {
  std::set<std::string> shipped;
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return shipped;
  char line[4096];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    std::string s = line;
    while (!s.empty() && s.back() == '\n') s.pop_back();
    if (s.rfind("shipped ", 0) == 0) shipped.insert(s.substr(8));
  }
  std::fclose(f);
  return shipped;
}

// Written to FILE.tmp, then renamed: a crash leaves the old state or the new one. Only the
// traces still under `dir` are kept.
bool SaveState(const std::string& path, const std::set<std::string>& shipped, const std::string& dir) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  for (const std::string& name : shipped)
    if (::access((dir + "/" + name).c_str(), F_OK) == 0) std::fprintf(f, "shipped %s\n", name.c_str());
  const bool ok = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  return std::fclose(f) == 0 && ok && std::rename(tmp.c_str(), path.c_str()) == 0;
}

int Watch(const Options& options, const WatchOptions& watch) {
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  Shipper shipper(options);
  std::set<std::string> shipped = LoadState(watch.state);
  auto backoff = std::chrono::seconds(watch.interval_s);
  while (g_stop == 0) {
    std::vector<Pending> pending = ScanPending(watch.dir, shipped);
    if (watch.max_bytes != 0) {
      std::uint64_t total = 0;
      for (const Pending& p : pending) total += p.bytes;
      std::size_t drop = 0;
      while (total > watch.max_bytes && drop + 1 < pending.size()) {
        std::fprintf(stderr,
                     "hushtrace ship: %llu bytes of traces wait under %s (bound %llu): dropping "
                     "the oldest, %s (%llu bytes), unshipped\n",
                     static_cast<unsigned long long>(total), watch.dir.c_str(),
                     static_cast<unsigned long long>(watch.max_bytes), pending[drop].name.c_str(),
                     static_cast<unsigned long long>(pending[drop].bytes));
        RemoveTraceDir(watch.dir + "/" + pending[drop].name);
        total -= pending[drop].bytes;
        ++drop;
      }
      pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(drop));
    }
    bool failed = false;
    for (const Pending& p : pending) {
      if (g_stop != 0) break;
      if (!shipper.Ship(watch.dir + "/" + p.name)) {
        failed = true;
        break;  // the server is likely down: wait, then start over with the oldest
      }
      shipped.insert(p.name);
      if (!SaveState(watch.state, shipped, watch.dir))
        std::fprintf(stderr, "hushtrace ship: cannot write the state file %s: %s\n",
                     watch.state.c_str(), std::strerror(errno));
    }
    if (watch.once) return failed ? 1 : 0;
    backoff = failed ? std::min(backoff * 2, std::chrono::seconds(60))
                     : std::chrono::seconds(watch.interval_s);
    for (auto slept = std::chrono::milliseconds(0); g_stop == 0 && slept < backoff;
         slept += std::chrono::milliseconds(100))
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return 0;
}

}  // namespace

void DescribeShip(CLI::App& app) { DescribeWith(app, Define); }

int RunShip(int argc, char** argv) {
  Args args;
  CLI::App app;
  Define(app, args);
  if (const int status = ParseCommand(app, argc, argv); status >= 0) return status;
  Options options;
  WatchOptions watch;
  const std::string& to = args.to;
  const std::vector<std::string>& traces = args.traces;
  const auto given_empty = [&](const char* name) { return app.count(name) != 0 && app[name]->as<std::string>().empty(); };
  if (given_empty("--to")) return BadArgs("--to needs a URL");
  if (given_empty("--host")) return BadArgs("--host needs a NAME");
  options.host = args.host;
  if (app.count("--cluster") &&
      (args.cluster.empty() || args.cluster.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789_") != std::string::npos))
    return BadArgs("--cluster needs a NAME of letters, digits and _");
  options.cluster = args.cluster;
  if (given_empty("--watch")) return BadArgs("--watch needs a DIR");
  watch.dir = args.watch;
  if (given_empty("--state")) return BadArgs("--state needs a FILE");
  watch.state = args.state;
  watch.once = args.once;
  const std::pair<const char*, std::uint64_t*> counts[] = {
      {"--chunk-rows", &options.chunk_rows}, {"--retries", &options.retries},
      {"--rows-per-s", &options.rows_per_s}, {"--interval", &watch.interval_s},
      {"--max-bytes", &watch.max_bytes}};
  for (const auto& [name, count] : counts) {
    if (app.count(name) == 0) continue;
    const std::string arg = name;
    if (!ParseCount(app[name]->as<std::string>(), count)) return BadArgs(arg + " needs a number");
    if (*count == 0 && arg != "--rows-per-s" && arg != "--max-bytes")
      return BadArgs(arg + " needs a positive number");
  }
  if (to.empty()) return BadArgs("missing --to http://HOST:8123/DB");
  std::string error;
  if (!sql::ParseClickHouseUrl(to, &options.url, &error)) return BadArgs(error);
  if (watch.dir.empty() && traces.empty()) return BadArgs("missing the TRACE directories");
  if (!watch.dir.empty() && !traces.empty())
    return BadArgs("--watch DIR ships what appears under DIR: give no TRACE arguments");
  if (watch.dir.empty() && (!watch.state.empty() || watch.once || watch.max_bytes != 0))
    return BadArgs("--state, --once and --max-bytes go with --watch DIR");
  for (const std::string& t : traces)
    if (!IsFile(t + "/metadata")) return BadArgs("'" + t + "' is not a trace directory");
  if (!watch.dir.empty()) {
    struct stat st;
    if (::stat(watch.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return BadArgs("--watch: '" + watch.dir + "' is not a directory");
    if (watch.state.empty()) watch.state = watch.dir + "/.hushtrace-ship-state";
    return Watch(options, watch);
  }
  Shipper shipper(options);
  int status = 0;
  for (const std::string& t : traces)
    if (!shipper.Ship(t)) status = 1;
  return status;
}

#endif  // HUSH_HAVE_SQL

}  // namespace hush::cli
