// hushtrace recover: docs/recovery.md describes what is done and why; recover.h the interface.
//
// What reaches stream_N is stamped by format/packet.h, the functions Ring::WriteNew uses, so a
// recovered stream holds the bytes a live write-out would have written. What is recovery's own is
// the choice of pieces (RingPlanner): the same ones as WriteNew (closed packets from written_seq,
// the rest of a partly written packet from written_offset with timestamp_begin =
// written_begin_ts, the open packet up to the commit offset), chosen from a dead ring that is
// read-only and validated event by event, where WriteNew follows a live producer under seqlock
// checks and moves the progress fields as it goes.
#include "recover/recover.h"

#include <dirent.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/dir_stream.h"
#include "base/errno_message.h"
#include "base/read_at.h"
#include "base/unique_fd.h"
#include "base/user_directory.h"
#include "format/numbered_name.h"
#include "format/packet.h"
#include "format/ring_location.h"
#include "format/trace_uuid.h"
#include "reader/metadata_parser.h"
#include "recover/event_walker.h"
#include "ring/ring_layout.h"

namespace hush::recover {
namespace {

using format::kPacketHeaderSize;
using ring::RingHeader;

constexpr std::uint64_t kMaxMetadataBytes = 16 << 20;
// Largest sub-buffer accepted (the session makes them at most 1 MiB; the reader accepts packets
// up to 256 MiB).
constexpr std::uint64_t kMaxSubbufSize = std::uint64_t{256} << 20;

using format::Load;
using format::Store;
namespace field = format::field;

// Reads a ring header field whether it is a std::atomic or a plain integer (the dead writer
// cannot race with us; relaxed is enough).
template <typename T>
auto Get(const T& v) {
  if constexpr (requires { v.load(std::memory_order_relaxed); }) {
    return v.load(std::memory_order_relaxed);
  } else {
    return v;
  }
}

using base::ErrnoMessage;
std::string At(const std::string& file, std::uint64_t offset) {
  return file + ": byte " + std::to_string(offset) + ": ";
}
std::string Num(std::uint64_t v) { return std::to_string(v); }

using Fd = base::UniqueFd;

int WriteAllAt(int fd, const std::uint8_t* data, std::size_t len, std::uint64_t offset) {
  while (len > 0) {
    const ssize_t n = ::pwrite(fd, data, len, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return ENOSPC;
    data += n;
    len -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return 0;
}

// ---- the ring file --------------------------------------------------------------------------

struct RingFile {
  std::string path;  // DIR/.ring_N (for messages)
  std::uint32_t index = 0;
  dev_t dev = 0;
  ino_t ino = 0;
  const std::uint8_t* map = nullptr;
  std::size_t map_size = 0;
  const RingHeader* header = nullptr;
  std::uint64_t subbuf_size = 0;
  std::uint32_t subbuf_count = 0;
  bool flight = false;
  // Version 3 stream rings name each packet's sub-buffer (ring_layout.h, packet_slot); version 2
  // rings and flight rings keep packet n in sub-buffer n % subbuf_count.
  bool slot_table = false;

  RingFile() = default;
  RingFile(const RingFile&) = delete;
  RingFile& operator=(const RingFile&) = delete;
  ~RingFile() {
    if (map != nullptr) ::munmap(const_cast<std::uint8_t*>(map), map_size);
  }
  // The entry of packet `seq` (kSlotNone: never written; OpenRingFile checked the others).
  std::uint16_t SlotEntry(std::uint64_t seq) const {
    if (!slot_table) {
      return static_cast<std::uint16_t>(seq % subbuf_count) | (seq < subbuf_count ? ring::kSlotFirstUse : 0);
    }
    return header->packet_slot[seq % subbuf_count].load(std::memory_order_relaxed);
  }
  // The sub-buffer of packet `seq`; subbuf_count when its entry was never written.
  std::uint32_t Slot(std::uint64_t seq) const {
    const std::uint16_t entry = SlotEntry(seq);
    return entry == ring::kSlotNone ? subbuf_count : (entry & ring::kSlotMask);
  }
  // Only for a packet whose entry was written: a closed packet, or the open one (has_open_).
  const std::uint8_t* packet(std::uint64_t seq) const { return map + PacketFileOffset(seq); }
  std::uint64_t PacketFileOffset(std::uint64_t seq) const {
    return ring::kRingHeaderSize + std::uint64_t{Slot(seq)} * subbuf_size;
  }
};

enum class OpenRing { kOk, kEmpty, kError };

// Maps ring_N read-only and checks its header against the file size and the trace.
OpenRing OpenRingFile(int ring_dirfd, const std::string& name, const std::string& path,
                      std::uint32_t index, const reader::internal::ParsedMetadata& md, RingFile* r,
                      std::string* error) {
  r->path = path;
  r->index = index;
  Fd fd(::openat(ring_dirfd, name.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    *error = ErrnoMessage(path + ": cannot open");
    return OpenRing::kError;
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file";
    return OpenRing::kError;
  }
  r->dev = st.st_dev;
  r->ino = st.st_ino;
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  if (size == 0) return OpenRing::kEmpty;  // created, not sized yet: the writer died in Ring::Create
  if (size < ring::kRingHeaderSize) {
    *error = At(path, size) + "file ends inside the " + Num(ring::kRingHeaderSize) + "-byte ring header";
    return OpenRing::kError;
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (p == MAP_FAILED) {
    *error = ErrnoMessage(path + ": cannot map");
    return OpenRing::kError;
  }
  r->map = static_cast<const std::uint8_t*>(p);
  r->map_size = size;
  r->header = reinterpret_cast<const RingHeader*>(p);
  const RingHeader& h = *r->header;

  if (std::memcmp(h.magic, ring::kRingMagic, sizeof h.magic) != 0) {
    bool all_zero = true;
    for (std::size_t i = 0; i < ring::kRingHeaderSize && all_zero; ++i) all_zero = r->map[i] == 0;
    if (all_zero) return OpenRing::kEmpty;  // sized but not initialised yet
    *error = At(path, offsetof(RingHeader, magic)) + "bad ring magic (not a hushtrace ring file)";
    return OpenRing::kError;
  }
  if (h.version != ring::kRingVersion && h.version != ring::kRingVersionModuloSlots) {
    *error = At(path, offsetof(RingHeader, version)) + "ring format version " + Num(h.version) +
             " (this hushtrace reads version " + Num(ring::kRingVersion) + ")";
    return OpenRing::kError;
  }
  if (h.subbuf_count < ring::kMinSubbufCount || h.subbuf_count > ring::kMaxSubbufCount) {
    *error = At(path, offsetof(RingHeader, subbuf_count)) + "sub-buffer count " + Num(h.subbuf_count) +
             " out of range (" + Num(ring::kMinSubbufCount) + " to " + Num(ring::kMaxSubbufCount) + ")";
    return OpenRing::kError;
  }
  if (h.subbuf_size < ring::kMinSubbufSize || h.subbuf_size > kMaxSubbufSize || h.subbuf_size % 8 != 0) {
    *error = At(path, offsetof(RingHeader, subbuf_size)) + "sub-buffer size " + Num(h.subbuf_size) +
             " out of range (" + Num(ring::kMinSubbufSize) + " to " + Num(kMaxSubbufSize) +
             ", a multiple of 8)";
    return OpenRing::kError;
  }
  const std::uint64_t expected = ring::RingBytes(h.subbuf_size, h.subbuf_count);
  if (expected != size) {
    *error = At(path, offsetof(RingHeader, subbuf_size)) + Num(h.subbuf_count) + " sub-buffers of " +
             Num(h.subbuf_size) + " bytes need a file of " + Num(expected) + " bytes, the file has " +
             Num(size);
    return OpenRing::kError;
  }
  r->subbuf_size = h.subbuf_size;
  r->subbuf_count = h.subbuf_count;
  if (h.stream_index != index) {
    *error = At(path, offsetof(RingHeader, stream_index)) + "stream index " + Num(h.stream_index) +
             " differs from the file name's " + Num(index);
    return OpenRing::kError;
  }
  if (h.mode != ring::RingMode::kStream && h.mode != ring::RingMode::kFlight) {
    *error = At(path, offsetof(RingHeader, mode)) + "unknown ring mode " +
             Num(static_cast<std::uint32_t>(h.mode));
    return OpenRing::kError;
  }
  r->flight = h.mode == ring::RingMode::kFlight;
  r->slot_table = !r->flight && h.version == ring::kRingVersion;
  for (std::uint32_t i = 0; r->slot_table && i < h.subbuf_count; ++i) {
    const std::uint16_t entry = Get(h.packet_slot[i]);
    if (entry != ring::kSlotNone &&
        ((entry & ring::kSlotMask) >= h.subbuf_count || (entry & ~(ring::kSlotMask | ring::kSlotFirstUse)) != 0)) {
      *error = At(path, offsetof(RingHeader, packet_slot) + i * sizeof entry) + "packet slot entry " +
               Num(entry) + " names no sub-buffer (" + Num(h.subbuf_count) + ")";
      return OpenRing::kError;
    }
  }
  if (md.has_uuid && std::memcmp(h.uuid, md.uuid.data(), sizeof h.uuid) != 0) {
    *error = At(path, offsetof(RingHeader, uuid)) + "ring uuid differs from the metadata's trace uuid";
    return OpenRing::kError;
  }
  const std::uint64_t produced = Get(h.produced);
  const std::uint64_t written_seq = Get(h.written_seq);
  if (written_seq > produced) {
    *error = At(path, offsetof(RingHeader, written_seq)) + "written_seq " + Num(written_seq) +
             " is beyond the packets produced (" + Num(produced) + ")";
    return OpenRing::kError;
  }
  if (!r->flight) {
    // The consumer releases packet written_seq (consumed = written_seq + 1) just before it
    // advances written_seq: consumed is at most one ahead.
    const std::uint64_t consumed = Get(h.consumed);
    if (consumed > written_seq + 1) {
      *error = At(path, offsetof(RingHeader, consumed)) + "consumed " + Num(consumed) +
               " is ahead of written_seq " + Num(written_seq) + " by more than one packet";
      return OpenRing::kError;
    }
    const std::uint64_t first = std::max(written_seq, consumed);
    if (first > produced || produced - first > h.subbuf_count) {
      *error = At(path, offsetof(RingHeader, written_seq)) + "stream-mode ring with " +
               Num(produced - written_seq) + " unwritten packets, more than its " +
               Num(h.subbuf_count) + " sub-buffers";
      return OpenRing::kError;
    }
  }
  // Every closed packet's entry was written when it opened: the K newest cover every index
  // (the open packet's one too, once K packets closed), so no packet recovery may look at has
  // an entry naming no sub-buffer.
  for (std::uint64_t s = produced >= h.subbuf_count ? produced - h.subbuf_count : 0;
       r->slot_table && s < produced; ++s) {
    if (Get(h.packet_slot[s % h.subbuf_count]) == ring::kSlotNone) {
      *error = At(path, offsetof(RingHeader, packet_slot) + (s % h.subbuf_count) * sizeof(std::uint16_t)) +
               "no sub-buffer for closed packet " + Num(s);
      return OpenRing::kError;
    }
  }
  const std::uint64_t written_offset = Get(h.written_offset);
  if (written_offset != 0 && (written_offset < kPacketHeaderSize || written_offset > h.subbuf_size)) {
    *error = At(path, offsetof(RingHeader, written_offset)) + "written_offset " + Num(written_offset) +
             " out of range (0, or " + Num(kPacketHeaderSize) + " to " + Num(h.subbuf_size) + ")";
    return OpenRing::kError;
  }
  const std::uint64_t commit = Get(h.commit.offset);
  if (commit != ring::kCommitNone && commit != ring::kCommitOpening &&
      ring::CommitOffsetOf(commit) > h.subbuf_size * h.subbuf_count) {
    *error = At(path, offsetof(RingHeader, commit)) + "commit offset " + Num(ring::CommitOffsetOf(commit)) +
             " beyond the sub-buffers (" + Num(h.subbuf_size * h.subbuf_count) + " bytes)";
    return OpenRing::kError;
  }
  return OpenRing::kOk;
}

// Checks the header of ring packet `seq`. Empty when it can be used.
std::string CheckRingPacket(const RingFile& r, std::uint64_t seq, bool open) {
  const std::uint8_t* p = r.packet(seq);
  const std::string where = At(r.path, r.PacketFileOffset(seq));
  if (Load<std::uint32_t>(p, field::kMagic) != format::kCtfMagic) return where + "bad packet magic";
  if (std::memcmp(p + field::kUuid, r.header->uuid, 16) != 0) return where + "packet uuid differs from the ring's";
  if (Load<std::uint32_t>(p, field::kStreamId) != 0) return where + "stream_id is not 0";
  if (Load<std::uint64_t>(p, field::kInstance) != r.index) {
    return where + "stream_instance_id " + Num(Load<std::uint64_t>(p, field::kInstance)) + " is not the ring's";
  }
  if (Load<std::uint64_t>(p, field::kSeq) != seq) {
    return where + "packet_seq_num " + Num(Load<std::uint64_t>(p, field::kSeq)) + ", expected " + Num(seq);
  }
  if (Load<std::uint64_t>(p, field::kPacketSize) != r.subbuf_size * 8) {
    return where + "packet_size " + Num(Load<std::uint64_t>(p, field::kPacketSize)) +
           " bits is not the sub-buffer size";
  }
  const std::uint64_t content = Load<std::uint64_t>(p, field::kContentSize);
  if (!open && (content % 8 != 0 || content / 8 < kPacketHeaderSize || content / 8 > r.subbuf_size)) {
    return where + "content_size " + Num(content) + " bits out of range";
  }
  return {};
}

// ---- the stream file ------------------------------------------------------------------------

struct DiskPacket {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint8_t header[kPacketHeaderSize] = {};
};

struct StreamScan {
  std::uint64_t valid_end = 0;  // end of the last complete, well-formed packet
  std::uint64_t packets = 0;
  bool have_last = false;
  DiskPacket last;
  bool have_last_events = false;  // the last packet with events (not a header-only loss marker)
  DiskPacket last_events;
  std::string damage;  // why the scan stopped before its limit
};

// Walks the packet headers of stream_N up to `limit` bytes.
StreamScan ScanStream(int fd, const std::string& path, std::uint64_t limit, const RingFile& r) {
  StreamScan s;
  std::uint64_t offset = 0;
  while (offset < limit) {
    DiskPacket d;
    d.offset = offset;
    if (limit - offset < kPacketHeaderSize) {
      s.damage = At(path, offset) + "incomplete packet header";
      break;
    }
    if (base::ReadAt(fd, d.header, kPacketHeaderSize, offset) != 0) {
      s.damage = At(path, offset) + "cannot read the packet header";
      break;
    }
    const std::uint64_t content = Load<std::uint64_t>(d.header, field::kContentSize);
    const std::uint64_t packet = Load<std::uint64_t>(d.header, field::kPacketSize);
    if (Load<std::uint32_t>(d.header, field::kMagic) != format::kCtfMagic) {
      s.damage = At(path, offset) + "bad packet magic";
      break;
    }
    if (std::memcmp(d.header + field::kUuid, r.header->uuid, 16) != 0) {
      s.damage = At(path, offset + field::kUuid) + "packet uuid differs from the trace's";
      break;
    }
    if (content != packet || content % 8 != 0 || content / 8 < kPacketHeaderSize ||
        content / 8 > kMaxSubbufSize) {
      s.damage = At(path, offset + field::kContentSize) + "bad packet size";
      break;
    }
    d.size = content / 8;
    if (d.size > limit - offset) {
      s.damage = At(path, offset) + "packet of " + Num(d.size) + " bytes cut short";
      break;
    }
    offset += d.size;
    s.valid_end = offset;
    ++s.packets;
    s.last = d;
    s.have_last = true;
    if (d.size > kPacketHeaderSize) {
      s.last_events = d;
      s.have_last_events = true;
    }
  }
  return s;
}

// ---- one ring ------------------------------------------------------------------------------

// A part of a ring packet to append to stream_N (one packet on disk), as Ring::WriteNew cuts them.
struct Piece {
  std::uint64_t seq = 0;
  bool open = false;          // the open packet: end = commit offset
  bool continuation = false;  // the beginning was written before (timestamp_begin replaced)
  std::size_t from = kPacketHeaderSize;
  std::size_t to = kPacketHeaderSize;  // after validation: end of the last good event
  std::uint64_t ts_begin = 0;
  std::uint64_t ts_end = 0;   // open packet only
  std::uint64_t events = 0;
  std::uint64_t extra_lost = 0;  // damaged events up to and including this piece
};

struct RingContext {
  int dirfd = -1;
  std::string dir;
  const Options* options = nullptr;
  const EventWalker* walker = nullptr;
};

bool IsNonZero(const std::uint8_t* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return true;
  }
  return false;
}

// Where the write-out resumes: packet `seq`, from byte `offset` (0: from its beginning).
struct Resume {
  std::uint64_t seq = 0;
  std::uint64_t offset = 0;
  bool base_known = false;  // `base` is the timestamp_begin of the rest (else: derived)
  std::uint64_t base = 0;
};

// A ring packet that may be compared with stream_N: intact (its sub-buffer still holds it) and
// with a valid header. `end`: its content end (the commit offset for the open packet).
struct Candidate {
  bool ok = false;
  bool open = false;
  std::size_t end = 0;
};

class RingPlanner {
 public:
  RingPlanner(const RingFile& r, const EventWalker& walker, RingReport* rep)
      : r_(r), h_(*r.header), walker_(walker), rep_(rep) {
    K_ = r.subbuf_count;
    S_ = r.subbuf_size;
    produced_ = Get(h_.produced);
    commit_ = Get(h_.commit.offset);
    // The commit word: the end offset of the last committed event of the open packet and the
    // number of events committed in it (internal::CommitWord), or one of two markers.
    // A sub-buffer entry not written yet (kSlotNone: K_) puts the packet past the sub-buffers.
    // A stale one (the writer died between closing packet produced_ - 1 and opening the next)
    // never names the sub-buffer that packet's last commit word points into (ring_layout.h).
    const std::uint64_t pkt_start = std::uint64_t{r.Slot(produced_)} * S_;
    const std::uint64_t commit_offset = ring::CommitOffsetOf(commit_);
    has_open_ = commit_ != ring::kCommitNone && commit_ != ring::kCommitOpening &&
                commit_offset >= pkt_start + kPacketHeaderSize && commit_offset <= pkt_start + S_;
    open_end_ = has_open_ ? static_cast<std::size_t>(commit_offset - pkt_start) : 0;
    open_events_ = has_open_ ? ring::CommitEventsOf(commit_) : 0;
    if (r.flight) {
      // A packet open (or being opened) occupies the oldest packet's sub-buffer; without one all
      // K closed packets are intact. Older packets were overwritten (their events are counted).
      const std::uint64_t intact = commit_ == ring::kCommitNone ? K_ : K_ - 1;
      lowest_ = produced_ > intact ? produced_ - intact : 0;
    } else {
      // Packets below `consumed` were released after their write-out: their sub-buffers may
      // hold newer packets.
      lowest_ = Get(h_.consumed);
    }
  }

  Candidate Check(std::uint64_t s) const {
    Candidate c;
    if (s > produced_ || s + K_ <= produced_) return c;
    if (s == produced_) {
      if (!has_open_ || !CheckRingPacket(r_, s, true).empty()) return c;
      c.open = true;
      c.end = open_end_;
    } else {
      if (!CheckRingPacket(r_, s, false).empty()) return c;
      c.end = static_cast<std::size_t>(Load<std::uint64_t>(r_.packet(s), field::kContentSize) / 8);
    }
    c.ok = true;
    return c;
  }

  // Where to resume, from the ring header's write-out progress checked against the last packet
  // on disk (`last`: its header; `body`: its events; nullptr when stream_N holds no packet).
  Resume FindResume(const std::uint8_t* last, const std::vector<std::uint8_t>& body, bool disk_empty,
                    const std::string& stream_name) {
    Resume header;
    header.seq = Get(h_.written_seq);
    header.offset = Get(h_.written_offset);
    if (r_.flight && header.seq < lowest_) {
      header.seq = lowest_;  // overwritten since the last write-out
      header.offset = 0;
    }
    if (last == nullptr || body.empty()) {
      if (disk_empty) {
        // Nothing on disk (or only writes torn by the crash): every packet the ring still holds
        // is written (stream mode: from the first one not released after its write-out).
        Resume all;
        all.seq = lowest_;
        if (all.seq != header.seq || header.offset != 0) rep_->progress_repaired = true;
        return all;
      }
      return header;
    }
    const std::size_t d = body.size();
    const std::uint32_t vtid = Load<std::uint32_t>(last, field::kVtid);
    const std::uint64_t disk_begin = Load<std::uint64_t>(last, field::kTsBegin);
    const auto same_thread = [&](std::uint64_t s) { return Load<std::uint32_t>(r_.packet(s), field::kVtid) == vtid; };
    // The header's claim: the last packet on disk ends at written_offset of written_seq, or at
    // the end of the packet before it.
    if (header.offset != 0) {
      const Candidate c = Check(header.seq);
      if (c.ok && same_thread(header.seq) && header.offset <= c.end && header.offset >= kPacketHeaderSize + d &&
          std::memcmp(body.data(), r_.packet(header.seq) + header.offset - d, d) == 0) {
        return header;
      }
    } else if (header.seq > 0) {
      const Candidate c = Check(header.seq - 1);
      if (c.ok && !c.open && same_thread(header.seq - 1) && c.end >= kPacketHeaderSize + d &&
          std::memcmp(body.data(), r_.packet(header.seq - 1) + c.end - d, d) == 0) {
        return header;
      }
    }
    // Otherwise the writer died between writing a packet and recording it, or recorded it before
    // writing it: find the last packet on disk in the ring's recent packets.
    for (std::uint64_t k = 0; k < 3 && k <= header.seq; ++k) {
      const std::uint64_t s = header.seq - k;
      const Candidate c = Check(s);
      if (!c.ok || !same_thread(s)) continue;
      const std::uint8_t* pkt = r_.packet(s);
      const std::uint64_t pkt_begin = Load<std::uint64_t>(pkt, field::kTsBegin);
      std::vector<Boundary> bounds;
      walker_.Walk(pkt, kPacketHeaderSize, c.end, pkt_begin, SIZE_MAX, &bounds);
      for (std::size_t i = 0; i < bounds.size(); ++i) {
        const Boundary& b = bounds[i];
        if (b.offset + d > c.end) break;
        // timestamp_begin of a part: the packet's for the first, else the last timestamp the
        // writer had seen, between the events around the cut.
        const bool ts_ok = b.offset == kPacketHeaderSize
                               ? disk_begin == pkt_begin
                               : b.ts_before <= disk_begin && (b.ts_at == 0 || disk_begin <= b.ts_at);
        if (!ts_ok || std::memcmp(body.data(), pkt + b.offset, d) != 0) continue;
        const std::size_t e = b.offset + d;
        const auto it = std::lower_bound(bounds.begin() + static_cast<std::ptrdiff_t>(i), bounds.end(), e,
                                         [](const Boundary& x, std::size_t v) { return x.offset < v; });
        if (it == bounds.end() || it->offset != e) continue;  // not an event boundary
        Resume found;
        if (e == c.end && !c.open) {
          found.seq = s + 1;
        } else {
          found.seq = s;
          found.offset = e;
          found.base_known = true;
          found.base = it->ts_before;  // the last event written: keeps compact timestamps exact
        }
        if (found.seq != header.seq || found.offset != header.offset) {
          rep_->progress_repaired = true;
          rep_->notes.push_back("write-out progress in the ring header (packet " + Num(header.seq) + ", byte " +
                                Num(header.offset) + ") does not match the last packet of " + stream_name +
                                " (packet " + Num(s) + ", bytes " + Num(b.offset) + " to " + Num(e) +
                                "): the writer died in the middle of a write-out; resuming after what is on disk");
        }
        return found;
      }
    }
    // The last packet on disk is not in the ring any more (its sub-buffer was reused). Packets
    // still in the ring that the header counts as written may not be on disk, though: stream
    // mode releases a packet (`consumed`) only after its write, so resume at the first one not
    // released; flight mode: the packet before written_seq, if intact, is not on disk (else it
    // would be the last packet there).
    Resume fallback = header;
    if (!r_.flight) {
      const std::uint64_t consumed = Get(h_.consumed);
      if (consumed != header.seq) {
        fallback.seq = consumed;
        fallback.offset = 0;
      }
    } else if (header.offset == 0 && header.seq > lowest_ && Check(header.seq - 1).ok) {
      fallback.seq = header.seq - 1;
    }
    if (fallback.seq != header.seq) {
      rep_->progress_repaired = true;
      rep_->notes.push_back("the last packet of " + stream_name + " is not packet " + Num(header.seq - 1) +
                            " as the ring header's write-out progress says: the writer died in the middle of a " +
                            "write-out; resuming at packet " + Num(fallback.seq));
    }
    return fallback;
  }

  // Plans the pieces from `resume` on and validates them (events walked one by one).
  std::vector<Piece> Plan(const Resume& resume) {
    std::vector<Piece> pieces;
    for (std::uint64_t s = std::max(resume.seq, r_.flight ? lowest_ : 0); s < produced_; ++s) {
      if (!r_.flight && s < lowest_ && Load<std::uint64_t>(r_.packet(s), field::kSeq) != s) {
        continue;  // released after its write-out and reused since: it is on disk
      }
      if (std::string bad = CheckRingPacket(r_, s, false); !bad.empty()) {
        const std::uint32_t total = Get(h_.packet_events[s % K_]);
        extra_ += total;
        rep_->damaged_events += total;
        Damaged(s, bad + "; packet dropped (" + Num(total) + " event(s) lost)");
        continue;
      }
      PlanOne(s, false, Load<std::uint64_t>(r_.packet(s), field::kContentSize) / 8, resume, &pieces);
    }
    // The open packet: committed bytes only. kCommitNone: no packet open; kCommitOpening: one
    // being opened, nothing committed in it yet.
    if (has_open_ && resume.seq <= produced_) {
      if (std::string bad = CheckRingPacket(r_, produced_, true); !bad.empty()) {
        rep_->damaged_events_unknown = true;
        Damaged(produced_, bad + "; open packet dropped");
      } else {
        PlanOne(produced_, true, open_end_, resume, &pieces);
        // Bytes after the commit offset: the event being written when the writer died, if any.
        // In a sub-buffer used for the first time the rest is zero-filled (new file), so any
        // byte there was written by that event. A reused sub-buffer still holds an older packet.
        const std::uint8_t* after = r_.packet(produced_) + open_end_;
        if (pieces.back().to == open_end_ && open_end_ < S_ && IsNonZero(after, S_ - open_end_)) {
          if ((r_.SlotEntry(produced_) & ring::kSlotFirstUse) != 0) {
            rep_->partial_events = 1;
          } else {
            rep_->partial_unknown = true;
          }
        }
      }
    }
    return pieces;
  }

 private:
  void Damaged(std::uint64_t s, const std::string& what) {
    ++rep_->damaged_packets;
    rep_->notes.push_back("packet " + Num(s) + ": " + what);
  }

  void PlanOne(std::uint64_t s, bool open, std::size_t end, const Resume& resume, std::vector<Piece>* pieces) {
    Piece p;
    p.seq = s;
    p.open = open;
    const std::uint8_t* pkt = r_.packet(s);
    const std::uint64_t pkt_begin = Load<std::uint64_t>(pkt, field::kTsBegin);
    p.ts_begin = pkt_begin;
    const bool resuming = s == resume.seq && resume.offset != 0;
    // One walk over the whole packet; when resuming inside it, it also checks that the offset is
    // an event boundary and gives the timestamps around it.
    const WalkResult w =
        walker_.Walk(pkt, kPacketHeaderSize, end, pkt_begin, resuming ? resume.offset : SIZE_MAX);
    std::uint64_t before = 0;  // events of this packet already on disk
    bool counted = true;       // `before` is exact
    if (resuming) {
      const std::uint64_t written_begin = Get(h_.written_begin_ts);
      if (w.mark_hit) {
        p.continuation = true;
        p.from = static_cast<std::size_t>(resume.offset);
        before = w.mark_events;
        if (resume.base_known) {
          p.ts_begin = resume.base;
        } else if (written_begin >= w.mark_ts && (!w.mark_has_next || written_begin <= w.mark_next_ts)) {
          // As Ring::WriteNew: the rest begins at written_begin_ts.
          p.ts_begin = written_begin;
        } else {
          // The writer died between setting written_offset and written_begin_ts: the last
          // written event's timestamp keeps compact timestamps exact as well.
          p.ts_begin = w.mark_ts;
          rep_->notes.push_back("packet " + Num(s) + ": stale written_begin_ts " + Num(written_begin) +
                                "; the rest of the packet begins at its last written event's timestamp");
        }
      } else if (!w.error.empty() && w.end < resume.offset) {
        // Damage in the part already on disk: trust the offset, walk the rest on its own.
        p.continuation = true;
        p.from = static_cast<std::size_t>(resume.offset);
        p.ts_begin = resume.base_known ? resume.base : written_begin;
        counted = false;
      } else {
        rep_->notes.push_back("packet " + Num(s) + ": write-out offset " + Num(resume.offset) +
                              " is not an event boundary of this packet; it is written from its beginning");
      }
    }
    WalkResult rest = w;
    if (p.continuation && !w.mark_hit) {
      rest = walker_.Walk(pkt, p.from, end, p.ts_begin);
    } else {
      rest.events = w.events - before;
    }
    p.to = std::max(rest.end, p.from);
    p.events = rest.end > p.from ? rest.events : 0;
    // Events in the packet: counted by the producer when it closed the packet, and in the commit
    // word for the open packet.
    const std::uint64_t total = open ? open_events_ : Get(h_.packet_events[s % K_]);
    if (!rest.error.empty()) {
      std::string what = "inconsistent event at " + rest.error + "; packet cut after " + Num(p.events) +
                         " event(s) of this part";
      const std::uint64_t decoded = before + p.events;
      if (counted && total >= decoded) {
        extra_ += total - decoded;
        rep_->damaged_events += total - decoded;
        what += " (" + Num(total - decoded) + " event(s) lost)";
      } else {
        rep_->damaged_events_unknown = true;
      }
      Damaged(s, what);
    } else if (counted && total != before + p.events) {
      rep_->notes.push_back("packet " + Num(s) + ": " + Num(before + p.events) +
                            " events decoded, the ring header counted " + Num(total));
    }
    // The open packet ends at its last decoded event. Not the ring header's commit timestamp:
    // it belongs to the event being written at the crash (dropped), and a damaged header can
    // put anything there; a far-future value overflows a reader's conversion to ns (babeltrace2
    // then refuses the stream: seen with aarch64's 62.5 MHz counter under qemu, where ns = 16 x
    // cycles).
    if (open) p.ts_end = std::max(p.ts_begin, rest.last_ts);
    p.extra_lost = extra_;
    pieces->push_back(p);
  }

  const RingFile& r_;
  const RingHeader& h_;
  const EventWalker& walker_;
  RingReport* rep_;
  std::uint64_t K_ = 0, S_ = 0, produced_ = 0, commit_ = 0, lowest_ = 0;
  bool has_open_ = false;
  std::size_t open_end_ = 0;
  std::uint64_t open_events_ = 0;
  std::uint64_t extra_ = 0;  // damaged events so far (added to events_discarded on disk)
};

// The ring header's loss counters are copied into the trace, so an impossible value (a damaged
// or hostile ring) is not: a stream-mode ring never overwrites (its writers discard instead), and
// no thread loses 2^50 events (13 days at 10^9 events per second). Such a counter is damage, not
// a count: it is noted and counted as 0 (what is kept cannot overflow the sums written).
void ClampLossCounters(const RingFile& r, RingReport* rep) {
  constexpr std::uint64_t kMaxLoss = std::uint64_t{1} << 50;
  const auto check = [&](std::uint64_t* counter, std::size_t offset, const char* name,
                         bool impossible, const char* why) {
    if (!impossible) return;
    rep->notes.push_back(At(r.path, offset) + "ring header's " + name + " counter " +
                         Num(*counter) + " is impossible (" + why + "); counted as 0");
    *counter = 0;
  };
  check(&rep->overwritten, offsetof(RingHeader, overwritten), "overwritten",
        rep->overwritten != 0 && !r.flight, "a stream-mode ring overwrites nothing");
  check(&rep->overwritten, offsetof(RingHeader, overwritten), "overwritten",
        rep->overwritten > kMaxLoss, "more than 2^50 events");
  check(&rep->discarded, offsetof(RingHeader, discarded), "discarded", rep->discarded > kMaxLoss,
        "more than 2^50 events");
}

bool RecoverRing(const RingContext& ctx, const RingFile& r, RingReport* rep) {
  const RingHeader& h = *r.header;
  const bool dry = ctx.options->dry_run;
  rep->mode = r.flight ? "flight" : "stream";
  rep->discarded = Get(h.discarded);
  rep->overwritten = Get(h.overwritten);
  ClampLossCounters(r, rep);

  const std::string stream_name = format::StreamName(r.index);
  const std::string stream_path = ctx.dir + "/" + stream_name;
  Fd fd(::openat(ctx.dirfd, stream_name.c_str(),
                 (dry ? O_RDONLY : O_RDWR) | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  if (!fd && errno != ENOENT) {
    rep->error = ErrnoMessage(stream_path + ": cannot open");
    return false;
  }
  std::uint64_t size = 0;
  if (fd) {
    struct stat st;
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      rep->error = stream_path + ": not a regular file";
      return false;
    }
    size = static_cast<std::uint64_t>(st.st_size);
  }
  rep->stream_bytes_before = size;

  // What stream_N holds: the ring header recorded `stream_bytes` after its last successful write;
  // anything after it is a write torn (or not recorded) by the crash.
  const std::uint64_t stream_bytes = Get(h.stream_bytes);
  const std::uint64_t recorded = std::min(size, stream_bytes);
  if (size < stream_bytes) {
    rep->notes.push_back(stream_path + " has " + Num(size) + " bytes, fewer than the " + Num(stream_bytes) +
                         " the ring header recorded");
  }
  StreamScan scan;
  if (fd) scan = ScanStream(fd.get(), stream_path, recorded, r);
  const std::uint64_t cut = scan.valid_end;
  rep->torn_bytes = size - recorded;
  rep->damaged_stream_bytes = recorded - cut;
  if (!scan.damage.empty()) {
    rep->notes.push_back(scan.damage + "; the " + Num(recorded - cut) + " byte(s) from there on are dropped");
  }
  std::uint64_t next_seq = scan.have_last ? Load<std::uint64_t>(scan.last.header, field::kSeq) + 1 : 0;
  if (cut == stream_bytes && next_seq != Get(h.disk_seq)) {
    rep->notes.push_back(stream_path + ": packet_seq_num goes on from " + Num(next_seq) + " (the last packet's + 1); " +
                         "the ring header says " + Num(Get(h.disk_seq)));
  }

  // Where the write-out resumes, checked against the last packet on disk.
  // (Header-only packets are loss markers: the last packet with events is the one to look for.)
  std::vector<std::uint8_t> last_body;
  const DiskPacket& last_events = scan.last_events;
  if (scan.have_last_events && last_events.size - kPacketHeaderSize <= r.subbuf_size) {
    last_body.resize(static_cast<std::size_t>(last_events.size - kPacketHeaderSize));
    if (base::ReadAt(fd.get(), last_body.data(), last_body.size(), last_events.offset + kPacketHeaderSize) != 0) {
      last_body.clear();
    }
  }
  RingPlanner planner(r, *ctx.walker, rep);
  const Resume resume = planner.FindResume(scan.have_last_events ? last_events.header : nullptr, last_body,
                                           !scan.have_last_events, stream_name);
  const std::vector<Piece> pieces = planner.Plan(resume);

  // The loss counters of the last packet on disk, to tell whether the final ones still need a
  // packet of their own; its header is the template of that packet.
  std::uint64_t disk_lost = 0, disk_overwritten = 0;
  std::vector<std::uint8_t> base;
  if (scan.have_last) {
    disk_lost = Load<std::uint64_t>(scan.last.header, field::kDiscarded);
    disk_overwritten = Load<std::uint64_t>(scan.last.header, field::kOverwritten);
    base.assign(scan.last.header, scan.last.header + kPacketHeaderSize);
    rep->last_tid = Load<std::uint32_t>(scan.last.header, field::kVtid);
  }

  // Write: cut stream_N, then append the pieces as Ring::WriteCopy would.
  bool wrote_any = false;
  const bool need_file =
      std::any_of(pieces.begin(), pieces.end(), [](const Piece& p) { return p.to > p.from; });
  if (!dry && !fd && need_file) {
    fd = Fd(::openat(ctx.dirfd, stream_name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) {
      rep->error = ErrnoMessage(stream_path + ": cannot create");
      return false;
    }
    rep->notes.push_back(stream_path + " was missing; created");
  }
  if (!dry && cut < size) {
    if (::ftruncate(fd.get(), static_cast<off_t>(cut)) != 0) {
      rep->error = ErrnoMessage(stream_path + ": cannot truncate to " + Num(cut) + " bytes");
      return false;
    }
  }
  std::uint64_t pos = cut;
  std::vector<std::uint8_t> scratch(r.subbuf_size);
  std::uint64_t extra_total = 0;
  for (const Piece& p : pieces) {
    extra_total = p.extra_lost;
    if (p.to <= p.from) continue;  // nothing committed in this part (Ring::WriteNew skips it too)
    const std::uint8_t* pkt = r.packet(p.seq);
    const std::size_t len = kPacketHeaderSize + (p.to - p.from);
    std::memcpy(scratch.data(), pkt, kPacketHeaderSize);
    std::memcpy(scratch.data() + kPacketHeaderSize, pkt + p.from, p.to - p.from);
    std::uint8_t* out = scratch.data();
    // Stamped by the functions Ring::WriteNew uses (format/packet.h): the same bytes a live
    // write-out would have produced. The writer also counts events it failed to write, which
    // lived in its memory only; p.extra_lost counts those found damaged here instead.
    if (p.continuation) format::StampContinuation(out, p.ts_begin);
    if (p.open) format::StampOpenPiece(out, p.ts_end, rep->discarded);
    const std::uint64_t lost = format::StampForStream(out, len, {next_seq, rep->overwritten, p.extra_lost});
    if (!dry) {
      if (const int err = WriteAllAt(fd.get(), out, len, pos); err != 0) {
        errno = err;
        rep->error = ErrnoMessage(At(stream_path, pos) + "cannot write");
        return false;
      }
    }
    pos += len;
    ++next_seq;
    wrote_any = true;
    ++rep->packets_written;
    rep->bytes_written += len;
    rep->events_written += p.events;
    disk_lost = lost;
    disk_overwritten = rep->overwritten;
    base.assign(out, out + kPacketHeaderSize);
    rep->last_tid = Load<std::uint32_t>(out, field::kVtid);
  }

  // Losses after the last packet (a full stream-mode ring discarding, a flight-mode overwrite
  // while opening a packet that got no event, damaged packets at the end): one empty packet
  // carries the final counters so that CTF readers report them.
  const std::uint64_t final_lost = rep->discarded + rep->overwritten + extra_total;
  if ((final_lost > disk_lost || rep->overwritten > disk_overwritten) && !base.empty()) {
    std::uint8_t out[kPacketHeaderSize];
    format::MakeLossMarker(out, base.data(), rep->discarded);
    format::StampForStream(out, kPacketHeaderSize, {next_seq, rep->overwritten, extra_total});
    if (!dry) {
      if (const int err = WriteAllAt(fd.get(), out, kPacketHeaderSize, pos); err != 0) {
        errno = err;
        rep->error = ErrnoMessage(At(stream_path, pos) + "cannot write");
        return false;
      }
    }
    pos += kPacketHeaderSize;
    ++next_seq;
    wrote_any = true;
    rep->counters_packet = true;
    ++rep->packets_written;
    rep->bytes_written += kPacketHeaderSize;
  } else if (final_lost > disk_lost && base.empty()) {
    rep->notes.push_back(Num(final_lost - disk_lost) + " lost event(s) cannot be recorded in " + stream_path +
                         ": it has no packet");
  }
  if (!dry && fd && (wrote_any || cut < size)) {
    if (::fsync(fd.get()) != 0) {
      rep->error = ErrnoMessage(stream_path + ": fsync");
      return false;
    }
  }
  rep->status = (wrote_any || cut < size) ? RingStatus::kRecovered : RingStatus::kUpToDate;
  return true;
}

// ---- the writer process ---------------------------------------------------------------------

enum class Liveness { kGone, kMapsRing, kUnknown };

// Whether process `pid` still maps one of `rings` (a reused pid maps other files).
Liveness CheckWriter(std::uint32_t pid, const std::vector<const RingFile*>& rings) {
  const std::string maps = "/proc/" + Num(pid) + "/maps";
  FILE* f = std::fopen(maps.c_str(), "re");
  if (f == nullptr) {
    if (errno == ENOENT || errno == ESRCH) return Liveness::kGone;
    return Liveness::kUnknown;
  }
  char line[4096];
  Liveness result = Liveness::kGone;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned maj = 0, min = 0;
    unsigned long long ino = 0;
    if (std::sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &ino) != 3 || ino == 0) continue;
    for (const RingFile* r : rings) {
      if (r->ino == static_cast<ino_t>(ino) && major(r->dev) == maj && minor(r->dev) == min) {
        result = Liveness::kMapsRing;
      }
    }
    // A line longer than the buffer: skip its rest.
    while (std::strchr(line, '\n') == nullptr && std::fgets(line, sizeof line, f) != nullptr) {
    }
  }
  std::fclose(f);
  return result;
}

bool ReadMetadata(int dirfd, const std::string& path, std::string* text, std::string* error) {
  Fd fd(::openat(dirfd, "metadata", O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    *error = errno == ENOENT
                 ? path + " is missing: the trace cannot be recovered (the event layouts, the clock and "
                          "the trace uuid are only there)"
                 : ErrnoMessage(path + ": cannot open");
    return false;
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) > kMaxMetadataBytes) {
    *error = path + ": not a regular file of at most 16 MiB";
    return false;
  }
  text->resize(static_cast<std::size_t>(st.st_size));
  if (base::ReadAt(fd.get(), text->data(), text->size(), 0) != 0) {
    *error = ErrnoMessage(path + ": cannot read");
    return false;
  }
  return true;
}

}  // namespace

std::string Report::CrashText() const {
  if (!crash_marked) return "";
  static constexpr struct {
    int sig;
    const char* name;
  } kNames[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGABRT, "SIGABRT"}, {SIGILL, "SIGILL"}, {SIGFPE, "SIGFPE"}};
  std::string name = "signal " + std::to_string(crash_signal);
  for (const auto& n : kNames) {
    if (n.sig == crash_signal) name = n.name;
  }
  return "the program died of " + name + " in thread " + std::to_string(crash_tid) + " (pid " +
         std::to_string(crash_pid) + ")";
}

// Reads the crash marker `path` ("signal S tid T pid P\n", DIR/.crashed or an earlier version's
// DIR/.ring/crashed) through `dirfd`/`name`; a malformed marker is a note.
static void ReadCrashMarker(int dirfd, const char* name, const std::string& path, Report* report) {
  Fd fd(::openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    report->notes.push_back(path + " is not a regular file; ignored");
    return;
  }
  char buf[128] = {};
  const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  int sig = 0;
  unsigned tid = 0, pid = 0;
  if (n > 0 && std::sscanf(buf, "signal %d tid %u pid %u", &sig, &tid, &pid) == 3 && sig > 0 && sig < 65) {
    report->crash_marked = true;
    report->crash_signal = sig;
    report->crash_tid = tid;
    report->crash_pid = pid;
  } else {
    report->notes.push_back(path + " is not a crash marker; ignored");
  }
}

std::uint64_t Report::RingsWith(RingStatus s) const {
  return static_cast<std::uint64_t>(
      std::count_if(rings.begin(), rings.end(), [s](const RingReport& r) { return r.status == s; }));
}

std::uint64_t Report::Sum(std::uint64_t RingReport::*field) const {
  std::uint64_t total = 0;
  for (const RingReport& r : rings) total += r.*field;
  return total;
}

namespace {

using format::kCrashMarker;
using format::kLegacyCrashMarker;

// What a session that did not stop left: its ring files, by index, each with the directory it is
// in (DIR, an earlier version's DIR/.ring, or the trace's ring directory on /dev/shm:
// format/ring_location.h).
struct Leftovers {
  struct Ring {
    int dirfd;
    std::string name;   // in dirfd
    std::string shown;  // for names: ".ring_3", ".ring/ring_3"
    std::string path;   // for messages: DIR/.ring_3, /dev/shm/hushtrace-UID/rings-UUID-DEV-INO/.ring_3
  };
  std::map<std::uint32_t, Ring> rings;
  bool crash_marker = false;
  bool metadata_tmp = false;
  Fd legacy_dirfd;   // DIR/.ring, when there is one
  Fd shared_dirfd;   // the trace's ring directory on /dev/shm, when there is one
  std::string shared_dir;
  std::vector<std::string> ignored;  // entries of DIR/.ring that are not ring files
  // What a session's processes leave (a metadata rewrite cut short aside): something to recover.
  bool FromSession() const { return !rings.empty() || crash_marker || legacy_dirfd; }
};

// The trace's ring directory on /dev/shm (format/ring_location.h), if it has one: named after the
// trace uuid of DIR's metadata and DIR itself, in the private directory of DIR's owner. *path set
// when found.
Fd OpenSharedRingDirectory(int dirfd, std::string* path) {
  struct stat st;
  if (::fstat(dirfd, &st) != 0) return Fd();
  std::string uuid;
  {
    Fd md(::openat(dirfd, "metadata", O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
    struct stat ms;
    if (!md || ::fstat(md.get(), &ms) != 0 || !S_ISREG(ms.st_mode)) return Fd();  // ReadMetadata says why
    std::string head(4096, '\0');  // the trace block is in the first few hundred bytes
    std::size_t got = 0;
    base::ReadAt(md.get(), head.data(), head.size(), 0, &got);
    head.resize(got);
    uuid = format::TraceUuidOfMetadata(head);
  }
  // Only the owner's own private directory: one another user planted there is not looked into.
  if (uuid.empty() ||
      base::CheckUserDirectory(base::UserDirectory(format::kSharedRingBase, st.st_uid), st.st_uid) != 0) {
    return Fd();
  }
  const std::string dir = format::SharedRingDirectory(st, uuid);
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd) *path = dir;
  return fd;
}

// Lists DIR (and DIR/.ring). False and *error when a directory cannot be read.
bool FindLeftovers(int dirfd, const std::string& dir, Leftovers* out, std::string* error) {
  {
    base::DirStream list = base::DirStream::Of(dirfd);
    if (!list) {
      *error = ErrnoMessage("cannot list " + dir);
      return false;
    }
    while (const char* name = list.Next()) {
      if (name[0] != '.') continue;
      std::uint32_t index = 0;
      if (format::ParseNumberedName(name, format::kRingPrefix, &index)) {
        out->rings[index] = {dirfd, name, name, dir + "/" + name};
      } else if (std::strcmp(name, kCrashMarker) == 0) {
        out->crash_marker = true;
      } else if (std::strcmp(name, ".metadata.tmp") == 0) {
        out->metadata_tmp = true;
      }
    }
  }
  out->shared_dirfd = OpenSharedRingDirectory(dirfd, &out->shared_dir);
  if (out->shared_dirfd) {
    base::DirStream list = base::DirStream::Of(out->shared_dirfd.get());
    if (!list) {
      *error = ErrnoMessage("cannot list " + out->shared_dir);
      return false;
    }
    while (const char* name = list.Next()) {
      std::uint32_t index = 0;
      if (format::ParseNumberedName(name, format::kRingPrefix, &index) && out->rings.count(index) == 0) {
        out->rings[index] = {out->shared_dirfd.get(), name, name, out->shared_dir + "/" + name};
      }
    }
  }
  const std::string legacy(format::kLegacyRingDir);
  out->legacy_dirfd.reset(::openat(dirfd, legacy.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!out->legacy_dirfd) {
    if (errno == ENOENT) return true;
    *error = ErrnoMessage("cannot open " + dir + "/" + legacy);
    return false;
  }
  base::DirStream list = base::DirStream::Of(out->legacy_dirfd.get());
  if (!list) {
    *error = ErrnoMessage("cannot list " + dir + "/" + legacy);
    return false;
  }
  while (const char* name = list.Next()) {
    std::uint32_t index = 0;
    if (std::strcmp(name, kLegacyCrashMarker) == 0) continue;  // read by Recover
    if (format::ParseNumberedName(name, format::kLegacyRingPrefix, &index) && out->rings.count(index) == 0) {
      out->rings[index] = {out->legacy_dirfd.get(), name, legacy + "/" + name, dir + "/" + legacy + "/" + name};
    } else {
      out->ignored.push_back(legacy + "/" + name);
    }
  }
  return true;
}

}  // namespace

bool HasLeftovers(const std::string& dir) {
  Fd dirfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dirfd) return false;
  Leftovers found;
  std::string error;
  if (!FindLeftovers(dirfd.get(), dir, &found, &error)) return false;
  return found.FromSession() || found.metadata_tmp;
}

bool TraceBeingWritten(const std::string& dir) {
  Fd dirfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dirfd) return false;
  // Exclusive, not waiting: refused while a writer holds its shared lock. Held for no longer than
  // the next call; a writer starting meanwhile retries its own (session/core.cc).
  if (::flock(dirfd.get(), LOCK_EX | LOCK_NB) == 0) {
    ::flock(dirfd.get(), LOCK_UN);
    return false;
  }
  return errno == EWOULDBLOCK;
}

bool Recover(const std::string& dir, const Options& options, Report* report) {
  *report = Report{};
  report->dir = dir;
  Fd dirfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dirfd) {
    report->error = ErrnoMessage("cannot open the trace directory " + dir);
    return false;
  }
  const std::string metadata_path = dir + "/metadata";
  Leftovers found;
  if (!FindLeftovers(dirfd.get(), dir, &found, &report->error)) return false;
  // A metadata rewrite interrupted by the crash (the rename never happened).
  const auto remove_metadata_tmp = [&] {
    if (!found.metadata_tmp) return;
    report->notes.push_back("removed " + dir + "/.metadata.tmp (a metadata rewrite cut by the crash)");
    if (!options.dry_run) ::unlinkat(dirfd.get(), ".metadata.tmp", 0);
  };
  if (!found.FromSession()) {
    if (::faccessat(dirfd.get(), "metadata", F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
      report->error = metadata_path + " is missing: " + dir + " is not a hushtrace trace directory";
      return false;
    }
    report->clean = true;
    remove_metadata_tmp();  // a rewrite cut short in a session that left no ring
    return true;
  }

  std::string text, error;
  if (!ReadMetadata(dirfd.get(), metadata_path, &text, &error)) {
    report->error = error;
    return false;
  }
  reader::internal::ParsedMetadata md;
  if (!reader::internal::ParseMetadata(text, metadata_path, &md, &error)) {
    report->error = error + " (the trace cannot be recovered without its metadata)";
    return false;
  }
  const EventWalker walker(md.metadata);

  remove_metadata_tmp();

  ReadCrashMarker(dirfd.get(), kCrashMarker, dir + "/" + kCrashMarker, report);
  if (found.legacy_dirfd && !report->crash_marked) {
    ReadCrashMarker(found.legacy_dirfd.get(), kLegacyCrashMarker,
                    dir + "/" + std::string(format::kLegacyRingDir) + "/" + kLegacyCrashMarker, report);
  }
  for (const std::string& name : found.ignored) {
    report->notes.push_back("ignored " + dir + "/" + name + " (not a ring file)");
  }

  std::vector<std::unique_ptr<RingFile>> files;
  std::vector<bool> usable;
  for (const auto& [index, ring] : found.rings) {
    RingReport rep;
    rep.name = ring.shown;
    rep.index = index;
    auto file = std::make_unique<RingFile>();
    std::string err;
    const OpenRing st = OpenRingFile(ring.dirfd, ring.name, ring.path, index, md, file.get(), &err);
    if (st == OpenRing::kError) {
      rep.status = RingStatus::kFailed;
      rep.error = err;
    } else if (st == OpenRing::kEmpty) {
      rep.status = RingStatus::kEmpty;
    }
    usable.push_back(st == OpenRing::kOk);
    report->rings.push_back(std::move(rep));
    files.push_back(std::move(file));
  }
  // Never write behind a live writer: refuse while its process still maps a ring.
  std::map<std::uint32_t, std::vector<const RingFile*>> by_pid;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (usable[i] && files[i]->header->pid != 0) by_pid[files[i]->header->pid].push_back(files[i].get());
  }
  for (const auto& [pid, rings] : by_pid) {
    const Liveness l = CheckWriter(pid, rings);
    if (l == Liveness::kGone) continue;
    const std::string what = l == Liveness::kMapsRing
                                 ? "process " + Num(pid) + " is still running and maps this trace's rings"
                                 : "process " + Num(pid) + " exists and its mappings cannot be read";
    if (!options.force) {
      report->error = what + ": stop it first (or use --force if it does not write this trace)";
      report->writer_running = true;
      return false;
    }
    report->notes.push_back(what + "; recovering anyway (--force)");
  }

  RingContext ctx;
  ctx.dirfd = dirfd.get();
  ctx.dir = dir;
  ctx.options = &options;
  ctx.walker = &walker;
  bool ok = true;
  for (std::size_t i = 0; i < files.size(); ++i) {
    RingReport& rep = report->rings[i];
    if (!usable[i]) {
      if (rep.status == RingStatus::kFailed) ok = false;
      continue;
    }
    if (!RecoverRing(ctx, *files[i], &rep)) {
      rep.status = RingStatus::kFailed;
      ok = false;
    }
  }
  files.clear();  // unmap

  if (!options.keep_rings && !options.dry_run) {
    for (const RingReport& rep : report->rings) {
      if (rep.status == RingStatus::kFailed) continue;
      const Leftovers::Ring& ring = found.rings.at(rep.index);
      ::unlinkat(ring.dirfd, ring.name.c_str(), 0);
    }
    if (ok) {  // reported now; kept with a failed ring
      ::unlinkat(dirfd.get(), kCrashMarker, 0);
      if (found.legacy_dirfd) ::unlinkat(found.legacy_dirfd.get(), kLegacyCrashMarker, 0);
    }
    if (ok && found.shared_dirfd) {  // its link to DIR, then itself (kept if anything else is in it)
      ::unlinkat(found.shared_dirfd.get(), format::kRingTraceLink, 0);
      ::rmdir(found.shared_dir.c_str());
    }
    const std::string legacy(format::kLegacyRingDir);
    if (ok && found.legacy_dirfd && ::unlinkat(dirfd.get(), legacy.c_str(), AT_REMOVEDIR) != 0) {
      report->notes.push_back(ErrnoMessage("kept " + dir + "/" + legacy));
    } else if (ok) {
      report->rings_removed = true;
    }
    ::fsync(dirfd.get());
  }
  return ok;
}

}  // namespace hush::recover
