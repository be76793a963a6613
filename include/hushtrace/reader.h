// Reading hushtrace traces (docs/format.md, docs/reader.md).
//
//   std::string error;
//   auto trace = hush::reader::Trace::Open("/tmp/trace", &error);   // nullptr + error on failure
//   if (!trace) { ... }
//   for (const std::string& w : trace->warnings()) ...             // e.g. truncated last packet
//   hush::reader::EventIterator it(*trace);
//   while (it.Next()) {
//     const hush::reader::Event& e = it.event();
//     std::int64_t ns = trace->ToEpochNs(e.timestamp());
//     if (auto path = e.GetString("path")) ...
//   }
//   if (!it.error().empty()) ...                                    // bad data met while decoding
//
// Events of all streams come out in timestamp order (a streaming k-way merge over memory-mapped
// stream files: memory does not grow with the trace). An Event and the views it hands out (strings,
// bytes) stay valid until the next call to Next() of its iterator; a Trace must outlive its
// iterators. A Trace may be read by several iterators, each from one thread at a time.
//
// Errors (bad magic, packet sizes out of range, unknown event ids, metadata syntax errors, strings
// without their NUL...) name the file and the byte offset. A truncated last packet (writer killed)
// is not an error: its complete events are returned and Trace::warnings() describes the damage.
#ifndef HUSHTRACE_READER_H_
#define HUSHTRACE_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hush::reader {

namespace internal {
class StreamCursor;
struct TraceData;
}  // namespace internal

enum class FieldType : std::uint8_t {
  kSigned,    // intN_t
  kUnsigned,  // uintN_t
  kBool,      // enum : uint8_t { false = 0, true = 1 }
  kEnum,      // any other enum, e.g. a span's phase { begin = 0, end = 1 }; labels in FieldInfo
  kFloat,     // floating_point: size 4 (float) or 8 (double)
  kString,    // NUL-terminated
  kBytes,     // uint8_t sequence (length in an earlier field) or fixed-size uint8_t array
};
const char* FieldTypeName(FieldType type);

struct EnumLabel {
  std::string name;
  std::int64_t first = 0;
  std::int64_t last = 0;  // inclusive
};

struct FieldInfo {
  std::string name;
  FieldType type = FieldType::kUnsigned;
  std::uint32_t size = 0;   // bytes of fixed-size fields (integers, enums, floats, arrays); else 0
  std::uint32_t align = 1;  // bytes
  bool is_signed = false;   // integers and enum containers
  bool hidden = false;      // the length field of a sequence (shown as part of the sequence)
  int length_field = -1;    // kBytes sequences: index of the length field in EventClass::fields
  std::vector<EnumLabel> labels;  // kBool, kEnum
  // The label of an enum value, or "" when none matches.
  std::string_view LabelFor(std::int64_t value) const;
};

enum class EventKind : std::uint8_t { kEvent, kSpan, kInstant, kCounter, kUnknown };
const char* EventKindName(EventKind kind);

struct EventClass {
  std::string name;  // "provider:name"
  std::uint32_t id = 0;
  std::size_t index = 0;  // position in Metadata::events
  EventKind kind = EventKind::kUnknown;
  std::string kind_name;  // model.emf.uri as written
  std::int64_t loglevel = -1;
  std::vector<FieldInfo> fields;
  std::uint32_t payload_align = 1;  // alignment of the payload struct, bytes
  int FieldIndex(std::string_view name) const;  // -1 when absent
};

struct ClockInfo {
  std::string name;
  std::string uuid;
  std::string description;
  std::uint64_t freq = 1000000000;  // Hz
  std::uint64_t precision = 0;
  std::int64_t offset_s = 0;
  std::int64_t offset = 0;  // cycles
  bool absolute = false;
};

struct Metadata {
  std::string uuid;                                         // trace uuid, textual; may be empty
  std::vector<std::pair<std::string, std::string>> env;     // strings unquoted, numbers in decimal
  ClockInfo clock;
  std::vector<EventClass> events;  // in metadata order
  std::string_view Env(std::string_view key) const;         // "" when absent
  const EventClass* FindById(std::uint32_t id) const;
};

struct StreamInfo {
  std::string path;          // DIR/stream_N
  std::uint32_t index = 0;   // N
  std::uint64_t file_bytes = 0;
  std::uint64_t packets = 0;
  std::uint64_t lost_packets = 0;  // gaps in packet_seq_num
  // Cumulative counts from the last packet context: events_discarded counts every lost event
  // (overwritten included), events_overwritten the flight-mode overwrites alone.
  std::uint64_t events_discarded = 0;
  std::uint64_t events_overwritten = 0;
  std::uint64_t timestamp_begin = 0;  // of the first packet
  std::uint64_t timestamp_end = 0;    // of the last packet
  bool truncated = false;             // the last packet is cut short
  std::uint64_t DiscardedOnly() const {
    return events_discarded > events_overwritten ? events_discarded - events_overwritten : 0;
  }
};

struct ThreadInfo {
  std::uint32_t tid = 0;
  std::string name;  // the last name seen in a packet context
  std::uint64_t packets = 0;
  std::vector<std::uint32_t> streams;  // stream indexes (N) that carried its packets
};

