// See reserve.h.
#include "ring/reserve.h"

#include <sys/prctl.h>

#include <cstring>

namespace hush::ring {

char* Reserve(Owner& owner, Ring& r, internal::ThreadWriter& w, std::uint32_t id, std::uint64_t ts,
              std::size_t payload_size, std::uint32_t tid, char* name, bool own_thread) {
  using internal::kCompactHeaderSize;
  using internal::kExtendedHeaderSize;
  using internal::kExtendedId;
  const std::size_t max_payload = r.MaxEventSize() - kExtendedHeaderSize;
  if (payload_size > max_payload) {
    r.CountDiscarded(1);
    owner.EventTooLarge();
    return nullptr;
  }
  // Relative to the last committed event, whose timestamp the commit word holds (thread_writer.h);
  // without an open packet, one is opened below and the event begins it.
  bool compact = id < kExtendedId && r.HasOpenPacket() &&
                 internal::WithinCompactRange(ts, r.header().commit.timestamp);
  std::size_t header = compact ? kCompactHeaderSize : kExtendedHeaderSize;
  if (r.Room(w) < header + payload_size) {
    if (r.HasOpenPacket()) owner.EnsureConsumer();
    r.ClosePacket(w, ts);
    // Once per packet: picks up a name the thread set after its first event.
    if (own_thread) ::prctl(PR_GET_NAME, name, 0, 0, 0);
    bool opened = r.OpenPacket(w, ts, tid, name);
    // Blocking sessions only, and only a program's own thread: src/sched's reader must keep up
    // with the kernel's buffers, and a wait there would lose more than it saves.
    for (std::uint64_t since = 0; !opened && own_thread && owner.WaitForRoom(&since);) {
      opened = r.OpenPacket(w, ts, tid, name);
    }
    if (!opened) {
      r.CountDiscarded(1);
      owner.EnsureConsumer();
      owner.WakeConsumer();
      return nullptr;
    }
    // Packets pile up (Ring::ConsumerBehind), or its first packet just closed (the consumer then maps the next
    // sub-buffer ahead of this thread: Core::PrefaultBusyRings).
    if (r.ConsumerBehind() || r.header().produced.load(std::memory_order_relaxed) == 1) {
      owner.WakeConsumer();
    }
    compact = id < kExtendedId;  // the packet begins at ts
    header = compact ? kCompactHeaderSize : kExtendedHeaderSize;
  }
  // The event fits the packet but not yet the reserved part of sub-buffer 0 (ring_buffer.h,
  // "First sub-buffer"): more is reserved first. On a full file system it is discarded and
  // counted, and the next event tries again.
  if (r.PastReservation(w.pos + header + payload_size) &&
      !r.ExtendReservation(w, w.pos + header + payload_size)) {
    r.CountDiscarded(1);
    return nullptr;
  }
  if (!owner.use_tsc()) w.end.store(nullptr, std::memory_order_relaxed);  // stay on this path
  char* p = w.pos;
  if (compact) {
    const std::uint32_t word = static_cast<std::uint32_t>(ts << 8) | id;
    std::memcpy(p, &word, 4);
  } else {
    p[0] = static_cast<char>(kExtendedId);
    std::memcpy(p + 1, &id, 4);
    std::memcpy(p + 5, &ts, 8);
  }
  w.pending_ts = ts;
  return p + header;
}

}  // namespace hush::ring
