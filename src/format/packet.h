// The bytes of a stream file: CTF packets, their header and context, and the event headers inside
// them (docs/format.md, sections 2 and 3). This header is the one definition every side uses:
//
//   ring/      opens packets in a ring's sub-buffers and stamps the copies it writes to stream_N;
//   recover/   stamps the copies it writes from a dead process's ring (the same function, so a
//              recovered stream cannot drift from a live one) and walks events to validate them;
//   reader/    decodes packet headers and event headers.
//
// The event header itself is written by the inline fast path of the public headers
// (hushtrace/internal/thread_writer.h owns its constants, because include/ cannot include src/);
// decoding it lives here, once.
//
// It depends on the standard library and that public header only, so that the ring, which sits
// below this module, may include it (a shared contract: scripts/check_layers.py).
//
// All fields are little-endian (the only byte order hushtrace writes; docs/format.md). Loads and
// stores go through memcpy: packets in a file or a ring carry no alignment promise.
#ifndef HUSHTRACE_SRC_FORMAT_PACKET_H_
#define HUSHTRACE_SRC_FORMAT_PACKET_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hushtrace/internal/thread_writer.h"

namespace hush::format {

// ---- packet header and context (fixed offsets; the metadata's packet.header + packet.context) ----

inline constexpr std::uint32_t kCtfMagic = 0xC1FC1FC1;

struct PacketHeader {
  std::uint32_t magic;
  std::uint8_t uuid[16];
  std::uint32_t stream_id;
  std::uint64_t stream_instance_id;
  std::uint64_t timestamp_begin;
  std::uint64_t timestamp_end;
  std::uint64_t content_size;  // bits
  std::uint64_t packet_size;   // bits
  std::uint64_t packet_seq_num;
  std::uint64_t events_discarded;
  std::uint64_t events_overwritten;
  std::uint32_t vpid;
  std::uint32_t vtid;
  char thread_name[16];
} __attribute__((packed));
static_assert(sizeof(PacketHeader) == 112);
inline constexpr std::size_t kPacketHeaderSize = sizeof(PacketHeader);

// Byte offsets of the fields, for code that works on raw bytes (a copy, a mapped file).
namespace field {
inline constexpr std::size_t kMagic = offsetof(PacketHeader, magic);
inline constexpr std::size_t kUuid = offsetof(PacketHeader, uuid);
inline constexpr std::size_t kStreamId = offsetof(PacketHeader, stream_id);
inline constexpr std::size_t kInstance = offsetof(PacketHeader, stream_instance_id);
inline constexpr std::size_t kTsBegin = offsetof(PacketHeader, timestamp_begin);
inline constexpr std::size_t kTsEnd = offsetof(PacketHeader, timestamp_end);
inline constexpr std::size_t kContentSize = offsetof(PacketHeader, content_size);
inline constexpr std::size_t kPacketSize = offsetof(PacketHeader, packet_size);
inline constexpr std::size_t kSeq = offsetof(PacketHeader, packet_seq_num);
inline constexpr std::size_t kDiscarded = offsetof(PacketHeader, events_discarded);
inline constexpr std::size_t kOverwritten = offsetof(PacketHeader, events_overwritten);
inline constexpr std::size_t kVpid = offsetof(PacketHeader, vpid);
inline constexpr std::size_t kVtid = offsetof(PacketHeader, vtid);
inline constexpr std::size_t kThreadName = offsetof(PacketHeader, thread_name);
}  // namespace field
// The metadata (format/ctf_metadata.cc) declares these offsets; docs/format.md section 3 too.
static_assert(field::kTsBegin == 32 && field::kContentSize == 48 && field::kSeq == 64 &&
              field::kDiscarded == 72 && field::kVtid == 92 && field::kThreadName == 96);

template <typename T>
T Load(const void* bytes, std::size_t offset) {
  T v;
  std::memcpy(&v, static_cast<const char*>(bytes) + offset, sizeof v);
  return v;
}
template <typename T>
void Store(void* bytes, std::size_t offset, T v) {
  std::memcpy(static_cast<char*>(bytes) + offset, &v, sizeof v);
}

// ---- finalising a packet for a stream file -----------------------------------------------------
//
// A packet in a ring is PacketHeader + events, sized for its sub-buffer. What reaches stream_N is
// a copy of the header followed by the events written in this piece, with these fields set here:
//
//   content_size = packet_size = the copy's length (no padding on disk);
//   packet_seq_num = the stream's own numbering (a ring's packet may reach the disk in pieces, and
//                    flight mode skips overwritten ones, so the ring's number is not the stream's);
//   events_overwritten = the ring's overwrite count;
//   events_discarded = discarded + overwritten + lost on write: every lost event, so that CTF
//                    readers report all of them (events_overwritten keeps the overwritten part).
//
// Overwrites and failed writes only ever hit packets older than every packet still in the ring,
// so every packet of one write-out carries the same, current, counts.

struct StreamStamp {
  std::uint64_t seq_num;      // the stream's next packet number
  std::uint64_t overwritten;  // the ring's overwritten count
  std::uint64_t write_lost;   // events lost because writing failed (or found damaged)
};

// Stamps the header at `packet` (a copy of `len` bytes, header included) for the stream. Reads the
// copy's events_discarded (the producer's count when it opened the packet, or the one a caller set
// with StampOpenPiece) and returns the total written into it.
inline std::uint64_t StampForStream(void* packet, std::size_t len, const StreamStamp& s) {
  Store<std::uint64_t>(packet, field::kContentSize, len * 8);
  Store<std::uint64_t>(packet, field::kPacketSize, len * 8);
  Store<std::uint64_t>(packet, field::kSeq, s.seq_num);
  const std::uint64_t lost = Load<std::uint64_t>(packet, field::kDiscarded) + s.overwritten + s.write_lost;
  Store<std::uint64_t>(packet, field::kOverwritten, s.overwritten);
  Store<std::uint64_t>(packet, field::kDiscarded, lost);
  return lost;
}

// The rest of a packet whose first part was written earlier begins where that part ended (its
// last event): compact timestamps of the rest stay exact, and pieces never overlap in time.
inline void StampContinuation(void* packet, std::uint64_t ts_begin) {
  Store<std::uint64_t>(packet, field::kTsBegin, ts_begin);
}

// A piece of the packet still open: it ends at its last event (where the next piece begins), and
// carries the discard count as it is now (the producer's header still has the count from when it
// opened the packet).
inline void StampOpenPiece(void* packet, std::uint64_t ts_end, std::uint64_t discarded) {
  Store<std::uint64_t>(packet, field::kTsEnd, ts_end);
  Store<std::uint64_t>(packet, field::kDiscarded, discarded);
}

// A loss marker: a header-only packet that carries loss counts no later packet will (the ring
// discarded at the end, a thread exited, a crash cut the rest), so that readers report them. Built
// from the last header written to the stream, stamped at that packet's end; `out` then goes
// through StampForStream with len = kPacketHeaderSize like any piece.
inline void MakeLossMarker(void* out, const void* last_header, std::uint64_t discarded) {
  std::memcpy(out, last_header, kPacketHeaderSize);
  Store<std::uint64_t>(out, field::kTsBegin, Load<std::uint64_t>(out, field::kTsEnd));
  Store<std::uint64_t>(out, field::kDiscarded, discarded);
}

// ---- event headers -----------------------------------------------------------------------------
//
//   compact:  u8 id (< kExtendedId), u24 low bits of the timestamp         (kCompactHeaderSize)
//   extended: u8 kExtendedId, u32 id, u64 timestamp                        (kExtendedHeaderSize)
//
// A compact timestamp is the low 24 bits of the full one; the writer uses it only when the event
// is less than 2^24 ticks after the packet's previous timestamp (internal::WithinCompactRange).

using internal::kCompactHeaderSize;
using internal::kExtendedHeaderSize;
using internal::kExtendedId;

struct EventHeader {
  std::uint32_t id;
  std::uint64_t timestamp;
  std::size_t size;  // kCompactHeaderSize or kExtendedHeaderSize
};

// The full timestamp of a compact header whose low 24 bits are `low`, following `previous` (the
// packet's timestamp_begin, or the previous event's timestamp).
inline std::uint64_t ExpandCompactTimestamp(std::uint64_t previous, std::uint32_t low) {
  constexpr std::uint64_t kLowMask = (std::uint64_t{1} << 24) - 1;
  std::uint64_t ts = (previous & ~kLowMask) | (low & kLowMask);
  if (ts < previous) ts += kLowMask + 1;
  return ts;
}

// Decodes the event header at `p`, of which `available` bytes may be read. False when the header
// is cut (fewer bytes than it needs); `*out` is then unset.
inline bool DecodeEventHeader(const std::uint8_t* p, std::size_t available, std::uint64_t previous_ts,
                              EventHeader* out) {
  if (available < kCompactHeaderSize) return false;
  if (p[0] == kExtendedId) {
    if (available < kExtendedHeaderSize) return false;
    out->id = Load<std::uint32_t>(p, 1);
    out->timestamp = Load<std::uint64_t>(p, 5);
    out->size = kExtendedHeaderSize;
    return true;
  }
  out->id = p[0];
  out->timestamp = ExpandCompactTimestamp(previous_ts, Load<std::uint32_t>(p, 0) >> 8);
  out->size = kCompactHeaderSize;
  return true;
}

}  // namespace hush::format

#endif  // HUSHTRACE_SRC_FORMAT_PACKET_H_
