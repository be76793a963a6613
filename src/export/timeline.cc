// TimelineBuilder: events -> tracks, slices, instants, counters (see timeline.h).
#include "export/timeline.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace hush::exporter {
namespace {

using reader::FieldType;

bool IsInteger(const reader::EventClass& ec, int field) {
  if (field < 0) return false;
  const FieldType t = ec.fields[static_cast<std::size_t>(field)].type;
  return t == FieldType::kSigned || t == FieldType::kUnsigned;
}

bool IsString(const reader::EventClass& ec, int field) {
  return field >= 0 && ec.fields[static_cast<std::size_t>(field)].type == FieldType::kString;
}

}  // namespace

std::string HexAddressResolver::Resolve(std::uint64_t addr) const {
  char buf[24] = {'0', 'x'};
  const auto r = std::to_chars(buf + 2, buf + sizeof buf, addr, 16);
  return std::string(buf, r.ptr);
}

EpochNsConverter::EpochNsConverter(const reader::Trace& trace)
    : trace_(trace), freq_(trace.metadata().clock.freq) {}

std::int64_t EpochNsConverter::Convert(std::uint64_t cycles) {
  constexpr std::uint64_t kMaxStep = std::uint64_t{1} << 33;  // d * 1e9 + r stays below 2^64
  if (valid_ && cycles >= cycles_ && cycles - cycles_ < kMaxStep && freq_ < kMaxStep) [[likely]] {
    const std::uint64_t n = rem_ + (cycles - cycles_) * 1000000000u;
    ns_ += static_cast<std::int64_t>(n / freq_);
    rem_ = n % freq_;
    cycles_ = cycles;
    return ns_;
  }
  ns_ = trace_.ToEpochNs(cycles);
  const reader::ClockInfo& c = trace_.metadata().clock;
  const __int128 n = (static_cast<__int128>(c.offset) + cycles) * 1000000000;
  __int128 r = n % static_cast<__int128>(freq_);
  if (r < 0) r += freq_;  // floor modulo, as ToEpochNs floors
  rem_ = static_cast<std::uint64_t>(r);
  cycles_ = cycles;
  valid_ = freq_ != 0;
  return ns_;
}

