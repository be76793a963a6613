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
// Probes (include/hushtrace/probe.h, probes.h): an event with user probes is "probed"; its state
// word is then kProbeIdBit | (probe slot + 1) whether or not it is enabled, its sites stay
// patched, and its slot's list carries the recorder's id when it is enabled.
//
// Modules: Scan pins every module it takes descriptors from (dlopen RTLD_NOLOAD) for as long as
// the registry is active (an event enabled or probed), so a dlclose while a session runs or a
// probe is attached defers the unmapping until the registry goes idle; then the registry
// forgets the descriptors and sites of those modules; ClosePendingModules(), called outside any
// lock, then drops its references (the module is unloaded if the program closed it meanwhile). Without the pin, DisableAll would store into
// the state words of an unmapped module and un-patch its sites.
//
// Threading: every public call takes the registry's mutex (lock order: session mutex, registry
// mutex, patch mutex; the grace-period mutex is a leaf). Emitting threads only read
// Descriptor::state (relaxed), the probe lists (grace.h) and execute the sites.
#ifndef HUSHTRACE_SRC_REGISTRY_REGISTRY_H_
#define HUSHTRACE_SRC_REGISTRY_REGISTRY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "hushtrace/internal/descriptor.h"
#include "patch/patch.h"
#include "registry/meta_record.h"
#include "registry/probes.h"

namespace hush::registry {

struct Event {
  MetaRecord meta;
  std::vector<internal::Descriptor*> descriptors;
  std::vector<patch::Site> sites;  // static-key sites of all its descriptors
  std::int64_t id = -1;  // CTF event id once enabled in this session
  bool enabled = false;
  bool trigger = false;  // enabled and a snapshot trigger (kTriggerIdBit in the state word)
  bool filtered = false;  // enabled with a field filter (kFilterIdBit)
  std::int32_t probe_slot = -1;          // assigned on the first probe, kept
  std::vector<probes::Entry> probes;     // attached user probes
  bool Active() const { return enabled || !probes.empty(); }  // sites patched
  std::uint32_t RecordBits() const {
    return (trigger ? internal::kTriggerIdBit : 0) | (filtered ? internal::kFilterIdBit : 0);
  }
  // The descriptors' state word.
  std::uint32_t StateWord() const {
    if (!probes.empty()) return internal::kProbeIdBit | static_cast<std::uint32_t>(probe_slot + 1);
    return enabled ? static_cast<std::uint32_t>(id + 1) | RecordBits() : 0;
  }
};

class Registry;
// The registry of the process, shared by all sessions (descriptors outlive sessions) and by the
// probe API. Never destroyed: descriptors of modules may be read at exit.
Registry& Global();

class Registry {
 public:
  // Finds descriptors (and static-key sites) of modules not seen before; those of an event that is
  // already enabled are enabled too, their sites patched in one batch. Returns the number of new
  // descriptors.
  std::size_t Scan();
  // Not locked: for tests and single-threaded callers. Elements never move (deque).
  std::deque<Event>& events() { return events_; }
  std::size_t EventCount() const;
  // Enables every event whose "provider:name" matches one of the globs; assigns ids to events
  // never enabled before in this session. Returns how many events were newly enabled.
  // The sites of all of them are patched in one batch.
  // `on_enable`, if given, runs for each newly enabled event once its id is assigned and before
  // its state words are stored (release), e.g. to set `filtered` and prepare what it needs.
  std::size_t Enable(const std::vector<std::string>& globs,
                     const std::function<void(Event&)>& on_enable = nullptr);
  // The events not enabled yet whose "provider:name" matches one of the globs: what Enable(globs)
  // would enable now (a session checks its filter against them before it publishes itself).
  std::vector<const Event*> Matching(const std::vector<std::string>& globs) const;
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

  // include/hushtrace/probe.h. Scans, then attaches to every matching event.
  ProbeHandle AddProbe(const std::string& glob, ProbeCallback callback, void* data,
                       std::size_t* matched);
  // wait: return after a grace period (RemoveProbe); else the replaced lists are retired and the
  // callback may still run until SynchronizeProbes() (DetachProbe).
  bool RemoveProbe(ProbeHandle handle, bool wait);
  // One grace period for every DetachProbe before it; frees the retired lists. Returns at once
  // when nothing was detached since the last grace period.
  void SynchronizeProbes();
  // Modules pinned now (tests).
  std::size_t PinnedModules() const;
  // Drops the module references an idle registry released (dlclose). Call it with no lock held:
  // dlclose takes the loader's lock, under which a module's constructor or destructor may emit
  // an event whose slow path takes the session mutex.
  void ClosePendingModules();

 private:
  struct Module {
    void* handle = nullptr;  // dlopen RTLD_NOLOAD reference; nullptr: the executable
    std::uintptr_t base = 0;
    std::vector<internal::Descriptor*> descriptors;
    std::vector<patch::Site> sites;
  };
  struct Probe {
    ProbeHandle handle;
    std::string glob;
    ProbeCallback callback;
    void* data;
  };
  std::size_t ScanLocked();
  void DisableAllLocked();
  // Attaches the known probes to events [first, end).
  void AttachProbes(std::size_t first);
  // Publishes the lists of `changed` (probe slots) and retires the old ones. When a retired list
  // had callbacks and `wait`, or when kMaxRetired lists wait, runs a grace period and frees them.
  void Republish(const std::vector<Event*>& changed, bool wait = true);
  // Grace period, then frees every retired list.
  void SynchronizeLocked();
  // No event enabled or probed and no detached callback waiting for a grace period: forgets
  // pinned modules' descriptors and drops the pins.
  void ReleaseIfIdle();
  // Adds `d` to its event; returns the event's index, or -1 for bad metadata.
  std::ptrdiff_t Add(internal::Descriptor* d);
  // Clears every state word; returns the sites of the events that were enabled.
  std::vector<patch::Site> ClearStates(std::memory_order order);

  mutable std::recursive_mutex mu_;
  std::deque<Event> events_;
  std::vector<internal::Descriptor*> seen_;
  std::vector<Module> modules_;  // pinned modules (whose descriptors are in seen_)
  std::vector<void*> unpin_;     // references released by ReleaseIfIdle, for ClosePendingModules
  std::vector<Probe> probes_;
  // Replaced probe lists, freed after the next grace period (SynchronizeLocked). At most
  // kMaxRetired wait: a detaching loop pays one membarrier per kMaxRetired lists.
  static constexpr std::size_t kMaxRetired = 256;
  std::vector<const probes::ProbeList*> retired_;
  bool retired_callbacks_ = false;  // a list in retired_ had callbacks (a probe was detached)
  ProbeHandle next_probe_ = 1;
  std::uint32_t next_slot_ = 0;
  std::uint32_t next_id_ = 0;
};

bool GlobMatches(const std::string& pattern, const std::string& name);

}  // namespace hush::registry

#endif  // HUSHTRACE_SRC_REGISTRY_REGISTRY_H_
