// Pipe ping-pong between two threads pinned to one CPU: round trips per second without tracing,
// with the perf events of --sched drained and dropped by a plain thread (the kernel's share),
// with --sched (perf context-switch records, no event of our own), with one hushtrace event per
// switch (each thread emits once per wake-up: 2 events per round trip, as the LTTng-UST figure in
// /work/shared/REFERENCE.md), and with both. The modes alternate over several rounds in one run;
// the median of each is printed with its ratio to the untraced one. docs/benchmarks.md.
//
//   sched_pingpong [round_trips_per_round=200000] [rounds=7] [cpu=0]
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <memory>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "hushtrace/hushtrace.h"
#include "hushtrace/session.h"
#include "pin_cpu.h"
#include "sched/perf_ring.h"

HUSH_TRACEPOINT(bench, woke, (std::uint64_t, seq))

namespace {

enum Mode { kOff, kPerfOnly, kSched, kEvents, kBoth, kModes };
const char* const kNames[kModes] = {"no tracing", "perf records, no session", "--sched",
                                    "1 event/switch", "--sched + 1 event/switch"};

// The kernel's part of --sched: the same perf events (src/sched/perf_ring.h) drained by a thread
// that decodes and drops the records, no session.
class PerfOnly {
 public:
  PerfOnly() {
    int err = 0;
    std::string message;
    const std::vector<int> self = {static_cast<int>(::syscall(SYS_gettid))};
    if (!rings_.Open(CLOCK_MONOTONIC_RAW, 64, self,
                     [](perf_event_attr* a, int tid, int cpu) {
                       return static_cast<int>(::syscall(SYS_perf_event_open, a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
                     },
                     &err, &message)) {
      std::fprintf(stderr, "perf: %s\n", message.c_str());
      std::exit(1);
    }
    drainer_ = std::thread([this] {
      std::vector<pollfd> fds;
      for (const hush::base::UniqueFd& fd : rings_.fds()) fds.push_back({fd.get(), POLLIN, 0});
      while (!quit_.load()) {
        ::poll(fds.data(), fds.size(), 50);
        rings_.SnapshotHeads();
        for (std::size_t i = 0; i < rings_.cpu_count(); ++i) {
          records_ += rings_.Drain(i, [](const hush::sched::PerfRecord&) {});
        }
      }
    });
  }
  ~PerfOnly() {
    quit_ = true;
    drainer_.join();
  }
  std::uint64_t records() const { return records_; }

 private:
  hush::sched::PerfRings rings_;
  std::atomic<bool> quit_{false};
  std::uint64_t records_ = 0;
  std::thread drainer_;
};

// Round trips per second over `n` round trips.
double PingPong(std::uint64_t n, int cpu, bool emit) {
  int ab[2], ba[2];
  if (::pipe(ab) != 0 || ::pipe(ba) != 0) std::abort();
  std::thread b([&] {
    hushbench::PinThisThread(cpu);
    char c;
    for (std::uint64_t i = 0; i < n; ++i) {
      if (::read(ab[0], &c, 1) != 1) std::abort();
      if (emit) HUSH_TRACE(bench, woke, i);
      if (::write(ba[1], &c, 1) != 1) std::abort();
    }
  });
  hushbench::PinThisThread(cpu);
  char c = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    if (::write(ab[1], &c, 1) != 1) std::abort();
    if (::read(ba[0], &c, 1) != 1) std::abort();
    if (emit) HUSH_TRACE(bench, woke, i);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  b.join();
  for (int fd : {ab[0], ab[1], ba[0], ba[1]}) ::close(fd);
  return static_cast<double>(n) / s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  const int cpu = argc > 3 ? std::atoi(argv[3]) : 0;
  const std::string base = "/tmp/hush-sched-pingpong-" + std::to_string(::getpid());
  std::vector<double> results[kModes];
  std::uint64_t sched_events = 0, sched_rounds = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int m = 0; m < kModes; ++m) {
      std::unique_ptr<hush::Session> s;
      std::unique_ptr<PerfOnly> perf_only;
      if (m == kPerfOnly) perf_only = std::make_unique<PerfOnly>();
      const std::string dir = base + "-" + std::to_string(r) + "-" + std::to_string(m);
      if (m != kOff && m != kPerfOnly) {
        hush::SessionOptions o;
        if (m == kEvents || m == kBoth) o.events = {"bench:*"};
        o.sched = m == kSched || m == kBoth;
        o.output_dir = dir;
        o.buffer_size = 4 << 20;
        std::string error;
        s = hush::Session::Start(o, &error);
        if (!s) {
          std::fprintf(stderr, "cannot start a session: %s\n", error.c_str());
          return 1;
        }
      }
      results[m].push_back(PingPong(n, cpu, m == kEvents || m == kBoth));
      perf_only.reset();
      if (s) {
        s->Stop();
        const hush::SessionStats st = s->Stats();
        if (m == kSched) {
          sched_events += st.events_written;
          ++sched_rounds;
        }
        if (st.events_discarded != 0) {
          std::fprintf(stderr, "note: %s, round %d: %llu events discarded\n", kNames[m], r,
                       static_cast<unsigned long long>(st.events_discarded));
        }
        if (std::system(("rm -rf '" + dir + "'").c_str()) != 0) std::fprintf(stderr, "cannot remove %s\n", dir.c_str());
      }
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double base_rate = median(results[kOff]);
  std::printf("pipe ping-pong, 2 threads pinned to CPU %d, %llu round trips x %d rounds (median)\n", cpu,
              static_cast<unsigned long long>(n), rounds);
  std::printf("%-28s %14s %9s %14s\n", "mode", "round trips/s", "ratio", "ns/round trip");
  for (int m = 0; m < kModes; ++m) {
    const double rate = median(results[m]);
    std::printf("%-28s %14.0f %8.1f%% %14.0f\n", kNames[m], rate, (rate / base_rate - 1) * 100, 1e9 / rate);
  }
  if (sched_rounds != 0) {
    std::printf("sched events per round trip (--sched): %.2f\n",
                static_cast<double>(sched_events) / static_cast<double>(sched_rounds * n));
  }
  return 0;
}
