// `hushtrace hist` on synthetic traces with known distributions (exact timestamps, freq 1 GHz).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "reader/reader_test_util.h"

namespace hush::reader::test {
namespace {

const std::string kMeta = SynthMetadata(
    "event { name = \"s:req\"; id = 3; stream_id = 0; model.emf.uri = \"span\";\n"
    "  fields := struct { enum : uint8_t { begin = 0, end = 1 } phase; }; };\n"
    "event { name = \"s:val\"; id = 4; stream_id = 0; model.emf.uri = \"event\";\n"
    "  fields := struct { uint32_t x; string { encoding = UTF8; } label; }; };\n");

std::string Begin() { return std::string(1, '\0'); }

class HistCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = HushtraceBinary();
    if (bin_.empty()) GTEST_SKIP() << "HUSH_BINARY_DIR is not set (run through ctest)";
    // Thread 4242: s:req spans of 1, 2, ..., 1000 ns and s:val x = 1..100.
    PacketBuilder a(0, 4242, "main");
    std::uint64_t t = 0;
    for (int d = 1; d <= 1000; ++d) {
      a.Compact(3, t, Begin()).Compact(3, t + static_cast<std::uint64_t>(d), "\x01");
      t += static_cast<std::uint64_t>(d) + 10;
    }
    for (std::uint32_t x = 1; x <= 100; ++x) a.Compact(4, t++, Le(x) + "l" + std::string(1, '\0'));
    // Thread 4343: an end without a begin, then a begin never closed: neither is counted.
    PacketBuilder b(0, 4343, "other");
    b.Compact(3, 5, "\x01").Compact(3, 6, Begin());
    trace_ = std::make_unique<TempTrace>(kMeta, std::vector<std::string>{a.Build(), b.Build()});
  }
  CommandResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), bin_);
    return RunCommand(args);
  }
  // The number after `key ` on the line starting with `prefix`.
  static double Number(const std::string& out, const std::string& key) {
    const std::size_t at = out.find(" " + key + " ");
    if (at == std::string::npos) return NAN;
    return std::stod(out.substr(at + key.size() + 2));
  }
  std::string bin_;
  std::unique_ptr<TempTrace> trace_;
};

