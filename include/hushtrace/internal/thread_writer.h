// The per-thread writer: the inline fast path of every enabled event.
//
// Each thread owns one ThreadWriter in initial-exec TLS (two instructions to reach, no
// __tls_get_addr) and, once it has emitted, one ring buffer (src/ring). Only the owning thread
// writes packet bytes and the fields below, so reserve/commit needs no atomic read-modify-write:
//
//   nesting 0 -> 1       guard: a signal handler that interrupts an event sees nesting != 0
//   p = pos              reserve: the open packet has [pos, end) free, and its blocks reserved
//   write header+fields  4-byte compact header (id, low 24 bits of the timestamp), then payload
//   pos = p + size       commit locally
//   commit.store(release)  publish the end offset for flushing, snapshots and crash recovery
//   nesting 1 -> 0
//
// The commit word is the one record of the open packet's state: each commit adds
// (1 << 32) + the event's size to the value it published last (read back: only this thread
// writes it while the packet is open) and stores the event's timestamp, which the next event's
// compact header is relative to. No per-thread copy of the count or the timestamp is kept, so a
// commit is a handful of stores and an event the slow path withdraws (a field filter) leaves
// nothing to undo.
//
// Everything unusual (no ring yet, packet full, the reserved start of a ring's first sub-buffer
// used up, id >= 255, timestamp gap >= 2^24 cycles, nested call, slow clock mode, an event
// disabled between the site's check and its state read) goes to the out-of-line slow path
// (ReserveSlow), which is cold.
//
// Memory ordering: the release store of `commit` pairs with the acquire load of the same word by
// whoever reads the open packet (final flush, flight snapshot); a reader that sees offset X sees
// every event byte before X. Whole packets are published by the ring's `produced` counter
// (src/ring/ring_buffer.h).
#ifndef HUSHTRACE_INTERNAL_THREAD_WRITER_H_
#define HUSHTRACE_INTERNAL_THREAD_WRITER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hushtrace/internal/cycle_clock.h"

// x86-64 (outside ThreadSanitizer builds): the fast path's tests of the two words other threads
// touch, and the commit word's update, in the instructions the job needs. GCC never folds an
// atomic load into another instruction (a relaxed load compared to 0 is a `mov` and a `test`) and
// has no plain read-modify-write of an atomic (`+=` on one is a locked `xadd`). An aligned access
// by one instruction is atomic on x86-64 whatever the instruction, and x86-64 orders a store
// after every earlier load and store: an `add` to memory by the word's only writer is a relaxed
// load followed by a release store. ThreadSanitizer sees no access in an `asm`, so its builds
// keep the portable code, which it checks. So do AddressSanitizer builds (with UBSan): with the
// id loaded inside the event (emit.h), GCC 12's null check of the TLS writer next to these `asm`
// operands (%fs-relative) reported a null `ThreadWriter` in a non-PIE program with the static
// runtime, which ran and traced correctly; those builds check the portable code instead.
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#if defined(__has_feature)
#if !__has_feature(thread_sanitizer)
#define HUSH_INTERNAL_X86_64_FAST_PATH 1
#endif
#else
#define HUSH_INTERNAL_X86_64_FAST_PATH 1
#endif
#endif

