#include "registry/registry.h"

#include <dlfcn.h>
#include <elf.h>
#include <fnmatch.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "registry/grace.h"

namespace hush::registry {
namespace {

struct JumpSite {
  internal::Descriptor* descriptor;
  patch::Site site;
};

// What one module holds. Read inside dl_iterate_phdr's callback (the loader's lock keeps the
// module mapped then); its descriptors are only dereferenced once the module is pinned.
struct FoundModule {
  std::uintptr_t base = 0;
  std::string name;
  bool first = false;  // the executable (the first module dl_iterate_phdr reports)
  bool self = false;   // the module holding this code (the runtime's own, or the executable)
  std::vector<internal::Descriptor*> found;
  std::vector<JumpSite> jumps;
};

struct ScanContext {
  std::vector<FoundModule> modules;
  bool first = true;
};

// The [start, stop) range a note's two self-relative offsets point at; false if it is empty (weak
// undefined bounds of a module without such a section resolve to 0).
bool NoteRange(const char* desc, std::uintptr_t* start, std::uintptr_t* stop) {
  std::int64_t to_start, to_stop;
  std::memcpy(&to_start, desc, 8);
  std::memcpy(&to_stop, desc + 8, 8);
  // An offset of 0 is a weak bound left undefined (no such section in the module): aarch64 BFD ld
  // resolves a PC-relative reference to an undefined weak symbol to the place itself, where
  // x86-64's gives 0 - place (start == 0 below).
  if (to_start == 0 || to_stop == 0) return false;
  *start = reinterpret_cast<std::uintptr_t>(desc) + static_cast<std::uintptr_t>(to_start);
  *stop = reinterpret_cast<std::uintptr_t>(desc + 8) + static_cast<std::uintptr_t>(to_stop);
  return *start != 0 && *stop > *start;
}

// Each JumpEntry field is an offset from its own address.
std::uintptr_t Resolve(const std::int32_t* field) {
  const auto offset = static_cast<std::uintptr_t>(std::intptr_t{*field});  // sign-extended
  return reinterpret_cast<std::uintptr_t>(field) + offset;
}

void ScanNotes(const char* p, const char* end, FoundModule* ctx) {
  while (p + sizeof(ElfW(Nhdr)) <= end) {
    ElfW(Nhdr) n;
    std::memcpy(&n, p, sizeof n);
    const char* name = p + sizeof n;
    const char* desc = name + ((n.n_namesz + 3) & ~3u);
    const char* next = desc + ((n.n_descsz + 3) & ~3u);
    if (next > end || next <= p) return;
    const bool ours = n.n_namesz == 7 && std::memcmp(name, "hushtr", 7) == 0 && n.n_descsz == 16;
    std::uintptr_t start, stop;
    if (ours && n.n_type == internal::kNoteType && NoteRange(desc, &start, &stop) &&
        (stop - start) % sizeof(void*) == 0) {
      for (auto* slot = reinterpret_cast<internal::Descriptor* const*>(start);
           slot < reinterpret_cast<internal::Descriptor* const*>(stop); ++slot) {
        if (*slot != nullptr) ctx->found.push_back(*slot);
      }
    } else if (ours && n.n_type == internal::kJumpNoteType && NoteRange(desc, &start, &stop) &&
               (stop - start) % sizeof(internal::JumpEntry) == 0) {
      for (auto* e = reinterpret_cast<const internal::JumpEntry*>(start);
           e < reinterpret_cast<const internal::JumpEntry*>(stop); ++e) {
        ctx->jumps.push_back({reinterpret_cast<internal::Descriptor*>(Resolve(&e->descriptor)),
                              {Resolve(&e->site), Resolve(&e->target)}});
      }
    }
    p = next;
  }
}

int OnModule(dl_phdr_info* info, std::size_t, void* arg) {
  auto* ctx = static_cast<ScanContext*>(arg);
  FoundModule m;
  m.base = info->dlpi_addr;
  m.name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  m.first = ctx->first;
  ctx->first = false;
  const auto here = reinterpret_cast<std::uintptr_t>(&OnModule);  // in a PT_LOAD of ours
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && here - (info->dlpi_addr + ph.p_vaddr) < ph.p_memsz) m.self = true;
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    ScanNotes(p, p + ph.p_memsz, &m);
  }
  if (!m.found.empty() || !m.jumps.empty()) ctx->modules.push_back(std::move(m));
  return 0;
}

int OnModuleStillThere(dl_phdr_info* info, std::size_t, void* arg) {
  auto* m = static_cast<const FoundModule*>(arg);
  return info->dlpi_addr == m->base && info->dlpi_name != nullptr && m->name == info->dlpi_name;
}

