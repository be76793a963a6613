// End-to-end tests of `hushtrace list` and `hushtrace record`, run as the user runs them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/cli_test_util.h"
#include "emulated_exec.h"

namespace hush::clitest {
namespace {

// ---- expected tracepoints ----

struct Expected {
  std::string name, kind, fields;
  std::string file;    // source file name in tests/cli (or examples)
  std::string marker;  // text of the line the location must point at
};

const std::vector<Expected>& ProgramTracepoints() {
  static const std::vector<Expected> kList = {
      {"cliprog:blob", "event", "(bytes data)", "cli_tp_events.h",
       "HUSH_TRACEPOINT(cliprog, blob,"},
      {"cliprog:empty", "event", "()", "cli_tp_events.h", "HUSH_TRACEPOINT(cliprog, empty)"},
      {"cliprog:inline_helper", "instant", "()", "cli_tp_events.h",
       "HUSH_INSTANT(cliprog, inline_helper)"},
      {"cliprog:iterations", "counter", "(f64 value)", "cli_tp_prog.cc",
       "HUSH_COUNTER(cliprog, iterations,"},
      {"cliprog:main_loop", "span", "(phase phase)", "cli_tp_prog.cc",
       "HUSH_SPAN(cliprog, main_loop)"},
      {"cliprog:mixed", "instant", "()", "cli_tp_prog.cc", "HUSH_INSTANT(cliprog, mixed)"},
      {"cliprog:mixed", "counter", "(f64 value)", "cli_tp_prog.cc", "HUSH_COUNTER(cliprog, mixed,"},
      {"cliprog:start", "event", "(i32 argc, str arg0)", "cli_tp_events.h",
       "HUSH_TRACEPOINT(cliprog, start,"},
      {"cliprog:text", "event", "(str view, str owned)", "cli_tp_events.h",
       "HUSH_TRACEPOINT(cliprog, text,"},
      {"cliprog:tick", "instant", "()", "cli_tp_prog.cc", "HUSH_INSTANT(cliprog, tick)"},
      {"cliprog:values", "event",
       "(i8 a, i16 b, i32 c, i64 d, u8 e, u16 f, u32 g, u64 h, bool flag, f32 ratio, f64 mean, u16 "
       "color)",
       "cli_tp_events.h", "HUSH_TRACEPOINT(cliprog, values,"},
  };
  return kList;
}

const std::vector<Expected>& LibraryTracepoints() {
  static const std::vector<Expected> kList = {
      {"clilib:call", "event", "(u64 n, str tag)", "cli_tp_lib.cc",
       "HUSH_TRACEPOINT(clilib, call,"},
      {"clilib:depth", "counter", "(f64 value)", "cli_tp_lib.cc", "HUSH_COUNTER(clilib, depth,"},
      {"clilib:work", "span", "(phase phase)", "cli_tp_lib.cc", "HUSH_SPAN(clilib, work)"},
  };
  return kList;
}

struct Row {
  std::string name, kind, fields, location;
};

// Parses `provider:name  kind  (type field, ...)  file:line` lines: columns are separated by at
// least two spaces; only the field list contains single spaces.
std::vector<Row> ParseList(const std::string& out) {
  std::vector<Row> rows;
  for (const std::string& line : Lines(out)) {
    const std::size_t name_end = line.find(' ');
    const std::size_t kind_at = line.find_first_not_of(' ', name_end);
    const std::size_t kind_end = line.find(' ', kind_at);
    const std::size_t fields_at = line.find_first_not_of(' ', kind_end);
    const std::size_t fields_end = line.rfind(')');
    const std::size_t location_at = line.rfind(' ') + 1;
    if (name_end == std::string::npos || kind_at == std::string::npos ||
        kind_end == std::string::npos || fields_at == std::string::npos ||
        fields_end == std::string::npos || line[fields_at] != '(' || fields_end + 3 > location_at ||
        kind_at < name_end + 2 || fields_at < kind_end + 2 ||
        line.find_first_not_of(' ', fields_end + 1) != location_at) {
      ADD_FAILURE() << "unexpected line: '" << line << "'";
      continue;
    }
    rows.push_back({line.substr(0, name_end), line.substr(kind_at, kind_end - kind_at),
                    line.substr(fields_at, fields_end + 1 - fields_at), line.substr(location_at)});
  }
  return rows;
}

void ExpectList(const std::string& out, const std::vector<Expected>& expected,
                const std::string& source_dir) {
  // A program linked with the static runtime also holds the runtime's own sched:* events
  // (src/sched/sched_events.h, emitted with --sched); they are not the program's.
  std::vector<Row> rows;
  for (Row& r : ParseList(out)) {
    if (r.location.find("src/sched/sched_events.h:") == std::string::npos) rows.push_back(std::move(r));
  }
  ASSERT_EQ(rows.size(), expected.size()) << out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Expected& e = expected[i];
    EXPECT_EQ(rows[i].name, e.name) << out;
    EXPECT_EQ(rows[i].kind, e.kind) << e.name;
    EXPECT_EQ(rows[i].fields, e.fields) << e.name;
    const int line = LineOf(source_dir + "/" + e.file, e.marker);
    ASSERT_GT(line, 0) << "marker not found: " << e.marker;
    const std::string suffix = "/" + e.file + ":" + std::to_string(line);
    EXPECT_TRUE(rows[i].location.size() >= suffix.size() &&
                rows[i].location.compare(rows[i].location.size() - suffix.size(), suffix.size(),
                                         suffix) == 0)
        << e.name << ": location " << rows[i].location << ", expected ..." << suffix;
  }
}

std::string CliSourceDir() { return SourceDir() + "/tests/cli"; }

RunResult List(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {HushtraceCli(), "list"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ---- hushtrace list ----

TEST(CliList, PieExecutable) {
  const RunResult r = List({CLI_TP_PIE});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ExpectList(r.out, ProgramTracepoints(), CliSourceDir());
}

TEST(CliList, NonPieExecutable) {
  const RunResult r = List({CLI_TP_NOPIE});
  ASSERT_EQ(r.status, 0) << r.err;
  ExpectList(r.out, ProgramTracepoints(), CliSourceDir());
}

TEST(CliList, SharedLibrary) {
  const RunResult r = List({CLI_TP_LIB});
  ASSERT_EQ(r.status, 0) << r.err;
  ExpectList(r.out, LibraryTracepoints(), CliSourceDir());
}

TEST(CliList, RelocatableObject) {
  const RunResult r = List({CLI_TP_OBJECT});
  ASSERT_EQ(r.status, 0) << r.err;
  ExpectList(r.out, LibraryTracepoints(), CliSourceDir());
}

#ifdef CLI_TP_RELR
TEST(CliList, PackedRelativeRelocations) {
  const RunResult r = List({CLI_TP_RELR});
  ASSERT_EQ(r.status, 0) << r.err;
  ExpectList(r.out, ProgramTracepoints(), CliSourceDir());
}
#endif

#ifdef CLI_TP_LLD
TEST(CliList, LinkedByLld) {
  const RunResult r = List({CLI_TP_LLD});
  ASSERT_EQ(r.status, 0) << r.err;
  ExpectList(r.out, ProgramTracepoints(), CliSourceDir());
}
#endif

TEST(CliList, DemoServer) {
  const RunResult r = List({BinaryDir() + "/examples/demo_server"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<Expected> expected = {
      {"demo:checkpoint", "instant", "()", "demo_server.cc", "HUSH_INSTANT(demo, checkpoint)"},
      {"demo:handle", "span", "(phase phase)", "demo_server.cc", "HUSH_SPAN(demo, handle)"},
      {"demo:queue_depth", "counter", "(f64 value)", "demo_server.cc",
       "HUSH_COUNTER(demo, queue_depth,"},
      {"demo:request", "event", "(u32 worker, u64 request_id, str path)", "demo_server.cc",
       "HUSH_TRACEPOINT(demo, request,"},
      {"demo:response", "event", "(u64 request_id, u8 status, u32 bytes, f64 latency_us)",
       "demo_server.cc", "HUSH_TRACEPOINT(demo, response,"},
  };
  ExpectList(r.out, expected, SourceDir() + "/examples");
}

TEST(CliList, SeveralBinaries) {
  const RunResult r = List({CLI_TP_PIE, CLI_TP_LIB});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 1 + ProgramTracepoints().size() + 1 + 1 + LibraryTracepoints().size())
      << r.out;
  EXPECT_EQ(lines[0], std::string(CLI_TP_PIE) + ":");
  EXPECT_EQ(lines[1 + ProgramTracepoints().size()], "");
  EXPECT_EQ(lines[2 + ProgramTracepoints().size()], std::string(CLI_TP_LIB) + ":");
}

TEST(CliList, Json) {
  const RunResult r = List({"--json", CLI_TP_PIE});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.front(), '[');
  EXPECT_TRUE(Contains(r.out, "\"file\": \"" + std::string(CLI_TP_PIE) + "\"")) << r.out;
  const std::string build_id = LineContaining(r.out, "\"build_id\": \"");
  const std::size_t id_at = build_id.find(": \"") + 3;
  EXPECT_TRUE(IsLowerHex(build_id.substr(id_at, build_id.rfind('"') - id_at), 16)) << build_id;
  EXPECT_TRUE(
      Contains(r.out,
               "{\"name\": \"cliprog:start\", \"provider\": \"cliprog\", \"event\": \"start\", "
               "\"kind\": \"event\", \"fields\": [{\"name\": \"argc\", \"type\": \"i32\"}, "
               "{\"name\": \"arg0\", \"type\": \"str\"}]"))
      << r.out;
  // cliprog:start is emitted from two translation units: two sites, one location.
  const std::string start = LineContaining(r.out, "\"name\": \"cliprog:start\"");
  const std::string start_line = std::to_string(
      LineOf(CliSourceDir() + "/cli_tp_events.h", "HUSH_TRACEPOINT(cliprog, start,"));
  EXPECT_TRUE(
      Contains(start, "/cli_tp_events.h\", \"line\": " + start_line + ", \"locations\": [\""))
      << start;
  // Every site of a static-key build is also a patchable NOP (hush_jump entry).
#if defined(HUSH_NO_STATIC_KEYS) || !(defined(__x86_64__) || defined(__aarch64__))
  const std::string jump_sites = "0";
#else
  const std::string jump_sites = "2";
#endif
  EXPECT_TRUE(Contains(start, "/cli_tp_events.h:" + start_line + "\"], \"sites\": 2, " +
                                  "\"static_key_sites\": " + jump_sites + "}"))
      << start;
  // cliprog:tick has two sites on two lines.
  const std::string tick = LineContaining(r.out, "\"name\": \"cliprog:tick\"");
  EXPECT_TRUE(Contains(tick, "cli_tp_prog.cc:" +
                                 std::to_string(LineOf(CliSourceDir() + "/cli_tp_prog.cc",
                                                       "HUSH_INSTANT(cliprog, tick)")) +
                                 "\", \""))
      << tick;
  EXPECT_TRUE(Contains(tick, "\"sites\": 2, \"static_key_sites\": " + jump_sites + "}")) << tick;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '{'),
            std::count(r.out.begin(), r.out.end(), '}'));
}

TEST(CliList, HelpAndBadArguments) {
  RunResult r = List({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(Contains(r.out, "usage: hushtrace list")) << r.out;
  r = List({});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "no binary")) << r.err;
  r = List({"--frobnicate", CLI_TP_PIE});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "unknown option '--frobnicate'")) << r.err;
  r = RunCommand({HushtraceCli(), "record", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(Contains(r.out, "usage: hushtrace record")) << r.out;
}

class CliListErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { RemoveTree(dir_); }

  // `hushtrace list FILE` must fail with exit status 1, a message naming FILE, and no crash.
  void ExpectFailure(const std::string& file, const std::string& message) {
    const RunResult r = List({file});
    EXPECT_EQ(r.status, 1) << file << ": " << r.err;
    EXPECT_EQ(r.out, "") << file;
    EXPECT_TRUE(Contains(r.err, file)) << r.err;
    EXPECT_TRUE(Contains(r.err, message)) << file << ": expected '" << message << "' in: " << r.err;
    EXPECT_TRUE(CleanStderr(r.err)) << r.err;
  }

  std::string dir_;
};

