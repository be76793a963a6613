// Ring buffer unit tests (src/ring). The test owns the producer: a ThreadWriter of its own, driven
// through OpenPacket/ClosePacket/Room/CountDiscarded exactly like the slow path does
// (src/session/thread_attach.cc), with events written by the inline Reserve/Commit fast path at
// nesting 1. The consumer side is Ring::WriteNew into a stream file, which is parsed here
// byte-for-byte (docs/format.md, section 3) and, where it matters, read back by babeltrace2 with
// metadata produced by the real CTF metadata writer.
//
// The last tests go through a real session (hush::Session) to exercise ReserveSlow.
#include "ring/ring_buffer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "format/ctf_metadata.h"
#include "hushtrace/hushtrace.h"
#include "hushtrace/internal/thread_writer.h"
#include "hushtrace/session.h"
#include "registry/meta_record.h"
#include "registry/registry.h"
#include "ring/ring_layout.h"
#include "runtime/test_util.h"

// The one event of the ring tests: id 0, payload = one uint64 sequence number (12 bytes in all).
HUSH_TRACEPOINT(ringtest, seq, (std::uint64_t, seq))
// Used by the session-level oversize tests.
HUSH_TRACEPOINT(ringtest, blob, (std::span<const std::byte>, data))
HUSH_TRACEPOINT(ringtest, mark, (std::uint64_t, seq))

