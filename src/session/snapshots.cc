// Triggered snapshots (SessionOptions::snapshot_on): the trigger rules, checked on the emitting
// thread's slow path, and the separate traces DIR/snapshots/<UTC time>-<n>/ that the session's
// snapshot thread writes (docs/format.md, "Snapshots").
//
// Emitting thread (CommitSlow, after the event is committed, so that the snapshot holds it):
//
//   OnTriggerEvent   rules of the event id: any event | field condition | span duration
//   OnFunctionReturn a marked function's call returned (functrace.h, TriggerHooks): its
//                    duration (exit - entry, both from the shadow stack's frame and the exit
//                    event) > threshold (fixed or per-function percentile): fire
//     span begin     push (id, ts) on this thread's open-span stack       (no clock read, no lock)
//     span end       pop it; duration = ts - begin; > threshold (fixed, or the running
//                    percentile estimate: quantile_threshold.h): fire
//   Fire             interval check (one CAS), claim a pending slot (CAS 0 -> 1), fill it,
//                    publish it (store 2, release), sem_post.          Never waits, never allocates.
//
// Snapshot thread (Core::SignalLoop):
//
//   TakePendingTriggers  ready slots (acquire), oldest first -> BeginSnapshot each, slot freed
//   BeginSnapshot        snapshots/.<name>.partial/: metadata with the trigger, then every ring's
//                        intact packets and the committed part of its open one (CopySnapshot)
//   FinishSnapshot       snapshot_after_ns later (or at Stop): what the rings got since, then the
//                        rename to snapshots/<name>/ and the keep bound (oldest removed first)
//
// Copies go through Ring::CopyForSnapshot under write_mu_, with a cursor of their own: the
// flight recorder's own trace (written at exit, on SIGUSR2) is unchanged by them.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "base/dir_stream.h"
#include "base/errno_message.h"
#include "format/numbered_name.h"
#include "session/core.h"
#include "session/files.h"
#include "session/writers.h"

namespace hush::session {
namespace {

// Spans of this thread that have a duration trigger and have begun: pushed at their begin,
// popped at their end (a thread's spans end in reverse order of their begins: HUSH_SPAN is a
// scope). Begins nested deeper than kMaxOpenSpans are counted, not kept, and their ends skipped.
constexpr int kMaxOpenSpans = 32;
struct OpenSpans {
  std::uint64_t generation = 0;  // of the session the entries belong to
  int depth = 0;                 // entries in `spans`
  int overflow = 0;              // begins beyond kMaxOpenSpans, not kept
  struct {
    std::uint32_t id;
    std::uint64_t ts;
  } spans[kMaxOpenSpans];
};
// One thread_local (one __tls_get_addr from the shared runtime) for the whole stack.
thread_local OpenSpans t_open;

// The duration of the span `id` that ends at `ts` on this thread (0: its begin is unknown).
std::uint64_t SpanDuration(std::uint64_t generation, std::uint32_t id, bool begin, std::uint64_t ts) {
  OpenSpans& o = t_open;
  if (o.generation != generation) {  // spans of an earlier session
    o.generation = generation;
    o.depth = 0;
    o.overflow = 0;
  }
  if (begin) {
    if (o.depth == kMaxOpenSpans) {
      ++o.overflow;
    } else {
      o.spans[o.depth++] = {id, ts};
    }
    return 0;
  }
  if (o.overflow > 0) {
    --o.overflow;
    return 0;
  }
  // The innermost open span of this id; spans above it lost their end (their session changed
  // the event's state between begin and end) and are dropped.
  for (int i = o.depth - 1; i >= 0; --i) {
    if (o.spans[i].id == id) {
      o.depth = i;
      return ts > o.spans[i].ts ? ts - o.spans[i].ts : 1;
    }
  }
  return 0;
}

std::uint64_t NsToCycles(std::uint64_t ns, std::uint64_t hz) {
  return static_cast<std::uint64_t>(static_cast<unsigned __int128>(ns) * hz / 1000000000u);
}

std::uint64_t CyclesToNs(std::uint64_t cycles, std::uint64_t hz) {
  return hz == 0 ? 0 : static_cast<std::uint64_t>(static_cast<unsigned __int128>(cycles) * 1000000000u / hz);
}

// "20261202T052233.123456Z": the UTC time now, to the microsecond, sortable as text.
std::string UtcNow() {
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  tm utc;
  ::gmtime_r(&now.tv_sec, &utc);
  char text[40];
  const std::size_t n = std::strftime(text, sizeof text, "%Y%m%dT%H%M%S", &utc);
  std::snprintf(text + n, sizeof text - n, ".%06ldZ", now.tv_nsec / 1000);
  return text;
}

// Removes the directory `name` in `parent` and the files in it (a snapshot holds no directory).
void RemoveSnapshotDir(int parent, const std::string& name) {
  base::DirStream dir = base::DirStream::Adopt(base::UniqueFd(
      ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)));
  while (const char* entry = dir.Next()) ::unlinkat(dir.fd(), entry, 0);
  ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
}

}  // namespace

