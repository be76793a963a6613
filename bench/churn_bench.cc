// Enable/disable churn (docs/benchmarks.md, "Probe churn"): two threads emit a recorded event at
// full speed while a third toggles another event 10,000 times by attaching and detaching a user
// probe (state word flip, probe-list publish). Detaching uses DetachProbe (no grace period each;
// one per 256 retired lists) or, with --wait 1, RemoveProbe (a membarrier grace period each).
// Reports the emitting threads' throughput without churn and with churn, per wall second and per
// CPU second of the emitters, the toggle latency, and the latency of a bare grace period
// (registry::grace::Synchronize) under load.
//
// Pacing: --burst toggles back to back every --interval-us (default 10 every 1 ms: 10,000
// toggles per second). --dry 1 keeps the pacing thread's wake-ups and toggles nothing: what the
// harness itself costs the emitters.
//
//   churn_bench [--toggles N] [--interval-us US] [--burst N] [--wait 1] [--quiet-ms MS] [--dry 1]
//   prints one JSON line on stdout
#include <hushtrace/hushtrace.h>
#include <hushtrace/probe.h>
#include <hushtrace/session.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "registry/grace.h"

HUSH_TRACEPOINT(churn, hot, (std::int32_t, a), (std::int32_t, b))
HUSH_TRACEPOINT(churn, toggled, (std::int32_t, a))
HUSH_TRACEPOINT(churn, warm, (std::int32_t, a))

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};
std::atomic<std::uint64_t> g_emitted[2];

void Emitter(int index) {
  // Probed while the threads start: each becomes a registered grace-period reader, so every
  // grace period below really waits for them (membarrier + their counters).
  HUSH_TRACE(churn, warm, index);
  std::uint64_t n = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 256; ++i) HUSH_TRACE(churn, hot, i, static_cast<std::int32_t>(n));
    HUSH_TRACE(churn, toggled, static_cast<std::int32_t>(n));  // 1 in 257 events
    n += 257;
    g_emitted[index].store(n, std::memory_order_relaxed);
  }
}

pthread_t g_threads[2];

// CPU time of both emitters, seconds: on a shared machine they are often descheduled, so events
// per CPU-second is the figure that isolates what the churn costs them.
double EmitterCpu() {
  double total = 0;
  for (pthread_t t : g_threads) {
    clockid_t id;
    timespec ts{};
    if (pthread_getcpuclockid(t, &id) == 0 && clock_gettime(id, &ts) == 0) {
      total += static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    }
  }
  return total;
}

std::uint64_t Total() {
  return g_emitted[0].load(std::memory_order_relaxed) + g_emitted[1].load(std::memory_order_relaxed);
}

// Events per second per emitting thread over `ms` milliseconds with nothing else running.
double QuietRate(int ms) {
  const std::uint64_t n0 = Total();
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return static_cast<double>(Total() - n0) / s / 2;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void Nop(const hush::ProbeEvent&, void*) {}

}  // namespace

