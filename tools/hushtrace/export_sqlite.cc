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
  sql::TraceTables tables(trace, *sink, {});
  reader::EventIterator it(trace);
  Progress progress(trace, "export");
  bool ok = true;
  while (ok && it.Next()) {
    progress.Tick(it.event().timestamp());
    ok = tables.Add(it.event());
  }
  progress.Done();
  ok = tables.Finish() && ok;
  ok = sink->Commit(&error) && ok;
  for (const std::string& w : trace.warnings())
    std::fprintf(stderr, "hushtrace export: warning: %s\n", w.c_str());
  if (!it.error().empty()) {
    std::fprintf(stderr, "hushtrace export: %s (the events before it were exported)\n",
                 it.error().c_str());
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
