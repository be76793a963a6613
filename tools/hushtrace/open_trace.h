// Opening a trace directory for the reading subcommands (dump, report, export, hist).
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_OPEN_TRACE_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_OPEN_TRACE_H_

#include <memory>
#include <string>
#include <vector>

#include "hushtrace/reader.h"

namespace hush::cli {

// Opens DIR with the reader library. A directory left by a writer that died (ring files in DIR,
// recover::HasLeftovers, their process gone) is recovered first, exactly as `hushtrace recover DIR` does, with one line on
// stderr saying so; a directory whose writer still runs is read as it is on disk, with a note.
// `command` prefixes the messages ("hushtrace dump"). nullptr + `error` when it cannot be read.
std::unique_ptr<reader::Trace> OpenTraceRecovering(const std::string& dir, const char* command,
                                                   std::string* error);

// What `record` does once the program has exited: every trace directory of the run (DIR and the
// DIR/proc-* traces of exec'd programs) whose ring files still hold events (processes that left
// with _exit(), by an exec or a crash, since a session writes its rings out only at exit()) is
// recovered in place, so that the trace `record` names is whole for every reader, babeltrace2
// included. A directory whose writer still runs (a descendant that outlived the program) is left
// as it is and said. One line on stderr per directory recovered or left; `command` prefixes them.
void CompleteRecordedTrace(const std::string& dir, const char* command);

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
