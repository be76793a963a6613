// fork and exec under a session that follows its children (SessionOptions::follow_children,
// HUSHTRACE_FOLLOW=1, the default of `hushtrace record`): a forked child writes its own rings
// and streams into the same trace, with its pid in their packet context, never into its parent's
// buffers, even when another thread was emitting at fork time; an exec'd program linked with the
// runtime records into DIR/proc-PID on the root trace's clock.
#include <gtest/gtest.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hushtrace/hushtrace.h"
#include "hushtrace/reader.h"
#include "hushtrace/session.h"
#include "runtime/test_util.h"

HUSH_TRACEPOINT(lct, seq, (std::uint32_t, pid), (std::uint64_t, seq))

namespace {

using hushtest::ReadTrace;
using hushtest::TempDir;
using hushtest::Trace;
using hushtest::TraceEvent;

std::uint32_t Pid() { return static_cast<std::uint32_t>(::getpid()); }

TEST(ProcessLifecycle, ForkedChildrenWriteTheirOwnStreamsWhileAThreadEmits) {
  TempDir dir("lifecycle");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // see runtime/mt_common.h Start()
  hush::SessionOptions o;
  o.events = {"lct:*"};
  o.output_dir = dir.Sub("trace");
  o.buffer_size = 256 << 10;
  o.follow_children = true;
  std::string error;
  auto s = hush::Session::Start(o, &error);
  ASSERT_NE(s, nullptr) << error;

  std::atomic<bool> quit{false};
  std::atomic<std::uint32_t> emitter_tid{0};
  std::atomic<std::uint64_t> emitted{0};
  std::thread emitter([&] {
    emitter_tid = static_cast<std::uint32_t>(::syscall(SYS_gettid));
    // Paced (bursts of 16, then 20 us) so that slow forks (sanitizers) do not make a huge trace.
    for (std::uint64_t i = 0; !quit.load(std::memory_order_relaxed); ++i) {
      HUSH_TRACE(lct, seq, Pid(), i);
      emitted.store(i + 1, std::memory_order_relaxed);
      if (i % 16 == 15) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  // The forks happen while the emitter emits (on a loaded machine it may not have run yet).
  while (emitted.load(std::memory_order_relaxed) < 16) std::this_thread::yield();
  HUSH_TRACE(lct, seq, Pid(), 0);  // this thread's writer points into a ring of the parent
  constexpr int kChildren = 5;
  constexpr std::uint64_t kChildEvents = 1000;
  std::vector<std::uint32_t> kids;
  for (int k = 0; k < kChildren; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the emitter is mid-stream
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (std::uint64_t i = 0; i < kChildEvents; ++i) HUSH_TRACE(lct, seq, Pid(), i);
      std::exit(0);  // the atexit handler stops the child's session
    }
    kids.push_back(static_cast<std::uint32_t>(pid));
  }
  for (std::uint32_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(static_cast<pid_t>(pid), &status, 0), static_cast<pid_t>(pid));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid << " status " << status;
  }
  HUSH_TRACE(lct, seq, Pid(), 1);
  quit = true;
  emitter.join();
  s->Stop();

  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  std::map<std::uint32_t, std::vector<const TraceEvent*>> by_pid;
  std::map<std::uint64_t, std::set<std::uint32_t>> pids_of_stream;
  for (const TraceEvent& e : t.events) {
    const auto pid = static_cast<std::uint32_t>(e.U("pid"));
    by_pid[pid].push_back(&e);
    pids_of_stream[e.stream].insert(pid);
  }
  for (const auto& [stream, pids] : pids_of_stream) {
    EXPECT_EQ(pids.size(), 1u) << "stream " << stream << " holds the events of one process";
  }
  for (std::uint32_t kid : kids) {
    const auto& events = by_pid[kid];
    ASSERT_EQ(events.size(), kChildEvents) << "child " << kid;
    for (std::uint64_t i = 0; i < kChildEvents; ++i) {
      EXPECT_EQ(events[i]->U("seq"), i);
      EXPECT_EQ(events[i]->vtid, static_cast<std::int64_t>(kid)) << "the child's only thread";
    }
  }
  // The parent's emitter: strictly increasing, every gap counted as discarded on its stream.
  std::uint64_t expected = 0, missing = 0, emitter_events = 0;
  std::set<std::uint64_t> emitter_streams;
  for (const TraceEvent* e : by_pid[Pid()]) {
    if (e->vtid != static_cast<std::int64_t>(emitter_tid.load())) continue;
    ASSERT_GE(e->U("seq"), expected);
    missing += e->U("seq") - expected;
    expected = e->U("seq") + 1;
    ++emitter_events;
    emitter_streams.insert(e->stream);
  }
  EXPECT_GT(emitter_events, 0u);
  std::uint64_t discarded = 0;
  for (std::uint64_t st : emitter_streams) discarded += t.discarded.count(st) ? t.discarded.at(st) : 0;
  EXPECT_EQ(missing, discarded);
  std::uint64_t main_events = 0;
  for (const TraceEvent* e : by_pid[Pid()]) main_events += e->vtid == static_cast<std::int64_t>(Pid());
  EXPECT_EQ(main_events, 2u) << "the parent's main thread, before and after the forks";

  // Each child's pid is in its packets' context; babeltrace2 and the reader library read it all.
  const hushtest::ProcessResult bt = hushtest::RunBabeltrace(s->output_dir());
  ASSERT_TRUE(bt.exited && bt.exit_code == 0) << bt.Describe();
  for (std::uint32_t kid : kids) {
    EXPECT_NE(bt.out.find("vpid = " + std::to_string(kid) + ","), std::string::npos) << kid;
  }
  auto trace = hush::reader::Trace::Open(s->output_dir(), &error);
  ASSERT_NE(trace, nullptr) << error;
  hush::reader::EventIterator it(*trace);
  std::uint64_t n = 0;
  while (it.Next()) ++n;
  EXPECT_TRUE(it.error().empty()) << it.error();
  EXPECT_EQ(n, t.events.size());
}

// --- through `hushtrace record` and a separate program ------------------------------------------

struct Recorded {
  hushtest::ProcessResult record;
  std::string dir;
  std::uint32_t child = 0;
};

Recorded Record(const TempDir& tmp, const std::string& mode, bool follow, bool sched = false,
                const std::string& arg = "", const std::vector<std::string>& extra_env = {}) {
  Recorded r;
  r.dir = tmp.Sub("trace");
  std::vector<std::string> argv = {HUSH_CLI, "record", "-e", "lc:*", "-o", r.dir};
  if (!follow) argv.push_back("--no-follow");
  if (sched) argv.push_back("--sched");
  argv.push_back(HUSH_LIFECYCLE_HELPER);
  argv.push_back(mode);
  if (!arg.empty()) argv.push_back(arg);
  r.record = hushtest::RunProcess(argv, hushtest::ChildEnv(extra_env));
  const std::size_t at = r.record.out.find("child ");
  if (at != std::string::npos) r.child = static_cast<std::uint32_t>(std::stoul(r.record.out.substr(at + 6)));
  return r;
}

// babeltrace2 on the trace directories given (it does not descend into a trace's subdirectories:
// an exec'd program's trace DIR/proc-PID is named on the command line, docs/format.md).
hushtest::ProcessResult Babeltrace(const std::vector<std::string>& dirs) {
  std::vector<std::string> argv = {"/usr/bin/babeltrace2"};
  argv.insert(argv.end(), dirs.begin(), dirs.end());
  return hushtest::RunProcess(argv, hushtest::ChildEnv());
}

// gen -> pids of the lc:hello events, from the babeltrace2 reading of `dirs` on one timeline.
std::map<std::uint64_t, std::multiset<std::uint64_t>> Generations(const std::vector<std::string>& dirs,
                                                                   std::string* out) {
  std::map<std::uint64_t, std::multiset<std::uint64_t>> gens;
  const hushtest::ProcessResult bt = Babeltrace(dirs);
  *out = bt.Describe();
  if (!bt.exited || bt.exit_code != 0) return gens;
  std::size_t at = 0;
  while ((at = bt.out.find("lc:hello:", at)) != std::string::npos) {
    const std::size_t g = bt.out.find("gen = ", at);
    const std::size_t p = bt.out.find("pid = ", g);
    gens[std::stoull(bt.out.substr(g + 6))].insert(std::stoull(bt.out.substr(p + 6)));
    at = p;
  }
  return gens;
}

// Issue 17 (item 6, smallest form): a fork child used to hold its parent's stream descriptors and
// ring mappings, so a child that dropped its privileges could write into the parent's trace (and a
// Stop() of the copied Session in a child that does not follow wrote the parent's rings). Now the
// child has neither (MADV_DONTFORK, descriptors closed in the atfork child handler), in both modes,
// and the parent's trace holds exactly the parent's events.
TEST(ProcessLifecycle, ForkChildHoldsNoDescriptorOrMappingOfTheParentsTrace) {
  for (const bool follow : {false, true}) {
    SCOPED_TRACE(follow ? "follow" : "no follow");
    TempDir dir(follow ? "fork_release_follow" : "fork_release");
    hush::SessionOptions o;
    o.events = {"lct:*"};
    o.output_dir = dir.Sub("trace");
    o.buffer_size = 64 << 10;
    o.follow_children = follow;
    std::string error;
    auto s = hush::Session::Start(o, &error);
    ASSERT_NE(s, nullptr) << error;
    for (std::uint64_t i = 0; i < 100; ++i) HUSH_TRACE(lct, seq, Pid(), i);  // ring + stream_0
    // The rings' directory: the trace, or the trace's own on /dev/shm (format/ring_location.h).
    const std::string rings = hushtest::RingDirectory(o.output_dir);
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int bad = 0;  // regular files of the trace open here, ring files mapped here
      if (DIR* fds = ::opendir("/proc/self/fd")) {
        while (const dirent* e = ::readdir(fds)) {
          char target[4096];
          const std::string link = std::string("/proc/self/fd/") + e->d_name;
          const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
          struct stat st;
          if (n > 0 && std::string(target, static_cast<std::size_t>(n)).find(o.output_dir) == 0 &&
              ::stat(link.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
            ++bad;
          }
        }
        ::closedir(fds);
      }
      std::ifstream maps("/proc/self/maps");
      for (std::string line; std::getline(maps, line);) {
        if (line.find(rings + "/.ring_") != std::string::npos) ++bad;
      }
      if (follow) {
        for (std::uint64_t i = 0; i < 10; ++i) HUSH_TRACE(lct, seq, Pid(), i);  // its own ring
      } else {
        s->Stop();  // the copied Session: must not write the parent's rings
      }
      std::exit(bad);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "trace files open or mapped in the child";
    for (std::uint64_t i = 100; i < 200; ++i) HUSH_TRACE(lct, seq, Pid(), i);
    s->Stop();
    const Trace t = ReadTrace(o.output_dir);
    ASSERT_TRUE(t.ok) << t.error;
    std::vector<std::uint64_t> parent, child;
    for (const TraceEvent& e : t.events) {
      (e.U("pid") == Pid() ? parent : child).push_back(e.U("seq"));
    }
    ASSERT_EQ(parent.size(), 200u);
    for (std::uint64_t i = 0; i < 200; ++i) EXPECT_EQ(parent[i], i);
    EXPECT_EQ(child.size(), follow ? 10u : 0u);
  }
}

TEST(ProcessLifecycle, RecordFollowsAForkedChild) {
  TempDir tmp("lifecycle_fork");
  const Recorded r = Record(tmp, "fork", true);
  ASSERT_TRUE(r.record.exited && r.record.exit_code == 0) << r.record.Describe();
  ASSERT_NE(r.child, 0u);
  std::string bt;
  const auto gens = Generations({r.dir}, &bt);
  ASSERT_EQ(gens.size(), 3u) << bt;
  EXPECT_EQ(gens.at(1).size(), 10u);
  EXPECT_EQ(gens.at(1).count(r.child), 10u);
  EXPECT_EQ(gens.at(0).size(), 10u);
  EXPECT_EQ(gens.at(2).size(), 10u);
  EXPECT_EQ(gens.at(0).count(r.child), 0u);
  // The reader library (hushtrace dump/report) reads the one trace with both processes.
  const hushtest::ProcessResult dump = hushtest::RunProcess({HUSH_CLI, "dump", r.dir}, hushtest::ChildEnv());
  EXPECT_TRUE(dump.exited && dump.exit_code == 0) << dump.Describe();
}

TEST(ProcessLifecycle, RecordFollowsAnExecdProgramIntoASubdirectory) {
  TempDir tmp("lifecycle_exec");
  const Recorded r = Record(tmp, "exec-parent", true);
  ASSERT_TRUE(r.record.exited && r.record.exit_code == 0) << r.record.Describe();
  ASSERT_NE(r.child, 0u);
  const std::string sub = r.dir + "/proc-" + std::to_string(r.child);
  ASSERT_TRUE(hushtest::Exists(sub + "/metadata")) << r.record.Describe();
  std::string bt;
  const auto gens = Generations({r.dir, sub}, &bt);
  ASSERT_EQ(gens.size(), 3u) << bt;
  EXPECT_EQ(gens.at(1).size(), 10u);
  EXPECT_EQ(gens.at(1).count(r.child), 10u);
  EXPECT_EQ(gens.at(0).size(), 10u);
  EXPECT_EQ(gens.at(2).size(), 10u);
  // One timeline: gen 0 < gen 1 < gen 2 in babeltrace2's time order.
  const hushtest::ProcessResult out = Babeltrace({r.dir, sub});
  const std::size_t last0 = out.out.rfind("gen = 0,");
  const std::size_t first1 = out.out.find("gen = 1,");
  const std::size_t last1 = out.out.rfind("gen = 1,");
  const std::size_t first2 = out.out.find("gen = 2,");
  EXPECT_LT(last0, first1);
  EXPECT_LT(last1, first2);
  const hushtest::ProcessResult dump = hushtest::RunProcess({HUSH_CLI, "dump", sub}, hushtest::ChildEnv());
  EXPECT_TRUE(dump.exited && dump.exit_code == 0) << dump.Describe();
}

// Issue 17, item 8: `record` returns with the trace whole. Twenty children that leave with
// _exit() (their rings never written out by an exit-time stop) are in the streams babeltrace2
// reads as soon as `record` returns, with no ring file left.
TEST(ProcessLifecycle, RecordReturnsWithTheEventsOfChildrenThatLeftWithExit) {
  TempDir tmp("lifecycle_fork_exit");
  const Recorded r = Record(tmp, "fork-exit", true);
  ASSERT_TRUE(r.record.exited && r.record.exit_code == 0) << r.record.Describe();
  EXPECT_NE(r.record.err.find("events that processes left in their ring buffers"), std::string::npos)
      << r.record.err;
  EXPECT_TRUE(hushtest::RingFiles(r.dir).empty()) << r.record.Describe();
  std::string bt;
  const auto gens = Generations({r.dir}, &bt);
  ASSERT_EQ(gens.size(), 3u) << bt;
  EXPECT_EQ(gens.at(0).size(), 10u);
  EXPECT_EQ(gens.at(1).size(), 200u);
  std::set<std::uint64_t> children(gens.at(1).begin(), gens.at(1).end());
  EXPECT_EQ(children.size(), 20u);
  EXPECT_EQ(gens.at(2).size(), 10u);
}

// Issue 17, item 5: children forked one after another each take the next file number from the
// counter the whole process tree shares (src/session/file_numbers.h), instead of trying every
// number an earlier child used (each try created and sized a ring file before finding the stream
// taken: quadratic in the number of children). Each child's one event is in the trace, in its own
// stream, and the numbers are dense: 0 for the parent, then one per child. How the cost grows is
// measured in bench/fork_cost.sh (docs/benchmarks.md), not timed here.
TEST(ProcessLifecycle, ChildrenForkedOneAfterAnotherTakeTheNextFileNumbers) {
  constexpr int kChildren = 100;
  TempDir tmp("lifecycle_fork_many");
  // A child that leaves with exit() while its consumer thread runs makes ThreadSanitizer sleep
  // atexit_sleep_ms (1 s by default) before exiting: 100 children would take 100 s.
  const char* tsan = std::getenv("TSAN_OPTIONS");
  const std::vector<std::string> env = {std::string("TSAN_OPTIONS=") + (tsan ? tsan : "") + ":atexit_sleep_ms=0"};
  const Recorded r = Record(tmp, "fork-many", true, false, std::to_string(kChildren), env);
  ASSERT_TRUE(r.record.exited && r.record.exit_code == 0) << r.record.Describe();
  std::set<int> numbers;
  for (const std::string& name : hushtest::ListDir(r.dir)) {
    if (name.rfind("stream_", 0) == 0) numbers.insert(std::stoi(name.substr(7)));
  }
  ASSERT_EQ(numbers.size(), static_cast<std::size_t>(kChildren + 1));
  EXPECT_EQ(*numbers.begin(), 0);
  EXPECT_EQ(*numbers.rbegin(), kChildren);
  std::string bt;
  const auto gens = Generations({r.dir}, &bt);
  ASSERT_EQ(gens.size(), 3u) << bt;
  EXPECT_EQ(gens.at(0).size(), 1u);
  EXPECT_EQ(gens.at(2).size(), 1u);
  const std::set<std::uint64_t> children(gens.at(1).begin(), gens.at(1).end());
  EXPECT_EQ(gens.at(1).size(), static_cast<std::size_t>(kChildren));
  EXPECT_EQ(children.size(), static_cast<std::size_t>(kChildren));
}

// Issue 17, item 8: every image of an exec chain under one pid is traced (proc-PID, then
// proc-PID-2), and the events the first image held when it exec'd are in the root trace.
TEST(ProcessLifecycle, RecordTracesEveryImageOfAnExecChain) {
  TempDir tmp("lifecycle_chain");
  const Recorded r = Record(tmp, "chain", true);
  ASSERT_TRUE(r.record.exited && r.record.exit_code == 0) << r.record.Describe();
  std::string pid;  // of the one "proc-PID" directory (its second image's trace)
  DIR* d = ::opendir(r.dir.c_str());
  ASSERT_NE(d, nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.rfind("proc-", 0) == 0 && n.find('-', 5) == std::string::npos) pid = n.substr(5);
  }
  ::closedir(d);
  ASSERT_FALSE(pid.empty()) << r.record.Describe();
  const std::string second = r.dir + "/proc-" + pid, third = second + "-2";
  ASSERT_TRUE(hushtest::Exists(second + "/metadata")) << r.record.Describe();
  ASSERT_TRUE(hushtest::Exists(third + "/metadata")) << r.record.Describe();
  std::string bt;
  const auto gens = Generations({r.dir, second, third}, &bt);
  ASSERT_EQ(gens.size(), 3u) << bt;
  for (std::uint64_t gen = 0; gen < 3; ++gen) {
    SCOPED_TRACE(gen);
    EXPECT_EQ(gens.at(gen).size(), 10u) << bt;
    EXPECT_EQ(gens.at(gen).count(std::stoull(pid)), 10u) << bt;
  }
  for (const std::string& dir : {r.dir, second, third}) {
    EXPECT_TRUE(hushtest::RingFiles(dir).empty()) << dir;
  }
}

TEST(ProcessLifecycle, NoFollowLeavesChildrenUntraced) {
  TempDir tmp("lifecycle_nofollow");
  const Recorded r = Record(tmp, "exec-parent", false);
  ASSERT_TRUE(r.record.exited && r.record.exit_code == 0) << r.record.Describe();
  std::string bt;
  const auto gens = Generations({r.dir}, &bt);
  ASSERT_EQ(gens.size(), 2u) << bt;
  EXPECT_EQ(gens.count(1), 0u);
  EXPECT_FALSE(hushtest::Exists(r.dir + "/proc-" + std::to_string(r.child)));
}

// `hushtrace record --sched` passes HUSHTRACE_SCHED=1: the program's trace has sched:* events (or,
// where the kernel refuses, the one warning and the rest of the trace).
TEST(ProcessLifecycle, RecordSchedRecordsTheProgramsSwitches) {
  TempDir tmp("lifecycle_sched");
  const Recorded r = Record(tmp, "fork", true, true);
  ASSERT_TRUE(r.record.exited && r.record.exit_code == 0) << r.record.Describe();
  const hushtest::ProcessResult bt = Babeltrace({r.dir});
  ASSERT_TRUE(bt.exited && bt.exit_code == 0) << bt.Describe();
  EXPECT_NE(bt.out.find("lc:hello"), std::string::npos);
  if (r.record.err.find("--sched: no scheduler events") != std::string::npos) {
    GTEST_SKIP() << "perf_event_open refused here: " << r.record.err;
  }
  EXPECT_NE(bt.out.find("sched:switch_out"), std::string::npos) << bt.out;
  EXPECT_NE(bt.out.find("sched:thread_name"), std::string::npos) << bt.out;
  // The parent waits for its child: it was switched out while the child ran.
  EXPECT_NE(bt.out.find("sched:switch_in"), std::string::npos) << bt.out;
}

// Lines of babeltrace2's text output naming event `name` whose `tid` field is `tid`.
std::size_t CountEventsOfThread(const std::string& out, const std::string& name, std::uint32_t tid) {
  std::size_t n = 0, at = 0;
  const std::string field = "tid = " + std::to_string(tid) + ",";
  while ((at = out.find(name + ":", at)) != std::string::npos) {
    const std::size_t eol = out.find('\n', at);
    if (out.substr(at, eol - at).find(field) != std::string::npos) ++n;
    at = eol;
  }
  return n;
}

// A forked child of a --sched session records its own switches (perf events of its own; the
// parent's are not inherited across fork) into its own streams of the same trace.
TEST(ProcessLifecycle, RecordSchedFollowsAForkedChild) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "TSan builds start no thread in a fork child (src/session/core.cc, OnForkChild)";
#endif
  TempDir tmp("lifecycle_sched_fork");
  const Recorded r = Record(tmp, "fork", true, true);
  ASSERT_TRUE(r.record.exited && r.record.exit_code == 0) << r.record.Describe();
  ASSERT_NE(r.child, 0u);
  if (r.record.err.find("--sched: no scheduler events") != std::string::npos) {
    GTEST_SKIP() << "perf_event_open refused here: " << r.record.err;
  }
  const hushtest::ProcessResult bt = Babeltrace({r.dir});
  ASSERT_TRUE(bt.exited && bt.exit_code == 0) << bt.Describe();
  // The child slept 3 times: at least 3 switch-outs and switch-ins of its thread.
  EXPECT_GE(CountEventsOfThread(bt.out, "sched:switch_out", r.child), 3u) << bt.out;
  EXPECT_GE(CountEventsOfThread(bt.out, "sched:switch_in", r.child), 3u) << bt.out;
  EXPECT_EQ(CountEventsOfThread(bt.out, "sched:thread_name", r.child), 1u) << bt.out;
  // ... written by the child's own recorder: streams with the child's switches hold no switch of
  // another thread (the parent's recorder writes streams of its own; the child has one thread).
  const Trace t = ReadTrace(r.dir);
  ASSERT_TRUE(t.ok) << t.error;
  std::map<std::uint64_t, std::set<std::uint64_t>> tids_of_stream;
  for (const TraceEvent& e : t.events) {
    if (e.name == "sched:switch_out" || e.name == "sched:switch_in") tids_of_stream[e.stream].insert(e.U("tid"));
  }
  std::size_t child_streams = 0;
  for (const auto& [stream, tids] : tids_of_stream) {
    if (tids.count(r.child) == 0) continue;
    ++child_streams;
    EXPECT_EQ(tids.size(), 1u) << "stream " << stream << " mixes the child's switches with others'";
  }
  EXPECT_GE(child_streams, 1u);
}

// A fork child that execs at once starts a recorder that must leave nothing behind in the parent's
// trace directory; the exec'd program records its switches into DIR/proc-PID.
TEST(ProcessLifecycle, RecordSchedFollowsAnExecdProgram) {
  TempDir tmp("lifecycle_sched_exec");
  const Recorded r = Record(tmp, "exec-parent", true, true);
  ASSERT_TRUE(r.record.exited && r.record.exit_code == 0) << r.record.Describe();
  ASSERT_NE(r.child, 0u);
  if (r.record.err.find("--sched: no scheduler events") != std::string::npos) {
    GTEST_SKIP() << "perf_event_open refused here: " << r.record.err;
  }
  const std::string sub = r.dir + "/proc-" + std::to_string(r.child);
  const hushtest::ProcessResult bt = Babeltrace({r.dir, sub});
  ASSERT_TRUE(bt.exited && bt.exit_code == 0) << bt.Describe();
  EXPECT_NE(bt.out.find("sched:switch_in"), std::string::npos) << bt.out;
  const hushtest::ProcessResult dump = hushtest::RunProcess({HUSH_CLI, "dump", r.dir}, hushtest::ChildEnv());
  EXPECT_TRUE(dump.exited && dump.exit_code == 0) << dump.Describe();
  EXPECT_EQ(dump.err.find("recover"), std::string::npos) << dump.err;
}

}  // namespace
