// The workloads of bench/compare/run.py (`make bench-compare`), one source built three times
// (tracer.h: cmp_plain, cmp_hush, cmp_lttng) so that the only difference between the untraced,
// the hushtrace and the LTTng-UST runs is what CMP_EVENT() compiles to. Each subcommand prints one
// JSON object on stdout; per-sample data (latencies) goes to a file when one is named.
//
//   pingpong N CPU [FILE]     two threads pinned to CPU pass 1 byte through two pipes, N round
//                             trips; one event after every read (= one per context switch);
//                             FILE gets each round trip's ns (int32 binary).
//   wakeup N PERIOD_US [FILE] one thread (SCHED_FIFO 50 if permitted) sleeps to absolute
//                             deadlines (clock_nanosleep TIMER_ABSTIME, CLOCK_MONOTONIC), one
//                             event per wake-up; FILE gets
//                             each wake-up's lateness in ns (int32 binary).
//   hackbench G F L           G groups of F sender and F receiver threads; each sender writes L
//                             100-byte messages to each receiver of its group over socketpairs;
//                             one event per send and per receive; completion time.
//   throughput T RATE SECS    T threads each emit RATE events/s (0: as fast as possible) for SECS,
//                             paced in 1 ms slices with absolute sleeps (CPU left to the consumer).
//   spin SECS                 emits (CLOCK_MONOTONIC s & 0x7fffffff, ns) about every 2 us: the
//                             application of the LTTng control-latency measurement.
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "cpu_time.h"
#include "tracer.h"