TEST_F(CliListErrors, NotElf) {
  WriteFile(dir_ + "/empty", "");
  ExpectFailure(dir_ + "/empty", "empty file, not an ELF file");
  WriteFile(dir_ + "/text", "#!/bin/sh\necho hello\n");
  ExpectFailure(dir_ + "/text", "not an ELF file");
  std::string garbage;
  unsigned x = 12345;
  for (int i = 0; i < 100000; ++i) garbage += static_cast<char>((x = x * 1103515245 + 12345) >> 16);
  WriteFile(dir_ + "/garbage", garbage);
  ExpectFailure(dir_ + "/garbage", "not an ELF file");
  // ELF magic then garbage.
  WriteFile(dir_ + "/magic",
            "\x7f"
            "ELF" +
                garbage);
  ExpectFailure(dir_ + "/magic", "(offset 0x");
  std::string elf32 = ReadFile(CLI_TP_PIE).substr(0, 64);
  elf32[4] = 1;  // ELFCLASS32
  WriteFile(dir_ + "/elf32", elf32);
  ExpectFailure(dir_ + "/elf32", "32-bit ELF files are not supported");
  ExpectFailure(dir_ + "/missing", "No such file or directory");
  ExpectFailure(dir_, "is a directory");
}

TEST_F(CliListErrors, Truncated) {
  const std::string image = ReadFile(CLI_TP_PIE);
  ASSERT_GT(image.size(), 8192u);
  for (std::size_t size :
       {std::size_t{3}, std::size_t{20}, std::size_t{63}, std::size_t{64}, std::size_t{200},
        std::size_t{4096}, image.size() / 2, image.size() - 1}) {
    const std::string path = dir_ + "/truncated_" + std::to_string(size);
    WriteFile(path, image.substr(0, size));
    const RunResult r = List({path});
    EXPECT_EQ(r.status, 1) << path << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, path)) << r.err;
    EXPECT_TRUE(CleanStderr(r.err)) << r.err;
  }
}

