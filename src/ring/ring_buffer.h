// Ring buffer of CTF packets for one thread at a time (layout: ring_layout.h).
//
// Producer-side calls (OpenPacket, ClosePacket, CountDiscarded) run on the owning thread only,
// from the out-of-line slow path (ring/reserve.h). Consumer-side calls (WriteNew, Prefault) run on
// one thread at a time: the session's consumer or snapshot thread, or the thread stopping it.
// The only shared words are `produced`, `consumed` and `commit` (ring_layout.h); the statistics are
// relaxed atomics whose readers tolerate a slightly stale value.
#ifndef HUSHTRACE_SRC_RING_RING_BUFFER_H_
#define HUSHTRACE_SRC_RING_RING_BUFFER_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "hushtrace/internal/thread_writer.h"
#include "ring/ring_layout.h"

namespace hush::ring {

struct RingConfig {
  std::size_t subbuf_size = 64 * 1024;
  std::uint32_t subbuf_count = 8;
  RingMode mode = RingMode::kStream;
  std::uint8_t uuid[16] = {};
  std::uint32_t pid = 0;
  // The bytes of ring file the session may still reserve (its buffer budget, shared by all its
  // rings; see "Budget" below); nullptr: no bound.
  std::atomic<std::uint64_t>* budget = nullptr;
  // Where the consumer-side calls copy a packet before writing it (the header is stamped on the
  // copy, and a flight ring's packet is validated after copying): at least subbuf_size bytes,
  // owned by the caller and outliving the ring. Rings whose consumer-side calls the owner
  // serializes share one (a Core: under write_mu_), so its pages are faulted in once per
  // session, not once per thread: 16 threads each touching a fresh 128 KiB copy were a third of
  // a many-threaded program's page faults (docs/benchmarks.md, "Message passing"). nullptr: the
  // ring allocates its own.
  char* scratch = nullptr;
};

// Budget. A ring's memory is the blocks reserved for it: the header and sub-buffer 0 when it is
// created, every other sub-buffer when its first packet opens (the producer, ReserveSubbuf) or
// when the consumer populates a busy ring (Prefault). Each of these takes its bytes from
// RingConfig::budget first, once per sub-buffer whoever reserves it (a bit per sub-buffer says
// whose bytes were taken). When the budget cannot pay: Create fails (ENOBUFS), the producer
// discards and counts as on a full file system, Prefault leaves the ring to the producer. The
// producer never writes a sub-buffer that was not paid for, so the pages a session's rings can
// make resident, on disk or in tmpfs, never exceed the budget.

// First sub-buffer. A ring file is created with its header and the first kFirstReservation bytes
// of sub-buffer 0 reserved (zeros written), not the whole sub-buffer: a short program's events
// fit in a few pages, and every ring (a traced exec's, each thread's of a many-threaded program)
// paid for writing 132 KiB of zeros at its first event. While sub-buffer 0 is not reserved whole,
// the producer's `end` (thread_writer.h) stops at the reserved part; an event past it takes the
// slow path, which reserves the next kReservationStep bytes, or up to the event's end if that is
// further, with MADV_POPULATE_WRITE (ExtendReservation) before the event is written. Populating
// costs more per page than writing zeros does, and less than writing them for pages never used:
// bench/ring_reserve_cost on tmpfs, a thread that uses 16 KiB pays 19 us instead of 48 us, one
// that uses 64 KiB 53 us instead of 58, 96 KiB 69 us instead of 65, all 128 KiB 78 us instead
// of 72; the rest of the sub-buffer in one call at the first step costs 74 us for each of the
// last three (docs/benchmarks.md, "Per exec under a session"). The budget pays for the whole
// sub-buffer at creation, as before.
inline constexpr std::size_t kFirstReservation = 16 * 1024;
inline constexpr std::size_t kReservationStep = 32 * 1024;

// Where a snapshot copy of a ring stands (CopyForSnapshot): private to the snapshot, so that a
// snapshot never moves what WriteNew() writes next nor what the producer counts as saved.
struct SnapshotCursor {
  bool started = false;
  std::uint64_t seq = 0;        // next packet to copy
  std::size_t offset = 0;       // bytes of packet `seq` copied already (0: none)
  std::uint64_t begin_ts = 0;   // timestamp_begin of the rest of packet `seq`
  std::uint64_t disk_seq = 0;   // packet_seq_num of the next packet in the snapshot's stream
  // Events the snapshot's stream says are lost: those overwritten between two copies when
  // packets were skipped (the producer lapped the snapshot). Events overwritten before the first
  // copy are outside the snapshot's window, and overwrites of packets already copied are no loss.
  std::uint64_t lost = 0;
  std::uint64_t overwritten_seen = 0;  // RingHeader::overwritten at the last copy
};

// Output of a consumer-side write: how many packets/bytes went out and whether writing failed.
struct WriteResult {
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;
  int error = 0;  // errno of the first failed write, 0 if none
};

class Ring {
 public:
  // Creates and maps `.ring_<index>` in the trace directory `dirfd` (0600, O_EXCL, O_NOFOLLOW).
  // Only the header and the start of sub-buffer 0 have their blocks reserved now (see "First
  // sub-buffer"); each later sub-buffer is reserved by the producer before its first packet
  // opens, or by Prefault (ring_buffer.cc).
  static std::unique_ptr<Ring> Create(int dirfd, std::uint32_t index, const RingConfig& config,
                                      std::string* error);
  // Create, with the Ring object constructed in `storage` (kObjectBytes bytes, aligned for any
  // type) instead of on the heap: the caller runs ~Ring() and frees the storage (why a session
  // does: session/core.h, RingObjects). Null and *error on failure, nothing constructed.
  static constexpr std::size_t kObjectBytes = 512;
  static Ring* CreateAt(void* storage, int dirfd, std::uint32_t index, const RingConfig& config,
                        std::string* error);
  // Maps an existing ring (for tests and recovery) over caller-provided memory.
  static std::unique_ptr<Ring> CreateInMemory(std::uint32_t index, const RingConfig& config);
  ~Ring();

  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // --- producer (owning thread) ---
  // Opens packet number `produced` at timestamp `ts` and points `w` at it. Returns false when
  // the sub-buffer is still unconsumed (stream mode): the caller discards and counts. `ts` must
  // not be older than LastEndTimestamp().
  bool OpenPacket(internal::ThreadWriter& w, std::uint64_t ts, std::uint32_t tid,
                  const char* thread_name);
  // Closes the open packet (if any) at `ts_end` and publishes it.
  void ClosePacket(internal::ThreadWriter& w, std::uint64_t ts_end);
  // Sub-buffer 0 is reserved in steps (see "First sub-buffer" below): whether an event ending at
  // `event_end` in the open packet lies past what is reserved, and the producer's call that
  // reserves up to there, and more (false: no space on the file system; the caller discards and
  // counts, and a later event tries again). Both are the producer's, from the out-of-line slow
  // path.
  bool PastReservation(const char* event_end) const {
    return reserved_end_ != nullptr && event_end > reserved_end_;
  }
  bool ExtendReservation(internal::ThreadWriter& w, const char* event_end);
  // Any thread (relaxed): Core::Stop asks while a straggler may still be opening a packet.
  bool HasOpenPacket() const { return open_.load(std::memory_order_relaxed); }
  std::uint64_t LastEndTimestamp() const { return last_end_ts_; }
  // Free bytes left in the open packet (0 if none is open).
  std::size_t Room(const internal::ThreadWriter& w) const {
    return open_.load(std::memory_order_relaxed) ? static_cast<std::size_t>(packet_end_ - w.pos) : 0;
  }
  // An atomic RMW although only the owning thread counts: a signal handler's nested event is
  // discarded and counted on the same thread, and may interrupt the owner's own count (a full ring
  // in stream mode) between a load and a store, which would lose one (seen: 2 events uncounted in
  // 100,340 under a 20 µs SIGALRM storm). Discards are off the fast path; the lock costs ~20 cycles.
  void CountDiscarded(std::uint64_t n) { header_->discarded.fetch_add(n, std::memory_order_relaxed); }
  // Largest payload an event may have to fit in an empty packet (extended header included).
  std::size_t MaxEventSize() const { return subbuf_size_ - kPacketHeaderSize; }