namespace {

using hush::internal::ThreadWriter;
using hush::format::kCtfMagic;
using hush::ring::kPacketHeaderSize;
using hush::ring::kFirstReservation;
using hush::ring::kReservationStep;
using hush::ring::kRingHeaderSize;
using hush::format::PacketHeader;
using hush::ring::Ring;
using hush::ring::RingConfig;
using hush::ring::RingMode;
using hushtest::TempDir;

constexpr std::size_t kSubbuf = 4096;
constexpr std::uint32_t kCount = 4;
constexpr std::size_t kEventSize = 12;  // 4-byte compact header + uint64
constexpr std::uint64_t kPerPacket = (kSubbuf - kPacketHeaderSize) / kEventSize;  // 332
constexpr std::uint32_t kTid = 4242;
static_assert(kPerPacket == 332);

struct DiskEvent {
  std::uint32_t id;
  std::uint64_t ts;
  std::uint64_t seq;
};
struct DiskPacket {
  PacketHeader h;
  std::vector<DiskEvent> events;
};

// Parses a stream file of `ringtest:seq` events (id 0), rebuilding compact timestamps as
// docs/format.md, section 3 says. Fails the test on any malformed byte.
std::vector<DiskPacket> ParseStream(const std::string& bytes) {
  std::vector<DiskPacket> out;
  std::size_t at = 0;
  while (at < bytes.size()) {
    DiskPacket p;
    if (bytes.size() - at < kPacketHeaderSize) {
      ADD_FAILURE() << "truncated packet header at offset " << at;
      return out;
    }
    std::memcpy(&p.h, bytes.data() + at, sizeof p.h);
    EXPECT_EQ(p.h.magic, hush::format::kCtfMagic) << "at offset " << at;
    EXPECT_EQ(p.h.content_size, p.h.packet_size) << "on disk packet_size == content_size";
    EXPECT_EQ(p.h.content_size % 8, 0u);
    const std::size_t len = p.h.content_size / 8;
    if (len < kPacketHeaderSize || at + len > bytes.size()) {
      ADD_FAILURE() << "bad content_size " << p.h.content_size << " at offset " << at;
      return out;
    }
    std::uint64_t prev = p.h.timestamp_begin;
    std::size_t e = at + kPacketHeaderSize;
    while (e < at + len) {
      DiskEvent ev{};
      const auto id = static_cast<std::uint8_t>(bytes[e]);
      if (id == 255) {
        std::memcpy(&ev.id, bytes.data() + e + 1, 4);
        std::memcpy(&ev.ts, bytes.data() + e + 5, 8);
        e += 13;
      } else {
        ev.id = id;
        std::uint32_t low = 0;
        std::memcpy(&low, bytes.data() + e + 1, 3);
        std::uint64_t ts = (prev & ~std::uint64_t{0xffffff}) | low;
        if (ts < prev) ts += std::uint64_t{1} << 24;
        ev.ts = ts;
        e += 4;
      }
      EXPECT_EQ(ev.id, 0u);
      std::memcpy(&ev.seq, bytes.data() + e, 8);
      e += 8;
      prev = ev.ts;
      p.events.push_back(ev);
    }
    EXPECT_EQ(e, at + len) << "events overrun the packet";
    at += len;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::uint64_t> Seqs(const std::vector<DiskPacket>& packets) {
  std::vector<std::uint64_t> out;
  for (const DiskPacket& p : packets) {
    for (const DiskEvent& e : p.events) out.push_back(e.seq);
  }
  return out;
}

std::vector<std::uint64_t> Range(std::uint64_t from, std::uint64_t to) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

// One ring, its producer and a consumer writing `dir/stream_0`; `dir/metadata` describes it.
class RingHarness {
 public:
  RingHarness(RingMode mode, const std::string& dir, std::size_t subbuf = kSubbuf,
              std::uint32_t count = kCount)
      : dir_(dir) {
    RingConfig config;
    config.subbuf_size = subbuf;
    config.subbuf_count = count;
    config.mode = mode;
    for (int i = 0; i < 16; ++i) config.uuid[i] = static_cast<std::uint8_t>(0x10 + i);
    config.uuid[6] = 0x40;
    config.uuid[8] = 0x80;
    config.pid = static_cast<std::uint32_t>(::getpid());
    ring_ = Ring::CreateInMemory(0, config);
    fd_ = ::open((dir + "/stream_0").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    EXPECT_GE(fd_, 0);
    WriteMetadata(config, mode);
  }
  ~RingHarness() {
    if (fd_ >= 0) ::close(fd_);
  }

  Ring& ring() { return *ring_; }
  ThreadWriter& writer() { return w_; }
  std::uint64_t ts() const { return ts_; }
  std::uint64_t emitted() const { return next_seq_; }
  void AdvanceTime(std::uint64_t d) { ts_ += d; }

  // Emits event `next_seq_` at the next timestamp, as the runtime would. Returns false when the
  // ring had no room (discarded and counted).
  bool Emit() {
    ts_ += 7;
    const std::uint64_t seq = next_seq_++;
    w_.nesting = 1;
    if (ring_->Room(w_) < kEventSize) {
      ring_->ClosePacket(w_, ts_);
      if (!ring_->OpenPacket(w_, ts_, kTid, "ringtest")) {
        ring_->CountDiscarded(1);
        w_.nesting = 0;
        return false;
      }
    }
    char* p = hush::internal::Reserve(w_, /*previous=*/0, /*id=*/0, ts_, sizeof seq);
    EXPECT_NE(p, nullptr) << "the fast path must accept an event that fits";
    if (p == nullptr) {
      w_.nesting = 0;
      return false;
    }
    std::memcpy(p, &seq, sizeof seq);
    hush::internal::Commit(w_, p + sizeof seq);
    w_.nesting = 0;
    return true;
  }
  std::uint64_t EmitMany(std::uint64_t n) {
    std::uint64_t ok = 0;
    for (std::uint64_t i = 0; i < n; ++i) ok += Emit() ? 1 : 0;
    return ok;
  }
  // Fills packets until exactly `packets` are closed and the next one is open with `extra` events.
  hush::ring::WriteResult Consume(bool include_open) {
    return ring_->WriteNew(fd_, include_open);
  }
  void Close() { ring_->ClosePacket(w_, ts_ + 1); }
  std::string Disk() const { return hushtest::ReadFile(dir_ + "/stream_0"); }
  std::vector<DiskPacket> Packets() const { return ParseStream(Disk()); }

 private:
  void WriteMetadata(const RingConfig& config, RingMode mode) {
    using Spec = hush_tp_ringtest_seq;
    const auto& record = hush::internal::kMetaRecord<Spec>;
    hush::registry::Event event;
    std::string error;
    ASSERT_NE(hush::registry::ParseMetaRecord(record.data(), record.size(), &event.meta, &error),
              0u)
        << error;
    event.id = 0;
    event.enabled = true;
    hush::format::TraceInfo info;
    std::memcpy(info.uuid, config.uuid, 16);
    info.pid = config.pid;
    info.procname = "ringtest";
    info.hostname = "localhost";
    info.mode = mode == RingMode::kFlight ? "flight" : "stream";
    info.clock.use_tsc = false;
    info.clock.freq_hz = 1000000000;
    info.clock.freq_source = "nominal";
    ASSERT_TRUE(
        hushtest::WriteFile(dir_ + "/metadata", hush::format::BuildMetadata(info, {&event})));
  }

  std::string dir_;
  std::unique_ptr<Ring> ring_;
  ThreadWriter w_{};
  int fd_ = -1;
  std::uint64_t ts_ = 1000000;
  std::uint64_t next_seq_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Stream mode
// ---------------------------------------------------------------------------------------------

TEST(RingStream, WrapsAroundManyTimesWithAConsumerWithoutLoss) {
  TempDir dir("ring");
  RingHarness h(RingMode::kStream, dir.path());
  const std::uint64_t n = 20 * kPerPacket + 17;
  for (std::uint64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(h.Emit()) << "event " << i << " discarded although the consumer keeps up";
    const auto& hdr = h.ring().header();
    if (hdr.produced.load() - hdr.consumed.load() >= 2) {
      ASSERT_EQ(h.Consume(false).error, 0);
    }
  }
  h.Close();
  const auto r = h.Consume(false);
  ASSERT_EQ(r.error, 0);

  EXPECT_EQ(h.ring().header().produced.load(), 21u) << "20 full packets + 1 partial";
  EXPECT_EQ(h.ring().header().consumed.load(), 21u);
  EXPECT_EQ(h.ring().header().discarded.load(), 0u);
  EXPECT_EQ(h.ring().header().events.load(), n);

  const auto packets = h.Packets();
  ASSERT_EQ(packets.size(), 21u);
  for (std::size_t i = 0; i < packets.size(); ++i) {
    EXPECT_EQ(packets[i].h.packet_seq_num, i);
    EXPECT_EQ(packets[i].h.stream_instance_id, 0u);
    EXPECT_EQ(packets[i].h.vtid, kTid);
    EXPECT_EQ(packets[i].h.events_discarded, 0u);
    EXPECT_EQ(packets[i].events.size(), i < 20 ? kPerPacket : 17u);
    EXPECT_LE(packets[i].h.timestamp_begin, packets[i].events.front().ts);
    EXPECT_GE(packets[i].h.timestamp_end, packets[i].events.back().ts);
    if (i > 0) {
      EXPECT_LE(packets[i - 1].h.timestamp_end, packets[i].h.timestamp_begin);
    }
  }
  EXPECT_EQ(Seqs(packets), Range(0, n));
  // Timestamps rebuilt from the compact headers are the ones the producer used.
  std::uint64_t expect_ts = 1000000;
  for (const DiskPacket& p : packets) {
    for (const DiskEvent& e : p.events) {
      expect_ts += 7;
      ASSERT_EQ(e.ts, expect_ts) << "seq " << e.seq;
    }
  }

  const hushtest::Trace t = hushtest::ReadTrace(dir.path());
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size(), n);
  EXPECT_EQ(t.TotalDiscarded(), 0u);
}

TEST(RingStream, OpenPacketIsWrittenOnlyWhenAskedAndOnlyIfItHasEvents) {
  TempDir dir("ring");
  RingHarness h(RingMode::kStream, dir.path());
  // An open packet without events is never written.
  h.Emit();
  h.Consume(true);
  const std::size_t after_first = h.Disk().size();
  EXPECT_EQ(after_first, kPacketHeaderSize + kEventSize);
  EXPECT_EQ(h.Consume(true).packets, 0u) << "nothing new committed: nothing to write";
  h.EmitMany(5);
  EXPECT_EQ(h.Consume(false).packets, 0u) << "include_open=false must not write the open packet";
  EXPECT_EQ(h.Disk().size(), after_first);
  EXPECT_EQ(h.Consume(true).packets, 1u);
  EXPECT_EQ(Seqs(h.Packets()), Range(0, 6));
}

TEST(RingStream, DiscardsAndCountsExactlyWhenTheConsumerDoesNotKeepUp) {
  TempDir dir("ring");
  RingHarness h(RingMode::kStream, dir.path());
  const std::uint64_t capacity = kCount * kPerPacket;  // every sub-buffer full, none consumed
  EXPECT_EQ(h.EmitMany(capacity), capacity);
  EXPECT_EQ(h.ring().header().discarded.load(), 0u);
  // The next 100 events find every sub-buffer unconsumed.
  EXPECT_EQ(h.EmitMany(100), 0u);
  EXPECT_EQ(h.ring().header().discarded.load(), 100u);
  EXPECT_EQ(h.ring().header().produced.load(), kCount);
  EXPECT_FALSE(h.ring().HasOpenPacket());

  // The consumer catches up; the producer goes on where it was.
  ASSERT_EQ(h.Consume(false).packets, kCount);
  EXPECT_EQ(h.EmitMany(10), 10u);
  h.Close();
  ASSERT_EQ(h.Consume(false).error, 0);

  const auto packets = h.Packets();
  ASSERT_EQ(packets.size(), kCount + 1);
  std::vector<std::uint64_t> expect = Range(0, capacity);
  for (std::uint64_t s = capacity + 100; s < capacity + 110; ++s) expect.push_back(s);
  EXPECT_EQ(Seqs(packets), expect);
  for (std::uint32_t i = 0; i < kCount; ++i) EXPECT_EQ(packets[i].h.events_discarded, 0u);
  EXPECT_EQ(packets[kCount].h.events_discarded, 100u)
      << "the first packet after the loss carries the cumulative discarded count";

  // A CTF reader agrees: 100 events discarded, the others all read.
  const hushtest::Trace t = hushtest::ReadTrace(dir.path());
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.TotalDiscarded(), 100u);
  EXPECT_EQ(t.events.size() + t.TotalDiscarded(), h.emitted());
}

// A signal handler's nested event is discarded and counted on the owning thread, possibly while
// that thread is counting its own discards. Both counts must land: the handler fires every 10 µs
// for 200 ms while this thread counts in a tight loop, so an interruption between a load and a
// store (the counter was once load + store) happens many times over.
Ring* g_counting_ring = nullptr;
volatile std::uint64_t g_handler_counts = 0;

void CountFromHandler(int) {
  g_counting_ring->CountDiscarded(1);
  g_handler_counts = g_handler_counts + 1;
}

TEST(RingStream, DiscardCountsFromASignalHandlerOnTheSameThreadAreNeverLost) {
#if defined(__SANITIZE_THREAD__)
  // TSan runs a handler only at its own safe points (interceptors, synchronization), never
  // between two plain instructions: the interruption this test needs cannot happen there, and
  // the handler ran 32 times in 200 ms in a CI run.
  GTEST_SKIP() << "ThreadSanitizer defers asynchronous signal handlers to its own safe points";
#endif
  TempDir dir("ring");
  RingHarness h(RingMode::kStream, dir.path());
  g_counting_ring = &h.ring();
  g_handler_counts = 0;
  struct sigaction sa = {}, old = {};
  sa.sa_handler = CountFromHandler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ASSERT_EQ(::sigaction(SIGALRM, &sa, &old), 0);
  sigset_t alrm;
  sigemptyset(&alrm);
  sigaddset(&alrm, SIGALRM);
  ::pthread_sigmask(SIG_UNBLOCK, &alrm, nullptr);
  itimerval timer = {};
  timer.it_interval.tv_usec = 10;
  timer.it_value.tv_usec = 10;
  ::setitimer(ITIMER_REAL, &timer, nullptr);
  std::uint64_t own = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 1000; ++i, ++own) h.ring().CountDiscarded(1);
  }
  timer = {};
  ::setitimer(ITIMER_REAL, &timer, nullptr);
  ::sigaction(SIGALRM, &old, nullptr);
  EXPECT_GT(g_handler_counts, 100u) << "the handler hardly ran: the test proves nothing";
  EXPECT_EQ(h.ring().header().discarded.load(), own + g_handler_counts);
}

TEST(RingStream, OpenPacketFailsExactlyWhenAllSubBuffersAreUnconsumed) {
  TempDir dir("ring");
  RingHarness h(RingMode::kStream, dir.path());
  ThreadWriter& w = h.writer();
  Ring& r = h.ring();
  for (std::uint32_t i = 0; i < kCount; ++i) {
    ASSERT_TRUE(r.OpenPacket(w, 2000 + i, kTid, "t")) << "packet " << i;
    EXPECT_EQ(r.Room(w), kSubbuf - kPacketHeaderSize);
    r.ClosePacket(w, 2000 + i);
  }
  EXPECT_FALSE(r.OpenPacket(w, 3000, kTid, "t"));
  EXPECT_EQ(r.Room(w), 0u);
  // Consuming one packet (empty packets are released without being written) frees one slot.
  h.Consume(false);
  EXPECT_EQ(r.header().consumed.load(), kCount);
  EXPECT_TRUE(r.OpenPacket(w, 3001, kTid, "t"));
  EXPECT_EQ(h.Disk().size(), 0u) << "packets without events are not written";
}

// Pages of [begin, begin + len) present in this process's page tables (/proc/self/pagemap, bit 63;
// readable without privileges).
std::size_t PresentPages(const void* begin, std::size_t len) {
  const long page = ::sysconf(_SC_PAGESIZE);
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t present = 0;
  const auto first = reinterpret_cast<std::uintptr_t>(begin) / page;
  for (std::size_t i = 0; i < len / page; ++i) {
    std::uint64_t entry = 0;
    if (::pread(fd, &entry, sizeof entry, static_cast<off_t>((first + i) * sizeof entry)) == 8 &&
        (entry >> 63) != 0) {
      ++present;
    }
  }
  ::close(fd);
  return present;
}

// A file ring .ring_0 of 8 sub-buffers of 64 KiB in a fresh directory, as a session makes them.
struct FileRing {
  FileRing() : dir("ring"), dirfd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    config.subbuf_size = 64 * 1024;
    config.subbuf_count = 8;
    ring = Ring::Create(dirfd, 0, config, &error);
  }
  ~FileRing() {
    if (dirfd >= 0) ::close(dirfd);
  }
  // The blocks the ring file holds now.
  std::size_t ReservedBytes() const {
    struct stat st;
    EXPECT_EQ(::fstatat(dirfd, ".ring_0", &st, 0), 0);
    return static_cast<std::size_t>(st.st_blocks) * 512;
  }
  TempDir dir;
  int dirfd;
  RingConfig config;
  std::string error;
  std::unique_ptr<Ring> ring;
};

