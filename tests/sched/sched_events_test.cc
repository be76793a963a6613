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
#include <tuple>
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

// perf ring overruns are lost events like any other: with one page per CPU and a reader that
// does not drain, the kernel drops records and reports them (PERF_RECORD_LOST); the trace counts
// them in its sched streams' events_discarded, and what is recorded plus what is lost covers every
// switch of a pipe ping-pong pinned to one CPU (each round trip switches each thread out and in
// at least once: 4 records).
TEST(SchedEvents, PerfRingOverrunsAreCountedAsLost) {
  if (!PerfAvailable()) GTEST_SKIP() << "perf_event_open refused here (see the warning above)";
  TempDir dir("sched_overrun");
  hush::sched::SchedRecorder::SetRingPagesForTest(1);
  hush::sched::SchedRecorder::PauseDrainForTest(true);
  auto s = StartSched(dir.Sub("trace"));
  hush::sched::SchedRecorder::SetRingPagesForTest(0);
  ASSERT_NE(s, nullptr);
  constexpr std::uint64_t kRoundTrips = 5000;
  std::uint32_t tids[2] = {};
  {
    int ab[2], ba[2];
    ASSERT_EQ(::pipe(ab), 0);
    ASSERT_EQ(::pipe(ba), 0);
    auto pin = [] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(0, &one);
      ::pthread_setaffinity_np(::pthread_self(), sizeof one, &one);
    };
    std::thread b([&] {
      pin();
      tids[1] = Tid();
      char c;
      for (std::uint64_t i = 0; i < kRoundTrips; ++i) {
        if (::read(ab[0], &c, 1) != 1 || ::write(ba[1], &c, 1) != 1) std::abort();
      }
    });
    std::thread a([&] {
      pin();
      tids[0] = Tid();
      char c = 0;
      for (std::uint64_t i = 0; i < kRoundTrips; ++i) {
        if (::write(ab[1], &c, 1) != 1 || ::read(ba[0], &c, 1) != 1) std::abort();
      }
    });
    a.join();
    b.join();
    for (int fd : {ab[0], ab[1], ba[0], ba[1]}) ::close(fd);
  }
  // Draining again makes room; the kernel writes its LOST record into CPU 0's ring before the next
  // record there: a thread pinned to CPU 0 switches a few times once the reader has drained.
  hush::sched::SchedRecorder::PauseDrainForTest(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  std::thread([] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    ::pthread_setaffinity_np(::pthread_self(), sizeof one, &one);
    for (int i = 0; i < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }).join();
  s->Stop();

  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  std::uint64_t switches = 0;
  std::set<std::uint64_t> sched_streams;
  for (const TraceEvent& e : t.events) {
    if (e.name.rfind("sched:", 0) == 0) sched_streams.insert(e.stream);
    if ((e.name == "sched:switch_out" || e.name == "sched:switch_in") &&
        (e.U("tid") == tids[0] || e.U("tid") == tids[1])) {
      ++switches;
    }
  }
  std::string error;
  auto trace = hush::reader::Trace::Open(s->output_dir(), &error);
  ASSERT_NE(trace, nullptr) << error;
  std::uint64_t lost = 0;
  for (const hush::reader::StreamInfo& info : trace->streams()) {
    if (sched_streams.count(info.index) != 0) lost += info.events_discarded;
  }
  std::printf("switch records of the ping-pong threads: %llu recorded, %llu lost (all records)\n",
              static_cast<unsigned long long>(switches), static_cast<unsigned long long>(lost));
  EXPECT_GT(lost, 0u) << "a 4 KiB perf ring that is not drained must overflow";
  EXPECT_GE(switches + lost, 4 * kRoundTrips) << "recorded " << switches << ", lost " << lost;
  EXPECT_EQ(s->Stats().events_discarded, lost);
}

// Threads created while the session starts (between its listing of the process's threads and
// the opening of their perf events) are covered once each: every thread that sleeps after
// Start() returned has its switches recorded, and no record appears twice (a thread that inherited
// its creator's events must not get events of its own as well).
TEST(SchedEvents, ThreadsCreatedDuringStartAreCoveredOnce) {
  if (!PerfAvailable()) GTEST_SKIP() << "perf_event_open refused here (see the warning above)";
  TempDir dir("sched_churn");
  std::atomic<bool> started{false}, quit{false};
  std::mutex mu;
  std::vector<std::uint32_t> covered;  // tids that slept after Start() returned
  // A spawner starts a thread every 2 ms; each sleeps 5 ms at a time until one of its sleeps began
  // after Start() returned (it is then "covered"), so threads created while Start() runs are
  // checked too. (Paced so that the perf rings, drained at least every 50 ms, do not overflow:
  // a lost record would make a thread's missing switches unattributable.)
  auto spawner = [&] {
    std::vector<std::thread> threads;
    while (!quit.load()) {
      threads.emplace_back([&] {
        for (int i = 0; i < 400; ++i) {
          const bool after_start = started.load();
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          if (after_start) {
            std::lock_guard<std::mutex> lock(mu);
            covered.push_back(Tid());
            return;
          }
        }
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    for (std::thread& t : threads) t.join();
  };
  std::thread s1(spawner), s2(spawner);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // The first 8 perf_event_open calls take 2 ms longer: threads are created while Start() runs.
  static std::atomic<int> opens{0};
  hush::sched::SchedRecorder::SetOpenFnForTest([](perf_event_attr* a, int tid, int cpu) {
    if (opens.fetch_add(1) < 8) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return static_cast<int>(::syscall(SYS_perf_event_open, a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
  });
  auto s = StartSched(dir.Sub("trace"));
  hush::sched::SchedRecorder::SetOpenFnForTest(nullptr);
  ASSERT_NE(s, nullptr);
  started.store(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  quit.store(true);
  s1.join();
  s2.join();
  s->Stop();

  std::printf("threads covered: %zu; events written %llu, lost %llu\n", covered.size(),
              static_cast<unsigned long long>(s->Stats().events_written),
              static_cast<unsigned long long>(s->Stats().events_discarded));
  ASSERT_EQ(s->Stats().events_discarded, 0u) << "perf records were lost: the check below cannot attribute them";
  const Trace t = ReadTrace(s->output_dir());
  ASSERT_TRUE(t.ok) << t.error;
  std::map<std::uint64_t, std::size_t> outs;
  std::set<std::tuple<std::string, std::uint64_t, std::int64_t>> seen;
  for (const TraceEvent& e : t.events) {
    if (e.name != "sched:switch_out" && e.name != "sched:switch_in") continue;
    if (e.name == "sched:switch_out") ++outs[e.U("tid")];
    EXPECT_TRUE(seen.insert({e.name, e.U("tid"), e.ns}).second)
        << e.name << " of thread " << e.U("tid") << " recorded twice at " << e.ns;
  }
  ASSERT_FALSE(covered.empty());
  for (std::uint32_t tid : covered) EXPECT_GE(outs[tid], 1u) << "thread " << tid << " has no switch";
}

}  // namespace
