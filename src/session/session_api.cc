// hush::Session (public API) and the session started from the environment before main().
//
// Start-up cost when no session is requested: two secure_getenv() calls in a constructor.
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <limits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "functrace/functrace.h"
#include "control/server.h"
#include "hushtrace/session.h"
#include "session/core.h"
#include "session/writers.h"

namespace hush {
namespace {

// Ownership of the Cores (core.h, "Lifetime"), all under g_api_mu:
//   g_core     the session started last through this API, until it stops;
//   g_retired  stopped (or failed after publishing) Cores that a thread may still reach, freed by
//              the first grace period that ends (ReclaimRetired). Never destroyed at exit: other
//              threads may still be inside events then.
session::Core* g_core = nullptr;
auto* g_retired = new std::vector<std::unique_ptr<session::Core>>();
// The session started from the environment, stopped at exit. `used`: only leak checkers read it
// (as a root), so the compiler must not drop it.
[[gnu::used]] Session* g_env_session = nullptr;
std::mutex g_api_mu;

void StopFunctions() {
  if (&functrace::Stop != nullptr) functrace::Stop();
}

void StopAtExit() {
  std::lock_guard<std::mutex> lock(g_api_mu);
  StopFunctions();
  if (session::Core* core = session::Core::Active()) core->Stop();  // not freed: see g_retired
}

// Frees the retired Cores once no thread can reach them (writers.h). The budget is short: a
// Core whose grace period does not end now is tried again by the next start or stop.
void ReclaimRetired() {
  if (g_retired->empty()) return;
  if (session::writers::WaitForEventsBefore(std::chrono::milliseconds(5))) g_retired->clear();
}

void Retire(std::unique_ptr<session::Core> core) {
  if (!core->quiescent()) g_retired->push_back(std::move(core));
  // else: freed here, its rings unmapped
}

// Stops g_core (the caller checked it is set) and hands it to retirement. Returns its final
// statistics.
SessionStats StopCoreLocked() {
  StopFunctions();
  g_core->Stop();
  const SessionStats stats = g_core->Stats();
  Retire(std::unique_ptr<session::Core>(std::exchange(g_core, nullptr)));
  session::GlobalRegistry().ClosePendingModules();  // outside Core's mutex (registry.h)
  ReclaimRetired();
  return stats;
}

// After the core started (its mutex released: the module map is emitted on this thread).
bool StartFunctions(const SessionOptions& o, session::Core& core, std::string* error) {
  if (&functrace::Start == nullptr) {
    *error = "function tracing needs the shared runtime (libhushtrace.so, linked or preloaded)";
    return false;
  }
  functrace::Options f;
  f.globs = o.functions;
  f.depth = o.function_depth;
  f.min_duration_ticks = static_cast<std::uint64_t>(
      static_cast<double>(o.function_min_duration_ns) * static_cast<double>(core.clock_hz()) / 1e9);
  if (o.function_min_duration_ns != 0 && f.min_duration_ticks == 0) f.min_duration_ticks = 1;
  if (!functrace::Start(f, error)) return false;
  // Function tracing fills packets fast, often from signal handlers (any traced function they
  // call): start the writer thread now rather than from the slow path of such a handler, where
  // creating a thread is not async-signal-safe. After Start(): gcc's five-NOP entries are only
  // patched while no other thread exists.
  core.EnsureConsumer();
  return true;
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c == ',') {
      while (!cur.empty() && std::isspace(static_cast<unsigned char>(cur.back()))) cur.pop_back();
      std::size_t i = 0;
      while (i < cur.size() && std::isspace(static_cast<unsigned char>(cur[i]))) ++i;
      if (i < cur.size()) out.push_back(cur.substr(i));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

std::string DefaultOutputDir() {
  char stamp[32];
  const time_t now = ::time(nullptr);
  struct tm tm;
  ::localtime_r(&now, &tm);
  ::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return std::string("hushtrace-") + stamp + "-" + std::to_string(::getpid());
}

}  // namespace

bool ParseSize(const std::string& text, std::size_t* out) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  std::size_t i = 0;
  unsigned long long v = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    v = v * 10 + static_cast<unsigned>(text[i] - '0');
    if (v > (1ull << 40)) return false;
    ++i;
  }
  std::string suffix = text.substr(i);
  unsigned long long mult = 1;
  if (suffix == "" ) {
  } else if (suffix == "k" || suffix == "K" || suffix == "KiB" || suffix == "kB") {
    mult = 1ull << 10;
  } else if (suffix == "M" || suffix == "m" || suffix == "MiB" || suffix == "MB") {
    mult = 1ull << 20;
  } else if (suffix == "G" || suffix == "g" || suffix == "GiB" || suffix == "GB") {
    mult = 1ull << 30;
  } else {
    return false;
  }
  if (v > (std::numeric_limits<std::size_t>::max() / mult)) return false;
  *out = static_cast<std::size_t>(v * mult);
  return true;
}