// Prefault maps the sub-buffers the producer used and one more, never the rest of the ring, and
// follows the ring as it grows.
TEST(RingStream, PrefaultMapsTheSubBuffersInUseAndTheNextOneWithoutChangingTheirContents) {
  FileRing f;
  ASSERT_NE(f.ring, nullptr) << f.error;
  std::unique_ptr<Ring>& r = f.ring;
  const RingConfig& config = f.config;
  const std::size_t data_len = config.subbuf_size * config.subbuf_count;
  const std::size_t per_subbuf = config.subbuf_size / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  char* data = r->slot_data(0);
  ThreadWriter w{};
  ASSERT_TRUE(r->OpenPacket(w, 1000, kTid, "t"));  // writes the first packet's header
  PacketHeader before{};
  std::memcpy(&before, r->packet(0), sizeof before);
  ASSERT_LT(PresentPages(data, data_len), per_subbuf) << "the test needs a lazily mapped ring";
  if (const std::string why = hushtest::PopulateWriteProblem(); !why.empty()) GTEST_SKIP() << why;
  ASSERT_TRUE(r->Prefault());
  EXPECT_EQ(PresentPages(data, 2 * config.subbuf_size), 2 * per_subbuf);
  EXPECT_EQ(PresentPages(r->slot_data(2), data_len - 2 * config.subbuf_size), 0u)
      << "sub-buffers the producer has not reached stay unmapped";
  EXPECT_EQ(std::memcmp(&before, r->packet(0), sizeof before), 0);
  EXPECT_TRUE(r->Prefault()) << "a second call answers without populating again";
  // No consumer: the ring grows to three sub-buffers, and Prefault maps a fourth.
  std::uint64_t ts = 1001;
  for (int packet = 0; packet < 2; ++packet) {
    r->ClosePacket(w, ts);
    ASSERT_TRUE(r->OpenPacket(w, ++ts, kTid, "t"));
  }
  EXPECT_EQ(r->slots_used(), 3u);
  ASSERT_TRUE(r->Prefault());
  EXPECT_EQ(PresentPages(data, 4 * config.subbuf_size), 4 * per_subbuf);
  EXPECT_EQ(PresentPages(r->slot_data(4), data_len - 4 * config.subbuf_size), 0u);
  r->ClosePacket(w, ts + 1);
}

