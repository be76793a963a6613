// Where the kernel's cost of --sched's perf records goes, in the pipe ping-pong of
// sched_pingpong.cc (2 threads pinned to one CPU, 1 byte each way, 2 context switches and 4
// switch records per round trip). Each mode opens its own per-CPU perf events (pid = the main
// thread, inherited by threads it creates), drains them from a thread on the other side of a
// 50 ms poll, and runs the ping-pong; modes alternate round by round, medians are compared with
// the run without events. The modes take --sched's attributes (src/sched/perf_ring.cc) apart:
//
//   switch only           context_switch, no sample_id, default perf clock
//   + sample_id TID       sample_id_all with TID only
//   + sample_id TIME      sample_id_all with TIME only (the perf clock read per record)
//   + sample_id TID|TIME|CPU   what --sched asked for until the CPU was taken from the ring
//   + sample_id TID|TIME  what gives each switch record its thread and time (--sched; the CPU is
//                         the ring's)
//   + clock RAW           use_clockid CLOCK_MONOTONIC_RAW (--sched's clock)
//   + task, comm          FORK/EXIT/COMM records (= --sched's attributes)
//   --sched attrs, main   as above, but the main thread is one of the two ping-pong threads: it
//                         holds the original events, the other thread inherited copies (this is
//                         the layout of sched_pingpong's "perf records" mode)
//
//   sched_perf_cost [round_trips_per_round=100000] [rounds=7] [cpu=0]
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "pin_cpu.h"

namespace {

enum Mode { kOff, kSwitchOnly, kTidOnly, kTimeOnly, kTidTimeCpu, kSampleId, kClockRaw, kTaskComm, kMainThread, kModes };
const char* const kNames[kModes] = {"no events",   "switch only",  "+ sample_id TID", "+ sample_id TIME",
                                    "+ sample_id TID|TIME|CPU", "+ sample_id TID|TIME", "+ clock RAW",
                                    "+ task, comm (--sched)", "--sched attrs, main thread"};

perf_event_attr AttrFor(Mode m) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_DUMMY;
  a.context_switch = 1;
  a.inherit = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.watermark = 1;
  a.wakeup_watermark = 64 * 4096 / 4;
  if (m == kTidOnly) a.sample_type = PERF_SAMPLE_TID;
  if (m == kTimeOnly) a.sample_type = PERF_SAMPLE_TIME;
  if (m == kTidTimeCpu) a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
  if (m >= kSampleId) a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  a.sample_id_all = a.sample_type != 0;
  if (m >= kClockRaw) {
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC_RAW;
  }
  if (m >= kTaskComm) {
    a.task = 1;
    a.comm = 1;
  }
  return a;
}

// Per-CPU events of the calling thread, mmapped, drained (records dropped) every 50 ms.
class Events {
 public:
  explicit Events(Mode m) {
    perf_event_attr a = AttrFor(m);
    const long ncpu = ::sysconf(_SC_NPROCESSORS_CONF);
    for (int cpu = 0; cpu < ncpu; ++cpu) {
      const int fd = static_cast<int>(::syscall(SYS_perf_event_open, &a, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC));
      if (fd < 0) {
        std::perror("perf_event_open");
        std::exit(1);
      }
      void* map = ::mmap(nullptr, kMapSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (map == MAP_FAILED) {
        std::perror("mmap");
        std::exit(1);
      }
      fds_.push_back(fd);
      maps_.push_back(map);
    }
    // Created after the events: it inherits them, as --sched's hush-sched thread does.
    drainer_ = std::thread([this] {
      std::vector<pollfd> p;
      for (int fd : fds_) p.push_back({fd, POLLIN, 0});
      while (!quit_.load(std::memory_order_relaxed)) {
        ::poll(p.data(), p.size(), 50);
        for (void* map : maps_) {
          auto* meta = static_cast<perf_event_mmap_page*>(map);
          const std::uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
          bytes_ += head - meta->data_tail;
          __atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
        }
      }
    });
  }
  ~Events() {
    Finish();
    for (void* map : maps_) ::munmap(map, kMapSize);
    for (int fd : fds_) ::close(fd);
  }
  // Stops the drainer; returns the bytes of records it saw.
  std::uint64_t Finish() {
    quit_.store(true, std::memory_order_relaxed);
    if (drainer_.joinable()) drainer_.join();
    return bytes_;
  }

 private:
  static constexpr std::size_t kMapSize = 65 * 4096;  // metadata page + 64 data pages
  std::vector<int> fds_;
  std::vector<void*> maps_;
  std::atomic<bool> quit_{false};
  std::uint64_t bytes_ = 0;
  std::thread drainer_;
};

// Round trips per second. `main_plays`: the calling thread is side A; else two new threads.
double PingPong(std::uint64_t n, int cpu, bool main_plays) {
  int ab[2], ba[2];
  if (::pipe(ab) != 0 || ::pipe(ba) != 0) std::abort();
  auto side_b = [&] {
    hushbench::PinThisThread(cpu);
    char c;
    for (std::uint64_t i = 0; i < n; ++i) {
      if (::read(ab[0], &c, 1) != 1 || ::write(ba[1], &c, 1) != 1) std::abort();
    }
  };
  double rate = 0;
  auto side_a = [&] {
    hushbench::PinThisThread(cpu);
    char c = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < n; ++i) {
      if (::write(ab[1], &c, 1) != 1 || ::read(ba[0], &c, 1) != 1) std::abort();
    }
    rate = static_cast<double>(n) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::thread b(side_b);
  if (main_plays) {
    side_a();
  } else {
    std::thread a(side_a);
    a.join();
  }
  b.join();
  for (int fd : {ab[0], ab[1], ba[0], ba[1]}) ::close(fd);
  return rate;
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  const int cpu = argc > 3 ? std::atoi(argv[3]) : 0;
  std::vector<double> rates[kModes];
  std::uint64_t bytes[kModes] = {};
  cpu_set_t all;
  ::sched_getaffinity(0, sizeof all, &all);
  for (int r = 0; r < rounds; ++r) {
    for (int m = 0; m < kModes; ++m) {
      ::sched_setaffinity(0, sizeof all, &all);  // the main thread may have been pinned
      const Mode mode = m == kMainThread ? kTaskComm : static_cast<Mode>(m);
      auto events = m == kOff ? nullptr : std::make_unique<Events>(mode);
      rates[m].push_back(PingPong(n, cpu, m == kMainThread));
      if (events) bytes[m] += events->Finish();
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double base = median(rates[kOff]);
  std::printf("pipe ping-pong, 2 threads pinned to CPU %d, %llu round trips x %d rounds (median)\n", cpu,
              static_cast<unsigned long long>(n), rounds);
  std::printf("%-30s %14s %9s %14s %15s %13s\n", "mode", "round trips/s", "ratio", "ns/round trip",
              "+ns per record", "bytes/trip");
  for (int m = 0; m < kModes; ++m) {
    const double rate = median(rates[m]);
    const double extra = 1e9 / rate - 1e9 / base;
    std::printf("%-30s %14.0f %8.1f%% %14.0f %15.0f %13.1f\n", kNames[m], rate, (rate / base - 1) * 100,
                1e9 / rate, extra / 4, static_cast<double>(bytes[m]) / static_cast<double>(n * rounds));
  }
  return 0;
}
