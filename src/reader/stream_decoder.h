// Decoding of stream_N files (docs/format.md, section 3): packet headers at fixed offsets, compact
// and extended event headers, event payloads described by the metadata.
//
// Stream files are mapped read-only; a StreamCursor walks one of them event by event, so memory
// does not depend on the trace size. Every read is bounds-checked against the packet's content
// end (the file end for a truncated last packet).
#ifndef HUSHTRACE_SRC_READER_STREAM_DECODER_H_
#define HUSHTRACE_SRC_READER_STREAM_DECODER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/unique_fd.h"
#include "hushtrace/reader.h"
#include "format/packet.h"
#include "reader/metadata_parser.h"

namespace hush::reader::internal {

using format::kCtfMagic;
inline constexpr std::uint64_t kPacketHeaderBytes = format::kPacketHeaderSize;
// The writer's packets are at most 1 MiB; anything above this is corruption, not a big packet.
inline constexpr std::uint64_t kMaxPacketBytes = std::uint64_t{256} << 20;

// A read-only mapping of a whole file (nothing mapped for an empty file).
class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  // Maps `path` read-only. `fd` (optional) receives the open descriptor, which is otherwise
  // closed once the file is mapped (Trace::Open reads packet headers through it).
  bool Open(const std::string& path, std::string* error, base::UniqueFd* fd = nullptr);
  // Drops the pages of [begin, end) from this process (they are re-read from the file if touched
  // again), so that resident memory does not grow with the trace size.
  void Release(std::uint64_t begin, std::uint64_t end) const;
  const std::uint8_t* data() const { return data_; }
  std::uint64_t size() const { return size_; }

 private:
  const std::uint8_t* data_ = nullptr;
  std::uint64_t size_ = 0;
};

struct PacketInfo {
  std::uint64_t offset = 0;       // of the packet header in the file
  std::uint64_t content_end = 0;  // absolute; clamped to the file size when truncated
  std::uint64_t packet_end = 0;   // absolute offset of the next packet
  std::uint64_t ts_begin = 0, ts_end = 0, seq = 0, discarded = 0, overwritten = 0;
  std::uint32_t vpid = 0, vtid = 0;
  std::string_view thread_name;   // into the mapping
  bool truncated = false;         // the file ends inside this packet
};

enum class PacketStatus {
  kOk,
  kTruncated,        // usable, but the file ends inside the packet (message says where)
  kTruncatedHeader,  // the file ends inside the packet header: nothing usable
  kError,
};

// Reads and checks the packet header at `offset` (< file size).
PacketStatus ReadPacketHeader(const MappedFile& file, const std::string& path, std::uint64_t offset,
                              const ParsedMetadata& metadata, PacketInfo* info, std::string* message);
// The same check on a copy of the header's bytes: `header` holds the min(kPacketHeaderBytes,
// file_size - offset) bytes of the file at `offset`; info->thread_name points into it. Trace::Open
// reads headers with pread() into such a copy: one fault per packet on the mapping cost ~50 us
// each on a VM (2 ms for a 40 MB stream of 39 packets), a pread ~2 us.
PacketStatus CheckPacketHeader(const std::uint8_t* header, std::uint64_t file_size,
                               const std::string& path, std::uint64_t offset,
                               const ParsedMetadata& metadata, PacketInfo* info, std::string* message);

// Event id -> class, shared read-only by all cursors.
class ClassTable {
 public:
  explicit ClassTable(const Metadata& metadata);
  const EventClass* Find(std::uint32_t id) const {
    if (id < small_.size()) return small_[id];
    auto it = large_.find(id);
    return it == large_.end() ? nullptr : it->second;
  }
  std::size_t max_fields() const { return max_fields_; }

 private:
  std::vector<const EventClass*> small_;  // ids < 256
  std::unordered_map<std::uint32_t, const EventClass*> large_;
  std::size_t max_fields_ = 0;
};

struct StreamSource {
  std::string path;
  std::uint32_t index = 0;
  MappedFile file;
};

class StreamCursor {
 public:
  enum class State { kEvent, kEnd, kError };
  StreamCursor(const ParsedMetadata* metadata, const ClassTable* classes, const StreamSource* source);
  // Decodes the next event. kError: *error names the file and byte offset.
  State Advance(std::string* error);
  const Event& event() const { return event_; }
  std::uint32_t stream_index() const { return source_->index; }

 private:
  enum class Decode { kOk, kDamaged, kError };
  Decode DecodeEvent(std::string* error);
  std::string Where(std::uint64_t offset) const;

  const ParsedMetadata* metadata_;
  const ClassTable* classes_;
  const StreamSource* source_;
  std::uint64_t next_packet_ = 0;
  std::uint64_t released_ = 0;  // pages before this offset were given back
  bool in_packet_ = false;
  bool done_ = false;
  PacketInfo packet_;
  std::uint64_t pos_ = 0;
  std::uint64_t prev_ts_ = 0;
  std::vector<FieldSlot> slots_;
  Event event_;
};

// Everything Trace::Open found; shared by the iterators.
struct TraceData {
  std::string dir;
  ParsedMetadata parsed;
  std::unique_ptr<ClassTable> classes;
  std::vector<std::unique_ptr<StreamSource>> sources;  // ordered by index
  std::vector<StreamInfo> streams;
  std::vector<ThreadInfo> threads;
  std::vector<std::string> warnings;
  std::uint64_t bytes_on_disk = 0;
  std::uint64_t packets = 0;
};

}  // namespace hush::reader::internal

#endif  // HUSHTRACE_SRC_READER_STREAM_DECODER_H_
