// The running session's state, shared by the session API, the slow path and the consumer.
//
// Threads and locks:
//   mu_        attach/detach of threads to rings, start/stop, registry. Never taken by a thread
//              that is already inside it (checked), so a signal handler cannot self-deadlock.
//   write_mu_  serializes writers of stream files: the consumer thread, Snapshot(), Stop().
//   Lock order: mu_ before write_mu_.
// Rings live in a fixed array published by `ring_count_` (release; readers acquire), so the
// consumer iterates without mu_.
//
// Lifetime. A Core is made by the session API (session_api.cc), which owns it. Start() either
// succeeds or leaves nothing behind: no descriptor, no file, no directory it created. Once Start()
// published the session (Active()), threads may hold pointers into it (writers.h), so a stopped
// or failed Core is freed only after a grace period: Stop() waits for one (bounded) and records
// whether it ended (quiescent()); the owner frees the Core then, or keeps it on a retired list and
// waits for a later grace period. Freeing it unmaps its rings (their files were unlinked at
// Stop(), so their disk or tmpfs space goes back too) and closes what is left open.
#ifndef HUSHTRACE_SRC_SESSION_CORE_H_
#define HUSHTRACE_SRC_SESSION_CORE_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/anon_mapping.h"
#include "base/library_thread.h"
#include "base/unique_fd.h"
#include "clock/clock.h"
#include "filter/filter.h"
#include "filter/program.h"
#include "filter/trigger_spec.h"
#include "format/ctf_metadata.h"
#include "functrace/functrace.h"
#include "hushtrace/internal/thread_writer.h"
#include "hushtrace/session.h"
#include "registry/registry.h"
#include "ring/reserve.h"
#include "ring/ring_buffer.h"
#include "sched/sched_recorder.h"
#include "session/file_numbers.h"
#include "session/quantile_threshold.h"

