// Multi-threaded and stress tests in stream mode. Every event carries (thread, seq) with a
// per-thread sequence number, so the trace read back by babeltrace2 can be checked exactly: every
// emitted event is either read once, in order, or accounted for by a loss counter.
#include "runtime/mt_common.h"

#include <sys/stat.h>

#include <condition_variable>
#include <mutex>

namespace hushtest_mt {
namespace {

// ---------------------------------------------------------------------------------------------
// Stream mode, several threads
// ---------------------------------------------------------------------------------------------

TEST(Threads, FourThreadsEverySequenceNumberAppearsOnceInOrderOrIsCounted) {
  TempDir dir("threads");
  auto s = Start(dir.Sub("trace"), hush::Mode::kStream, 1 << 20);
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
  const auto missing = MissingPerStream(views, kN);
  for (const auto& [stream, n] : missing) {
    EXPECT_EQ(n, t.discarded.count(stream) ? t.discarded.at(stream) : 0u)
        << "stream " << stream << ": missing events not accounted for by discarded counts";
  }
  EXPECT_EQ(t.events.size() + t.TotalDiscarded(), kThreads * kN);
  EXPECT_EQ(stats.events_discarded, t.TotalDiscarded());
  EXPECT_EQ(stats.rings, kThreads);
}

TEST(Threads, ThreadsUsingTheSameRingOneAfterTheOtherShareAStream) {
  TempDir dir("threads");
  auto s = Start(dir.Sub("trace"), hush::Mode::kStream, 1 << 20);
  ASSERT_NE(s, nullptr);
  for (std::uint32_t k = 0; k < 3; ++k) {
    std::thread([k] {
      for (std::uint64_t i = 0; i < 100; ++i) HUSH_TRACE(mt, seq, k, i);
    }).join();
  }
  s->Stop();
  EXPECT_EQ(s->Stats().rings, 1u) << "an exited thread's ring is recycled";
  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  ASSERT_EQ(t.events.size(), 300u);
  std::set<std::int64_t> vtids;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_EQ(t.events[i].stream, t.events[0].stream);
    EXPECT_EQ(t.events[i].U("thread"), i / 100);
    EXPECT_EQ(t.events[i].U("seq"), i % 100);
    if (i > 0) {
      EXPECT_GE(t.events[i].cycles, t.events[i - 1].cycles) << "time goes back at " << i;
    }
    vtids.insert(t.events[i].vtid);
  }
  EXPECT_EQ(vtids.size(), 3u) << "each packet names the thread that wrote it";
}

TEST(Threads, AThousandShortLivedThreadsReuseAtMostAsManyRingsAsRanAtOnce) {
  // Memory bound: rings (each `buffer` bytes of file-backed memory) never exceed the number of
  // threads that were attached at the same time; an exited thread's ring is taken by the next.
  TempDir dir("threads");
  auto s = Start(dir.Sub("trace"), hush::Mode::kStream, 64 << 10);
  ASSERT_NE(s, nullptr);
  constexpr std::uint32_t kWaves = 125, kConcurrent = 8;
  constexpr std::uint64_t kN = 20;
  for (std::uint32_t wave = 0; wave < kWaves; ++wave) {
    std::vector<std::thread> threads;
    for (std::uint32_t k = 0; k < kConcurrent; ++k) {
      threads.emplace_back([id = wave * kConcurrent + k] {
        for (std::uint64_t i = 0; i < kN; ++i) HUSH_TRACE(mt, seq, id, i);
      });
    }
    for (auto& t : threads) t.join();
  }
  s->Stop();
  const hush::SessionStats stats = s->Stats();
  EXPECT_LE(stats.rings, kConcurrent);
  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  // Each thread takes at least one packet (packets name their thread), so a fast enough churn
  // can find a ring full and lose events: those are counted, the rest are in order.
  EXPECT_EQ(t.events.size() + t.TotalDiscarded(), std::uint64_t{kWaves} * kConcurrent * kN);
  std::map<std::uint64_t, std::uint64_t> last;  // thread id -> last seq + 1
  for (const TraceEvent& e : t.events) {
    EXPECT_GE(e.U("seq") + 1, last[e.U("thread")] + 1) << "thread " << e.U("thread");
    last[e.U("thread")] = e.U("seq") + 1;
  }
  EXPECT_LE(last.size(), std::size_t{kWaves} * kConcurrent);
}

TEST(Threads, StopWhileThreadsEmitLeavesAConsistentReadableTrace) {
  TempDir dir("threads");
  auto s = Start(dir.Sub("trace"), hush::Mode::kStream, 256 << 10);
  ASSERT_NE(s, nullptr);
  std::atomic<bool> quit{false};
  std::atomic<std::uint32_t> emitting{0};
  std::vector<std::thread> pool;
  for (std::uint32_t k = 0; k < 4; ++k) {
    pool.emplace_back([k, &quit, &emitting] {
      HUSH_TRACE(mt, seq, k, std::uint64_t{0});
      emitting.fetch_add(1);
      for (std::uint64_t i = 1; !quit.load(std::memory_order_relaxed); ++i)
        HUSH_TRACE(mt, seq, k, i);
    });
  }
  // Every thread has an event in its ring before Stop (on a loaded machine a thread may not run
  // within a fixed sleep), then they go on emitting while Stop runs.
  while (emitting.load() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  s->Stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  quit.store(true);
  for (auto& th : pool) th.join();

  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  const auto views = PerThread(t);
  EXPECT_EQ(views.size(), 4u);
  // Inside what was recorded, every gap is a counted loss.
  for (const auto& [thread, v] : views) {
    ASSERT_FALSE(v.seqs.empty());
    const std::uint64_t stream = *v.streams.begin();
    const std::uint64_t gaps = v.seqs.back() + 1 - v.seqs.size();
    EXPECT_LE(gaps, t.discarded.count(stream) ? t.discarded.at(stream) : 0u) << "thread " << thread;
  }
  const hushtest::ProcessResult cli = hushtest::RunBabeltrace(s->output_dir());
  EXPECT_TRUE(cli.exited && cli.exit_code == 0) << cli.Describe();
  EXPECT_EQ(cli.err.find("ERROR"), std::string::npos) << cli.err.substr(0, 2000);
}

// ---------------------------------------------------------------------------------------------
// Tiny buffers: the consumer cannot keep up (run in a child process: see RunInChild)
// ---------------------------------------------------------------------------------------------

class TinyBuffer : public testing::TestWithParam<std::size_t> {};

// Regression test of a fixed bug; what was wrong: buffer sizes from 16k (the documented minimum) to 32k-1 give sub-buffers of
// 0 bytes (src/session/core.cc, Core::Start: (size / 8) & ~4095), and the first event writes
// outside the ring: SIGSEGV, or a hang under ASan. The child reports it; the 16k and 24k cases
// fail.
TEST_P(TinyBuffer, FourWritersEventsReadPlusDiscardedEqualsEmittedExactly) {
  TempDir dir("tiny");
  const std::string out = dir.Sub("trace");
  const std::size_t buffer = GetParam();
  constexpr std::uint32_t kThreads = 4;
  constexpr std::uint64_t kN = 50000;
  ChildReport report;
  std::string failure;
  const bool ran = RunInChild(
      [&]() -> ChildReport {
        ChildReport r;
        hush::SessionOptions o;
        o.events = {"mt:*"};
        o.output_dir = out;
        o.buffer_size = buffer;
        std::string error;
        auto s = hush::Session::Start(o, &error);
        if (!s) {
          r.error = "Session::Start: " + error;
          return r;
        }
        RunWriters(kThreads, kN);
        s->Stop();
        const hush::SessionStats st = s->Stats();
        r.numbers = {st.events_discarded, st.events_overwritten, st.events_lost_on_write, st.rings};
        return r;
      },
      &report, &failure, /*timeout_s=*/30);
  ASSERT_TRUE(ran) << failure << " (buffer " << buffer << " bytes)";
  ASSERT_EQ(report.numbers.size(), 4u) << report.error;
  const std::uint64_t discarded = report.numbers[0];
  EXPECT_EQ(report.numbers[1], 0u);
  EXPECT_EQ(report.numbers[2], 0u);

  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size() + discarded, kThreads * kN) << "read + discarded must equal emitted";
  // The trace never claims more losses than there were. (That it records all of them, including
  // those after a stream's last packet, is checked deterministically by
  // Discards.AfterTheLastPacketOfAStreamAreRecordedInTheTrace.)
  const hushtest::RecordedLosses lost = hushtest::ReadRecordedLosses(out);
  ASSERT_TRUE(lost.ok);
  EXPECT_LE(lost.discarded, discarded);
  EXPECT_EQ(t.TotalDiscarded(), lost.discarded) << "babeltrace2 reads the recorded counts";
  const auto views = PerThread(t);
  const auto missing = MissingPerStream(views, kN);
  for (const auto& [stream, n] : missing) {
    EXPECT_GE(n, t.discarded.count(stream) ? t.discarded.at(stream) : 0u) << "stream " << stream;
  }
}

// The consumer thread is kept off the CPU while a SCHED_FIFO writer, pinned to the same CPU, fills
// its ring and goes on emitting: every later event is discarded. Nothing is written after those
// discards, so only the final flush can record them in the trace.
//
// Regression test of a fixed bug; what was wrong: the final flush writes no packet when the ring has no open packet, and the
// counts of the discards after a stream's last packet never reach the trace: babeltrace2 (and any
// reader) sees fewer events than were emitted and no loss. Same after a thread exits with a full
// ring (its ring has no open packet either).
TEST(Discards, AfterTheLastPacketOfAStreamAreRecordedInTheTrace) {
  TempDir dir("discard");
  ChildReport report;
  std::string failure;
  const std::string out = dir.Sub("trace");
  constexpr std::uint64_t kN = 10000;
  const bool ran = RunInChild(
      [&]() -> ChildReport {
        ChildReport r;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        if (::sched_setaffinity(0, sizeof one, &one) != 0) {
          r.error = "skip: sched_setaffinity failed";
          return r;
        }
        hush::SessionOptions o;
        o.events = {"mt:*"};
        o.output_dir = out;
        o.buffer_size = 32 << 10;  // 8 sub-buffers of 4 KiB: 249 events each
        std::string error;
        auto s = hush::Session::Start(o, &error);  // the consumer inherits the affinity
        if (!s) {
          r.error = "Session::Start: " + error;
          return r;
        }
        bool rt = true;
        std::thread writer([&rt] {
          sched_param p = {};
          p.sched_priority = 1;
          if (::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &p) != 0) {
            rt = false;
            return;
          }
          for (std::uint64_t i = 0; i < kN; ++i) HUSH_TRACE(mt, seq, 0u, i);
        });
        writer.join();
        if (!rt) {
          r.error = "skip: SCHED_FIFO not permitted";
          return r;
        }
        s->Stop();
        r.numbers = {s->Stats().events_discarded};
        return r;
      },
      &report, &failure, /*timeout_s=*/30);
  ASSERT_TRUE(ran) << failure;
  if (report.error.rfind("skip:", 0) == 0) GTEST_SKIP() << report.error;
  ASSERT_EQ(report.numbers.size(), 1u) << report.error;
  const std::uint64_t discarded = report.numbers[0];
  EXPECT_GT(discarded, 0u) << "the consumer did run: the scenario was not reproduced";
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size() + discarded, kN);
  const hushtest::RecordedLosses lost = hushtest::ReadRecordedLosses(out);
  ASSERT_TRUE(lost.ok);
  EXPECT_EQ(lost.discarded, discarded) << "losses the trace does not record";
  EXPECT_EQ(t.TotalDiscarded(), discarded) << "losses babeltrace2 does not report";
}