namespace {

std::int64_t NowNs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "cmp: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

// Transfers exactly n bytes with read or write (Io), retrying short transfers and EINTR.
template <typename Io, typename Byte>
void FullIo(Io io, const char* what, int fd, Byte* p, std::size_t n) {
  while (n > 0) {
    const ssize_t r = io(fd, p, n);
    if (r <= 0) {
      if (r < 0 && errno == EINTR) continue;
      Die(what);
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

void FullRead(int fd, void* p, std::size_t n) {
  FullIo(::read, "read", fd, static_cast<char*>(p), n);
}

void FullWrite(int fd, const void* p, std::size_t n) {
  FullIo(::write, "write", fd, static_cast<const char*>(p), n);
}

void Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) != 0)
    Die("pthread_setaffinity_np");
}

void WriteSamples(const char* path, const std::vector<std::int32_t>& v) {
  if (path == nullptr) return;
  FILE* f = std::fopen(path, "wb");
  if (f == nullptr) Die(path);
  if (std::fwrite(v.data(), sizeof v[0], v.size(), f) != v.size()) Die("fwrite");
  std::fclose(f);
}

int PingPong(long n, int cpu, const char* file) {
  int ab[2], ba[2];
  if (::pipe(ab) != 0 || ::pipe(ba) != 0) Die("pipe");
  std::thread echo([&] {
    Pin(cpu);
    char c;
    for (long i = 0; i < n; ++i) {
      FullRead(ab[0], &c, 1);
      CMP_EVENT(1, i);
      FullWrite(ba[1], &c, 1);
    }
  });
  Pin(cpu);
  std::vector<std::int32_t> rtt(static_cast<std::size_t>(n));
  char c = 'x';
  const double cpu0 = ProcessCpuSeconds();
  const std::int64_t t0 = NowNs();
  std::int64_t prev = t0;
  for (long i = 0; i < n; ++i) {
    FullWrite(ab[1], &c, 1);
    FullRead(ba[0], &c, 1);
    CMP_EVENT(0, i);
    const std::int64_t now = NowNs();
    rtt[static_cast<std::size_t>(i)] =
        static_cast<std::int32_t>(std::min<std::int64_t>(now - prev, INT32_MAX));
    prev = now;
  }
  const double secs = static_cast<double>(NowNs() - t0) / 1e9;
  echo.join();
  const double cpu_s = ProcessCpuSeconds() - cpu0;
  WriteSamples(file, rtt);
  std::printf(
      "{\"tracer\": \"%s\", \"round_trips\": %ld, \"seconds\": %.6f, \"round_trips_per_s\": %.1f, "
      "\"cpu_us_per_round_trip\": %.3f, \"events\": %ld}\n",
      kCmpTracer, n, secs, static_cast<double>(n) / secs, cpu_s * 1e6 / static_cast<double>(n),
      2 * n);
  return 0;
}

int WakeUp(long n, long period_us, const char* file) {
  // Like cyclictest -p: SCHED_FIFO (no timer slack, not delayed by the other programs of this
  // shared VM) when permitted; otherwise SCHED_OTHER with the timer slack cut from 50 us to 1 ns.
  // The thread runs ~1% of the time, well inside the kernel's RT throttling.
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  sched_param sp{};
  sp.sched_priority = 50;
  const bool fifo = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &sp) == 0;
  std::vector<std::int32_t> late(static_cast<std::size_t>(n));
  timespec next;
  ::clock_gettime(CLOCK_MONOTONIC, &next);
  const long period_ns = period_us * 1000;
  double sum = 0;
  for (long i = 0; i < n; ++i) {
    next.tv_nsec += period_ns;
    while (next.tv_nsec >= 1'000'000'000) {
      next.tv_nsec -= 1'000'000'000;
      ++next.tv_sec;
    }
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr) == EINTR) {
    }
    const std::int64_t lateness =
        NowNs() - (static_cast<std::int64_t>(next.tv_sec) * 1'000'000'000 + next.tv_nsec);
    CMP_EVENT(i, lateness);
    late[static_cast<std::size_t>(i)] =
        static_cast<std::int32_t>(std::min<std::int64_t>(lateness, INT32_MAX));
    sum += static_cast<double>(lateness);
  }
  WriteSamples(file, late);
  std::vector<std::int32_t> s = late;
  std::sort(s.begin(), s.end());
  std::printf(
      "{\"tracer\": \"%s\", \"policy\": \"%s\", \"wakeups\": %ld, \"period_us\": %ld, \"min_ns\": "
      "%d, "
      "\"avg_ns\": %.1f, \"p50_ns\": %d, \"p99_ns\": %d, \"max_ns\": %d, \"events\": %ld}\n",
      kCmpTracer, fifo ? "SCHED_FIFO 50" : "SCHED_OTHER", n, period_us, s.front(),
      sum / static_cast<double>(n), s[s.size() / 2], s[s.size() * 99 / 100], s.back(), n);
  return 0;
}

int HackBench(int groups, int fds, long loops) {
  constexpr std::size_t kMsg = 100;
  std::vector<std::thread> threads;
  std::vector<int> all_fds;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  const int total = groups * fds * 2;
  for (int g = 0; g < groups; ++g) {
    std::vector<int> to_receiver(static_cast<std::size_t>(fds));
    for (int r = 0; r < fds; ++r) {
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) Die("socketpair");
      all_fds.push_back(sv[0]);
      all_fds.push_back(sv[1]);
      to_receiver[static_cast<std::size_t>(r)] = sv[1];
      const int in = sv[0];
      threads.emplace_back([&, in, fds, loops] {
        char buf[kMsg];
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        for (long i = 0; i < fds * loops; ++i) {
          FullRead(in, buf, kMsg);
          CMP_EVENT(in, i);
        }
      });
    }
    for (int s = 0; s < fds; ++s) {
      threads.emplace_back([&, to_receiver, loops] {
        char buf[kMsg] = {};
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        for (long i = 0; i < loops; ++i) {
          for (const int out : to_receiver) {
            FullWrite(out, buf, kMsg);
            CMP_EVENT(out, i);
          }
        }
      });
    }
  }
  while (ready.load() != total) std::this_thread::yield();
  const double cpu0 = ProcessCpuSeconds();
  const std::int64_t t0 = NowNs();
  go.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  const double secs = static_cast<double>(NowNs() - t0) / 1e9;
  const double cpu = ProcessCpuSeconds() - cpu0;
  for (const int fd : all_fds) ::close(fd);
  std::printf(
      "{\"tracer\": \"%s\", \"groups\": %d, \"fds\": %d, \"loops\": %ld, \"seconds\": %.6f, "
      "\"cpu_seconds\": %.6f, \"events\": %ld}\n",
      kCmpTracer, groups, fds, loops, secs, cpu, 2L * groups * fds * fds * loops);
  return 0;
}