// A reference to the module loaded at `base` under `name`, or nullptr if it is gone (closed
// after dl_iterate_phdr returned). Once dlopen holds a reference, a second walk that still finds
// that name at that base proves the reference is to the module whose notes were read (another
// object under that name at another address does not count). The executable needs none: it is
// never unloaded. Nor does the module holding this code, which cannot be unloaded while it runs
// and takes the registry with it when it is; pinning it at every session start cost a dlopen and
// the first call's dlsym in the runtime's dlopen wrapper, ~9 us of each traced exec. (The
// link_map that dlinfo gives is not read: the loader writes it under its own lock, which the
// sanitizers do not see.)
void* Pin(const FoundModule& m) {
  if (m.name.empty()) return nullptr;
  void* h = ::dlopen(m.name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (h == nullptr) return nullptr;
  if (::dl_iterate_phdr(OnModuleStillThere, const_cast<FoundModule*>(&m)) == 0) {
    ::dlclose(h);
    return nullptr;
  }
  return h;
}

// Reads the notes of the module at `m->base` under `m->name` again (see ScanLocked).
int OnModuleReread(dl_phdr_info* info, std::size_t, void* arg) {
  auto* m = static_cast<FoundModule*>(arg);
  if (info->dlpi_addr != m->base || info->dlpi_name == nullptr || m->name != info->dlpi_name) return 0;
  m->found.clear();
  m->jumps.clear();
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    ScanNotes(p, p + ph.p_memsz, m);
  }
  return 1;
}

}  // namespace

Registry& Global() {
  static Registry* registry = new Registry();  // never destroyed: see registry.h
  return *registry;
}

bool GlobMatches(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

std::size_t Registry::Scan() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return ScanLocked();
}

std::size_t Registry::EventCount() const {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return events_.size();
}

std::size_t Registry::PinnedModules() const {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return modules_.size();
}

std::size_t Registry::ScanLocked() {
  ScanContext scan;
  ::dl_iterate_phdr(OnModule, &scan);
  const std::size_t first_new_event = events_.size();
  std::size_t added_count = 0;
  std::vector<patch::Site> to_enable;
  for (FoundModule& fm : scan.modules) {
    // A jump entry's descriptor has internal linkage in the entry's own module, so it is new
    // exactly when the module is: the sites of descriptors seen before are known already.
    for (const JumpSite& j : fm.jumps) fm.found.push_back(j.descriptor);
    const bool known = std::any_of(fm.found.begin(), fm.found.end(), [&](internal::Descriptor* d) {
      return std::find(seen_.begin(), seen_.end(), d) != seen_.end();
    });
    if (known) continue;
    Module mod;
    mod.base = fm.base;
    if (!fm.first && !fm.self) {
      mod.handle = Pin(fm);
      if (mod.handle == nullptr) continue;  // unloaded since the walk: its memory is gone
      // The walk may have met the module while another thread's dlopen was still relocating it
      // (the loader lists a module before it relocates it): its descriptor table then held
      // unrelocated addresses. Pin's dlopen waited for the loader's lock, so the module is
      // relocated now: read its notes again.
      if (::dl_iterate_phdr(OnModuleReread, &fm) == 0) {
        modules_.push_back(std::move(mod));  // pinned: released with the others when idle
        continue;
      }
      for (const JumpSite& j : fm.jumps) fm.found.push_back(j.descriptor);
    }
    std::unordered_map<internal::Descriptor*, std::ptrdiff_t> added;  // new descriptor -> event
    for (internal::Descriptor* d : fm.found) {
      if (added.count(d) != 0) continue;
      seen_.push_back(d);
      mod.descriptors.push_back(d);
      added.emplace(d, Add(d));
    }
    for (const JumpSite& j : fm.jumps) {
      const auto it = added.find(j.descriptor);
      if (it == added.end() || it->second < 0) continue;
      Event& e = events_[static_cast<std::size_t>(it->second)];
      e.sites.push_back(j.site);
      mod.sites.push_back(j.site);
      if (e.Active()) to_enable.push_back(j.site);
    }
    added_count += added.size();
    if (mod.handle != nullptr) modules_.push_back(std::move(mod));
  }
  // A module found while its event is enabled (dlopen after the session started): Add() set the
  // new descriptors' states; now the sites jump.
  if (!to_enable.empty()) patch::SetSites(to_enable, true);
  AttachProbes(first_new_event);
  return added_count;
}

std::ptrdiff_t Registry::Add(internal::Descriptor* d) {
  MetaRecord meta;
  std::string error;
  if (ParseMetaRecord(d->meta, 65536, &meta, &error) == 0) {
    std::fprintf(stderr, "hushtrace: ignoring a tracepoint with bad metadata: %s\n", error.c_str());
    return -1;
  }
  for (std::size_t i = 0; i < events_.size(); ++i) {
    Event& e = events_[i];
    if (SameFullName(e.meta, meta) && e.meta.kind == meta.kind && e.meta.Signature() == meta.Signature()) {
      e.descriptors.push_back(d);
      if (e.Active()) d->state.store(e.StateWord(), std::memory_order_release);
      return static_cast<std::ptrdiff_t>(i);
    }
  }
  Event e;
  e.meta = std::move(meta);
  e.descriptors.push_back(d);
  events_.push_back(std::move(e));
  return static_cast<std::ptrdiff_t>(events_.size() - 1);
}