  // --- consumer (one thread at a time; the session serializes callers) ---
  // Writes to `fd` every packet not yet written: closed packets, then (if `include_open`) the
  // part of the open packet committed so far, ending at its last event. Stream mode releases closed
  // packets to the producer. Flight mode skips packets already overwritten (the producer counted
  // their events) and validates each copy against a concurrent overwrite, seqlock style.
  // A packet written in parts (open, then later closed) continues as a new packet whose
  // timestamp_begin is the last event of the earlier part, which keeps compact timestamps exact
  // and packets of a stream from overlapping in time.
  WriteResult WriteNew(int fd, bool include_open);
  // Consumer side: a closed packet is not written yet, so WriteNew(fd, false) has work (a
  // flight ring's overwritten packets included, which it skips). The consumer opens a stream
  // file only for such a ring (session/core.cc, WriteAllLocked).
  bool HasUnwrittenPackets() const {
    // Acquire: as WriteNew's load of `produced`; written_seq is the consumer's own.
    return header_->produced.load(std::memory_order_acquire) !=
           header_->written_seq.load(std::memory_order_relaxed);
  }
  // Enough closed packets wait for the consumer (stream mode) that a producer, or a thread
  // leaving the ring, wakes it: kWakeBacklog of them, or half the ring if that is fewer. Not
  // half the ring whatever its size: the ring grows as far as the consumer falls behind
  // (ring_layout.h), and a 16 MiB ring half filled before the first write-out is 2,048 pages
  // touched for the first time. Relaxed: a hint, the consumer's periodic pass catches a stale
  // answer.
  static constexpr std::uint32_t kWakeBacklog = 2;
  bool ConsumerBehind() const {
    if (mode_ != RingMode::kStream) return false;  // flight: no consumer, `consumed` stays 0
    const std::uint64_t backlog = header_->produced.load(std::memory_order_relaxed) -
                                  header_->consumed.load(std::memory_order_relaxed);
    return backlog >= std::min(kWakeBacklog, (subbuf_count_ + 1) / 2);
  }
  // Flight mode: copies to `fd` (a snapshot's own stream file) every intact packet from
  // `cursor` on, then the committed part of the open packet, numbering them from 0 in that file.
  // The first call starts at the oldest intact packet. Changes nothing WriteNew() or the producer
  // reads: the ring's own trace is written as if no snapshot had been taken.
  WriteResult CopyForSnapshot(int fd, SnapshotCursor* cursor);
  // Maps into the process's page tables the pages of every sub-buffer the producer has used and
  // of the next one (a flight ring: all of them, it goes round), so that the producer does not
  // take first-touch page faults there: the consumer pays them on its own CPU instead. A stream
  // ring whose consumer keeps up uses two sub-buffers (ring_layout.h), so this maps three and
  // the rest of the ring stays untouched; as the consumer falls behind, the producer uses more
  // and each call maps one more ahead. A no-op for in-memory rings and on kernels without
  // MADV_POPULATE_WRITE (< 5.14), where the producer faults the pages in as before; after a
  // failure (a full file system), later calls do nothing. Returns whether those pages are now
  // mapped (false for those cases).
  bool Prefault();
  // Sub-buffers that have held a packet: the ring's footprint (pages a writer touched).
  std::uint32_t slots_used() const { return slots_used_.load(std::memory_order_relaxed); }
  // Events lost because writing failed (disk full...), counted by WriteNew.
  std::uint64_t write_lost_events() const {
    return write_lost_events_.load(std::memory_order_relaxed);
  }

