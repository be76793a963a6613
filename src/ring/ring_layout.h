// Shared-memory and on-disk layout of a ring buffer and of its packets.
//
// A ring is a file `.ring/ring_<N>` in the trace directory, mapped MAP_SHARED by the traced
// process. Whatever the process committed survives its death in the page cache, so a crashed
// trace can be recovered from the file alone (docs/format.md, section 4).
//
//   file offset 0        RingHeader (kRingHeaderSize bytes)
//   kRingHeaderSize      sub-buffer 0 = one CTF packet of `subbuf_size` bytes
//   + subbuf_size        sub-buffer 1
//   ...                  sub-buffer subbuf_count - 1
//
// Packet n (n = packet_seq_num) lives in sub-buffer n % subbuf_count. The producer (owning
// thread) opens packets in order; `produced` counts closed packets, so the open packet is number
// `produced`. In stream mode the consumer thread writes closed packets to stream_<N> and advances
// `consumed`; the producer never opens packet n while n - consumed >= subbuf_count (it discards and
// counts instead). In flight mode the producer overwrites the oldest packet and counts its events.
#ifndef HUSHTRACE_SRC_RING_RING_LAYOUT_H_
#define HUSHTRACE_SRC_RING_RING_LAYOUT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/env.h"
#include "format/packet.h"
#include "hushtrace/internal/thread_writer.h"

namespace hush::ring {

inline constexpr char kRingMagic[8] = {'H', 'U', 'S', 'H', 'R', 'N', 'G', '1'};
inline constexpr std::uint32_t kRingVersion = 2;  // 2: commit word with event count, written_mark
inline constexpr std::size_t kRingHeaderSize = 4096;
// The bytes of a ring file (and mapping): the header, then the sub-buffers. The session sizes its
// budget with it, Ring::Create its file, recovery checks a dead ring's file against it.
constexpr std::uint64_t RingBytes(std::uint64_t subbuf_size, std::uint64_t subbuf_count) {
  return kRingHeaderSize + subbuf_size * subbuf_count;
}
inline constexpr std::uint32_t kMaxSubbufCount = 256;
inline constexpr std::uint32_t kMinSubbufCount = 2;
inline constexpr std::size_t kMinSubbufSize = 4096;
inline constexpr std::size_t kMaxSubbufSize = std::size_t{1} << 20;
// The largest ring a thread can have (Core::Start refuses a larger buffer size): 256 MiB, the
// limit the CLI and the environment protocol check too (base/env.h).
inline constexpr std::size_t kMaxBufferSize = kMaxSubbufSize * kMaxSubbufCount;
static_assert(kMaxBufferSize == base::env::kMaxBufferSize);
static_assert(kRingHeaderSize == base::env::kRingHeaderBytes);

// A sub-buffer holds one CTF packet: format::PacketHeader (format/packet.h, the owner of every
// byte that reaches a stream file), then events.
using format::kPacketHeaderSize;

// Values of RingHeader::commit.offset besides a data offset inside the open packet.
inline constexpr std::uint64_t kCommitNone = ~std::uint64_t{0};     // no packet open
inline constexpr std::uint64_t kCommitOpening = ~std::uint64_t{1};  // a packet is being opened

// Fields of a commit.offset word (see internal::CommitWord).
inline constexpr std::uint64_t CommitOffsetOf(std::uint64_t word) { return word & 0xffffffffu; }
inline constexpr std::uint64_t CommitEventsOf(std::uint64_t word) {
  return word >> internal::kCommitEventsShift;
}

// RingHeader::written_mark: (first packet not completely written) << 24 | events of that packet
// already written. One word, so the producer reads a consistent pair.
inline constexpr int kWrittenMarkShift = 24;

enum class RingMode : std::uint32_t { kStream = 0, kFlight = 1 };

struct RingHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t subbuf_count;
  std::uint64_t subbuf_size;
  std::uint64_t stream_index;
  RingMode mode;
  std::uint32_t pid;
  std::uint8_t uuid[16];
  // Producer side. Written by the owning thread only.
  alignas(64) std::atomic<std::uint64_t> produced;  // closed packets; release, pairs with consumer
  // End offset and timestamp of the last committed event of the open packet; offset is
  // kCommitNone between packets and kCommitOpening while the producer rewrites a sub-buffer.
  internal::CommitWord commit;
  std::atomic<std::uint64_t> discarded;   // cumulative discarded events (relaxed: statistics)
  // Cumulative events lost to flight-mode overwrites: events of packets overwritten before they
  // were written out (relaxed: statistics).
  std::atomic<std::uint64_t> overwritten;
  std::atomic<std::uint64_t> events;      // committed events in closed packets (relaxed)
  std::atomic<std::uint32_t> owner_tid;   // 0 when no thread owns the ring
  // Consumer side. Written by the consumer (stream mode) only.
  alignas(64) std::atomic<std::uint64_t> consumed;  // release, pairs with the producer's acquire
  std::atomic<std::uint64_t> bytes_written;
  // Write-out progress, updated after every successful write so that recovery after a crash
  // knows what stream_<N> already holds. Consumer-private while the process lives (writers are
  // serialized by the session), read by `hushtrace recover` after it died.
  // First ring packet not completely written to stream_<N>. Atomic: the flight-mode producer
  // reads it (relaxed) to tell an overwritten packet that was saved from one that is lost.
  std::atomic<std::uint64_t> written_seq;
  std::uint64_t written_offset;    // bytes of packet written_seq already written (0: none)
  // Read by the flight-mode producer (relaxed) to tell saved events from lost ones when it
  // overwrites a packet; written by the consumer after each validated copy.
  std::atomic<std::uint64_t> written_mark;
  std::uint64_t written_begin_ts;  // timestamp_begin for the rest of packet written_seq
  std::uint64_t disk_seq;          // packet_seq_num of the next packet written to stream_<N>
  std::uint64_t stream_bytes;      // size of stream_<N> after the last successful write
  // Events in each sub-buffer's packet, written by the producer when it closes the packet.
  alignas(64) std::atomic<std::uint32_t> packet_events[kMaxSubbufCount];
};
static_assert(sizeof(RingHeader) <= kRingHeaderSize);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

}  // namespace hush::ring

#endif  // HUSHTRACE_SRC_RING_RING_LAYOUT_H_
