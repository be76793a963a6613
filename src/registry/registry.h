// Registry of the tracepoints of every loaded module, built on demand (never at start-up).
//
// Scan() walks the loaded modules with dl_iterate_phdr, finds each module's `.note.hushtrace`
// note in its PT_NOTE segments (memory only, no file I/O) and from it the module's `hush_desc`
// array of descriptor addresses (include/hushtrace/internal/descriptor.h). Descriptors with the
// same name and field layout form one event; each gets one CTF event id when enabled.
//
// Static-key sites (include/hushtrace/internal/enabled_check.h) come from the module's
// `hush_jump` section, found through its second note; each belongs to the event of its
// descriptor. Whatever changes an event's state also patches its sites, in one batch per call
// (src/patch): JMP when enabled, NOP when disabled. The state word is written first when enabling
// and first when disabling, so a patched JMP is only ever taken with the state already set, and
// a JMP still present after disabling leads to a state of 0 (the enabled block re-checks it).
//
// Threading: all calls are made with the session mutex held (lock order: session mutex, then the
// patch mutex). Emitting threads only read Descriptor::state (relaxed) and execute the sites;
// Enable/DisableAll write both.
#ifndef HUSHTRACE_SRC_REGISTRY_REGISTRY_H_
#define HUSHTRACE_SRC_REGISTRY_REGISTRY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hushtrace/internal/descriptor.h"
#include "patch/patch.h"
#include "registry/meta_record.h"

namespace hush::registry {

struct Event {
  MetaRecord meta;
  std::vector<internal::Descriptor*> descriptors;
  std::vector<patch::Site> sites;  // static-key sites of all its descriptors
  std::int64_t id = -1;  // CTF event id once enabled in this session
  bool enabled = false;
  bool trigger = false;  // enabled and a snapshot trigger (kTriggerIdBit in the state word)
  bool filtered = false;  // enabled with a field filter (kFilterIdBit)
  // The descriptors' state word while enabled.
  std::uint32_t StateWord() const {
    return static_cast<std::uint32_t>(id + 1) | (trigger ? internal::kTriggerIdBit : 0) |
           (filtered ? internal::kFilterIdBit : 0);
  }
};

class Registry {
 public:
  // Finds descriptors (and static-key sites) of modules not seen before; those of an event that is
  // already enabled are enabled too, their sites patched in one batch. Returns the number of new
  // descriptors.
  std::size_t Scan();
  std::vector<Event>& events() { return events_; }
  // Enables every event whose "provider:name" matches one of the globs; assigns ids to events
  // never enabled before in this session. Returns how many events were newly enabled.
  // The sites of all of them are patched in one batch.
  // `on_enable`, if given, runs for each newly enabled event once its id is assigned and before
  // its state words are stored (release), e.g. to set `filtered` and prepare what it needs.
  std::size_t Enable(const std::vector<std::string>& globs,
                     const std::function<void(Event&)>& on_enable = nullptr);
  // Marks the enabled events that match one of the globs as snapshot triggers (their state words
  // get kTriggerIdBit; no site changes). Returns how many.
  std::size_t SetTriggers(const std::vector<std::string>& globs);
  // Disables every event; the sites of those that were enabled are un-patched in one batch.
  void DisableAll();
  // The same in a fork child (pthread_atfork child handler, one thread): never blocks; if the
  // parent was patching when it forked, the child keeps the jumps (see patch::SetSitesInChild).
  void DisableAllInChild();
  // Forgets ids (a new session numbers from 0).
  void ResetIds();
  std::vector<const Event*> EventsWithIds() const;

 private:
  // Adds `d` to its event; returns the event's index, or -1 for bad metadata.
  std::ptrdiff_t Add(internal::Descriptor* d);
  // Clears every state word; returns the sites of the events that were enabled.
  std::vector<patch::Site> ClearStates(std::memory_order order);

  std::vector<Event> events_;
  std::vector<internal::Descriptor*> seen_;
  std::uint32_t next_id_ = 0;
};

bool GlobMatches(const std::string& pattern, const std::string& name);

}  // namespace hush::registry

#endif  // HUSHTRACE_SRC_REGISTRY_REGISTRY_H_
