// Per-event probe lists (include/hushtrace/probe.h), published RCU-style.
//
// An event with at least one user probe owns a probe slot; its descriptors' state words hold
// kProbeIdBit | (slot + 1) for as long as it has probes, whether or not a session records it.
// Everything else lives in the slot's list, an immutable ProbeList replaced as a whole:
//
//   state word (constant while probed)      slot table (fixed array, never moves)
//   kProbeIdBit | slot+1  -----------------> slots[slot] --atomic ptr--> ProbeList {
//                                                                          record_id  (-1: not recorded)
//                                                                          record_bits (trigger/filter)
//                                                                          name, entries[] }
//
// Writers (the registry, under its mutex) build a new list, store it with release, call
// grace::Synchronize() and only then delete the old one. Readers (ReserveSlow / CommitSlow of the
// emitting thread) load the pointer with acquire inside a grace::ReadLock section.
#ifndef HUSHTRACE_SRC_REGISTRY_PROBES_H_
#define HUSHTRACE_SRC_REGISTRY_PROBES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hushtrace/probe.h"

namespace hush::registry::probes {

inline constexpr std::uint32_t kMaxSlots = 4096;
inline constexpr std::size_t kMaxProbePayload = 65536;

struct Entry {
  ProbeHandle handle;
  ProbeCallback callback;
  void* data;
};

struct ProbeList {
  std::int64_t record_id = -1;      // session event id when the recorder is attached
  std::uint32_t record_bits = 0;    // kTriggerIdBit / kFilterIdBit of the recorded event
  std::string name;                 // "provider:name"
  std::vector<Entry> entries;
};

// Writer side (registry mutex held). Replaces the list of `slot`; returns the old one, to be
// deleted after grace::Synchronize().
const ProbeList* Publish(std::uint32_t slot, const ProbeList* list);

// Reader side: the emitting thread, nesting guard == 1.
// Starts a probe event for state id `id` (kProbeIdBit set): returns the id to record it under
// (session id | trigger/filter bits), or -1 when the recorder is not attached.
std::int64_t BeginEvent(std::uint32_t id);
// Where the payload goes when the event is not recorded (nullptr if larger than the scratch).
char* Scratch(std::size_t payload_size);
bool IsScratch(const char* p);
// The id BeginEvent returned on this thread (for CommitSlow).
std::uint32_t RecordedId();
// Calls the probes of the event reserved by BeginEvent with its payload [payload, end).
void RunProbes(std::uint32_t id, const char* payload, const char* end);

}  // namespace hush::registry::probes

#endif  // HUSHTRACE_SRC_REGISTRY_PROBES_H_