  RingHeader& header() { return *header_; }
  const RingHeader& header() const { return *header_; }
  std::uint32_t index() const { return index_; }
  std::uint32_t subbuf_count() const { return subbuf_count_; }
  std::size_t subbuf_size() const { return subbuf_size_; }
  // The sub-buffer of packet `seq` (ring_layout.h). Consumer side: `seq` is a closed packet not
  // yet released (consumed <= seq < produced, read with acquire), or the open one once its commit
  // word was read with acquire; producer side: any packet it opened that is still in the ring.
  std::uint32_t SlotOf(std::uint64_t seq) const {
    if (mode_ == RingMode::kFlight) return static_cast<std::uint32_t>(seq % subbuf_count_);
    return header_->packet_slot[seq % subbuf_count_].load(std::memory_order_relaxed) & kSlotMask;
  }
  char* packet(std::uint64_t seq) { return slot_data(SlotOf(seq)); }
  char* slot_data(std::uint32_t slot) { return data_ + static_cast<std::size_t>(slot) * subbuf_size_; }

 private:
  Ring(std::uint32_t index, const RingConfig& config, void* mapping, std::size_t mapping_size,
       bool owns_mapping);
  void InitHeader(const RingConfig& config);
  // Copies bytes [from, to) of packet `seq` into scratch_ (header included) and checks that the
  // producer did not start overwriting it meanwhile. Returns the copy length or 0.
  // `src` is the packet's sub-buffer (packet(seq), or the open packet's as ReadOpenCommit found).
  std::size_t CopyPacket(std::uint64_t seq, const char* src, std::size_t from, std::size_t to);
  int WriteCopy(int fd, std::size_t len);

