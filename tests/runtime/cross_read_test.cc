// A trace written by this build read by the host's tools. In the aarch64 tier (make test-aarch64)
// this program runs under qemu-aarch64 and the readers are x86-64 programs: libbabeltrace2 (the
// native hush_bt_dump), the babeltrace2 CLI and the native `hushtrace dump` (HUSH_READER_CLI), so
// the trace format is byte-for-byte the same on both architectures. In a native build the same
// checks run with this build's own tools.
#include <gtest/gtest.h>
#include <time.h>

#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "hushtrace/hushtrace.h"
#include "hushtrace/session.h"
#include "runtime/test_util.h"

#ifndef HUSH_READER_CLI
#error "HUSH_READER_CLI must be defined by tests/runtime/CMakeLists.txt"
#endif

HUSH_TRACEPOINT(xr, ints, (std::int64_t, seq), (std::int8_t, i8), (std::uint64_t, u64),
                (std::int32_t, thread))
HUSH_TRACEPOINT(xr, text, (std::int64_t, seq), (std::string_view, s), (double, d))

namespace {

constexpr int kThreads = 2;
constexpr int kPerThread = 500;

std::int64_t RealtimeNs() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void Emit(int thread) {
  for (int i = 0; i < kPerThread; ++i) {
    const std::int64_t seq = std::int64_t{thread} * kPerThread + i;
    HUSH_TRACE(xr, ints, seq, std::numeric_limits<std::int8_t>::min(),
               std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(i), thread);
    HUSH_TRACE(xr, text, seq, "caf\xc3\xa9 \"quoted\"", 0.5 + i);
  }
}

class CrossRead : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new hushtest::TempDir("cross-read");
    hush::SessionOptions o;
    o.events = {"xr:*"};
    o.output_dir = dir_->Sub("trace");
    o.mode = hush::Mode::kStream;
    std::string error;
    before_ns_ = RealtimeNs();
    auto s = hush::Session::Start(o, &error);
    ASSERT_NE(s, nullptr) << error;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(Emit, t);
    for (std::thread& t : threads) t.join();
    s->Stop();
    after_ns_ = RealtimeNs();
    trace_ = dir_->Sub("trace");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static hushtest::TempDir* dir_;
  static std::string trace_;
  static std::int64_t before_ns_, after_ns_;
};
hushtest::TempDir* CrossRead::dir_ = nullptr;
std::string CrossRead::trace_;
std::int64_t CrossRead::before_ns_ = 0;
std::int64_t CrossRead::after_ns_ = 0;

TEST_F(CrossRead, LibBabeltraceReadsEveryEventWithItsValuesAndWallClockTime) {
  const hushtest::Trace t = hushtest::ReadTrace(trace_);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.TotalDiscarded(), 0u);
  const auto ints = t.Named("xr:ints");
  const auto text = t.Named("xr:text");
  ASSERT_EQ(ints.size(), std::size_t{kThreads * kPerThread});
  ASSERT_EQ(text.size(), std::size_t{kThreads * kPerThread});
  std::vector<int> seen(kThreads * kPerThread, 0);
  for (const hushtest::TraceEvent* e : ints) {
    const std::int64_t seq = e->I("seq");
    ASSERT_GE(seq, 0);
    ASSERT_LT(seq, kThreads * kPerThread);
    ++seen[static_cast<std::size_t>(seq)];
    EXPECT_EQ(e->I("i8"), -128);
    EXPECT_EQ(e->U("u64"), std::numeric_limits<std::uint64_t>::max() -
                               static_cast<std::uint64_t>(seq % kPerThread));
    EXPECT_EQ(e->I("thread"), seq / kPerThread);
    // The counter (CNTVCT_EL0 on aarch64) mapped to wall-clock time by the calibration in the
    // metadata: inside the recording, give or take 50 ms of emulation.
    EXPECT_GE(e->ns, before_ns_ - 50000000) << "seq " << seq;
    EXPECT_LE(e->ns, after_ns_ + 50000000) << "seq " << seq;
  }
  EXPECT_EQ(seen, std::vector<int>(seen.size(), 1)) << "every event exactly once";
  for (const hushtest::TraceEvent* e : text) {
    EXPECT_EQ(e->S("s"), "caf\xc3\xa9 \"quoted\"");
    EXPECT_DOUBLE_EQ(e->D("d"), 0.5 + static_cast<double>(e->I("seq") % kPerThread));
  }
}

TEST_F(CrossRead, BabeltraceCliReadsItWithoutWarnings) {
  const hushtest::ProcessResult r = hushtest::RunBabeltrace(trace_);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.err, "");
  std::size_t lines = 0;
  for (std::size_t at = r.out.find("xr:ints:"); at != std::string::npos;
       at = r.out.find("xr:ints:", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, std::size_t{kThreads * kPerThread});
}

TEST_F(CrossRead, HushtraceDumpReadsEveryEvent) {
  const hushtest::ProcessResult r = hushtest::RunProcess(
      {HUSH_READER_CLI, "dump", trace_, "-e", "xr:ints"}, hushtest::ChildEnv(), 120);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  std::size_t lines = 0;
  for (std::size_t at = r.out.find(" xr:ints "); at != std::string::npos;
       at = r.out.find(" xr:ints ", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, std::size_t{kThreads * kPerThread});
  EXPECT_NE(r.out.find(" xr:ints seq=0 i8=-128 u64=18446744073709551615 thread=0"),
            std::string::npos)
      << r.out.substr(0, 400);
}

TEST_F(CrossRead, MetadataNamesTheArchitecturesCounter) {
  const std::string metadata = hushtest::ReadFile(trace_ + "/metadata");
  ASSERT_NE(metadata, "");
#if defined(__aarch64__)
  EXPECT_NE(metadata.find("hushtrace_clock_source = \"cntvct\";"), std::string::npos) << metadata;
  EXPECT_NE(metadata.find("CNTVCT_EL0, calibrated to CLOCK_REALTIME"), std::string::npos);
#else
  const bool tsc = metadata.find("hushtrace_clock_source = \"tsc\";") != std::string::npos;
  const bool mono = metadata.find("hushtrace_clock_source = \"monotonic\";") != std::string::npos;
  EXPECT_TRUE(tsc || mono) << metadata;
#endif
}

}  // namespace
