// --sched: scheduler events of the traced process's threads on the trace's timeline.
//
// Threads sleep, spin, and block on each other (mutex, condition variable, pipe ping-pong); the
// trace, read back by babeltrace2 (library and CLI) and by the reader library, must show per
// thread an alternation of switch_out and switch_in, every user event of a thread inside one of
// its running intervals (the last sched event of the thread before it is a switch_in), and the
// names, starts and exits of the threads. A refused perf_event_open (seccomp) leaves the rest of
// the trace intact with one clear message.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hushtrace/hushtrace.h"
#include "hushtrace/reader.h"
#include "hushtrace/session.h"
#include "runtime/test_util.h"
#include "sched/sched_recorder.h"

HUSH_TRACEPOINT(schedtest, woke, (std::uint32_t, tid), (std::uint64_t, seq))

namespace {

using hushtest::ReadTrace;
using hushtest::TempDir;
using hushtest::Trace;
using hushtest::TraceEvent;

std::uint32_t Tid() { return static_cast<std::uint32_t>(::syscall(SYS_gettid)); }

std::unique_ptr<hush::Session> StartSched(const std::string& dir) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // see runtime/mt_common.h Start()
  hush::SessionOptions o;
  o.events = {"schedtest:*"};
  o.output_dir = dir;
  o.sched = true;
  std::string error;
  auto s = hush::Session::Start(o, &error);
  EXPECT_NE(s, nullptr) << error;
  return s;
}

struct Workload {
  std::map<std::string, std::uint32_t> tids;  // thread name -> tid
  std::uint64_t woke_events = 0;
};

// Runs the threads; every blocking wait is followed by a schedtest:woke event of the waking thread.
Workload RunWorkload() {
  Workload w;
  std::mutex tids_mu;
  auto named = [&](const char* name) {
    ::pthread_setname_np(::pthread_self(), name);
    std::lock_guard<std::mutex> lock(tids_mu);
    w.tids[name] = Tid();
  };
  std::atomic<std::uint64_t> woke{0};
  auto emit = [&](std::uint64_t seq) {
    HUSH_TRACE(schedtest, woke, Tid(), seq);
    woke.fetch_add(1);
  };
  std::vector<std::thread> pool;
  pool.emplace_back([&] {
    named("st-sleeper");
    for (std::uint64_t i = 0; i < 20; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      emit(i);
    }
  });
  pool.emplace_back([&] {
    named("st-spinner");
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(40);
    std::uint64_t i = 0;
    while (std::chrono::steady_clock::now() < end) {
      if (++i % 4096 == 0) emit(i);
    }
  });
  // Mutex: the holder sleeps while holding it, the other blocks on it.
  std::mutex m;
  for (const char* name : {"st-mutex-a", "st-mutex-b"}) {
    pool.emplace_back([&, name] {
      named(name);
      for (std::uint64_t i = 0; i < 10; ++i) {
        std::lock_guard<std::mutex> lock(m);
        emit(i);
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    });
  }
  // Condition variable ping-pong.
  std::mutex cv_mu;
  std::condition_variable cv;
  int turn = 0;
  for (int me : {0, 1}) {
    pool.emplace_back([&, me] {
      named(me == 0 ? "st-cv-0" : "st-cv-1");
      for (std::uint64_t i = 0; i < 50; ++i) {
        std::unique_lock<std::mutex> lock(cv_mu);
        cv.wait(lock, [&] { return turn == me; });
        emit(i);
        turn = 1 - me;
        cv.notify_all();
      }
    });
  }
  // Pipe ping-pong.
  int ab[2], ba[2];
  EXPECT_EQ(::pipe(ab), 0);
  EXPECT_EQ(::pipe(ba), 0);
  pool.emplace_back([&] {
    named("st-pipe-a");
    char c = 0;
    for (std::uint64_t i = 0; i < 100; ++i) {
      EXPECT_EQ(::write(ab[1], &c, 1), 1);
      EXPECT_EQ(::read(ba[0], &c, 1), 1);
      emit(i);
    }
  });
  pool.emplace_back([&] {
    named("st-pipe-b");
    char c = 0;
    for (std::uint64_t i = 0; i < 100; ++i) {
      EXPECT_EQ(::read(ab[0], &c, 1), 1);
      emit(i);
      EXPECT_EQ(::write(ba[1], &c, 1), 1);
    }
  });
  for (auto& t : pool) t.join();
  for (int fd : {ab[0], ab[1], ba[0], ba[1]}) ::close(fd);
  w.woke_events = woke.load();
  return w;
}

bool PerfAvailable() {
  std::string error;
  TempDir probe("sched_probe");
  // A session on a kernel that refuses says so on stderr and records no sched event: probe once.
  hush::SessionOptions o;
  o.output_dir = probe.Sub("t");
  o.sched = true;
  auto s = hush::Session::Start(o, &error);
  if (!s) return false;
  std::thread([] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }).join();
  s->Stop();
  const Trace t = ReadTrace(s->output_dir());
  return t.ok && !t.Named("sched:switch_in").empty();
}