// A stream ring whose consumer keeps up goes back and forth between two sub-buffers, however
// many packets go through it; one that falls behind grows, then shrinks back to the lowest free
// ones once the consumer catches up. Every event reaches the stream in order.
TEST(RingStream, UsesTheLowestFreeSubBuffersSoARingGrowsOnlyAsFarAsTheConsumerFallsBehind) {
  TempDir dir("ring");
  RingHarness h(RingMode::kStream, dir.path(), kSubbuf, 8);
  Ring& r = h.ring();
  std::uint64_t closed = 0;
  const auto emit_packets = [&](std::uint64_t packets, bool consume) {
    const std::uint64_t until = closed + packets;
    while (closed < until) {
      ASSERT_TRUE(h.Emit());
      const std::uint64_t produced = r.header().produced.load();
      if (produced != closed) {
        closed = produced;
        if (consume) {
          ASSERT_EQ(h.Consume(false).error, 0);
        }
      }
    }
  };
  emit_packets(40, true);
  EXPECT_EQ(r.slots_used(), 2u) << "40 packets through two sub-buffers of eight";
  emit_packets(5, false);  // the consumer falls 5 packets behind
  EXPECT_EQ(r.slots_used(), 6u) << "5 waiting, 1 open";
  ASSERT_EQ(h.Consume(false).error, 0);
  std::vector<std::uint32_t> after;
  for (int i = 0; i < 6; ++i) {
    emit_packets(1, true);
    after.push_back(r.SlotOf(closed));
  }
  // Back to the lowest: none waits when a packet opens, and FreeSlot excludes two at most.
  for (std::uint32_t slot : after) EXPECT_LT(slot, 3u);
  EXPECT_EQ(r.slots_used(), 6u);
  // Each packet's sub-buffer differs from the one before it (ring_layout.h).
  for (std::uint64_t seq = closed - 6; seq < closed; ++seq) EXPECT_NE(r.SlotOf(seq), r.SlotOf(seq + 1));
  h.Close();
  ASSERT_EQ(h.Consume(false).error, 0);
  const auto packets = h.Packets();
  EXPECT_EQ(Seqs(packets), Range(0, h.emitted()));
  for (std::size_t i = 0; i < packets.size(); ++i) EXPECT_EQ(packets[i].h.packet_seq_num, i);
}

// Between ClosePacket's store of `produced` and the next OpenPacket, a reader can find the commit
// word still at the end of the packet just closed, and the entry of the next packet not written
// yet. With three sub-buffers and a consumer that keeps up, that entry names packet n's own
// sub-buffer if FreeSlot excludes only packet n - 1's: the write-out of the open packet then
// copies packet n's events a second time as packet n + 1's. The test holds the ring in that
// window after every packet.
TEST(RingStream, AStaleCommitWordOfTheClosedPacketIsNeverReadAsTheNextPacket) {
  TempDir dir("ring");
  RingHarness h(RingMode::kStream, dir.path(), kSubbuf, 3);
  Ring& r = h.ring();
  ThreadWriter& w = h.writer();
  for (int packet = 0; packet < 12; ++packet) {
    while (!r.HasOpenPacket() || r.Room(w) >= kEventSize) ASSERT_TRUE(h.Emit());
    const std::uint64_t last_word = r.header().commit.offset.load();
    r.ClosePacket(w, h.ts());
    r.header().commit.offset.store(last_word);  // the window
    ASSERT_EQ(h.Consume(true).error, 0);
    r.header().commit.offset.store(hush::ring::kCommitNone);  // where ClosePacket left it
  }
  EXPECT_EQ(r.slots_used(), 3u);
  h.Close();
  ASSERT_EQ(h.Consume(false).error, 0);
  EXPECT_EQ(Seqs(h.Packets()), Range(0, h.emitted())) << "no event written twice";
}

