// (d) The CLI: `hushtrace dump` and `hushtrace report` on the recorded trace and on synthetic ones.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "hushtrace/reader.h"
#include "reader/reader_test_util.h"

namespace hush::reader::test {
namespace {

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = HushtraceBinary();
    if (bin_.empty()) GTEST_SKIP() << "HUSH_BINARY_DIR is not set (run through ctest)";
    ASSERT_EQ(::access(bin_.c_str(), X_OK), 0) << bin_;
  }
  CommandResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), bin_);
    return RunCommand(args);
  }
  std::string bin_;
};

// "[  1.234567890] tid 1234 rest" -> "rest"; "" when the prefix is malformed.
std::string AfterTid(const std::string& line, std::uint32_t* tid = nullptr) {
  if (line.size() < 16 || line[0] != '[') return "";
  const std::size_t close = line.find("] tid ");
  if (close == std::string::npos || close < 11 || line[close - 10] != '.') return "";
  for (std::size_t i = close - 9; i < close; ++i) {
    if (line[i] < '0' || line[i] > '9') return "";
  }
  const std::size_t space = line.find(' ', close + 6);
  if (space == std::string::npos) return "";
  if (tid != nullptr) *tid = static_cast<std::uint32_t>(std::stoul(line.substr(close + 6)));
  return line.substr(space + 1);
}

std::string Find(const std::vector<std::string>& lines, const std::string& prefix) {
  for (const std::string& l : lines) {
    if (AfterTid(l).rfind(prefix, 0) == 0) return AfterTid(l);
  }
  return "<no line starting with " + prefix + ">";
}

TEST_F(CliTest, DumpPrintsEveryEventInTimeOrder) {
  const RecordedTrace& r = Recorded();
  ASSERT_EQ(r.error, "");
  const CommandResult res = Run({"dump", r.dir});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  // The oversized blob was discarded (see ReportSummarizesTheRecordedTrace): dump says it too.
  EXPECT_EQ(res.err.rfind("hushtrace dump: warning: " + r.dir + "/stream_", 0), 0u) << res.err;
  EXPECT_NE(res.err.find(": 1 events lost (ring full, nested or oversized, or not written)\n"),
            std::string::npos) << res.err;
  EXPECT_EQ(SplitLines(res.err).size(), 1u) << res.err;
  const std::vector<std::string> lines = SplitLines(res.out);
  ASSERT_EQ(lines.size(), r.events.size());
  EXPECT_EQ(lines[0].rfind("[  0.000000000] tid " + std::to_string(r.tids[0]) + " rt:ints seq=0 ", 0), 0u)
      << lines[0];
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::uint32_t tid = 0;
    const std::string rest = AfterTid(lines[i], &tid);
    ASSERT_EQ(rest.substr(0, rest.find(' ')), r.events[i].name) << lines[i];
    ASSERT_EQ(tid, r.events[i].tid) << lines[i];
  }
  EXPECT_EQ(Find(lines, "rt:ints seq=0 "),
            "rt:ints seq=0 i8=-128 i16=0 i32=-15000000 i64=-9223372036854775808 u8=255 u16=65535 "
            "u32=4000000000 u64=0");
  EXPECT_EQ(Find(lines, "rt:ints seq=1 "),
            "rt:ints seq=1 i8=-128 i16=-100 i32=-14900000 i64=-1000000000000 u8=254 u16=65534 "
            "u32=4000000001 u64=18446744073709551615");
  EXPECT_EQ(Find(lines, "rt:misc seq=0 "), "rt:misc seq=0 flag=true color=7 f32=0 f64=-0.1234567890123");
  EXPECT_EQ(Find(lines, "rt:misc seq=4 "), "rt:misc seq=4 flag=false color=7 f32=1.3333334 f64=-0");
  EXPECT_EQ(Find(lines, "rt:misc seq=6 "), "rt:misc seq=6 flag=true color=7 f32=2 f64=inf");
  EXPECT_EQ(Find(lines, "rt:text seq=2 "),
            "rt:text seq=2 cstr=\"c-string\" view=\"ab\" "
            "str=\"q\\\" b\\\\ t\\x09 n\\x0a c\\x01 d\\x7f e\\xc3\\xa9 ' ? \\x1b \\x0d\"");
  std::string cut;
  for (int i = 0; i < 1009; ++i) cut += static_cast<char>('a' + i % 26);
  EXPECT_EQ(Find(lines, "rt:text seq=3 "),
            "rt:text seq=3 cstr=\"(null)\" view=\"ab\" str=\"" + cut + "...[truncated]\"");
  EXPECT_EQ(Find(lines, "rt:blob seq=0 "), "rt:blob seq=0 data=<>");
  EXPECT_EQ(Find(lines, "rt:blob seq=1 "), "rt:blob seq=1 data=<000102ff>");
  EXPECT_EQ(Find(lines, "rt:work phase="), "rt:work phase=begin");
  EXPECT_EQ(Find(lines, "rt:depth "), "rt:depth value=-10");
  EXPECT_EQ(Find(lines, "rt:tick"), "rt:tick");
  EXPECT_EQ(Find(lines, "rt:blob seq=3 "), "<no line starting with rt:blob seq=3 >");  // discarded
}

