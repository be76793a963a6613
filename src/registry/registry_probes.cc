// Registry: user probes (AddProbe / RemoveProbe) and the release of pinned modules. See
// registry.h and probes.h; called with the registry mutex held unless public.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>

#include "registry/grace.h"
#include "registry/registry.h"

namespace hush::registry {

void Registry::Republish(const std::vector<Event*>& changed, bool wait) {
  if (changed.empty()) return;
  std::vector<const probes::ProbeList*> old;
  for (Event* e : changed) {
    // Never nullptr once the slot exists, even without probes: a thread that read the probe
    // state word before the last probe was removed may enter BeginEvent() any time later, and
    // must still find the recorder's current id (else its event is lost uncounted).
    auto* l = new probes::ProbeList();
    l->record_id = e->enabled ? e->id : -1;
    l->record_bits = e->RecordBits();
    l->name = e->meta.FullName();
    l->entries = e->probes;
    old.push_back(probes::Publish(static_cast<std::uint32_t>(e->probe_slot), l));
  }
  // A grace period now only when a replaced list had callbacks and the caller waits for them
  // (RemoveProbe's caller may free their data once it returns). Other lists (an event's first
  // probe replaces its slot's empty list; the recorder's id changes; DetachProbe) are retired and
  // freed after a later grace period: toggling a probe with DetachProbe costs no membarrier until
  // kMaxRetired lists wait. Without membarrier (never here: AddProbe refuses first) retired lists
  // are leaked rather than freed under a reader.
  bool callbacks = false;
  for (const probes::ProbeList* l : old) {
    if (l == nullptr) continue;
    callbacks = callbacks || !l->entries.empty();
    retired_.push_back(l);
  }
  retired_callbacks_ = retired_callbacks_ || callbacks;
  if ((callbacks && wait) || retired_.size() >= kMaxRetired) SynchronizeLocked();
}

void Registry::SynchronizeLocked() {
  if (!grace::Synchronize()) return;
  for (const probes::ProbeList* l : retired_) delete l;
  retired_.clear();
  retired_callbacks_ = false;
}

void Registry::SynchronizeProbes() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (!retired_callbacks_) return;
  SynchronizeLocked();
  ReleaseIfIdle();  // modules kept pinned for the detached callbacks
}

void Registry::AttachProbes(std::size_t first) {
  if (probes_.empty()) return;
  std::vector<Event*> changed;
  std::vector<patch::Site> sites;
  for (std::size_t i = first; i < events_.size(); ++i) {
    Event& e = events_[i];
    const std::string name = e.meta.FullName();
    const bool was_active = e.Active();
    const bool had_probes = !e.probes.empty();
    const std::size_t before = e.probes.size();
    for (const Probe& p : probes_) {
      if (!GlobMatches(p.glob, name)) continue;
      if (std::any_of(e.probes.begin(), e.probes.end(),
                      [&](const probes::Entry& x) { return x.handle == p.handle; })) {
        continue;
      }
      if (e.probe_slot < 0) {
        if (next_slot_ >= probes::kMaxSlots) {
          std::fprintf(stderr, "hushtrace: more than %u probed events; %s gets no probe\n",
                       probes::kMaxSlots, name.c_str());
          break;
        }
        e.probe_slot = static_cast<std::int32_t>(next_slot_++);
      }
      e.probes.push_back({p.handle, p.callback, p.data});
    }
    if (e.probes.size() == before) continue;
    changed.push_back(&e);
    if (!had_probes && !e.probes.empty()) {
      // The list first (Republish below happens before the state word is written, see the
      // loop after it), then the state word, then the jumps.
      if (!was_active) sites.insert(sites.end(), e.sites.begin(), e.sites.end());
    }
  }
  Republish(changed);
  for (Event* e : changed) {
    // Release: pairs with the acquire fence in probes::BeginEvent(); a reader that sees the
    // probe bit finds the slot's list published.
    for (internal::Descriptor* d : e->descriptors) d->state.store(e->StateWord(), std::memory_order_release);
  }
  if (!sites.empty()) patch::SetSites(sites, true);
}

