// Process-level tests: traced child programs (child_main.cc, linked with the shared and with the
// static runtime) started with HUSHTRACE_* in their environment.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "emulated_exec.h"
#include "runtime/test_util.h"

namespace {

using hushtest::Child;
using hushtest::ChildEnv;
using hushtest::ProcessResult;
using hushtest::ReadTrace;
using hushtest::RunProcess;
using hushtest::TempDir;
using hushtest::Trace;
using hushtest::TraceEvent;

std::size_t CountLines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n' ? 1 : 0;
  return n;
}

// Per thread field value -> sequence numbers in trace order.
std::map<std::uint64_t, std::vector<std::uint64_t>> SeqsByThread(const Trace& t) {
  std::map<std::uint64_t, std::vector<std::uint64_t>> out;
  for (const TraceEvent& e : t.events) {
    if (e.name == "child:seq") out[e.U("thread")].push_back(e.U("seq"));
  }
  return out;
}

bool IsRange(const std::vector<std::uint64_t>& v, std::uint64_t from, std::uint64_t to) {
  if (v.size() != to - from) return false;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != from + i) return false;
  }
  return true;
}

class ProcessTest : public testing::TestWithParam<const char*> {
 protected:
  std::string exe() const { return hushtest::HelperPath(GetParam()); }
  ProcessResult Run(const std::vector<std::string>& args, const std::vector<std::string>& env) {
    std::vector<std::string> argv = {exe()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, ChildEnv(env), 120);
  }
  static std::string Out(const std::string& dir) { return "HUSHTRACE_OUTPUT=" + dir; }
};

// ---------------------------------------------------------------------------------------------
// Sessions from the environment
// ---------------------------------------------------------------------------------------------

