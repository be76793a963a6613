#include "export_sqlite.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "progress.h"
#ifdef HUSH_HAVE_SQL
#include "sql/sqlite_sink.h"
#include "sql/tables.h"
#endif

namespace hush::cli {

#ifndef HUSH_HAVE_SQL
// A build without src/sql (a cross build whose sysroot has no libsqlite3: make test-aarch64).
int ExportSqlite(const reader::Trace&, const std::string&) {
  std::fprintf(stderr, "hushtrace export: --format sqlite is not built into this hushtrace "
                       "(built without libsqlite3)\n");
  return 1;
}
#else

int ExportSqlite(const reader::Trace& trace, const std::string& path) {
  // Replace, as the other formats do: rows of an older export must not mix with these.
  for (const std::string& f : {path, path + "-journal"}) {
    if (::unlink(f.c_str()) != 0 && errno != ENOENT) {
      std::fprintf(stderr, "hushtrace export: cannot replace %s: %s\n", f.c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  std::string error;
  std::unique_ptr<sql::SqliteSink> sink = sql::SqliteSink::Create(path, &error);
  if (!sink) {
    std::fprintf(stderr, "hushtrace export: %s\n", error.c_str());
    return 1;
  }
  // Two passes (docs/sql.md, "... in the SQLite file: views"): the `events` rows thread by
  // thread, in the order of event_rows' key (tid, ts_ns), so that every insert appends to its
  // B-tree; then every event in time order for the spans, counters and sched slices of the
  // timeline. Reading twice costs little next to SQLite's inserts.
  sql::TraceTables tables(trace, *sink, {});
  bool ok = true;
  std::string read_error;
  {
    Progress progress(trace, "export (events, thread by thread)");
    for (const std::vector<std::uint32_t>& streams : sql::StreamsByThread(trace)) {
      reader::EventIterator it(trace, streams);
      while (ok && it.Next()) {
        progress.Tick(it.event().timestamp());
        ok = tables.AddEventRow(it.event());
      }
      // Bad data ends its group here; the other groups and the timeline up to it go on, so
      // the file holds the events before it, as the time-ordered exports do.
      if (read_error.empty()) read_error = it.error();
      if (!ok) break;
    }
  }
  if (ok) {
    reader::EventIterator it(trace);
    Progress progress(trace, "export (spans)");
    while (ok && it.Next()) {
      progress.Tick(it.event().timestamp());
      ok = tables.AddToTimeline(it.event());
    }
  }
  ok = tables.Finish() && ok;
  ok = sink->Commit(&error) && ok;
  for (const std::string& w : trace.warnings())
    std::fprintf(stderr, "hushtrace export: warning: %s\n", w.c_str());
  if (!read_error.empty()) {
    std::fprintf(stderr, "hushtrace export: %s (the events before it were exported)\n",
                 read_error.c_str());
    return 1;
  }
  if (!ok) {
    std::fprintf(stderr, "hushtrace export: writing %s failed: %s\n", path.c_str(),
                 error.c_str());
    return 1;
  }
  return 0;
}

#endif  // HUSH_HAVE_SQL

}  // namespace hush::cli