bool Core::PrepareTriggers(std::string* error) {
  const registry::Registry& registry = registry::Global();
  for (const filter::TriggerSpec& spec : trigger_specs_) {
    if (spec.kind == filter::TriggerSpec::Kind::kEvent) continue;  // as an event pattern
    if (!spec.function.empty()) {
      // Matched against the functions when functrace patches them (dlopen may add some later).
      if (options_.functions.empty()) {
        *error = "snapshot-on '" + spec.text +
                 "': a function trigger needs function tracing (functions, --functions)";
        return false;
      }
      continue;
    }
    const std::vector<const registry::Event*> matching = registry.Matching({spec.glob});
    const std::string what = "snapshot-on '" + spec.text + "': ";
    if (matching.empty()) {
      *error = what + "no event of the program matches '" + spec.glob + "'";
      return false;
    }
    bool applies = false;
    std::string why;
    for (const registry::Event* e : matching) {
      if (spec.kind == filter::TriggerSpec::Kind::kDuration) {
        applies = applies || e->meta.kind == static_cast<std::uint8_t>(internal::EventKind::kSpan);
      } else {
        filter::Error bind_error;
        std::unique_ptr<filter::Parsed> parsed = filter::Parse(spec.condition, &bind_error);
        if (parsed && BindFilter(*parsed, *e, &bind_error)) {
          applies = true;
        } else if (why.empty()) {
          why = e->meta.FullName() + ": " + bind_error.Message() + ")\n" +
                filter::Caret(spec.condition, bind_error.column);
        }
      }
    }
    if (!applies) {
      *error = what + (spec.kind == filter::TriggerSpec::Kind::kDuration
                           ? "'" + spec.glob + "' names no span (a duration applies to HUSH_SPAN spans)"
                           : "the condition applies to no matching event (" + why);
      return false;
    }
  }
  return true;
}

void Core::BindTriggers() {
  registry::Registry& registry = registry::Global();
  std::vector<std::string> globs;
  for (const filter::TriggerSpec& spec : trigger_specs_) {
    if (spec.function.empty()) globs.push_back(spec.glob);
  }
  registry.Enable(globs);
  trigger_rules_.clear();
  trigger_rules_.resize(registry.events().size());
  std::vector<std::string> names;  // the events that got a rule
  for (const registry::Event* e : registry.EventsWithIds()) {
    if (!e->enabled) continue;
    const std::string name = e->meta.FullName();
    std::vector<TriggerRule>& rules = trigger_rules_[static_cast<std::size_t>(e->id)];
    for (std::uint32_t k = 0; k < trigger_specs_.size(); ++k) {
      const filter::TriggerSpec& spec = trigger_specs_[k];
      if (!spec.function.empty() || !registry::GlobMatches(spec.glob, name)) continue;
      TriggerRule rule;
      rule.spec = k;
      rule.kind = spec.kind;
      if (spec.kind == filter::TriggerSpec::Kind::kDuration) {
        if (e->meta.kind != static_cast<std::uint8_t>(internal::EventKind::kSpan)) continue;
        if (spec.quantile > 0) {
          rule.quantile = std::make_unique<QuantileThreshold>(spec.quantile);  // per span name
        } else {
          rule.threshold_cycles = NsToCycles(spec.threshold_ns, calibration_.freq_hz);
        }
      } else if (spec.kind == filter::TriggerSpec::Kind::kField) {
        filter::Error why;
        std::unique_ptr<filter::Parsed> parsed = filter::Parse(spec.condition, &why);
        if (parsed) rule.condition = BindFilter(*parsed, *e, &why);
        if (!rule.condition) continue;  // this event lacks a field of the condition
      }
      rules.push_back(std::move(rule));
    }
    if (!rules.empty()) names.push_back(name);
  }
  // Release (inside SetTriggers): the rules above are visible to a thread that sees the bit and
  // issues the acquire fence of CommitSlow.
  registry.SetTriggers(names);
}