// A file ring reserves its blocks (zeros written with write(), which fails on a full file system
// where a first write through the mapping would raise SIGBUS) for the header and the first
// kFirstReservation bytes of sub-buffer 0 at creation, and (MADV_POPULATE_WRITE) for each later
// sub-buffer when the producer first opens a packet there: a short program's ring stays small,
// and its unlink at exit cheap (no fallocated extents). Where MADV_POPULATE_WRITE reserves
// nothing (qemu-user), all at creation.
TEST(RingStream, AFileRingReservesEachSubBufferWhenItsFirstPacketOpens) {
  FileRing f;
  ASSERT_NE(f.ring, nullptr) << f.error;
  std::unique_ptr<Ring>& r = f.ring;
  const RingConfig& config = f.config;
  const auto reserved = [&] { return f.ReservedBytes(); };
  const std::size_t first = kRingHeaderSize + kFirstReservation;
  if (const std::string why = hushtest::PopulateWriteProblem(); !why.empty()) {
    // The fallback (Create): every block reserved at creation, so that no page written through
    // the mapping can raise SIGBUS on a full file system.
    EXPECT_GE(reserved(), kRingHeaderSize + config.subbuf_size * config.subbuf_count) << why;
    return;
  }
  EXPECT_GE(reserved(), first);
  EXPECT_LT(reserved(), first + kReservationStep) << "only the header and the start of sub-buffer 0";
  ThreadWriter w{};
  std::uint64_t ts = 1000;
  for (int packet = 0; packet < 4; ++packet) {
    ASSERT_TRUE(r->OpenPacket(w, ts, kTid, "t"));
    r->ClosePacket(w, ++ts);
  }
  // Sub-buffers 1-3 whole; sub-buffer 0 still its start only (no event went past it).
  EXPECT_GE(reserved(), first + 3 * config.subbuf_size);
  EXPECT_LT(reserved(), first + 3 * config.subbuf_size + kReservationStep);
  // The packets the producer wrote are intact (the zeros went only to sub-buffers never opened).
  for (std::uint64_t seq = 0; seq < 4; ++seq) {
    PacketHeader h{};
    std::memcpy(&h, r->packet(seq), sizeof h);
    EXPECT_EQ(h.magic, kCtfMagic);
    EXPECT_EQ(h.packet_seq_num, seq);
  }
}

// Sub-buffer 0 is reserved in steps (ring_buffer.h, "First sub-buffer"): while a packet is open
// there, the producer's `end` stops at the reserved part, an event past it is PastReservation,
// and ExtendReservation reserves at least kReservationStep more (the blocks are there after it)
// and moves `end`, up to the packet's end, where the window is gone.
TEST(RingStream, SubBufferZeroIsReservedAsTheProducerReachesIt) {
  FileRing f;
  ASSERT_NE(f.ring, nullptr) << f.error;
  if (const std::string why = hushtest::PopulateWriteProblem(); !why.empty()) GTEST_SKIP() << why;
  std::unique_ptr<Ring>& r = f.ring;
  const RingConfig& config = f.config;
  ThreadWriter w{};
  ASSERT_TRUE(r->OpenPacket(w, 1000, kTid, "t"));
  char* const start = r->packet(0);
  char* const packet_end = start + config.subbuf_size;
  ASSERT_EQ(w.end.load(), start + kFirstReservation);
  EXPECT_FALSE(r->PastReservation(start + kFirstReservation));
  EXPECT_TRUE(r->PastReservation(start + kFirstReservation + 1));
  std::size_t blocks = f.ReservedBytes();
  char* end = w.end.load();
  int steps = 0;
  while (end != packet_end) {
    ASSERT_TRUE(r->ExtendReservation(w, end + 1)) << std::strerror(errno);
    ASSERT_GT(w.end.load(), end);
    EXPECT_GE(w.end.load() - end,
              static_cast<std::ptrdiff_t>(std::min<std::size_t>(kReservationStep, packet_end - end)));
    end = w.end.load();
    EXPECT_GE(f.ReservedBytes(), kRingHeaderSize + static_cast<std::size_t>(end - start))
        << "blocks for what `end` allows";
    EXPECT_GT(f.ReservedBytes(), blocks);
    blocks = f.ReservedBytes();
    ++steps;
  }
  EXPECT_FALSE(r->PastReservation(packet_end));
  EXPECT_EQ(steps, static_cast<int>((config.subbuf_size - kFirstReservation + kReservationStep - 1) /
                                    kReservationStep));
  r->ClosePacket(w, 2000);
  ASSERT_TRUE(r->OpenPacket(w, 2001, kTid, "t"));
  EXPECT_EQ(w.end.load(), r->packet(1) + config.subbuf_size) << "a packet in another sub-buffer has no window";
}

// An event that ends far past the reserved part (a large payload) gets its bytes in one step.
TEST(RingStream, AnEventPastTheNextStepIsReservedWhole) {
  FileRing f;
  ASSERT_NE(f.ring, nullptr) << f.error;
  if (const std::string why = hushtest::PopulateWriteProblem(); !why.empty()) GTEST_SKIP() << why;
  ThreadWriter w{};
  ASSERT_TRUE(f.ring->OpenPacket(w, 1000, kTid, "t"));
  char* const start = f.ring->packet(0);
  char* const far = start + kFirstReservation + kReservationStep + 100;  // past the next step
  ASSERT_TRUE(f.ring->ExtendReservation(w, far));
  EXPECT_GE(w.end.load(), far);
  EXPECT_FALSE(f.ring->PastReservation(far));
  EXPECT_GE(f.ReservedBytes(), kRingHeaderSize + static_cast<std::size_t>(far - start));
}

// In memory (tests, recovery): nothing to map.
TEST(RingStream, PrefaultOfAnInMemoryRingIsANoOp) {
  RingConfig config;
  config.subbuf_size = kSubbuf;
  config.subbuf_count = kCount;
  EXPECT_FALSE(Ring::CreateInMemory(0, config)->Prefault());
}

// ---------------------------------------------------------------------------------------------
// Flight mode
// ---------------------------------------------------------------------------------------------