TEST_F(CliListErrors, NoTracepoints) {
  // The CLI links the runtime (which has the note but no site) and gtest binaries have neither.
  ExpectFailure(HushtraceCli(), "no hushtrace tracepoints in " + HushtraceCli());
  const std::string sh = FindInPath("sh");
  if (!sh.empty()) ExpectFailure(sh, "no hushtrace tracepoints in " + sh);
}

TEST_F(CliListErrors, SeveralFilesOneBad) {
  WriteFile(dir_ + "/bad", "nope");
  const RunResult r = List({CLI_TP_LIB, dir_ + "/bad"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "clilib:call")) << r.out;
  EXPECT_TRUE(Contains(r.err, dir_ + "/bad: not an ELF file")) << r.err;
}

// ---- hushtrace record ----

class CliRecord : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { RemoveTree(dir_); }

  RunResult Record(const std::vector<std::string>& args, const RunOptions& options = {}) {
    std::vector<std::string> argv = {HushtraceCli(), "record"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, options);
  }

  // babeltrace2's text output of the trace; false (the caller skips) if babeltrace2 is missing.
  bool Babeltrace(const std::string& trace, std::string* text) {
    if (FindInPath("babeltrace2").empty()) return false;
    const RunResult r = RunCommand({"babeltrace2", trace});
    EXPECT_EQ(r.status, 0) << r.err;
    *text = r.out;
    return true;
  }

  void ExpectPermissions(const std::string& trace) {
    struct stat st;
    ASSERT_EQ(::stat(trace.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u) << trace;
    int files = 0;
    for (const std::string& name : ListDir(trace)) {
      const std::string path = trace + "/" + name;
      ASSERT_EQ(::lstat(path.c_str(), &st), 0);
      if (S_ISDIR(st.st_mode)) {
        EXPECT_EQ(st.st_mode & 07777, 0700u) << path;
      } else {
        EXPECT_TRUE(S_ISREG(st.st_mode)) << path;
        EXPECT_EQ(st.st_mode & 07777, 0600u) << path;
        ++files;
      }
    }
    EXPECT_GE(files, 2);  // metadata and at least one stream
  }

  std::string dir_;
};