namespace hush::session {

inline constexpr std::uint32_t kMaxRings = 4096;
// Triggered snapshots waiting for the snapshot thread; a trigger finding them all taken is
// counted suppressed.
inline constexpr std::uint32_t kMaxPendingTriggers = 16;

// What fired a triggered snapshot (snapshots.cc), handed from the emitting thread to the
// snapshot thread.
struct TriggerInfo {
  std::uint32_t spec = 0;       // index in the session's trigger patterns
  std::uint32_t event_id = 0;   // the event that fired it
  std::uint32_t tid = 0;
  std::uint64_t ts = 0;         // its timestamp (cycles); for a span, its end
  std::uint64_t duration = 0;   // a span's duration (cycles); 0 otherwise
  std::uint64_t threshold = 0;  // the threshold it was beyond (cycles): duration triggers
  // A function trigger (`func:NAME>5ms`): the function's name (FunctionRule::name, alive with
  // the Core) and patched entry; nullptr and 0 otherwise. `ts` is then the call's return.
  const char* function = nullptr;
  std::uint64_t function_entry = 0;
};

// A trigger rule of one event id (SessionOptions::snapshot_on parsed, snapshots.cc).
struct TriggerRule {
  std::uint32_t spec = 0;
  filter::TriggerSpec::Kind kind = filter::TriggerSpec::Kind::kEvent;
  std::uint64_t threshold_cycles = 0;                // kDuration, fixed threshold
  std::unique_ptr<QuantileThreshold> quantile;       // kDuration, adaptive (p99.9)
  std::unique_ptr<filter::Program> condition;        // kField
};

// The state of one function marked by one function trigger (functrace.h, TriggerHooks):
// made by functrace when it patches the function, owned by the Core (snapshots.cc).
struct FunctionRule {
  std::uint32_t spec = 0;
  std::uint64_t threshold_cycles = 0;           // fixed threshold
  std::unique_ptr<QuantileThreshold> quantile;  // adaptive, per function
  std::string name;
  std::uintptr_t entry = 0;
};

// A triggered snapshot being written (snapshot thread only, snapshots.cc).
struct OpenSnapshot {
  std::string name;       // DIR/snapshots/<name> once complete
  base::UniqueFd dirfd;   // DIR/snapshots/.<name>.partial while written
  // Per ring slot: whether its stream file exists. Each copy opens it and closes it again, so an
  // open snapshot holds one descriptor (dirfd), whatever the number of threads.
  std::vector<bool> streams;
  std::vector<ring::SnapshotCursor> cursors;       // per ring slot
  std::chrono::steady_clock::time_point deadline;  // when the part after the trigger is complete
};

// A ring whose Ring object lives in a RingObjects block (below): only its destructor runs here;
// the block is the RingObjects'.
struct DestroyInPlace {
  void operator()(ring::Ring* r) const { r->~Ring(); }
};
using RingPtr = std::unique_ptr<ring::Ring, DestroyInPlace>;

// Where a session's Ring objects live: blocks of ring::Ring::kObjectBytes, kChunk to a mapping
// of their own (base::AnonMapping, pages touched as blocks are used), with a free list for the
// blocks of rings that were not made. Not the heap: a thread's first event makes its ring, and
// the Ring object was the thread's first malloc, on which glibc gives a thread an arena of its
// own (a 64 MiB reservation trimmed with munmap and mprotect, whose TLB flushes interrupt the
// other CPUs running the program's threads, and the first touch of its pages): in the hackbench
// analogue, 16 arenas per run for one 360-byte object each (docs/benchmarks.md, "Message passing
// on many threads"). Under Core::mu_; the mappings go with the Core, after its rings (declared
// before slots_).
class RingObjects {
 public:
  static constexpr std::size_t kChunk = 32;
  // A block for one Ring object; nullptr if no mapping can be made.
  void* Take() {
    if (free_ != nullptr) return std::exchange(free_, *static_cast<void**>(free_));
    if (used_ == kChunk * chunk_count_) {
      if (chunk_count_ == kMaxChunks) return nullptr;
      base::AnonMapping m = base::AnonMapping::Create(kChunk * ring::Ring::kObjectBytes);
      if (!m) return nullptr;
      chunks_[chunk_count_++] = std::move(m);
    }
    const std::size_t i = used_++;
    return chunks_[i / kChunk].data() + i % kChunk * ring::Ring::kObjectBytes;
  }
  // A block Take() gave whose Ring object is gone (or was never made).
  void Give(void* block) {
    *static_cast<void**>(block) = free_;
    free_ = block;
  }

 private:
  static constexpr std::size_t kMaxChunks = kMaxRings / kChunk + 1;
  base::AnonMapping chunks_[kMaxChunks];
  std::size_t chunk_count_ = 0;
  std::size_t used_ = 0;     // blocks handed out from the chunks, in order
  void* free_ = nullptr;     // blocks given back, linked through their first word
};

struct RingSlot {
  // Its stream file, stream_<ring->index()>, is not held open: the consumer opens it for each
  // write-out (Core::WriteAllLocked), so that a session holds a constant number of descriptors
  // whatever the number of threads (issue 17, item 3).
  RingPtr ring;
  internal::ThreadWriter* writer = nullptr;  // guarded by mu_; nullptr when free
};

// The ring slots of a session, allocated 32 at a time as threads attach: a session that only
// ever has a few threads touches one small chunk, not the whole table (4096 slots are 96 KiB,
// whose first-touch page faults cost a short program ~0.5 ms at start, docs/benchmarks.md).
// A chunk never moves once made: Ensure() (under Core::mu_) allocates it before the slot is
// published by Core::ring_count_ (release), so a reader that acquired the count finds it.
class SlotTable {
 public:
  static constexpr std::uint32_t kChunk = 32;
  RingSlot& operator[](std::uint32_t i) { return chunks_[i / kChunk][i % kChunk]; }
  const RingSlot& operator[](std::uint32_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  void Ensure(std::uint32_t i) {
    if (!chunks_[i / kChunk]) chunks_[i / kChunk].reset(new RingSlot[kChunk]);
  }

 private:
  std::unique_ptr<RingSlot[]> chunks_[kMaxRings / kChunk];
};

class Core final : public ring::Owner {
 public:
  static Core* Active() { return active_.load(std::memory_order_acquire); }
  // In a forked child: the parent's session and rings are not ours. Turns tracing off in the
  // child without touching the shared rings (called from a pthread_atfork child handler).
  static void ForgetInChild();
  // pthread_atfork child handler: ForgetInChild(), or with SessionOptions::follow_children, a
  // new session for the child in the same trace (docs/format.md, "Processes").
  static void OnForkChild();

