#include "sql/tables.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits.h>

#include "export/text_escape.h"

namespace hush::sql {

using exporter::Arg;
using exporter::Name;
using exporter::Track;
using exporter::TrackKind;

std::string TraceId(const reader::Trace& trace) {
  const reader::Metadata& md = trace.metadata();
  if (!md.uuid.empty()) {
    const std::string_view ts = md.Env("hushtrace_snapshot_timestamp");
    if (ts.empty()) return md.uuid;
    return md.uuid + "/snapshot/" + std::string(md.Env("hushtrace_snapshot_tid")) + "-" + std::string(ts);
  }
  char buf[PATH_MAX];
  const char* abs = ::realpath(trace.dir().c_str(), buf);
  return "dir:" + std::string(abs != nullptr ? abs : trace.dir().c_str());
}

std::vector<std::vector<std::uint32_t>> StreamsByThread(const reader::Trace& trace) {
  // group[s]: the group of stream s (an index into `groups`); threads come ordered by tid.
  std::map<std::uint32_t, std::size_t> group;
  std::vector<std::vector<std::uint32_t>> groups;
  for (const reader::ThreadInfo& t : trace.threads()) {
    std::size_t into = groups.size();
    for (const std::uint32_t s : t.streams)
      if (const auto it = group.find(s); it != group.end()) into = std::min(into, it->second);
    if (into == groups.size()) groups.emplace_back();
    for (const std::uint32_t s : t.streams) {
      const auto it = group.find(s);
      if (it == group.end()) {
        group[s] = into;
        groups[into].push_back(s);
      } else if (it->second != into) {  // joins two groups: move the other one's streams over
        std::vector<std::uint32_t> moved = std::move(groups[it->second]);
        groups[it->second].clear();
        for (const std::uint32_t m : moved) group[m] = into;
        groups[into].insert(groups[into].end(), moved.begin(), moved.end());
      }
    }
  }
  for (const reader::StreamInfo& s : trace.streams())
    if (group.find(s.index) == group.end()) groups.push_back({s.index});
  std::erase_if(groups, [](const std::vector<std::uint32_t>& g) { return g.empty(); });
  return groups;
}

// Receives the timeline of the trace and writes spans, sched_slices and counters rows.
class TraceTables::Slices final : public exporter::TimelineSink {
 public:
  explicit Slices(TraceTables& owner) : owner_(owner) {}

  void Process(const exporter::ProcessInfo&) override {}
  void Thread(std::uint32_t tid, std::string_view name) override {
    threads_[tid] = std::string(name);  // a rename replaces the name: one row a thread
  }
  void CounterTrack(std::uint32_t counter, Name name, Name) override {
    if (counters_.size() <= counter) counters_.resize(counter + 1);
    counters_[counter] = std::string(name.text);
  }
  void SliceBegin(std::int64_t ns, Track track, Name name, Name category,
                  std::span<const Arg> args) override {
    Open open;
    open.start = ns;
    std::vector<Open>& stack = StackOf(track);
    if (track.kind == TrackKind::kThread) {
      open.id = ++next_id_;
      open.parent = stack.empty() ? 0 : stack.back().id;
      open.name = Intern(names_, name);
      open.provider = Intern(categories_, category);
    } else {
      for (const Arg& a : args)
        if (a.name.text == "cpu") open.cpu = static_cast<std::int64_t>(a.u);
    }
    stack.push_back(open);
  }
  void SliceEnd(std::int64_t ns, Track track, std::span<const Arg> args) override {
    std::vector<Open>& stack = StackOf(track);
    if (stack.empty()) return;  // the builder pairs every end with a begin; defensive only
    const Open open = stack.back();
    stack.pop_back();
    const std::int64_t dur = ns - open.start;
    Value v[12];
    Common(v, track.id);
    if (track.kind == TrackKind::kThread) {
      if (!stack.empty()) stack.back().children += dur;
      v[4].i = open.id;
      v[5].i = open.parent;
      v[6].i = static_cast<std::int64_t>(stack.size());
      v[7].i = open.start;
      v[8].i = dur;
      v[9].i = dur - open.children;
      v[10].s = categories_[open.provider];
      v[11].s = names_[open.name];
      owner_.Emit(TableId::kSpans, std::span<const Value>(v, 12));
    } else {
      std::int64_t preempted = -1;  // unknown: the slice ended without a switch_out
      for (const Arg& a : args)
        if (a.name.text == "preempted") preempted = a.u != 0 ? 1 : 0;
      v[4].i = open.start;
      v[5].i = dur;
      v[6].i = open.cpu;
      v[7].i = preempted;
      owner_.Emit(TableId::kSchedSlices, std::span<const Value>(v, 8));
    }
  }
  void Instant(std::int64_t, Track, Name, Name, std::span<const Arg>) override {}
  void CounterSample(std::int64_t ns, std::uint32_t counter, double value) override {
    Value v[6];
    Common(v, 0);
    v[3].i = ns;
    v[4].s = counter < counters_.size() ? std::string_view(counters_[counter]) : "";
    v[5].d = value;
    owner_.Emit(TableId::kCounters, std::span<const Value>(v, 6));
  }
  bool Finish() override { return owner_.ok_; }

