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

// One line per stream that really lost events or packets ("DIR/stream_N: 12 events lost ..."),
// for `report` (stdout, "WARNING: ") and `dump` (stderr): both say the same. Flight mode's
// overwritten events are the window it keeps, not a loss: no line.
std::vector<std::string> LossWarnings(const reader::Trace& trace);

// Exit status of a reading command (dump, report, export, hist) when a stream's data was damaged:
// that stream was read up to the damage and the rest of the trace to its end (docs/cli.md).
inline constexpr int kExitPartial = 3;

// After the event loop of a reading command whose iterator skips damaged streams
// (EventIterator::SkipDamagedStreams): one line on stderr per stream ended early, naming it and
// the damage; kExitPartial when there was one, else 0.
int ReportSkippedStreams(const reader::EventIterator& it, const char* command);

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_OPEN_TRACE_H_
