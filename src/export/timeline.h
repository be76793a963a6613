// Maps the events of a trace onto timeline tracks, for the exporters (Perfetto, Chrome JSON).
//
// TimelineBuilder reads events in time order (from reader::EventIterator) and calls a
// TimelineSink with track-level operations: thread and counter tracks, slices (begin/end),
// instants and counter samples. It owns the semantics (docs/architecture.md, "Export"):
//
//   event kind / name                      timeline
//   -------------------------------------  --------------------------------------------------
//   span (phase begin/end)                 slice on the thread's track
//   func:entry / func:exit {addr}          slice on the thread's track, named by a SymbolResolver
//   instant                                instant on the thread's track
//   counter {value}                        sample on the counter track "provider:name"
//   any other event                        instant on the thread's track, fields as arguments
//   sched:switch_in / switch_out {tid,...} "running" slice on the sched track of thread `tid`
//   sched:thread_start / thread_exit {tid} instant on the track of thread `tid`
//   sched:thread_name {tid, name}          renames thread `tid`
//
// Slices of one track form a stack: an end closes the innermost open slice with the same key
// (span class, or function address); slices opened above it are closed at the same time. An end
// without a matching begin is dropped and counted. Slices still open at the end of the trace are
// closed at the last event's time. So every sink sees properly nested begin/end pairs per track.
//
// Memory: O(threads x stack depth + event classes + distinct function addresses), independent of
// the number of events. Single-threaded.
#ifndef HUSHTRACE_SRC_EXPORT_TIMELINE_H_
#define HUSHTRACE_SRC_EXPORT_TIMELINE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "export/symbol_resolver.h"
#include "hushtrace/reader.h"

namespace hush::exporter {

enum class TrackKind : std::uint8_t {
  kThread,   // id = tid: spans, function calls, instants, events
  kSched,    // id = tid: "running" slices from scheduler events
  kCounter,  // id = counter index (dense, see CounterInfo)
};

struct Track {
  TrackKind kind;
  std::uint32_t id;
};

// An interned string: ids are dense per kind (names, categories, argument names), from 0, so
// sinks can remember what they already wrote in a vector indexed by id.
struct Name {
  std::uint32_t id;
  std::string_view text;
};

struct Arg {
  enum class Type : std::uint8_t { kInt, kUint, kDouble, kBool, kString, kBytes };
  Name name;
  Type type = Type::kInt;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
  std::string_view s;                   // kString; enum labels are strings too
  std::span<const std::uint8_t> bytes;  // kBytes
};

struct ProcessInfo {
  std::uint32_t pid = 0;
  std::string name;
};

// Receives the timeline. Times are ns since the epoch, non-decreasing across calls.
class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  virtual void Process(const ProcessInfo& process) = 0;
  // Declares a thread, or renames it (called again with a new name).
  virtual void Thread(std::uint32_t tid, std::string_view name) = 0;
  // A counter track, declared before its first sample.
  virtual void CounterTrack(std::uint32_t counter, Name name, Name category) = 0;
  virtual void SliceBegin(std::int64_t ns, Track track, Name name, Name category,
                          std::span<const Arg> args) = 0;
  virtual void SliceEnd(std::int64_t ns, Track track, std::span<const Arg> args) = 0;
  virtual void Instant(std::int64_t ns, Track track, Name name, Name category,
                       std::span<const Arg> args) = 0;
  virtual void CounterSample(std::int64_t ns, std::uint32_t counter, double value) = 0;
  // No call follows. False when the output failed.
  virtual bool Finish() = 0;
};

struct TimelineStats {
  std::uint64_t events = 0;
  std::uint64_t slices = 0;
  std::uint64_t instants = 0;
  std::uint64_t counter_samples = 0;
  std::uint64_t unmatched_ends = 0;  // ends (span, func:exit, switch_out) without a begin
  std::uint64_t closed_at_end = 0;   // slices still open at the end of the trace
};

