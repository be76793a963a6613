// hush::Session (public API): owns the sessions' Cores (core.h, "Lifetime"). The session started
// from the environment before main() is src/startup's.
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

#include "base/parse.h"
#include "functrace/functrace.h"
#include "registry/registry.h"
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
// Both constant-initialized: the start-up constructor (src/startup) may run before this file's
// dynamic initializers.
constinit session::Core* g_core = nullptr;
constinit std::vector<std::unique_ptr<session::Core>>* g_retired = nullptr;  // made on first use
// Stopped Cores that no thread can reach, not freed yet: `hushtrace stop` (StopActive) leaves its
// Core here so that the control server replies first and frees it after (FreeStopped). Freeing
// joins the consumer thread and unmaps the rings: ~0.7 ms of the stop's 1 ms in the process, with
// the data already on disk (docs/benchmarks.md, "Attach from the command line").
constinit std::vector<std::unique_ptr<session::Core>>* g_unfreed = nullptr;  // made on first use
std::mutex g_api_mu;

void StopFunctions() {
  if (&functrace::Stop != nullptr) functrace::Stop();
}

void StopAtExit() {
  std::lock_guard<std::mutex> lock(g_api_mu);
  StopFunctions();
  if (session::Core* core = session::Core::Active()) core->Stop(/*at_exit=*/true);  // not freed: see g_retired
}

// Frees the retired Cores once no thread can reach them (writers.h). The budget is short: a
// Core whose grace period does not end now is tried again by the next start or stop.
void ReclaimRetired() {
  if (g_retired == nullptr || g_retired->empty()) return;
  // Its second half sends every thread to the slow path once (writers.h): not while a session
  // runs, whose threads would lose their fast path until their next packet.
  if (session::Core::Active() != nullptr) return;
  if (session::writers::WaitBeforeFreeing(std::chrono::milliseconds(5))) g_retired->clear();
}

void FreeStoppedLocked() {
  if (g_unfreed != nullptr) g_unfreed->clear();
}

// `free_now`: a Core no thread can reach is freed here (its rings unmapped); otherwise it waits in
// g_unfreed for FreeStopped.
void Retire(std::unique_ptr<session::Core> core, bool free_now = true) {
  if (core->quiescent()) {
    if (free_now) return;
    if (g_unfreed == nullptr) g_unfreed = new std::vector<std::unique_ptr<session::Core>>();
    g_unfreed->push_back(std::move(core));
    return;
  }
  if (g_retired == nullptr) g_retired = new std::vector<std::unique_ptr<session::Core>>();
  g_retired->push_back(std::move(core));
}

// Stops g_core (the caller checked it is set) and hands it to retirement. Returns its final
// statistics.
SessionStats StopCoreLocked(bool free_now = true) {
  StopFunctions();
  g_core->Stop();
  const SessionStats stats = g_core->Stats();
  Retire(std::unique_ptr<session::Core>(std::exchange(g_core, nullptr)), free_now);
  registry::Global().ClosePendingModules();  // outside Core's mutex (registry.h)
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
  core.FunctionTriggers(&f);
  if (!functrace::Start(f, error)) return false;
  // Function tracing fills packets fast, often from signal handlers (any traced function they
  // call): start the writer thread now rather than from the slow path of such a handler, where
  // creating a thread is not async-signal-safe. After Start(): gcc's five-NOP entries are only
  // patched while no other thread exists.
  core.EnsureConsumer();
  return true;
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
  std::uint64_t v = 0;
  if (!base::ParseSize(text, std::uint64_t{1} << 40, &v)) return false;
  *out = static_cast<std::size_t>(v);
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
  FreeStoppedLocked();
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
  FreeStoppedLocked();  // also a Core `hushtrace stop` stopped for this Session
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

bool StopActive(std::string* output_dir, SessionStats* final_stats) {
  std::lock_guard<std::mutex> lock(g_api_mu);
  Core* core = Core::Active();
  if (core == nullptr) return false;
  *output_dir = core->output_dir();
  if (core == g_core) {
    // The Session object that started it finds it stopped. Freed by FreeStopped.
    *final_stats = StopCoreLocked(/*free_now=*/false);
  } else {
    StopFunctions();
    core->Stop();  // a fork child's session (core.cc): not owned here
    *final_stats = core->Stats();
    registry::Global().ClosePendingModules();
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

void FreeStopped() {
  std::lock_guard<std::mutex> lock(g_api_mu);
  FreeStoppedLocked();
}

std::size_t RetiredSessions() {
  std::lock_guard<std::mutex> lock(g_api_mu);
  return g_retired == nullptr ? 0 : g_retired->size();
}

void ForgetOwnedCoresInChild() {
  // Only the forking thread exists: g_api_mu may have been held by another thread, and the
  // parent's Cores are copies whose threads are gone. They are never freed here.
  new (&g_api_mu) std::mutex();
  static auto* orphans = new std::vector<void*>();  // kept reachable for leak checkers
  orphans->push_back(std::exchange(g_core, nullptr));
  orphans->push_back(std::exchange(g_retired, nullptr));
  orphans->push_back(std::exchange(g_unfreed, nullptr));
}

}  // namespace session

}  // namespace hush
