// Programmatic control of a tracing session in this process.
//
//   hush::SessionOptions options;
//   options.events = {"net:*", "db:query"};
//   options.output_dir = "/tmp/trace";
//   std::string error;
//   auto session = hush::Session::Start(options, &error);   // nullptr + error on failure
//   ...
//   session->Stop();                                        // or let it go out of scope
//
// One session at a time per process. The environment (HUSHTRACE_EVENTS, HUSHTRACE_OUTPUT,
// HUSHTRACE_MODE, HUSHTRACE_BUFFER_SIZE, HUSHTRACE_SCHED=1, HUSHTRACE_FOLLOW=1) starts the same kind of session before
// main(); it is stopped and flushed at exit. All functions are thread-safe.
#ifndef HUSHTRACE_SESSION_H_
#define HUSHTRACE_SESSION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hush {

enum class Mode {
  kStream,  // a consumer thread writes full packets to disk; a full ring discards and counts
  kFlight,  // rings overwrite their oldest packets; written at exit, on SIGUSR2 or Snapshot()
};

// SessionOptions::buffer_budget when 0 (or 4 rings of buffer_size, if more).
inline constexpr std::size_t kDefaultBufferBudget = std::size_t{64} << 20;

struct SessionOptions {
  std::vector<std::string> events;  // globs over "provider:name"
  std::string output_dir;           // created 0700; must not exist or be empty
  Mode mode = Mode::kStream;
  std::size_t buffer_size = 1 << 20;  // per thread ring, in bytes (>= 16 KiB)
  // The most ring memory the session may take, all threads together (blocks of its ring files:
  // page cache or tmpfs, and disk). 0: kDefaultBufferBudget, or 4 rings of buffer_size if that is
  // more. Each thread's ring is paid for as it grows (the header and a first sub-buffer when the
  // thread's first event comes, each other sub-buffer when first used); once half the budget is
  // spent, new threads get compact rings (4 KiB sub-buffers), and once it is all spent a thread
  // without a ring, or whose ring cannot grow, discards its events and counts them. So memory
  // stays bounded whatever the number of threads. Start() fails if it cannot hold one ring.
  std::size_t buffer_budget = 0;
  // Stream mode, for development runs that must not lose an event (LTTng's blocking channels):
  // a thread whose ring is full waits up to this long for the consumer to write a packet, instead
  // of discarding (and counting) the event. 0: never waits, the production setting. A thread
  // blocked past the timeout discards as without it; a session that stops ends every wait.
  std::uint64_t blocking_timeout_ns = 0;
  // Scheduler events of this process's threads (sched:switch_in/switch_out/thread_start/
  // thread_exit/thread_name) from perf_event_open context-switch records, one stream per CPU.
  // Refused by the kernel (perf_event_paranoid, seccomp): one warning, the rest is recorded.
  bool sched = false;
  // fork() children keep tracing into this trace: each gets its own rings and stream files in the
  // same directory (its pid in their packet context, docs/format.md). Off: children do not trace.
  bool follow_children = false;
  // Function tracing (docs/architecture.md, "Function tracing"): globs over function names whose
  // patchable entries are patched; empty: none. Enables the func:* events.
  std::vector<std::string> functions;
  std::uint32_t function_depth = 0;             // 0: no limit
  std::uint64_t function_min_duration_ns = 0;   // 0: every call
  // Flight mode: snapshot triggers. Each pattern is a glob over "provider:name", optionally
  // with a condition (src/filter/trigger_spec.h, docs/cli.md):
  //   "db:error"               any such event
  //   "app:request>50ms"       a span (HUSH_SPAN) that ends after lasting longer than 50 ms
  //   "app:request>p99.9"      ... longer than the running p99.9 of its durations (after a
  //                            warm-up of 10,000 spans; src/session/quantile_threshold.h)
  //   "net:recv[bytes > 1000]" an event whose fields satisfy the filter (filter syntax)
  // When one fires, the session's snapshot thread writes a separate trace,
  // output_dir/snapshots/<UTC time>-<n>/: what every thread's ring held at that moment plus
  // snapshot_after_ns after it, and which trigger fired (docs/format.md, "Snapshots"). The
  // emitting thread never waits for it. At most one snapshot per snapshot_interval_ms; the
  // newest snapshot_keep are kept (0: all). Matching events are enabled (and recorded) even if
  // `events` does not name them. Start() fails on a pattern that does not parse, a duration on
  // events that are not spans, or a condition or duration that applies to no event.
  std::vector<std::string> snapshot_on;
  std::uint32_t snapshot_interval_ms = 1000;
  std::uint64_t snapshot_after_ns = 0;
  std::uint32_t snapshot_keep = 16;
  // Field filter over the events of `events`, e.g. "bytes > 1000 && fd != 3": an event is
  // recorded only if it holds. Evaluated in the emitting thread; an event that lacks one of the
  // named fields is not recorded. Syntax: src/filter/filter.h. Start() fails on a syntax error
  // (the message gives the column) or if no enabled event has the named fields.
  std::string filter;
};

struct SessionStats {
  std::uint64_t events_written = 0;    // events in closed packets so far
  std::uint64_t events_discarded = 0;  // ring full (stream), nested in a signal handler, too large
  std::uint64_t events_overwritten = 0;  // flight mode
  std::uint64_t events_lost_on_write = 0;  // write to disk failed
  std::uint64_t bytes_written = 0;
  std::uint32_t rings = 0;
  std::uint32_t enabled_events = 0;
  std::uint64_t snapshots_triggered = 0;  // triggers that caused a snapshot
  // Triggers within the interval of the last one, or while kMaxPendingTriggers snapshots waited.
  std::uint64_t triggers_suppressed = 0;
  std::uint64_t events_filtered_out = 0;  // rejected by the field filter
  // Events of threads whose buffer could not be created (out of memory, disk full, unwritable
  // directory, too many threads): no stream records them; Stop() prints the count.
  std::uint64_t events_without_buffer = 0;
  // blocking_timeout_ns: events whose thread waited for room in its full ring (each once, whether
  // the wait ended with room or with the timeout, which then also counts it discarded).
  std::uint64_t events_blocked = 0;
};

class Session {
 public:
  static std::unique_ptr<Session> Start(const SessionOptions& options, std::string* error);
  ~Session();  // Stop()
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Disables the events, writes everything committed and the final metadata. Idempotent.
  void Stop();
  // Writes what the rings hold now (flight mode) or what is committed so far (stream mode).
  bool Snapshot(std::string* error = nullptr);
  // Live while the session runs; its final totals once it stopped (all events written).
  SessionStats Stats() const;
  const std::string& output_dir() const { return output_dir_; }

 private:
  Session(std::string output_dir, std::uint64_t generation)
      : output_dir_(std::move(output_dir)), generation_(generation) {}
  std::string output_dir_;
  std::uint64_t generation_;  // of the session's Core: Stop() acts on that session only
  bool stopped_ = false;
  SessionStats final_stats_;  // what Stats() returns once the session stopped
};

// Parses "64k", "4M", "1048576". Returns false on bad input.
bool ParseSize(const std::string& text, std::size_t* out);

}  // namespace hush

#endif  // HUSHTRACE_SESSION_H_