void Core::OnTriggerEvent(internal::ThreadWriter& w, std::uint32_t id, const char* payload,
                          std::size_t size) {
  if (id >= trigger_rules_.size()) return;  // an event of a module scanned after Start()
  const std::vector<TriggerRule>& rules = trigger_rules_[id];
  TriggerInfo info;
  info.event_id = id;
  info.ts = w.pending_ts;  // the committed event's (trigger events take the slow path)
  info.tid = w.ring != nullptr ? static_cast<ring::Ring*>(w.ring)->header().owner_tid.load(std::memory_order_relaxed) : 0;
  bool span_checked = false;
  for (const TriggerRule& rule : rules) {
    info.spec = rule.spec;
    switch (rule.kind) {
      case filter::TriggerSpec::Kind::kEvent:
        return Fire(info);
      case filter::TriggerSpec::Kind::kField:
        if (rule.condition->Matches(payload, size)) return Fire(info);
        break;
      case filter::TriggerSpec::Kind::kDuration:
        if (!span_checked) {
          span_checked = true;
          const bool begin = size >= 1 && payload[0] == 0;  // SpanPhase: 0 begin, 1 end
          info.duration = SpanDuration(generation_, id, begin, info.ts);
        }
        if (info.duration == 0) break;  // a begin, or an end whose begin is unknown
        if (rule.quantile) {
          if (rule.quantile->Exceeds(info.duration, &info.threshold)) return Fire(info);
        } else if (info.duration > rule.threshold_cycles) {
          info.threshold = rule.threshold_cycles;
          return Fire(info);
        }
        break;
    }
  }
}

void Core::FunctionTriggers(functrace::Options* options) {
  function_threshold_cycles_.assign(trigger_specs_.size(), 0);
  for (std::uint32_t k = 0; k < trigger_specs_.size(); ++k) {
    const filter::TriggerSpec& spec = trigger_specs_[k];
    if (spec.function.empty()) continue;
    function_threshold_cycles_[k] = NsToCycles(spec.threshold_ns, calibration_.freq_hz);
    options->triggers.push_back({spec.function, k});
  }
  if (options->triggers.empty()) return;
  options->hooks.context = this;
  options->hooks.generation = generation_;
  options->hooks.make_state = &Core::MakeFunctionRule;
  options->hooks.on_return = &Core::OnFunctionReturn;
}

void* Core::MakeFunctionRule(void* context, std::uint32_t spec, const char* name,
                             std::uintptr_t entry) {
  Core* core = static_cast<Core*>(context);
  std::lock_guard<std::mutex> lock(core->function_rules_mu_);
  FunctionRule& rule = core->function_rules_.emplace_back();
  rule.spec = spec;
  rule.name = name;
  rule.entry = entry;
  const filter::TriggerSpec& s = core->trigger_specs_[spec];
  if (s.quantile > 0) {
    rule.quantile = std::make_unique<QuantileThreshold>(s.quantile);  // per function
  } else {
    rule.threshold_cycles = core->function_threshold_cycles_[spec];
  }
  return &rule;
}

