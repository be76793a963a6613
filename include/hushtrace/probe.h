// In-process probes: user callbacks attached to tracepoints, for filters and counters that run in
// the emitting thread, with or without a recording session.
//
//   #include <hushtrace/probe.h>
//
//   void CountBig(const hush::ProbeEvent& e, void* data) {   // runs in the emitting thread
//     std::uint64_t bytes;
//     std::memcpy(&bytes, static_cast<const char*>(e.payload) + 4, 8);   // (int32 fd, u64 bytes)
//     if (bytes > 1000) ++*static_cast<std::uint64_t*>(data);   // one thread: else use atomics
//   }
//   hush::ProbeHandle h = hush::AddProbe("net:recv", CountBig, &counter);
//   ...
//   hush::RemoveProbe(h);   // after it returns, CountBig runs no more: `counter` may go away
//
// A probe attaches to every event whose "provider:name" matches its glob, in every module loaded
// now or later (modules loaded after AddProbe are attached at the next session start or
// AddProbe). The payload is the event's fields encoded as in the trace (docs/format.md, section
// "Event payloads"): fixed-size fields little-endian and unaligned, strings NUL-terminated, byte
// sequences a u32 length then the bytes.
//
// Rules for callbacks: they run inside the event, so an event they emit themselves is dropped
// (counted as discarded when a session runs); they must not call AddProbe, RemoveProbe or start or
// stop a session (that would wait for themselves); events emitted by a signal handler that
// interrupted another event, and events whose payload exceeds 64 KiB, are not given to probes.
//
// Cost: an event without probes pays nothing (its state word does not carry the probe bit); an
// event with probes takes the out-of-line slow path, loads the probe list and calls each callback.
// AddProbe never waits. RemoveProbe waits for a grace period (membarrier, registered on first
// use); DetachProbe does not, and SynchronizeProbes() waits once for any number of detaches (the
// tracepoint_probe_unregister + tracepoint_synchronize_unregister pattern of Linux and LTTng):
//
//   for (ProbeHandle h : handles) hush::DetachProbe(h);
//   hush::SynchronizeProbes();   // now no detached callback runs: their data may go away
#ifndef HUSHTRACE_PROBE_H_
#define HUSHTRACE_PROBE_H_

#include <cstddef>
#include <cstdint>

namespace hush {

struct ProbeEvent {
  const char* name;           // "provider:name", valid while the probe is attached
  const void* payload;        // the encoded fields
  std::size_t payload_size;
};

using ProbeCallback = void (*)(const ProbeEvent& event, void* data);
using ProbeHandle = std::uint64_t;  // 0: no probe

// Attaches `callback(event, data)` to the events matching `glob` (fnmatch over
// "provider:name"). Returns a handle (never 0), or 0 if `glob` or `callback` is null or the
// kernel lacks membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED). `matched`, if given, receives the
// number of events attached now. Events of `glob` that appear later (dlopen) are attached when
// the registry next scans. Returns once every event that starts afterwards calls the callback.
ProbeHandle AddProbe(const char* glob, ProbeCallback callback, void* data,
                     std::size_t* matched = nullptr);

// Detaches the probe. Returns after a grace period: no call of its callback is running or will
// start. False for an unknown handle.
bool RemoveProbe(ProbeHandle handle);

// Detaches the probe without waiting: events that start afterwards no longer call it, but calls
// from threads that loaded the event's probe list before may still be running or about to start
// until SynchronizeProbes() returns. Emitting threads are never blocked or interrupted by it; the
// replaced lists are freed by a later grace period (one per 256 lists at most). False for an
// unknown handle.
bool DetachProbe(ProbeHandle handle);

// Waits until no callback of a probe detached before the call is running or will start (one
// grace period; returns at once when nothing was detached since the last one).
void SynchronizeProbes();

}  // namespace hush

#endif  // HUSHTRACE_PROBE_H_