int main(int argc, char** argv) {
  int toggles = 10000, quiet_ms = 1000, interval_us = 1000, burst = 10;
  bool dry = false;   // --dry 1: the toggling thread wakes at the same pace but toggles nothing
  bool wait = false;  // --wait 1: RemoveProbe (grace period each) instead of DetachProbe
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--toggles") == 0) toggles = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--quiet-ms") == 0) quiet_ms = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--interval-us") == 0) interval_us = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--dry") == 0) dry = std::atoi(argv[i + 1]) != 0;
    if (std::strcmp(argv[i], "--wait") == 0) wait = std::atoi(argv[i + 1]) != 0;
    if (std::strcmp(argv[i], "--burst") == 0) burst = std::max(1, std::atoi(argv[i + 1]));
  }
  char dir[] = "/dev/shm/hush-churn-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return 1;
  hush::SessionOptions o;
  o.events = {"churn:*"};
  o.mode = hush::Mode::kFlight;  // no disk I/O competes with the emitters
  o.output_dir = std::string(dir) + "/t";
  std::string error;
  auto session = hush::Session::Start(o, &error);
  if (!session) {
    std::fprintf(stderr, "churn_bench: %s\n", error.c_str());
    return 1;
  }
  const hush::ProbeHandle warm = hush::AddProbe("churn:warm", Nop, nullptr);
  std::thread t0(Emitter, 0), t1(Emitter, 1);
  g_threads[0] = t0.native_handle();
  g_threads[1] = t1.native_handle();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // warm up: rings attached
  hush::RemoveProbe(warm);

  // Interleaved rounds: a quiet window, then a churn window of toggles/rounds toggles; the quiet
  // window lasts as long as the previous churn window (at least 100 ms).
  constexpr int kRounds = 5;
  std::vector<double> toggle_us;
  toggle_us.reserve(static_cast<std::size_t>(toggles));
  double quiet_events = 0, quiet_s = 0, churn_events = 0, churn_s = 0, quiet_cpu = 0, churn_cpu = 0;
  int window_ms = std::max(100, quiet_ms / kRounds);
  hush::ProbeHandle h = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::uint64_t n0 = Total();
    double cpu0 = EmitterCpu();
    auto c0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(window_ms));
    quiet_s += std::chrono::duration<double>(Clock::now() - c0).count();
    quiet_events += static_cast<double>(Total() - n0);
    quiet_cpu += EmitterCpu() - cpu0;
    n0 = Total();
    cpu0 = EmitterCpu();
    c0 = Clock::now();
    for (int i = 0; i < toggles / kRounds; ++i) {
      // Paced (a burst per interval): the toggling thread would otherwise take a whole CPU from
      // the emitters on a 2-CPU machine. --interval-us 0: back to back.
      if (interval_us > 0 && i % burst == 0) {
        std::this_thread::sleep_until(c0 + std::chrono::microseconds(interval_us) * (i / burst));
      }
      const auto s = Clock::now();
      if (dry) {
      } else if (h == 0) {
        h = hush::AddProbe("churn:toggled", Nop, nullptr);
        if (h == 0) {
          std::fprintf(stderr, "churn_bench: AddProbe failed (membarrier?)\n");
          return 1;
        }
      } else {
        if (wait) hush::RemoveProbe(h);
        else hush::DetachProbe(h);  // Nop uses no data: no SynchronizeProbes needed
        h = 0;
      }
      toggle_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
    }
    const double d = std::chrono::duration<double>(Clock::now() - c0).count();
    churn_s += d;
    churn_events += static_cast<double>(Total() - n0);
    churn_cpu += EmitterCpu() - cpu0;
    window_ms = std::max(100, static_cast<int>(d * 1000));
  }
  if (h != 0) hush::RemoveProbe(h);
  const double quiet = quiet_events / quiet_s / 2;
  const double during = churn_s > 0.01 ? churn_events / churn_s / 2 : 0;
  const double quiet_per_cpu = quiet_events / quiet_cpu;  // events per CPU-second of an emitter
  // Back to back (--interval-us 0) the churn windows last a few ms: too short for a rate.
  const double churn_per_cpu = churn_cpu > 0.01 ? churn_events / churn_cpu : 0;
  const std::uint64_t syncs = hush::registry::grace::SynchronizeCount();

  // Bare grace periods with the emitters running (readers registered: a probe was attached).
  std::vector<double> grace_us;
  for (int i = 0; i < toggles; ++i) {
    const auto s = Clock::now();
    hush::registry::grace::Synchronize();
    grace_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
  }
  g_stop.store(true);
  t0.join();
  t1.join();
  session->Stop();
  std::string rm = std::string("rm -rf ") + dir;
  if (std::system(rm.c_str()) != 0) return 1;

  std::printf(
      "{\"toggles\": %d, \"dry\": %d, \"wait\": %d, \"burst\": %d, \"interval_us\": %d, \"membarrier_grace_periods\": %llu, \"quiet_events_per_s_per_thread\": %.0f, "
      "\"churn_events_per_s_per_thread\": %.0f, \"churn_seconds\": %.3f, \"loss_percent\": %.2f, "
      "\"quiet_events_per_cpu_s\": %.0f, \"churn_events_per_cpu_s\": %.0f, \"cpu_loss_percent\": %.2f, "
      "\"toggle_us_median\": %.2f, \"toggle_us_p99\": %.2f, \"grace_us_median\": %.2f, "
      "\"grace_us_p99\": %.2f}\n",
      toggles, dry ? 1 : 0, wait ? 1 : 0, burst, interval_us, static_cast<unsigned long long>(syncs), quiet, during, churn_s, during > 0 ? 100.0 * (1.0 - during / quiet) : 0.0,
      quiet_per_cpu, churn_per_cpu, churn_per_cpu > 0 ? 100.0 * (1.0 - churn_per_cpu / quiet_per_cpu) : 0.0,
      Percentile(toggle_us, 0.5), Percentile(toggle_us, 0.99), Percentile(grace_us, 0.5),
      Percentile(grace_us, 0.99));
  return 0;
}
