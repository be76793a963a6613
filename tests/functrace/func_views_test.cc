// Function names and profiles in every view of a `record --functions` trace, through the CLI:
//   - `export` chrome and perfetto, `dump` and `report` name functions (demangled symbols), never
//     "0x..." addresses;
//   - `report` on a recursive program agrees with uftrace's `report` on the same program (the
//     same binary, patched by both): calls per function equal, total time counts the outermost
//     frames only (so fib's total is its one outermost call, and inside main's), self time
//     excludes callees (the self times add up to main's total);
//   - `report --callers/--callees` and `export --format folded`.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "emulated_exec.h"
#include "runtime/test_util.h"

namespace {

using hushtest::ChildEnv;
using hushtest::ProcessResult;
using hushtest::ReadFile;
using hushtest::RunProcess;
using hushtest::TempDir;

const std::string kCli = HUSH_FT_CLI;
// What reads the traces: in the cross build the native hushtrace (x86-64) reads what the aarch64
// program recorded under the emulator; elsewhere the same CLI.
const std::string kReader = HUSH_FT_READER_CLI;
const std::string kProg = std::string(HUSH_FT_DIR) + "/ft_prog_plain";

std::vector<std::string> Env() {
#if defined(__SANITIZE_ADDRESS__)
  // The preloaded runtime (or uftrace's libmcount) comes before libasan.
  const char* asan = std::getenv("ASAN_OPTIONS");
  return ChildEnv(
      {"ASAN_OPTIONS=" + std::string(asan != nullptr ? asan : "") + ":verify_asan_link_order=0"});
#else
  return ChildEnv();
#endif
}

ProcessResult Cmd(const std::vector<std::string>& argv, int timeout_s = 60) {
  return RunProcess(argv, Env(), timeout_s);
}

// One `record --functions` trace of ft_prog_plain's recursion mode (fib(22), is_even/is_odd),
// shared by the tests of this file.
class FuncViewsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir("ft_views");
    dir_ = tmp_->Sub("t");
    const ProcessResult r = Cmd({kCli, "record", "--functions", "main,fib,is_even,is_odd",
                                 "--buffer-size", "8M", "-o", dir_, "--", kProg, "recursion"},
                                120);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  }
  static void TearDownTestSuite() {
    delete tmp_;
    tmp_ = nullptr;
  }
  static TempDir* tmp_;
  static std::string dir_;
};
TempDir* FuncViewsTest::tmp_ = nullptr;
std::string FuncViewsTest::dir_;

// "1.540 ms" (uftrace) or "1.54 ms" (hushtrace) -> ns.
double ToNs(const std::string& number, const std::string& unit) {
  const double v = std::strtod(number.c_str(), nullptr);
  if (unit == "ns") return v;
  if (unit == "us") return v * 1e3;
  if (unit == "ms") return v * 1e6;
  if (unit == "s") return v * 1e9;
  ADD_FAILURE() << "unit '" << unit << "'";
  return -1;
}

struct Row {
  long calls = -1;
  double total = -1, self = -1, max = -1;  // ns
};

// Rows of `hushtrace report` tables: "  NAME  CALLS TOTAL U SELF U AVG U MAX U", keyed by the
// name without its parameter list.
std::map<std::string, Row> HushRows(const std::string& out, const std::string& title) {
  std::map<std::string, Row> rows;
  std::istringstream in(out);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind(title, 0) == 0) {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.rfind("  ", 0) != 0) break;
    std::vector<std::string> t;
    std::istringstream words(line);
    for (std::string w; words >> w;) t.push_back(w);
    if (t.size() < 10) continue;
    const std::size_t n = t.size();
    std::string name;
    for (std::size_t i = 0; i + 9 < n; ++i) name += (i ? " " : "") + t[i];
    Row r;
    r.calls = std::atol(t[n - 9].c_str());
    r.total = ToNs(t[n - 8], t[n - 7]);
    r.self = ToNs(t[n - 6], t[n - 5]);
    r.max = ToNs(t[n - 2], t[n - 1]);
    rows[name.substr(0, name.find('('))] = r;
  }
  return rows;
}