// One decoded field of an event; a view into the trace's memory.
class FieldValue {
 public:
  FieldValue(const FieldInfo* info, const std::uint8_t* data, std::uint32_t size)
      : info_(info), data_(data), size_(size) {}
  const FieldInfo& info() const { return *info_; }
  FieldType type() const { return info_->type; }
  // Integers, bools and enums (unsigned values above INT64_MAX wrap); floats are truncated and
  // saturated at the type's bounds (NaN: 0).
  std::int64_t AsInt64() const;
  std::uint64_t AsUint64() const;
  double AsDouble() const;            // any numeric field
  bool AsBool() const;                // numeric != 0
  std::string_view AsString() const;  // kString (without the NUL); "" for other types
  std::span<const std::uint8_t> AsBytes() const;  // kBytes; raw bytes of other types
  bool IsNumeric() const { return type() != FieldType::kString && type() != FieldType::kBytes; }

 private:
  const FieldInfo* info_;
  const std::uint8_t* data_;
  std::uint32_t size_;
};

struct FieldSlot {
  std::uint32_t offset;  // from the event's first byte
  std::uint32_t size;    // strings: without the NUL
};

// An event: valid until the next EventIterator::Next().
class Event {
 public:
  const EventClass& event_class() const { return *class_; }
  const std::string& name() const { return class_->name; }
  std::uint64_t timestamp() const { return timestamp_; }  // clock cycles (see Trace::ToEpochNs)
  std::uint32_t tid() const { return tid_; }
  std::string_view thread_name() const { return thread_name_; }
  std::uint32_t stream() const { return stream_; }       // N of stream_N
  std::uint64_t file_offset() const { return offset_; }  // of the event header in stream_N
  std::size_t field_count() const { return class_->fields.size(); }
  FieldValue field(std::size_t i) const {
    return FieldValue(&class_->fields[i], data_ + slots_[i].offset, slots_[i].size);
  }
  std::optional<FieldValue> Find(std::string_view name) const;
  // Typed access by name: nullopt when the field is absent or of an incompatible type.
  std::optional<std::int64_t> GetInt64(std::string_view name) const;    // integers, bool, enum
  std::optional<std::uint64_t> GetUint64(std::string_view name) const;  // integers >= 0, bool, enum
  std::optional<double> GetDouble(std::string_view name) const;         // any numeric field
  std::optional<bool> GetBool(std::string_view name) const;             // bool and integers
  std::optional<std::string_view> GetString(std::string_view name) const;
  std::optional<std::span<const std::uint8_t>> GetBytes(std::string_view name) const;

 private:
  friend class internal::StreamCursor;
  const EventClass* class_ = nullptr;
  const std::uint8_t* data_ = nullptr;
  const FieldSlot* slots_ = nullptr;
  std::uint64_t timestamp_ = 0;
  std::uint64_t offset_ = 0;
  std::uint32_t tid_ = 0;
  std::uint32_t stream_ = 0;
  std::string_view thread_name_;
};

class EventIterator;

class Trace {
 public:
  // Parses DIR/metadata, maps every DIR/stream_N and checks their packet headers.
  static std::unique_ptr<Trace> Open(const std::string& dir, std::string* error);
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  const std::string& dir() const;
  const Metadata& metadata() const;
  const std::vector<StreamInfo>& streams() const;  // ordered by N
  const std::vector<ThreadInfo>& threads() const;  // ordered by tid
  const std::vector<std::string>& warnings() const;  // non-fatal damage (truncated packets)
  std::uint64_t bytes_on_disk() const;  // metadata + stream files
  std::uint64_t packets() const;
  std::uint64_t events_discarded() const;    // all streams, overwritten included
  std::uint64_t events_overwritten() const;  // all streams

  std::uint32_t pid() const;              // env.vpid (0 when absent)
  std::string_view procname() const;      // env.procname
  std::string_view hostname() const;      // env.hostname
  // ns since the epoch: offset_s * 1e9 + (offset + cycles) * 1e9 / freq (exact, 128-bit).
  std::int64_t ToEpochNs(std::uint64_t cycles) const;
  // A duration in cycles to ns.
  std::int64_t CyclesToNs(std::int64_t cycles) const;

 private:
  friend class EventIterator;
  Trace();
  std::unique_ptr<internal::TraceData> data_;
};

// Events of all streams in timestamp order (ties: lower stream index first, then file order).
class EventIterator {
 public:
  explicit EventIterator(const Trace& trace);
  // The events of the streams whose index N is listed (others and unknown indexes ignored),
  // merged the same way: e.g. one thread's events, stream by stream.
  EventIterator(const Trace& trace, std::span<const std::uint32_t> streams);
  ~EventIterator();
  EventIterator(const EventIterator&) = delete;
  EventIterator& operator=(const EventIterator&) = delete;

  // Moves to the next event. False at the end or on bad data (then error() says what and where).
  bool Next();
  // The current event: only meaningful after Next() returned true.
  const Event& event() const;
  const std::string& error() const;
  std::uint64_t events_read() const;

  // Keep going past bad data: a stream whose data is damaged ends at the damage (its events
  // before it have been returned), its message goes to skipped(), and the other streams are
  // read to their end; error() stays empty. Call before the first Next().
  void SkipDamagedStreams();
  // The streams ended early in that mode: "DIR/stream_N: byte X: what", in the order met.
  const std::vector<std::string>& skipped() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hush::reader

#endif  // HUSHTRACE_READER_H_