TEST_F(CliTest, DumpFiltersByNameAndTime) {
  const RecordedTrace& r = Recorded();
  ASSERT_EQ(r.error, "");
  CommandResult res = Run({"dump", "-e", "rt:mi*", r.dir});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  std::vector<std::string> lines = SplitLines(res.out);
  EXPECT_EQ(lines.size(), static_cast<std::size_t>(std::count_if(
                              r.events.begin(), r.events.end(), [](const auto& e) { return e.name == "rt:misc"; })));
  for (const std::string& l : lines) EXPECT_EQ(AfterTid(l).rfind("rt:misc ", 0), 0u) << l;

  res = Run({"dump", r.dir, "--event=rt:tick", "-e", "rt:depth"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  lines = SplitLines(res.out);
  EXPECT_EQ(lines.size(), 360u);  // 60 ticks + 300 counter samples

  // The two 40 ms pauses put most events after 30 ms.
  res = Run({"dump", r.dir, "--since", "30ms", "--until=1000s"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  lines = SplitLines(res.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_LT(lines.size(), r.events.size());
  for (const std::string& l : lines) EXPECT_GE(std::stod(l.substr(1)), 0.030) << l;
  res = Run({"dump", r.dir, "--until", "0"});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_EQ(SplitLines(res.out).size(), 1u);

  // Absolute times are seconds since the epoch, as the reader computes them.
  res = Run({"dump", "--absolute", r.dir});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  std::string error;
  auto trace = Trace::Open(r.dir, &error);
  ASSERT_NE(trace, nullptr) << error;
  EventIterator it(*trace);
  ASSERT_TRUE(it.Next());
  const std::int64_t ns = trace->ToEpochNs(it.event().timestamp());
  char want[48];
  std::snprintf(want, sizeof want, "[%lld.%09lld] ", static_cast<long long>(ns / 1000000000),
                static_cast<long long>(ns % 1000000000));
  EXPECT_EQ(res.out.rfind(want, 0), 0u) << res.out.substr(0, 80);
}

// `dump --filter` limits, the filter language's (src/filter/filter.h), each accepted at its value
// and refused one past it with a usage error and the column, never a crash: 64 levels of '(' and
// '!', 1024 comparisons, 4096 bytes.
TEST_F(CliTest, DumpFilterLimits) {
  const RecordedTrace& r = Recorded();
  ASSERT_EQ(r.error, "");
  const auto dump = [&](const std::string& filter) {
    return Run({"dump", r.dir, "--filter", filter});
  };
  const auto nested = [](int n) { return std::string(n, '(') + "$tid > 0" + std::string(n, ')'); };
  CommandResult res = dump(nested(64));
  EXPECT_EQ(res.exit_code, 0) << res.err;
  EXPECT_EQ(SplitLines(res.out).size(), r.events.size());
  res = dump(nested(65));
  EXPECT_EQ(res.exit_code, 2);
  EXPECT_NE(res.err.find("bad filter, column 65: expression nested too deeply (at most 64 levels "
                         "of '(' and '!')"),
            std::string::npos)
      << res.err;
  res = dump(std::string(65, '!') + "$tid == 0");  // 65 levels
  EXPECT_EQ(res.exit_code, 2);
  res = dump(std::string(64, '!') + "$tid == 0");  // an even number of '!'
  EXPECT_EQ(res.exit_code, 0) << res.err;
  EXPECT_EQ(SplitLines(res.out).size(), 0u);
  res = dump(std::string(63, '!') + "$tid == 0");
  EXPECT_EQ(res.exit_code, 0) << res.err;
  EXPECT_EQ(SplitLines(res.out).size(), r.events.size());
  res = dump(std::string(60000, '!') + "$tid == 0");
  EXPECT_EQ(res.exit_code, 2);
  EXPECT_NE(res.err.find("bad filter, column 4097: filter longer than 4096 bytes"),
            std::string::npos)
      << res.err.substr(0, 300);

  const auto chain = [](int n) {  // bare constants: each one is a condition
    std::string text = "1";
    for (int i = 1; i < n; ++i) text += "||1";
    return text;
  };
  res = dump(chain(1024));
  EXPECT_EQ(res.exit_code, 0) << res.err;
  EXPECT_EQ(SplitLines(res.out).size(), r.events.size());
  res = dump(chain(1025));
  EXPECT_EQ(res.exit_code, 2);
  EXPECT_NE(res.err.find("bad filter, column 3073: more than 1024 comparisons"), std::string::npos)
      << res.err.substr(0, 300);

  std::string at_limit = "$tid > 0" + std::string(4096 - 8, ' ');
  res = dump(at_limit);
  EXPECT_EQ(res.exit_code, 0) << res.err;
  res = dump(at_limit + " ");
  EXPECT_EQ(res.exit_code, 2);
  EXPECT_NE(res.err.find("bad filter, column 4097: filter longer than 4096 bytes"),
            std::string::npos)
      << res.err.substr(0, 300);
}

TEST_F(CliTest, DumpArgumentsAndDamagedTraces) {
  CommandResult res = Run({"dump", "--help"});
  EXPECT_EQ(res.exit_code, 0);
  EXPECT_NE(res.out.find("usage: hushtrace dump DIR"), std::string::npos);
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"dump"}, {"dump", "--bogus", "x"}, {"dump", "x", "--since", "abc"},
        {"dump", "x", "y"}, {"dump", "x", "-e"}, {"dump", "x", "--since", "2", "--until", "1"}}) {
    res = Run(bad);
    EXPECT_EQ(res.exit_code, 2) << bad.back();
    EXPECT_NE(res.err.find("hushtrace dump: "), std::string::npos);
  }
  res = Run({"dump", "/nonexistent/hush/trace"});
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.err.find("/nonexistent/hush/trace"), std::string::npos) << res.err;

  const std::string meta = SynthMetadata(
      "event { name = \"s:a\"; id = 0; stream_id = 0; fields := struct { uint32_t x; }; };\n");
  const std::string packet = PacketBuilder(10).Compact(0, 11, Le(std::uint32_t{1})).Compact(0, 12, Le(std::uint32_t{2})).Build();
  {
    TempTrace t(meta, {packet.substr(0, packet.size() - 1)});
    res = Run({"dump", t.dir()});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    EXPECT_EQ(res.out, "[  0.000000000] tid 4242 s:a x=1\n");
    EXPECT_NE(res.err.find("warning: " + t.dir() + "/stream_0: byte 0: last packet truncated"), std::string::npos)
        << res.err;
  }
  {
    TempTrace t(meta, {packet + "garbage" + std::string(200, 'x')});
    res = Run({"dump", t.dir()});
    EXPECT_EQ(res.exit_code, 1);
    EXPECT_NE(res.err.find(t.dir() + "/stream_0: byte 128: bad packet magic"), std::string::npos) << res.err;
  }
  {
    TempTrace t(meta, {PacketBuilder(10).Compact(0, 11, Le(std::uint32_t{1})).Compact(7, 12).Build()});
    res = Run({"dump", t.dir()});
    EXPECT_EQ(res.exit_code, 3);                               // partial
    EXPECT_EQ(res.out, "[  0.000000000] tid 4242 s:a x=1\n");  // what came before the damage
    EXPECT_NE(res.err.find("stream_0: byte 120: unknown event id 7"), std::string::npos) << res.err;
  }
}

std::string LineWith(const std::string& text, const std::string& needle) {
  for (const std::string& l : SplitLines(text)) {
    if (l.find(needle) != std::string::npos) return l;
  }
  return "<no line with " + needle + ">";
}

// Issue 17: a hostile clock offset printed "1677-09-21 00:12:44.-854 UTC" (a time clamped to the
// int64 range, then a negative remainder). Out-of-range times say so; times before 1970 round
// down.
TEST_F(CliTest, ReportWallClockOfHostileOffsets) {
  const std::string events =
      "event { name = \"s:a\"; id = 0; stream_id = 0; fields := struct { uint32_t x; }; };\n";
  const std::string packet = PacketBuilder(10).Compact(0, 11, Le(std::uint32_t{1})).Build();
  {
    TempTrace t(SynthMetadata(events, 1000000000, -9000000000000000000LL), {packet});
    const CommandResult res = Run({"report", t.dir()});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    EXPECT_EQ(LineWith(res.out, "  start "),
              "  start      out of range (the metadata's clock offset is not a real time)");
    EXPECT_EQ(res.out.find(".-"), std::string::npos) << res.out;
  }
  {
    TempTrace t(SynthMetadata(events, 1000000000, -1), {packet});
    const CommandResult res = Run({"report", t.dir()});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    EXPECT_EQ(LineWith(res.out, "  start "), "  start      1969-12-31 23:59:59.000 UTC");
  }
}

TEST_F(CliTest, ReportSummarizesTheRecordedTrace) {
  const RecordedTrace& r = Recorded();
  ASSERT_EQ(r.error, "");
  const CommandResult res = Run({"report", r.dir});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const std::string& out = res.out;
  EXPECT_EQ(out.rfind("hushtrace report: " + r.dir + "\n", 0), 0u) << out;
  // Milliseconds natively; past a second under qemu-user on a loaded machine (aarch64 tier).
  const std::string duration = LineWith(out, "  duration ");
  EXPECT_TRUE(duration.find(" ms") != std::string::npos || duration.find(" s") != std::string::npos)
      << out;
  EXPECT_NE(LineWith(out, "  events ").find(std::to_string(r.events.size()) + " ("), std::string::npos) << out;
  // The oversized blob was discarded: said loudly.
  const std::string warning = LineWith(out, "WARNING:");
  EXPECT_EQ(warning.rfind("WARNING: " + r.dir + "/stream_", 0), 0u) << out;
  EXPECT_NE(warning.find(": 1 events lost (ring full, nested or oversized, or not written)"), std::string::npos)
      << warning;
  EXPECT_NE(LineWith(out, "  lost ").find("1 event discarded (WARNING lines below)"),
            std::string::npos)
      << out;
  EXPECT_NE(LineWith(out, "  rt:ints ").find(" 300 "), std::string::npos) << out;
  EXPECT_NE(LineWith(out, "  rt:work ").find(" 600 "), std::string::npos) << out;
  EXPECT_NE(LineWith(out, "  rt:blob ").find(" 299 "), std::string::npos) << out;
  for (int t = 0; t < 2; ++t) {
    const std::size_t n = static_cast<std::size_t>(
        std::count_if(r.events.begin(), r.events.end(), [&](const auto& e) { return e.tid == r.tids[t]; }));
    const std::string line = LineWith(out, "  " + std::to_string(r.tids[t]) + " rt-worker-" + std::to_string(t));
    EXPECT_NE(line.find(" " + std::to_string(n)), std::string::npos) << out;
  }
  const std::string spans = out.substr(out.find("spans (by total time)"));
  EXPECT_NE(LineWith(spans, "  rt:work ").find(" 300 "), std::string::npos) << out;
  const std::string counter = LineWith(out.substr(out.find("\ncounters")), "  rt:depth ");
  for (const char* v : {" 300 ", " -10 ", " 64.75 ", " 139.5"}) {
    EXPECT_NE(counter.find(v), std::string::npos) << counter;
  }
}

TEST_F(CliTest, ReportSpanSelfTimeAndCleanTrace) {
  const std::string meta = SynthMetadata(
      "event { name = \"s:outer\"; id = 3; stream_id = 0; model.emf.uri = \"span\";\n"
      "  fields := struct { enum : uint8_t { begin = 0, end = 1 } phase; }; };\n"
      "event { name = \"s:inner\"; id = 5; stream_id = 0; model.emf.uri = \"span\";\n"
      "  fields := struct { enum : uint8_t { begin = 0, end = 1 } phase; }; };\n"
      "event { name = \"s:ctr\"; id = 4; stream_id = 0; model.emf.uri = \"counter\";\n"
      "  fields := struct { floating_point { exp_dig = 11; mant_dig = 53; align = 8; } value; }; };\n");
  const std::string packet = PacketBuilder(0)
                                 .Compact(3, 0, std::string(1, '\0'))
                                 .Compact(5, 100, std::string(1, '\0'))
                                 .Compact(4, 150, Le(2.5))
                                 .Compact(5, 300, "\x01")
                                 .Compact(3, 1000, "\x01")
                                 .Compact(4, 1100, Le(-1.0))
                                 .Build();
  TempTrace t(meta, {packet});
  CommandResult res = Run({"report", t.dir()});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_EQ(res.out.find("WARNING"), std::string::npos) << res.out;
  EXPECT_NE(LineWith(res.out, "  lost ").find("none"), std::string::npos) << res.out;
  EXPECT_NE(LineWith(res.out, "  duration ").find("1.1 us"), std::string::npos) << res.out;
  EXPECT_NE(LineWith(res.out, "  process ").find("synth (pid 777) on testhost"), std::string::npos) << res.out;
  const std::string spans = res.out.substr(res.out.find("spans"));
  const std::string outer = LineWith(spans, "  s:outer ");
  EXPECT_NE(outer.find("1.0 us     800 ns"), std::string::npos) << res.out;  // total, self
  EXPECT_NE(LineWith(spans, "  s:inner ").find("200 ns     200 ns"), std::string::npos) << res.out;
  EXPECT_LT(spans.find("s:outer"), spans.find("s:inner"));
  const std::string ctr = LineWith(res.out.substr(res.out.find("\ncounters")), "  s:ctr ");
  for (const char* v : {" 2 ", " -1 ", " 0.75 ", " 2.5"}) EXPECT_NE(ctr.find(v), std::string::npos) << ctr;

  res = Run({"dump", t.dir()});
  EXPECT_EQ(res.exit_code, 0);
  EXPECT_EQ(SplitLines(res.out)[1], "[  0.000000100] tid 4242 s:inner phase=begin");
  EXPECT_EQ(SplitLines(res.out)[2], "[  0.000000150] tid 4242 s:ctr value=2.5");

  res = Run({"report", "--help"});
  EXPECT_EQ(res.exit_code, 0);
  EXPECT_NE(res.out.find("usage: hushtrace report DIR"), std::string::npos);
  EXPECT_EQ(Run({"report"}).exit_code, 2);
  EXPECT_EQ(Run({"report", "a", "b"}).exit_code, 2);
  EXPECT_EQ(Run({"report", "--frobnicate", t.dir()}).exit_code, 2);
  res = Run({"report", t.dir() + "/missing"});
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.err.find(t.dir() + "/missing"), std::string::npos);
}

