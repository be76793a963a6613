// Opening a trace directory for the reading subcommands (dump, report, export, hist).
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_OPEN_TRACE_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_OPEN_TRACE_H_

#include <memory>
#include <string>
#include <vector>

#include "hushtrace/reader.h"

namespace hush::cli {

// Opens DIR with the reader library. A directory left by a writer that died (DIR/.ring present,
// its process gone) is recovered first, exactly as `hushtrace recover DIR` does, with one line on
// stderr saying so; a directory whose writer still runs is read as it is on disk, with a note.
// `command` prefixes the messages ("hushtrace dump"). nullptr + `error` when it cannot be read.
std::unique_ptr<reader::Trace> OpenTraceRecovering(const std::string& dir, const char* command,
                                                   std::string* error);

// One line per stream that lost events or packets ("DIR/stream_N: 12 events lost: ..."), for
// `report` (stdout, "WARNING: ") and `dump` (stderr): both say the same.
std::vector<std::string> LossWarnings(const reader::Trace& trace);

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_OPEN_TRACE_H_