INSTANTIATE_TEST_SUITE_P(Sizes, TinyBuffer,
                         testing::Values(std::size_t{16} << 10, std::size_t{24} << 10,
                                         std::size_t{32} << 10, std::size_t{40} << 10,
                                         std::size_t{64} << 10),
                         [](const testing::TestParamInfo<std::size_t>& info) {
                           return std::to_string(info.param >> 10) + "k";
                         });

// ---------------------------------------------------------------------------------------------
// Signals: an event emitted by a signal handler while the thread is inside an event
//
// Regression test of a fixed bug; what was wrong: the interrupted event can go back in time, see flight_test.cc (SignalTest).
// ---------------------------------------------------------------------------------------------

TEST_F(SignalTest, StreamModeTraceStaysReadableAndCountsAddUp) {
  TempDir dir("signal");
  auto s = Start(dir.Sub("trace"), hush::Mode::kStream, 8 << 20);
  ASSERT_NE(s, nullptr);
  HUSH_TRACE(mt, sig, std::uint64_t{999999});
  const SignalStormResult r = SignalStorm(300);
  s->Stop();
  const hush::SessionStats stats = s->Stats();
  const std::uint64_t emitted = r.loop_events + g_sig_emitted.load() + 1;
  EXPECT_GE(stats.events_discarded, g_sig_nested.load());
  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size() + stats.events_discarded, emitted);
  const hushtest::RecordedLosses lost = hushtest::ReadRecordedLosses(s->output_dir());
  ASSERT_TRUE(lost.ok);
  EXPECT_EQ(lost.discarded, stats.events_discarded);
  for (const TraceEvent& e : t.events) {
    if (e.name == "mt:padded") {
      ASSERT_EQ(e.S("pad"), std::string(600, 'p')) << "corrupted event";
    }
  }
  // Signal events that made it are in order per thread. SIGALRM is process-directed: handlers
  // may run on two threads at once, so numbers taken on different threads can interleave.
  std::map<std::int64_t, std::uint64_t> prev_by_thread;
  for (const TraceEvent& e : t.events) {
    if (e.name != "mt:sig" || e.U("n") == 999999) continue;
    const auto it = prev_by_thread.find(e.vtid);
    if (it != prev_by_thread.end()) {
      EXPECT_GT(e.U("n"), it->second) << "thread " << e.vtid;
    }
    prev_by_thread[e.vtid] = e.U("n");
  }
  const hushtest::ProcessResult cli = hushtest::RunBabeltrace(s->output_dir());
  EXPECT_TRUE(cli.exited && cli.exit_code == 0) << cli.Describe();
  EXPECT_EQ(cli.err.find("ERROR"), std::string::npos) << cli.err.substr(0, 2000);
}