void Core::OnFunctionReturn(std::uint64_t generation, void* state, std::uint64_t entry_ts,
                            std::uint64_t exit_ts) {
  writers::RegisterThisThread();  // before Active(): the grace period of Stop then sees us
  Core* core = Active();
  // A rule of an earlier session (a frame it patched returning now) is gone with its Core.
  if (core == nullptr || core->generation_ != generation) return;
  const FunctionRule& rule = *static_cast<const FunctionRule*>(state);
  TriggerInfo info;
  info.spec = rule.spec;
  info.event_id = ~std::uint32_t{0};  // func:exit or func:call (BeginSnapshot names it)
  info.ts = exit_ts;
  info.duration = exit_ts > entry_ts ? exit_ts - entry_ts : 1;
  info.function = rule.name.c_str();
  info.function_entry = rule.entry;
  internal::ThreadWriter& w = internal::tls_writer;
  info.tid = w.ring != nullptr ? static_cast<ring::Ring*>(w.ring)->header().owner_tid.load(std::memory_order_relaxed) : 0;
  if (rule.quantile) {
    if (rule.quantile->Exceeds(info.duration, &info.threshold)) core->Fire(info);
  } else if (info.duration > rule.threshold_cycles) {
    info.threshold = rule.threshold_cycles;
    core->Fire(info);
  }
}

