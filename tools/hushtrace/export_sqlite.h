// `hushtrace export --format sqlite`: the trace as the SQL tables of docs/sql.md (src/sql).
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_EXPORT_SQLITE_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_EXPORT_SQLITE_H_

#include <string>

#include "hushtrace/reader.h"

namespace hush::cli {

// Writes `trace` into a new SQLite database at `path` (an existing file is replaced). Returns
// the exit status of `hushtrace export`: 0, or 1 with a message on stderr.
int ExportSqlite(const reader::Trace& trace, const std::string& path);

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_EXPORT_SQLITE_H_