  Core() = default;
  ~Core();  // only once no thread can hold a pointer into it (see "Lifetime" above)
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  bool Start(const SessionOptions& options, std::string* error);
  // `at_exit`: the process is exiting (the atexit handler) and the Core is never freed. The
  // stream consumer is then told to stop but not woken (Stop in core.cc says why).
  void Stop(bool at_exit = false);
  // Start() made the session visible to other threads (Active()) before it failed, or it started:
  // the Core must then go through a grace period before it is freed.
  bool published() const { return published_; }
  // Stop() saw every event that began before it end: nothing can reach this Core any more and
  // it may be freed at once. Written by Stop() (the owner reads it after Stop() returned).
  bool quiescent() const { return quiescent_; }
  bool Snapshot(std::string* error);
  SessionStats Stats() const;
  const std::string& output_dir() const { return output_dir_; }
  Mode mode() const { return options_.mode; }  // constant while the session lives
  // "provider:name" of the enabled events (takes mu_).
  std::vector<std::string> EnabledEventNames() const;

  // ring::Owner (ring/reserve.h), for the slow path of the emitting threads and src/sched.
  ring::Ring* Attach(internal::ThreadWriter& w, bool fresh) override;  // takes mu_
  void Detach(internal::ThreadWriter& w) override;                     // takes mu_
  std::uint64_t generation() const override { return generation_; }
  // The clock (use_tsc(): the cycle counter) just before the session was published and its events
  // enabled: an event whose timestamp is older began before this session and read its id from an
  // earlier one (thread_attach.cc, ReserveRecorded).
  std::uint64_t published_at() const { return published_at_; }
  bool forked_child() const override { return forked_child_; }
  bool use_tsc() const override { return calibration_.use_tsc; }
  void EnsureConsumer() override;
  void WakeConsumer() override;
  void EventTooLarge() override;
  bool WaitForRoom(std::uint64_t* waiting_since) override;
  // A committed event of `w` whose id has kTriggerIdBit (CommitSlow): checks the event's trigger
  // rules (its payload, a span's duration) and hands a snapshot to the snapshot thread when one
  // fires. Never blocks (snapshots.cc).
  void OnTriggerEvent(internal::ThreadWriter& w, std::uint32_t id, const char* payload,
                      std::size_t size);
  // The field filter's verdict on the payload of event `id` (kFilterIdBit cleared). Reads
  // filters_, published before the event's state word (release; the caller's acquire fence).
  bool FilterAccepts(std::uint32_t id, const char* payload, std::size_t size);
  // The function triggers of snapshot_on (`func:NAME>D`) as functrace takes them, with this
  // session's hooks; nothing when there are none (snapshots.cc). Before functrace::Start.
  void FunctionTriggers(functrace::Options* options);
  std::uint64_t clock_hz() const { return calibration_.freq_hz; }
  void WarnOnce(std::atomic<bool>& flag, const char* message);
  // Refined by the consumer thread under mu_ once a session runs: other threads read it under
  // mu_ or copy what they need at start (as SchedRecorder does).
  const clock::Calibration& calibration() const { return calibration_; }
  std::atomic<bool> warned_oversize_{false};
  std::atomic<bool> warned_alloc_{false};
  std::atomic<bool> warned_attach_{false};  // a thread's buffer could not be created
  // Attach's failures to make a thread's buffer: `why` said once (warned_attach_), the event
  // counted (CountUnattached); returns the null ring the thread then keeps for this session.
  ring::Ring* NoBufferForThread(const std::string& why);
  std::atomic<bool> warned_budget_{false};  // half the buffer budget is taken (compact rings)
  uid_t owner_uid_ = 0;                       // geteuid() at Start (UserMayTrace)
  std::atomic<bool> foreign_user_{false};     // Attach saw a user who may not trace
  // Events of threads whose buffer could not be created (no stream records them): counted in
  // Stats().events_without_buffer and reported by Stop(). Relaxed: a statistic.
  void CountUnattached() { unattached_events_.fetch_add(1, std::memory_order_relaxed); }

