// Flight-mode tests: small rings that overwrite their oldest packets, snapshots, and a signal
// storm. A separate binary from threads_test.cc so that a crash in flight mode hides nothing else.
#include "runtime/mt_common.h"

namespace hushtest_mt {
namespace {

TEST(Flight, SmallBufferKeepsTheMostRecentEventsOfEveryThread) {
  TempDir dir("flight");
  auto s = Start(dir.Sub("trace"), hush::Mode::kFlight, 64 << 10);
  ASSERT_NE(s, nullptr);
  constexpr std::uint32_t kThreads = 4;
  constexpr std::uint64_t kN = 50000;
  RunWriters(kThreads, kN);
  s->Stop();
  const hush::SessionStats stats = s->Stats();
  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  const auto views = PerThread(t);
  ASSERT_EQ(views.size(), kThreads);
  for (const auto& [thread, v] : views) {
    ASSERT_FALSE(v.seqs.empty());
    EXPECT_EQ(v.seqs.back(), kN - 1) << "thread " << thread << ": the newest event is kept";
    EXPECT_EQ(v.seqs.back() - v.seqs.front() + 1, v.seqs.size())
        << "thread " << thread << ": the kept events are the most recent ones, without a gap";
    EXPECT_LT(v.seqs.size(), kN) << "the buffer is too small to keep everything";
  }
  EXPECT_EQ(stats.events_discarded, 0u);
  EXPECT_EQ(t.events.size() + stats.events_overwritten, kThreads * kN)
      << "read + overwritten == emitted";
  const hushtest::RecordedLosses lost = hushtest::ReadRecordedLosses(s->output_dir());
  ASSERT_TRUE(lost.ok);
  EXPECT_EQ(lost.overwritten, stats.events_overwritten) << "the trace records the same loss";
  EXPECT_EQ(lost.discarded, stats.events_overwritten) << "on disk, discarded includes overwritten";
  EXPECT_GE(t.discard_messages, 1u) << "a CTF reader reports the loss";
}

TEST(Flight, SnapshotThenMoreEventsThenStopWritesEveryEventOnce) {
  TempDir dir("flight");
  auto s = Start(dir.Sub("trace"), hush::Mode::kFlight, 1 << 20);
  ASSERT_NE(s, nullptr);
  for (std::uint64_t i = 0; i < 1000; ++i) HUSH_TRACE(mt, seq, 0u, i);
  std::string error;
  ASSERT_TRUE(s->Snapshot(&error)) << error;
  const Trace mid = ReadTrace(s->output_dir());
  ASSERT_TRUE(mid.ok) << mid.error;
  EXPECT_EQ(mid.events.size(), 1000u) << "the snapshot holds what was emitted so far";
  for (std::uint64_t i = 1000; i < 2000; ++i) HUSH_TRACE(mt, seq, 0u, i);
  s->Stop();
  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  const auto views = PerThread(t);
  ASSERT_EQ(views.size(), 1u);
  const auto& seqs = views.begin()->second.seqs;
  ASSERT_EQ(seqs.size(), 2000u) << "no duplicate, no loss";
  for (std::uint64_t i = 0; i < 2000; ++i) ASSERT_EQ(seqs[i], i);
  EXPECT_EQ(t.TotalDiscarded(), 0u);
}

TEST(Flight, RepeatedSnapshotsWhileEmittingNeverDuplicate) {
  TempDir dir("flight");
  auto s = Start(dir.Sub("trace"), hush::Mode::kFlight, 64 << 10);
  ASSERT_NE(s, nullptr);
  std::uint64_t i = 0;
  for (int round = 0; round < 30; ++round) {
    for (std::uint64_t k = 0; k < 37 * static_cast<std::uint64_t>(round % 5 + 1); ++k, ++i) {
      HUSH_TRACE(mt, seq, 0u, i);
    }
    ASSERT_TRUE(s->Snapshot());
  }
  s->Stop();
  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  const auto views = PerThread(t);  // checks strictly increasing = no duplicates
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views.begin()->second.seqs.size(), i) << "every event written once by some snapshot";
}

// A snapshot saved 1000 events (one full packet and part of the next); later they are all
// overwritten in the ring. Only the events that never reached the disk may be counted lost.
// BUG (reported, still open after 6dc7adc): the partly written packet is counted lost whole, so
// read + recorded losses exceeds what was emitted by the events the snapshot saved from it.
// Deterministic version: RingFlight.OverwritingAPartlyWrittenPacketCountsOnlyItsUnwrittenEvents.
TEST(Flight, EventsWrittenByASnapshotAreNotCountedAsLostWhenLaterOverwritten) {
  TempDir dir("flight");
  auto s = Start(dir.Sub("trace"), hush::Mode::kFlight, 64 << 10);
  ASSERT_NE(s, nullptr);
  constexpr std::uint64_t kFirst = 1000, kTotal = 100000;
  for (std::uint64_t i = 0; i < kFirst; ++i) HUSH_TRACE(mt, seq, 0u, i);
  ASSERT_TRUE(s->Snapshot());
  for (std::uint64_t i = kFirst; i < kTotal; ++i) HUSH_TRACE(mt, seq, 0u, i);
  s->Stop();
  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  const auto views = PerThread(t);
  ASSERT_EQ(views.size(), 1u);
  const auto& seqs = views.begin()->second.seqs;
  ASSERT_GE(seqs.size(), kFirst);
  for (std::uint64_t i = 0; i < kFirst; ++i) ASSERT_EQ(seqs[i], i) << "the snapshot's events";
  EXPECT_EQ(seqs.back(), kTotal - 1);
  const hushtest::RecordedLosses lost = hushtest::ReadRecordedLosses(s->output_dir());
  ASSERT_TRUE(lost.ok);
  EXPECT_EQ(t.events.size() + lost.discarded, kTotal)
      << "read " << t.events.size() << " + recorded as lost " << lost.discarded << " != emitted "
      << kTotal;
}

// ---------------------------------------------------------------------------------------------
// Signals: an event emitted by a signal handler while the thread is inside an event
//
// Regression test of a fixed bug; what was wrong: EmitEvent (include/hushtrace/internal/emit.h) reads the timestamp before it
// raises the nesting guard. A handler that runs between the two emits its event normally, then
// the interrupted event is written with its older timestamp (extended header): the stream goes
// back in time by the handler's duration and babeltrace2 refuses the whole trace ("timestamp is
// less than the last returned timestamp"). Same in SignalTest.StreamMode... (threads_test.cc).
// ---------------------------------------------------------------------------------------------

TEST_F(SignalTest, FlightModeNestedEventsAreDroppedAndCountedExactly) {
  TempDir dir("signal");
  auto s = Start(dir.Sub("trace"), hush::Mode::kFlight, 1 << 20);
  ASSERT_NE(s, nullptr);
  HUSH_TRACE(mt, sig, std::uint64_t{999999});  // attach this thread's ring first
  const SignalStormResult r = SignalStorm(300);
  s->Stop();
  const hush::SessionStats stats = s->Stats();
  const std::uint64_t emitted = r.loop_events + g_sig_emitted.load() + 1;
  // Flight mode never discards for lack of room: every discard is a nested event.
  EXPECT_EQ(stats.events_discarded, g_sig_nested.load());
  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size() + stats.events_overwritten + stats.events_discarded, emitted);
  const hushtest::RecordedLosses lost = hushtest::ReadRecordedLosses(s->output_dir());
  ASSERT_TRUE(lost.ok);
  EXPECT_EQ(lost.discarded, stats.events_overwritten + stats.events_discarded);
  const auto views = PerThread(t, "mt:padded");
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views.begin()->second.seqs.back(), r.loop_events - 1);
  for (const TraceEvent& e : t.events) {
    if (e.name == "mt:padded") {
      ASSERT_EQ(e.S("pad"), std::string(600, 'p')) << "corrupted event";
    }
  }
  RecordProperty("signals", static_cast<int>(g_sig_emitted.load()));
  RecordProperty("nested", static_cast<int>(g_sig_nested.load()));
#if !defined(__SANITIZE_THREAD__)
  EXPECT_GT(g_sig_nested.load(), 0u) << "the storm never hit an event: the test proves nothing";
#endif
}

}  // namespace
}  // namespace hushtest_mt
