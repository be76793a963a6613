// Ring buffer: packet open/close on the producer side, packet write-out on the consumer side.
// See ring_buffer.h for who calls what and ring_layout.h for the shared words.
#include "ring/ring_buffer.h"

#include "base/unique_fd.h"
#include "base/write_all.h"
#include "format/numbered_name.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL
#endif

#if defined(__SANITIZE_THREAD__)
#define HUSH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HUSH_TSAN 1
#endif
#endif
#ifdef HUSH_TSAN
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#endif

namespace hush::ring {
namespace {

// Flight mode's seqlock reader copies sub-buffers that the producer may be overwriting at that
// very moment; the copy is validated afterwards (CopyPacket) and dropped if it raced, and the
// producer never reads what the reader touches. Those reads are data races by design: under
// ThreadSanitizer they, and only they, are ignored (the producer's side stays checked).
class SeqlockReads {
 public:
  explicit SeqlockReads(bool active) : active_(active) {
#ifdef HUSH_TSAN
    if (active_) AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
#endif
  }
  ~SeqlockReads() {
#ifdef HUSH_TSAN
    if (active_) AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
  }
  SeqlockReads(const SeqlockReads&) = delete;
  SeqlockReads& operator=(const SeqlockReads&) = delete;

 private:
  [[maybe_unused]] bool active_;
};

// The seqlock reader's copy. Under ThreadSanitizer it is uninstrumented, byte by byte through a
// volatile pointer so that the compiler cannot turn it back into a memcpy call (TSan intercepts
// those whatever the annotations say).
#ifdef HUSH_TSAN
__attribute__((no_sanitize("thread"))) void CopyRacy(char* dst, const char* src, std::size_t n) {
  const volatile char* from = src;
  for (std::size_t i = 0; i < n; ++i) dst[i] = from[i];
}
#else
inline void CopyRacy(char* dst, const char* src, std::size_t n) { std::memcpy(dst, src, n); }
#endif

using format::Load;
using format::Store;
namespace field = format::field;

// Takes `bytes` from `budget` if it holds that many (the session's rings share it).
bool TakeFromBudget(std::atomic<std::uint64_t>* budget, std::uint64_t bytes) {
  std::uint64_t left = budget->load(std::memory_order_relaxed);
  do {
    if (left < bytes) return false;
  } while (!budget->compare_exchange_weak(left, left - bytes, std::memory_order_relaxed));
  return true;
}

// Writes `len` zero bytes at the file offset of `fd` (writev(), not pwrite(): a sandbox may deny
// pwrite to keep /proc/self/mem closed, tests/keys), up to 64 chunks of 16 KiB a system call:
// one for what a ring reserves at creation. Returns 0 or an errno. Past RLIMIT_FSIZE this raises SIGXFSZ: the caller blocks it
// (Core::CreateBufferFiles).
int WriteZeros(int fd, std::size_t len) {
  static constexpr char kZeros[16384] = {};
  constexpr int kVectors = 64;  // 1 MiB a call
  iovec iov[kVectors];
  while (len > 0) {
    int count = 0;
    std::size_t batch = 0;
    for (; count < kVectors && batch < len; ++count) {
      const std::size_t chunk = std::min(len - batch, sizeof kZeros);
      iov[count] = {const_cast<char*>(kZeros), chunk};  // read only: writev never writes it
      batch += chunk;
    }
    const ssize_t n = ::writev(fd, iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;  // the caller prints errno
    }
    if (n == 0) return errno = ENOSPC;
    len -= static_cast<std::size_t>(n);  // a short write: the rest goes in the next call
  }
  return 0;
}

// Whether MADV_POPULATE_WRITE reserves a page's blocks here, as the lazy reservation of Create
// and ReserveSubbuf needs. Linux >= 5.14 does; older kernels answer EINVAL; qemu-user (the
// aarch64 tier) answers 0 and does nothing, which would leave pages the producer then writes
// without blocks: SIGBUS on a full file system. Probed once per process, on the first ring, by
// populating one page that has no block yet and asking mincore() whether it is now in the page
// cache. Relaxed: concurrent probes on two rings compute the same answer.
enum PopulateState : int { kPopulateUnknown, kPopulateReserves, kPopulateDoesNot };
std::atomic<int> g_populate{kPopulateUnknown};

// `hole_page` is the page at `offset` of file `fd`, mapped and not reserved yet. `paid`: the
// budget paid for it (it is in sub-buffer 0, which the producer reserves next anyway), so it
// keeps its block. Otherwise the probe gives the block back afterwards, with a hole punched.
// The punch unmaps the page again (a page-table zap and a TLB flush on every CPU the process's
// threads ran on): the probe with it took ~22 us of the first ring's creation on a 2-vCPU VM,
// ~14 us without (timed inside; docs/benchmarks.md, "Per exec under a session"), so Create
// probes a paid page when it has one.
bool PopulateWriteReserves(void* hole_page, std::size_t page_size, int fd, std::size_t offset, bool paid) {
  const int known = g_populate.load(std::memory_order_relaxed);
  if (known != kPopulateUnknown) return known == kPopulateReserves;
  unsigned char resident = 0;
  const bool reserves = ::madvise(hole_page, page_size, MADV_POPULATE_WRITE) == 0 &&
                        ::mincore(hole_page, page_size, &resident) == 0 && (resident & 1) != 0;
  if (!paid) {
    ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                static_cast<off_t>(page_size));  // best effort: a page at worst
  }
  g_populate.store(reserves ? kPopulateReserves : kPopulateDoesNot, std::memory_order_relaxed);
  return reserves;
}

}  // namespace

