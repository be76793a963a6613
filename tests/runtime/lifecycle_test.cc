// Sessions that come and go: every stopped or failed session gives back what it took (descriptors,
// ring mappings and the space of their files, memory) while the program's threads keep emitting.
// The same cycle through the CLI, against a separate process, is tests/control/lifecycle_cli_test.
#include <gtest/gtest.h>
#include <hushtrace/hushtrace.h>
#include <hushtrace/session.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "runtime/test_util.h"
#include "session/core.h"
#include "support/process_usage.h"

HUSH_TRACEPOINT(lifecycle, tick, (std::uint64_t, seq))

namespace {

using hush::testsupport::Describe;
using hush::testsupport::ProcessUsage;
using hush::testsupport::ReadProcessUsage;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kCycles = 150;
#else
constexpr int kCycles = 400;
#endif
constexpr int kWarmup = 10;
constexpr std::size_t kBuffer = 256 * 1024;

// Emits lifecycle:tick every ~100 µs until stopped: the program whose sessions come and go.
class Emitter {
 public:
  Emitter() : thread_([this] { Run(); }) {}
  ~Emitter() {
    stop_.store(true);
    thread_.join();
  }
  std::uint64_t emitted() const { return seq_.load(); }

 private:
  void Run() {
    const timespec pause = {0, 100 * 1000};
    while (!stop_.load(std::memory_order_relaxed)) {
      HUSH_TRACE(lifecycle, tick, seq_.load(std::memory_order_relaxed));
      seq_.fetch_add(1, std::memory_order_relaxed);
      ::nanosleep(&pause, nullptr);
    }
  }
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> seq_{0};
  std::thread thread_;
};

hush::SessionOptions Options(const std::string& dir) {
  hush::SessionOptions o;
  o.events = {"lifecycle:*"};
  o.output_dir = dir;
  o.buffer_size = kBuffer;
  return o;
}

// One session: started, given time for the emitter to attach and write, stopped, removed.
void Cycle(const hushtest::TempDir& root, int i, bool failing) {
  const std::string dir = root.Sub("t" + std::to_string(i));
  std::string error;
  if (failing) {
    // Two ways a start fails after the checks of its options passed: a filter that binds to no
    // event, and a directory that already holds a trace.
    hush::SessionOptions bad = Options(dir);
    bad.filter = "nosuchfield > 3";
    EXPECT_EQ(hush::Session::Start(bad, &error), nullptr);
    EXPECT_FALSE(hushtest::Exists(dir)) << "a failed start left " << dir;
    ASSERT_TRUE(hushtest::WriteFile(root.Sub("full"), ""));
    EXPECT_EQ(hush::Session::Start(Options(root.path()), &error), nullptr);  // not empty
  }
  auto session = hush::Session::Start(Options(dir), &error);
  ASSERT_NE(session, nullptr) << error;
  const timespec pause = {0, 1000 * 1000};
  ::nanosleep(&pause, nullptr);
  session->Stop();
  hushtest::RemoveTree(dir);
}

TEST(Lifecycle, RepeatedSessionsKeepDescriptorsMappingsAndMemoryFlat) {
  hushtest::TempDir root("lifecycle");
  Emitter emitter;
  for (int i = 0; i < kWarmup; ++i) Cycle(root, i, i % 4 == 3);
  const ProcessUsage before = ReadProcessUsage(::getpid(), root.path());
  ASSERT_TRUE(before.ok);
  for (int i = kWarmup; i < kWarmup + kCycles; ++i) Cycle(root, i, i % 4 == 3);
  const ProcessUsage after = ReadProcessUsage(::getpid(), root.path());
  ASSERT_TRUE(after.ok);
  SCOPED_TRACE("before: " + Describe(before) + "\nafter:  " + Describe(after));
  EXPECT_LE(after.fds, before.fds);
  // At most the ring of one session whose grace period was still running (a thread inside an
  // event when it stopped): it is freed by the next start or stop.
  EXPECT_LE(after.file_map_bytes, before.file_map_bytes + kBuffer + 4096);
  EXPECT_LE(after.deleted_map_bytes, kBuffer + 4096);
  EXPECT_LE(hush::session::RetiredSessions(), 1u);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // The sanitizers' allocators keep freed memory in quarantine: RSS says nothing there.
  EXPECT_LE(after.rss_bytes, before.rss_bytes + 1024 * 1024);
#endif
  EXPECT_GT(emitter.emitted(), 0u);
}

TEST(Lifecycle, FailedStartsLeaveTracingWorking) {
  // The report: after failed starts, a session claimed to be active with its events
  // enabled, yet no buffer and no event. A failed start is never visible to emitting threads.
  hushtest::TempDir root("lifecycle-failed");
  Emitter emitter;
  const ProcessUsage before = ReadProcessUsage(::getpid(), root.path());
  std::string error;
  for (int i = 0; i < 50; ++i) {
    hush::SessionOptions bad = Options(root.Sub("bad"));
    bad.filter = "nosuchfield > 3";
    ASSERT_EQ(hush::Session::Start(bad, &error), nullptr);
    EXPECT_NE(error.find("filter applies to no enabled event"), std::string::npos) << error;
  }
  EXPECT_FALSE(hushtest::Exists(root.Sub("bad")));
  EXPECT_LE(ReadProcessUsage(::getpid(), root.path()).fds, before.fds);
  auto session = hush::Session::Start(Options(root.Sub("good")), &error);
  ASSERT_NE(session, nullptr) << error;
  const std::uint64_t from = emitter.emitted();
  while (emitter.emitted() < from + 200) std::this_thread::yield();
  session->Stop();
  const hush::SessionStats stats = session->Stats();  // final totals after Stop
  EXPECT_EQ(stats.rings, 1u);
  EXPECT_GE(stats.events_written, 150u);
  const hushtest::Trace trace = hushtest::ReadTrace(root.Sub("good"));
  ASSERT_TRUE(trace.ok) << trace.error;
  EXPECT_EQ(trace.events.size(), stats.events_written);
}

TEST(Lifecycle, StoppedSessionUnmapsItsRingsAndClosesItsFiles) {
  hushtest::TempDir root("lifecycle-unmap");
  std::string error;
  auto session = hush::Session::Start(Options(root.Sub("t")), &error);
  ASSERT_NE(session, nullptr) << error;
  std::atomic<int> step{0};
  std::thread other([&] {
    HUSH_TRACE(lifecycle, tick, 1);
    step.store(1);
    while (step.load() != 2) std::this_thread::yield();  // alive: its ring stays its own
  });
  while (step.load() != 1) std::this_thread::yield();
  HUSH_TRACE(lifecycle, tick, 2);
  const ProcessUsage during = ReadProcessUsage(::getpid(), root.path());
  // A trace on a disk file system has its rings in a directory of their own on /dev/shm
  // (format/ring_location.h), which the session holds open too.
  const bool rings_apart = hushtest::RingDirectory(root.Sub("t")) != root.Sub("t");
  step.store(2);
  other.join();
  EXPECT_EQ(during.file_maps, 2) << Describe(during);  // two threads, two rings
  session->Stop();
  const ProcessUsage after = ReadProcessUsage(::getpid(), root.path());
  EXPECT_EQ(after.file_maps, 0) << Describe(after);
  // The trace directory (and the rings'); no stream file is held open between write-outs (issue
  // 17, item 3: descriptors do not grow with the number of threads).
  EXPECT_EQ(after.fds, during.fds - 1 - (rings_apart ? 1 : 0)) << "the trace directory";
  EXPECT_EQ(hushtest::RingDirectory(root.Sub("t")), root.Sub("t")) << "the rings' directory is removed";
  EXPECT_EQ(hush::session::RetiredSessions(), 0u);
  EXPECT_EQ(session->Stats().events_written, 2u);
}

}  // namespace