std::unique_ptr<Session> Session::Start(const SessionOptions& options, std::string* error) {
  std::lock_guard<std::mutex> lock(g_api_mu);
  std::string local_error;
  if (error == nullptr) error = &local_error;
  if (options.events.empty() && !options.sched && options.functions.empty()) {
    *error = "no events requested";
    return nullptr;
  }
  SessionOptions opts = options;
  if (!opts.functions.empty()) opts.events.push_back("func:*");
  if (opts.output_dir.empty()) opts.output_dir = DefaultOutputDir();
  ReclaimRetired();
  auto core = std::make_unique<session::Core>();
  if (!core->Start(opts, error)) {
    // Nothing left behind (core.h); a Core that was visible to other threads waits for them.
    if (core->published()) Retire(std::move(core));
    return nullptr;
  }
  g_core = core.release();
  if (!opts.functions.empty() && !StartFunctions(opts, *g_core, error)) {
    StopCoreLocked();
    return nullptr;
  }
  // Stream mode's writer thread starts with the session, not from the slow path of the event
  // that first fills a packet: that event may be emitted by a signal handler, where creating a
  // thread is not async-signal-safe. (After StartFunctions: see there.)
  g_core->EnsureConsumer();
  static std::once_flag atexit_once;
  std::call_once(atexit_once, [] { std::atexit(StopAtExit); });
  return std::unique_ptr<Session>(new Session(g_core->output_dir(), g_core->generation()));
}

Session::~Session() { Stop(); }

// A Session acts on its own Core only: once stopped (by itself or by `hushtrace stop`), a later
// session started by someone else is not its to stop.
void Session::Stop() {
  std::lock_guard<std::mutex> lock(g_api_mu);
  if (stopped_) return;
  stopped_ = true;
  if (g_core != nullptr && g_core->generation() == generation_) final_stats_ = StopCoreLocked();
}

bool Session::Snapshot(std::string* error) {
  std::lock_guard<std::mutex> lock(g_api_mu);
  if (stopped_ || g_core == nullptr || g_core->generation() != generation_) {
    if (error) *error = "the session is stopped";
    return false;
  }
  return g_core->Snapshot(error);
}

SessionStats Session::Stats() const {
  std::lock_guard<std::mutex> lock(g_api_mu);
  if (g_core != nullptr && g_core->generation() == generation_) return g_core->Stats();
  return final_stats_;
}

namespace session {

bool DescribeActive(ActiveView* out) {
  std::lock_guard<std::mutex> lock(g_api_mu);
  Core* core = Core::Active();
  if (core == nullptr) return false;
  out->output_dir = core->output_dir();
  out->mode = core->mode();
  out->stats = core->Stats();
  out->enabled = core->EnabledEventNames();
  return true;
}

bool StopActive(std::string* output_dir) {
  std::lock_guard<std::mutex> lock(g_api_mu);
  Core* core = Core::Active();
  if (core == nullptr) return false;
  *output_dir = core->output_dir();
  if (core == g_core) {
    StopCoreLocked();  // the Session object that started it finds it stopped
  } else {
    StopFunctions();
    core->Stop();  // a fork child's session (core.cc): not owned here
    GlobalRegistry().ClosePendingModules();
  }
  return true;
}

bool SnapshotActive(std::string* output_dir, std::string* error) {
  std::lock_guard<std::mutex> lock(g_api_mu);
  Core* core = Core::Active();
  if (core == nullptr) {
    *error = "no active session";
    return false;
  }
  *output_dir = core->output_dir();
  return core->Snapshot(error);
}

std::size_t RetiredSessions() {
  std::lock_guard<std::mutex> lock(g_api_mu);
  return g_retired->size();
}

void ForgetOwnedCoresInChild() {
  // Only the forking thread exists: g_api_mu may have been held by another thread, and the
  // parent's Cores are copies whose threads are gone. They are never freed here.
  new (&g_api_mu) std::mutex();
  static auto* orphans = new std::vector<void*>();  // kept reachable for leak checkers
  orphans->push_back(std::exchange(g_core, nullptr));
  orphans->push_back(std::exchange(g_retired, new std::vector<std::unique_ptr<session::Core>>()));
}

}  // namespace session