// Rows of `uftrace report -f total,total-max,self,call`: "TOTAL U MAX U SELF U CALLS NAME".
std::map<std::string, Row> UftraceRows(const std::string& out) {
  std::map<std::string, Row> rows;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> t;
    std::istringstream words(line);
    for (std::string w; words >> w;) t.push_back(w);
    if (t.size() != 8 || t[7] == "Function") continue;
    Row r;
    r.total = ToNs(t[0], t[1]);
    r.max = ToNs(t[2], t[3]);
    r.self = ToNs(t[4], t[5]);
    r.calls = std::atol(t[6].c_str());
    rows[t[7]] = r;
  }
  return rows;
}

TEST_F(FuncViewsTest, ChromeJsonNamesFunctions) {
  const std::string out = tmp_->Sub("t.json");
  const ProcessResult e = Cmd({kReader, "export", dir_, "-f", "chrome", "-o", out});
  ASSERT_TRUE(e.exited && e.exit_code == 0) << e.Describe();
  // Python's json module parses the file; the names of the function slices, sorted and unique.
  const ProcessResult py = Cmd({"/usr/bin/env", "python3", "-c",
                                "import json,sys\n"
                                "d=json.load(open(sys.argv[1]))\n"
                                "print('\\n'.join(sorted({e['name'] for e in d['traceEvents'] if "
                                "e.get('cat')=='func' and e['ph']=='B'})))",
                                out});
  ASSERT_TRUE(py.exited && py.exit_code == 0) << py.Describe();
  EXPECT_EQ(py.out, "fib(int)\nis_even(unsigned int)\nis_odd(unsigned int)\nmain\n");
}

TEST_F(FuncViewsTest, PerfettoPacketsNameFunctions) {
  const std::string out = tmp_->Sub("t.pftrace");
  const ProcessResult e = Cmd({kReader, "export", dir_, "-f", "perfetto", "-o", out});
  ASSERT_TRUE(e.exited && e.exit_code == 0) << e.Describe();
  const char* source = std::getenv("HUSH_SOURCE_DIR");  // set by ctest
  ASSERT_NE(source, nullptr) << "run under ctest (HUSH_SOURCE_DIR)";
  const std::string proto_dir = std::string(source) + "/tests/export";
  const ProcessResult dec =
      Cmd({"/bin/sh", "-c",
           "protoc --proto_path='" + proto_dir +
               "' --decode=perfetto.protos.Trace perfetto_subset.proto < '" + out + "'"});
  ASSERT_TRUE(dec.exited && dec.exit_code == 0)
      << "protoc (Debian package protobuf-compiler, scripts/setup.sh): " << dec.Describe();
  // Interned event names: `name: "fib(int)"` in the packets' interned_data.
  for (const char* name : {"fib(int)", "is_even(unsigned int)", "is_odd(unsigned int)", "main"}) {
    EXPECT_NE(dec.out.find("name: \"" + std::string(name) + "\""), std::string::npos) << name;
  }
  EXPECT_EQ(dec.out.find("name: \"0x"), std::string::npos);
}