// Trace::ToEpochNs() without a 128-bit division per event: events come in time order, so the
// converter keeps q = floor(N / freq) and r = N mod freq for N = (offset + cycles) * 1e9 of the
// previous event and adds the next delta in 64-bit arithmetic:
//   floor((N + d * 1e9) / freq) = q + floor((r + d * 1e9) / freq).
// Exact; a step back in time or a delta over 2^33 cycles takes the 128-bit path of the reader.
class EpochNsConverter {
 public:
  explicit EpochNsConverter(const reader::Trace& trace);
  std::int64_t Convert(std::uint64_t cycles);

 private:
  const reader::Trace& trace_;
  std::uint64_t freq_;
  bool valid_ = false;
  std::uint64_t cycles_ = 0, rem_ = 0;
  std::int64_t ns_ = 0;
};

class TimelineBuilder {
 public:
  // `resolver` names func:entry addresses; it must outlive the builder.
  TimelineBuilder(const reader::Trace& trace, TimelineSink& sink, const SymbolResolver& resolver);
  ~TimelineBuilder();
  TimelineBuilder(const TimelineBuilder&) = delete;
  TimelineBuilder& operator=(const TimelineBuilder&) = delete;

  // Declares the process and the threads of the trace's packet contexts.
  void Start();
  void Add(const reader::Event& event);
  // Closes the slices still open and finishes the sink; false when the sink failed.
  bool Finish();
  const TimelineStats& stats() const { return stats_; }

 private:
  enum class Role : std::uint8_t {
    kEvent,
    kSpan,
    kInstant,
    kCounter,
    kFuncEntry,
    kFuncExit,
    kSwitchIn,
    kSwitchOut,
    kThreadStart,
    kThreadExit,
    kThreadName,
  };
  struct ClassInfo {
    Role role = Role::kEvent;
    int field_a = -1;  // span: phase; counter: value; func: addr; sched: tid
    int field_b = -1;  // sched switch: cpu; thread_name: name
    int field_c = -1;  // switch_out: preempted
    std::uint32_t category = 0;
    std::uint32_t arg_base = 0;  // argument name ids of its fields: arg_base + field index
    std::uint32_t counter = 0;   // kCounter: counter index
  };
  struct Frame {
    bool is_func;
    std::uint64_t key;  // span: class index; func: address
  };
  struct ThreadState {
    bool declared = false;
    bool running = false;  // a "running" slice is open on its sched track
    std::vector<Frame> stack;
  };

  ThreadState& StateOf(std::uint32_t tid);
  void Declare(std::uint32_t tid, ThreadState& state, std::string_view name);
  Name ClassName(std::size_t cls) const;
  Name FuncName(std::uint64_t addr);
  void OpenFrame(std::int64_t ns, std::uint32_t tid, Frame frame, Name name, Name category);
  void CloseFrame(std::int64_t ns, std::uint32_t tid, Frame frame);
  std::span<const Arg> FieldArgs(const reader::Event& event, const ClassInfo& info);
  void HandleSched(std::int64_t ns, const reader::Event& event, const ClassInfo& info);

  const reader::Trace& trace_;
  EpochNsConverter clock_;
  TimelineSink& sink_;
  const SymbolResolver& resolver_;
  std::vector<ClassInfo> classes_;
  std::vector<std::string> categories_;
  std::uint32_t cat_sched_ = 0, cat_func_ = 0;
  std::uint32_t name_running_ = 0, name_thread_start_ = 0, name_thread_exit_ = 0;
  std::uint32_t arg_cpu_ = 0, arg_preempted_ = 0, arg_tid_ = 0;
  std::uint32_t next_name_ = 0;
  std::unordered_map<std::uint64_t, std::uint32_t> func_ids_;  // address -> index in func_names_
  std::vector<std::string> func_names_;
  std::uint32_t first_func_name_ = 0;
  std::unordered_map<std::uint32_t, ThreadState> threads_;
  std::uint32_t last_tid_ = 0;
  ThreadState* last_state_ = nullptr;
  std::vector<Arg> args_;
  std::vector<std::string> enum_strings_;
  std::int64_t last_ns_ = 0;
  std::vector<bool> counter_declared_;
  TimelineStats stats_;
};

}  // namespace hush::exporter

#endif  // HUSHTRACE_SRC_EXPORT_TIMELINE_H_
