// The fork gate (src/base/fork_gate.h): fork() waits for a library thread's work section and
// for library threads still starting, and a fork child gets a fresh gate before its hook runs.
#include "base/fork_gate.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

#if defined(__SANITIZE_THREAD__)
#define SKIP_IF_GATE_OFF() GTEST_SKIP() << "the gate is off under TSan (src/session/fork_gate.cc)"
#else
#define SKIP_IF_GATE_OFF() (void)0
#endif
using hush::base::ForkGateSection;

// Forks a child that exits 0 at once; returns when fork() returned in the parent. The child's
// status is checked (a deadlocked child would hang the test, which the harness times out).
Clock::time_point ForkAndReap() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  const Clock::time_point returned = Clock::now();
  EXPECT_GT(pid, 0);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  return returned;
}

TEST(ForkGate, ForkWaitsUntilAWorkSectionEnds) {
  SKIP_IF_GATE_OFF();
  hush::base::InstallForkGate();
  std::atomic<bool> inside{false};
  Clock::time_point left;
  std::thread worker([&] {
    const ForkGateSection working;
    inside.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = Clock::now();  // before the section ends: fork() cannot have returned yet
  });
  while (!inside.load()) std::this_thread::yield();
  const Clock::time_point forked = ForkAndReap();
  worker.join();
  EXPECT_LE(left, forked);
}

TEST(ForkGate, ForkWaitsForALibraryThreadStillStarting) {
  SKIP_IF_GATE_OFF();
  hush::base::InstallForkGate();
  hush::base::ThreadStarting();  // as StartLibraryThread does before creating the thread
  Clock::time_point started;
  std::thread worker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the runtime's start-up
    started = Clock::now();
    hush::base::ThreadStarted();
  });
  const Clock::time_point forked = ForkAndReap();
  worker.join();
  EXPECT_LE(started, forked);
}

std::atomic<int> g_hook_runs{0};

// In the child: a section is entered at once (as by the sched recorder thread the session's
// child hook starts; no thread here: TSan forbids starting one in a multi-threaded fork's child).
// With the parent's gate still write-held it would block for ever.
void ChildHook() {
  g_hook_runs.fetch_add(1);
  const ForkGateSection working;
}

TEST(ForkGate, TheChildHookRunsWithAFreshGate) {
  hush::base::InstallForkGate(ChildHook);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The hook ran before fork() returned here; a grandchild fork goes through the gate again.
    int status = 0;
    const pid_t grandchild = ::fork();
    if (grandchild == 0) ::_exit(g_hook_runs.load() == 2 ? 0 : 3);
    if (grandchild < 0 || ::waitpid(grandchild, &status, 0) != grandchild) ::_exit(4);
    ::_exit(g_hook_runs.load() == 1 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 5);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_EQ(g_hook_runs.load(), 0) << "the hook runs in children only";
}

}  // namespace
