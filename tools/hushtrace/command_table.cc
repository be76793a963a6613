// The table of subcommands that main.cc dispatches on and completion.cc describes.
#include <iterator>

#include "commands.h"

namespace hush::cli {
namespace {

constexpr Command kCommands[] = {
    {"record", "run a program with a tracing session", RunRecord, DescribeRecord},
    {"list", "list the tracepoints compiled into a binary", RunList, DescribeList},
    {"report", "summarize a trace: events, threads, spans, losses", RunReport, DescribeReport},
    {"dump", "print a trace's events in time order", RunDump, DescribeDump},
    {"recover", "make a trace whose writer died readable again", RunRecover, DescribeRecover},
    {"export", "convert a trace for Perfetto, Chrome or flame graphs", RunExport, DescribeExport},
    {"ship", "insert traces into ClickHouse (docs/sql.md), or watch a directory", RunShip, DescribeShip},
    {"hist", "histogram of span, function call durations or a numeric field", RunHist, DescribeHist},
    {"ps", "list running processes that have the hushtrace runtime loaded", RunPs, DescribePs},
    {"start", "start tracing in a running process", RunStart, DescribeStart},
    {"stop", "stop tracing in a running process, write its trace", RunStop, DescribeStop},
    {"snapshot", "write a running process's flight recorder now", RunSnapshot, DescribeSnapshot},
    {"status", "show a running process's session: events, buffers, losses", RunStatus, DescribeStatus},
};

}  // namespace

std::span<const Command> AllCommands() { return kCommands; }

}  // namespace hush::cli