TEST_F(CliRecord, ExitStatusAndReadableTrace) {
  const std::string trace = dir_ + "/trace";
  const RunResult r =
      Record({"-e", "cliprog:*", "-e", "clilib:call", "-o", trace, "--", CLI_TP_PIE, "exit", "3"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_TRUE(Contains(r.err, "hushtrace: trace written to " + trace)) << r.err;
  EXPECT_TRUE(CleanStderr(r.err)) << r.err;
  ASSERT_TRUE(PathExists(trace + "/metadata"));
  EXPECT_TRUE(PathExists(trace + "/stream_0"));
  ExpectPermissions(trace);
  const std::string metadata = ReadFile(trace + "/metadata");
  EXPECT_TRUE(Contains(metadata, "name = \"cliprog:values\"")) << metadata;
  EXPECT_TRUE(Contains(metadata, "name = \"clilib:call\""));
  EXPECT_FALSE(Contains(metadata, "name = \"clilib:work\""));  // not enabled
  std::string text;
  if (!Babeltrace(trace, &text)) GTEST_SKIP() << "babeltrace2 is not installed";
  for (const char* event :
       {"cliprog:start:", "cliprog:values:", "cliprog:text:", "cliprog:blob:", "cliprog:empty:",
        "cliprog:main_loop:", "cliprog:iterations:", "cliprog:tick:", "cliprog:mixed:",
        "cliprog:inline_helper:", "clilib:call:"}) {
    EXPECT_TRUE(Contains(text, event)) << event << " missing in:\n" << text;
  }
  EXPECT_FALSE(Contains(text, "clilib:work:"));
  EXPECT_FALSE(Contains(text, "clilib:depth:"));
  EXPECT_TRUE(Contains(text, "argc = 3")) << text;
}

// `--format csv` of report (one table per --section) and hist (the buckets) agrees with
// `--format json` of the same trace, row for row and number for number, read by Python's csv
// module (RFC 4180); refused with exit 2 without a section or with --callers.
TEST_F(CliRecord, CsvAgreesWithJson) {
  if (FindInPath("python3").empty()) GTEST_SKIP() << "python3 is not installed";
  const std::string trace = dir_ + "/trace";
  const RunResult r = Record({"-e", "cliprog:*", "-e", "clilib:*", "-o", trace, "--", CLI_TP_PIE});
  ASSERT_EQ(r.status, 0) << r.err;
  // Runs `hushtrace ARGS` into dir_/NAME.
  const auto cli = [&](const std::string& name, std::vector<std::string> args) {
    args.insert(args.begin(), HushtraceCli());
    const RunResult run = RunCommand(args);
    EXPECT_EQ(run.status, 0) << run.err;
    WriteFile(dir_ + "/" + name, run.out);
    return dir_ + "/" + name;
  };
  // Prints, per table, "KEY rows=N" once its csv equals the json's rows (keys, order, values).
  const std::string compare =
      "import csv, json, sys\n"
      "def same(rows, objects, key):\n"
      "    assert rows[0] == list(objects[0].keys()) if objects else True, (key, rows[0])\n"
      "    assert len(rows) == len(objects) + 1, (key, len(rows), len(objects))\n"
      "    for row, obj in zip(rows[1:], objects):\n"
      "        for cell, (k, v) in zip(row, obj.items()):\n"
      "            want = '' if v is None else v\n"
      "            got = cell if isinstance(v, str) or v is None else type(v)(cell)\n"
      "            assert got == want, (key, k, cell, v)\n"
      "    print(key, 'rows=%d' % len(objects))\n"
      "def table(path):\n"
      "    with open(path, newline='') as f:\n"
      "        return list(csv.reader(f, strict=True))\n"
      "report = json.load(open(sys.argv[1]))\n"
      "for arg in sys.argv[2:7]:\n"
      "    key, path = arg.split('=', 1)\n"
      "    same(table(path), report[key], key)\n"
      "for arg in sys.argv[7:]:\n"
      "    j, c = arg.split('=', 1)\n"
      "    same(table(c), json.load(open(j))['buckets'], 'buckets')\n";
  std::vector<std::string> py = {"python3", "-c", compare,
                                 cli("report.json", {"report", trace, "--format", "json"})};
  for (const char* section : {"event_counts", "threads", "spans", "functions", "counters"}) {
    py.push_back(std::string(section) + "=" +
                 cli(std::string(section) + ".csv",
                     {"report", trace, "--format", "csv", "--section", section}));
  }
  for (const std::vector<std::string>& what :
       {std::vector<std::string>{"--span", "cliprog:main_loop"},
        std::vector<std::string>{"--event", "cliprog:iterations", "--field", "value"}}) {
    std::vector<std::string> args = {"hist", trace};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"--format", "json"});
    const std::string json = cli("hist" + std::to_string(py.size()) + ".json", args);
    args.back() = "csv";
    py.push_back(json + "=" + cli("hist" + std::to_string(py.size()) + ".csv", args));
  }
  const RunResult check = RunCommand(py);
  ASSERT_EQ(check.status, 0) << check.err;
  // cli_tp_pie: spans cliprog:main_loop and clilib:work; counters iterations, mixed, depth; one
  // thread; iterations takes 0, 1, 2: two octave rows besides the one of 0.
  EXPECT_TRUE(Contains(check.out, "spans rows=2\n")) << check.out;
  EXPECT_TRUE(Contains(check.out, "counters rows=3\n")) << check.out;
  EXPECT_TRUE(Contains(check.out, "threads rows=1\n")) << check.out;
  EXPECT_TRUE(Contains(check.out, "functions rows=0\n")) << check.out;
  EXPECT_EQ(Lines(check.out).size(), 7u) << check.out;
  EXPECT_EQ(ReadFile(dir_ + "/spans.csv").rfind("name,count,total_ns,self_ns,max_ns\r\n", 0), 0u);

  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"report", trace, "--format", "csv"},
        std::vector<std::string>{"report", trace, "--format", "csv", "--section", "nosuch"},
        std::vector<std::string>{"report", trace, "--section", "spans"},
        std::vector<std::string>{"report", trace, "--format", "csv", "--section", "spans",
                                 "--callers", "x"},
        std::vector<std::string>{"hist", trace, "--span", "cliprog:main_loop", "--format",
                                 "xml"}}) {
    std::vector<std::string> argv = {HushtraceCli()};
    argv.insert(argv.end(), bad.begin(), bad.end());
    const RunResult refused = RunCommand(argv);
    EXPECT_EQ(refused.status, 2) << bad.back() << ": " << refused.err;
    EXPECT_TRUE(refused.out.empty()) << refused.out;
  }
  const RunResult no_section = RunCommand({HushtraceCli(), "report", trace, "--format", "csv"});
  EXPECT_TRUE(Contains(no_section.err, "--section event_counts|threads|spans|functions|counters"))
      << no_section.err;
}