std::size_t Registry::Enable(const std::vector<std::string>& globs,
                             const std::function<void(Event&)>& on_enable) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::size_t n = 0;
  std::vector<patch::Site> sites;
  std::vector<Event*> probed;
  for (Event& e : events_) {
    if (e.enabled) continue;
    const std::string name = e.meta.FullName();
    if (std::none_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return GlobMatches(g, name); })) {
      continue;
    }
    if (e.id < 0) e.id = next_id_++;
    e.enabled = true;
    ++n;
    if (on_enable) on_enable(e);
    if (e.probe_slot >= 0) probed.push_back(&e);  // its list carries the recorder's id
    if (!e.probes.empty()) continue;  // state word and sites unchanged: the list has the id
    // Release is not needed by emitting threads (the state word carries the id); it orders the
    // registry's own bookkeeping for a later reader of the same descriptor on another thread.
    for (internal::Descriptor* d : e.descriptors) {
      d->state.store(e.StateWord(), std::memory_order_release);
    }
    sites.insert(sites.end(), e.sites.begin(), e.sites.end());
  }
  // After the states: the batch's membarriers order the stores above before any thread runs a
  // new JMP, so a jump always finds its event's id.
  if (!sites.empty()) patch::SetSites(sites, true);
  Republish(probed);
  return n;
}

std::vector<const Event*> Registry::Matching(const std::vector<std::string>& globs) const {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::vector<const Event*> out;
  for (const Event& e : events_) {
    const std::string name = e.meta.FullName();
    if (!e.enabled && std::any_of(globs.begin(), globs.end(),
                                  [&](const std::string& g) { return GlobMatches(g, name); })) {
      out.push_back(&e);
    }
  }
  return out;
}

std::size_t Registry::SetTriggers(const std::vector<std::string>& globs) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::size_t n = 0;
  std::vector<Event*> probed;
  for (Event& e : events_) {
    const std::string name = e.meta.FullName();
    if (!e.enabled || std::none_of(globs.begin(), globs.end(),
                                   [&](const std::string& g) { return GlobMatches(g, name); })) {
      continue;
    }
    e.trigger = true;
    ++n;
    // Relaxed suffices for emitting threads (the word carries everything they need); a thread
    // that still reads the old word records the event without firing the trigger.
    if (e.probe_slot >= 0) probed.push_back(&e);
    if (!e.probes.empty()) continue;
    for (internal::Descriptor* d : e.descriptors) d->state.store(e.StateWord(), std::memory_order_release);
  }
  Republish(probed);
  return n;
}

std::vector<patch::Site> Registry::ClearStates(std::memory_order order) {
  std::vector<patch::Site> sites;
  for (Event& e : events_) {
    // A probed event keeps its state word (probe slot) and its jumps; only its list changes.
    if (e.enabled && e.probes.empty()) sites.insert(sites.end(), e.sites.begin(), e.sites.end());
    e.enabled = false;
    e.trigger = false;
    e.filtered = false;
    for (internal::Descriptor* d : e.descriptors) d->state.store(e.StateWord(), order);
  }
  return sites;
}

void Registry::DisableAllLocked() {
  // States first: from here on a thread that still takes a JMP emits nothing.
  const std::vector<patch::Site> sites = ClearStates(std::memory_order_release);
  if (!sites.empty()) patch::SetSites(sites, false);
  std::vector<Event*> probed;
  for (Event& e : events_) {
    if (e.probe_slot >= 0) probed.push_back(&e);
  }
  Republish(probed);  // the lists lose the recorder
}

void Registry::DisableAll() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  DisableAllLocked();
  ReleaseIfIdle();
}

void Registry::DisableAllInChild() {
  // Relaxed: the child has a single thread. No lock: another parent thread may have held it at
  // fork time. Probed events keep their probes (their callbacks exist in the child too).
  const std::vector<patch::Site> sites = ClearStates(std::memory_order_relaxed);
  if (!sites.empty()) patch::SetSitesInChild(sites, false);
}

void Registry::ResetIds() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  DisableAllLocked();
  for (Event& e : events_) e.id = -1;
  next_id_ = 0;
}

std::vector<const Event*> Registry::EventsWithIds() const {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::vector<const Event*> out;
  for (const Event& e : events_) {
    if (e.id >= 0) out.push_back(&e);
  }
  std::sort(out.begin(), out.end(), [](const Event* a, const Event* b) { return a->id < b->id; });
  return out;
}

}  // namespace hush::registry