TEST(RingFlight, OverwritesTheOldestPacketsAndCountsTheirEventsExactly) {
  TempDir dir("ring");
  RingHarness h(RingMode::kFlight, dir.path());
  EXPECT_EQ(h.EmitMany(kCount * kPerPacket), kCount * kPerPacket) << "flight mode never discards";
  EXPECT_EQ(h.ring().header().overwritten.load(), 0u);
  // Opening packet 4 overwrites packet 0, packet 5 overwrites packet 1, ...
  for (std::uint64_t p = kCount; p < 10; ++p) {
    h.Emit();  // opens packet p
    EXPECT_EQ(h.ring().header().overwritten.load(), (p - kCount + 1) * kPerPacket)
        << "packet " << p;
    h.EmitMany(kPerPacket - 1);
  }
  h.EmitMany(50);  // packet 10 (overwrites packet 6), partially filled
  EXPECT_EQ(h.ring().header().overwritten.load(), 7 * kPerPacket);
  EXPECT_EQ(h.ring().header().discarded.load(), 0u);
  EXPECT_EQ(h.emitted(), 10 * kPerPacket + 50);
}

TEST(RingFlight, WriteNewWritesTheNewestPacketsOldestFirst) {
  TempDir dir("ring");
  RingHarness h(RingMode::kFlight, dir.path());
  const std::uint64_t n = 10 * kPerPacket + 50;
  EXPECT_EQ(h.EmitMany(n), n);
  const auto r = h.Consume(true);
  ASSERT_EQ(r.error, 0);
  EXPECT_EQ(r.packets, 4u) << "packets 7, 8, 9 (closed) and 10 (open)";

  const auto packets = h.Packets();
  ASSERT_EQ(packets.size(), 4u);
  EXPECT_EQ(Seqs(packets), Range(7 * kPerPacket, n)) << "the most recent events, oldest first";
  for (std::size_t i = 0; i < packets.size(); ++i) {
    EXPECT_EQ(packets[i].h.packet_seq_num, i) << "disk sequence numbers have no gap";
  }
  // read + overwritten == emitted, exactly.
  const std::uint64_t overwritten = h.ring().header().overwritten.load();
  EXPECT_EQ(Seqs(packets).size() + overwritten, n);
  EXPECT_EQ(packets.back().h.events_overwritten, overwritten);
  EXPECT_EQ(packets.back().h.events_discarded, overwritten)
      << "on disk events_discarded includes the overwritten events";

  const hushtest::Trace t = hushtest::ReadTrace(dir.path());
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size(), 3 * kPerPacket + 50);
  EXPECT_GE(t.discard_messages, 1u) << "a CTF reader reports the loss";
  const hushtest::RecordedLosses lost = hushtest::ReadRecordedLosses(dir.path());
  ASSERT_TRUE(lost.ok);
  EXPECT_EQ(t.events.size() + lost.discarded, n) << "the trace's own loss count adds up";
}

// A snapshot writes part of the open packet; later that packet fills up, closes and is
// overwritten. Only its events that were not written out are lost.
// Regression test of a fixed bug; what was wrong: Ring::OpenPacket (src/ring/ring_buffer.cc, flight branch) counts every event of
// the overwritten packet as lost when written_seq == that packet although written_offset > 0
// (partly written), so the trace claims more losses than there were: read + overwritten > emitted
// by the events the snapshot had saved.
TEST(RingFlight, OverwritingAPartlyWrittenPacketCountsOnlyItsUnwrittenEvents) {
  TempDir dir("ring");
  RingHarness h(RingMode::kFlight, dir.path());
  h.EmitMany(10);
  ASSERT_EQ(h.Consume(true).packets, 1u) << "a snapshot writes the 10 events of packet 0";
  const std::uint64_t n = (kCount + 1) * kPerPacket;  // fills packets 0..3, overwrites packet 0
  h.EmitMany(n - 10);
  EXPECT_EQ(h.ring().header().overwritten.load(), kPerPacket - 10)
      << "packet 0 lost only the events the snapshot had not written";
  h.Close();
  ASSERT_EQ(h.Consume(true).error, 0);
  const auto packets = h.Packets();
  const auto seqs = Seqs(packets);
  std::vector<std::uint64_t> expect = Range(0, 10);
  for (std::uint64_t s = kPerPacket; s < n; ++s) expect.push_back(s);
  EXPECT_EQ(seqs, expect);
  EXPECT_EQ(seqs.size() + h.ring().header().overwritten.load(), n)
      << "read + overwritten == emitted";
  const hushtest::Trace t = hushtest::ReadTrace(dir.path());
  ASSERT_TRUE(t.ok) << t.error;
  const hushtest::RecordedLosses lost = hushtest::ReadRecordedLosses(dir.path());
  ASSERT_TRUE(lost.ok);
  EXPECT_EQ(t.events.size() + lost.discarded, n) << "the trace's own count adds up";
}

// When the owning thread exited (its last packet closed, none open), all K sub-buffers hold
// intact closed packets.
// Regression test (fixed in 6dc7adc): WriteNew() skipped to packet produced - K + 1 as if a packet
// were open, and the oldest intact packet was neither written nor counted as overwritten.
TEST(RingFlight, WithNoOpenPacketEverySubBufferIsWritten) {
  TempDir dir("ring");
  RingHarness h(RingMode::kFlight, dir.path());
  const std::uint64_t n = 10 * kPerPacket;
  h.EmitMany(n);
  h.Close();  // what Detach() does when the thread exits
  ASSERT_FALSE(h.ring().HasOpenPacket());
  EXPECT_EQ(h.ring().header().produced.load(), 10u);
  const std::uint64_t overwritten = h.ring().header().overwritten.load();
  EXPECT_EQ(overwritten, 6 * kPerPacket) << "packets 0..5 were overwritten by packets 4..9";
  ASSERT_EQ(h.Consume(true).error, 0);
  const auto packets = h.Packets();
  EXPECT_EQ(Seqs(packets), Range(6 * kPerPacket, n)) << "packets 6..9 are intact in the ring";
  EXPECT_EQ(Seqs(packets).size() + overwritten, n) << "read + overwritten == emitted";
}