TEST_F(FuncViewsTest, DumpNamesFunctionEventsAndRefusesUnknownEvents) {
  const ProcessResult d = Cmd({kReader, "dump", dir_, "-e", "func:entry"});
  ASSERT_TRUE(d.exited && d.exit_code == 0) << d.Describe();
  std::istringstream in(d.out);
  std::map<std::string, long> by_name;
  for (std::string line; std::getline(in, line);) {
    const std::size_t f = line.find(" func=\"");
    ASSERT_NE(f, std::string::npos) << line;
    ++by_name[line.substr(f + 7, line.size() - f - 8)];
  }
  EXPECT_EQ(by_name["fib(int)"], 57313);  // fib(22) calls: 2 fib(23) - 1
  EXPECT_EQ(by_name["main"], 1);
  const ProcessResult bad = Cmd({kReader, "dump", dir_, "-e", "nosuch:*"});
  EXPECT_TRUE(bad.exited && bad.exit_code == 2) << bad.Describe();
  EXPECT_NE(bad.err.find("no event matching 'nosuch:*'"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out, "");
}

TEST_F(FuncViewsTest, ReportAgreesWithUftraceOnRecursion) {
  if (hushtest::Emulated()) {
    GTEST_SKIP() << "uftrace (the host's, x86-64) cannot trace the cross build's aarch64 program";
  }
  const ProcessResult rep = Cmd({kReader, "report", dir_});
  ASSERT_TRUE(rep.exited && rep.exit_code == 0) << rep.Describe();
  const std::map<std::string, Row> hush = HushRows(rep.out, "functions (by total time)");
  ASSERT_EQ(hush.size(), 4u) << rep.out;

  const std::string udir = tmp_->Sub("uftrace.data");
  // --no-sched: uftrace would otherwise take the time a frame was preempted out of its self time.
  // --no-libcall: nor the time of library calls (the sanitizer builds call their runtime from
  // every function), which hushtrace counts as the caller's own.
  const ProcessResult ur = Cmd({"/usr/bin/uftrace", "record", "-P", ".", "--no-sched",
                                "--no-libcall", "-d", udir, kProg, "recursion"},
                               120);
  ASSERT_TRUE(ur.exited && ur.exit_code == 0)
      << "uftrace (Debian package uftrace, scripts/setup.sh): " << ur.Describe();
  const ProcessResult urep =
      Cmd({"/usr/bin/uftrace", "report", "-d", udir, "-f", "total,total-max,self,call"});
  ASSERT_TRUE(urep.exited && urep.exit_code == 0) << urep.Describe();
  const std::map<std::string, Row> uf = UftraceRows(urep.out);

  for (const char* name : {"main", "fib", "is_even", "is_odd"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(hush.count(name)) << rep.out;
    ASSERT_TRUE(uf.count(name)) << urep.out;
    const Row& h = hush.at(name);
    const Row& u = uf.at(name);
    // uftrace records at most 1024 frames deep: is_even(2000) nests 2001 deep, so uftrace sees
    // its first 1024 frames only (is_even 501 + 512 calls); fib(22) and main are within reach.
    if (std::string(name) == "main" || std::string(name) == "fib")
      EXPECT_EQ(h.calls, u.calls);
    else
      EXPECT_LE(u.calls, h.calls);
    // Total within the frames that contain the function; never more than main's.
    EXPECT_LE(h.total, hush.at("main").total);
    EXPECT_LE(u.total, uf.at("main").total);
    EXPECT_LE(h.self, h.total * 1.001);
  }
  // fib(22) is called once from main: its total is that one outermost call, for both tools
  // (printed with 3 significant digits: equal within rounding).
  for (const auto* rows : {&hush, &uf}) {
    const Row& fib = rows->at("fib");
    EXPECT_NEAR(fib.total, fib.max, fib.max * 0.01);
    // fib calls nothing else traced: its self times add up to its outermost call.
    EXPECT_NEAR(fib.self, fib.total, fib.total * 0.01);
  }
  // Self time excludes callees: with every function of the run under main traced, the self
  // times add up to main's total (hushtrace; uftrace also traces library calls).
  double self_sum = 0;
  for (const auto& [name, r] : hush) self_sum += r.self;
  EXPECT_NEAR(self_sum, hush.at("main").total, hush.at("main").total * 0.02) << rep.out;
}

TEST_F(FuncViewsTest, CallersAndCallees) {
  const ProcessResult callees = Cmd({kReader, "report", dir_, "--callees", "main"});
  ASSERT_TRUE(callees.exited && callees.exit_code == 0) << callees.Describe();
  const std::map<std::string, Row> from_main = HushRows(callees.out, "callees of main");
  ASSERT_EQ(from_main.size(), 2u) << callees.out;  // fib(22) once, is_even(1001) and (2000)
  EXPECT_EQ(from_main.at("fib").calls, 1);
  EXPECT_EQ(from_main.at("is_even").calls, 2);

  const ProcessResult callers = Cmd({kReader, "report", dir_, "--callers", "is_odd(unsigned int)"});
  ASSERT_TRUE(callers.exited && callers.exit_code == 0) << callers.Describe();
  const std::map<std::string, Row> of_odd = HushRows(callers.out, "callers of is_odd");
  ASSERT_EQ(of_odd.size(), 1u) << callers.out;
  EXPECT_EQ(of_odd.at("is_even").calls, 501 + 1000);  // is_even(n > 0) calls is_odd(n - 1)

  const ProcessResult fib = Cmd({kReader, "report", dir_, "--callers", "fib"});
  ASSERT_TRUE(fib.exited && fib.exit_code == 0) << fib.Describe();
  const std::map<std::string, Row> of_fib = HushRows(fib.out, "callers of fib");
  EXPECT_EQ(of_fib.at("main").calls, 1);
  EXPECT_EQ(of_fib.at("fib").calls, 57313 - 1);

  const ProcessResult none = Cmd({kReader, "report", dir_, "--callers", "nosuch"});
  EXPECT_TRUE(none.exited && none.exit_code == 2) << none.Describe();
}

TEST_F(FuncViewsTest, FoldedStacks) {
  const std::string out = tmp_->Sub("t.folded");
  const ProcessResult e = Cmd({kReader, "export", dir_, "-f", "folded", "-o", out});
  ASSERT_TRUE(e.exited && e.exit_code == 0) << e.Describe();
  std::istringstream in(ReadFile(out));
  std::map<std::string, long long> stacks;
  long long sum = 0;
  for (std::string line; std::getline(in, line);) {
    const std::size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    const long long ns = std::atoll(line.c_str() + sp + 1);
    EXPECT_GT(ns, 0) << line;
    stacks[line.substr(0, sp)] = ns;
    sum += ns;
  }
  // Every stack starts at main; fib's deepest stack is main and 22 fib frames (n = 22 to 1).
  std::size_t deepest_fib = 0;
  for (const auto& [stack, ns] : stacks) {
    EXPECT_EQ(stack.rfind("main", 0), 0u) << stack;
    std::size_t fibs = 0;
    for (std::size_t p = stack.find("fib(int)"); p != std::string::npos;
         p = stack.find("fib(int)", p + 1))
      ++fibs;
    deepest_fib = std::max(deepest_fib, fibs);
  }
  EXPECT_EQ(deepest_fib, 22u);
  EXPECT_TRUE(stacks.count("main;is_even(unsigned int);is_odd(unsigned int)"));
  // The self times add up to main's total (report), within its 3 printed digits.
  const ProcessResult rep = Cmd({kReader, "report", dir_});
  const std::map<std::string, Row> hush = HushRows(rep.out, "functions (by total time)");
  ASSERT_TRUE(hush.count("main")) << rep.out;
  EXPECT_NEAR(static_cast<double>(sum), hush.at("main").total, hush.at("main").total * 0.01);
}

// Runs `hushtrace ARGS > out` (a JSON document, too large for a pipe's worth of test output).
void CliToFile(const std::vector<std::string>& args, const std::string& out) {
  std::string cmd = "'" + kReader + "'";
  for (const std::string& a : args) cmd += " '" + a + "'";
  const ProcessResult r = Cmd({"/bin/sh", "-c", cmd + " > '" + out + "'"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
}

// Runs python3 on `script` with `args`; its stdout.
std::string Python(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/env", "python3", "-c", script};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessResult py = Cmd(argv);
  EXPECT_TRUE(py.exited && py.exit_code == 0) << py.Describe();
  return py.out;
}

TEST_F(FuncViewsTest, ReportJson) {
  const std::string out = tmp_->Sub("report.json");
  CliToFile({"report", dir_, "--format", "json"}, out);
  EXPECT_EQ(Python("import json,sys\n"
                   "d=json.load(open(sys.argv[1]))\n"
                   "f={r['name']:r for r in d['functions']}\n"
                   "m=f['main']\n"
                   "print(f['fib(int)']['calls'], f['is_odd(unsigned int)']['calls'], m['calls'],\n"
                   "      all(r['total_ns']<=m['total_ns'] and r['self_ns']<=r['total_ns'] for r "
                   "in f.values()),\n"
                   "      d['complete'], d['lost'], d['events']==sum(e['count'] for e in "
                   "d['event_counts']))",
                   {out}),
            "57313 1501 1 True True {'events_discarded': 0, 'packets_missing': 0, "
            "'streams_cut_short': 0} True\n");
}

TEST_F(FuncViewsTest, DumpJsonLines) {
  const std::string out = tmp_->Sub("dump.jsonl");
  CliToFile({"dump", dir_, "-e", "func:exit", "--format", "json"}, out);
  EXPECT_EQ(Python("import json,sys,collections\n"
                   "c=collections.Counter()\n"
                   "prev=-1\n"
                   "for line in open(sys.argv[1]):\n"
                   "  e=json.loads(line)\n"
                   "  assert e['name']=='func:exit' and e['ts_ns']>=prev and "
                   "isinstance(e['fields']['addr'], int)\n"
                   "  prev=e['ts_ns']\n"
                   "  c[e['func']]+=1\n"
                   "print(c['fib(int)'], c['is_even(unsigned int)'], c['main'])",
                   {out}),
            "57313 1502 1\n");  // is_even(1001): 501 calls, is_even(2000): 1001
}

TEST_F(FuncViewsTest, HistOfAFunction) {
  const ProcessResult text = Cmd({kReader, "hist", dir_, "--function", "fib"});
  ASSERT_TRUE(text.exited && text.exit_code == 0) << text.Describe();
  EXPECT_NE(text.out.find("function fib call durations, 57313 samples"), std::string::npos)
      << text.out;
  const std::string out = tmp_->Sub("hist.json");
  CliToFile({"hist", dir_, "--function", "is_*", "--format", "json"}, out);
  EXPECT_EQ(Python("import json,sys\n"
                   "d=json.load(open(sys.argv[1]))\n"
                   "print(d['count'], sum(b['count'] for b in d['buckets']), d['unit'],\n"
                   "      d['min']<=d['percentiles']['p50']<=d['percentiles']['p99']<=d['max'])",
                   {out}),
            "3003 3003 ns True\n");
  const ProcessResult none = Cmd({kReader, "hist", dir_, "--function", "nosuch"});
  EXPECT_TRUE(none.exited && none.exit_code == 2) << none.Describe();
  EXPECT_NE(none.err.find("matches 'nosuch'"), std::string::npos) << none.err;
}

// A truncated stream: the header names the loss and a WARNING line says what it is.
TEST_F(FuncViewsTest, TruncatedStreamHeaderAndWarningAgree) {
  const std::string copy = tmp_->Sub("cut");
  const ProcessResult cp = Cmd({"/bin/cp", "-r", dir_, copy});
  ASSERT_TRUE(cp.exited && cp.exit_code == 0) << cp.Describe();
  // The largest stream loses its last 100 bytes.
  const ProcessResult cut = Cmd(
      {"/bin/sh", "-c", "f=$(ls -S '" + copy + "'/stream_* | head -n1); truncate -s -100 \"$f\""});
  ASSERT_TRUE(cut.exited && cut.exit_code == 0) << cut.Describe();
  const ProcessResult rep = Cmd({kReader, "report", copy});
  ASSERT_TRUE(rep.exited) << rep.Describe();
  EXPECT_NE(rep.out.find("  lost       1 stream cut short (WARNING lines below)"),
            std::string::npos)
      << rep.out;
  EXPECT_NE(rep.out.find("\nWARNING: " + copy + "/stream_"), std::string::npos) << rep.out;
  EXPECT_NE(rep.out.find("last packet truncated"), std::string::npos) << rep.out;
}

// Flight mode: the events overwritten are the window kept, said in the header, not a WARNING.
TEST(FuncViewsFlightTest, OverwrittenEventsAreTheWindowNotALoss) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer's background thread is running by the time a flight session patches, and
  // ft_prog_plain's entries are gcc's five-NOP kind, which the runtime refuses to patch while
  // another thread runs (FunctraceTest.SplitNopsRefusedWhenOtherThreadsRun): nothing to report.
  GTEST_SKIP() << "split-NOP entries are refused with TSan's background thread running";
#endif
  TempDir tmp("ft_flight");
  const std::string dir = tmp.Sub("t");
  const ProcessResult r = Cmd({kCli, "record", "--mode", "flight", "--buffer-size", "64k",
                               "--functions", "fib", "-o", dir, "--", kProg, "recursion"},
                              120);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  const ProcessResult rep = Cmd({kReader, "report", dir});
  ASSERT_TRUE(rep.exited && rep.exit_code == 0) << rep.Describe();
  EXPECT_NE(rep.out.find("  lost       none\n"), std::string::npos) << rep.out;
  EXPECT_NE(rep.out.find("  window     flight mode kept "), std::string::npos) << rep.out;
  EXPECT_NE(rep.out.find(" older events overwritten\n"), std::string::npos) << rep.out;
  EXPECT_EQ(rep.out.find("WARNING:"), std::string::npos) << rep.out;  // the completeness check
}

TEST(CliVersionTest, ShortAndLongFormsAndHelpNamesThem) {
  const ProcessResult v = Cmd({kCli, "-V"});
  const ProcessResult version = Cmd({kCli, "--version"});
  ASSERT_TRUE(v.exited && v.exit_code == 0) << v.Describe();
  EXPECT_EQ(v.out.rfind("hushtrace ", 0), 0u) << v.out;
  EXPECT_EQ(v.out, version.out);
  const ProcessResult help = Cmd({kCli, "--help"});
  EXPECT_NE(help.out.find("'hushtrace -V' (--version)"), std::string::npos) << help.out;
}

// --min-duration traces (func:call events, written at return, children before their parent):
// the same outermost-frame totals, for functions and for call edges.
TEST(FuncViewsMinDurationTest, RecursiveTotalsCountOutermostCalls) {
  TempDir tmp("ft_views_min");
  const std::string dir = tmp.Sub("t");
  const ProcessResult r = Cmd({kCli, "record", "--functions", "main,fib,is_even,is_odd",
                               "--min-duration", "1us", "-o", dir, "--", kProg, "recursion"},
                              120);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  const ProcessResult rep = Cmd({kReader, "report", dir});
  ASSERT_TRUE(rep.exited && rep.exit_code == 0) << rep.Describe();
  const std::map<std::string, Row> rows = HushRows(rep.out, "functions (by total time)");
  ASSERT_TRUE(rows.count("fib") && rows.count("main")) << rep.out;
  // fib(22) runs once from main: the nested fib calls add nothing to the total.
  EXPECT_EQ(rows.at("fib").total, rows.at("fib").max) << rep.out;
  EXPECT_LE(rows.at("fib").total, rows.at("main").total) << rep.out;
  const ProcessResult callers = Cmd({kReader, "report", dir, "--callers", "fib"});
  const std::map<std::string, Row> of_fib = HushRows(callers.out, "callers of fib");
  ASSERT_TRUE(of_fib.count("main") && of_fib.count("fib")) << callers.out;
  EXPECT_EQ(of_fib.at("main").total, rows.at("fib").total) << callers.out;
  EXPECT_EQ(of_fib.at("fib").total, 0) << callers.out;  // always nested in another fib frame
}

// The documented Python route: Debian's python3-bt2 (babeltrace2's bindings) reads the trace with
// examples/hushtrace_bt2.py, and agrees with `report --format json` on every count.
TEST_F(FuncViewsTest, PythonBt2ExampleReadsTheTrace) {
  const char* source = std::getenv("HUSH_SOURCE_DIR");  // set by ctest
  ASSERT_NE(source, nullptr) << "run under ctest (HUSH_SOURCE_DIR)";
  const std::string bt2_out = tmp_->Sub("bt2.json"), report = tmp_->Sub("report_bt2.json");
  const ProcessResult py =
      Cmd({"/bin/sh", "-c",
           "/usr/bin/python3 '" + std::string(source) + "/examples/hushtrace_bt2.py' '" + dir_ +
               "' > '" + bt2_out + "'"});
  ASSERT_TRUE(py.exited && py.exit_code == 0)
      << "python3-bt2 (Debian package, scripts/setup.sh): " << py.Describe();
  CliToFile({"report", dir_, "--format", "json"}, report);
  // babeltrace2 converts clock values to ns through a double: with qemu's CNTVCT_EL0, counted
  // from the epoch (~1.8e18 ns), that rounds by up to a few hundred ns (docs/architecture.md,
  // "aarch64"); a native TSC counts from boot.
  const std::string tolerance = hushtest::Emulated() ? "1000" : "2";
  EXPECT_EQ(Python("import json,sys\n"
                   "b=json.load(open(sys.argv[1]))\n"
                   "r=json.load(open(sys.argv[2]))\n"
                   "t=int(sys.argv[3])\n"
                   "print(b['events']=={e['name']:e['count'] for e in r['event_counts']},\n"
                   "      b['threads']=={str(t['tid']):t['events'] for t in r['threads']},\n"
                   "      abs(b['first_epoch_ns']-r['start_epoch_ns'])<=t,\n"
                   "      abs(b['last_epoch_ns']-b['first_epoch_ns']-r['duration_ns'])<=2*t,\n"
                   "      b['events']['func:entry'])",
                   {bt2_out, report, tolerance}),
            "True True True True 60317\n");  // fib 57313 + is_even 1502 + is_odd 1501 + main
}

}  // namespace