  // The steps WriteNew (the stream's write-out) and CopyForSnapshot (a snapshot's) share; each
  // keeps its own position and bookkeeping around them.
  //
  // The first packet still intact in the ring for a copy that stands at `seq`: seq, or later when
  // the producer lapped it (flight mode).
  std::uint64_t FirstIntactPacket(std::uint64_t produced, std::uint64_t seq) const;
  // Copies closed packet `seq` from `offset` (0: from its start; else the rest of a packet whose
  // first part went out, restarting at `begin_ts`) into scratch_, stamped for continuation.
  // Returns the copy's length (kPacketHeaderSize: no event in it), 0 when the producer overwrote
  // it meanwhile, kCorruptPacket when its content size is out of range.
  static constexpr std::size_t kCorruptPacket = ~std::size_t{0};
  std::size_t CopyClosedPiece(std::uint64_t seq, std::size_t offset, std::uint64_t begin_ts);
  // The committed part of open packet `produced` from `offset`, in scratch_, ending at its last
  // event (format::StampOpenPiece). 0 when nothing is committed past `offset`, no packet is open
  // (piece->commit_word says which), the writer kept moving, or `drop_if_closed` and the packet
  // was closed while copying.
  struct OpenPiece {
    std::uint64_t commit_word = 0;
    std::uint64_t last_ts = 0;
    std::size_t end = 0;  // offset in the packet where the committed part ends
  };
  std::size_t CopyOpenPiece(std::uint64_t produced, std::size_t offset, std::uint64_t begin_ts,
                            bool drop_if_closed, OpenPiece* piece);
  // Producer: reserves the blocks of sub-buffer `slot` (first use; see Create). False: no space,
  // or no budget.
  bool ReserveSubbuf(std::uint32_t slot);
  // Producer, stream mode: the lowest sub-buffer holding no packet the consumer still needs,
  // given `consumed` (acquired by the caller). Packets [consumed, produced) hold theirs.
  std::uint32_t FreeSlot(std::uint64_t consumed);
  // The open packet `produced` committed up to `*end` (from the packet start), its last event at
  // `*last_ts`, in sub-buffer `*slot`. False while no packet is open or being opened
  // (`*commit_word` tells which), while its writer keeps moving, or when nothing is committed
  // past `from`.
  bool ReadOpenCommit(std::uint64_t produced, std::size_t from, std::uint64_t* commit_word,
                      std::uint64_t* last_ts, std::size_t* end, std::uint32_t* slot);
  WriteResult WriteLossMarker(int fd, WriteResult result);
  // Consumer: the events of packet `seq` already written (or counted lost) in an earlier part of
  // it, which a failure of its rest must not count again.
  std::uint64_t WrittenBefore(std::uint64_t seq) const {
    return header_->written_offset != 0
               ? WrittenEventsOf(header_->written_mark.load(std::memory_order_relaxed), seq)
               : 0;
  }

