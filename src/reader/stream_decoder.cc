#include "reader/stream_decoder.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>

#include "base/unique_fd.h"
#include "format/packet.h"

namespace hush::reader::internal {
namespace {

namespace field = format::field;

static_assert(std::endian::native == std::endian::little, "the reader assumes a little-endian host");

template <typename T>
T Load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint64_t AlignUp(std::uint64_t v, std::uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

std::string At(const std::string& path, std::uint64_t offset) {
  return path + ": byte " + std::to_string(offset) + ": ";
}

}  // namespace

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

bool MappedFile::Open(const std::string& path, std::string* error, base::UniqueFd* fd_out) {
  // O_NONBLOCK: a FIFO must not block.
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file";
    return false;
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (p == MAP_FAILED) {
      *error = path + ": cannot map: " + std::strerror(errno);
      size_ = 0;
      return false;
    }
    ::madvise(p, size_, MADV_SEQUENTIAL);
    data_ = static_cast<const std::uint8_t*>(p);
  }
  if (fd_out != nullptr) *fd_out = std::move(fd);
  return true;
}

void MappedFile::Release(std::uint64_t begin, std::uint64_t end) const {
  static const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  begin = (begin + page - 1) / page * page;
  end = std::min(end, size_) / page * page;
  if (data_ == nullptr || end <= begin) return;
  ::madvise(const_cast<std::uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}

PacketStatus ReadPacketHeader(const MappedFile& file, const std::string& path, std::uint64_t offset,
                              const ParsedMetadata& metadata, PacketInfo* info, std::string* message) {
  return CheckPacketHeader(file.data() + offset, file.size(), path, offset, metadata, info, message);
}

PacketStatus CheckPacketHeader(const std::uint8_t* header, std::uint64_t file_size,
                               const std::string& path, std::uint64_t offset,
                               const ParsedMetadata& metadata, PacketInfo* info, std::string* message) {
  const std::uint64_t remaining = file_size - offset;
  if (remaining < kPacketHeaderBytes) {
    *message = At(path, offset) + "truncated packet header (" + std::to_string(remaining) + " of " +
               std::to_string(kPacketHeaderBytes) + " bytes); the file ends here";
    return PacketStatus::kTruncatedHeader;
  }
  const std::uint8_t* p = header;
  const auto magic = Load<std::uint32_t>(p);
  if (magic != kCtfMagic) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "bad packet magic 0x%08x (expected 0x%08x)", magic, kCtfMagic);
    *message = At(path, offset) + buf;
    return PacketStatus::kError;
  }
  if (metadata.has_uuid && std::memcmp(p + field::kUuid, metadata.uuid.data(), 16) != 0) {
    *message = At(path, offset + field::kUuid) + "packet uuid differs from the metadata's trace uuid";
    return PacketStatus::kError;
  }
  if (const auto stream_id = Load<std::uint32_t>(p + field::kStreamId); stream_id != 0) {
    *message = At(path, offset + field::kStreamId) + "unknown stream id " + std::to_string(stream_id);
    return PacketStatus::kError;
  }
  const auto content_bits = Load<std::uint64_t>(p + field::kContentSize);
  const auto packet_bits = Load<std::uint64_t>(p + field::kPacketSize);
  if (packet_bits % 8 != 0 || packet_bits / 8 < kPacketHeaderBytes || packet_bits / 8 > kMaxPacketBytes) {
    *message = At(path, offset + field::kPacketSize) + "packet_size " + std::to_string(packet_bits) +
               " bits out of range (" + std::to_string(kPacketHeaderBytes * 8) + " to " +
               std::to_string(kMaxPacketBytes * 8) + ", a multiple of 8)";
    return PacketStatus::kError;
  }
  if (content_bits % 8 != 0 || content_bits / 8 < kPacketHeaderBytes || content_bits > packet_bits) {
    *message = At(path, offset + field::kContentSize) + "content_size " + std::to_string(content_bits) +
               " bits out of range (" + std::to_string(kPacketHeaderBytes * 8) + " to packet_size " +
               std::to_string(packet_bits) + ", a multiple of 8)";
    return PacketStatus::kError;
  }
  info->offset = offset;
  info->ts_begin = Load<std::uint64_t>(p + field::kTsBegin);
  info->ts_end = Load<std::uint64_t>(p + field::kTsEnd);
  info->seq = Load<std::uint64_t>(p + field::kSeq);
  info->discarded = Load<std::uint64_t>(p + field::kDiscarded);
  info->overwritten = Load<std::uint64_t>(p + field::kOverwritten);
  info->vpid = Load<std::uint32_t>(p + field::kVpid);
  info->vtid = Load<std::uint32_t>(p + field::kVtid);
  info->thread_name = std::string_view(reinterpret_cast<const char*>(p + field::kThreadName),
                                       ::strnlen(reinterpret_cast<const char*>(p + field::kThreadName), 16));
  const std::uint64_t packet_bytes = packet_bits / 8;
  const std::uint64_t content_bytes = content_bits / 8;
  info->truncated = packet_bytes > remaining;
  info->content_end = offset + std::min(content_bytes, remaining);
  info->packet_end = offset + std::min(packet_bytes, remaining);
  if (!info->truncated) return PacketStatus::kOk;
  *message = At(path, offset) + "last packet truncated (" + std::to_string(remaining) + " of " +
             std::to_string(packet_bytes) + " bytes; the writer was probably killed): " +
             (content_bytes > remaining ? "the event cut at byte " + std::to_string(file_size) +
                                              " and any after it are lost"
                                        : std::string("no event lost"));
  return PacketStatus::kTruncated;
}

