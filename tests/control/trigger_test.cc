// Snapshot triggers (SessionOptions::snapshot_on): an event writes the flight recorder, at most
// once per interval.
#include <hushtrace/hushtrace.h>
#include <hushtrace/reader.h>
#include <hushtrace/session.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "cli/cli_test_util.h"

HUSH_TRACEPOINT(trg, tick, (std::uint32_t, seq))
HUSH_TRACEPOINT(trg, error, (std::int32_t, code))

namespace {

struct Seen {
  std::uint64_t ticks = 0;
  std::uint32_t last_tick = 0;
  bool consecutive = true;
  int errors = 0;
  bool error_last = false;  // the trigger event is the last event of the snapshot
};

Seen Read(const std::string& dir) {
  Seen s;
  std::string error;
  auto trace = hush::reader::Trace::Open(dir, &error);
  if (!trace) return s;
  hush::reader::EventIterator it(*trace);
  while (it.Next()) {
    const auto& e = it.event();
    if (e.name() == "trg:tick") {
      const auto seq = static_cast<std::uint32_t>(e.GetUint64("seq").value_or(0));
      if (s.ticks != 0 && seq != s.last_tick + 1) s.consecutive = false;
      s.last_tick = seq;
      ++s.ticks;
      s.error_last = false;
    } else if (e.name() == "trg:error") {
      ++s.errors;
      s.error_last = true;
    }
  }
  return s;
}

// Polls the trace until it holds `errors` trg:error events (the snapshot thread writes it).
Seen WaitForErrors(const std::string& dir, int errors) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  Seen s;
  while ((s = Read(dir)).errors < errors && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return s;
}

hush::SessionOptions FlightOptions(const std::string& dir, std::uint32_t interval_ms) {
  hush::SessionOptions o;
  o.events = {"trg:tick"};
  o.snapshot_on = {"trg:error"};  // enabled by the trigger alone
  o.snapshot_interval_ms = interval_ms;
  o.mode = hush::Mode::kFlight;
  o.buffer_size = 16 * 1024;
  o.output_dir = dir;
  return o;
}

TEST(TriggerTest, EventWritesTheFlightRecorderOncePerInterval) {
  const std::string root = hush::clitest::MakeTempDir();
  const std::string dir = root + "/t";
  std::string error;
  auto session = hush::Session::Start(FlightOptions(dir, 3600 * 1000), &error);
  ASSERT_TRUE(session) << error;
  for (std::uint32_t i = 0; i < 20000; ++i) HUSH_TRACE(trg, tick, i);
  HUSH_TRACE(trg, error, 7);
  const Seen s = WaitForErrors(dir, 1);
  EXPECT_EQ(s.errors, 1);
  EXPECT_TRUE(s.error_last);
  EXPECT_GT(s.ticks, 0u);
  EXPECT_LT(s.ticks, 20000u);  // the ring kept the latest
  EXPECT_EQ(s.last_tick, 19999u);
  EXPECT_TRUE(s.consecutive);
  // Within the interval: recorded in the ring, no second snapshot.
  HUSH_TRACE(trg, error, 8);
  hush::SessionStats st = session->Stats();
  EXPECT_EQ(st.snapshots_triggered, 1u);
  EXPECT_EQ(st.triggers_suppressed, 1u);
  session->Stop();
  EXPECT_EQ(Read(dir).errors, 2);  // the final write has the suppressed one too
  hush::clitest::RemoveTree(root);
}

TEST(TriggerTest, ZeroIntervalFiresEveryTime) {
  const std::string root = hush::clitest::MakeTempDir();
  const std::string dir = root + "/t";
  std::string error;
  auto session = hush::Session::Start(FlightOptions(dir, 0), &error);
  ASSERT_TRUE(session) << error;
  HUSH_TRACE(trg, tick, 0u);
  HUSH_TRACE(trg, error, 1);
  EXPECT_EQ(WaitForErrors(dir, 1).errors, 1);
  HUSH_TRACE(trg, tick, 1u);
  HUSH_TRACE(trg, error, 2);
  const Seen s = WaitForErrors(dir, 2);
  EXPECT_EQ(s.errors, 2);
  EXPECT_EQ(s.ticks, 2u);
  EXPECT_EQ(session->Stats().snapshots_triggered, 2u);
  session->Stop();
  hush::clitest::RemoveTree(root);
}

TEST(TriggerTest, StreamModeIsRefused) {
  const std::string root = hush::clitest::MakeTempDir();
  hush::SessionOptions o = FlightOptions(root + "/t", 10);
  o.mode = hush::Mode::kStream;
  std::string error;
  EXPECT_FALSE(hush::Session::Start(o, &error));
  EXPECT_NE(error.find("flight"), std::string::npos) << error;
  hush::clitest::RemoveTree(root);
}

}  // namespace
