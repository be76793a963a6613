// Soak: sessions started and stopped back to back (stream and flight, random buffer sizes) while
// 4 threads emit at full speed, short-lived threads come and go, and flight sessions are
// snapshotted. Half the sessions are attached and detached through the live-control server
// (src/control: `hushtrace start|snapshot|stop PID` requests on its socket, served by its own
// thread), half through the Session API. Enable/disable churn: every third session enables only
// soak:tick (soak:seq's sites go off and on again), and one session in four runs 0-2 ms.
// After each session its trace is read back with the reader library and checked:
//   - it opens and reads to the end without error;
//   - per thread and event, sequence numbers strictly increase (nothing duplicated or reordered);
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
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
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
#include "control/protocol.h"
#include "control/server.h"
#include "session/core.h"
#include "support/process_usage.h"

HUSH_TRACEPOINT(soak, seq, (std::uint32_t, thread), (std::uint64_t, seq))
HUSH_TRACEPOINT(soak, tick, (std::uint32_t, thread), (std::uint64_t, seq))

namespace {

constexpr std::uint32_t kEmitters = 4;
constexpr std::uint32_t kFirstShortLivedId = 1000;

std::atomic<bool> g_quit{false};
std::atomic<std::uint64_t> g_emitted{0};

void Emitter(std::uint32_t id) {
  std::uint64_t seq = 0, tick = 0;
  std::uint64_t n = 0;
  while (!g_quit.load(std::memory_order_relaxed)) {
    for (int k = 0; k < 256; ++k) HUSH_TRACE(soak, seq, id, (++n, seq++));
    HUSH_TRACE(soak, tick, id, (++n, tick++));
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
  // Key: thread id * 2 + (1 for soak:tick): each event has its own sequence per thread.
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> range;  // key -> first, last
  std::map<std::uint64_t, std::uint64_t> count;
  hush::reader::EventIterator it(*trace);
  std::uint64_t events = 0;
  while (it.Next()) {
    const hush::reader::Event& e = it.event();
    const bool tick = e.name() == "soak:tick";
    if (e.name() != "soak:seq" && !tick) {
      fail("unexpected event " + std::string(e.name()));
      continue;
    }
    const std::uint64_t id = e.field(0).AsUint64() * 2 + (tick ? 1 : 0), seq = e.field(1).AsUint64();
    auto [pos, first] = range.try_emplace(id, seq, seq);
    if (!first) {
      if (seq <= pos->second.second) {
        fail("thread " + std::to_string(id / 2) + (id % 2 ? " soak:tick" : " soak:seq") + ": seq " + std::to_string(seq) + " after " +
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

// One live-control request, as `hushtrace start|snapshot|stop PID` sends it: over this process's
// control socket when the server could be started, else straight to HandleRequest.
bool g_use_socket = false;

std::string Control(const std::string& verb, const hush::control::Fields& fields = {}) {
  const std::string request =
      hush::control::EncodeMessage(std::string(hush::control::kRequestMagic) + verb, fields);
  if (!g_use_socket) return hush::control::HandleRequest(request);
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = hush::control::SocketPath(::geteuid(), ::getpid());
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  std::string reply;
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    std::vector<char> buf(hush::control::kMaxMessage);
    ssize_t n;
    do {
      n = ::recv(fd, buf.data(), buf.size(), 0);
    } while (n < 0 && errno == EINTR);
    if (n > 0) reply.assign(buf.data(), static_cast<std::size_t>(n));
  }
  if (fd >= 0) ::close(fd);
  return reply.empty() ? "error no reply from the control socket: " + std::string(std::strerror(errno)) : reply;
}

// A session, started and stopped through the API or through the control server.
class SoakSession {
 public:
  bool Start(bool by_control, const hush::SessionOptions& o, std::string* error) {
    by_control_ = by_control;
    if (!by_control) {
      api_ = hush::Session::Start(o, error);
      return api_ != nullptr;
    }
    hush::control::Fields f;
    for (const std::string& e : o.events) f.emplace_back("event", e);
    f.emplace_back("output", o.output_dir);
    f.emplace_back("mode", o.mode == hush::Mode::kFlight ? "flight" : "stream");
    f.emplace_back("buffer-size", std::to_string(o.buffer_size));
    const std::string reply = Control("start", f);
    if (reply.rfind("ok\n", 0) != 0) {
      *error = "control start: " + reply;
      return false;
    }
    return true;
  }
  bool Snapshot(std::string* error) {
    if (!by_control_) return api_->Snapshot(error);
    const std::string reply = Control("snapshot");
    if (reply.rfind("ok\n", 0) == 0) return true;
    *error = "control snapshot: " + reply;
    return false;
  }
  bool Stop(std::string* error) {
    if (!by_control_) {
      api_->Stop();
      return true;
    }
    // The reply carries the session's final totals: the session itself is freed after its
    // grace period, so there is nothing to ask afterwards.
    const std::string reply = Control("stop");
    std::string first, why;
    hush::control::Fields fields;
    if (reply.rfind("ok\n", 0) != 0 || !hush::control::DecodeMessage(reply, &first, &fields, &why)) {
      *error = "control stop: " + reply + why;
      return false;
    }
    const auto number = [&](const char* key) -> std::uint64_t {
      for (const auto& [k, v] : fields) {
        if (k == key) return std::strtoull(v.c_str(), nullptr, 10);
      }
      *error = std::string("control stop: no ") + key + " in the reply";
      return 0;
    };
    control_stats_.rings = static_cast<std::uint32_t>(number("buffers"));
    control_stats_.events_written = number("events-written");
    control_stats_.events_discarded = number("events-discarded");
    control_stats_.events_overwritten = number("events-overwritten");
    control_stats_.events_lost_on_write = number("events-lost-on-write");
    control_stats_.bytes_written = number("bytes-written");
    control_stats_.events_filtered_out = number("events-filtered-out");
    return error->empty();
  }
  hush::SessionStats Stats() const { return by_control_ ? control_stats_ : api_->Stats(); }

 private:
  bool by_control_ = false;
  std::unique_ptr<hush::Session> api_;
  hush::SessionStats control_stats_;  // final totals from the stop reply
};

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

  const int bootstrap = hush::control::Bootstrap();
  g_use_socket = bootstrap == 0;
  if (!g_use_socket) {
    std::fprintf(stderr, "hush_soak: control socket unavailable (%s): control requests go to HandleRequest\n",
                 std::strerror(-bootstrap));
  }

  std::vector<Failure> failures;
  std::uint64_t sessions = 0, events = 0, lost = 0, snapshots = 0, by_control = 0, failed_starts = 0;
  // What the process holds after a warm-up: sessions that come and go give everything back
  // (src/session/core.h, "Lifetime"), checked against it at the end.
  hush::testsupport::ProcessUsage warm;
  const auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end && failures.size() < 20) {
    const hush::Mode mode = sessions % 2 == 0 ? hush::Mode::kStream : hush::Mode::kFlight;
    const bool control = sessions % 4 >= 2;  // API stream, API flight, control stream, control flight
    hush::SessionOptions options;
    options.events = {sessions % 3 == 2 ? "soak:tick" : "soak:*"};
    options.output_dir = (root / ("session-" + std::to_string(sessions))).string();
    options.mode = mode;
    options.buffer_size = std::size_t{16} << 10 << (rng() % 7);  // 16 KiB .. 1 MiB
    std::string error;
    if (sessions % 8 == 5) {
      // A start that fails (its filter names no field): it leaves nothing behind.
      hush::SessionOptions bad = options;
      bad.filter = "nosuchfield > 3";
      SoakSession refused;
      if (refused.Start(control, bad, &error)) {
        failures.push_back({"a start with a filter that binds to nothing succeeded"});
        refused.Stop(&error);
      } else if (std::filesystem::exists(bad.output_dir)) {
        failures.push_back({"a failed start left " + bad.output_dir});
      }
      ++failed_starts;
      error.clear();
    }
    if (sessions == 10) warm = hush::testsupport::ReadProcessUsage(::getpid(), root.string());
    SoakSession session;
    if (!session.Start(control, options, &error)) {
      failures.push_back({"start: " + error});
      break;
    }
    by_control += control ? 1 : 0;
    const auto run_for = sessions % 4 == 1 ? std::chrono::microseconds(rng() % 2000)
                                           : std::chrono::microseconds(20000 + rng() % 200000);
    std::this_thread::sleep_for(run_for / 2);
    if (mode == hush::Mode::kFlight) {
      if (!session.Snapshot(&error)) failures.push_back({"Snapshot: " + error});
      ++snapshots;
    }
    std::this_thread::sleep_for(run_for / 2);
    if (!session.Stop(&error)) {
      failures.push_back({"stop: " + error});
      break;
    }
    const hush::SessionStats stats = session.Stats();
    // Bound for stragglers: the emitters plus the short-lived threads of one wave.
    events += Check(options.output_dir, mode, stats, kEmitters + 4, &failures);
    lost += stats.events_discarded + stats.events_overwritten + stats.events_lost_on_write;
    std::filesystem::remove_all(options.output_dir);
    ++sessions;
  }
  g_quit.store(true);
  for (auto& t : threads) t.join();
  if (warm.ok) {
    const hush::testsupport::ProcessUsage end_usage = hush::testsupport::ReadProcessUsage(::getpid(), root.string());
    std::printf("hush_soak: after 10 sessions: %s\nhush_soak: at the end:        %s\n",
                hush::testsupport::Describe(warm).c_str(), hush::testsupport::Describe(end_usage).c_str());
    if (end_usage.fds > warm.fds) failures.push_back({"descriptors grew over the run"});
    // At most the rings of one session whose grace period was still running (emitters and one
    // wave of short-lived threads, 1 MiB each at most).
    if (end_usage.file_map_bytes > (kEmitters + 4) * ((std::uint64_t{1} << 20) + 4096)) {
      failures.push_back({"ring mappings of stopped sessions remain"});
    }
  }
  for (const Failure& f : failures) std::fprintf(stderr, "hush_soak: FAILED: %s\n", f.what.c_str());
  std::printf("hush_soak: %llu sessions (%llu through the control socket, %llu snapshots, %llu failed starts), "
              "%llu events checked, %llu counted lost, %llu emitted in all: %s\n",
              static_cast<unsigned long long>(sessions), static_cast<unsigned long long>(by_control),
              static_cast<unsigned long long>(snapshots), static_cast<unsigned long long>(failed_starts),
              static_cast<unsigned long long>(events), static_cast<unsigned long long>(lost),
              static_cast<unsigned long long>(g_emitted.load()),
              failures.empty() ? "ok" : "FAILED");
  return failures.empty() && sessions > 0 ? 0 : 1;
}
