// The environment protocol between `hushtrace record` (which sets these variables) and the
// runtime's start-up (src/startup, which reads them in the traced program before main). One list
// of names for both sides; README.md's table documents their values.
#ifndef HUSHTRACE_SRC_BASE_ENV_H_
#define HUSHTRACE_SRC_BASE_ENV_H_

namespace hush::base::env {

// What every name below starts with (checked at the end of this file). The runtime's start-up
// looks for it before reading any variable: a program without one has nothing to read.
inline constexpr char kPrefix[] = "HUSHTRACE_";
inline constexpr int kPrefixLength = sizeof(kPrefix) - 1;

inline constexpr char kEvents[] = "HUSHTRACE_EVENTS";            // globs, comma-separated
inline constexpr char kOutput[] = "HUSHTRACE_OUTPUT";            // trace directory
inline constexpr char kMode[] = "HUSHTRACE_MODE";                // stream | flight
inline constexpr char kSnapshotOn[] = "HUSHTRACE_SNAPSHOT_ON";   // globs
inline constexpr char kSnapshotIntervalMs[] = "HUSHTRACE_SNAPSHOT_INTERVAL_MS";
inline constexpr char kSnapshotAfter[] = "HUSHTRACE_SNAPSHOT_AFTER";  // duration: 5ms, 200us
inline constexpr char kSnapshotKeep[] = "HUSHTRACE_SNAPSHOT_KEEP";    // N snapshots, 0: all
inline constexpr char kFilter[] = "HUSHTRACE_FILTER";            // filter expression
inline constexpr char kControl[] = "HUSHTRACE_CONTROL";          // 1: control socket at start-up
inline constexpr char kBufferSize[] = "HUSHTRACE_BUFFER_SIZE";   // base::ParseSize syntax, limits below
inline constexpr char kBufferBudget[] = "HUSHTRACE_BUFFER_BUDGET";  // all rings together, ParseSize syntax
inline constexpr char kFunctions[] = "HUSHTRACE_FUNCTIONS";      // globs over function names
inline constexpr char kFunctionDepth[] = "HUSHTRACE_FUNCTION_DEPTH";
inline constexpr char kMinDuration[] = "HUSHTRACE_MIN_DURATION";  // ns
inline constexpr char kSched[] = "HUSHTRACE_SCHED";              // 1: scheduler events
inline constexpr char kFollow[] = "HUSHTRACE_FOLLOW";            // 1: forks and execs keep tracing
inline constexpr char kBlocking[] = "HUSHTRACE_BLOCKING";        // duration: a full ring waits

// HUSHTRACE_BUFFER_SIZE, `record --buffer-size` and the control socket's buffer-size: per-thread
// ring bytes. The largest is the ring's (src/ring/ring_layout.h checks it: 256 sub-buffers of
// 1 MiB).
inline constexpr unsigned long long kMinBufferSize = 16ull << 10;
inline constexpr unsigned long long kMaxBufferSize = 256ull << 20;
// HUSHTRACE_BUFFER_BUDGET, `record --buffer-budget`: the most ring memory of a session
// (SessionOptions::buffer_budget); at least one ring, at most 1 TiB.
inline constexpr unsigned long long kMaxBufferBudget = 1ull << 40;
// A ring's header, which the budget pays for besides the buffer (ring/ring_layout.h checks it).
inline constexpr unsigned long long kRingHeaderBytes = 4096;

// Every variable above: `record` clears those it does not set, so a value left in the user's
// environment never mixes with the options given on the command line.
inline constexpr const char* kAll[] = {kEvents,  kOutput,     kMode,      kSnapshotOn,
                                       kSnapshotIntervalMs,   kFilter,    kControl,
                                       kBufferSize, kFunctions, kFunctionDepth,
                                       kMinDuration, kSched,  kFollow,
                                       kSnapshotAfter, kSnapshotKeep, kBlocking,
                                       kBufferBudget};

// Whether `name` (a NUL-terminated "NAME=value" or a name) starts with kPrefix; it stops at the
// name's NUL, which no byte of the prefix matches. Unrolled, so that in the runtime's start-up
// (src/startup) the prefix's bytes are immediates of the compares and no page of the library's
// .rodata is read for them.
constexpr bool HasPrefix(const char* name) {
#pragma GCC unroll 16
  for (int i = 0; i < kPrefixLength; ++i) {
    if (name[i] != kPrefix[i]) return false;
  }
  return true;
}

namespace detail {
constexpr bool AllStartWithPrefix() {
  for (const char* name : kAll) {
    if (!HasPrefix(name)) return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::AllStartWithPrefix(), "every HUSHTRACE_* variable starts with kPrefix");

}  // namespace hush::base::env

#endif  // HUSHTRACE_SRC_BASE_ENV_H_