TimelineBuilder::TimelineBuilder(const reader::Trace& trace, TimelineSink& sink,
                                 const SymbolResolver& resolver)
    : trace_(trace), clock_(trace), sink_(sink), resolver_(resolver) {
  const auto& events = trace.metadata().events;
  std::map<std::string, std::uint32_t> category_ids;
  auto category = [&](std::string_view provider) {
    const auto [it, added] =
        category_ids.emplace(std::string(provider), static_cast<std::uint32_t>(categories_.size()));
    if (added) categories_.emplace_back(provider);
    return it->second;
  };
  std::uint32_t arg_id = 0, counters = 0;
  classes_.resize(events.size());
  for (const reader::EventClass& ec : events) {
    ClassInfo& info = classes_[ec.index];
    const std::size_t colon = ec.name.find(':');
    const std::string_view provider = std::string_view(ec.name).substr(0, colon);
    const std::string_view event =
        colon == std::string::npos ? "" : std::string_view(ec.name).substr(colon + 1);
    info.category = category(provider);
    info.arg_base = arg_id;
    arg_id += static_cast<std::uint32_t>(ec.fields.size());
    const int tid = ec.FieldIndex("tid");
    if (ec.kind == reader::EventKind::kSpan && ec.FieldIndex("phase") >= 0) {
      info.role = Role::kSpan;
      info.field_a = ec.FieldIndex("phase");
    } else if (ec.kind == reader::EventKind::kCounter && ec.FieldIndex("value") >= 0 &&
               ec.fields[static_cast<std::size_t>(ec.FieldIndex("value"))].type !=
                   FieldType::kString &&
               ec.fields[static_cast<std::size_t>(ec.FieldIndex("value"))].type !=
                   FieldType::kBytes) {
      info.role = Role::kCounter;
      info.field_a = ec.FieldIndex("value");
      info.counter = counters++;
    } else if (ec.kind == reader::EventKind::kInstant) {
      info.role = Role::kInstant;
    } else if (provider == "func" && (event == "entry" || event == "exit") &&
               IsInteger(ec, ec.FieldIndex("addr"))) {
      info.role = event == "entry" ? Role::kFuncEntry : Role::kFuncExit;
      info.field_a = ec.FieldIndex("addr");
    } else if (provider == "sched" && IsInteger(ec, tid)) {
      info.field_a = tid;
      if (event == "switch_in" && IsInteger(ec, ec.FieldIndex("cpu"))) {
        info.role = Role::kSwitchIn;
        info.field_b = ec.FieldIndex("cpu");
      } else if (event == "switch_out" && IsInteger(ec, ec.FieldIndex("cpu"))) {
        info.role = Role::kSwitchOut;
        info.field_b = ec.FieldIndex("cpu");
        info.field_c = IsInteger(ec, ec.FieldIndex("preempted")) ? ec.FieldIndex("preempted") : -1;
      } else if (event == "thread_start") {
        info.role = Role::kThreadStart;
      } else if (event == "thread_exit") {
        info.role = Role::kThreadExit;
      } else if (event == "thread_name" && IsString(ec, ec.FieldIndex("name"))) {
        info.role = Role::kThreadName;
        info.field_b = ec.FieldIndex("name");
      }
    }
  }
  cat_sched_ = category("sched");
  cat_func_ = category("func");
  next_name_ = static_cast<std::uint32_t>(events.size());
  name_running_ = next_name_++;
  name_thread_start_ = next_name_++;
  name_thread_exit_ = next_name_++;
  first_func_name_ = next_name_;
  arg_cpu_ = arg_id++;
  arg_preempted_ = arg_id++;
  arg_tid_ = arg_id++;
  counter_declared_.assign(counters, false);
}

TimelineBuilder::~TimelineBuilder() = default;

void TimelineBuilder::Start() {
  sink_.Process(ProcessInfo{trace_.pid(), std::string(trace_.procname())});
  for (const reader::ThreadInfo& t : trace_.threads()) Declare(t.tid, StateOf(t.tid), t.name);
}

TimelineBuilder::ThreadState& TimelineBuilder::StateOf(std::uint32_t tid) {
  if (last_state_ != nullptr && last_tid_ == tid) return *last_state_;
  // unordered_map references stay valid across insertions (node-based).
  last_state_ = &threads_[tid];
  last_tid_ = tid;
  return *last_state_;
}

void TimelineBuilder::Declare(std::uint32_t tid, ThreadState& state, std::string_view name) {
  state.declared = true;
  sink_.Thread(tid, name);
}

Name TimelineBuilder::ClassName(std::size_t cls) const {
  return Name{static_cast<std::uint32_t>(cls), trace_.metadata().events[cls].name};
}

Name TimelineBuilder::FuncName(std::uint64_t addr) {
  auto [it, added] = func_ids_.emplace(addr, static_cast<std::uint32_t>(func_names_.size()));
  if (added) func_names_.push_back(resolver_.Resolve(addr));
  return Name{first_func_name_ + it->second, func_names_[it->second]};
}

void TimelineBuilder::OpenFrame(std::int64_t ns, std::uint32_t tid, Frame frame, Name name,
                                Name category) {
  StateOf(tid).stack.push_back(frame);
  sink_.SliceBegin(ns, Track{TrackKind::kThread, tid}, name, category, {});
}