TEST_P(ProcessTest, EnvironmentStartsASessionThatWritesATrace) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  const ProcessResult r = Run({"emit", "1000"}, {"HUSHTRACE_EVENTS=child:*", Out(out)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: emitted 1000\n");
  EXPECT_EQ(r.err, "") << "a working session prints nothing";
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  const auto seqs = SeqsByThread(t);
  ASSERT_EQ(seqs.size(), 1u);
  EXPECT_TRUE(IsRange(seqs.begin()->second, 0, 1000));
  EXPECT_EQ(t.TotalDiscarded(), 0u);
}

TEST_P(ProcessTest, EnvironmentWithExplicitStreamModeAndBufferSize) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  // 3 x 5000 events of 16 bytes fit in one 4M ring even if the threads share it: no loss.
  const ProcessResult r =
      Run({"threads", "3", "5000"}, {"HUSHTRACE_EVENTS=nomatch:*, child:seq", Out(out),
                                     "HUSHTRACE_MODE=stream", "HUSHTRACE_BUFFER_SIZE=4M"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.err, "");
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  const auto seqs = SeqsByThread(t);
  ASSERT_EQ(seqs.size(), 3u);
  for (const auto& [thread, v] : seqs) EXPECT_TRUE(IsRange(v, 0, 5000)) << "thread " << thread;
  EXPECT_EQ(t.TotalDiscarded(), 0u);
}

TEST_P(ProcessTest, EnvironmentWithoutEventsStartsNothing) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  const ProcessResult r = Run({"emit", "10"}, {Out(out), "HUSHTRACE_MODE=flight"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.err, "");
  EXPECT_FALSE(hushtest::Exists(out));
}

TEST_P(ProcessTest, InvalidModePrintsOneMessageAndTheProgramRunsNormally) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  const ProcessResult r =
      Run({"emit", "100"}, {"HUSHTRACE_EVENTS=child:*", Out(out), "HUSHTRACE_MODE=fligth"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: emitted 100\n");
  EXPECT_EQ(CountLines(r.err), 1u) << "exactly one message:\n" << r.err;
  EXPECT_EQ(r.err.rfind("hushtrace:", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("HUSHTRACE_MODE"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fligth"), std::string::npos) << "names the bad value:\n" << r.err;
  EXPECT_FALSE(hushtest::Exists(out)) << "no trace for a rejected configuration";
}

TEST_P(ProcessTest, InvalidBufferSizesPrintOneMessageAndTheProgramRunsNormally) {
  for (const char* bad : {"12q", "8k", "-5", "0", "k", "1.5M", "16383"}) {
    SCOPED_TRACE(std::string("HUSHTRACE_BUFFER_SIZE=") + bad);
    TempDir dir("proc");
    const std::string out = dir.Sub("trace");
    const ProcessResult r = Run({"emit", "100"}, {"HUSHTRACE_EVENTS=child:*", Out(out),
                                                  std::string("HUSHTRACE_BUFFER_SIZE=") + bad});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
    EXPECT_EQ(r.out, "child: emitted 100\n");
    EXPECT_EQ(CountLines(r.err), 1u) << "exactly one message:\n" << r.err;
    EXPECT_EQ(r.err.rfind("hushtrace:", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("HUSHTRACE_BUFFER_SIZE"), std::string::npos) << r.err;
    EXPECT_FALSE(hushtest::Exists(out));
  }
}

// Regression test of a fixed bug; what was wrong: every size from the documented minimum (16k) up to 32k-1 is accepted but gives
// sub-buffers of 0 bytes (src/session/core.cc, Core::Start); the program crashes on its first
// event.
TEST_P(ProcessTest, SmallestAcceptedBufferSizesWork) {
  for (const char* size : {"16k", "16384", "20k", "31k", "32k"}) {
    SCOPED_TRACE(std::string("HUSHTRACE_BUFFER_SIZE=") + size);
    TempDir dir("proc");
    const std::string out = dir.Sub("trace");
    const ProcessResult r = Run({"emit", "5000"}, {"HUSHTRACE_EVENTS=child:*", Out(out),
                                                   std::string("HUSHTRACE_BUFFER_SIZE=") + size});
    if (!r.exited || r.exit_code != 0) {
      ADD_FAILURE() << r.Describe();
      continue;  // the other sizes still run
    }
    EXPECT_EQ(r.out, "child: emitted 5000\n");
    const Trace t = ReadTrace(out);
    if (!t.ok) {
      ADD_FAILURE() << t.error;
      continue;
    }
    const hushtest::RecordedLosses lost = hushtest::ReadRecordedLosses(out);
    EXPECT_LE(t.events.size() + lost.discarded, 5000u);
    EXPECT_GT(t.events.size(), 0u);
  }
}

// A program traced from the environment, built with AddressSanitizer, must still exit 0: a leak
// report would turn every traced test run of an ASan build into a failure. (Skipped in builds
// without ASan: there is no leak checker to run.)
// Regression test of a fixed bug; what was wrong: the Session started by StartFromEnvironment() is kept in `g_env_session`
// (src/session/session_api.cc), a write-only variable with internal linkage that the compiler
// removes, so LeakSanitizer reports the Session (71 bytes) and the program exits non-zero.
TEST_P(ProcessTest, TracedProgramExitsCleanlyUnderLeakSanitizer) {
#if !defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "not an AddressSanitizer build";
#else
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  const ProcessResult r = RunProcess(
      {exe(), "threads", "2", "1000"},
      ChildEnv({"HUSHTRACE_EVENTS=child:*", Out(out), "HUSHTRACE_BUFFER_SIZE=256k"}, true), 120);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.err.find("LeakSanitizer"), std::string::npos) << r.err;
#endif
}

// ---------------------------------------------------------------------------------------------
// Flushing at exit
// ---------------------------------------------------------------------------------------------

TEST_P(ProcessTest, ReturnFromMainFlushesEveryEvent) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  const ProcessResult r = Run({"threads", "4", "20000"},
                              {"HUSHTRACE_EVENTS=child:*", Out(out), "HUSHTRACE_BUFFER_SIZE=4M"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: emitted 80000\n");
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.TotalDiscarded(), 0u) << "a 4M ring per thread holds all 20000 events";
  const auto seqs = SeqsByThread(t);
  ASSERT_EQ(seqs.size(), 4u);
  for (const auto& [thread, v] : seqs) EXPECT_TRUE(IsRange(v, 0, 20000)) << "thread " << thread;
}

TEST_P(ProcessTest, ExitFromAnotherThreadWhileThreadsEmitFlushesEveryEvent) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  const ProcessResult r = Run({"exit-thread", "3", "20000"},
                              {"HUSHTRACE_EVENTS=child:*", Out(out), "HUSHTRACE_BUFFER_SIZE=4M"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: exiting from a thread\n");
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.TotalDiscarded(), 0u);
  ASSERT_EQ(t.Named("child:last").size(), 1u) << "the exiting thread's last event is in the trace";
  EXPECT_EQ(t.Named("child:last")[0]->U("total"), 60000u);
  const auto seqs = SeqsByThread(t);
  ASSERT_EQ(seqs.size(), 3u);
  for (const auto& [thread, v] : seqs) {
    ASSERT_GE(v.size(), 20000u) << "thread " << thread << ": its 20000 events before exit()";
    // Events still being emitted during exit(): a gap-free prefix, nothing out of place.
    EXPECT_TRUE(IsRange(v, 0, v.size())) << "thread " << thread;
  }
}

TEST_P(ProcessTest, FlightModeWritesTheRingsAtExit) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  const ProcessResult r = Run(
      {"emit", "200000"},
      {"HUSHTRACE_EVENTS=child:*", Out(out), "HUSHTRACE_MODE=flight", "HUSHTRACE_BUFFER_SIZE=64k"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  const auto seqs = SeqsByThread(t);
  ASSERT_EQ(seqs.size(), 1u);
  const auto& v = seqs.begin()->second;
  ASSERT_FALSE(v.empty());
  EXPECT_TRUE(IsRange(v, 200000 - v.size(), 200000)) << "the most recent events, without a gap";
  const hushtest::RecordedLosses lost = hushtest::ReadRecordedLosses(out);
  ASSERT_TRUE(lost.ok);
  EXPECT_EQ(v.size() + lost.discarded, 200000u) << "read + recorded losses == emitted";
  EXPECT_EQ(lost.overwritten, lost.discarded);
}

// Starts `flight-wait n1 n2`, sends SIGUSR2 once the first n1 events are emitted and checks that
// the snapshot is on disk while the child still runs; then lets it finish and returns its result.
void SnapshotWithSigusr2(const std::string& exe, const std::string& out, int n1, int n2,
                         ProcessResult* r) {
  Child child(
      {exe, "flight-wait", std::to_string(n1), std::to_string(n2)},
      ChildEnv({"HUSHTRACE_EVENTS=child:*", "HUSHTRACE_OUTPUT=" + out, "HUSHTRACE_MODE=flight"}));
  ASSERT_TRUE(child.started());
  ASSERT_TRUE(child.WaitForOutput("child: ready")) << child.Stderr();
  // Nothing is on disk in flight mode until asked.
  const Trace before = ReadTrace(out);
  ASSERT_TRUE(before.ok) << before.error;
  EXPECT_EQ(before.events.size(), 0u);

  ASSERT_EQ(::kill(child.pid(), SIGUSR2), 0);
  Trace snap;
  for (int i = 0; i < 1000; ++i) {  // a thread of the child writes the snapshot: poll
    snap = ReadTrace(out);
    if (snap.ok && snap.events.size() >= static_cast<std::size_t>(n1)) break;
    ::usleep(10000);
  }
  ASSERT_TRUE(snap.ok) << snap.error;
  const auto mid = SeqsByThread(snap);
  ASSERT_EQ(mid.size(), 1u) << "no event on disk after SIGUSR2";
  EXPECT_TRUE(IsRange(mid.begin()->second, 0, static_cast<std::uint64_t>(n1)))
      << "the snapshot holds the events emitted before it";
  ASSERT_TRUE(child.WriteStdin("go\n"));
  *r = child.Wait();
}

TEST_P(ProcessTest, FlightModeWritesOnSigusr2WhileRunningAndAtExitWithoutDuplicates) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  ProcessResult r;
  SnapshotWithSigusr2(exe(), out, 300, 0, &r);
  if (HasFatalFailure()) return;
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: ready\nchild: done\n");
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  const auto all = SeqsByThread(t);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(IsRange(all.begin()->second, 0, 300)) << "the exit write adds no duplicate";
  EXPECT_EQ(t.TotalDiscarded(), 0u);
}

// Regression test: the part of the open packet written by the snapshot used to end after the
// point where the rest of the packet begins, and babeltrace2 refused the trace (fixed in 6dc7adc;
// also RingPartial.* in runtime_ring_test).
TEST_P(ProcessTest, FlightModeEventsAfterASigusr2SnapshotAreWrittenAtExitOnce) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  ProcessResult r;
  SnapshotWithSigusr2(exe(), out, 300, 200, &r);
  if (HasFatalFailure()) return;
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: ready\nchild: done\n");
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  const auto all = SeqsByThread(t);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(IsRange(all.begin()->second, 0, 500))
      << "every event once: no duplicate of the snapshot";
  EXPECT_EQ(t.TotalDiscarded(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Trace directory safety
// ---------------------------------------------------------------------------------------------

// Every file of the trace is 0600 and every directory 0700, whatever the umask: checked while
// the program runs (the ring files exist then) and after it exits.
TEST_P(ProcessTest, TraceDirectoryIs0700AndFilesAre0600EvenWithUmask0) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  // The trace directory, and the rings' own directory on /dev/shm for a trace on a disk file
  // system (format/ring_location.h).
  auto check = [&](const char* when) {
    SCOPED_TRACE(when);
    int files = 0;
    const std::string rings = hushtest::RingDirectory(out);
    for (const std::string& dir : rings == out ? std::vector<std::string>{out} : std::vector<std::string>{out, rings}) {
      EXPECT_EQ(hushtest::Mode(dir), 0700) << dir;
      for (const std::string& name : hushtest::ListDir(dir)) {
        const std::string path = dir + "/" + name;
        if (dir == rings && name == "trace") continue;  // the ring directory's link to the trace
        EXPECT_EQ(hushtest::Mode(path), 0600) << path;
        ++files;
      }
    }
    return files;
  };
  const mode_t old = ::umask(0);  // inherited by the child
  Child child({exe(), "flight-wait", "100", "100"},
              ChildEnv({"HUSHTRACE_EVENTS=child:*", Out(out)}));
  ::umask(old);
  ASSERT_TRUE(child.started());
  ASSERT_TRUE(child.WaitForOutput("child: ready")) << child.Stderr();
  EXPECT_GE(check("while running"), 3) << "metadata, a stream and its ring";
  EXPECT_TRUE(hushtest::Exists(hushtest::RingPath(out, 0)));
  ASSERT_TRUE(child.WriteStdin("go\n"));
  const ProcessResult r = child.Wait();
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_GE(check("after exit"), 2) << "metadata and a stream";
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size(), 200u);
}

// Why the child cannot be run as another user with setpriv here ("" if it can).
std::string CannotRunAsAnotherUser() {
  if (::geteuid() != 0 || ::access("/usr/bin/setpriv", X_OK) != 0) {
    return "needs root and setpriv to run the child as another user";
  }
  if (hushtest::Emulated()) {
    return "under qemu-user: setpriv (a host program) cannot exec the aarch64 child without binfmt_misc";
  }
  return "";
}

// The rings of a trace on disk go to the user's private directory on /dev/shm
// (format/ring_location.h). One that is not the user's (here made by root for user 65533 before
// the program runs as that user) is refused, never repaired or written into: the session keeps
// its rings in the trace directory and records as usual.
TEST_P(ProcessTest, RingsStayInTheTraceWhenTheUsersShmDirectoryIsAnothers) {
  if (const std::string why = CannotRunAsAnotherUser(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir("proc");
  struct statfs fs;
  if (::statfs(dir.path().c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC) {
    GTEST_SKIP() << "the temporary directory is on tmpfs: its traces keep their rings anyway";
  }
  ASSERT_EQ(::chown(dir.path().c_str(), 65533, 65533), 0);
  const std::string out = dir.Sub("trace");
  // 65533: no other test uses it (control_test's other-user tests use 65534's directory).
  const std::string taken = "/dev/shm/hushtrace-65533";
  const hush::testsupport::ScopedRemoval remove_taken({taken});
  ASSERT_EQ(::mkdir(taken.c_str(), 0700), 0) << taken;  // root's
  hushtest::Child child({"/usr/bin/setpriv", "--reuid=65533", "--regid=65533", "--clear-groups", exe(),
                         "flight-wait", "100", "100"},
                        ChildEnv({"HUSHTRACE_EVENTS=child:*", Out(out)}));
  ASSERT_TRUE(child.started());
  ASSERT_TRUE(child.WaitForOutput("child: ready")) << child.Stderr();
  EXPECT_TRUE(hushtest::Exists(out + "/.ring_0")) << "the ring in the trace directory";
  EXPECT_TRUE(hushtest::ListDir(taken).empty()) << "nothing written into another user's directory";
  ASSERT_TRUE(child.WriteStdin("go\n"));
  const ProcessResult r = child.Wait();
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_FALSE(hushtest::Exists(out + "/.ring_0")) << "removed by the stop";
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size(), 200u);
}

TEST_P(ProcessTest, DirectoryThatAlreadyHoldsATraceIsRefused) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  ProcessResult r = Run({"emit", "10"}, {"HUSHTRACE_EVENTS=child:*", Out(out)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  const std::string metadata = hushtest::ReadFile(out + "/metadata");
  const std::string stream = hushtest::ReadFile(out + "/stream_0");
  ASSERT_FALSE(stream.empty());

  r = Run({"emit", "20"}, {"HUSHTRACE_EVENTS=child:*", Out(out)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: emitted 20\n");
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("already holds a trace"), std::string::npos) << r.err;
  EXPECT_EQ(hushtest::ReadFile(out + "/metadata"), metadata) << "the old trace is untouched";
  EXPECT_EQ(hushtest::ReadFile(out + "/stream_0"), stream);
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size(), 10u);
}

TEST_P(ProcessTest, SymlinkAtTheOutputPathIsNotFollowed) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  const std::string victim = dir.Sub("victim");
  ASSERT_EQ(::mkdir(victim.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(victim.c_str(), out.c_str()), 0);
  const ProcessResult r = Run({"emit", "10"}, {"HUSHTRACE_EVENTS=child:*", Out(out)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: emitted 10\n");
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_TRUE(hushtest::ListDir(victim).empty()) << "nothing may be written through the link";
  EXPECT_EQ(hushtest::Mode(victim), 0700) << "the link's target is not chmod-ed";
}

TEST_P(ProcessTest, DanglingSymlinkAtTheOutputPathIsNotFollowed) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  const std::string victim = dir.Sub("victim");
  ASSERT_EQ(::symlink(victim.c_str(), out.c_str()), 0);
  const ProcessResult r = Run({"emit", "10"}, {"HUSHTRACE_EVENTS=child:*", Out(out)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_FALSE(hushtest::Exists(victim)) << "the link's target must not be created";
}

TEST_P(ProcessTest, SymlinkToAPermissiveDirectoryIsNotTightenedOrUsed) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  const std::string victim = dir.Sub("shared");
  ASSERT_EQ(::mkdir(victim.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(victim.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(victim.c_str(), out.c_str()), 0);
  const ProcessResult r = Run({"emit", "10"}, {"HUSHTRACE_EVENTS=child:*", Out(out)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(hushtest::Mode(victim), 0755);
  EXPECT_TRUE(hushtest::ListDir(victim).empty());
}

TEST_P(ProcessTest, SymlinkedRingFileInsideTheOutputIsNotFollowed) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  const std::string victim = dir.Sub("victim");
  ASSERT_EQ(::mkdir(out.c_str(), 0700), 0);
  ASSERT_TRUE(hushtest::WriteFile(victim, "keep"));
  ASSERT_EQ(::symlink(victim.c_str(), (out + "/.ring_0").c_str()), 0);
  const ProcessResult r = Run({"emit", "10"}, {"HUSHTRACE_EVENTS=child:*", Out(out)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: emitted 10\n");
  EXPECT_EQ(hushtest::ReadFile(victim), "keep") << "nothing written through the link";
  EXPECT_FALSE(r.err.empty()) << "the refusal is reported";
}

TEST_P(ProcessTest, SymlinkedFilesInsideTheOutputAreNotFollowed) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  ASSERT_EQ(::mkdir(out.c_str(), 0700), 0);
  const std::string victim1 = dir.Sub("victim1"), victim2 = dir.Sub("victim2");
  ASSERT_TRUE(hushtest::WriteFile(victim1, "keep1"));
  ASSERT_TRUE(hushtest::WriteFile(victim2, "keep2"));
  ASSERT_EQ(::symlink(victim1.c_str(), (out + "/stream_0").c_str()), 0);
  ASSERT_EQ(::symlink(victim2.c_str(), (out + "/.metadata.tmp").c_str()), 0);
  const ProcessResult r = Run({"emit", "10"}, {"HUSHTRACE_EVENTS=child:*", Out(out)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: emitted 10\n");
  EXPECT_EQ(hushtest::ReadFile(victim1), "keep1");
  EXPECT_EQ(hushtest::ReadFile(victim2), "keep2");
}

// ---------------------------------------------------------------------------------------------
// Resource faults: the trace's file system refuses writes (RLIMIT_FSIZE stands in for a full disk:
// both make write() fail mid-stream; the limit also raises SIGXFSZ, which must not kill the host)
// ---------------------------------------------------------------------------------------------

std::uint64_t LostCountInMessage(const std::string& err) {
  const std::string marker = " events were lost because ";
  const std::size_t at = err.find(marker);
  if (at == std::string::npos) return 0;
  std::size_t begin = err.rfind("hushtrace: ", at);
  if (begin == std::string::npos) return 0;
  return std::stoull(err.substr(begin + 11, at - begin - 11));
}

// A trace whose writes failed part way (file-size limit, full disk), of one thread: it reads,
// holds more than 1,000 events in order, and counts exactly the events missing before its last
// one (events_discarded carries the losses of every kind). Returns its sequence numbers (empty
// after a failure).
std::vector<std::uint64_t> ExpectValidAfterWriteFailures(const std::string& out) {
  const Trace t = ReadTrace(out);
  EXPECT_TRUE(t.ok) << "the trace written before the failure must stay valid: " << t.error;
  auto seqs = SeqsByThread(t);
  EXPECT_EQ(seqs.size(), 1u);
  if (!t.ok || seqs.size() != 1) return {};
  std::vector<std::uint64_t> got = std::move(seqs.begin()->second);
  EXPECT_GT(got.size(), 1000u);
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end()) &&
              std::adjacent_find(got.begin(), got.end()) == got.end());
  const hushtest::RecordedLosses losses = hushtest::ReadRecordedLosses(out);
  EXPECT_TRUE(losses.ok);
  if (!got.empty()) {
    EXPECT_EQ(losses.discarded, got.back() + 1 - got.size());
  }
  return got;
}

// The same after `emitted` events, where whole packets are written or lost: a packet that does
// not fit is lost, a later, smaller one (the last, partial packet) may still fit; the message
// counts every lost event.
void ExpectWholePacketsLostAndCounted(const ProcessResult& r, const std::string& out, std::uint64_t emitted) {
  const std::vector<std::uint64_t> got = ExpectValidAfterWriteFailures(out);
  EXPECT_LT(got.size(), emitted);
  EXPECT_EQ(LostCountInMessage(r.err), emitted - got.size()) << r.err;
}

TEST_P(ProcessTest, FileSizeLimitReachedWhileStreamingKeepsTheTraceValidAndCountsEveryLostEvent) {
  for (const char* mode : {"stream", "flight"}) {
    SCOPED_TRACE(mode);
    TempDir dir("proc");
    const std::string out = dir.Sub("trace");
    constexpr std::uint64_t kEvents = 200'000;  // ~2.6 MB of events against a 256 KiB limit
    const ProcessResult r =
        Run({"fsize", std::to_string(256 << 10), std::to_string(kEvents), "attached"},
            {"HUSHTRACE_EVENTS=child:*", Out(out), std::string("HUSHTRACE_MODE=") + mode,
             "HUSHTRACE_BUFFER_SIZE=16M"});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
    EXPECT_EQ(r.out, "child: emitted 200000\n");
    EXPECT_EQ(CountLines(r.err), 2u) << r.err;  // the first failure, then the total at the end
    EXPECT_NE(r.err.find("writing the trace to " + out + " failed (File too large)"),
              std::string::npos) << r.err;
    ExpectWholePacketsLostAndCounted(r, out, kEvents);  // about 256 KiB of events fit
  }
}

TEST_P(ProcessTest, FileSizeLimitBeforeTheFirstEventRefusesTheRingAndTheProgramRunsOn) {
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  const ProcessResult r = Run({"fsize", std::to_string(64 << 10), "1000", "fresh"},
                              {"HUSHTRACE_EVENTS=child:*", Out(out), "HUSHTRACE_BUFFER_SIZE=1M"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: emitted 1000\n");
  EXPECT_NE(r.err.find("cannot size ring file"), std::string::npos) << r.err;
  // The failure, then the count at the end.
  EXPECT_EQ(CountLines(r.err), 2u) << r.err;
  EXPECT_NE(r.err.find("hushtrace: 1000 events of threads without a buffer were discarded"), std::string::npos)
      << r.err;
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size(), 0u);
}

TEST_P(ProcessTest, BufferAllocationFailureTurnsTracingOffWithAMessageAndTheProgramRunsOn) {
  if (hushtest::Emulated()) {
    GTEST_SKIP() << "under qemu-user RLIMIT_AS limits the emulator's own address-space "
                    "reservations, not the program's mappings";
  }
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  // The address space is limited to 16 MiB over what the child maps before its first event: a
  // 64 MiB ring cannot be mapped.
  const ProcessResult r =
      Run({"aslimit", "1000"}, {"HUSHTRACE_EVENTS=child:*", Out(out), "HUSHTRACE_BUFFER_SIZE=64M"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: emitted 1000\n");
  EXPECT_NE(r.err.find("cannot map ring file .ring_0: Cannot allocate memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hushtrace: 1000 events of threads without a buffer were discarded"), std::string::npos)
      << r.err;
  EXPECT_EQ(CountLines(r.err), 2u) << r.err;
  EXPECT_FALSE(hushtest::Exists(out + "/.ring_0")) << "the refused ring file is removed";
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size(), 0u);
}

TEST_P(ProcessTest, CopyBufferMappingFailureTurnsTracingOffWithAMessageAndTheProgramRunsOn) {
  if (hushtest::Emulated()) {
    GTEST_SKIP() << "under qemu-user RLIMIT_AS limits the emulator's own address-space "
                    "reservations, not the program's mappings";
  }
  TempDir dir("proc");
  const std::string out = dir.Sub("trace");
  // 64 KiB of address space to spare at the first event: the session's copy buffer (one 128 KiB
  // sub-buffer, mapped on its own with the first ring) cannot be mapped.
  const ProcessResult r = Run({"aslimit_tight", "1000"}, {"HUSHTRACE_EVENTS=child:*", Out(out)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: emitted 1000\n");
  EXPECT_NE(r.err.find("cannot map the copy buffer: Cannot allocate memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hushtrace: 1000 events of threads without a buffer were discarded"), std::string::npos)
      << r.err;
  EXPECT_EQ(CountLines(r.err), 2u) << r.err;
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size(), 0u);
  EXPECT_NE(hushtest::ReadFile(out + "/metadata").find("hushtrace_events_without_buffer = 1000;"), std::string::npos);
}

// A scope with a small tmpfs mounted on `path` (needs CAP_SYS_ADMIN).
class SmallTmpfs {
 public:
  SmallTmpfs(const std::string& path, const char* size) : path_(path) {
    ::mkdir(path.c_str(), 0700);
    mounted_ = ::mount("tmpfs", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                       (std::string("size=") + size + ",mode=0700").c_str()) == 0;
    if (!mounted_) why_ = std::strerror(errno);
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }

 private:
  std::string path_;
  bool mounted_ = false;
  std::string why_;
};

TEST_P(ProcessTest, DiskFullWhileStreamingKeepsTheTraceValidAndCountsEveryLostEvent) {
  TempDir dir("proc");
  // 8 MiB for ~13 MB of events: the stream cannot hold them whatever the ring's footprint (a
  // 4 MiB ring, which fits even where all its blocks are reserved at creation, qemu-user). A
  // stream ring grows only as far as its consumer falls behind (ring_layout.h), so growing after
  // the file system filled up fails too: those events are discarded (counted like a full ring's),
  // the ones whose write failed are lost on write. The child's session reports both totals, and
  // every event is in the trace or in exactly one of them.
  const SmallTmpfs fs(dir.Sub("fs"), "8m");
  if (!fs.mounted()) GTEST_SKIP() << "cannot mount an 8 MiB tmpfs here (" << fs.why() << ")";
  const std::string out = dir.Sub("fs/trace");
  constexpr std::uint64_t kEvents = 1'000'000;  // ~13 MB of events
  const ProcessResult r = Run({"session-emit", out, std::to_string(kEvents)}, {});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  unsigned long long emitted = 0, discarded = 0, lost_on_write = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "child: emitted %llu, discarded %llu, lost on write %llu", &emitted,
                        &discarded, &lost_on_write),
            3)
      << r.out;
  EXPECT_EQ(emitted, kEvents);
  EXPECT_GT(lost_on_write, 0u) << "the file system was meant to fill up";
  // The first failure and the total; the final metadata rewrite fails too when the last write
  // left less than a page (the metadata written at start then stays).
  const bool metadata_failed = r.err.find("cannot write metadata: No space left on device") != std::string::npos;
  EXPECT_EQ(CountLines(r.err), metadata_failed ? 3u : 2u) << r.err;
  EXPECT_NE(r.err.find("writing the trace to " + out + " failed (No space left on device)"),
            std::string::npos) << r.err;
  EXPECT_EQ(LostCountInMessage(r.err), lost_on_write) << r.err;
  const std::vector<std::uint64_t> got = ExpectValidAfterWriteFailures(out);
  EXPECT_EQ(got.size() + discarded + lost_on_write, kEvents) << "every event written or counted once";
}

// As root permissions do not stop writes: the child runs as nobody (setpriv), in a directory it
// owns, and the test makes the trace directory read-only while the child streams. Open stream
// files keep being written; what needs a new file fails: a new thread's buffer. The final
// metadata rewrite needs none (it goes over the file in place while it fits) and records the loss.
TEST_P(ProcessTest, OutputDirectoryMadeUnwritableWhileStreamingLosesOnlyWhatNeedsNewFiles) {
  if (const std::string why = CannotRunAsAnotherUser(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir("proc");
  ASSERT_EQ(::chown(dir.path().c_str(), 65534, 65534), 0);
  const std::string out = dir.Sub("trace");
  hushtest::Child child({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", exe(),
                         "unwritable", "1000", "5000"},
                        ChildEnv({"HUSHTRACE_EVENTS=child:*", Out(out), "HUSHTRACE_BUFFER_SIZE=1M"}));
  ASSERT_TRUE(child.started());
  ASSERT_TRUE(child.WaitForOutput("child: ready")) << child.Stderr();
  ASSERT_EQ(::chmod(out.c_str(), 0500), 0);
  ASSERT_TRUE(child.WriteStdin("go\n"));
  const ProcessResult r = child.Wait();
  ::chmod(out.c_str(), 0700);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_EQ(r.out, "child: ready\nchild: done\n");
  // The second thread's files: its ring where the rings are (the trace directory, or the
  // user's directory on /dev/shm for a trace on a disk file system), its stream in the trace.
  EXPECT_TRUE(r.err.find("cannot create ring file .ring_1: Permission denied") != std::string::npos ||
              r.err.find("cannot create stream_1: Permission denied") != std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("hushtrace: 5000 events of threads without a buffer were discarded"), std::string::npos)
      << r.err;
  // The refused buffer and the count; nothing about the metadata, which holds the count too.
  EXPECT_EQ(CountLines(r.err), 2u) << r.err;
  EXPECT_NE(hushtest::ReadFile(out + "/metadata").find("hushtrace_events_without_buffer = 5000;"), std::string::npos);
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << "the trace must stay valid: " << t.error;
  const auto seqs = SeqsByThread(t);
  ASSERT_EQ(seqs.size(), 1u) << "only the thread that had its buffer";
  EXPECT_TRUE(IsRange(seqs.begin()->second, 0, 6000)) << "its stream file stays writable";
}

// A program that replaces the global operator new and delete (a pool, a guard allocator) gets the
// Session and the error text the shared runtime hands it from its own operator new, which its
// delete then frees (tests/runtime/replaced_new_main.cc: a delete of a block its new did not
// return aborts), also where the runtime carries its own C++ runtime (src/cxxrt).
TEST(ReplacedOperatorNewTest, TheRuntimeAllocatesWhatItHandsOverWithTheProgramsOperatorNew) {
  TempDir tmp("replaced_new");
  const std::string out = tmp.Sub("t");
  const ProcessResult r = RunProcess({hushtest::HelperPath("hush_replaced_new"), out}, ChildEnv(), 120);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.Describe();
  EXPECT_NE(r.out.find("replaced_new: refused: no events requested"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replaced_new: ok"), std::string::npos) << r.out;
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.Named("replaced_new:tick").size(), 100u);
}

INSTANTIATE_TEST_SUITE_P(Linkage, ProcessTest, testing::Values("hush_child", "hush_child_static"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "hush_child" ? "Shared" : "Static";
                         });

}  // namespace