 private:
  // In a fork child: marks the parent's session stopped and closes its stream descriptors (and
  // its directories unless `keep_directories`); its rings are not mapped in the child.
  static void ReleaseParentInChild(Core* parent, bool keep_directories);
  void ConsumerLoop();
  void MarkStopping();        // sets stopping_: the consumer leaves after its current wait
  void WakeConsumerToStop();  // MarkStopping, and wakes the consumer (Stop, ~Core)
  // Credentials: the session belongs to the effective user that started it. A process that
  // switches to a user who could not have started it (neither that user nor root: a daemon that
  // drops root, a fork child that calls setuid) stops tracing. Attach refuses new rings at once;
  // the stream consumer's next pass (at most 50 ms) or Stop disables every event and stops the
  // session without writing: the new user may not write the trace, and what the rings hold stays
  // in the ring files for `hushtrace recover` (record runs it). Flight mode has no periodic pass: threads
  // with a ring keep it until Stop.
  bool UserMayTrace() const;
  void StopForCredentials();
  void PrefaultBusyRings();  // consumer thread
  void SignalLoop();
  // Triggered snapshots (snapshots.cc).
  bool PrepareTriggers(std::string* error);  // before publishing: parses and checks snapshot_on
  void BindTriggers();                       // after enabling: the rules per event id
  void Fire(const TriggerInfo& info);        // rate limit, hand-off (emitting thread)
  // functrace's TriggerHooks (snapshots.cc): a marked function's rule; a marked call returned.
  static void* MakeFunctionRule(void* context, std::uint32_t spec, const char* name,
                                std::uintptr_t entry);
  static void OnFunctionReturn(std::uint64_t generation, void* state, std::uint64_t entry_ts,
                               std::uint64_t exit_ts);
  void BeginSnapshot(const TriggerInfo& info);   // snapshot thread
  void CopySnapshot(OpenSnapshot& s);            // snapshot thread: what the rings hold now
  void FinishSnapshot(OpenSnapshot& s);          // snapshot thread
  void TakePendingTriggers();                    // snapshot thread
  void StartSched();  // --sched; a refusal is reported once and the rest recorded
  bool WriteMetadata(std::string* error);
  // Creates .ring_<N> in `ring_dirfd` and an empty stream_<N> (closed again) in the trace
  // directory `dirfd` for a new buffer, N from file_numbers_; runs without mu_ (Attach). Null
  // and *error on failure.
  // The Ring object is made in `storage` (a RingObjects block).
  RingPtr CreateBufferFiles(void* storage, int dirfd, int ring_dirfd, const ring::RingConfig& config,
                            std::string* error);
  // Start(): where the ring files go (format/ring_location.h). Rings of a trace directory on a
  // disk file system go to a directory of their own under /dev/shm (ring_dirfd_); on the
  // slightest difficulty, and for a trace directory on tmpfs, they stay in the trace directory.
  void PlaceRings();
  // The directory of the ring files: ring_dirfd_, or the trace directory.
  int ring_dir() const { return ring_dirfd_ ? ring_dirfd_.get() : dirfd_.get(); }
  // Closes ring_dirfd_ and removes the directory PlaceRings made, once it is empty (a fork
  // child's rings may still be in it: the last process of the tree to stop removes it).
  void CloseRingDirectory();
  void WriteAll(bool include_open);
  // write_mu_ held. `last`: Stop's final write-out; a stream that cannot be opened then has its
  // events counted lost, while an earlier pass leaves them in the ring for the next one.
  void WriteAllLocked(bool include_open, bool last = false);
  // Stop()'s first half, also a failed Start()'s after publishing: disables the events, sends the
  // attached threads to the slow path, unpublishes the session and waits (bounded) for the
  // events in flight. mu_ must be held on entry; it is released and taken again.
  void Unpublish(std::unique_lock<std::mutex>& lock);
  // Removes what a failed Start() created in the trace directory (mu_ held, nothing published
  // or already unpublished): ring and stream files, the metadata, the directory itself
  // if Start() made it.
  void Abandon();
  static std::atomic<Core*> active_;
  static std::atomic<std::uint64_t> next_generation_;

