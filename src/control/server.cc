// Control server (see server.h): socket set-up, the serving thread, request handling.
//
// Threading: Bootstrap() may run on any application thread (injected, or in the constructor).
// The server thread alone calls HandleRequest() in production, so g_session needs no lock of
// its own; the session calls it makes are thread-safe (session.h).
#include "control/server.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <time.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "clock/clock.h"
#include "control/protocol.h"
#include "hushtrace/session.h"
#include "patch/patch.h"
#include "session/core.h"
#include "base/unique_fd.h"
#include "base/user_directory.h"
#include "base/library_thread.h"

namespace hush::control {
namespace {

// The control thread's stack, its own rather than the program's default (which RLIMIT_STACK or
// pthread_setattr_default_np may make small). Its deepest request is a `start` (Session::Start:
// filter parsing, whose recursion filter::kMaxNesting bounds, pattern matching, file creation);
// the ASan build runs the limit tests on it (tests/control/control_test.cc).
constexpr std::size_t kServerStackBytes = 1 << 20;
constexpr int kFreeAfterStopMs = 20;

std::mutex g_handle_mu;                  // serializes HandleRequest (tests call it directly)
std::unique_ptr<Session>* g_session;     // the session started by `hushtrace start`; never freed
// A session `stop` ended, freed after the reply is sent (FreeStoppedSession): its data is on disk
// by then, and what freeing it costs (joining the consumer thread, unmapping the rings: ~1 ms on
// ext4, mostly munmap of dirty file pages) is no part of what the user waits for.
std::unique_ptr<Session>* g_stopped;
std::string* g_socket_path;              // unlinked at exit
int g_bootstrap_result = 0;

void FreeStoppedSession() {
  std::lock_guard<std::mutex> lock(g_handle_mu);
  if (g_stopped != nullptr) g_stopped->reset();
  session::FreeStopped();  // a session the program started, stopped by `hushtrace stop`
}

std::string HandleRequestKeepingStopped(std::string_view request);

// One line: a message with several lines (a filter's caret) would be read as key/value lines.
std::string Error(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return "error " + line + "\n";
}

std::string Start(const Fields& fields) {
  SessionOptions options;
  bool have_output = false;
  for (const auto& [key, value] : fields) {
    if (key == "event") {
      options.events.push_back(value);
    } else if (key == control::key::kOutput && !have_output) {
      if (value.empty() || value[0] != '/') return Error("output must be an absolute path");
      options.output_dir = value;
      have_output = true;
    } else if (key == "mode" && value == "stream") {
      options.mode = Mode::kStream;
    } else if (key == "mode" && value == "flight") {
      options.mode = Mode::kFlight;
    } else if (key == "buffer-size") {
      if (!ParseSize(value, &options.buffer_size)) return Error("bad buffer-size '" + value + "'");
    } else if (key == "buffer-budget") {
      if (!ParseSize(value, &options.buffer_budget) || options.buffer_budget == 0) {
        return Error("bad buffer-budget '" + value + "'");
      }
    } else if (key == "filter" && options.filter.empty()) {
      options.filter = value;
    } else if (key == "snapshot-on") {
      options.snapshot_on.push_back(value);
    } else if (key == "snapshot-interval-ms") {
      char* end = nullptr;
      const unsigned long ms = std::strtoul(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || value[0] == '-' || ms > 86400000ul) {
        return Error("bad snapshot-interval-ms '" + value + "'");
      }
      options.snapshot_interval_ms = static_cast<std::uint32_t>(ms);
    } else if (key == "snapshot-after-ns" || key == "snapshot-keep") {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
      const unsigned long long max = key == "snapshot-keep" ? 1000000ull : 3600000000000ull;
      if (value.empty() || *end != '\0' || value[0] == '-' || n > max) {
        return Error("bad " + key + " '" + value + "'");
      }
      if (key == "snapshot-keep") {
        options.snapshot_keep = static_cast<std::uint32_t>(n);
      } else {
        options.snapshot_after_ns = n;
      }
    } else {
      return Error("start: unexpected '" + key + " " + value + "'");
    }
  }
  if (options.events.empty()) return Error("start: no event requested");
  if (!have_output) return Error("start: no output directory");
  if (session::Core::Active() != nullptr) return Error("a session is already active in this process");
  std::string error;
  std::unique_ptr<Session> session = Session::Start(options, &error);
  if (!session) return Error(error);
  *g_session = std::move(session);
  Fields f = {{key::kOutput, (*g_session)->output_dir()}};
  // As `record` warns before it runs a program: a pattern that matches nothing here is most
  // likely a mistake, but a module loaded later may still bring matching events, so it stands.
  if ((*g_session)->Stats().enabled_events == 0) {
    f.emplace_back(key::kWarning, "no event of this process matches the patterns (a module loaded later may bring some)");
  }
  return EncodeMessage("ok", f);
}

bool StartedBy(const char* request, ssize_t n) {
  const std::string_view r(request, static_cast<std::size_t>(n));
  return r.substr(0, kRequestMagic.size() + 6) == std::string(kRequestMagic) + "start\n";
}

// The session's statistics as reply fields (status, and stop's final totals).
void AddStats(const SessionStats& s, Fields* f) {
  f->insert(f->end(), {
      {key::kBuffers, std::to_string(s.rings)},
      {key::kEventsWritten, std::to_string(s.events_written)},
      {key::kEventsDiscarded, std::to_string(s.events_discarded)},
      {key::kEventsOverwritten, std::to_string(s.events_overwritten)},
      {key::kEventsLostOnWrite, std::to_string(s.events_lost_on_write)},
      {key::kBytesWritten, std::to_string(s.bytes_written)},
      {key::kEventsFilteredOut, std::to_string(s.events_filtered_out)},
      {key::kSnapshotsTriggered, std::to_string(s.snapshots_triggered)},
      {key::kTriggersSuppressed, std::to_string(s.triggers_suppressed)},
  });
}

// Replies "ok", the output directory and the session's final totals (all written by then).
std::string Stop() {
  std::string output;
  SessionStats final_stats;
  // An earlier stopped Session goes first: destroying it frees every stopped Core
  // (Session::Stop), which after StopActive would include this one, inside the request.
  g_stopped->reset();
  if (!session::StopActive(&output, &final_stats)) return Error("no active session");
  *g_stopped = std::move(*g_session);  // a session `hushtrace start` made: stopped above
  Fields f = {{key::kOutput, output}};
  AddStats(final_stats, &f);
  return EncodeMessage("ok", f);
}

std::string Snapshot() {
  std::string output, error;
  if (!session::SnapshotActive(&output, &error)) return Error(error);
  return "ok\noutput " + output + "\n";
}

std::string Status() {
  session::ActiveView active;
  if (!session::DescribeActive(&active)) return "ok\nsession none\n";
  const SessionStats& s = active.stats;
  Fields f = {
      {"session", "active"},
      {"started-by", *g_session ? "hushtrace" : "program"},
      {"mode", active.mode == Mode::kFlight ? "flight" : "stream"},
      {key::kOutput, active.output_dir},
  };
  AddStats(s, &f);
  for (const std::string& name : active.enabled) f.emplace_back("enabled", name);
  return EncodeMessage("ok", f);
}

std::uint64_t MonotonicMs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000000;
}

bool ParseDeadline(const std::string& text, std::uint64_t* out) {
  if (text.empty() || text.size() > 19 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *out = std::stoull(text);
  return true;
}

// True when the client hung up (killed, or gave up) before its request is handled: the request
// is then dropped, so that a `start` nobody waits for never leaves a session behind.
bool ClientGone(int c) {
  pollfd p{c, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

double NowUs(clockid_t clock) {
  timespec ts;
  ::clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

void Serve(int listen_fd) {
  std::vector<char> buf;
  {
    // Allocations and one-time work: a fork() waits for them (base/fork_gate.h).
    const base::ForkGateSection working;
    // Most likely a `start` follows: take the slow one-time part of the first patch batch and
    // the clock's first frequency estimate now, while the CLI is still detaching, rather than
    // inside that request.
    patch::Prepare();
    clock::Prepare();
    buf.resize(kMaxMessage + 1);
  }
  bool stopped_pending = false;  // a `stop` left a session to free (FreeStoppedSession)
  for (;;) {
    // What a `stop` left is freed once no request came for kFreeAfterStopMs: freeing (joining
    // the consumer, unmapping the rings, ~0.7 ms of CPU) right after the reply competed with the
    // client for the CPUs while it exits, ~2 ms more of `hushtrace stop` for a user on a 2-CPU
    // machine with a busy program (bench/attach_cli.py --target spin). A `start` that comes
    // first frees it itself (Session::Start).
    if (stopped_pending) {
      pollfd p{listen_fd, POLLIN, 0};
      if (::poll(&p, 1, kFreeAfterStopMs) == 0) {
        FreeStoppedSession();
        stopped_pending = false;
      }
    }
    const base::UniqueFd client(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    const int c = client.get();
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE ||
          errno == ENOBUFS || errno == ENOMEM) {
        if (errno != EINTR && errno != ECONNABORTED) ::usleep(10000);
        continue;
      }
      return;  // the socket is gone
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    const bool allowed = ::getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
                         (cred.uid == ::geteuid() || cred.uid == 0);
    ssize_t n = 0;
    int msg_flags = 0;
    if (allowed) {
      // A client that connects and sends nothing must not hold the server.
      timeval tv{2, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      iovec iov{buf.data(), buf.size()};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      do {
        n = ::recvmsg(c, &msg, 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) continue;
      msg_flags = msg.msg_flags;
    }
    {
      // The request is in: handling it allocates (and frees `reply`) inside the section.
      const base::ForkGateSection working;
      std::string reply;
      if (!allowed) {
        reply = Error("permission denied: process " + std::to_string(::getpid()) +
                      " is controlled by its user and root only");
      } else if ((msg_flags & MSG_TRUNC) != 0 || static_cast<std::size_t>(n) > kMaxMessage) {
        reply = Error("request larger than " + std::to_string(kMaxMessage) + " bytes");
      } else if (ClientGone(c)) {
        continue;  // nobody waits for the reply: nothing is done
      } else {
        const double wall = NowUs(CLOCK_MONOTONIC), cpu = NowUs(CLOCK_THREAD_CPUTIME_ID);
        reply = HandleRequestKeepingStopped(std::string_view(buf.data(), static_cast<std::size_t>(n)));
        // The time spent in the process, for benchmarks (the CLI ignores unknown keys).
        char times[96];
        std::snprintf(times, sizeof times, "server-wall-us %.0f\nserver-cpu-us %.0f\n",
                      NowUs(CLOCK_MONOTONIC) - wall, NowUs(CLOCK_THREAD_CPUTIME_ID) - cpu);
        reply += times;
      }
      const bool sent =
          ::send(c, reply.data(), reply.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(reply.size());
      // A session this request started for a client that is gone (killed while it waited) is
      // stopped again: nobody knows of it, and it would make the next `start` fail.
      if (!sent && reply.rfind("ok\noutput ", 0) == 0 && StartedBy(buf.data(), n)) {
        HandleRequestKeepingStopped(std::string(kRequestMagic) + "stop\n");
      }
      stopped_pending = true;  // freed once idle (above); whether anything was stopped or not
    }
  }
}

void UnlinkSocket() {
  if (g_socket_path != nullptr) ::unlink(g_socket_path->c_str());
}

// The listening socket in one base directory (protocol.h, SocketPath), or -errno.
int CreateSocketIn(int base, std::string* path_out) {
  const uid_t uid = ::geteuid();
  // The directory must be ours, private, and not a symlink (base/user_directory.h).
  if (const int e = base::MakeUserDirectory(SocketDirectory(uid, base), uid); e != 0) return e;
  const std::string path = SocketPath(uid, ::getpid(), base);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return -ENAMETOOLONG;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  base::UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd) return -errno;
  ::unlink(path.c_str());  // left by an earlier process with our pid
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::chmod(path.c_str(), 0600) != 0 || ::listen(fd.get(), 16) != 0) {
    const int e = errno;
    fd.reset();
    ::unlink(path.c_str());
    return -e;
  }
  *path_out = path;
  return fd.release();  // the server thread's for the life of the process
}

// The first base that works (/dev/shm, then /tmp); the first base's error if none does.
int CreateSocket(std::string* path_out) {
  int first_error = 0;
  for (int base = 0; base < kSocketBaseCount; ++base) {
    const int fd = CreateSocketIn(base, path_out);
    if (fd >= 0) return fd;
    if (base == 0) first_error = fd;
  }
  return first_error;
}

}  // namespace

std::string HandleRequest(std::string_view request) {
  std::string reply = HandleRequestKeepingStopped(request);
  FreeStoppedSession();
  return reply;
}

namespace {

// HandleRequest without freeing what a `stop` stopped: Serve frees it after sending the reply.
std::string HandleRequestKeepingStopped(std::string_view request) {
  std::lock_guard<std::mutex> lock(g_handle_mu);
  if (g_session == nullptr) {
    g_session = new std::unique_ptr<Session>();
    g_stopped = new std::unique_ptr<Session>();
  }
  std::string first, error;
  Fields fields;
  if (!DecodeMessage(request, &first, &fields, &error)) return Error("malformed request: " + error);
  if (first.compare(0, kRequestMagic.size(), kRequestMagic) != 0) {
    return Error("malformed request: it does not begin with '" + std::string(kRequestMagic) + "'");
  }
  const std::string verb = first.substr(kRequestMagic.size());
  // The deadline (protocol.h): a request read after it is refused before anything is done, so a
  // client that gave up on a stopped process never sees its request take effect later.
  if (!fields.empty() && fields.back().first == "deadline-ms") {
    std::uint64_t deadline = 0;
    if (!ParseDeadline(fields.back().second, &deadline)) {
      return Error("malformed request: bad deadline-ms '" + fields.back().second + "'");
    }
    fields.pop_back();
    const std::uint64_t now = MonotonicMs();
    if (now > deadline) {
      return Error(verb + ": the request expired " + std::to_string(now - deadline) +
                   " ms before the process read it (was it stopped?); nothing was done");
    }
  }
  if (verb == "start") return Start(fields);
  if (!fields.empty()) return Error(verb + ": unexpected '" + fields[0].first + "'");
  if (verb == "stop") return Stop();
  if (verb == "snapshot") return Snapshot();
  if (verb == "status") return Status();
  return Error("malformed request: unknown command '" + verb + "'");
}

}  // namespace

int Bootstrap() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::string path;
    const int fd = CreateSocket(&path);
    if (fd < 0) {
      g_bootstrap_result = fd;
      return;
    }
    g_socket_path = new std::string(path);
    std::atexit(UnlinkSocket);
    // Its own stack: the program's default thread stack may be small, and the worst request (a
    // `start` at the input limits: filter, patterns, kMaxMessage bytes) must never overflow it.
    base::StartLibraryDetachedThread("hush-control", kServerStackBytes, [fd] { Serve(fd); });
  });
  return g_bootstrap_result;
}

}  // namespace hush::control

extern "C" __attribute__((visibility("default"), used)) int hushtrace_control_bootstrap(void) {
  return hush::control::Bootstrap();
}