  std::uint32_t index_;
  std::size_t subbuf_size_;
  std::uint32_t subbuf_count_;
  RingMode mode_;
  void* mapping_;
  std::size_t mapping_size_;
  bool owns_mapping_;
  RingHeader* header_;
  char* data_;
  // Written by the producer only; atomic because Core::Stop reads it while a thread still inside
  // an event after Stop's bounded wait may open a packet (the answer may then be stale: Stop's
  // count allows one event per such thread).
  std::atomic<bool> open_{false};
  char* packet_end_ = nullptr;  // producer-private: end of the open packet
  // Producer-private: bytes of sub-buffer 0 reserved (subbuf_size_ once all of them are), and
  // the end of the reserved part while a packet is open in sub-buffer 0 and it is not whole
  // (nullptr otherwise): see "First sub-buffer".
  std::size_t subbuf0_reserved_ = 0;
  char* reserved_end_ = nullptr;
  // Producer-private (handed between threads under the session mutex): timestamp_end of the last
  // closed packet. Packets of one stream never go back in time, even across owner threads.
  std::uint64_t last_end_ts_ = 0;
  // Rings made by Create: the producer reserves its sub-buffers' blocks lazily (first use).
  // Sub-buffers come into use in order (FreeSlot takes the lowest free one), so sub-buffers
  // 0 .. N-1 have blocks.
  std::uint32_t reserved_subbufs_ = 0;  // producer-private
  // Stream mode, producer-private: sub-buffers holding packets from freed_below_ on (bit i:
  // sub-buffer i), and the first packet whose sub-buffer was not given back yet.
  std::uint64_t slot_busy_[kMaxSubbufCount / 64] = {};
  std::uint64_t freed_below_ = 0;
  // Written by the producer (relaxed) when a packet first opens in a sub-buffer: Prefault's
  // measure of how far the ring has grown.
  std::atomic<std::uint32_t> slots_used_{0};
  // Sub-buffers 0 .. N-1 have all their pages' blocks: set (release) by Create and by Prefault;
  // the producer skips its own reservation below it (acquire).
  std::atomic<std::uint32_t> populated_slots_{0};
  // Consumer-private state.
  std::unique_ptr<char[]> own_scratch_;   // RingConfig::scratch was nullptr
  char* scratch_;                         // one packet: RingConfig::scratch or own_scratch_
  std::atomic<std::uint64_t> write_lost_events_{0};  // relaxed: statistics
  char last_header_[kPacketHeaderSize] = {};  // the last packet header written to disk
  std::uint64_t last_lost_total_ = 0;         // its events_discarded as written
  bool have_last_header_ = false;
  // Budget (see above): the session's, and which sub-buffers were paid for (bit i: sub-buffer i).
  std::atomic<std::uint64_t>* budget_ = nullptr;
  std::atomic<std::uint64_t> paid_[kMaxSubbufCount / 64] = {};
  // Takes the bytes of sub-buffer `slot` from the budget unless it was paid for already.
  bool PaySubbuf(std::uint32_t slot);
  // Consumer-private (Prefault): sub-buffers 0 .. N-1 are mapped (with the header, once N > 0),
  // and whether it gave up (see there).
  std::uint32_t mapped_slots_ = 0;
  bool prefault_failed_ = false;
};

}  // namespace hush::ring

#endif  // HUSHTRACE_SRC_RING_RING_BUFFER_H_
