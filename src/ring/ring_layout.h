// Shared-memory and on-disk layout of a ring buffer and of its packets.
//
// A ring is a file `.ring_<N>` in the trace directory, mapped MAP_SHARED by the traced
// process. Whatever the process committed survives its death in the page cache, so a crashed
// trace can be recovered from the file alone (docs/format.md, section 4).
//
//   file offset 0        RingHeader (kRingHeaderSize bytes)
//   kRingHeaderSize      sub-buffer 0 = one CTF packet of `subbuf_size` bytes
//   + subbuf_size        sub-buffer 1
//   ...                  sub-buffer subbuf_count - 1
//
// The producer (owning thread) opens packets in order; `produced` counts closed packets, so the
// open packet is number `produced`. Which sub-buffer packet n (n = packet_seq_num) lives in:
// - Flight mode: n % subbuf_count. The producer overwrites the oldest packet and counts its
//   events.
// - Stream mode: RingHeader::packet_slot[n % subbuf_count], the lowest sub-buffer free when the
//   packet opened, with two exceptions that keep an open packet recognisable by its sub-buffer
//   alone, as with n % subbuf_count: never packet n - 1's sub-buffer, nor the one entry
//   (n + 1) % subbuf_count names. Between ClosePacket's store of `produced` = n + 1 and the next
//   OpenPacket, a reader (or recovery after a crash there) finds the commit word still at the end
//   of packet n and the entry of packet n + 1 not written yet; the two sub-buffers differ, so it
//   does not take packet n's bytes for packet n + 1's. The thread writes closed packets to stream_<N> and advances
//   `consumed`, which frees their sub-buffers; the producer never opens packet n while
//   n - consumed >= subbuf_count (it discards and counts instead). A consumer that keeps up
//   leaves one or two sub-buffers in use, so a thread touches (and the hypervisor, the page
//   cache and the disk see) the pages of those, not the whole ring: the ring grows only as far
//   as the consumer falls behind (docs/benchmarks.md, "Message passing").
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
// 2: commit word with event count, written_mark. 3: packet_slot (recovery reads 2 as well).
inline constexpr std::uint32_t kRingVersion = 3;
inline constexpr std::uint32_t kRingVersionModuloSlots = 2;
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
// The events of packet `seq` a written_mark `mark` counts as written (0 if it names another packet).
inline constexpr std::uint64_t WrittenEventsOf(std::uint64_t mark, std::uint64_t seq) {
  return (mark >> kWrittenMarkShift) == seq ? mark & ((std::uint64_t{1} << kWrittenMarkShift) - 1) : 0;
}

// RingHeader::packet_slot entries: the sub-buffer, and whether the packet is the first one
// written there (the rest of a first-used sub-buffer is zeros: recovery tells a torn event from an
// older packet's bytes by it).
inline constexpr std::uint16_t kSlotMask = 0xff;
inline constexpr std::uint16_t kSlotFirstUse = 0x100;
inline constexpr std::uint16_t kSlotNone = 0xffff;  // no packet opened with this entry yet
static_assert(kSlotMask + 1 >= kMaxSubbufCount, "a slot entry holds any sub-buffer index below kMaxSubbufCount");

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
  // Where each packet lives, indexed like packet_events by packet_seq_num % subbuf_count: the
  // sub-buffer | kSlotFirstUse. Written (relaxed) by the producer when it opens the packet,
  // before the release store of `commit` (an open packet's readers) and of `produced` (a closed
  // one's); rewritten only when packet n + subbuf_count opens, after the consumer released n.
  // kSlotNone until then. Flight mode writes n % subbuf_count there too.
  std::atomic<std::uint16_t> packet_slot[kMaxSubbufCount];
};
static_assert(sizeof(RingHeader) <= kRingHeaderSize);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

}  // namespace hush::ring

#endif  // HUSHTRACE_SRC_RING_RING_LAYOUT_H_