// All the overwritten events were lost before packet 7, the first one written: it must carry the
// whole count, and no loss may be reported between consecutive packets 7..10. Regression test
// (fixed in 6dc7adc): each packet used to keep the count as of its own close, so a CTF reader
// reported losses between packets that follow each other without a gap.
TEST(RingFlight, LossesAreReportedBeforeTheFirstWrittenPacketNotBetweenContiguousOnes) {
  TempDir dir("ring");
  RingHarness h(RingMode::kFlight, dir.path());
  const std::uint64_t n = 10 * kPerPacket + 50;
  h.EmitMany(n);
  ASSERT_EQ(h.Consume(true).error, 0);
  const auto packets = h.Packets();
  ASSERT_EQ(packets.size(), 4u);
  EXPECT_EQ(Seqs(packets), Range(7 * kPerPacket, n)) << "no event is missing between the packets";
  for (const DiskPacket& p : packets) {
    EXPECT_EQ(p.h.events_discarded, 7 * kPerPacket) << "packet " << p.h.packet_seq_num;
  }
  const hushtest::Trace t = hushtest::ReadTrace(dir.path());
  ASSERT_TRUE(t.ok) << t.error;
  std::vector<std::string> discard_lines;
  for (const std::string& line : t.raw) {
    if (line[0] == 'D') discard_lines.push_back(line);
  }
  EXPECT_EQ(discard_lines.size(), 1u) << "one loss, before the first packet; got:\n"
                                      << testing::PrintToString(discard_lines);
}

TEST(RingFlight, SecondWriteAfterASnapshotWritesOnlyNewEvents) {
  TempDir dir("ring");
  RingHarness h(RingMode::kFlight, dir.path());
  h.EmitMany(kPerPacket + 10);  // packet 0 closed, packet 1 open with 10 events
  ASSERT_EQ(h.Consume(true).packets, 2u);
  h.EmitMany(kPerPacket);  // completes packet 1, opens packet 2
  h.Close();
  ASSERT_EQ(h.Consume(true).error, 0);
  const auto packets = h.Packets();
  EXPECT_EQ(Seqs(packets), Range(0, 2 * kPerPacket + 10)) << "every event exactly once, in order";
  EXPECT_EQ(h.ring().header().overwritten.load(), 0u);
  const hushtest::Trace t = hushtest::ReadTrace(dir.path());
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size(), 2 * kPerPacket + 10);
}

// ---------------------------------------------------------------------------------------------
// Partial writes of the open packet
//
// Regression tests (fixed in 6dc7adc): the written part of the open packet ended at the flusher's
// `now`, after the point where the rest of the packet begins, so packets of a stream overlapped in
// time and babeltrace2 refused every trace with a snapshot taken mid-packet.
// ---------------------------------------------------------------------------------------------

TEST(RingPartial, ContinuationPacketBeginsNoLaterThanItsFirstEvent) {
  TempDir dir("ring");
  RingHarness h(RingMode::kStream, dir.path());
  h.EmitMany(10);
  ASSERT_EQ(h.Consume(true).packets, 1u);
  h.EmitMany(20);  // same ring packet, committed after the partial write
  h.Close();
  ASSERT_EQ(h.Consume(false).packets, 1u);

  const auto packets = h.Packets();
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_EQ(packets[0].events.size(), 10u);
  EXPECT_EQ(packets[1].events.size(), 20u);
  EXPECT_EQ(packets[0].h.packet_seq_num, 0u);
  EXPECT_EQ(packets[1].h.packet_seq_num, 1u);
  EXPECT_EQ(Seqs(packets), Range(0, 30));
  EXPECT_LE(packets[1].h.timestamp_begin, packets[1].events.front().ts);
  EXPECT_LE(packets[0].h.timestamp_end, packets[1].h.timestamp_begin);
  // The compact timestamps of the continuation decode to the producer's timestamps.
  std::uint64_t expect_ts = 1000000;
  for (const DiskPacket& p : packets) {
    for (const DiskEvent& e : p.events) EXPECT_EQ(e.ts, expect_ts += 7) << "seq " << e.seq;
  }
  const hushtest::Trace t = hushtest::ReadTrace(dir.path());
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size(), 30u);
}

TEST(RingPartial, SeveralPartialWritesOfOnePacketNeverDuplicateOrLoseEvents) {
  TempDir dir("ring");
  RingHarness h(RingMode::kStream, dir.path());
  for (int round = 0; round < 50; ++round) {
    h.EmitMany(static_cast<std::uint64_t>(round % 7) * 3 + 1);
    ASSERT_EQ(h.Consume(true).error, 0);
  }
  h.Close();
  ASSERT_EQ(h.Consume(false).error, 0);
  const auto packets = h.Packets();
  EXPECT_EQ(Seqs(packets), Range(0, h.emitted()));
  for (std::size_t i = 0; i < packets.size(); ++i) {
    EXPECT_EQ(packets[i].h.packet_seq_num, i);
    EXPECT_LE(packets[i].h.timestamp_begin, packets[i].events.front().ts);
    if (i > 0) {
      EXPECT_LE(packets[i - 1].h.timestamp_end, packets[i].h.timestamp_begin);
    }
  }
  const hushtest::Trace t = hushtest::ReadTrace(dir.path());
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size(), h.emitted());
}

// An event whose timestamp was read before a flush but committed after it (the emitting thread
// reads the clock before reserving): an older flush design closed the partial packet at `now`,
// later than that event. The stream must never go back in time.
TEST(RingPartial, EventCommittedAfterAFlushWithAnOlderTimestampKeepsPacketsOrdered) {
  TempDir dir("ring");
  RingHarness h(RingMode::kStream, dir.path());
  h.EmitMany(10);
  ASSERT_EQ(h.Consume(true).packets, 1u);  // (a flusher's clock may be ahead of later events)
  h.EmitMany(5);
  h.Close();
  ASSERT_EQ(h.Consume(false).packets, 1u);
  const auto packets = h.Packets();
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_LE(packets[0].h.timestamp_end, packets[1].h.timestamp_begin)
      << "packets of a stream must not overlap in time";
  EXPECT_LE(packets[0].h.timestamp_end, packets[1].events.front().ts)
      << "an event must not precede the end of the previous packet";
  const hushtest::Trace t = hushtest::ReadTrace(dir.path());
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.events.size(), 15u);
}

// ---------------------------------------------------------------------------------------------
// Through the real emit path (ReserveSlow) with a session
// ---------------------------------------------------------------------------------------------

std::vector<std::byte> Bytes(std::size_t n) {
  std::vector<std::byte> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::byte>(i * 7 + 1);
  return b;
}

