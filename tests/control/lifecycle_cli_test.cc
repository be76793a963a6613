// A long-running process traced on and off through the CLI, as an operator would: `hushtrace
// start PID` / `stop PID` thousands of times, with starts that fail mixed in, while the program
// emits an event every 100 µs. Its descriptors, trace-file mappings (where unlinked ring files
// would hold disk space) and resident memory stay flat, and tracing still works at the end.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_test_util.h"
#include "control/control_test_util.h"
#include "support/process_usage.h"

namespace hush::controltest {
namespace {

using clitest::RunCommand;
using clitest::RunResult;
using testsupport::Describe;
using testsupport::ProcessUsage;
using testsupport::ReadProcessUsage;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kCycles = 200;  // the sanitizers slow every CLI run ~10x; the soak runs longer
#else
constexpr int kCycles = 600;  // three times the 200 (issues/13); `make soak` runs longer
#endif
constexpr int kWarmup = 10;
constexpr std::size_t kBuffer = 64 * 1024;

RunResult Cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {HUSHTRACE_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

// control_target paced, with the control socket open from the start.
class PacedTarget {
 public:
  PacedTarget() {
    out_ = clitest::MakeTempDir();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setenv("HUSHTRACE_CONTROL", "1", 1);
      ::execl(CONTROL_TARGET, CONTROL_TARGET, "paced", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Until the socket exists: `ps` lists the process once the runtime answers.
    for (int i = 0; i < 500; ++i) {
      if (Cli({"status", std::to_string(pid_)}).status == 0) return;
      ::usleep(10000);
    }
  }
  ~PacedTarget() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    clitest::RemoveTree(out_);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::string out_;
};

void Cycle(const PacedTarget& target, const TempDir& root, int i) {
  const std::string pid = std::to_string(target.pid());
  const std::string dir = root.path() + "/t" + std::to_string(i);
  const std::string size = std::to_string(kBuffer);
  if (i % 4 == 3) {
    // A start that fails, alternately: an output directory that already holds a trace (the
    // previous cycle's, kept for this), and a filter that names no field of the events.
    RunResult bad;
    if (i % 8 == 3) {
      bad = Cli({"start", pid, "-e", "ctl:*", "-o", root.path() + "/kept", "--buffer-size", size});
    } else {
      bad = Cli({"start", pid, "-e", "ctl:*", "-o", dir + "-bad", "--filter", "nosuchfield > 3"});
      EXPECT_FALSE(clitest::PathExists(dir + "-bad")) << "a failed start left its directory";
    }
    EXPECT_NE(bad.status, 0) << "cycle " << i << ": " << bad.out << bad.err;
  }
  const RunResult start = Cli({"start", pid, "-e", "ctl:*", "-o", dir, "--buffer-size", size});
  ASSERT_EQ(start.status, 0) << "cycle " << i << ": " << start.out << start.err;
  const RunResult stop = Cli({"stop", pid});
  ASSERT_EQ(stop.status, 0) << "cycle " << i << ": " << stop.out << stop.err;
  clitest::RemoveTree(dir);
}

TEST(LifecycleCli, StartStopCyclesKeepTheProcessFlat) {
  TempDir root;
  PacedTarget target;
  const std::string pid = std::to_string(target.pid());
  // The trace the failing starts aim at.
  ASSERT_EQ(Cli({"start", pid, "-e", "ctl:*", "-o", root.path() + "/kept"}).status, 0);
  ASSERT_EQ(Cli({"stop", pid}).status, 0);

  for (int i = 0; i < kWarmup; ++i) Cycle(target, root, i);
  const ProcessUsage before = ReadProcessUsage(target.pid(), root.path());
  ASSERT_TRUE(before.ok);
  for (int i = kWarmup; i < kWarmup + kCycles && !HasFatalFailure(); ++i) Cycle(target, root, i);
  // The server closes the last `stop`'s connection after its work past the reply (freeing the
  // stopped session, server.cc), which a loaded machine may not have scheduled yet when the CLI
  // has exited: a descriptor more for a moment, not a leak (once, under ctest -j2 beside the
  // soak test). A leak stays past the wait.
  ProcessUsage after = ReadProcessUsage(target.pid(), root.path());
  for (int tries = 0; after.ok && after.fds > before.fds && tries < 200; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    after = ReadProcessUsage(target.pid(), root.path());
  }
  ASSERT_TRUE(after.ok);
  const std::string figures = "before: " + Describe(before) + "\nafter:  " + Describe(after);
  std::printf("%d start/stop cycles (%d failed starts)\n%s\n", kCycles, kCycles / 4, figures.c_str());
  SCOPED_TRACE(figures);
  EXPECT_LE(after.fds, before.fds);
  // At most one ring more: a session whose grace period had not ended yet when it stopped.
  EXPECT_LE(after.file_map_bytes, before.file_map_bytes + kBuffer + 4096);
  EXPECT_LE(after.deleted_map_bytes, kBuffer + 4096);
#if !defined(__SANITIZE_THREAD__)
  // Not under TSan: it keeps the shadow of every range the program ever mapped reserved after
  // munmap (its pages given back), and each session's ring lands at a new address, so VmSize
  // grows ~2 MiB a cycle there with nothing of ours left mapped (the mappings are checked above).
  EXPECT_LE(after.vm_bytes, before.vm_bytes + kBuffer + 4096 + 1024 * 1024);
#endif
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_LE(after.rss_bytes, before.rss_bytes + 1024 * 1024);
#endif

  // Tracing still works: one more session, 100 ms, every event of it in the trace.
  const std::string last = root.path() + "/last";
  ASSERT_EQ(Cli({"start", pid, "-e", "ctl:*", "-o", last}).status, 0);
  ::usleep(100 * 1000);
  const RunResult status = Cli({"status", pid});
  EXPECT_EQ(StatusValue(status.out, "buffers"), "1") << status.out;
  ASSERT_EQ(Cli({"stop", pid}).status, 0);
  const TickSummary ticks = ReadTicks(last);
  ASSERT_TRUE(ticks.error.empty()) << ticks.error;
  EXPECT_GT(ticks.ticks, 100u);  // ~1,000 at 100 µs; at least a tenth on a loaded machine
  EXPECT_TRUE(ticks.consecutive);
}

// `hushtrace stop` replies before the stopped session is freed (src/control/server.cc: once the
// server has been idle 20 ms): the trace is complete when the CLI returns, and the rings' mappings
// and the consumer thread are gone shortly after, without another request.
TEST(LifecycleCli, StoppedSessionIsGivenBackAfterTheReply) {
  TempDir root;
  PacedTarget target;
  const std::string pid = std::to_string(target.pid());
  const ProcessUsage before = ReadProcessUsage(target.pid(), root.path());
  ASSERT_TRUE(before.ok);
  EXPECT_EQ(before.file_maps, 0) << Describe(before);
  const std::string dir = root.path() + "/t";
  ASSERT_EQ(Cli({"start", pid, "-e", "ctl:*", "-o", dir}).status, 0);
  ::usleep(50 * 1000);
  const ProcessUsage during = ReadProcessUsage(target.pid(), root.path());
  EXPECT_EQ(during.file_maps, 1) << Describe(during);  // the paced thread's ring
  const RunResult stop = Cli({"stop", pid});
  ASSERT_EQ(stop.status, 0) << stop.out << stop.err;
  // Every event is on disk at the reply: the trace reads whole, ticks without a gap.
  const TickSummary ticks = ReadTicks(dir);
  ASSERT_TRUE(ticks.error.empty()) << ticks.error;
  EXPECT_GT(ticks.ticks, 10u);
  EXPECT_TRUE(ticks.consecutive);
  // Freed without another request: within a few seconds even on a loaded machine.
  ProcessUsage after;
  for (int i = 0; i < 500; ++i) {
    after = ReadProcessUsage(target.pid(), root.path());
    if (after.ok && after.file_maps == 0 && after.fds <= before.fds) break;
    ::usleep(10 * 1000);
  }
  EXPECT_EQ(after.file_maps, 0) << Describe(after);
  EXPECT_LE(after.fds, before.fds) << "before: " << Describe(before) << "\nafter: " << Describe(after);
}

}  // namespace
}  // namespace hush::controltest
