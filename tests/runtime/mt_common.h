// Shared by the multi-threaded tests (threads_test.cc, flight_test.cc): tracepoints whose events
// carry (thread, seq) with a per-thread sequence number, so that a trace read back by babeltrace2
// can be checked exactly, and a SIGALRM storm that emits from a signal handler.
#ifndef HUSHTRACE_TESTS_RUNTIME_MT_COMMON_H_
#define HUSHTRACE_TESTS_RUNTIME_MT_COMMON_H_

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "hushtrace/hushtrace.h"
#include "hushtrace/internal/thread_writer.h"
#include "hushtrace/session.h"
#include "runtime/test_util.h"

HUSH_TRACEPOINT(mt, seq, (std::uint32_t, thread), (std::uint64_t, seq))
HUSH_TRACEPOINT(mt, padded, (std::uint32_t, thread), (std::uint64_t, seq), (std::string_view, pad))
HUSH_TRACEPOINT(mt, sig, (std::uint64_t, n))

namespace hushtest_mt {

using hushtest::ChildReport;
using hushtest::ReadTrace;
using hushtest::RunInChild;
using hushtest::TempDir;
using hushtest::Trace;
using hushtest::TraceEvent;

inline std::unique_ptr<hush::Session> Start(const std::string& dir, hush::Mode mode,
                                            std::size_t buffer,
                                            std::vector<std::string> events = {"mt:*"}) {
  hush::SessionOptions o;
  o.events = std::move(events);
  o.output_dir = dir;
  o.mode = mode;
  o.buffer_size = buffer;
  std::string error;
  auto s = hush::Session::Start(o, &error);
  EXPECT_NE(s, nullptr) << "Session::Start(" << dir << "): " << error;
  return s;
}

// What the trace says about each writer thread.
struct ThreadView {
  std::vector<std::uint64_t> seqs;  // in trace order
  std::set<std::uint64_t> streams;
};

// Checks the per-thread invariants and returns the per-thread views. `name` selects the events.
inline std::map<std::uint32_t, ThreadView> PerThread(const Trace& t,
                                                     const std::string& name = "mt:seq") {
  std::map<std::uint32_t, ThreadView> out;
  for (const TraceEvent& e : t.events) {
    if (e.name != name) continue;
    ThreadView& v = out[static_cast<std::uint32_t>(e.U("thread"))];
    v.seqs.push_back(e.U("seq"));
    v.streams.insert(e.stream);
  }
  for (const auto& [thread, v] : out) {
    for (std::size_t i = 1; i < v.seqs.size(); ++i) {
      if (v.seqs[i] <= v.seqs[i - 1]) {
        ADD_FAILURE() << "thread " << thread << ": seq " << v.seqs[i] << " after " << v.seqs[i - 1]
                      << " (duplicate or out of order)";
        break;
      }
    }
  }
  return out;
}

// Events of `emitted` per thread missing from the trace, summed per stream.
inline std::map<std::uint64_t, std::uint64_t> MissingPerStream(
    const std::map<std::uint32_t, ThreadView>& views, std::uint64_t emitted_per_thread) {
  std::map<std::uint64_t, std::uint64_t> missing;
  for (const auto& [thread, v] : views) {
    EXPECT_EQ(v.streams.size(), 1u) << "thread " << thread << " wrote to several streams";
    missing[*v.streams.begin()] += emitted_per_thread - v.seqs.size();
  }
  return missing;
}

// T writer threads, each emitting n mt:seq events as fast as it can, all started together. None
// exits before all are done, so each keeps its own ring (an exited thread's ring is recycled).
inline void RunWriters(std::uint32_t threads, std::uint64_t n) {
  std::barrier start(threads);
  std::barrier done(threads);
  std::vector<std::thread> pool;
  for (std::uint32_t k = 0; k < threads; ++k) {
    pool.emplace_back([&start, &done, k, n] {
      start.arrive_and_wait();
      for (std::uint64_t i = 0; i < n; ++i) HUSH_TRACE(mt, seq, k, i);
      done.arrive_and_wait();
    });
  }
  for (auto& th : pool) th.join();
}

// Signals: an event emitted by a signal handler while the thread is inside an event
// ---------------------------------------------------------------------------------------------

inline std::atomic<std::uint64_t> g_sig_emitted{0};
inline std::atomic<std::uint64_t> g_sig_nested{0};

inline void OnAlarm(int) {
  const int saved = errno;
  // Whether this handler interrupted an event of this thread: then its event must be dropped.
  if (hush::internal::tls_writer.nesting != 0) g_sig_nested.fetch_add(1, std::memory_order_relaxed);
  HUSH_TRACE(mt, sig, g_sig_emitted.fetch_add(1, std::memory_order_relaxed));
  errno = saved;
}

struct SignalStormResult {
  std::uint64_t loop_events = 0;
};

// Emits padded events in a tight loop on this thread for `ms` while SIGALRM fires every 20 µs.
// SIGALRM is blocked in every other thread of the test; the library blocks it in its own threads.
inline SignalStormResult SignalStorm(int ms) {
  SignalStormResult r;
  struct sigaction sa = {}, old = {};
  sa.sa_handler = OnAlarm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGALRM, &sa, &old);
  sigset_t alrm;
  sigemptyset(&alrm);
  sigaddset(&alrm, SIGALRM);
  ::pthread_sigmask(SIG_UNBLOCK, &alrm, nullptr);
  const std::string pad(600, 'p');
  itimerval timer = {};
  timer.it_interval.tv_usec = 20;
  timer.it_value.tv_usec = 20;
  ::setitimer(ITIMER_REAL, &timer, nullptr);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < deadline) {
    for (int k = 0; k < 64; ++k) HUSH_TRACE(mt, padded, 0u, r.loop_events++, pad);
  }
  timer = {};
  ::setitimer(ITIMER_REAL, &timer, nullptr);
  ::pthread_sigmask(SIG_BLOCK, &alrm, nullptr);
  ::sigaction(SIGALRM, &old, nullptr);
  return r;
}

class SignalTest : public testing::Test {
 protected:
  void SetUp() override {
    // Block SIGALRM before the session's threads are created, so that they inherit the mask and
    // only this thread takes the storm.
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    ::pthread_sigmask(SIG_BLOCK, &alrm, nullptr);
    g_sig_emitted = 0;
    g_sig_nested = 0;
  }
};

}  // namespace hushtest_mt

#endif  // HUSHTRACE_TESTS_RUNTIME_MT_COMMON_H_