Ring::Ring(std::uint32_t index, const RingConfig& config, void* mapping, std::size_t mapping_size,
           bool owns_mapping)
    : index_(index),
      subbuf_size_(config.subbuf_size),
      subbuf_count_(config.subbuf_count),
      mode_(config.mode),
      mapping_(mapping),
      mapping_size_(mapping_size),
      owns_mapping_(owns_mapping),
      header_(static_cast<RingHeader*>(mapping)),
      data_(static_cast<char*>(mapping) + kRingHeaderSize),
      own_scratch_(config.scratch == nullptr ? new char[config.subbuf_size] : nullptr),
      scratch_(config.scratch != nullptr ? config.scratch : own_scratch_.get()) {
  InitHeader(config);
}

Ring::~Ring() {
  if (owns_mapping_) {
    ::munmap(mapping_, mapping_size_);
  } else {
    ::operator delete(mapping_, std::align_val_t{4096});
  }
}

void Ring::InitHeader(const RingConfig& config) {
  RingHeader* h = new (mapping_) RingHeader{};
  std::memcpy(h->magic, kRingMagic, sizeof kRingMagic);
  h->version = kRingVersion;
  h->subbuf_count = config.subbuf_count;
  h->subbuf_size = config.subbuf_size;
  h->stream_index = index_;
  h->mode = config.mode;
  h->pid = config.pid;
  std::memcpy(h->uuid, config.uuid, sizeof h->uuid);
  h->commit.offset.store(kCommitNone, std::memory_order_relaxed);
  for (auto& entry : h->packet_slot) entry.store(kSlotNone, std::memory_order_relaxed);
}

std::unique_ptr<Ring> Ring::Create(int dirfd, std::uint32_t index, const RingConfig& config,
                                   std::string* error) {
  return std::unique_ptr<Ring>(CreateAt(nullptr, dirfd, index, config, error));
}