TEST_F(CliRecord, NonPieWithStaticRuntime) {
  const std::string trace = dir_ + "/trace";
  const RunResult r = Record({"-o", trace, CLI_TP_NOPIE, "exit", "0"});
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(PathExists(trace + "/metadata")) << r.err;
  ExpectPermissions(trace);
  std::string text;
  if (!Babeltrace(trace, &text)) GTEST_SKIP() << "babeltrace2 is not installed";
  EXPECT_TRUE(Contains(text, "cliprog:start:")) << text;
  EXPECT_TRUE(Contains(text, "cliprog:values:")) << text;
}

TEST_F(CliRecord, FlightMode) {
  const std::string trace = dir_ + "/trace";
  const RunResult r =
      Record({"--mode", "flight", "--buffer-size=64k", "-o", trace, "--", CLI_TP_PIE, "exit", "0"});
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(PathExists(trace + "/metadata")) << r.err;
  EXPECT_TRUE(Contains(ReadFile(trace + "/metadata"), "hushtrace_mode = \"flight\""));
  std::string text;
  if (!Babeltrace(trace, &text)) GTEST_SKIP() << "babeltrace2 is not installed";
  EXPECT_TRUE(Contains(text, "cliprog:start:")) << text;
  EXPECT_TRUE(Contains(text, "clilib:work:")) << text;
}

// Discards are said when the program ends, with the buffer size to raise; nothing is said
// when nothing was lost.
TEST_F(CliRecord, SaysHowManyEventsAFullRingDiscarded) {
  const std::string trace = dir_ + "/trace";
  // A 16 KiB ring holds ~3,000 ticks; a million in a tight loop outrun any consumer.
  const RunResult r =
      Record({"--buffer-size", "16k", "-o", trace, "--", CLI_TP_PIE, "burst", "1000000"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, "events were discarded")) << r.err;
  EXPECT_TRUE(Contains(r.err, "--buffer-size (now 16k per thread)")) << r.err;
  EXPECT_FALSE(Contains(r.err, "could not be written")) << r.err;
  // `dump` says the losses too, as `report` does (issue 17: it said nothing).
  const RunResult dump = RunCommand({HushtraceCli(), "dump", trace});
  EXPECT_EQ(dump.status, 0) << dump.err;
  EXPECT_TRUE(Contains(dump.err, "hushtrace dump: warning: " + trace + "/stream_")) << dump.err;
  EXPECT_TRUE(Contains(dump.err, " events lost (ring full, nested or oversized, or not written)"))
      << dump.err;
  const RunResult report = RunCommand({HushtraceCli(), "report", trace});
  for (const std::string& line : Lines(report.out)) {
    if (line.rfind("WARNING: ", 0) == 0 && Contains(line, "events lost")) {
      EXPECT_TRUE(Contains(dump.err, "hushtrace dump: warning: " + line.substr(9))) << line;
    }
  }
  const std::string quiet = dir_ + "/quiet";
  const RunResult q = Record({"-o", quiet, "--", CLI_TP_PIE, "exit", "0"});
  EXPECT_EQ(q.status, 0) << q.err;
  EXPECT_FALSE(Contains(q.err, "discarded")) << q.err;
  EXPECT_FALSE(Contains(RunCommand({HushtraceCli(), "dump", quiet}).err, "lost")) << q.err;
}

// Issue 14: --blocking. The burst above through the same 16 KiB ring loses nothing: the
// thread waits for the consumer (HUSHTRACE_BLOCKING); every tick is in the trace. Its value is
// checked before the program runs, and flight mode refuses it.
TEST_F(CliRecord, BlockingLosesNoEventOfABurst) {
  const std::string trace = dir_ + "/trace";
  const RunResult r = Record({"--blocking", "--buffer-size", "16k", "-e", "cliprog:tick", "-o",
                              trace, "--", CLI_TP_PIE, "burst", "1000000"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(Contains(r.err, "discarded")) << r.err;
  const RunResult report = RunCommand({HushtraceCli(), "report", "--format", "json", trace});
  EXPECT_TRUE(Contains(report.out, "\"name\":\"cliprog:tick\",\"count\":1000001")) << report.out;
  EXPECT_FALSE(Contains(report.out, "WARNING")) << report.out;
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--blocking-timeout", "abc"}, "bad --blocking-timeout 'abc'"},
           {{"--blocking-timeout", "0s"}, "bad --blocking-timeout '0s'"},
           {{"--blocking", "--mode", "flight"}, "--blocking applies to --mode stream"}}) {
    std::vector<std::string> argv = args;
    for (const char* a : {"-o", "", "--", CLI_TP_PIE, "touch", ""}) argv.push_back(a);
    argv[argv.size() - 5] = dir_ + "/refused";
    argv.back() = dir_ + "/ran";
    const RunResult bad = Record(argv);
    EXPECT_EQ(bad.status, 2) << message;
    EXPECT_TRUE(Contains(bad.err, message)) << bad.err;
    EXPECT_FALSE(PathExists(dir_ + "/ran")) << message;
  }
}

