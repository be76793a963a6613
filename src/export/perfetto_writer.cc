// PerfettoWriter: timeline -> perfetto.protos.Trace wire format (see perfetto_writer.h).
// Field numbers from the public perfetto protos (protos/perfetto/trace/...): trace_packet.proto,
// track_event/track_event.proto, track_descriptor.proto, debug_annotation.proto,
// interned_data/interned_data.proto; tests/export/perfetto_subset.proto mirrors them.
#include "export/perfetto_writer.h"

#include <cstring>

#include "export/text_escape.h"

namespace hush::exporter {
namespace {

namespace trace {
constexpr std::uint32_t kPacket = 1;
}
namespace packet {
constexpr std::uint32_t kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12,
                        kSequenceFlags = 13, kTrackDescriptor = 60;
constexpr std::uint64_t kIncrementalStateCleared = 1, kNeedsIncrementalState = 2;
}  // namespace packet
namespace track_descriptor {
constexpr std::uint32_t kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kParentUuid = 5,
                        kCounter = 8;
}
namespace process_descriptor {
constexpr std::uint32_t kPid = 1, kProcessName = 6;
}
namespace thread_descriptor {
constexpr std::uint32_t kPid = 1, kTid = 2, kThreadName = 5;
}
namespace track_event {
constexpr std::uint32_t kCategoryIids = 3, kDebugAnnotations = 4, kType = 9, kNameIid = 10,
                        kTrackUuid = 11, kDoubleCounterValue = 44;
constexpr std::uint32_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4;
}  // namespace track_event
namespace interned {
constexpr std::uint32_t kEventCategories = 1, kEventNames = 2, kDebugAnnotationNames = 3;
constexpr std::uint32_t kIid = 1, kName = 2;  // EventCategory, EventName, DebugAnnotationName
}  // namespace interned
namespace annotation {
constexpr std::uint32_t kNameIid = 1, kBoolValue = 2, kUintValue = 3, kIntValue = 4,
                        kDoubleValue = 5, kStringValue = 6;
}

// True (and marks it) the first time `id` is seen.
inline bool FirstUse(std::vector<std::uint8_t>& sent, std::uint32_t id) {
  if (id < sent.size() && sent[id] != 0) [[likely]]
    return false;
  if (id >= sent.size()) sent.resize(std::size_t{id} * 2 + 16, 0);
  sent[id] = 1;
  return true;
}

}  // namespace

void PerfettoWriter::StringField(std::uint32_t field, std::string_view s) {
  if (IsValidUtf8(s)) [[likely]] {
    enc_.String(field, s);
  } else {
    enc_.String(field, ToValidUtf8(s));
  }
}

void PerfettoWriter::Process(const ProcessInfo& process) {
  pid_ = process.pid;
  const std::size_t pkt = enc_.BeginNested(trace::kPacket);
  enc_.Varint(packet::kSequenceId, 1);
  enc_.Varint(packet::kSequenceFlags, packet::kIncrementalStateCleared);
  const std::size_t td = enc_.BeginNested(packet::kTrackDescriptor);
  enc_.Varint(track_descriptor::kUuid, ProcessUuid(pid_));
  const std::size_t pd = enc_.BeginNested(track_descriptor::kProcess);
  enc_.Int(process_descriptor::kPid, static_cast<std::int32_t>(pid_));
  if (!process.name.empty()) StringField(process_descriptor::kProcessName, process.name);
  enc_.EndNested(pd);
  enc_.EndNested(td);
  enc_.EndNested(pkt);
}

void PerfettoWriter::ThreadDescriptor(std::uint32_t tid, std::string_view name) {
  const std::size_t pkt = enc_.BeginNested(trace::kPacket);
  enc_.Varint(packet::kSequenceId, 1);
  const std::size_t td = enc_.BeginNested(packet::kTrackDescriptor);
  enc_.Varint(track_descriptor::kUuid, ThreadUuid(tid));
  enc_.Varint(track_descriptor::kParentUuid, ProcessUuid(pid_));
  const std::size_t thd = enc_.BeginNested(track_descriptor::kThread);
  enc_.Int(thread_descriptor::kPid, static_cast<std::int32_t>(pid_));
  enc_.Int(thread_descriptor::kTid, static_cast<std::int32_t>(tid));
  if (!name.empty()) StringField(thread_descriptor::kThreadName, name);
  enc_.EndNested(thd);
  enc_.EndNested(td);
  enc_.EndNested(pkt);
}

void PerfettoWriter::Thread(std::uint32_t tid, std::string_view name) {
  ThreadDescriptor(tid, name);
  out_.MaybeFlush();
}

void PerfettoWriter::CounterTrack(std::uint32_t counter, Name name, Name category) {
  (void)category;
  const std::size_t pkt = enc_.BeginNested(trace::kPacket);
  enc_.Varint(packet::kSequenceId, 1);
  const std::size_t td = enc_.BeginNested(packet::kTrackDescriptor);
  enc_.Varint(track_descriptor::kUuid, CounterUuid(counter));
  enc_.Varint(track_descriptor::kParentUuid, ProcessUuid(pid_));
  StringField(track_descriptor::kName, name.text);
  enc_.EndNested(enc_.BeginNested(track_descriptor::kCounter));  // an empty CounterDescriptor
  enc_.EndNested(td);
  enc_.EndNested(pkt);
}

std::uint64_t PerfettoWriter::TrackUuid(Track track) {
  switch (track.kind) {
    case TrackKind::kThread:
      return ThreadUuid(track.id);
    case TrackKind::kCounter:
      return CounterUuid(track.id);
    case TrackKind::kSched:
      break;
  }
  bool& declared = sched_declared_[track.id];
  if (!declared) {
    declared = true;
    const std::size_t pkt = enc_.BeginNested(trace::kPacket);
    enc_.Varint(packet::kSequenceId, 1);
    const std::size_t td = enc_.BeginNested(packet::kTrackDescriptor);
    enc_.Varint(track_descriptor::kUuid, SchedUuid(track.id));
    enc_.Varint(track_descriptor::kParentUuid, ThreadUuid(track.id));
    enc_.String(track_descriptor::kName, "running");
    enc_.EndNested(td);
    enc_.EndNested(pkt);
  }
  return SchedUuid(track.id);
}

// A packet whose names are all interned already, in one pass over a raw cursor (no per-field
// buffer checks). Lengths take one byte when the packet's size bound is below 128, else two
// (a non-minimal varint, as in proto_encoder.h). False, with nothing written, when a string needs
// UTF-8 repair or the packet could reach 16 KiB: Event() then takes the general path.
//   0x0a len | 0x40 ts | 0x50 01 | 0x68 02 | 0x5a len { [0x18 cat] [0x50 name] 0x48 type 0x58 uuid
//                                                      [0xe1 0x02 f64] [0x22 len { 0x08 iid value
//                                                      }]... }
bool PerfettoWriter::FastEvent(std::int64_t ns, std::uint32_t type, std::uint64_t uuid,
                               const Name* name, const Name* category, std::span<const Arg> args,
                               const double* counter_value) {
  using proto::PutVarint;
  constexpr std::size_t kFixedBound = 2 + 11 + 2 + 2 + 2 + 6 + 6 + 2 + 11 + 10;
  constexpr std::size_t kArgBound = 1 + 2 + 1 + 5 + 1 + 2;  // + the value's payload
  constexpr std::size_t kOneByte = 127, kTwoBytes = (1u << 14) - 1;
  auto payload = [](const Arg& a) -> std::size_t {
    return a.type == Arg::Type::kString  ? a.s.size()
           : a.type == Arg::Type::kBytes ? a.bytes.size() * 2
                                         : 10;
  };
  std::size_t bound = kFixedBound;
  for (const Arg& a : args) {
    if (a.type == Arg::Type::kString && !IsValidUtf8(a.s)) return false;
    bound += kArgBound + payload(a);
  }
  if (bound > kTwoBytes) return false;
  const std::size_t width = bound > kOneByte ? 2 : 1;
  auto put_len = [](std::uint8_t* at, std::size_t w, std::size_t len) {
    if (w == 1) {
      at[0] = static_cast<std::uint8_t>(len);
    } else {
      at[0] = static_cast<std::uint8_t>(len | 0x80);
      at[1] = static_cast<std::uint8_t>(len >> 7);
    }
  };

  std::uint8_t* const start = out_.Ensure(bound);
  std::uint8_t* p = start;
  *p++ = trace::kPacket << 3 | proto::kLengthDelimited;
  std::uint8_t* const packet_len = p;
  p += width;
  *p++ = packet::kTimestamp << 3 | proto::kVarint;
  p = PutVarint(p, static_cast<std::uint64_t>(ns));
  *p++ = packet::kSequenceId << 3 | proto::kVarint;
  *p++ = 1;
  *p++ = packet::kSequenceFlags << 3 | proto::kVarint;
  *p++ = packet::kNeedsIncrementalState;
  *p++ = packet::kTrackEvent << 3 | proto::kLengthDelimited;
  std::uint8_t* const event_len = p;
  p += width;
  if (category != nullptr) {
    *p++ = track_event::kCategoryIids << 3 | proto::kVarint;
    p = PutVarint(p, category->id + 1);
  }
  if (name != nullptr) {
    *p++ = track_event::kNameIid << 3 | proto::kVarint;
    p = PutVarint(p, name->id + 1);
  }
  *p++ = track_event::kType << 3 | proto::kVarint;
  *p++ = static_cast<std::uint8_t>(type);
  *p++ = track_event::kTrackUuid << 3 | proto::kVarint;
  p = PutVarint(p, uuid);
  if (counter_value != nullptr) {
    p = PutVarint(p, track_event::kDoubleCounterValue << 3 | proto::kFixed64);
    std::memcpy(p, counter_value, 8);
    p += 8;
  }
  for (const Arg& a : args) {
    *p++ = track_event::kDebugAnnotations << 3 | proto::kLengthDelimited;
    const std::size_t aw = kArgBound + payload(a) > kOneByte ? 2 : 1;
    std::uint8_t* const arg_len = p;
    p += aw;
    *p++ = annotation::kNameIid << 3 | proto::kVarint;
    p = PutVarint(p, a.name.id + 1);
    switch (a.type) {
      case Arg::Type::kInt:
        *p++ = annotation::kIntValue << 3 | proto::kVarint;
        p = PutVarint(p, static_cast<std::uint64_t>(a.i));
        break;
      case Arg::Type::kUint:
        *p++ = annotation::kUintValue << 3 | proto::kVarint;
        p = PutVarint(p, a.u);
        break;
      case Arg::Type::kBool:
        *p++ = annotation::kBoolValue << 3 | proto::kVarint;
        *p++ = a.u != 0;
        break;
      case Arg::Type::kDouble:
        *p++ = annotation::kDoubleValue << 3 | proto::kFixed64;
        std::memcpy(p, &a.d, 8);
        p += 8;
        break;
      case Arg::Type::kString:
        *p++ = annotation::kStringValue << 3 | proto::kLengthDelimited;
        p = PutVarint(p, a.s.size());
        std::memcpy(p, a.s.data(), a.s.size());
        p += a.s.size();
        break;
      case Arg::Type::kBytes: {
        static constexpr char kHex[] = "0123456789abcdef";
        *p++ = annotation::kStringValue << 3 | proto::kLengthDelimited;
        p = PutVarint(p, a.bytes.size() * 2);
        for (const std::uint8_t b : a.bytes) {
          *p++ = static_cast<std::uint8_t>(kHex[b >> 4]);
          *p++ = static_cast<std::uint8_t>(kHex[b & 15]);
        }
        break;
      }
    }
    put_len(arg_len, aw, static_cast<std::size_t>(p - arg_len) - aw);
  }
  put_len(event_len, width, static_cast<std::size_t>(p - event_len) - width);
  put_len(packet_len, width, static_cast<std::size_t>(p - packet_len) - width);
  out_.Advance(static_cast<std::size_t>(p - start));
  out_.MaybeFlush();
  return true;
}

void PerfettoWriter::Event(std::int64_t ns, std::uint32_t type, Track track, const Name* name,
                           const Name* category, std::span<const Arg> args,
                           const double* counter_value) {
  const std::uint64_t uuid = TrackUuid(track);
  const bool new_name = name != nullptr && FirstUse(name_sent_, name->id);
  const bool new_category = category != nullptr && FirstUse(category_sent_, category->id);
  bool new_arg = false;
  for (const Arg& a : args) new_arg |= a.name.id >= arg_sent_.size() || arg_sent_[a.name.id] == 0;
  if (!new_name && !new_category && !new_arg &&
      FastEvent(ns, type, uuid, name, category, args, counter_value)) [[likely]] {
    return;
  }
  const std::size_t pkt = enc_.BeginNested(trace::kPacket);
  enc_.Varint(packet::kTimestamp, static_cast<std::uint64_t>(ns));
  enc_.Varint(packet::kSequenceId, 1);
  if (new_name || new_category || new_arg) {
    const std::size_t in = enc_.BeginNested(packet::kInternedData);
    if (new_category) {
      const std::size_t m = enc_.BeginNested(interned::kEventCategories);
      enc_.Varint(interned::kIid, category->id + 1);
      StringField(interned::kName, category->text);
      enc_.EndNested(m);
    }
    if (new_name) {
      const std::size_t m = enc_.BeginNested(interned::kEventNames);
      enc_.Varint(interned::kIid, name->id + 1);
      StringField(interned::kName, name->text);
      enc_.EndNested(m);
    }
    for (const Arg& a : args) {
      if (!FirstUse(arg_sent_, a.name.id)) continue;
      const std::size_t m = enc_.BeginNested(interned::kDebugAnnotationNames);
      enc_.Varint(interned::kIid, a.name.id + 1);
      StringField(interned::kName, a.name.text);
      enc_.EndNested(m);
    }
    enc_.EndNested(in);
  }
  enc_.Varint(packet::kSequenceFlags, packet::kNeedsIncrementalState);
  const std::size_t te = enc_.BeginNested(packet::kTrackEvent);
  if (category != nullptr) enc_.Varint(track_event::kCategoryIids, category->id + 1);
  if (name != nullptr) enc_.Varint(track_event::kNameIid, name->id + 1);
  enc_.Varint(track_event::kType, type);
  enc_.Varint(track_event::kTrackUuid, uuid);
  if (counter_value != nullptr) enc_.Double(track_event::kDoubleCounterValue, *counter_value);
  for (const Arg& a : args) {
    const std::size_t da = enc_.BeginNested(track_event::kDebugAnnotations);
    enc_.Varint(annotation::kNameIid, a.name.id + 1);
    switch (a.type) {
      case Arg::Type::kInt:
        enc_.Int(annotation::kIntValue, a.i);
        break;
      case Arg::Type::kUint:
        enc_.Varint(annotation::kUintValue, a.u);
        break;
      case Arg::Type::kBool:
        enc_.Varint(annotation::kBoolValue, a.u != 0);
        break;
      case Arg::Type::kDouble:
        enc_.Double(annotation::kDoubleValue, a.d);
        break;
      case Arg::Type::kString:
        StringField(annotation::kStringValue, a.s);
        break;
      case Arg::Type::kBytes: {
        static constexpr char kHex[] = "0123456789abcdef";
        std::string hex;
        hex.reserve(a.bytes.size() * 2);
        for (const std::uint8_t b : a.bytes) {
          hex.push_back(kHex[b >> 4]);
          hex.push_back(kHex[b & 15]);
        }
        enc_.String(annotation::kStringValue, hex);
        break;
      }
    }
    enc_.EndNested(da);
  }
  enc_.EndNested(te);
  enc_.EndNested(pkt);
  out_.MaybeFlush();
}

void PerfettoWriter::SliceBegin(std::int64_t ns, Track track, Name name, Name category,
                                std::span<const Arg> args) {
  Event(ns, track_event::kSliceBegin, track, &name, &category, args, nullptr);
}

void PerfettoWriter::SliceEnd(std::int64_t ns, Track track, std::span<const Arg> args) {
  Event(ns, track_event::kSliceEnd, track, nullptr, nullptr, args, nullptr);
}

void PerfettoWriter::Instant(std::int64_t ns, Track track, Name name, Name category,
                             std::span<const Arg> args) {
  Event(ns, track_event::kInstant, track, &name, &category, args, nullptr);
}

void PerfettoWriter::CounterSample(std::int64_t ns, std::uint32_t counter, double value) {
  Event(ns, track_event::kCounter, Track{TrackKind::kCounter, counter}, nullptr, nullptr, {},
        &value);
}

bool PerfettoWriter::Finish() { return out_.Flush(); }

}  // namespace hush::exporter