Ring* Ring::CreateAt(void* storage, int dirfd, std::uint32_t index, const RingConfig& config,
                     std::string* error) {
  static_assert(sizeof(Ring) <= kObjectBytes && alignof(Ring) <= alignof(std::max_align_t));
  const std::string name = format::RingName(index);
  const int fd = ::openat(dirfd, name.c_str(),
                          O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;
    *error = "cannot create ring file " + name + ": " + std::strerror(e);
    errno = e;  // callers look for EEXIST (session/core.cc)
    return nullptr;
  }
  const std::size_t size = RingBytes(config.subbuf_size, config.subbuf_count);
  // A page first touched through the mapping on a full file system kills the program with
  // SIGBUS, so every sub-buffer's blocks are reserved before the producer writes it: here the
  // header and the start of sub-buffer 0 (ring_buffer.h, "First sub-buffer"), by writing zeros
  // with write() (which fails instead: ENOSPC), the rest of sub-buffer 0 when the producer's
  // events reach it (ExtendReservation), the others when the producer first opens them
  // (OpenPacket, ReserveSubbuf) or when the consumer populates a busy ring (Prefault).
  // Not fallocate(): on ext4 unlinking a file with fallocated (unwritten) extents costs ~3 ms,
  // which a short program paid at exit (docs/benchmarks.md, "Per exec under a session"); the
  // zeros are pages the producer writes anyway.
  base::UniqueFd file(fd);
  // The budget pays for what is reserved now (more below if everything must be).
  std::uint64_t paid = 0;
  const auto pay = [&](std::uint64_t bytes) {
    if (config.budget != nullptr && !TakeFromBudget(config.budget, bytes)) return false;
    paid += bytes;
    return true;
  };
  // Every failure from here: the message with errno, nothing paid, and no file left behind.
  const auto fail = [&](const char* what) -> Ring* {
    const int e = errno;
    *error = e == ENOBUFS ? std::string("the session's buffer budget is used up: no ring for this thread")
                          : std::string(what) + " ring file " + name + ": " + std::strerror(e);
    if (config.budget != nullptr) config.budget->fetch_add(paid, std::memory_order_relaxed);
    file.reset();
    ::unlinkat(dirfd, name.c_str(), 0);
    errno = e;
    return nullptr;
  };
  if (!pay(kRingHeaderSize + config.subbuf_size)) {
    errno = ENOBUFS;
    return fail("");
  }
  // Where the lazy scheme cannot run (below), everything is reserved after the probe instead.
  const std::size_t first = std::min(config.subbuf_size, kFirstReservation);
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0 || WriteZeros(fd, kRingHeaderSize + first) != 0) {  // from offset 0
    return fail("cannot size");
  }
  void* mapping = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapping == MAP_FAILED) return fail("cannot map");
  // A fork child never inherits the mapping: it writes rings of its own (or none), and a child
  // that drops its privileges must not be able to write into its parent's trace.
  ::madvise(mapping, size, MADV_DONTFORK);
  // No read-around on a fault. A write fault on a page of a shared file mapping that is not in
  // the page cache yet reads it first (filemap_fault), and without MADV_RANDOM the kernel reads
  // the pages around it too, up to the device's read_ahead_kb: 8 MiB on this project's VMs, so
  // the first fault in a ring on ext4 zeroed the whole ring into the page cache (~0.45 ms per
  // 1 MiB ring, profiled in every short traced program: docs/benchmarks.md, "Per exec under a
  // session") and made all of it resident, which the lazy reservation below exists to avoid.
  // With it, each fault brings in its own page. tmpfs has no read-around: a no-op there.
  ::madvise(mapping, size, MADV_RANDOM);
  // Where MADV_POPULATE_WRITE cannot reserve the other sub-buffers later, all their blocks are
  // reserved now, as before the lazy scheme: fallocate() (ENOSPC, EFBIG fail here, not with a
  // SIGBUS later); file systems without it keep the sparse file. The probe's page has no block
  // yet: the one after the zeros where sub-buffer 0 goes on past them (paid for, and the
  // producer's next to reserve), else the last one, in the last sub-buffer.
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t written = kRingHeaderSize + first;
  const bool probe_paid = first < config.subbuf_size;
  const std::size_t probe_page = probe_paid ? written : (size - 1) / page * page;
  bool all_reserved = size <= written;
  if (!all_reserved && (probe_page < written ||
                        !PopulateWriteReserves(static_cast<char*>(mapping) + probe_page, page, fd, probe_page,
                                               probe_paid))) {
    if (!pay(size - kRingHeaderSize - config.subbuf_size)) {
      ::munmap(mapping, size);
      errno = ENOBUFS;
      return fail("");
    }
    if (::fallocate(fd, 0, 0, static_cast<off_t>(size)) != 0 && errno != EOPNOTSUPP) {
      const int e = errno;
      ::munmap(mapping, size);
      errno = e;
      return fail("cannot size");
    }
    all_reserved = true;
  }
  file.reset();
  Ring* ring = storage != nullptr ? new (storage) Ring(index, config, mapping, size, true)
                                  : new Ring(index, config, mapping, size, true);
  ring->reserved_subbufs_ = 1;  // sub-buffer 0: reserved in steps by the producer, from `first` on
  ring->subbuf0_reserved_ = all_reserved ? config.subbuf_size : first;
  // Relaxed: the ring is not shared yet.
  ring->populated_slots_.store(all_reserved ? config.subbuf_count : first == config.subbuf_size ? 1 : 0,
                               std::memory_order_relaxed);
  ring->budget_ = config.budget;
  for (std::uint32_t slot = 0; slot < (all_reserved ? config.subbuf_count : 1); ++slot) {
    ring->paid_[slot / 64].fetch_or(std::uint64_t{1} << (slot % 64), std::memory_order_relaxed);
  }
  return ring;
}

bool Ring::Prefault() {
  if (!owns_mapping_ || prefault_failed_) return false;
  const std::uint32_t used = slots_used_.load(std::memory_order_relaxed);
  const std::uint32_t want =
      mode_ == RingMode::kFlight ? subbuf_count_ : std::min(subbuf_count_, used + 1);
  if (mapped_slots_ >= want) return true;
  // Populating reserves the sub-buffers' blocks: the budget pays for those not paid for yet first.
  for (std::uint32_t slot = mapped_slots_; slot < want; ++slot) {
    if (!PaySubbuf(slot)) {  // the producer pays for each as it comes, or discards
      prefault_failed_ = true;
      return false;
    }
  }
  // Sets up page-table entries (write faults of a shared mapping: page_mkwrite, no data change),
  // never touching the bytes the producer writes meanwhile. page_mkwrite reserves the blocks of
  // pages not yet reserved; on a full file system it fails, and so does this call (EFAULT where
  // an access would raise SIGBUS), with no signal: the producer then reserves each sub-buffer
  // itself before its first use (OpenPacket), and discards and counts if that fails too.
  char* begin = mapped_slots_ == 0 ? static_cast<char*>(mapping_) : slot_data(mapped_slots_);
  if (::madvise(begin, static_cast<std::size_t>(slot_data(want) - begin), MADV_POPULATE_WRITE) != 0) {
    prefault_failed_ = true;
    return false;
  }
  mapped_slots_ = want;
  // Release: pairs with the producer's acquire in OpenPacket(); these sub-buffers have their
  // blocks, so the producer's own reservation may be skipped there. Never lowers the mark
  // (Create may have set it to all of them).
  std::uint32_t populated = populated_slots_.load(std::memory_order_relaxed);
  while (populated < want && !populated_slots_.compare_exchange_weak(populated, want, std::memory_order_release,
                                                                     std::memory_order_relaxed)) {
  }
  return true;
}