namespace internal {

// Starts the session the environment asks for. Lives in the same object as the thread-local
// writer (see thread_attach.cc) so static links keep it.
// HUSHTRACE_FUNCTIONS (globs), HUSHTRACE_FUNCTION_DEPTH (N), HUSHTRACE_MIN_DURATION (ns).
bool ParseFunctionEnv(const char* functions, SessionOptions* options) {
  options->functions = SplitList(functions);
  const auto number = [](const char* name, std::uint64_t* out) {
    const char* v = ::secure_getenv(name);
    if (v == nullptr || *v == '\0') return true;
    char* end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (errno != 0 || *end != '\0' || !std::isdigit(static_cast<unsigned char>(*v))) {
      std::fprintf(stderr, "hushtrace: %s='%s' is not a number; tracing is off\n", name, v);
      return false;
    }
    *out = n;
    return true;
  };
  std::uint64_t depth = 0;
  if (!number("HUSHTRACE_FUNCTION_DEPTH", &depth) ||
      !number("HUSHTRACE_MIN_DURATION", &options->function_min_duration_ns)) {
    return false;
  }
  options->function_depth = static_cast<std::uint32_t>(std::min<std::uint64_t>(depth, UINT32_MAX));
  return true;
}

void StartFromEnvironment() {
  // Live control from the start, for systems where `hushtrace start PID` may not ptrace.
  if (const char* control = ::secure_getenv("HUSHTRACE_CONTROL"); control != nullptr && *control == '1') {
    if (const int e = control::Bootstrap(); e != 0) {
      std::fprintf(stderr, "hushtrace: HUSHTRACE_CONTROL: cannot open the control socket: %s\n",
                   std::strerror(-e));
    }
  }
  const char* events = ::secure_getenv("HUSHTRACE_EVENTS");
  const char* sched = ::secure_getenv("HUSHTRACE_SCHED");
  const char* follow = ::secure_getenv("HUSHTRACE_FOLLOW");
  const char* functions = ::secure_getenv("HUSHTRACE_FUNCTIONS");
  const bool want_sched = sched != nullptr && std::string(sched) == "1";
  const bool no_events = events == nullptr || *events == '\0';
  // The common case: nothing else happens.
  if (no_events && !want_sched && (functions == nullptr || *functions == '\0')) return;
  SessionOptions options;
  if (!no_events) options.events = SplitList(events);
  options.sched = want_sched;
  options.follow_children = follow != nullptr && std::string(follow) == "1";
  if (functions != nullptr && !ParseFunctionEnv(functions, &options)) return;
  if (const char* out = ::secure_getenv("HUSHTRACE_OUTPUT"); out != nullptr && *out != '\0') {
    options.output_dir = out;
  }
  if (const char* mode = ::secure_getenv("HUSHTRACE_MODE"); mode != nullptr && *mode != '\0') {
    const std::string m = mode;
    if (m == "stream") {
      options.mode = Mode::kStream;
    } else if (m == "flight") {
      options.mode = Mode::kFlight;
    } else {
      std::fprintf(stderr, "hushtrace: HUSHTRACE_MODE='%s' is not 'stream' or 'flight'; tracing is off\n", mode);
      return;
    }
  }
  if (const char* filter = ::secure_getenv("HUSHTRACE_FILTER"); filter != nullptr) options.filter = filter;
  if (const char* on = ::secure_getenv("HUSHTRACE_SNAPSHOT_ON"); on != nullptr && *on != '\0') {
    options.snapshot_on = SplitList(on);
  }
  if (const char* ms = ::secure_getenv("HUSHTRACE_SNAPSHOT_INTERVAL_MS"); ms != nullptr && *ms != '\0') {
    char* end = nullptr;
    const unsigned long v = std::strtoul(ms, &end, 10);
    if (*end != '\0' || *ms == '-' || v > 86400000ul) {
      std::fprintf(stderr, "hushtrace: HUSHTRACE_SNAPSHOT_INTERVAL_MS='%s' is not a number of milliseconds; "
                   "tracing is off\n", ms);
      return;
    }
    options.snapshot_interval_ms = static_cast<std::uint32_t>(v);
  }
  if (const char* size = ::secure_getenv("HUSHTRACE_BUFFER_SIZE"); size != nullptr && *size != '\0') {
    if (!ParseSize(size, &options.buffer_size) || options.buffer_size < 16 * 1024) {
      std::fprintf(stderr,
                   "hushtrace: HUSHTRACE_BUFFER_SIZE='%s' is not a size of at least 16k (e.g. 256k, 4M); "
                   "tracing is off\n",
                   size);
      return;
    }
  }
  if (options.follow_children && !options.output_dir.empty()) {
    // HUSHTRACE_OUTPUT already holds a trace: an ancestor that follows its children exec'd this
    // program. Its events get their own trace in a subdirectory (its event ids differ), on the
    // root trace's clock (docs/format.md, "Processes").
    const std::string clock_uuid = session::ClockUuidOfTrace(options.output_dir);
    if (!clock_uuid.empty()) {
      options.output_dir += "/proc-" + std::to_string(::getpid());
      session::InheritClockUuid(clock_uuid);
    }
  }
  std::string error;
  std::unique_ptr<Session> session = Session::Start(options, &error);
  if (!session) {
    std::fprintf(stderr, "hushtrace: cannot start the session from the environment: %s; tracing is off\n",
                 error.c_str());
    return;
  }
  g_env_session = session.release();  // stopped by the atexit handler, kept reachable
}

}  // namespace internal
}  // namespace hush