namespace hush::internal {

// Event headers (docs/format.md, section 3): compact = u32 (id | low 24 bits of the timestamp << 8);
// extended = u8 255, u32 id, u64 timestamp, packed.
inline constexpr std::size_t kCompactHeaderSize = 4;
inline constexpr std::size_t kExtendedHeaderSize = 13;
inline constexpr std::uint32_t kExtendedId = 255;
inline constexpr std::uint64_t kCompactTimestampRange = std::uint64_t{1} << 24;

// Shared with readers of the open packet (ring header, src/ring/ring_layout.h):
//   offset     bits 0-31: end offset of the last committed event (from the ring's data start)
//              bits 32-63: events committed in the open packet so far
//   timestamp  that event's timestamp
struct CommitWord {
  std::atomic<std::uint64_t> offset;
  std::atomic<std::uint64_t> timestamp;
};
inline constexpr int kCommitEventsShift = 32;

struct ThreadWriter {
  char* pos;                 // next free byte of the open packet
  // End of the open packet, or of the part of it whose blocks are reserved when that is less (a
  // ring's first sub-buffer, src/ring/ring_buffer.h "First sub-buffer"); nullptr: always take
  // the slow path. Atomic because a stopping session clears it from another thread (relaxed: it
  // only forces this thread into ReserveSlow, which re-checks the session generation with
  // seq_cst).
  std::atomic<char*> end;
  // Timestamp of the event Reserve / ReserveSlow reserved, which Commit stamps (slow path only;
  // the fast path keeps it in a register).
  std::uint64_t pending_ts;
  // > 0 while this thread writes an event. Written by the owner only (load + store, never an
  // RMW); read by a stopping session to wait for events in flight (acquire, pairs with the
  // release in LeaveEvent).
  std::atomic<std::uint32_t> nesting;
  CommitWord* commit;        // in the ring header; offsets are from the ring's data start
  void* ring;                // the ring this thread writes to (slow path only)
  std::uint64_t generation;  // session generation `ring` belongs to (slow path only)
};
static_assert(sizeof(ThreadWriter) <= 64, "the fast path touches one cache line");

// constinit: no dynamic initialization, so no TLS wrapper call; initial-exec: a GOT load plus
// %fs-relative accesses, never __tls_get_addr.
extern thread_local constinit ThreadWriter tls_writer __attribute__((tls_model("initial-exec")));

// Out of line. Called with nesting already incremented. Returns where the payload goes (the header
// is written), or nullptr when the event is dropped (and counted; an event disabled since its
// site's check, id kDisabledId, is dropped without being counted).
[[gnu::cold, gnu::noinline]] char* ReserveSlow(ThreadWriter& w, std::uint32_t id, std::uint64_t ts,
                                               std::size_t payload_size);
// Commits an event reserved by ReserveSlow whose payload is [payload, end): for an id with
// kFilterIdBit, only if the session's filter accepts the payload (else the space is reused).
[[gnu::cold, gnu::noinline]] void CommitSlow(ThreadWriter& w, std::uint32_t id, char* payload, char* end);
// An event that interrupted another one on this thread (a signal handler's), which the fast path
// did not enter: dropped and counted in the thread's ring, as ReserveSlow does with any nested
// event. Nothing of its payload is needed, so the sites pass none.
[[gnu::cold, gnu::noinline]] void DropNestedEvent(std::uint32_t id);


// Compiler-only barrier: orders the guard against the event writes as seen by a signal handler
// running on this same thread. No CPU fence is needed for that.
inline void SignalFence() { std::atomic_signal_fence(std::memory_order_seq_cst); }

// Enters an event on this thread; returns the previous nesting depth (0 unless a signal handler
// interrupted an event).
inline std::uint32_t EnterEvent(ThreadWriter& w) {
  const std::uint32_t n = w.nesting.load(std::memory_order_relaxed);
  w.nesting.store(n + 1, std::memory_order_relaxed);
  SignalFence();
  return n;
}

// The fast path's form of EnterEvent: enters only an event that interrupts none (nesting 0 -> 1,
// a compare and a store of a constant), else returns false with nothing changed. A handler that
// runs between the load and the store completes its whole event and leaves nesting at 0, so the
// store loses nothing; `pos` is read after it.
inline bool EnterOuterEvent(ThreadWriter& w) {
#if defined(HUSH_INTERNAL_X86_64_FAST_PATH)
  bool outer;  // a relaxed load compared to 0: `cmpl $0, %fs:...`
  asm("cmpl $0, %1" : "=@ccz"(outer) : "m"(w.nesting));
  if (!outer) [[unlikely]] return false;
#else
  if (w.nesting.load(std::memory_order_relaxed) != 0) [[unlikely]] return false;
#endif
  w.nesting.store(1, std::memory_order_relaxed);
  SignalFence();
  return true;
}

inline void LeaveEvent(ThreadWriter& w, std::uint32_t previous) {
  SignalFence();
  w.nesting.store(previous, std::memory_order_release);
}

// Whether an event ending at `event_end` fits the open packet: event_end <= end, compared as
// integers (a relaxed load of `end`).
inline bool FitsBefore(std::uintptr_t event_end, const std::atomic<char*>& end) {
#if defined(HUSH_INTERNAL_X86_64_FAST_PATH)
  bool fits;
  asm("cmpq %2, %1" : "=@ccbe"(fits) : "r"(event_end), "m"(end));
  return fits;
#else
  return event_end <= reinterpret_cast<std::uintptr_t>(end.load(std::memory_order_relaxed));
#endif
}

// ts - last < kCompactTimestampRange, where `last` is the last committed event's timestamp: the
// compact header's 24 bits reach it, and the clock did not go back (the difference would wrap).
inline bool WithinCompactRange(std::uint64_t ts, const std::atomic<std::uint64_t>& last) {
#if defined(HUSH_INTERNAL_X86_64_FAST_PATH)
  std::uint64_t d = ts;
  asm("subq %1, %0" : "+r"(d) : "m"(last));  // a relaxed load folded into the subtraction
  return d < kCompactTimestampRange;
#else
  return ts - last.load(std::memory_order_relaxed) < kCompactTimestampRange;
#endif
}

// Fast-path reservation, called inside an outer event (EnterOuterEvent): returns where the
// payload goes (header written) and sets `*commit` to the word CommitEvent publishes, or returns
// nullptr when the event needs the slow path. Conditions are tested in order of how often they
// fail; the commit word is read only once the packet is known to be open. `id` may be
// kDisabledId (the event was disabled after its site's check): it fails the id test.
inline char* TryReserveFast(ThreadWriter& w, std::uint32_t id, std::uint64_t ts,
                            std::size_t payload_size, CommitWord** commit) {
  char* p = w.pos;
  const std::size_t size = kCompactHeaderSize + payload_size;
  // Compared as integers: `end` is nullptr (with `pos` stale) whenever the writer must take the
  // slow path, and p + size never wraps.
  if (FitsBefore(reinterpret_cast<std::uintptr_t>(p) + size, w.end) &&
      WithinCompactRange(ts, w.commit->timestamp) && id < kExtendedId) [[likely]] {
    *commit = w.commit;
    // One u32 with a shift, not the trampoline's id byte plus an unaligned timestamp word (two
    // stores, no shift): the same count here, but then GCC's SLP vectorizer merges adjacent
    // fields of one value into a vector store, and the register allocation of the loop around
    // the site gets worse, the disabled site's included (callgrind, bench/insn_driver.cc).
    const std::uint32_t header = static_cast<std::uint32_t>(ts << 8) | id;
    std::memcpy(p, &header, sizeof header);
    return p + kCompactHeaderSize;
  }
  return nullptr;
}

// Publishes the event [event_start, event_end) stamped `ts` through `commit` (w.commit); the
// event begins at w.pos.
inline void CommitEvent(ThreadWriter& w, CommitWord* commit, const char* event_start,
                        char* event_end, std::uint64_t ts) {
  w.pos = event_end;
  // One more event, `size` more bytes. Relaxed: this thread is the word's only writer while
  // the packet is open, so the load sees its own last store.
  const std::uint64_t delta = (std::uint64_t{1} << kCommitEventsShift) +
                              static_cast<std::uint64_t>(event_end - event_start);
  // Release, not relaxed: a reader (Ring::WriteNew) loads the timestamp, then the offset again
  // after an acquire fence, and keeps the timestamp only if the offset did not move. Release
  // orders the previous event's offset store before this timestamp, so a reader that sees this
  // timestamp sees at least the previous offset: the timestamp it keeps is the last committed
  // event's or the one in flight, never one further ahead (which would end the written part of
  // the packet after the first event of its continuation). x86-64 orders stores anyway (a plain
  // mov either way); on aarch64 a relaxed STR may become visible before the earlier STLR of the
  // offset, so this is an STLR.
  commit->timestamp.store(ts, std::memory_order_release);
  // Publish: pairs with the acquire load in Ring::WriteNew(); see file comment.
#if defined(HUSH_INTERNAL_X86_64_FAST_PATH)
  // One `add` to memory (see the top of this file). The "memory" clobber keeps every store of the
  // event, and the timestamp's, before it in the code, as a release store does.
  asm volatile("addq %1, %0" : "+m"(commit->offset) : "er"(delta) : "memory");
#else
  commit->offset.store(commit->offset.load(std::memory_order_relaxed) + delta,
                       std::memory_order_release);
#endif
}

// Full reservation (slow path included) for callers that are not size-critical (the C API),
// inside an event entered with EnterEvent, which returned `previous`. Commit() publishes it.
inline char* Reserve(ThreadWriter& w, std::uint32_t previous, std::uint32_t id, std::uint64_t ts,
                     std::size_t payload_size) {
  CommitWord* commit;
  if (previous == 0) {
    if (char* p = TryReserveFast(w, id, ts, payload_size, &commit)) [[likely]] {
      w.pending_ts = ts;
      return p;
    }
  }
  return ReserveSlow(w, id, ts, payload_size);
}

// Commits the event Reserve / ReserveSlow reserved at w.pos, stamped w.pending_ts.
inline void Commit(ThreadWriter& w, char* event_end) {
  CommitEvent(w, w.commit, w.pos, event_end, w.pending_ts);
}

}  // namespace hush::internal

#endif  // HUSHTRACE_INTERNAL_THREAD_WRITER_H_