// Issue 17: messages with the real cause. `record` in a private mount namespace whose output is
// a small tmpfs (skipped where unprivileged namespaces or mounts are not allowed).
class CliRecordFullDisk : public CliRecord {
 protected:
  // Runs `hushtrace record ARGS` with DIR a fresh tmpfs of `size` bytes (-o DIR/t is added).
  RunResult RecordOnTmpfs(const std::string& size, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"unshare",
                                     "--mount",
                                     "--map-root-user",
                                     "sh",
                                     "-c",
                                     "mount -t tmpfs -o size=" + size +
                                         " tmpfs \"$1\" || exit 99; shift; "
                                         "exec \"$@\"",
                                     "sh",
                                     dir_,
                                     HushtraceCli(),
                                     "record",
                                     "-o",
                                     dir_ + "/t"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  }
};

TEST_F(CliRecordFullDisk, WriteFailuresAreNotBlamedOnTheRing) {
  if (FindInPath("unshare").empty()) GTEST_SKIP() << "no unshare";
  // `unshare ... sh -c` execs the CLI by path, without the emulator in front of it.
  if (hushtest::Emulated()) GTEST_SKIP() << "runs the CLI through sh: not under qemu-user";
  // A 256k ring fits; its packets then fill the rest of the 512k file system.
  const RunResult r =
      RecordOnTmpfs("512k", {"--buffer-size", "256k", "--", CLI_TP_PIE, "burst", "200000"});
  if (r.status == 99 || Contains(r.err, "unshare:"))
    GTEST_SKIP() << "cannot mount a tmpfs here: " << r.err;
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Contains(
      r.err, "events could not be written to " + dir_ + "/t (see the runtime's message above"))
      << r.err;
  EXPECT_TRUE(Contains(r.err, "events were lost because " + dir_ + "/t could not be written"))
      << r.err;
}

TEST_F(CliRecordFullDisk, FullBeforeTheFirstRingIsNotAboutThePatterns) {
  if (FindInPath("unshare").empty()) GTEST_SKIP() << "no unshare";
  // `unshare ... sh -c` execs the CLI by path, without the emulator in front of it.
  if (hushtest::Emulated()) GTEST_SKIP() << "runs the CLI through sh: not under qemu-user";
  // The metadata (4 KiB) fits in 16k; a ring, whose header and first 16 KiB are reserved when
  // it is created (ring_buffer.h, "First sub-buffer"), does not.
  const RunResult r = RecordOnTmpfs("16k", {"--", CLI_TP_PIE, "exit", "0"});
  if (r.status == 99 || Contains(r.err, "unshare:"))
    GTEST_SKIP() << "cannot mount a tmpfs here: " << r.err;
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, "the file system holding " + dir_ + "/t is full (")) << r.err;
  EXPECT_FALSE(Contains(r.err, "check the -e patterns")) << r.err;
}

TEST_F(CliRecord, OutputDirectoryRemovedMidRunIsSaid) {
  const std::string trace = dir_ + "/trace", ready = dir_ + "/ready";
  const pid_t pid = Spawn({HushtraceCli(), "record", "-o", trace, CLI_TP_PIE, "serve", ready},
                          dir_ + "/out", dir_ + "/err");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForFile(ready, 60)) << ReadFile(dir_ + "/err");
  RemoveTree(trace);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  EXPECT_EQ(Wait(pid), 0) << ReadFile(dir_ + "/err");
  const std::string err = ReadFile(dir_ + "/err");
  EXPECT_TRUE(Contains(err, "no trace was written to " + trace + ": " + trace +
                                " was removed or replaced while the program ran"))
      << err;
  EXPECT_FALSE(Contains(err, "did not start a tracing session")) << err;
}

TEST_F(CliRecord, KilledBySignal) {
  const std::string trace = dir_ + "/trace";
  const RunResult r = Record({"-o", trace, CLI_TP_PIE, "kill"});
  EXPECT_EQ(r.status, 128 + SIGKILL) << r.err;
  EXPECT_TRUE(Contains(r.err, "killed by signal 9")) << r.err;
  EXPECT_TRUE(PathExists(trace + "/metadata"));  // written when the session started
}

TEST_F(CliRecord, ChildEnvironment) {
  const RunResult r = Record({"-e", "a:*", "--events", "b:c, d:*", "--mode=flight", "--buffer-size",
                              "64k", "-o", "out", CLI_TP_PIE, "env"},
                             RunOptions{dir_, {}, 120});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "HUSHTRACE_EVENTS=a:*,b:c,d:*\n"
            "HUSHTRACE_OUTPUT=" +
                dir_ +
                "/out\n"
                "HUSHTRACE_MODE=flight\n"
                "HUSHTRACE_BUFFER_SIZE=64k\n");
  EXPECT_TRUE(PathExists(dir_ + "/out/metadata")) << r.err;
}

