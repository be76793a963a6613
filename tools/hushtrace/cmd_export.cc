// hushtrace export: a trace as Perfetto protobuf or Chrome Trace Event JSON (docs/cli.md).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "cli_app.h"
#include "commands.h"
#include "export/chrome_json_writer.h"
#include "export/folded_writer.h"
#include "export/perfetto_writer.h"
#include "export/symbolizer.h"
#include "export/timeline.h"
#include "hushtrace/reader.h"
#include "export_sqlite.h"
#include "open_trace.h"
#include "progress.h"

namespace hush::cli {
namespace {

constexpr char kUsage[] = "export DIR --format perfetto|chrome|folded|sqlite -o FILE [options]";
constexpr char kDescription[] =
    "Converts the trace in DIR for a timeline viewer, streaming (memory does not grow with the\n"
    "trace):\n"
    "  perfetto  Perfetto protobuf trace: open FILE in https://ui.perfetto.dev (Open trace file)\n"
    "  chrome    Chrome Trace Event JSON: Perfetto UI, chrome://tracing, speedscope...\n"
    "  folded    folded stacks of spans and function calls with their self time in ns, for\n"
    "            flamegraph.pl, inferno, speedscope (one 'outer;inner;innermost NS' a line)\n"
    "  sqlite    SQLite database of the tables of docs/sql.md (FILE is replaced): sqlite3 FILE\n"
    "Spans and function calls become slices on their thread, instants and other events instants\n"
    "(fields as arguments), counters counter tracks, scheduler events \"running\" slices.\n"
    "Functions are named as in report: demangled symbols, else module+offset.";
constexpr char kFooter[] =
    "exit status: 0 ok, 1 unreadable trace or write error, 2 bad arguments, 3 partial: a damaged\n"
    "stream was exported up to the damage (named on stderr), the other streams to their end\n";

struct Args {
  std::string dir, format, output;
};

// The grammar of `export`: one line per option.
// clang-format off
void Define(CLI::App& app, Args& a) {
  DescribeCommand(app, "export", kUsage, kDescription, kFooter);
  app.add_option("DIR", a.dir, "the trace directory")->type_name("");
  app.add_option("-f,--format", a.format, "perfetto, chrome, folded or sqlite")->type_name("FMT");
  app.add_option("-o,--output", a.output, "the file to write ('-': standard output)")->type_name("FILE");
}
// clang-format on

int BadArgs(const std::string& message) {
  std::fprintf(stderr, "hushtrace export: %s\n(see 'hushtrace export --help')\n", message.c_str());
  return 2;
}

}  // namespace

void DescribeExport(CLI::App& app) { DescribeWith(app, Define); }

int RunExport(int argc, char** argv) {
  Args args;
  CLI::App app;
  Define(app, args);
  if (const int status = ParseCommand(app, argc, argv); status >= 0) return status;
  const std::string &dir = args.dir, &format = args.format, &output = args.output;
  if (app.count("--format") && format.empty()) return BadArgs("--format needs perfetto, chrome, folded or sqlite");
  if (!format.empty() && format != "perfetto" && format != "chrome" && format != "folded" && format != "sqlite") {
    return BadArgs("unknown format '" + format + "' (perfetto, chrome, folded or sqlite)");
  }
  if (app.count("--output") && output.empty()) return BadArgs("--output needs a FILE");
  if (dir.empty()) return BadArgs("missing the trace directory DIR");
  if (format.empty()) return BadArgs("missing --format perfetto|chrome|folded|sqlite");
  if (output.empty()) return BadArgs("missing -o FILE");
  if (format == "sqlite" && output == "-") return BadArgs("sqlite needs a FILE, not '-'");

  std::string error;
  std::unique_ptr<reader::Trace> trace = OpenTraceRecovering(dir, "hushtrace export", &error);
  if (!trace) {
    std::fprintf(stderr, "hushtrace export: %s\n", error.c_str());
    return 1;
  }
  if (format == "sqlite") return ExportSqlite(*trace, output);  // export_sqlite.cc
  const bool to_stdout = output == "-";
  std::FILE* file = to_stdout ? stdout : std::fopen(output.c_str(), "wb");
  if (file == nullptr) {
    std::fprintf(stderr, "hushtrace export: cannot create %s: %s\n", output.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::unique_ptr<exporter::TimelineSink> sink;
  if (format == "perfetto") {
    sink = std::make_unique<exporter::PerfettoWriter>(file);
  } else if (format == "folded") {
    sink = std::make_unique<exporter::FoldedWriter>(file);
  } else {
    sink = std::make_unique<exporter::ChromeJsonWriter>(file);
  }
  exporter::Symbolizer symbols(*trace);
  exporter::TimelineBuilder builder(*trace, *sink, symbols);
  builder.Start();
  reader::EventIterator it(*trace);
  it.SkipDamagedStreams();
  Progress progress(*trace, "export");
  while (it.Next()) {
    progress.Tick(it.event().timestamp());
    symbols.Observe(it.event());
    builder.Add(it.event());
  }
  progress.Done();
  bool write_ok = builder.Finish();
  if (!to_stdout)
    write_ok = std::fclose(file) == 0 && write_ok;
  else
    write_ok = std::fflush(stdout) == 0 && write_ok;
  for (const std::string& w : trace->warnings())
    std::fprintf(stderr, "hushtrace export: warning: %s\n", w.c_str());
  for (const std::string& w : symbols.warnings())
    std::fprintf(stderr, "hushtrace export: warning: %s\n", w.c_str());
  const exporter::TimelineStats& st = builder.stats();
  if (st.unmatched_ends != 0 || st.closed_at_end != 0) {
    std::fprintf(stderr,
                 "hushtrace export: note: %llu slice ends without a begin were dropped, %llu "
                 "slices still open "
                 "were closed at the last event\n",
                 static_cast<unsigned long long>(st.unmatched_ends),
                 static_cast<unsigned long long>(st.closed_at_end));
  }
  if (!write_ok) {
    std::fprintf(stderr, "hushtrace export: writing %s failed: %s\n", output.c_str(),
                 std::strerror(errno));
    return 1;
  }
  return ReportSkippedStreams(it, "hushtrace export");
}

}  // namespace hush::cli