std::unique_ptr<Ring> Ring::CreateInMemory(std::uint32_t index, const RingConfig& config) {
  const std::size_t size = RingBytes(config.subbuf_size, config.subbuf_count);
  void* mapping = ::operator new(size, std::align_val_t{4096});
  std::memset(mapping, 0, size);
  std::unique_ptr<Ring> ring(new Ring(index, config, mapping, size, false));
  // Plain memory: nothing to reserve (relaxed: not shared yet).
  ring->populated_slots_.store(config.subbuf_count, std::memory_order_relaxed);
  return ring;
}

bool Ring::OpenPacket(internal::ThreadWriter& w, std::uint64_t ts, std::uint32_t tid,
                      const char* thread_name) {
  const std::uint64_t n = header_->produced.load(std::memory_order_relaxed);  // producer-owned
  std::uint32_t slot = static_cast<std::uint32_t>(n % subbuf_count_);
  if (mode_ == RingMode::kStream) {
    // Acquire: pairs with the consumer's release of `consumed`; the consumer's reads of the old
    // packet happen before we overwrite it.
    const std::uint64_t consumed = header_->consumed.load(std::memory_order_acquire);
    if (n - consumed >= subbuf_count_) return false;
    slot = FreeSlot(consumed);
  } else if (n >= subbuf_count_) {
    // Flight mode: packet n - K is overwritten; its events are lost and counted exactly.
    // Packet n - K is overwritten; its events are lost unless already written out (a copy in
    // progress fails its seqlock check below and is lost too, consistently).
    const std::uint64_t old = n - subbuf_count_;
    const std::uint64_t mark = header_->written_mark.load(std::memory_order_relaxed);
    const std::uint64_t mark_seq = mark >> kWrittenMarkShift;
    if (old >= mark_seq) {
      const std::uint64_t saved = WrittenEventsOf(mark, old);
      const std::uint64_t events = header_->packet_events[n % subbuf_count_].load(std::memory_order_relaxed);
      const std::uint64_t lost = events > saved ? events - saved : 0;
      header_->overwritten.store(header_->overwritten.load(std::memory_order_relaxed) + lost,
                                 std::memory_order_relaxed);
    }
  }
  // First use: the sub-buffer's blocks may not be reserved yet (Create). Sub-buffers come into
  // use in order, so sub-buffers 0 .. reserved_subbufs_ - 1 are, and so are those Prefault
  // populated.
  if (slot >= reserved_subbufs_ && slot >= populated_slots_.load(std::memory_order_acquire)) {
    if (!ReserveSubbuf(slot)) return false;  // no space on the file system: discarded and counted
  }
  const std::uint32_t used = slots_used_.load(std::memory_order_relaxed);  // ours
  const bool first_use = slot >= used;
  if (first_use) slots_used_.store(slot + 1, std::memory_order_relaxed);
  if (mode_ == RingMode::kStream) slot_busy_[slot / 64] |= std::uint64_t{1} << (slot % 64);
  // Seqlock writer side: announce the rewrite of this sub-buffer before touching it. A reader
  // that copied bytes written below re-reads the commit word after an acquire fence (CopyPacket)
  // and sees kCommitOpening or the new packet's offset, so it drops its torn copy.
  header_->commit.offset.store(kCommitOpening, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  // Published with the packet by the release stores of `commit` below and of `produced` at close.
  header_->packet_slot[n % subbuf_count_].store(
      static_cast<std::uint16_t>(slot | (first_use ? kSlotFirstUse : 0)), std::memory_order_relaxed);
  char* p = slot_data(slot);
  format::PacketHeader h{};
  h.magic = format::kCtfMagic;
  std::memcpy(h.uuid, header_->uuid, sizeof h.uuid);
  h.stream_id = 0;
  h.stream_instance_id = index_;
  h.timestamp_begin = ts;
  h.timestamp_end = ts;
  h.content_size = kPacketHeaderSize * 8;
  h.packet_size = subbuf_size_ * 8;
  h.packet_seq_num = n;
  h.events_discarded = header_->discarded.load(std::memory_order_relaxed);
  h.events_overwritten = header_->overwritten.load(std::memory_order_relaxed);
  h.vpid = header_->pid;
  h.vtid = tid;
  std::memcpy(h.thread_name, thread_name, strnlen(thread_name, sizeof h.thread_name));
  std::memcpy(p, &h, sizeof h);

  w.pos = p + kPacketHeaderSize;
  w.commit = &header_->commit;
  w.ring = this;
  header_->owner_tid.store(tid, std::memory_order_relaxed);
  // Release: a flusher that reads this offset sees the packet header written above.
  header_->commit.timestamp.store(ts, std::memory_order_relaxed);
  header_->commit.offset.store(static_cast<std::uint64_t>(w.pos - data_), std::memory_order_release);
  packet_end_ = p + subbuf_size_;
  // Sub-buffer 0 not reserved whole (ring_buffer.h, "First sub-buffer"), unless the consumer has
  // populated it since (acquire: pairs with Prefault's release).
  if (slot == 0 && subbuf0_reserved_ < subbuf_size_ && populated_slots_.load(std::memory_order_acquire) >= 1) {
    subbuf0_reserved_ = subbuf_size_;
  }
  reserved_end_ = slot == 0 && subbuf0_reserved_ < subbuf_size_ ? p + subbuf0_reserved_ : nullptr;
  w.end.store(reserved_end_ != nullptr ? reserved_end_ : packet_end_, std::memory_order_relaxed);
  open_.store(true, std::memory_order_relaxed);
  return true;
}

bool Ring::ExtendReservation(internal::ThreadWriter& w, const char* event_end) {
  std::size_t want = subbuf_size_;
  // Acquire: as in OpenPacket. A sub-buffer 0 the consumer has populated needs nothing more.
  if (populated_slots_.load(std::memory_order_acquire) == 0) {
    static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t need = static_cast<std::size_t>(event_end - data_);
    want = std::min(subbuf_size_, std::max(need, subbuf0_reserved_ + kReservationStep));
    // Whole pages of the file (the header is one 4 KiB page; pages may be larger): from the page
    // holding the first unreserved byte, which populating again changes nothing in, to the page
    // holding the last byte wanted.
    char* const file = static_cast<char*>(mapping_);
    const std::size_t from = (kRingHeaderSize + subbuf0_reserved_) / page * page;
    const std::size_t to = std::min(mapping_size_, (kRingHeaderSize + want + page - 1) / page * page);
    want = std::min(subbuf_size_, to - kRingHeaderSize);
    // As ReserveSubbuf: page_mkwrite reserves the blocks, the call fails (EFAULT) where a write
    // would raise SIGBUS, and it changes no byte.
    int rc;
    while ((rc = ::madvise(file + from, to - from, MADV_POPULATE_WRITE)) != 0 && errno == EINTR) {
    }
    if (rc != 0 && errno != EINVAL) return false;
  }
  subbuf0_reserved_ = want;
  reserved_end_ = want < subbuf_size_ ? data_ + want : nullptr;
  w.end.store(reserved_end_ != nullptr ? reserved_end_ : packet_end_, std::memory_order_relaxed);
  return true;
}

void Ring::ClosePacket(internal::ThreadWriter& w, std::uint64_t ts_end) {
  if (!open_.load(std::memory_order_relaxed)) return;
  const std::uint64_t n = header_->produced.load(std::memory_order_relaxed);
  char* p = packet(n);
  last_end_ts_ = std::max(ts_end, header_->commit.timestamp.load(std::memory_order_relaxed));
  Store<std::uint64_t>(p, field::kTsEnd, last_end_ts_);
  Store<std::uint64_t>(p, field::kContentSize, static_cast<std::uint64_t>(w.pos - p) * 8);
  Store<std::uint64_t>(p, field::kDiscarded, header_->discarded.load(std::memory_order_relaxed));
  Store<std::uint64_t>(p, field::kOverwritten,
                            header_->overwritten.load(std::memory_order_relaxed));
  // The commit word counts the packet's events (thread_writer.h); the owner wrote it last.
  const auto events = static_cast<std::uint32_t>(CommitEventsOf(
      header_->commit.offset.load(std::memory_order_relaxed)));
  header_->packet_events[n % subbuf_count_].store(events, std::memory_order_relaxed);
  header_->events.store(header_->events.load(std::memory_order_relaxed) + events,
                        std::memory_order_relaxed);
  // Publish: pairs with the acquire load of `produced` in WriteNew(); the consumer that sees n+1
  // sees every byte of packet n.
  header_->produced.store(n + 1, std::memory_order_release);
  // No packet open until the next OpenPacket(): readers must not take the old offset for an
  // open packet n + 1.
  header_->commit.offset.store(kCommitNone, std::memory_order_release);
  w.end.store(nullptr, std::memory_order_relaxed);
  w.pos = nullptr;
  reserved_end_ = nullptr;
  open_.store(false, std::memory_order_relaxed);
}

bool Ring::PaySubbuf(std::uint32_t slot) {
  if (budget_ == nullptr) return true;
  std::atomic<std::uint64_t>& word = paid_[slot / 64];
  const std::uint64_t bit = std::uint64_t{1} << (slot % 64);
  // Relaxed: the bits only keep the producer and the consumer from paying twice for one
  // sub-buffer; the budget is a count, ordered with nothing.
  if ((word.load(std::memory_order_relaxed) & bit) != 0) return true;
  if (!TakeFromBudget(budget_, subbuf_size_)) return false;
  if ((word.fetch_or(bit, std::memory_order_relaxed) & bit) != 0) {
    budget_->fetch_add(subbuf_size_, std::memory_order_relaxed);  // the other side paid first
  }
  return true;
}

std::uint32_t Ring::FreeSlot(std::uint64_t consumed) {
  // Give back the sub-buffers of packets released since the last call. Their packet_slot entries
  // are intact: entry n % K is rewritten only when packet n + K opens, and the last call freed
  // up to a `consumed` >= (this packet) - K (opening the previous packet needed that).
  for (; freed_below_ < consumed; ++freed_below_) {
    const std::uint32_t s = header_->packet_slot[freed_below_ % subbuf_count_].load(std::memory_order_relaxed) & kSlotMask;
    slot_busy_[s / 64] &= ~(std::uint64_t{1} << (s % 64));
  }
  // Never the previous packet's sub-buffer nor the one entry n + 1 names now, even when free
  // (ring_layout.h): a reader whose commit word is still this packet's after it closed then
  // finds it outside the sub-buffer that entry n + 1 names until packet n + 1 opens, and this
  // packet's last commit word never lies in packet n + 1's own sub-buffer.
  std::uint64_t busy[kMaxSubbufCount / 64];
  std::memcpy(busy, slot_busy_, sizeof busy);
  const std::uint64_t n = header_->produced.load(std::memory_order_relaxed);
  const auto exclude = [&](std::uint32_t s) {
    if (s < subbuf_count_) busy[s / 64] |= std::uint64_t{1} << (s % 64);
  };
  if (n != 0) exclude(SlotOf(n - 1));
  exclude(header_->packet_slot[(n + 1) % subbuf_count_].load(std::memory_order_relaxed) & kSlotMask);
  // j = n - consumed <= K - 1 packets wait (the caller checked), packet n - 1 among them when
  // j > 0, and entry n + 1 names packet n + 1 - K's sub-buffer, which waits when j = K - 1: at
  // most K - 1 sub-buffers are excluded when K >= 3, one when K = 2 (both exclusions name packet
  // n - 1's then). A free one exists.
  for (std::uint32_t word = 0; word * 64 < subbuf_count_; ++word) {
    if (~busy[word] != 0) {
      const std::uint32_t s = word * 64 + static_cast<std::uint32_t>(__builtin_ctzll(~busy[word]));
      if (s < subbuf_count_) return s;
    }
  }
  return static_cast<std::uint32_t>(n % subbuf_count_);  // not reached
}

bool Ring::ReserveSubbuf(std::uint32_t slot) {
  if (!PaySubbuf(slot)) return false;  // no budget: discarded and counted
  // MADV_POPULATE_WRITE, as Prefault does for the whole ring: page_mkwrite reserves each page's
  // blocks and the call fails (EFAULT) where a write would raise SIGBUS. Not pwrite(): past
  // RLIMIT_FSIZE a write raises SIGXFSZ even inside the file, and this may run in a signal
  // handler. It changes no byte, so the consumer's Prefault may run at the same time. Only
  // called where the probe of Create found that it reserves (Create reserved everything
  // otherwise), so EINVAL is not expected; it would leave the sub-buffer sparse.
  char* begin = data_ + static_cast<std::size_t>(slot) * subbuf_size_;
  int rc;
  while ((rc = ::madvise(begin, subbuf_size_, MADV_POPULATE_WRITE)) != 0 && errno == EINTR) {
  }
  if (rc != 0 && errno != EINVAL) return false;
  reserved_subbufs_ = slot + 1;
  return true;
}

std::size_t Ring::CopyPacket(std::uint64_t seq, const char* src, std::size_t from, std::size_t to) {
  CopyRacy(scratch_, src, kPacketHeaderSize);  // flight mode: see SeqlockReads
  if (to > from) CopyRacy(scratch_ + kPacketHeaderSize, src + from, to - from);
  if (mode_ == RingMode::kFlight) {
    // Seqlock reader side: pairs with the release fence in OpenPacket(). Sub-buffer seq % K is
    // rewritten once the producer starts opening packet seq + K.
    std::atomic_thread_fence(std::memory_order_acquire);
    const std::uint64_t produced = header_->produced.load(std::memory_order_relaxed);
    const std::uint64_t commit = header_->commit.offset.load(std::memory_order_relaxed);
    if (produced > seq + subbuf_count_) return 0;
    if (produced == seq + subbuf_count_ && commit != kCommitNone) return 0;
  }
  return kPacketHeaderSize + (to - from);
}

std::uint64_t Ring::FirstIntactPacket(std::uint64_t produced, std::uint64_t seq) const {
  // With a packet open (or opening) it occupies the oldest packet's sub-buffer; without one, all
  // K closed packets are intact. Older packets were overwritten (and counted by the producer).
  const bool open = header_->commit.offset.load(std::memory_order_acquire) != kCommitNone;
  const std::uint64_t intact = open ? subbuf_count_ - 1 : subbuf_count_;
  return produced > intact && seq < produced - intact ? produced - intact : seq;
}

std::size_t Ring::CopyClosedPiece(std::uint64_t seq, std::size_t offset, std::uint64_t begin_ts) {
  std::size_t len = 0;
  {
    const SeqlockReads racy_reads(mode_ == RingMode::kFlight);
    const char* src = packet(seq);
    const auto content = Load<std::uint64_t>(src, field::kContentSize) / 8;
    if (content < kPacketHeaderSize || content > subbuf_size_) return kCorruptPacket;
    len = CopyPacket(seq, src, std::max(offset, kPacketHeaderSize), content);
  }
  if (len != 0 && offset != 0) format::StampContinuation(scratch_, begin_ts);
  return len;
}

std::size_t Ring::CopyOpenPiece(std::uint64_t produced, std::size_t offset, std::uint64_t begin_ts,
                                bool drop_if_closed, OpenPiece* piece) {
  const std::size_t from = std::max(offset, kPacketHeaderSize);
  std::uint32_t slot = 0;
  if (!ReadOpenCommit(produced, from, &piece->commit_word, &piece->last_ts, &piece->end, &slot)) return 0;
  std::size_t len = CopyPacket(produced, slot_data(slot), from, piece->end);
  if (drop_if_closed && header_->produced.load(std::memory_order_acquire) != produced) len = 0;
  if (len == 0) return 0;
  if (offset != 0) format::StampContinuation(scratch_, begin_ts);
  // It ends at its last event, where the rest of the packet begins: pieces never overlap in time.
  format::StampOpenPiece(scratch_, piece->last_ts, header_->discarded.load(std::memory_order_relaxed));
  return len;
}

int Ring::WriteCopy(int fd, std::size_t len) {
  const std::uint64_t lost_total = format::StampForStream(
      scratch_, len,
      {header_->disk_seq, header_->overwritten.load(std::memory_order_relaxed), write_lost_events()});
  const int err = base::WriteAll(fd, scratch_, len);
  if (err != 0) {
    // Cut a partly written packet (disk full...) so that later packets follow a whole one.
    if (::ftruncate(fd, static_cast<off_t>(header_->stream_bytes)) != 0) {
      // Nothing better to do: recovery cuts the stream at the damage.
    }
  }
  if (err == 0) {
    std::memcpy(last_header_, scratch_, kPacketHeaderSize);
    last_lost_total_ = lost_total;
    have_last_header_ = true;
    ++header_->disk_seq;
    header_->stream_bytes += len;
    header_->bytes_written.store(header_->bytes_written.load(std::memory_order_relaxed) + len,
                                 std::memory_order_relaxed);
  }
  return err;
}

WriteResult Ring::WriteLossMarker(int fd, WriteResult result) {
  // Losses after the last written packet (ring full at the end, or the thread exited) would
  // otherwise never reach the trace: write a header-only packet carrying the current counts,
  // stamped at the previous packet's end.
  // WriteCopy() adds the overwritten and write-lost counts to the discarded one given here.
  const std::uint64_t discarded = header_->discarded.load(std::memory_order_relaxed);
  const std::uint64_t overwritten = header_->overwritten.load(std::memory_order_relaxed);
  if (!have_last_header_ || discarded + overwritten + write_lost_events() <= last_lost_total_) {
    return result;
  }
  format::MakeLossMarker(scratch_, last_header_, discarded);
  if (const int err = WriteCopy(fd, kPacketHeaderSize); err != 0) {
    if (result.error == 0) result.error = err;
    return result;
  }
  ++result.packets;
  result.bytes += kPacketHeaderSize;
  return result;
}

WriteResult Ring::WriteNew(int fd, bool include_open) {
  WriteResult result;
  // Acquire: pairs with the release in ClosePacket(); packets below `produced` are complete.
  const std::uint64_t produced = header_->produced.load(std::memory_order_acquire);
  std::uint64_t seq = header_->written_seq.load(std::memory_order_relaxed);  // ours
  if (mode_ == RingMode::kFlight) {
    if (const std::uint64_t first = FirstIntactPacket(produced, seq); first != seq) {
      seq = first;
      header_->written_offset = 0;
    }
  }
  for (; seq < produced; ++seq, header_->written_offset = 0) {
    // Relaxed: read by the flight-mode producer only to classify overwrites (OpenPacket).
    header_->written_seq.store(seq, std::memory_order_relaxed);
    const std::size_t len = CopyClosedPiece(seq, header_->written_offset, header_->written_begin_ts);
    if (len == kCorruptPacket) break;  // stop here
    if (len == 0) continue;            // overwritten while copying: lost, counted by the producer
    // Saved (the copy is valid): an overwrite from now on is not a loss. A producer that read
    // written_mark between our validation and this store counts the packet lost although it is
    // written: the only inexact case, at most one packet per write-out, and only when a
    // write-out races the producer lapping it. (written_seq itself advances only once the
    // packet is on disk: recovery relies on it.)
    // The events of this packet written (or counted lost) with its open part before: not lost
    // again if the rest fails.
    const std::uint64_t done_before = WrittenBefore(seq);
    header_->written_mark.store((seq + 1) << kWrittenMarkShift, std::memory_order_relaxed);
    const std::uint32_t events =
        header_->packet_events[seq % subbuf_count_].load(std::memory_order_relaxed);
    if (len > kPacketHeaderSize) {
      if (const int err = WriteCopy(fd, len); err != 0) {
        if (result.error == 0) result.error = err;
        write_lost_events_.fetch_add(events > done_before ? events - done_before : 0, std::memory_order_relaxed);
      } else {
        ++result.packets;
        result.bytes += len;
      }
    }
    if (mode_ == RingMode::kStream) {
      // Release: pairs with the acquire in OpenPacket(); our reads of this packet are done.
      header_->consumed.store(seq + 1, std::memory_order_release);
    }
  }
  header_->written_seq.store(seq, std::memory_order_relaxed);
  if (!include_open || seq != produced) return result;

  // The open packet: everything committed so far. In flight mode a packet closed while we copied
  // may be overwritten next: the next call writes it as a closed packet.
  OpenPiece open;
  const std::size_t len = CopyOpenPiece(produced, header_->written_offset, header_->written_begin_ts,
                                        mode_ == RingMode::kFlight, &open);
  if (len == 0) {
    if (open.commit_word == kCommitNone || open.commit_word == kCommitOpening) {
      return WriteLossMarker(fd, result);
    }
    return result;
  }
  // Validated: these events are saved even if the producer laps the packet from now on.
  const std::uint64_t done_before = WrittenBefore(produced);
  const std::uint64_t events = CommitEventsOf(open.commit_word);
  header_->written_mark.store((produced << kWrittenMarkShift) | events, std::memory_order_relaxed);
  if (const int err = WriteCopy(fd, len); err != 0) {
    if (result.error == 0) result.error = err;
    // These events are lost, counted here once: the rest of the packet continues after them
    // (as after a written piece), so a later write-out neither writes nor counts them again.
    // Before, a failed last write-out (Stop on a full disk) lost them uncounted.
    write_lost_events_.fetch_add(events > done_before ? events - done_before : 0, std::memory_order_relaxed);
  } else {
    ++result.packets;
    result.bytes += len;
  }
  // The rest of this packet restarts the reader's clock at the last event written now (or at the
  // next event, in flight while we read): never after the first event of the rest.
  header_->written_offset = open.end;
  header_->written_begin_ts = open.last_ts;
  return result;
}

bool Ring::ReadOpenCommit(std::uint64_t produced, std::size_t from, std::uint64_t* commit_word,
                          std::uint64_t* last_ts, std::size_t* end, std::uint32_t* slot) {
  // Acquire pairs with the release stores of `commit` in Commit() and OpenPacket().
  std::uint64_t word = header_->commit.offset.load(std::memory_order_acquire);
  for (int attempt = 0;; ++attempt) {
    *last_ts = header_->commit.timestamp.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    const std::uint64_t again = header_->commit.offset.load(std::memory_order_relaxed);
    if (again == word) break;  // *last_ts is the last committed event's or the one in flight
    if (attempt == 8) {        // the writer is busy: take this packet on the next call
      *commit_word = 0;        // never a commit word (an offset points past a packet header)
      return false;
    }
    word = again;
  }
  *commit_word = word;
  if (word == kCommitNone || word == kCommitOpening) return false;
  const std::uint64_t commit = CommitOffsetOf(word);
  // After the acquire load of the word: when it is packet `produced`'s, so is this entry (the
  // older value, of packet produced - K, cannot be read then). Any other word this load can
  // return lies outside the sub-buffer the entry names: packet produced - 1's last one, whether
  // the entry is already packet `produced`'s or still the older one (ring_layout.h), or a later
  // packet's (packet `produced` is not released yet, so its sub-buffer is not reused).
  *slot = SlotOf(produced);
  const std::uint64_t packet_start = static_cast<std::uint64_t>(*slot) * subbuf_size_;
  if (commit < packet_start + kPacketHeaderSize || commit > packet_start + subbuf_size_) {
    return false;  // no packet open yet (or it is being switched): nothing committed in it
  }
  *end = static_cast<std::size_t>(commit - packet_start);
  return *end > from;
}

WriteResult Ring::CopyForSnapshot(int fd, SnapshotCursor* cursor) {
  WriteResult result;
  const auto write = [&](std::size_t len) {
    format::StampForStream(scratch_, len, {cursor->disk_seq, cursor->lost, 0});
    if (const int err = base::WriteAll(fd, scratch_, len); err != 0) {
      if (result.error == 0) result.error = err;
      return;
    }
    ++cursor->disk_seq;
    ++result.packets;
    result.bytes += len;
  };
  // As in WriteNew(): packets below `produced` are complete (acquire pairs with ClosePacket()).
  const std::uint64_t produced = header_->produced.load(std::memory_order_acquire);
  const std::uint64_t overwritten = header_->overwritten.load(std::memory_order_relaxed);
  const std::uint64_t first = FirstIntactPacket(produced, cursor->seq);
  const bool skipping = first != cursor->seq;
  if (cursor->started && skipping) cursor->lost += overwritten - cursor->overwritten_seen;
  cursor->overwritten_seen = overwritten;
  if (skipping) {
    cursor->seq = first;
    cursor->offset = 0;
  }
  cursor->started = true;
  for (; cursor->seq < produced; ++cursor->seq, cursor->offset = 0) {
    const std::size_t len = CopyClosedPiece(cursor->seq, cursor->offset, cursor->begin_ts);
    if (len == kCorruptPacket) break;       // stop here
    if (len > kPacketHeaderSize) write(len);  // 0: overwritten while copying, lost
  }
  if (cursor->seq != produced) return result;
  OpenPiece open;
  const std::size_t len = CopyOpenPiece(produced, cursor->offset, cursor->begin_ts, true, &open);
  if (len == 0) return result;
  write(len);
  if (result.error == 0) {
    cursor->offset = open.end;
    cursor->begin_ts = open.last_ts;
  }
  return result;
}

}  // namespace hush::ring