TEST_F(HistCliTest, SpanDurationsUniform1To1000) {
  const CommandResult res = Run({"hist", trace_->dir(), "--span", "s:req"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_NE(res.out.find("s:req span durations, 1000 samples"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("min 1 ns  avg 500.5 ns  max 1 us"), std::string::npos) << res.out;
  // Nearest-rank percentiles: 500, 900, 990, 999 ns, reported within 1/128.
  const double want[] = {500, 900, 990, 999};
  const char* keys[] = {"p50", "p90", "p99", "p99.9"};
  for (int i = 0; i < 4; ++i) {
    const double got = Number(res.out, keys[i]);
    EXPECT_NEAR(got, want[i], want[i] / 128) << keys[i] << "\n" << res.out;
  }
  // log2 rows: [1,2) holds 1 sample, [256,512) 256, [512,1024) 489 (the longest bar).
  EXPECT_NE(res.out.find("[1 ns, 2 ns)                         1 #\n"), std::string::npos)
      << res.out;
  EXPECT_NE(res.out.find("[256 ns, 512 ns)                   256 "), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("[512 ns, 1.024 us)                 489 " + std::string(50, '#') + "\n"),
            std::string::npos)
      << res.out;
  EXPECT_NE(
      res.out.find("(1 span ends without a begin, 1 spans still open at the end: not counted)"),
      std::string::npos)
      << res.out;
}

TEST_F(HistCliTest, FieldValuesAreExactBelow128) {
  const CommandResult res = Run({"hist", trace_->dir(), "--event", "s:val", "--field", "x"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_NE(res.out.find("s:val field x, 100 samples"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("min 1  avg 50.5  max 100\n"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("p50 50  p90 90  p99 99  p99.9 100\n"), std::string::npos) << res.out;
}

TEST_F(HistCliTest, RejectsUnknownEventsAndFields) {
  EXPECT_EQ(Run({"hist", trace_->dir()}).exit_code, 2);
  CommandResult res = Run({"hist", trace_->dir(), "--span", "s:nope"});
  EXPECT_EQ(res.exit_code, 2);
  EXPECT_NE(res.err.find("no event 's:nope'"), std::string::npos) << res.err;
  res = Run({"hist", trace_->dir(), "--span", "s:val"});
  EXPECT_EQ(res.exit_code, 2);
  EXPECT_NE(res.err.find("is not a span"), std::string::npos) << res.err;
  res = Run({"hist", trace_->dir(), "--event", "s:val", "--field", "label"});
  EXPECT_EQ(res.exit_code, 2);
  EXPECT_NE(res.err.find("not numeric"), std::string::npos) << res.err;
  EXPECT_EQ(Run({"hist", trace_->dir(), "--event", "s:val", "--field", "y"}).exit_code, 2);
  EXPECT_EQ(Run({"hist", trace_->dir(), "--event", "s:val"}).exit_code, 2);
  EXPECT_EQ(Run({"hist", trace_->dir() + "/missing", "--span", "s:req"}).exit_code, 1);
}

}  // namespace
}  // namespace hush::reader::test

namespace hush::reader::test {
namespace {

// Progress lines appear on a terminal (a pseudo-terminal from script(1)) and never in a pipe.
TEST(ProgressTest, OnATerminalOnly) {
  const std::string bin = HushtraceBinary();
  if (bin.empty()) GTEST_SKIP() << "HUSH_BINARY_DIR is not set (run through ctest)";
  PacketBuilder p(0, 4242, "main");
  for (std::uint64_t i = 0; i < 140000; ++i) p.Compact(1, i * 10);
  const TempTrace t(
      SynthMetadata(
          "event { name = \"s:tick\"; id = 1; stream_id = 0; model.emf.uri = \"instant\";\n"
          "  fields := struct { }; };\n"),
      {p.Build()});
  const std::string out = t.dir() + "/out.json";
  const std::string cmd = "HUSHTRACE_PROGRESS_INTERVAL_MS=0 '" + bin + "' export '" + t.dir() +
                          "' --format chrome -o '" + out + "'";
  const CommandResult tty = RunCommand({"/usr/bin/script", "-qfec", cmd, "/dev/null"});
  ASSERT_EQ(tty.exit_code, 0) << tty.err << tty.out;
  EXPECT_NE(tty.out.find("hushtrace export:"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("65536 events"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("131072 events"), std::string::npos) << tty.out;
  const CommandResult pipe = RunCommand({"/bin/sh", "-c", cmd});
  ASSERT_EQ(pipe.exit_code, 0) << pipe.err;
  EXPECT_EQ(pipe.err, "");
  // dump with its output on the terminal stays quiet; with stdout redirected it shows progress.
  const CommandResult dump_tty = RunCommand(
      {"/usr/bin/script", "-qfec",
       "HUSHTRACE_PROGRESS_INTERVAL_MS=0 '" + bin + "' dump '" + t.dir() + "'", "/dev/null"});
  EXPECT_EQ(dump_tty.out.find("hushtrace dump:"), std::string::npos);
  const CommandResult dump_file =
      RunCommand({"/usr/bin/script", "-qfec",
                  "HUSHTRACE_PROGRESS_INTERVAL_MS=0 '" + bin + "' dump '" + t.dir() + "' > '" +
                      t.dir() + "/dump.txt'",
                  "/dev/null"});
  EXPECT_NE(dump_file.out.find("hushtrace dump:"), std::string::npos) << dump_file.out;
}

}  // namespace
}  // namespace hush::reader::test

namespace hush::reader::test {
namespace {

// `hushtrace dump --filter` on the same synthetic trace as HistCliTest.
class DumpFilterTest : public HistCliTest {
 protected:
  std::vector<std::string> Dump(const std::string& expr) {
    const CommandResult res = Run({"dump", trace_->dir(), "--filter", expr});
    EXPECT_EQ(res.exit_code, 0) << expr << ": " << res.err;
    std::vector<std::string> rest;
    for (const std::string& l : SplitLines(res.out)) rest.push_back(l.substr(l.find("] tid ") + 6));
    return rest;
  }
};

TEST_F(DumpFilterTest, ComparesIntegersStringsEnumsAndCombines) {
  EXPECT_EQ(Dump("x == 7"), std::vector<std::string>{"4242 s:val x=7 label=\"l\""});
  EXPECT_EQ(Dump("x >= 99").size(), 2u);
  EXPECT_EQ(Dump("x > 0x60 && x <= 100").size(), 4u);  // 97..100
  EXPECT_EQ(Dump("x < 3 || x > 98").size(), 4u);
  EXPECT_EQ(Dump("!(x != 50) && $name == \"s:val\""),
            std::vector<std::string>{"4242 s:val x=50 label=\"l\""});
  EXPECT_EQ(Dump("x == 7.0").size(), 1u);
  EXPECT_EQ(Dump("x == -7").size(), 0u);
  EXPECT_EQ(Dump("label == \"l\" && x < 11").size(), 10u);
  EXPECT_EQ(Dump("label ~ \"[kl]\"").size(), 100u);
  // Enum labels: the spans of thread 4242 (1000 begins, 1000 ends) and 4343 (one of each).
  EXPECT_EQ(Dump("phase == end").size(), 1001u);
  EXPECT_EQ(Dump("phase == \"begin\" && $tid == 4343"),
            std::vector<std::string>{"4343 s:req phase=begin"});
  EXPECT_EQ(Dump("phase == 1 && $thread == \"other\""),
            std::vector<std::string>{"4343 s:req phase=end"});
  EXPECT_EQ(Dump("$name ~ \"s:v*\" && x == 1").size(), 1u);
  // A field the event lacks: the comparison is false, its negation true.
  EXPECT_EQ(Dump("!(x == 1) && $name == \"s:req\"").size(), 2002u);
  EXPECT_EQ(Dump("nosuch == 1").size(), 0u);
  EXPECT_EQ(Dump("label > 3").size(), 0u);  // string field, number: incompatible, false
}

// The filter language's one error style (src/filter/filter.h): the column and a caret under it.
TEST_F(DumpFilterTest, SyntaxErrorsNameTheColumn) {
  const std::string expected =
      "expected a number, a string, a field name, $name, $tid, $thread or '('";
  for (const auto& [bad, column, what] : std::vector<std::tuple<std::string, int, std::string>>{
           {"x ==", 5, expected + " at the end"},
           {"x = 1", 3, "unexpected '='"},
           {"(x == 1", 8, "expected ')'"},
           {"x == 1 &&", 10, expected + " at the end"},
           {"$foo == 1", 1, "unknown variable '$foo' ($name, $tid, $thread)"},
           {"x ~ 3", 5, "'~' needs a pattern: a string (\"net:*\") or a bare word"},
           {"x == \"open", 6, "unterminated string"},
           {"== 1", 1, expected + " instead of '='"},
           {"x == 1 y", 8, "unexpected 'y'"},
           {"$tid == \"1\"", 6, "'==' between a number and a string"}}) {
    const CommandResult res = Run({"dump", trace_->dir(), "--filter", bad});
    EXPECT_EQ(res.exit_code, 2) << bad;
    EXPECT_EQ(res.err, "hushtrace dump: bad filter, column " + std::to_string(column) + ": " +
                           what + "\n  " + bad + "\n  " + std::string(column - 1, ' ') + "^\n")
        << bad;
    EXPECT_EQ(res.out, "") << bad;
  }
}

}  // namespace
}  // namespace hush::reader::test