ProbeHandle Registry::AddProbe(const std::string& glob, ProbeCallback callback, void* data,
                               std::size_t* matched) {
  if (callback == nullptr || !grace::Available()) return 0;
  std::lock_guard<std::recursive_mutex> lock(mu_);
  const ProbeHandle handle = next_probe_++;
  probes_.push_back({handle, glob, callback, data});
  ScanLocked();         // attaches the new probe to the events of newly found modules...
  AttachProbes(0);      // ...and to the known ones (entries already present are skipped)
  if (matched != nullptr) {
    *matched = static_cast<std::size_t>(std::count_if(events_.begin(), events_.end(), [&](const Event& e) {
      return std::any_of(e.probes.begin(), e.probes.end(),
                         [&](const probes::Entry& x) { return x.handle == handle; });
    }));
  }
  return handle;
}

bool Registry::RemoveProbe(ProbeHandle handle, bool wait) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  const auto it = std::find_if(probes_.begin(), probes_.end(),
                               [&](const Probe& p) { return p.handle == handle; });
  if (it == probes_.end()) return false;
  probes_.erase(it);
  std::vector<Event*> changed;
  std::vector<patch::Site> sites;
  for (Event& e : events_) {
    const auto entry = std::find_if(e.probes.begin(), e.probes.end(),
                                    [&](const probes::Entry& x) { return x.handle == handle; });
    if (entry == e.probes.end()) continue;
    e.probes.erase(entry);
    changed.push_back(&e);
    if (!e.probes.empty()) continue;
    // Last probe gone: back to the plain state word (the recorder's id, or 0), then the jumps.
    for (internal::Descriptor* d : e.descriptors) d->state.store(e.StateWord(), std::memory_order_release);
    if (!e.enabled) sites.insert(sites.end(), e.sites.begin(), e.sites.end());
  }
  if (!sites.empty()) patch::SetSites(sites, false);
  // After the grace period no reader holds a list with the callback: the caller may free `data`.
  Republish(changed, wait);
  ReleaseIfIdle();
  return true;
}

void Registry::ReleaseIfIdle() {
  if (modules_.empty() ||
      std::any_of(events_.begin(), events_.end(), [](const Event& e) { return e.Active(); })) {
    return;
  }
  // Detached callbacks may still run on other threads (DetachProbe never waits): the modules
  // stay pinned until the next grace period (SynchronizeProbes) calls this again.
  if (retired_callbacks_) return;
  // Every state word is 0 and every site a NOP: the runtime keeps no pointer into these modules
  // once their descriptors and sites are forgotten.
  for (Module& m : modules_) {
    auto in_module = [&](internal::Descriptor* d) {
      return std::find(m.descriptors.begin(), m.descriptors.end(), d) != m.descriptors.end();
    };
    seen_.erase(std::remove_if(seen_.begin(), seen_.end(), in_module), seen_.end());
    for (Event& e : events_) {
      e.descriptors.erase(std::remove_if(e.descriptors.begin(), e.descriptors.end(), in_module),
                          e.descriptors.end());
      e.sites.erase(std::remove_if(e.sites.begin(), e.sites.end(),
                                   [&](const patch::Site& s) {
                                     return std::find(m.sites.begin(), m.sites.end(), s) != m.sites.end();
                                   }),
                    e.sites.end());
    }
    unpin_.push_back(m.handle);  // dlclose'd by ClosePendingModules(), outside the locks
  }
  modules_.clear();
}

void Registry::ClosePendingModules() {
  std::vector<void*> handles;
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    handles.swap(unpin_);
  }
  for (void* h : handles) ::dlclose(h);  // unloads the module if the program closed it
}

}  // namespace hush::registry