// A stream damaged in the middle ends there; the other streams are read to their end, the damage
// is named, and the exit status says the result is partial (3).
TEST_F(CliTest, DamagedStreamIsSkippedAndTheOthersAreRead) {
  const std::string meta = SynthMetadata(
      "event { name = \"s:a\"; id = 0; stream_id = 0; fields := struct { uint32_t x; }; };\n");
  TempTrace t(meta, {PacketBuilder(10).Compact(0, 11, Le(std::uint32_t{1})).Compact(7, 12).Build(),
                     PacketBuilder(10, 4343, "other")
                         .Compact(0, 13, Le(std::uint32_t{2}))
                         .Compact(0, 14, Le(std::uint32_t{3}))
                         .Build()});
  CommandResult res = Run({"dump", t.dir()});
  EXPECT_EQ(res.exit_code, 3) << res.err;
  EXPECT_EQ(res.out,
            "[  0.000000000] tid 4242 s:a x=1\n"
            "[  0.000000002] tid 4343 s:a x=2\n"
            "[  0.000000003] tid 4343 s:a x=3\n");
  EXPECT_NE(
      res.err.find(t.dir() + "/stream_0: byte 120: unknown event id 7 (not in the metadata): "
                             "the rest of this stream was skipped; the other streams were read"),
      std::string::npos)
      << res.err;
  res = Run({"report", t.dir()});
  EXPECT_EQ(res.exit_code, 3) << res.err;
  EXPECT_NE(LineWith(res.out, "  events ").find(" 3 ("), std::string::npos) << res.out;
  EXPECT_NE(LineWith(res.out, "WARNING:").find(t.dir() + "/stream_0: byte 120: unknown event id 7"),
            std::string::npos)
      << res.out;
  EXPECT_EQ(Run({"hist", t.dir(), "--event", "s:a", "--field", "x"}).exit_code, 3);
  EXPECT_EQ(Run({"export", t.dir(), "-f", "chrome", "-o", "/dev/null"}).exit_code, 3);
}

