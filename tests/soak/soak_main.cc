// Soak: sessions started and stopped back to back (stream and flight, random buffer sizes) while
// 4 threads emit at full speed, short-lived threads come and go, and flight sessions are
// snapshotted. After each session its trace is read back with the reader library and checked:
//   - it opens and reads to the end without error;
//   - per thread, sequence numbers strictly increase (nothing duplicated or reordered);
//   - stream mode: every event is in the trace or counted lost. A thread's missing sequence
//     numbers between its first and last event in the trace never exceed the trace's recorded
//     losses, the trace records the same losses as the session's statistics, and it holds the
//     events the statistics say were written (plus at most one per thread: an event still being
//     written when Stop's bounded wait ends, session.h).
//
//   hush_soak SECONDS DIR      exit status 0: every session passed; 1: a check failed (printed)
//
// Sequence numbers advance only when an event's arguments are evaluated, i.e. while its site is
// enabled, so between sessions nothing is skipped.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hushtrace/hushtrace.h"
#include "hushtrace/reader.h"
#include "hushtrace/session.h"

HUSH_TRACEPOINT(soak, seq, (std::uint32_t, thread), (std::uint64_t, seq))

namespace {

constexpr std::uint32_t kEmitters = 4;
constexpr std::uint32_t kFirstShortLivedId = 1000;

std::atomic<bool> g_quit{false};
std::atomic<std::uint64_t> g_emitted{0};

void Emitter(std::uint32_t id) {
  std::uint64_t seq = 0;
  std::uint64_t n = 0;
  while (!g_quit.load(std::memory_order_relaxed)) {
    for (int k = 0; k < 256; ++k) HUSH_TRACE(soak, seq, id, (++n, seq++));
    if (id % 2 == 1) std::this_thread::yield();  // two threads at full speed, two paced
  }
  g_emitted.fetch_add(n, std::memory_order_relaxed);
}

void ShortLivedThreads() {
  std::uint32_t next_id = kFirstShortLivedId;
  while (!g_quit.load(std::memory_order_relaxed)) {
    std::vector<std::thread> wave;
    for (int k = 0; k < 4; ++k) {
      wave.emplace_back([id = next_id++] {
        std::uint64_t seq = 0;
        for (int i = 0; i < 50; ++i) HUSH_TRACE(soak, seq, id, seq++);
      });
    }
    for (auto& t : wave) t.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

struct Failure {
  std::string what;
};

// Reads and checks one stopped session's trace; returns the events read.
std::uint64_t Check(const std::string& dir, hush::Mode mode, const hush::SessionStats& stats,
                    std::uint32_t threads_bound, std::vector<Failure>* failures) {
  auto fail = [&](const std::string& what) { failures->push_back({dir + ": " + what}); };
  std::string error;
  auto trace = hush::reader::Trace::Open(dir, &error);
  if (!trace) {
    fail("cannot open: " + error);
    return 0;
  }
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> range;  // id -> first, last
  std::map<std::uint64_t, std::uint64_t> count;
  hush::reader::EventIterator it(*trace);
  std::uint64_t events = 0;
  while (it.Next()) {
    const hush::reader::Event& e = it.event();
    if (e.name() != "soak:seq") continue;
    const std::uint64_t id = e.field(0).AsUint64(), seq = e.field(1).AsUint64();
    auto [pos, first] = range.try_emplace(id, seq, seq);
    if (!first) {
      if (seq <= pos->second.second) {
        fail("thread " + std::to_string(id) + ": seq " + std::to_string(seq) + " after " +
             std::to_string(pos->second.second));
      }
      pos->second.second = seq;
    }
    ++count[id];
    ++events;
  }
  if (!it.error().empty()) fail("read error: " + it.error());
  if (mode != hush::Mode::kStream) return events;
  std::uint64_t gaps = 0;
  for (const auto& [id, r] : range) gaps += (r.second - r.first + 1) - count[id];
  const std::uint64_t recorded = trace->events_discarded();
  const std::uint64_t counted = stats.events_discarded + stats.events_overwritten +
                                stats.events_lost_on_write;
  if (gaps > recorded) {
    fail(std::to_string(gaps) + " events missing inside threads' ranges, " +
         std::to_string(recorded) + " recorded as lost");
  }
  if (recorded != counted) {
    fail("trace records " + std::to_string(recorded) + " lost events, statistics " +
         std::to_string(counted));
  }
  if (events < stats.events_written || events > stats.events_written + threads_bound) {
    fail(std::to_string(events) + " events in the trace, statistics say " +
         std::to_string(stats.events_written) + " written");
  }
  return events;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: hush_soak SECONDS DIR\n");
    return 2;
  }
  const auto duration = std::chrono::seconds(std::strtoul(argv[1], nullptr, 10));
  const std::filesystem::path root = argv[2];
  std::filesystem::create_directories(root);
  std::mt19937_64 rng(std::random_device{}());

  std::vector<std::thread> threads;
  for (std::uint32_t id = 0; id < kEmitters; ++id) threads.emplace_back(Emitter, id);
  threads.emplace_back(ShortLivedThreads);

  std::vector<Failure> failures;
  std::uint64_t sessions = 0, events = 0, lost = 0, snapshots = 0;
  const auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end && failures.size() < 20) {
    const hush::Mode mode = sessions % 2 == 0 ? hush::Mode::kStream : hush::Mode::kFlight;
    hush::SessionOptions options;
    options.events = {"soak:*"};
    options.output_dir = (root / ("session-" + std::to_string(sessions))).string();
    options.mode = mode;
    options.buffer_size = std::size_t{16} << 10 << (rng() % 7);  // 16 KiB .. 1 MiB
    std::string error;
    auto session = hush::Session::Start(options, &error);
    if (!session) {
      failures.push_back({"Session::Start: " + error});
      break;
    }
    const auto run_for = std::chrono::milliseconds(20 + rng() % 200);
    std::this_thread::sleep_for(run_for / 2);
    if (mode == hush::Mode::kFlight) {
      if (!session->Snapshot(&error)) failures.push_back({"Snapshot: " + error});
      ++snapshots;
    }
    std::this_thread::sleep_for(run_for / 2);
    session->Stop();
    const hush::SessionStats stats = session->Stats();
    // Bound for stragglers: the emitters plus the short-lived threads of one wave.
    events += Check(options.output_dir, mode, stats, kEmitters + 4, &failures);
    lost += stats.events_discarded + stats.events_overwritten + stats.events_lost_on_write;
    session.reset();
    std::filesystem::remove_all(options.output_dir);
    ++sessions;
  }
  g_quit.store(true);
  for (auto& t : threads) t.join();
  for (const Failure& f : failures) std::fprintf(stderr, "hush_soak: FAILED: %s\n", f.what.c_str());
  std::printf("hush_soak: %llu sessions (%llu snapshots), %llu events checked, %llu counted lost, "
              "%llu emitted in all: %s\n",
              static_cast<unsigned long long>(sessions), static_cast<unsigned long long>(snapshots),
              static_cast<unsigned long long>(events), static_cast<unsigned long long>(lost),
              static_cast<unsigned long long>(g_emitted.load()),
              failures.empty() ? "ok" : "FAILED");
  return failures.empty() && sessions > 0 ? 0 : 1;
}