TEST(SchedEvents, SwitchesAlternatePerThreadAndFrameTheThreadsEvents) {
  if (!PerfAvailable()) GTEST_SKIP() << "perf_event_open refused here (see the warning above)";
  TempDir dir("sched");
  auto s = StartSched(dir.Sub("trace"));
  ASSERT_NE(s, nullptr);
  const Workload w = RunWorkload();
  s->Stop();

  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  std::set<std::uint64_t> sched_streams;
  for (const TraceEvent& e : t.events) {
    if (e.name.rfind("sched:", 0) == 0) sched_streams.insert(e.stream);
  }
  ASSERT_FALSE(sched_streams.empty());
  std::uint64_t sched_lost = 0;
  for (std::uint64_t st : sched_streams) sched_lost += t.discarded.count(st) ? t.discarded.at(st) : 0;

  // Per thread, in trace order: sched events alternate, and each user event lies in a running
  // interval.
  std::map<std::uint32_t, std::string> last;  // tid -> name of its last sched switch event
  std::map<std::uint32_t, std::uint64_t> switches, framed;
  std::uint64_t user_events = 0;
  std::int64_t previous_ns = 0;
  for (const TraceEvent& e : t.events) {
    // babeltrace2 merges streams by ns: events of different streams within 1 ns may come in
    // either order of cycles.
    EXPECT_GE(e.ns, previous_ns) << "trace order is time order";
    previous_ns = e.ns;
    if (e.name == "sched:switch_in" || e.name == "sched:switch_out") {
      const auto tid = static_cast<std::uint32_t>(e.U("tid"));
      if (sched_lost == 0) {
        EXPECT_NE(last[tid], e.name) << "thread " << tid << ": two " << e.name << " in a row at "
                                     << e.cycles;
      }
      last[tid] = e.name;
      ++switches[tid];
      EXPECT_LT(e.U("cpu"), 4096u);
      if (e.name == "sched:switch_out") {
        EXPECT_LE(e.U("preempted"), 1u);
      }
    } else if (e.name == "schedtest:woke") {
      ++user_events;
      const auto tid = static_cast<std::uint32_t>(e.U("tid"));
      EXPECT_EQ(static_cast<std::uint32_t>(e.vtid), tid);
      if (last.count(tid) != 0) {
        EXPECT_EQ(last[tid], "sched:switch_in")
            << "thread " << tid << " emitted at " << e.cycles << " while switched out";
        ++framed[tid];
      }
    }
  }
  EXPECT_EQ(user_events, w.woke_events);
  for (const auto& [name, tid] : w.tids) {
    EXPECT_GE(switches[tid], 2u) << name << " (" << tid << ") has switch events";
    if (name != "st-spinner") {
      EXPECT_GE(framed[tid], 1u) << name << ": events after a switch_in";
    }
  }

  // Thread start/exit and names, by tid.
  std::set<std::uint32_t> started, exited;
  std::map<std::uint32_t, std::set<std::string>> names;
  for (const TraceEvent* e : t.Named("sched:thread_start")) started.insert(static_cast<std::uint32_t>(e->U("tid")));
  for (const TraceEvent* e : t.Named("sched:thread_exit")) exited.insert(static_cast<std::uint32_t>(e->U("tid")));
  for (const TraceEvent* e : t.Named("sched:thread_name")) names[static_cast<std::uint32_t>(e->U("tid"))].insert(e->S("name"));
  for (const auto& [name, tid] : w.tids) {
    EXPECT_EQ(started.count(tid), 1u) << name;
    EXPECT_EQ(exited.count(tid), 1u) << name;
    EXPECT_EQ(names[tid].count(name), 1u) << name << " named by its thread_name event";
  }
  // The main thread's name is emitted at start (it existed before the session).
  EXPECT_FALSE(names[Tid()].empty());

  // The babeltrace2 CLI reads it too, and the reader library sees the same sched events.
  const hushtest::ProcessResult bt = hushtest::RunBabeltrace(s->output_dir());
  EXPECT_TRUE(bt.exited && bt.exit_code == 0) << bt.Describe();
  EXPECT_NE(bt.out.find("sched:switch_out"), std::string::npos);
  std::string error;
  auto trace = hush::reader::Trace::Open(s->output_dir(), &error);
  ASSERT_NE(trace, nullptr) << error;
  hush::reader::EventIterator it(*trace);
  std::uint64_t reader_switches = 0;
  while (it.Next()) {
    const std::string_view n = it.event().name();
    if (n == "sched:switch_in" || n == "sched:switch_out") ++reader_switches;
  }
  EXPECT_TRUE(it.error().empty()) << it.error();
  EXPECT_EQ(reader_switches, t.Named("sched:switch_in").size() + t.Named("sched:switch_out").size());
}