TEST_F(CliRecord, Defaults) {
  const RunResult r =
      Record({CLI_TP_PIE, "env"}, RunOptions{dir_, {"HUSHTRACE_BUFFER_SIZE=999k"}, 120});
  EXPECT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> entries = ListDir(dir_);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(MatchesShape(entries[0], "hushtrace-########-######")) << entries[0];
  EXPECT_EQ(r.out,
            "HUSHTRACE_EVENTS=*\n"
            "HUSHTRACE_OUTPUT=" +
                dir_ + "/" + entries[0] +
                "\n"
                "HUSHTRACE_MODE=stream\n"
                "HUSHTRACE_BUFFER_SIZE=1M\n");
  EXPECT_TRUE(Contains(r.err, "trace written to " + entries[0])) << r.err;
  // `env` emits nothing: the CLI says so.
  EXPECT_TRUE(Contains(r.err, "no event was recorded")) << r.err;
  // Every tracepoint of the program and of its library is enabled by default.
  const std::string metadata = ReadFile(dir_ + "/" + entries[0] + "/metadata");
  EXPECT_TRUE(Contains(metadata, "name = \"cliprog:start\"")) << metadata;
  EXPECT_TRUE(Contains(metadata, "name = \"clilib:work\"")) << metadata;

  // A second recording in the same second gets another directory.
  const RunResult again = Record({CLI_TP_PIE, "exit", "0"}, RunOptions{dir_, {}, 120});
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(ListDir(dir_).size(), 2u);
}

// The CLI links the runtime library; it must not start a session of its own from the
// environment (which `record` also uses to pass the session to the child).
TEST_F(CliRecord, CliDoesNotTraceItself) {
  const std::vector<std::string> env = {"HUSHTRACE_EVENTS=*", "HUSHTRACE_OUTPUT=" + dir_ + "/self"};
  RunResult r = RunCommand({HushtraceCli(), "list", CLI_TP_LIB}, RunOptions{dir_, env, 120});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(PathExists(dir_ + "/self"));
  r = Record({"-o", dir_ + "/trace", CLI_TP_PIE, "exit", "0"}, RunOptions{dir_, env, 120});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(PathExists(dir_ + "/self"));
  EXPECT_TRUE(PathExists(dir_ + "/trace/metadata"));
  EXPECT_EQ(ListDir(dir_).size(), 1u);
}

TEST_F(CliRecord, ForwardsSigterm) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "under TSan the recorder's signal handler only runs at TSan interception points, "
                  "which its wait loop does not reach in time; covered by the normal and ASan builds";
#endif
  const std::string trace = dir_ + "/trace", ready = dir_ + "/ready";
  const pid_t pid = Spawn({HushtraceCli(), "record", "-o", trace, CLI_TP_PIE, "serve", ready},
                          dir_ + "/out", dir_ + "/err");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForFile(ready, 60)) << ReadFile(dir_ + "/err");
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  EXPECT_EQ(Wait(pid), 128 + SIGTERM) << ReadFile(dir_ + "/err");  // the child died of it
  EXPECT_TRUE(Contains(ReadFile(dir_ + "/err"), "killed by signal 15"));
}

TEST_F(CliRecord, ForwardsSigintAndTheProgramFinishesTheTrace) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "under TSan the recorder's signal handler only runs at TSan interception points, "
                  "which its wait loop does not reach in time; covered by the normal and ASan builds";
#endif
  const std::string trace = dir_ + "/trace", ready = dir_ + "/ready";
  const pid_t pid = Spawn(
      {HushtraceCli(), "record", "-e", "cliprog:tick", "-o", trace, CLI_TP_PIE, "serve", ready},
      dir_ + "/out", dir_ + "/err");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForFile(ready, 60)) << ReadFile(dir_ + "/err");
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  EXPECT_EQ(Wait(pid), 0) << ReadFile(dir_ + "/err");  // the program handles SIGINT and returns 0
  EXPECT_TRUE(Contains(ReadFile(dir_ + "/err"), "trace written to " + trace));
  std::string text;
  if (!Babeltrace(trace, &text)) GTEST_SKIP() << "babeltrace2 is not installed";
  EXPECT_TRUE(Contains(text, "cliprog:tick:")) << text;
}

TEST_F(CliRecord, BadArguments) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "no program to run"},
      {{"-o", "x"}, "no program to run"},
      {{"--"}, "no program to run"},
      {{"--mode", "fast", CLI_TP_PIE}, "bad mode 'fast'"},
      {{"--mode"}, "option --mode needs a value"},
      {{"--buffer-size", "1k", CLI_TP_PIE}, "bad buffer size '1k'"},
      {{"--buffer-size", "12q", CLI_TP_PIE}, "bad buffer size '12q'"},
      {{"--buffer-size", "", CLI_TP_PIE}, "bad buffer size ''"},
      {{"--buffer-size", "17179869185G", CLI_TP_PIE}, "bad buffer size"},
      {{"--buffer-size", "99999999999999999999999", CLI_TP_PIE}, "bad buffer size"},
      // Issue 17: above the largest ring (256 sub-buffers of 1 MiB) was cut to 256M without a word.
      {{"--buffer-size", "257M", CLI_TP_PIE},
       "bad buffer size '257M': use a size from 16k to 256M"},
      {{"--buffer-size", "268435457", CLI_TP_PIE}, "bad buffer size '268435457'"},
      {{"--buffer-size", "4G", CLI_TP_PIE}, "bad buffer size '4G'"},
      // The budget must hold one ring with its header (what the runtime checks at start).
      {{"--buffer-budget", "1M", CLI_TP_PIE}, "bad buffer budget '1M': use a size that holds one ring of 1M"},
      {{"--buffer-size", "64k", "--buffer-budget", "64k", CLI_TP_PIE}, "bad buffer budget '64k'"},
      {{"--buffer-budget", "x", CLI_TP_PIE}, "bad buffer budget 'x'"},
      {{"--buffer-budget", "2T", CLI_TP_PIE}, "bad buffer budget '2T'"},
      {{"-e", "", CLI_TP_PIE}, "empty event pattern"},
      {{"-e", " , ", CLI_TP_PIE}, "empty event pattern"},
      {{"-e"}, "option --events needs a value"},
      {{"-o", "", CLI_TP_PIE}, "empty output directory"},
      {{"--bogus", CLI_TP_PIE}, "unknown option '--bogus'"},
      {{"-x", CLI_TP_PIE}, "unknown option '-x'"},
  };
  for (const auto& [args, message] : cases) {
    const RunResult r = Record(args, RunOptions{dir_, {}, 120});
    EXPECT_EQ(r.status, 2) << testing::PrintToString(args) << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, message)) << testing::PrintToString(args) << ": " << r.err;
  }
  EXPECT_TRUE(ListDir(dir_).empty());  // nothing was created
}

