// The runtime's start-up: the constructor every program linking libhushtrace runs before main(),
// and the session it starts when HUSHTRACE_* asks for one (README.md, "Environment variables";
// the names: base/env.h). The top layer of the runtime (scripts/check_layers.py): it stands on the
// session and the live-control server, and nothing includes it.
//
// Cost when no session is requested: one membarrier registration and one pass over the environment
// that reads no page of the library's data (docs/benchmarks.md).
//
// This object also defines the thread-local writer every tracepoint site references, so that a
// static link (libhushtrace.a) always keeps it, and with it the constructor.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "base/env.h"
#include "base/membarrier.h"
#include "base/parse.h"
#include "control/server.h"
#include "hushtrace/internal/thread_writer.h"
#include "hushtrace/session.h"
#include "session/core.h"

namespace hush::internal {

thread_local constinit ThreadWriter tls_writer __attribute__((tls_model("initial-exec"))) = {};

}  // namespace hush::internal

namespace hush {
namespace {

// The session started from the environment, stopped at exit. `used`: only leak checkers read it
// (as a root), so the compiler must not drop it.
[[gnu::used]] Session* g_env_session = nullptr;

}  // namespace

namespace internal {

namespace env = base::env;

namespace {

// Images exec'd one after another under one pid that get a trace each (proc-PID, proc-PID-2 ...).
constexpr int kMaxImagesPerPid = 1000;

// HUSHTRACE_FUNCTIONS (globs), HUSHTRACE_FUNCTION_DEPTH (N), HUSHTRACE_MIN_DURATION (ns).
bool ParseFunctionEnv(const char* functions, SessionOptions* options) {
  options->functions = base::SplitList(functions);
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
  if (!number(env::kFunctionDepth, &depth) ||
      !number(env::kMinDuration, &options->function_min_duration_ns)) {
    return false;
  }
  options->function_depth = static_cast<std::uint32_t>(std::min<std::uint64_t>(depth, UINT32_MAX));
  return true;
}

// Whether some variable's name starts with HUSHTRACE_. The common program has none, and then
// nothing else is read: reading the names (for secure_getenv) would fault in a page of the
// library's .rodata, ~4 us on the test VM, that nothing else in such a program touches
// (env::HasPrefix compares with immediates).
bool AnyHushtraceVariable() {
  if (environ == nullptr) return false;  // clearenv() in an earlier constructor
  for (char** e = environ; *e != nullptr; ++e) {
    if (env::HasPrefix(*e)) return true;
  }
  return false;
}

}  // namespace

void StartFromEnvironment() {
  // Before any thread exists, the membarrier registration costs no grace period; a later
  // `hushtrace start PID` would wait one for it (base/membarrier.h).
  base::RegisterWhileSingleThreaded();
  // A privileged (AT_SECURE) program may have such variables: secure_getenv below ignores them.
  if (!AnyHushtraceVariable()) return;
  // Live control from the start, for systems where `hushtrace start PID` may not ptrace.
  if (const char* control = ::secure_getenv(env::kControl); control != nullptr && *control == '1') {
    if (const int e = control::Bootstrap(); e != 0) {
      std::fprintf(stderr, "hushtrace: HUSHTRACE_CONTROL: cannot open the control socket: %s\n",
                   std::strerror(-e));
    }
  }
  const char* events = ::secure_getenv(env::kEvents);
  const char* sched = ::secure_getenv(env::kSched);
  const char* follow = ::secure_getenv(env::kFollow);
  const char* functions = ::secure_getenv(env::kFunctions);
  const bool want_sched = sched != nullptr && std::string(sched) == "1";
  const bool no_events = events == nullptr || *events == '\0';
  // The common case: nothing else happens.
  if (no_events && !want_sched && (functions == nullptr || *functions == '\0')) return;
  SessionOptions options;
  if (!no_events) options.events = base::SplitList(events);
  options.sched = want_sched;
  options.follow_children = follow != nullptr && std::string(follow) == "1";
  if (functions != nullptr && !ParseFunctionEnv(functions, &options)) return;
  if (const char* out = ::secure_getenv(env::kOutput); out != nullptr && *out != '\0') {
    options.output_dir = out;
  }
  if (const char* mode = ::secure_getenv(env::kMode); mode != nullptr && *mode != '\0') {
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
  if (const char* filter = ::secure_getenv(env::kFilter); filter != nullptr) options.filter = filter;
  if (const char* on = ::secure_getenv(env::kSnapshotOn); on != nullptr && *on != '\0') {
    options.snapshot_on = base::SplitList(on);
  }
  if (const char* ms = ::secure_getenv(env::kSnapshotIntervalMs); ms != nullptr && *ms != '\0') {
    char* end = nullptr;
    const unsigned long v = std::strtoul(ms, &end, 10);
    if (*end != '\0' || *ms == '-' || v > 86400000ul) {
      std::fprintf(stderr, "hushtrace: HUSHTRACE_SNAPSHOT_INTERVAL_MS='%s' is not a number of milliseconds; "
                   "tracing is off\n", ms);
      return;
    }
    options.snapshot_interval_ms = static_cast<std::uint32_t>(v);
  }
  if (const char* after = ::secure_getenv(env::kSnapshotAfter); after != nullptr && *after != '\0') {
    if (!hush::base::ParseDurationWithUnit(after, &options.snapshot_after_ns)) {
      std::fprintf(stderr, "hushtrace: HUSHTRACE_SNAPSHOT_AFTER='%s' is not a duration (e.g. 5ms); "
                   "tracing is off\n", after);
      return;
    }
  }
  if (const char* wait = ::secure_getenv(env::kBlocking); wait != nullptr && *wait != '\0') {
    if (!hush::base::ParseDurationWithUnit(wait, &options.blocking_timeout_ns)) {
      std::fprintf(stderr, "hushtrace: HUSHTRACE_BLOCKING='%s' is not a duration (e.g. 1s); "
                   "tracing is off\n", wait);
      return;
    }
  }
  if (const char* keep = ::secure_getenv(env::kSnapshotKeep); keep != nullptr && *keep != '\0') {
    char* end = nullptr;
    const unsigned long v = std::strtoul(keep, &end, 10);
    if (*end != '\0' || *keep == '-' || v > 1000000ul) {
      std::fprintf(stderr, "hushtrace: HUSHTRACE_SNAPSHOT_KEEP='%s' is not a number of snapshots; "
                   "tracing is off\n", keep);
      return;
    }
    options.snapshot_keep = static_cast<std::uint32_t>(v);
  }
  if (const char* size = ::secure_getenv(env::kBufferSize); size != nullptr && *size != '\0') {
    if (!ParseSize(size, &options.buffer_size) || options.buffer_size < 16 * 1024) {
      std::fprintf(stderr,
                   "hushtrace: HUSHTRACE_BUFFER_SIZE='%s' is not a size of at least 16k (e.g. 256k, 4M); "
                   "tracing is off\n",
                   size);
      return;
    }
  }
  if (const char* budget = ::secure_getenv(env::kBufferBudget); budget != nullptr && *budget != '\0') {
    if (!ParseSize(budget, &options.buffer_budget) || options.buffer_budget == 0) {
      std::fprintf(stderr,
                   "hushtrace: HUSHTRACE_BUFFER_BUDGET='%s' is not a size (e.g. 64M, 1G); tracing is off\n",
                   budget);
      return;
    }
  }
  if (options.follow_children && !options.output_dir.empty()) {
    // HUSHTRACE_OUTPUT already holds a trace: an ancestor that follows its children exec'd this
    // program. Its events get their own trace in a subdirectory (its event ids differ), on the
    // root trace's clock (docs/format.md, "Processes"). The second and later images of one pid
    // (an exec'd program that execs again) take proc-PID-2, proc-PID-3, ...
    const std::string clock_uuid = session::ClockUuidOfTrace(options.output_dir);
    if (!clock_uuid.empty()) {
      const std::string base = options.output_dir + "/proc-" + std::to_string(::getpid());
      std::string dir = base;
      struct stat st;
      for (int image = 2; ::lstat(dir.c_str(), &st) == 0 && image <= kMaxImagesPerPid; ++image) {
        dir = base + "-" + std::to_string(image);
      }
      options.output_dir = dir;  // taken even after kMaxImagesPerPid: the start then says so
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

namespace internal {
// Runs before main() in every program linking libhushtrace (static or shared).
[[gnu::constructor]] static void HushtraceEnvironmentHook() { StartFromEnvironment(); }
}  // namespace internal

}  // namespace hush

// The shared library's DT_FINI (src/CMakeLists.txt: -Wl,-fini=). The `_fini` of crti.o/crtn.o
// it replaces does nothing on x86-64 and aarch64, but the linker puts it after .text, 480 KiB
// from everything else a program without a session runs here: calling it at exit faulted in a
// page of the library for an empty function. This one sits beside the constructor.
extern "C" [[gnu::visibility("hidden")]] void hush_shared_fini() {}