void TimelineBuilder::CloseFrame(std::int64_t ns, std::uint32_t tid, Frame frame) {
  std::vector<Frame>& stack = StateOf(tid).stack;
  std::size_t depth = stack.size();
  while (depth > 0 &&
         (stack[depth - 1].is_func != frame.is_func || stack[depth - 1].key != frame.key))
    --depth;
  if (depth == 0) {
    ++stats_.unmatched_ends;
    return;
  }
  // Frames opened above the matching one end with it (their own ends were lost).
  while (stack.size() >= depth) {
    stack.pop_back();
    sink_.SliceEnd(ns, Track{TrackKind::kThread, tid}, {});
    ++stats_.slices;
  }
}

std::span<const Arg> TimelineBuilder::FieldArgs(const reader::Event& event, const ClassInfo& info) {
  args_.clear();
  for (std::size_t i = 0; i < event.field_count(); ++i) {
    const reader::FieldValue v = event.field(i);
    if (v.info().hidden) continue;
    Arg a;
    a.name = Name{info.arg_base + static_cast<std::uint32_t>(i), v.info().name};
    switch (v.type()) {
      case FieldType::kSigned:
        a.type = Arg::Type::kInt;
        a.i = v.AsInt64();
        break;
      case FieldType::kUnsigned:
        a.type = Arg::Type::kUint;
        a.u = v.AsUint64();
        break;
      case FieldType::kBool:
        if (v.AsUint64() <= 1) {
          a.type = Arg::Type::kBool;
          a.u = v.AsUint64();
        } else {
          a.type = Arg::Type::kUint;
          a.u = v.AsUint64();
        }
        break;
      case FieldType::kEnum: {
        const std::string_view label = v.info().LabelFor(v.AsInt64());
        if (!label.empty()) {
          a.type = Arg::Type::kString;
          a.s = label;
        } else if (v.info().is_signed) {
          a.type = Arg::Type::kInt;
          a.i = v.AsInt64();
        } else {
          a.type = Arg::Type::kUint;
          a.u = v.AsUint64();
        }
        break;
      }
      case FieldType::kFloat:
        a.type = Arg::Type::kDouble;
        a.d = v.AsDouble();
        break;
      case FieldType::kString:
        a.type = Arg::Type::kString;
        a.s = v.AsString();
        break;
      case FieldType::kBytes:
        a.type = Arg::Type::kBytes;
        a.bytes = v.AsBytes();
        break;
    }
    args_.push_back(a);
  }
  return args_;
}

void TimelineBuilder::HandleSched(std::int64_t ns, const reader::Event& event,
                                  const ClassInfo& info) {
  const auto subject =
      static_cast<std::uint32_t>(event.field(static_cast<std::size_t>(info.field_a)).AsUint64());
  ThreadState& state = StateOf(subject);
  if (!state.declared) Declare(subject, state, "");
  const Track sched{TrackKind::kSched, subject};
  const Name cat{cat_sched_, categories_[cat_sched_]};
  switch (info.role) {
    case Role::kSwitchIn: {
      if (state.running) {  // the switch_out was lost: end the previous slice here
        sink_.SliceEnd(ns, sched, {});
        ++stats_.slices;
      }
      state.running = true;
      Arg cpu;
      cpu.name = Name{arg_cpu_, "cpu"};
      cpu.type = Arg::Type::kUint;
      cpu.u = event.field(static_cast<std::size_t>(info.field_b)).AsUint64();
      sink_.SliceBegin(ns, sched, Name{name_running_, "running"}, cat,
                       std::span<const Arg>(&cpu, 1));
      break;
    }
    case Role::kSwitchOut: {
      if (!state.running) {
        ++stats_.unmatched_ends;
        break;
      }
      state.running = false;
      Arg preempted;
      preempted.name = Name{arg_preempted_, "preempted"};
      preempted.type = Arg::Type::kBool;
      preempted.u =
          info.field_c >= 0 && event.field(static_cast<std::size_t>(info.field_c)).AsUint64() != 0;
      sink_.SliceEnd(
          ns, sched,
          info.field_c >= 0 ? std::span<const Arg>(&preempted, 1) : std::span<const Arg>());
      ++stats_.slices;
      break;
    }
    case Role::kThreadStart:
    case Role::kThreadExit: {
      const bool start = info.role == Role::kThreadStart;
      if (!start && state.running) {
        state.running = false;
        sink_.SliceEnd(ns, sched, {});
        ++stats_.slices;
      }
      Arg tid;
      tid.name = Name{arg_tid_, "tid"};
      tid.type = Arg::Type::kUint;
      tid.u = subject;
      sink_.Instant(
          ns, Track{TrackKind::kThread, subject},
          start ? Name{name_thread_start_, "thread_start"} : Name{name_thread_exit_, "thread_exit"},
          cat, std::span<const Arg>(&tid, 1));
      ++stats_.instants;
      break;
    }
    case Role::kThreadName:
      sink_.Thread(subject, event.field(static_cast<std::size_t>(info.field_b)).AsString());
      break;
    default:
      break;
  }
}