  mutable std::mutex mu_;
  std::mutex write_mu_;
  SessionOptions options_;
  std::string output_dir_;
  base::UniqueFd dirfd_;
  base::UniqueFd ring_dirfd_;     // PlaceRings: the rings' own directory; empty: the trace directory
  std::string shared_ring_dir_;   // its path, for messages and its removal
  std::string trace_path_;        // where its `trace` link points (format/ring_location.h)
  bool created_dir_ = false;  // Start() made output_dir_ (Abandon() removes it)
  bool published_ = false;
  bool quiescent_ = false;
  std::uint64_t generation_ = 0;
  std::uint64_t published_at_ = 0;  // written before active_'s release store, read after its acquire
  bool forked_child_ = false;  // a fork child's session: writes streams, never the metadata
  std::size_t metadata_size_ = 0;  // of the file WriteMetadata wrote, padding included; 0: none yet
  std::string metadata_text_;      // WriteMetadata's buffer, kept for the rewrites (ctf_metadata.h)
  // The N of ring_<N> / stream_<N> to try next (file_numbers.h); Take() is safe without mu_.
  FileNumbers file_numbers_;
  // mu_: threads creating buffer files without mu_ (Attach), at most kMaxCreators; Unpublish
  // waits for 0 on created_cv_, a creator for fewer than kMaxCreators.
  static constexpr std::uint32_t kMaxCreators = 4;
  std::uint32_t creating_ = 0;
  std::condition_variable created_cv_;
  std::size_t subbuf_size_ = 0;
  std::uint32_t subbuf_count_ = 0;
  // The rings' copy buffer (ring::RingConfig::scratch), subbuf_size_ bytes, shared by all of them:
  // their consumer-side calls run under write_mu_. Mapped with the first ring (mu_).
  base::AnonMapping scratch_;
  // SessionOptions::buffer_budget as resolved by Start, and what of it the rings have not taken
  // (ring/ring_buffer.h, "Budget"; shared with every ring of the session).
  std::uint64_t budget_ = 0;
  std::atomic<std::uint64_t> budget_left_{0};
  format::TraceInfo info_;
  clock::Calibration calibration_;
  RingObjects ring_objects_;  // before slots_: the rings' objects outlive nothing of theirs
  SlotTable slots_;
  std::atomic<std::uint32_t> ring_count_{0};
  std::atomic<std::uint64_t> write_errors_{0};