// ---------------------------------------------------------------------------------------------
// The buffer budget (SessionOptions::buffer_budget, ring/ring_buffer.h "Budget")
// ---------------------------------------------------------------------------------------------

// Blocks the ring files of a trace hold now (what its rings take of the page cache or tmpfs).
std::uint64_t RingFileBytes(const std::string& trace) {
  std::uint64_t bytes = 0;
  const std::string rings = hushtest::RingDirectory(trace);
  for (const std::string& name : hushtest::ListDir(rings)) {
    struct stat st;
    if (name.rfind(".ring_", 0) == 0 && ::lstat((rings + "/" + name).c_str(), &st) == 0) {
      bytes += static_cast<std::uint64_t>(st.st_blocks) * 512;
    }
  }
  return bytes;
}

// Options of a session of mt:* events with 1 MiB rings (8 sub-buffers of 128 KiB) and `budget`.
hush::SessionOptions BudgetOptions(const std::string& dir, std::size_t budget,
                                   hush::Mode mode = hush::Mode::kStream) {
  hush::SessionOptions o;
  o.events = {"mt:*"};
  o.output_dir = dir;
  o.mode = mode;
  o.buffer_size = 1 << 20;
  o.buffer_budget = budget;
  return o;
}

// Issue 17: 400 live threads, 1 MiB rings, a budget of 4 MiB (400 full rings would be 400 MiB).
// Every thread's short burst is recorded or counted; the ring files never hold more than the
// budget; past half of it, threads got compact rings, so far more threads than 4 full rings'
// worth have a ring; the ones that found the budget spent are counted as without a buffer.
TEST(Budget, FourHundredLiveThreadsStayWithinTheBudgetAndEveryEventIsRecordedOrCounted) {
  TempDir dir("budget");
  const hush::SessionOptions o = BudgetOptions(dir.Sub("trace"), 4 << 20);
  std::string error;
  auto s = hush::Session::Start(o, &error);
  ASSERT_NE(s, nullptr) << error;
  constexpr std::uint32_t kThreads = 400;
  constexpr std::uint64_t kBurst = 5;
  std::mutex mu;
  std::condition_variable cv;
  std::uint32_t done = 0;
  bool release = false;
  std::vector<std::thread> pool;
  for (std::uint32_t k = 0; k < kThreads; ++k) {
    pool.emplace_back([&, k] {
      for (std::uint64_t i = 0; i < kBurst; ++i) HUSH_TRACE(mt, seq, k, i);
      std::unique_lock<std::mutex> lock(mu);
      ++done;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });  // alive, holding its ring, until all are done
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done == kThreads; });
  }
  const std::uint64_t held = RingFileBytes(o.output_dir);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& t : pool) t.join();
  s->Stop();
  const hush::SessionStats stats = s->Stats();
  EXPECT_LE(held, o.buffer_budget) << "ring files hold more than the budget";
  // 4 full rings fit the budget; compact rings give at least 4 times as many threads a ring, even
  // where every ring is reserved whole at creation (qemu-user: 31; lazily reserved: ~270).
  EXPECT_GT(stats.rings, 4u * 4) << "compact rings: far more threads than full rings fit";
  EXPECT_LT(stats.rings, kThreads) << "a 4 MiB budget cannot give 400 threads a ring each";
  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size() + t.TotalDiscarded() + stats.events_without_buffer, kThreads * kBurst);
  EXPECT_EQ(t.events.size(), std::uint64_t{stats.rings} * kBurst) << "a thread with a ring loses nothing";
  const auto views = PerThread(t);
  EXPECT_EQ(views.size(), stats.rings);
}