int Throughput(int nthreads, double rate, double secs) {
  std::vector<long> emitted(static_cast<std::size_t>(nthreads));
  std::vector<std::thread> threads;
  const std::int64_t t0 = NowNs();
  const auto dur = static_cast<std::int64_t>(secs * 1e9);
  for (int t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      long n = 0;
      if (rate <= 0) {
        while (true) {
          for (int k = 0; k < 1024; ++k) CMP_EVENT(t, n + k);
          n += 1024;
          if (NowNs() - t0 >= dur) break;
        }
      } else {
        constexpr std::int64_t kSlice = 1'000'000;
        for (std::int64_t slice = 1;; ++slice) {
          const std::int64_t end = std::min(slice * kSlice, dur);
          const auto due = static_cast<long>(rate * static_cast<double>(end) / 1e9);
          for (; n < due; ++n) CMP_EVENT(t, n);
          if (end >= dur) break;
          const std::int64_t wake = t0 + slice * kSlice;
          timespec ts{static_cast<time_t>(wake / 1'000'000'000),
                      static_cast<long>(wake % 1'000'000'000)};
          while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
          }
        }
      }
      emitted[static_cast<std::size_t>(t)] = n;
    });
  }
  for (auto& th : threads) th.join();
  const double elapsed = static_cast<double>(NowNs() - t0) / 1e9;
  long total = 0;
  for (const long e : emitted) total += e;
  std::printf(
      "{\"tracer\": \"%s\", \"threads\": %d, \"rate_per_thread\": %.0f, \"seconds\": %.6f, "
      "\"events\": %ld, \"events_per_s_per_thread\": %.1f}\n",
      kCmpTracer, nthreads, rate, elapsed, total, static_cast<double>(total) / elapsed / nthreads);
  return 0;
}

int Spin(double secs) {
  const std::int64_t end = NowNs() + static_cast<std::int64_t>(secs * 1e9);
  long n = 0;
  for (;;) {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    CMP_EVENT(ts.tv_sec & 0x7fffffff, ts.tv_nsec);
    ++n;
    const std::int64_t now = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    if (now >= end) break;
    while (NowNs() - now < 2000) {
    }
  }
  std::printf("{\"tracer\": \"%s\", \"events\": %ld}\n", kCmpTracer, n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto arg = [&](int i, const char* def) { return i < argc ? argv[i] : def; };
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s pingpong|wakeup|hackbench|throughput|spin ARGS (see the source)\n",
                 argv[0]);
    return 1;
  }
  const char* cmd = argv[1];
  if (std::strcmp(cmd, "pingpong") == 0)
    return PingPong(std::atol(arg(2, "100000")), std::atoi(arg(3, "0")), arg(4, nullptr));
  if (std::strcmp(cmd, "wakeup") == 0)
    return WakeUp(std::atol(arg(2, "5000")), std::atol(arg(3, "200")), arg(4, nullptr));
  if (std::strcmp(cmd, "hackbench") == 0)
    return HackBench(std::atoi(arg(2, "4")), std::atoi(arg(3, "2")), std::atol(arg(4, "3000")));
  if (std::strcmp(cmd, "throughput") == 0)
    return Throughput(std::atoi(arg(2, "1")), std::atof(arg(3, "0")), std::atof(arg(4, "2")));
  if (std::strcmp(cmd, "spin") == 0) return Spin(std::atof(arg(2, "1")));
  std::fprintf(stderr, "cmp: unknown subcommand %s\n", cmd);
  return 1;
}
