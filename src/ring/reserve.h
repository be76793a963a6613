// The reserve slow path over one ring, and what it needs from the rings' owner.
//
// Every producer of events stands on this: the emitting threads' ReserveSlow (src/session), the
// scheduler-event reader (src/sched) for the threads it records on their behalf, function tracing
// through ReserveSlow. They reach the session only through ring::Owner, so none of them includes
// the session layer (scripts/check_layers.py).
#ifndef HUSHTRACE_SRC_RING_RESERVE_H_
#define HUSHTRACE_SRC_RING_RESERVE_H_

#include <cstddef>
#include <cstdint>

#include "hushtrace/internal/thread_writer.h"
#include "ring/ring_buffer.h"

namespace hush::ring {

// Implemented by the session (src/session/core.h). Called from inside an event of the calling
// thread (its nesting raised), so no implementation may wait for that thread's events.
class Owner {
 public:
  // Gives `w` a ring (takes the owner's lock), nullptr when the session stopped or no ring can be
  // made (the event is then counted). `fresh`: a new ring, never one an exited thread left (for
  // writers whose events may be older than that thread's last packet: src/sched).
  virtual Ring* Attach(internal::ThreadWriter& w, bool fresh) = 0;
  // Gives `w`'s ring back (its open packet closed), to be reused by another thread.
  virtual void Detach(internal::ThreadWriter& w) = 0;
  // Session generation: a writer whose `generation` differs belongs to an earlier session.
  virtual std::uint64_t generation() const = 0;
  // A fork child's session (it shares its parent's trace directory and metadata).
  virtual bool forked_child() const = 0;
  // Timestamps come from the cycle counter (false: CLOCK_MONOTONIC through the slow path).
  virtual bool use_tsc() const = 0;
  // Stream mode: a packet is about to close, so the consumer must exist.
  virtual void EnsureConsumer() = 0;
  // Closed packets are waiting (half the ring, or the ring's first packet).
  virtual void WakeConsumer() = 0;
  // An event larger than a sub-buffer was discarded (and counted): the owner warns once.
  virtual void EventTooLarge() = 0;
  // The ring is full (stream mode): whether to try again after waiting a moment for the consumer
  // (SessionOptions::blocking_timeout_ns). *waiting_since is 0 on the first call of one event;
  // the owner keeps its start there. False: discard the event, as without blocking.
  virtual bool WaitForRoom(std::uint64_t* waiting_since) = 0;

 protected:
  ~Owner() = default;
};

// Writes an event header into `r` for the writer `w` (attached to `r`), opening a new packet
// (stamped with `tid` and `name`) when the open one is full. Returns where the payload goes, or
// nullptr when the event is dropped (and counted). `own_thread`: `w` is the calling thread's
// writer and `name` is refreshed from the thread's name once per packet. Sets w.pending_ts
// to `ts` for Commit(); an event that is reserved but never committed (a field filter refused
// it) leaves nothing to undo: the next one reuses its space and its compact timestamp is relative
// to the last committed event's, which the commit word holds.
char* Reserve(Owner& owner, Ring& r, internal::ThreadWriter& w, std::uint32_t id, std::uint64_t ts,
              std::size_t payload_size, std::uint32_t tid, char* name, bool own_thread);

}  // namespace hush::ring

#endif  // HUSHTRACE_SRC_RING_RESERVE_H_