  std::thread consumer_;        // flight mode's snapshot thread; set by Start, joined by Stop
  bool writes_closed_ = false;  // guarded by write_mu_: Stop() wrote the last packets
  // The stream consumer thread is detached (EnsureConsumer). started: set under mu_ once it
  // runs; exited: its last access to this Core (release), awaited by ~Core (acquire).
  std::atomic<bool> consumer_started_{false};
  std::atomic<bool> consumer_exited_{false};
  // The stream consumer's start (EnsureConsumer): its body runs the loop, then releases
  // consumer_exited_; nothing of the Core is touched after that store, it may be freed at once.
  static void RunConsumer(void* core);
  const base::NoAllocThread consumer_start_{"hush-consumer", &Core::RunConsumer, this};
  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  bool stopping_ = false;  // guarded by wake_mu_
  bool stopped_ = false;   // guarded by mu_
  std::atomic<bool> write_error_reported_{false};
  // --sched: perf context-switch records (src/sched). Started last by Start(), stopped first
  // by Stop() so that its final drain lands in the rings before they are written out.
  std::unique_ptr<sched::SchedRecorder> sched_;
  // Snapshot triggers. next_trigger_ns_: CLOCK_MONOTONIC before which triggers are suppressed
  // (claimed by CAS: one snapshot per interval however many threads trigger). trigger_writer_:
  // the writer whose trigger event the snapshot thread waits to see committed.
  // pending_: slots claimed by CAS (0 free -> 1 being written -> 2 ready, release; the snapshot
  // thread reads a ready slot with acquire and frees it with release).
  std::atomic<std::int64_t> next_trigger_ns_{0};
  std::atomic<std::uint64_t> triggers_fired_{0};
  std::atomic<std::uint64_t> triggers_suppressed_{0};
  struct PendingTrigger {
    std::atomic<std::uint32_t> state{0};
    std::uint64_t seq = 0;
    TriggerInfo info;
  };
  PendingTrigger pending_[kMaxPendingTriggers];
  std::atomic<std::uint64_t> trigger_seq_{0};
  // Written by Start() before the state words that send events here (release), then constant.
  std::vector<filter::TriggerSpec> trigger_specs_;
  std::vector<std::vector<TriggerRule>> trigger_rules_;  // per event id
  // Function triggers: the fixed threshold of each spec in cycles (FunctionTriggers(), then
  // constant), and the rules functrace makes (under its mutex and function_rules_mu_; a rule
  // never moves: a deque), read by the threads whose marked calls return.
  std::vector<std::uint64_t> function_threshold_cycles_;
  std::mutex function_rules_mu_;
  std::deque<FunctionRule> function_rules_;
  // Snapshot thread only.
  std::vector<OpenSnapshot> open_snapshots_;
  std::deque<std::string> kept_snapshots_;  // complete, oldest first
  base::UniqueFd snapshots_dirfd_;
  std::uint64_t snapshot_number_ = 0;
  // Field filter, per event id: the program, or nullptr when the event lacks a named field
  // (never recorded). Written by Start() only, before the state words that point readers here.
  std::vector<std::unique_ptr<filter::Program>> filters_;
  std::atomic<std::uint64_t> filtered_out_{0};
  std::atomic<std::uint64_t> blocked_events_{0};  // WaitForRoom: events that waited
  std::atomic<std::uint64_t> unattached_events_{0};
};

// `parsed` bound to the payload layout of `e` (filter::Program::Bind); nullptr and *error if it
// does not bind.
std::unique_ptr<filter::Program> BindFilter(const filter::Parsed& parsed, const registry::Event& e,
                                            filter::Error* error);

// Wakes the snapshot thread of the flight-mode session (core.cc); async-signal-safe.
void WakeSnapshotThread();

// The clock UUID in DIR/metadata ("" if DIR holds no readable hushtrace metadata).
std::string ClockUuidOfTrace(const std::string& dir);
// The next session started in this process uses this clock UUID (a 36-character UUID string).
void InheritClockUuid(const std::string& uuid);

// In a fork child: forgets the calling thread's cached tid (thread_attach.cc).
void ForgetThreadInChild();

// The active session, whoever started it (the program, its environment, `hushtrace start`), for
// the live-control server. Each takes the session API's mutex (session_api.cc).
struct ActiveView {
  std::string output_dir;
  Mode mode = Mode::kStream;
  SessionStats stats;
  std::vector<std::string> enabled;
};
bool DescribeActive(ActiveView* out);                              // false: no active session
// Stops the active session; `*final_stats`: its totals once everything was written. Its memory
// (rings, consumer thread) is given back by the next FreeStopped, Session::Start or Session::Stop:
// the control server calls FreeStopped once its reply is sent.
bool StopActive(std::string* output_dir, SessionStats* final_stats);  // false: no active session
void FreeStopped();
bool SnapshotActive(std::string* output_dir, std::string* error);  // false: see *error
// Stopped sessions whose memory waits for a grace period (tests; core.h "Lifetime").
std::size_t RetiredSessions();
// fork child: forgets the Cores the session API owns (their threads are not in the child).
void ForgetOwnedCoresInChild();

}  // namespace hush::session

#endif  // HUSHTRACE_SRC_SESSION_CORE_H_