ClassTable::ClassTable(const Metadata& metadata) : small_(256, nullptr) {
  for (const EventClass& ec : metadata.events) {
    if (ec.id < small_.size()) {
      small_[ec.id] = &ec;
    } else {
      large_[ec.id] = &ec;
    }
    max_fields_ = std::max(max_fields_, ec.fields.size());
  }
}

StreamCursor::StreamCursor(const ParsedMetadata* metadata, const ClassTable* classes,
                           const StreamSource* source)
    : metadata_(metadata), classes_(classes), source_(source), slots_(classes->max_fields() + 1) {
  event_.stream_ = source->index;
}

std::string StreamCursor::Where(std::uint64_t offset) const { return At(source_->path, offset); }

StreamCursor::State StreamCursor::Advance(std::string* error) {
  for (;;) {
    if (done_) return State::kEnd;
    if (!in_packet_) {
      if (next_packet_ >= source_->file.size()) {
        done_ = true;
        return State::kEnd;
      }
      std::string message;
      const PacketStatus status =
          ReadPacketHeader(source_->file, source_->path, next_packet_, *metadata_, &packet_, &message);
      if (status == PacketStatus::kError) {
        *error = message;
        done_ = true;
        return State::kError;
      }
      if (status == PacketStatus::kTruncatedHeader) {  // reported by Trace::Open
        done_ = true;
        return State::kEnd;
      }
      if (packet_.offset - released_ >= (std::uint64_t{1} << 20)) {
        source_->file.Release(released_, packet_.offset);  // everything before this packet is done
        released_ = packet_.offset;
      }
      in_packet_ = true;
      pos_ = packet_.offset + kPacketHeaderBytes;
      prev_ts_ = packet_.ts_begin;
      next_packet_ = packet_.packet_end;
      event_.tid_ = packet_.vtid;
      event_.thread_name_ = packet_.thread_name;
    }
    if (pos_ >= packet_.content_end) {
      in_packet_ = false;
      if (packet_.truncated) done_ = true;
      continue;
    }
    switch (DecodeEvent(error)) {
      case Decode::kOk: return State::kEvent;
      case Decode::kDamaged:  // inside a truncated packet: reported by Trace::Open
        done_ = true;
        return State::kEnd;
      case Decode::kError: done_ = true; return State::kError;
    }
  }
}

StreamCursor::Decode StreamCursor::DecodeEvent(std::string* error) {
  const std::uint8_t* base = source_->file.data();
  const std::uint64_t end = packet_.content_end;
  const std::uint64_t start = pos_;
  // Running out of packet: damage in a truncated packet, an error in a complete one.
  auto overrun = [&](std::uint64_t at, const std::string& what) {
    if (packet_.truncated) return Decode::kDamaged;
    *error = Where(at) + what + " runs past the packet's content end (byte " + std::to_string(end) + ")";
    return Decode::kError;
  };
  format::EventHeader header;
  if (!format::DecodeEventHeader(base + start, end - start, prev_ts_, &header)) {
    const bool extended = end - start >= format::kCompactHeaderSize && base[start] == format::kExtendedId;
    return overrun(start, extended ? "extended event header" : "event header");
  }
  const std::uint32_t id = header.id;
  const std::uint64_t ts = header.timestamp;
  std::uint64_t q = start + header.size;
  const EventClass* ec = classes_->Find(id);
  if (ec == nullptr) {
    *error = Where(start) + "unknown event id " + std::to_string(id) + " (not in the metadata)";
    return Decode::kError;
  }
  const std::uint64_t packet_start = packet_.offset;
  q = packet_start + AlignUp(q - packet_start, ec->payload_align);
  for (std::size_t i = 0; i < ec->fields.size(); ++i) {
    const FieldInfo& f = ec->fields[i];
    q = packet_start + AlignUp(q - packet_start, f.align);
    if (q > end) return overrun(start, "field '" + f.name + "' of event " + ec->name);
    std::uint64_t size = f.size;
    std::uint64_t skip = 0;
    if (f.type == FieldType::kString) {
      const void* nul = std::memchr(base + q, 0, end - q);
      if (nul == nullptr) {
        if (packet_.truncated) return Decode::kDamaged;
        *error = Where(q) + "string field '" + f.name + "' of event " + ec->name +
                 " has no terminating NUL before the packet's content end (byte " +
                 std::to_string(end) + ")";
        return Decode::kError;
      }
      size = static_cast<const std::uint8_t*>(nul) - (base + q);
      skip = 1;
    } else if (f.type == FieldType::kBytes && f.length_field >= 0) {
      const std::size_t li = static_cast<std::size_t>(f.length_field);
      const FieldValue len(&ec->fields[li], base + start + slots_[li].offset, slots_[li].size);
      size = ec->fields[li].type == FieldType::kSigned
                 ? static_cast<std::uint64_t>(std::max<std::int64_t>(0, len.AsInt64()))
                 : len.AsUint64();
    }
    if (size > end - q || skip > end - q - size) {
      return overrun(q, "field '" + f.name + "' of event " + ec->name + " (" + std::to_string(size) +
                            " bytes)");
    }
    slots_[i] = FieldSlot{static_cast<std::uint32_t>(q - start), static_cast<std::uint32_t>(size)};
    q += size + skip;
  }
  prev_ts_ = ts;
  pos_ = q;
  event_.class_ = ec;
  event_.data_ = base + start;
  event_.slots_ = slots_.data();
  event_.timestamp_ = ts;
  event_.offset_ = start;
  return Decode::kOk;
}

}  // namespace hush::reader::internal