// A ring that would grow past the budget: the sub-buffers it cannot pay for are never used, its
// events beyond them are discarded and counted, and the files hold no more than the budget.
// Budget: one full ring (1 MiB + header). Another live thread holds a ring's header and first
// sub-buffer, so this thread's ring can pay for 6 of its 8 sub-buffers (flight mode: no write-out
// recycles them, the ring alone decides what is kept).
TEST(Budget, ARingThatCannotGrowDiscardsAndCountsInsteadOfTakingMemory) {
  // Where MADV_POPULATE_WRITE reserves nothing (kernels < 5.14, qemu-user), every ring is reserved
  // whole when it is created: the other thread's ring takes the whole budget and this thread gets
  // no ring at all (counted without a buffer), so there is no ring that grows to test.
  if (const std::string why = hushtest::PopulateWriteProblem(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir("budget");
  const hush::SessionOptions o = BudgetOptions(dir.Sub("trace"), (1 << 20) + 4096, hush::Mode::kFlight);
  std::string error;
  auto s = hush::Session::Start(o, &error);
  ASSERT_NE(s, nullptr) << error;
  std::mutex mu;
  std::condition_variable cv;
  int step = 0;
  std::thread other([&] {
    HUSH_TRACE(mt, seq, 1u, std::uint64_t{0});
    std::unique_lock<std::mutex> lock(mu);
    step = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return step == 2; });
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return step == 1; });
  }
  constexpr std::uint64_t kN = 200000;  // 16 B events: ~1.5 MiB, more than 6 sub-buffers hold
  for (std::uint64_t i = 0; i < kN; ++i) HUSH_TRACE(mt, seq, 0u, i);
  const std::uint64_t held = RingFileBytes(o.output_dir);
  {
    std::lock_guard<std::mutex> lock(mu);
    step = 2;
  }
  cv.notify_all();
  other.join();
  s->Stop();
  const hush::SessionStats stats = s->Stats();
  EXPECT_LE(held, o.buffer_budget) << "ring files hold more than the budget";
  EXPECT_EQ(stats.rings, 2u);
  EXPECT_GT(stats.events_discarded, 0u) << "the ring could not grow to 8 sub-buffers";
  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size() + stats.events_discarded + stats.events_overwritten, kN + 1);
  std::uint64_t mine = 0;
  for (const TraceEvent& e : t.events) mine += e.U("thread") == 0 ? 1 : 0;
  EXPECT_GT(mine * 16, std::uint64_t{5} * (128 << 10)) << "it kept the sub-buffers it paid for";
  EXPECT_LT(mine * 16, std::uint64_t{7} * (128 << 10));
}

TEST(Budget, ABudgetSmallerThanOneRingIsRefusedAtStart) {
  TempDir dir("budget");
  const hush::SessionOptions o = BudgetOptions(dir.Sub("trace"), 1 << 20);  // no room for the header
  std::string error;
  EXPECT_EQ(hush::Session::Start(o, &error), nullptr);
  EXPECT_NE(error.find("cannot hold one ring"), std::string::npos) << error;
  EXPECT_FALSE(hushtest::Exists(o.output_dir)) << "nothing is created";
}

}  // namespace
}  // namespace hushtest_mt
