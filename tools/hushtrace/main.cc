// hushtrace: record, list, report and dump traces. `hushtrace help` lists the subcommands.
#include <cstdio>
#include <cstring>

#include "commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"record", hush::cli::RunRecord, "run a program with a tracing session"},
    {"list", hush::cli::RunList, "list the tracepoints compiled into a binary"},
    {"report", hush::cli::RunReport, "summarize a trace: events, threads, spans, losses"},
    {"dump", hush::cli::RunDump, "print a trace's events in time order"},
    {"recover", hush::cli::RunRecover, "make a trace whose writer died readable again"},
    {"export", hush::cli::RunExport, "convert a trace for Perfetto, Chrome or flame graphs"},
    {"ship", hush::cli::RunShip, "insert traces into ClickHouse (docs/sql.md), or watch a directory"},
    {"hist", hush::cli::RunHist, "histogram of span, function call durations or a numeric field"},
    {"ps", hush::cli::RunPs, "list running processes that have the hushtrace runtime loaded"},
    {"start", hush::cli::RunStart, "start tracing in a running process"},
    {"stop", hush::cli::RunStop, "stop tracing in a running process, write its trace"},
    {"snapshot", hush::cli::RunSnapshot, "write a running process's flight recorder now"},
    {"status", hush::cli::RunStatus, "show a running process's session: events, buffers, losses"},
};

void Usage(FILE* out) {
  std::fprintf(out, "usage: hushtrace <command> [options]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-8s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\n'hushtrace <command> --help' describes a command; "
               "'hushtrace -V' (--version) prints the version.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  const char* name = argv[1];
  if (std::strcmp(name, "help") == 0 || std::strcmp(name, "--help") == 0 || std::strcmp(name, "-h") == 0) {
    Usage(stdout);
    return 0;
  }
  if (std::strcmp(name, "--version") == 0 || std::strcmp(name, "-V") == 0) {
    std::printf("hushtrace 0.1.0\n");
    return 0;
  }
  for (const Command& c : kCommands) {
    if (std::strcmp(name, c.name) == 0) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "hushtrace: unknown command '%s'\n\n", name);
  Usage(stderr);
  return 2;
}