void Core::Fire(const TriggerInfo& info) {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  const std::int64_t now = std::int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
  std::int64_t next = next_trigger_ns_.load(std::memory_order_relaxed);
  // Relaxed: the CAS only elects one trigger per interval; the slot's release orders the rest.
  if (now < next || !next_trigger_ns_.compare_exchange_strong(
                        next, now + std::int64_t{options_.snapshot_interval_ms} * 1000000,
                        std::memory_order_relaxed)) {
    triggers_suppressed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const std::uint64_t seq = trigger_seq_.fetch_add(1, std::memory_order_relaxed);
  for (PendingTrigger& slot : pending_) {
    std::uint32_t free = 0;
    // Acquire: pairs with the release that freed the slot (TakePendingTriggers); the snapshot
    // thread's reads of the old contents happen before our writes.
    if (!slot.state.compare_exchange_strong(free, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      continue;
    }
    slot.seq = seq;
    slot.info = info;
    // Publish: pairs with the acquire load in TakePendingTriggers().
    slot.state.store(2, std::memory_order_release);
    triggers_fired_.fetch_add(1, std::memory_order_relaxed);
    WakeSnapshotThread();
    return;
  }
  triggers_suppressed_.fetch_add(1, std::memory_order_relaxed);  // every slot waits
}

void Core::TakePendingTriggers() {
  for (;;) {
    PendingTrigger* oldest = nullptr;
    for (PendingTrigger& slot : pending_) {
      // Acquire: pairs with the release in Fire(); the slot's contents are complete.
      if (slot.state.load(std::memory_order_acquire) == 2 && (oldest == nullptr || slot.seq < oldest->seq)) {
        oldest = &slot;
      }
    }
    if (oldest == nullptr) return;
    const TriggerInfo info = oldest->info;
    // Release: pairs with the acquire CAS in Fire(); our read above happens before a reuse.
    oldest->state.store(0, std::memory_order_release);
    BeginSnapshot(info);
  }
}

void Core::BeginSnapshot(const TriggerInfo& info) {
  const FileSizeSignalGuard no_sigxfsz;
  if (!snapshots_dirfd_) {
    if (::mkdirat(dirfd_.get(), "snapshots", 0700) != 0 && errno != EEXIST) return;
    snapshots_dirfd_.reset(::openat(dirfd_.get(), "snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!snapshots_dirfd_) return;
  }
  OpenSnapshot s;
  s.name = UtcNow() + "-" + std::to_string(++snapshot_number_);
  const std::string partial = "." + s.name + ".partial";
  if (::mkdirat(snapshots_dirfd_.get(), partial.c_str(), 0700) != 0) return;
  s.dirfd.reset(::openat(snapshots_dirfd_.get(), partial.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  // The rings first: a busy thread may overwrite the trigger's surroundings within milliseconds.
  if (s.dirfd) CopySnapshot(s);
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mu_);  // info_ and calibration_ (the consumer refines them)
    format::TraceInfo trace = info_;
    trace.clock = calibration_;
    const filter::TriggerSpec& spec = trigger_specs_[info.spec];
    std::string event;
    for (const registry::Event* e : registry::Global().EventsWithIds()) {
      if (e->id == info.event_id) event = e->meta.FullName();
    }
    if (info.function != nullptr) event = options_.function_min_duration_ns != 0 ? "func:call" : "func:exit";
    trace.env_strings = {{"hushtrace_snapshot_trigger", spec.text}, {"hushtrace_snapshot_event", event}};
    if (info.function != nullptr) {
      trace.env_strings.emplace_back("hushtrace_snapshot_function", info.function);
    }
    trace.env_numbers = {{"hushtrace_snapshot_tid", info.tid},
                         {"hushtrace_snapshot_timestamp", info.ts},
                         {"hushtrace_snapshot_after_ns", options_.snapshot_after_ns}};
    if (info.function != nullptr) {
      trace.env_numbers.emplace_back("hushtrace_snapshot_function_addr", info.function_entry);
    }
    if (spec.kind == filter::TriggerSpec::Kind::kDuration) {
      trace.env_numbers.emplace_back("hushtrace_snapshot_duration_ns", CyclesToNs(info.duration, calibration_.freq_hz));
      // A fixed threshold as given; an adaptive one as it stood when the span ended.
      trace.env_numbers.emplace_back("hushtrace_snapshot_threshold_ns",
                                     spec.quantile > 0 ? CyclesToNs(info.threshold, calibration_.freq_hz)
                                                       : spec.threshold_ns);
    }
    text = format::BuildMetadata(trace, registry::Global().EventsWithIds());
  }
  std::string error;
  if (!s.dirfd || !WriteFileAt(s.dirfd.get(), "metadata", text, &error)) {
    s.dirfd.reset();
    s.streams.clear();
    RemoveSnapshotDir(snapshots_dirfd_.get(), partial);
    return;
  }
  s.deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(options_.snapshot_after_ns);
  if (options_.snapshot_after_ns == 0) {
    FinishSnapshot(s);
  } else {
    open_snapshots_.push_back(std::move(s));
  }
}

void Core::CopySnapshot(OpenSnapshot& s) {
  std::lock_guard<std::mutex> lock(write_mu_);  // the rings' consumer side (ring_buffer.h)
  const FileSizeSignalGuard no_sigxfsz;
  const std::uint32_t n = ring_count_.load(std::memory_order_acquire);  // pairs with Attach
  s.streams.resize(n);
  s.cursors.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    ring::Ring& r = *slots_[i].ring;
    const std::string name = format::StreamName(r.index());
    const int create = s.streams[i] ? 0 : O_CREAT | O_EXCL;
    const base::UniqueFd stream(
        ::openat(s.dirfd.get(), name.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | create, 0600));
    if (!stream) continue;  // tried again at the next copy
    s.streams[i] = true;
    r.CopyForSnapshot(stream.get(), &s.cursors[i]);
  }
}

void Core::FinishSnapshot(OpenSnapshot& s) {
  if (options_.snapshot_after_ns != 0) CopySnapshot(s);
  for (std::uint32_t i = 0; i < s.streams.size(); ++i) {
    const std::string name = format::StreamName(slots_[i].ring->index());
    struct stat st;
    if (s.streams[i] && ::fstatat(s.dirfd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_size == 0) {
      // A ring with nothing in it: no stream (CTF readers want at least one packet per file).
      ::unlinkat(s.dirfd.get(), name.c_str(), 0);
    }
  }
  s.streams.clear();
  s.dirfd.reset();
  const std::string partial = "." + s.name + ".partial";
  if (::renameat(snapshots_dirfd_.get(), partial.c_str(), snapshots_dirfd_.get(), s.name.c_str()) != 0) {
    RemoveSnapshotDir(snapshots_dirfd_.get(), partial);
    return;
  }
  kept_snapshots_.push_back(s.name);
  while (options_.snapshot_keep != 0 && kept_snapshots_.size() > options_.snapshot_keep) {
    RemoveSnapshotDir(snapshots_dirfd_.get(), kept_snapshots_.front());
    kept_snapshots_.pop_front();
  }
}

}  // namespace hush::session