// perf_event_open refused by a seccomp filter (EACCES): one message, user events still recorded.
TEST(SchedEvents, RefusedPerfEventOpenWarnsOnceAndRecordsTheRest) {
  TempDir dir("sched_refused");
  const std::string out = dir.Sub("trace");
  const std::string err_path = dir.Sub("stderr");
  hushtest::ChildReport report;
  std::string failure;
  const bool ran = hushtest::RunInChild(
      [&]() -> hushtest::ChildReport {
        hushtest::ChildReport r;
        std::FILE* err = std::freopen(err_path.c_str(), "w", stderr);
        if (err == nullptr) {
          r.error = "cannot redirect stderr";
          return r;
        }
        sock_filter filter[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        sock_fprog prog = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
          r.error = "cannot install the seccomp filter";
          return r;
        }
        hush::SessionOptions o;
        o.events = {"schedtest:*"};
        o.output_dir = out;
        o.sched = true;
        std::string error;
        auto s = hush::Session::Start(o, &error);
        if (!s) {
          r.error = "session refused: " + error;
          return r;
        }
        for (std::uint64_t i = 0; i < 100; ++i) HUSH_TRACE(schedtest, woke, Tid(), i);
        s->Stop();
        std::fflush(stderr);
        return r;
      },
      &report, &failure);
  ASSERT_TRUE(ran) << failure;
  ASSERT_TRUE(report.error.empty()) << report.error;
  const std::string err = hushtest::ReadFile(err_path);
  const std::string needle = "--sched: no scheduler events in this trace";
  const std::size_t first = err.find(needle);
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find(needle, first + 1), std::string::npos) << "said once: " << err;
  EXPECT_NE(err.find("Permission denied"), std::string::npos) << err;
  EXPECT_NE(err.find("the rest is recorded"), std::string::npos) << err;
  const Trace t = ReadTrace(out);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.Named("schedtest:woke").size(), 100u);
  EXPECT_TRUE(t.Named("sched:switch_in").empty());
}

// A kernel without perf_event_open (ENOSYS), simulated through the recorder's test hook.
TEST(SchedEvents, MissingPerfEventOpenSaysSoAndRecordsTheRest) {
  TempDir dir("sched_enosys");
  const std::string err_path = dir.Sub("stderr");
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int file = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(file, 0);
  ::dup2(file, 2);
  ::close(file);
  hush::sched::SchedRecorder::SetOpenFnForTest([](perf_event_attr*, int, int) {
    errno = ENOSYS;
    return -1;
  });
  auto s = StartSched(dir.Sub("trace"));
  hush::sched::SchedRecorder::SetOpenFnForTest(nullptr);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ASSERT_NE(s, nullptr);
  for (std::uint64_t i = 0; i < 10; ++i) HUSH_TRACE(schedtest, woke, Tid(), i);
  s->Stop();
  const std::string err = hushtest::ReadFile(err_path);
  EXPECT_NE(err.find("--sched: no scheduler events in this trace: perf_event_open(cpu 0): Function not implemented "
                     "(the kernel or a seccomp filter does not offer perf_event_open); the rest is recorded"),
            std::string::npos)
      << err;
  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.Named("schedtest:woke").size(), 10u);
  EXPECT_TRUE(t.Named("sched:switch_out").empty());
}

}  // namespace