// A 32 KiB buffer gives 8 sub-buffers of 4096 bytes: the largest payload is
// 4096 - 112 (packet header) - 13 (extended event header) = 3971 bytes = 4 + 3967 blob bytes.
constexpr std::size_t kSessionBuffer = 32 * 1024;
constexpr std::size_t kMaxBlob = 4096 - kPacketHeaderSize - hush::format::kExtendedHeaderSize - 4;

TEST(RingSession, EventLargerThanASubBufferIsRefusedAndCounted) {
  TempDir dir("ring");
  hush::SessionOptions o;
  o.events = {"ringtest:*"};
  o.output_dir = dir.Sub("trace");
  o.buffer_size = kSessionBuffer;
  std::string error;
  testing::internal::CaptureStderr();
  auto s = hush::Session::Start(o, &error);
  ASSERT_NE(s, nullptr) << error;
  const auto big = Bytes(kMaxBlob + 1);
  const auto huge = Bytes(3 * 4096);
  HUSH_TRACE(ringtest, mark, std::uint64_t{1});
  HUSH_TRACE(ringtest, blob, std::span<const std::byte>(big));
  HUSH_TRACE(ringtest, blob, std::span<const std::byte>(huge));
  HUSH_TRACE(ringtest, mark, std::uint64_t{2});
  const hush::SessionStats stats = s->Stats();
  s->Stop();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(stats.events_discarded, 2u);
  // One warning, however many oversize events.
  const std::string warning = "larger than a sub-buffer";
  EXPECT_NE(err.find(warning), std::string::npos) << err;
  EXPECT_EQ(err.find(warning), err.rfind(warning)) << "warned more than once:\n" << err;

  const hushtest::Trace t = hushtest::ReadTrace(o.output_dir);
  ASSERT_TRUE(t.ok) << t.error;
  ASSERT_EQ(t.Named("ringtest:mark").size(), 2u);
  EXPECT_EQ(t.Named("ringtest:blob").size(), 0u);
  EXPECT_GE(t.discard_messages, 1u) << "a CTF reader reports the loss";
  const hushtest::RecordedLosses lost = hushtest::ReadRecordedLosses(o.output_dir);
  ASSERT_TRUE(lost.ok);
  EXPECT_EQ(lost.discarded, 2u) << "the trace records both refused events";
  // The events around the refused ones are intact.
  EXPECT_EQ(t.Named("ringtest:mark")[0]->U("seq"), 1u);
  EXPECT_EQ(t.Named("ringtest:mark")[1]->U("seq"), 2u);
}

TEST(RingSession, EventOfExactlyTheLargestSizeIsAccepted) {
  TempDir dir("ring");
  hush::SessionOptions o;
  o.events = {"ringtest:*"};
  o.output_dir = dir.Sub("trace");
  o.buffer_size = kSessionBuffer;
  std::string error;
  auto s = hush::Session::Start(o, &error);
  ASSERT_NE(s, nullptr) << error;
  const auto max = Bytes(kMaxBlob);
  HUSH_TRACE(ringtest, mark, std::uint64_t{1});
  HUSH_TRACE(ringtest, blob, std::span<const std::byte>(max));  // needs a packet of its own
  HUSH_TRACE(ringtest, blob, std::span<const std::byte>(max));
  HUSH_TRACE(ringtest, mark, std::uint64_t{2});
  const hush::SessionStats stats = s->Stats();
  s->Stop();
  EXPECT_EQ(stats.events_discarded, 0u);
  const hushtest::Trace t = hushtest::ReadTrace(o.output_dir);
  ASSERT_TRUE(t.ok) << t.error;
  const auto blobs = t.Named("ringtest:blob");
  ASSERT_EQ(blobs.size(), 2u);
  for (const auto* b : blobs) {
    EXPECT_EQ(b->S("data"), std::string(reinterpret_cast<const char*>(max.data()), max.size()));
  }
  EXPECT_EQ(t.Named("ringtest:mark").size(), 2u);
  EXPECT_EQ(t.TotalDiscarded(), 0u);
}

}  // namespace

// The metadata's text as BuildMetadata writes it: UUIDs in 8-4-4-4-12 lower-case hex digits that
// UuidFromString reads back, and control characters of quoted strings as \xNN escapes.
TEST(MetadataText, UuidsAndEscapesAreWrittenDigitByDigit) {
  const std::uint8_t uuid[16] = {0x00, 0x01, 0x0a, 0xff, 0x10, 0x9f, 0x4b, 0xc0,
                                 0x80, 0x7e, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc};
  const std::string text = hush::format::UuidToString(uuid);
  EXPECT_EQ(text, "00010aff-109f-4bc0-807e-123456789abc");
  std::uint8_t back[16] = {};
  ASSERT_TRUE(hush::format::UuidFromString(text, back));
  EXPECT_EQ(std::memcmp(back, uuid, sizeof uuid), 0);

  hush::format::TraceInfo info;
  std::memcpy(info.uuid, uuid, sizeof uuid);
  info.procname = std::string("a\x01\x1f\x7f\"\\b", 7);
  info.mode = "stream";
  const std::string metadata = hush::format::BuildMetadata(info, {});
  EXPECT_NE(metadata.find("procname = \"a\\x01\\x1f\\x7f\\\"\\\\b\";"), std::string::npos) << metadata;
  EXPECT_NE(metadata.find("uuid = \"00010aff-109f-4bc0-807e-123456789abc\";"), std::string::npos);
  EXPECT_EQ(hush::format::ClockUuidOfMetadata(metadata), text);
}

// Registry::Add merges descriptors by full name without building the names: SameFullName must
// be FullName equality, ':' in a provider or name included.
TEST(MetaRecordNames, SameFullNameIsEqualityOfFullNames) {
  const auto record = [](std::string provider, std::string name) {
    hush::registry::MetaRecord m;
    m.provider = std::move(provider);
    m.name = std::move(name);
    return m;
  };
  const std::vector<hush::registry::MetaRecord> all = {
      record("a", "b"), record("a", "c"), record("b", "b"), record("a", "b:c"),
      record("a:b", "c"), record("ab", ""), record("a", "b")};
  for (const auto& x : all) {
    for (const auto& y : all) {
      EXPECT_EQ(hush::registry::SameFullName(x, y), x.FullName() == y.FullName())
          << x.FullName() << " / " << y.FullName();
    }
  }
}