TEST_F(CliRecord, OutputDirectoryAlreadyUsed) {
  const std::string trace = dir_ + "/trace";
  ASSERT_EQ(::mkdir(trace.c_str(), 0700), 0);
  WriteFile(trace + "/something", "x");
  const RunResult r = Record({"-o", trace, CLI_TP_PIE, "exit", "0"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "exists and is not empty")) << r.err;
  // An empty existing directory is used.
  const std::string empty = dir_ + "/empty";
  ASSERT_EQ(::mkdir(empty.c_str(), 0755), 0);
  const RunResult ok = Record({"-o", empty, CLI_TP_PIE, "exit", "0"});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_TRUE(PathExists(empty + "/metadata"));
  ExpectPermissions(empty);
  // A file is not a directory.
  const RunResult file = Record({"-o", trace + "/something", CLI_TP_PIE, "exit", "0"});
  EXPECT_EQ(file.status, 2) << file.err;
  // A symbolic link is refused (the runtime would refuse it too).
  ASSERT_EQ(::symlink(empty.c_str(), (dir_ + "/link").c_str()), 0);
  const RunResult link = Record({"-o", dir_ + "/link", CLI_TP_PIE, "exit", "0"});
  EXPECT_EQ(link.status, 2) << link.err;
  EXPECT_TRUE(Contains(link.err, "is a symbolic link")) << link.err;
  // A directory that cannot be created.
  const RunResult missing = Record({"-o", dir_ + "/no/such/dir", CLI_TP_PIE, "exit", "0"});
  EXPECT_EQ(missing.status, 1) << missing.err;
  EXPECT_TRUE(Contains(missing.err, "cannot create the trace directory")) << missing.err;
}

// The program starts with the signal state `record` was started with: a signal ignored by its
// launcher (`nohup`, `trap '' HUP`) stays ignored, the forwarded ones `record` handles are back to
// their default, and none is left blocked (record blocks them while it starts the program).
TEST_F(CliRecord, TheProgramGetsTheSignalStateRecordWasStartedWith) {
  // `sh -c 'exec CLI'` runs the CLI by path, without the emulator in front of it.
  if (hushtest::Emulated()) GTEST_SKIP() << "runs the CLI through sh: not under qemu-user";
  const auto status_mask = [](const std::string& status, const std::string& field) {
    const std::size_t at = status.find("\n" + field + ":\t");
    return at == std::string::npos ? ~0ull : std::stoull(status.substr(at + field.size() + 3, 16), nullptr, 16);
  };
  const auto bit = [](int sig) { return 1ull << (sig - 1); };
  const std::string command = "trap '' HUP; exec '" + HushtraceCli() + "' record -o '" + dir_ +
                              "/trace' cat /proc/self/status";
  const RunResult r = RunCommand({"sh", "-c", command});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::uint64_t ignored = status_mask(r.out, "SigIgn"), blocked = status_mask(r.out, "SigBlk");
  ASSERT_NE(ignored, ~0ull) << r.out;
  EXPECT_NE(ignored & bit(SIGHUP), 0u) << r.out;  // ignored by the launcher: still ignored
  for (int sig : {SIGINT, SIGTERM, SIGUSR2}) EXPECT_EQ(ignored & bit(sig), 0u) << sig << "\n" << r.out;
  for (int sig : {SIGHUP, SIGINT, SIGTERM, SIGUSR2}) EXPECT_EQ(blocked & bit(sig), 0u) << sig << "\n" << r.out;
}

TEST_F(CliRecord, ProgramCannotRun) {
  const RunResult r = Record({"-o", dir_ + "/trace", dir_ + "/no-such-program"});
  EXPECT_EQ(r.status, 127) << r.err;
  EXPECT_TRUE(
      Contains(r.err, "cannot run '" + dir_ + "/no-such-program': No such file or directory"))
      << r.err;
  EXPECT_FALSE(PathExists(dir_ + "/trace"));  // removed
  const RunResult p = Record({"-o", dir_ + "/trace", "hushtrace-no-such-program-in-path"});
  EXPECT_EQ(p.status, 127) << p.err;
  EXPECT_TRUE(CleanStderr(p.err)) << p.err;
}

TEST_F(CliRecord, ProgramWithoutRuntime) {
  const RunResult r = Record({"-o", dir_ + "/trace", "sh", "-c", "exit 5"});
  EXPECT_EQ(r.status, 5) << r.err;
  EXPECT_TRUE(Contains(r.err, "warning: no trace was written to " + dir_ + "/trace")) << r.err;
  EXPECT_FALSE(PathExists(dir_ + "/trace"));  // it was created for nothing: removed
}

}  // namespace
}  // namespace hush::clitest