  const std::map<std::uint32_t, std::string>& threads() const { return threads_; }

 private:
  struct Open {
    std::int64_t start = 0;
    std::int64_t id = 0, parent = 0;
    std::int64_t children = 0;  // ns spent in closed child slices
    std::int64_t cpu = -1;
    std::uint32_t name = 0, provider = 0;
  };

  // trace_id, host, pid; and tid (tables whose fourth column is one).
  void Common(Value* v, std::uint32_t tid) const {
    owner_.Common(v);
    v[3].i = tid;
  }
  // Names are dense ids (timeline.h): keep their text, which may not outlive the call.
  static std::uint32_t Intern(std::vector<std::string>& table, Name name) {
    if (table.size() <= name.id) table.resize(name.id + 1);
    if (table[name.id].empty()) table[name.id] = std::string(name.text);
    return name.id;
  }
  std::vector<Open>& StackOf(Track track) {
    const std::uint64_t key = (std::uint64_t{static_cast<std::uint8_t>(track.kind)} << 32) | track.id;
    if (key != last_key_ || last_stack_ == nullptr) {
      last_key_ = key;
      last_stack_ = &stacks_[key];  // unordered_map: references stay valid across inserts
    }
    return *last_stack_;
  }

  TraceTables& owner_;
  std::map<std::uint32_t, std::string> threads_;
  std::vector<std::string> counters_, names_, categories_;
  std::unordered_map<std::uint64_t, std::vector<Open>> stacks_;
  std::uint64_t last_key_ = 0;
  std::vector<Open>* last_stack_ = nullptr;
  std::int64_t next_id_ = 0;
};

TraceTables::TraceTables(const reader::Trace& trace, RowSink& sink, const TableOptions& options)
    : trace_(trace),
      sink_(sink),
      trace_id_(TraceId(trace)),
      host_(exporter::ToValidUtf8(options.host.empty() ? trace.hostname() : options.host)),
      pid_(trace.pid()),
      clock_(trace),
      row_clock_(trace) {
  for (const reader::EventClass& cls : trace.metadata().events) {
    ClassText text;
    const std::size_t colon = cls.name.find(':');
    if (colon == std::string::npos) {
      text.name = exporter::ToValidUtf8(cls.name);
    } else {
      text.provider = exporter::ToValidUtf8(cls.name.substr(0, colon));
      text.name = exporter::ToValidUtf8(cls.name.substr(colon + 1));
    }
    for (const reader::FieldInfo& f : cls.fields)
      text.keys.push_back(f.hidden ? std::string() : exporter::JsonString(f.name) + ":");
    classes_.push_back(std::move(text));
  }
  slices_ = std::make_unique<Slices>(*this);
  builder_ = std::make_unique<exporter::TimelineBuilder>(trace, *slices_, resolver_);
  builder_->Start();
}

TraceTables::~TraceTables() = default;

void TraceTables::Common(Value* v) const {
  v[0].s = trace_id_;
  v[1].s = host_;
  v[2].i = pid_;
}

bool TraceTables::Emit(TableId table, std::span<const Value> values) {
  if (!ok_) return false;
  ok_ = sink_.Row(table, values);
  ++rows_[static_cast<std::size_t>(table)];
  return ok_;
}

namespace {

template <typename T>
void AppendNumber(exporter::OutputBuffer& out, T value) {
  char* p = reinterpret_cast<char*>(out.Ensure(32));
  const auto r = std::to_chars(p, p + 32, value);
  out.Advance(static_cast<std::size_t>(r.ptr - p));
}

}  // namespace

// One JSON object: {"field":value,...}. Integers are numbers, bools true/false, enums their
// label (a number when no label matches), floats numbers (null when not finite), strings JSON
// strings (invalid UTF-8 repaired), byte fields lowercase hex strings.
void TraceTables::AppendFields(const reader::Event& event, const ClassText& text) {
  static constexpr char kHex[] = "0123456789abcdef";
  exporter::OutputBuffer& out = fields_;
  out.Clear();
  out.Put('{');
  bool first = true;
  for (std::size_t i = 0; i < event.field_count(); ++i) {
    if (text.keys[i].empty()) continue;
    if (!first) out.Put(',');
    first = false;
    out.Append(text.keys[i]);
    const reader::FieldValue f = event.field(i);
    switch (f.type()) {
      case reader::FieldType::kSigned:
        AppendNumber(out, f.AsInt64());
        break;
      case reader::FieldType::kUnsigned:
        AppendNumber(out, f.AsUint64());
        break;
      case reader::FieldType::kBool:
        out.Append(f.AsBool() ? std::string_view("true") : std::string_view("false"));
        break;
      case reader::FieldType::kEnum: {
        const std::int64_t v = f.info().is_signed ? f.AsInt64() : static_cast<std::int64_t>(f.AsUint64());
        const std::string_view label = f.info().LabelFor(v);
        if (label.empty())
          AppendNumber(out, v);
        else
          exporter::AppendJsonString(out, label);
        break;
      }
      case reader::FieldType::kFloat: {
        const double d = f.AsDouble();
        if (std::isfinite(d))
          AppendNumber(out, d);
        else
          out.Append(std::string_view("null"));
        break;
      }
      case reader::FieldType::kString:
        exporter::AppendJsonString(out, f.AsString());
        break;
      case reader::FieldType::kBytes: {
        const std::span<const std::uint8_t> b = f.AsBytes();
        std::uint8_t* p = out.Ensure(b.size() * 2 + 2);
        *p++ = '"';
        for (const std::uint8_t c : b) {
          *p++ = static_cast<std::uint8_t>(kHex[c >> 4]);
          *p++ = static_cast<std::uint8_t>(kHex[c & 15]);
        }
        *p++ = '"';
        out.Advance(b.size() * 2 + 2);
        break;
      }
    }
  }
  out.Put('}');
}

bool TraceTables::Add(const reader::Event& event) {
  if (!ok_) return false;
  const std::int64_t ns = clock_.Convert(event.timestamp());
  return EventRow(event, ns) && Timeline(event);
}

bool TraceTables::AddEventRow(const reader::Event& event) {
  return ok_ && EventRow(event, row_clock_.Convert(event.timestamp()));
}

bool TraceTables::AddToTimeline(const reader::Event& event) {
  return ok_ && Timeline(event);
}

bool TraceTables::EventRow(const reader::Event& event, std::int64_t ns) {
  // The processes row counts the `events` rows; their order may not be time's (AddEventRow).
  first_ns_ = events_ == 0 ? ns : std::min(first_ns_, ns);
  last_ns_ = events_ == 0 ? ns : std::max(last_ns_, ns);
  ++events_;
  const ClassText& text = classes_[event.event_class().index];
  AppendFields(event, text);
  Value v[9];
  Common(v);
  v[3].i = event.tid();
  v[4].i = ns;
  v[5].s = text.provider;
  v[6].s = text.name;
  v[7].s = reader::EventKindName(event.event_class().kind);
  v[8].s = std::string_view(reinterpret_cast<const char*>(fields_.data()), fields_.size());
  return Emit(TableId::kEvents, std::span<const Value>(v, 9));
}

bool TraceTables::Timeline(const reader::Event& event) {
  builder_->Add(event);  // spans, sched slices, counters through Slices
  return ok_;
}

bool TraceTables::Finish() {
  if (!builder_->Finish() || !ok_) return false;
  std::map<std::uint32_t, std::string> threads = slices_->threads();
  for (const reader::ThreadInfo& t : trace_.threads())
    if (threads.find(t.tid) == threads.end()) threads[t.tid] = t.name;
  for (const auto& [tid, name] : threads) {
    const std::string valid = exporter::ToValidUtf8(name);
    Value v[5];
    Common(v);
    v[3].i = tid;
    v[4].s = valid;
    if (!Emit(TableId::kThreads, std::span<const Value>(v, 5))) return false;
  }
  for (const reader::StreamInfo& s : trace_.streams()) {
    Value v[10];
    Common(v);
    v[3].i = s.index;
    v[4].i = trace_.ToEpochNs(s.timestamp_begin);
    v[5].i = trace_.ToEpochNs(s.timestamp_end);
    v[6].i = static_cast<std::int64_t>(s.DiscardedOnly());
    v[7].i = static_cast<std::int64_t>(s.events_overwritten);
    v[8].i = static_cast<std::int64_t>(s.lost_packets);
    v[9].i = s.truncated ? 1 : 0;
    if (!Emit(TableId::kLosses, std::span<const Value>(v, 10))) return false;
  }
  const std::string command = exporter::ToValidUtf8(trace_.procname());
  const std::string clock = exporter::ToValidUtf8(trace_.metadata().clock.name);
  const std::string dir = exporter::ToValidUtf8(trace_.dir());
  Value v[11];
  Common(v);
  v[3].s = command;
  v[4].s = clock;
  v[5].i = static_cast<std::int64_t>(trace_.metadata().clock.freq);
  v[6].i = first_ns_;
  v[7].i = last_ns_;
  v[8].i = static_cast<std::int64_t>(events_);
  v[9].i = static_cast<std::int64_t>(trace_.bytes_on_disk());
  v[10].s = dir;
  return Emit(TableId::kProcesses, std::span<const Value>(v, 11));
}

}  // namespace hush::sql