void TimelineBuilder::Add(const reader::Event& event) {
  ++stats_.events;
  const std::int64_t ns = clock_.Convert(event.timestamp());
  last_ns_ = std::max(last_ns_, ns);
  const std::size_t cls = event.event_class().index;
  const ClassInfo& info = classes_[cls];
  const std::uint32_t tid = event.tid();
  ThreadState& state = StateOf(tid);
  if (!state.declared) Declare(tid, state, event.thread_name());
  const Name category{info.category, categories_[info.category]};
  switch (info.role) {
    case Role::kSpan: {
      const Frame frame{false, cls};
      if (event.field(static_cast<std::size_t>(info.field_a)).AsUint64() == 0) {
        OpenFrame(ns, tid, frame, ClassName(cls), category);
      } else {
        CloseFrame(ns, tid, frame);
      }
      break;
    }
    case Role::kFuncEntry:
    case Role::kFuncExit: {
      const std::uint64_t addr = event.field(static_cast<std::size_t>(info.field_a)).AsUint64();
      if (info.role == Role::kFuncEntry) {
        OpenFrame(ns, tid, Frame{true, addr}, FuncName(addr),
                  Name{cat_func_, categories_[cat_func_]});
      } else {
        CloseFrame(ns, tid, Frame{true, addr});
      }
      break;
    }
    case Role::kCounter: {
      if (!counter_declared_[info.counter]) {
        counter_declared_[info.counter] = true;
        sink_.CounterTrack(info.counter, ClassName(cls), category);
      }
      sink_.CounterSample(ns, info.counter,
                          event.field(static_cast<std::size_t>(info.field_a)).AsDouble());
      ++stats_.counter_samples;
      break;
    }
    case Role::kInstant:
      sink_.Instant(ns, Track{TrackKind::kThread, tid}, ClassName(cls), category, {});
      ++stats_.instants;
      break;
    case Role::kEvent:
      sink_.Instant(ns, Track{TrackKind::kThread, tid}, ClassName(cls), category,
                    FieldArgs(event, info));
      ++stats_.instants;
      break;
    default:
      HandleSched(ns, event, info);
      break;
  }
}

bool TimelineBuilder::Finish() {
  std::vector<std::uint32_t> tids;
  for (const auto& [tid, state] : threads_) {
    if (!state.stack.empty() || state.running) tids.push_back(tid);
  }
  std::sort(tids.begin(), tids.end());
  for (const std::uint32_t tid : tids) {
    ThreadState& state = StateOf(tid);
    for (; !state.stack.empty(); state.stack.pop_back()) {
      sink_.SliceEnd(last_ns_, Track{TrackKind::kThread, tid}, {});
      ++stats_.slices;
      ++stats_.closed_at_end;
    }
    if (state.running) {
      state.running = false;
      sink_.SliceEnd(last_ns_, Track{TrackKind::kSched, tid}, {});
      ++stats_.slices;
      ++stats_.closed_at_end;
    }
  }
  return sink_.Finish();
}

}  // namespace hush::exporter