// Flight mode: overwritten events are the window kept (header), discarded ones a loss (WARNING).
TEST_F(CliTest, ReportTellsTheFlightWindowFromRealLosses) {
  const std::string meta = SynthMetadata(
      "event { name = \"s:a\"; id = 0; stream_id = 0; fields := struct { uint32_t x; }; };\n");
  {
    TempTrace t(meta,
                {PacketBuilder(10).Lost(100, 100).Compact(0, 11, Le(std::uint32_t{1})).Build()});
    const CommandResult res = Run({"report", t.dir()});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    EXPECT_EQ(LineWith(res.out, "  lost "), "  lost       none") << res.out;
    EXPECT_NE(LineWith(res.out, "  window ").find("; 100 older events overwritten"),
              std::string::npos)
        << res.out;
    EXPECT_EQ(res.out.find("WARNING"), std::string::npos) << res.out;
  }
  {
    TempTrace t(
        meta, {PacketBuilder(10).Lost(100, 100).Compact(0, 11, Le(std::uint32_t{1})).Build(),
               PacketBuilder(10, 4343).Lost(120, 20).Compact(0, 12, Le(std::uint32_t{2})).Build()});
    const CommandResult res = Run({"report", t.dir()});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    EXPECT_EQ(LineWith(res.out, "  lost "),
              "  lost       100 events discarded (WARNING lines below)")
        << res.out;
    EXPECT_NE(LineWith(res.out, "  window ").find("; 120 older events overwritten"),
              std::string::npos)
        << res.out;
    EXPECT_EQ(LineWith(res.out, "WARNING:"),
              "WARNING: " + t.dir() + "/stream_1: 100 events lost (ring full, nested or oversized, or not written)")
        << res.out;
  }
}

}  // namespace
}  // namespace hush::reader::test
