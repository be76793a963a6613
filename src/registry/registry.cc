#include "registry/registry.h"

#include <elf.h>
#include <fnmatch.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace hush::registry {
namespace {

struct JumpSite {
  internal::Descriptor* descriptor;
  patch::Site site;
};

struct ScanContext {
  std::vector<internal::Descriptor*> found;
  std::vector<JumpSite> jumps;
};

// The [start, stop) range a note's two self-relative offsets point at; false if it is empty (weak
// undefined bounds of a module without such a section resolve to 0).
bool NoteRange(const char* desc, std::uintptr_t* start, std::uintptr_t* stop) {
  std::int64_t to_start, to_stop;
  std::memcpy(&to_start, desc, 8);
  std::memcpy(&to_stop, desc + 8, 8);
  *start = reinterpret_cast<std::uintptr_t>(desc) + static_cast<std::uintptr_t>(to_start);
  *stop = reinterpret_cast<std::uintptr_t>(desc + 8) + static_cast<std::uintptr_t>(to_stop);
  return *start != 0 && *stop > *start;
}

// Each JumpEntry field is an offset from its own address.
std::uintptr_t Resolve(const std::int32_t* field) {
  const auto offset = static_cast<std::uintptr_t>(std::intptr_t{*field});  // sign-extended
  return reinterpret_cast<std::uintptr_t>(field) + offset;
}

void ScanNotes(const char* p, const char* end, ScanContext* ctx) {
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
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    ScanNotes(p, p + ph.p_memsz, ctx);
  }
  return 0;
}

}  // namespace

bool GlobMatches(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

std::size_t Registry::Scan() {
  ScanContext ctx;
  ::dl_iterate_phdr(OnModule, &ctx);
  // A jump entry's descriptor has internal linkage in the entry's own module, so it is new
  // exactly when the module is: the sites of descriptors seen before are known already.
  for (const JumpSite& j : ctx.jumps) ctx.found.push_back(j.descriptor);
  std::unordered_map<internal::Descriptor*, std::ptrdiff_t> added;  // new descriptor -> event
  for (internal::Descriptor* d : ctx.found) {
    if (added.count(d) != 0 || std::find(seen_.begin(), seen_.end(), d) != seen_.end()) continue;
    seen_.push_back(d);
    added.emplace(d, Add(d));
  }
  std::vector<patch::Site> to_enable;
  for (const JumpSite& j : ctx.jumps) {
    const auto it = added.find(j.descriptor);
    if (it == added.end() || it->second < 0) continue;
    Event& e = events_[static_cast<std::size_t>(it->second)];
    e.sites.push_back(j.site);
    if (e.enabled) to_enable.push_back(j.site);
  }
  // A module found while its event is enabled (dlopen after the session started): Add() set the
  // new descriptors' states; now the sites jump.
  if (!to_enable.empty()) patch::SetSites(to_enable, true);
  return added.size();
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
    if (e.meta.FullName() == meta.FullName() && e.meta.kind == meta.kind &&
        e.meta.Signature() == meta.Signature()) {
      e.descriptors.push_back(d);
      if (e.enabled) d->state.store(e.StateWord(), std::memory_order_release);
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
  std::size_t n = 0;
  std::vector<patch::Site> sites;
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
  return n;
}

std::size_t Registry::SetTriggers(const std::vector<std::string>& globs) {
  std::size_t n = 0;
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
    for (internal::Descriptor* d : e.descriptors) d->state.store(e.StateWord(), std::memory_order_release);
  }
  return n;
}

std::vector<patch::Site> Registry::ClearStates(std::memory_order order) {
  std::vector<patch::Site> sites;
  for (Event& e : events_) {
    if (e.enabled) sites.insert(sites.end(), e.sites.begin(), e.sites.end());
    e.enabled = false;
    e.trigger = false;
    e.filtered = false;
    for (internal::Descriptor* d : e.descriptors) d->state.store(0, order);
  }
  return sites;
}

void Registry::DisableAll() {
  // States first: from here on a thread that still takes a JMP emits nothing.
  const std::vector<patch::Site> sites = ClearStates(std::memory_order_release);
  if (!sites.empty()) patch::SetSites(sites, false);
}

void Registry::DisableAllInChild() {
  // Relaxed: the child has a single thread.
  const std::vector<patch::Site> sites = ClearStates(std::memory_order_relaxed);
  if (!sites.empty()) patch::SetSitesInChild(sites, false);
}

void Registry::ResetIds() {
  DisableAll();
  for (Event& e : events_) e.id = -1;
  next_id_ = 0;
}

std::vector<const Event*> Registry::EventsWithIds() const {
  std::vector<const Event*> out;
  for (const Event& e : events_) {
    if (e.id >= 0) out.push_back(&e);
  }
  std::sort(out.begin(), out.end(), [](const Event* a, const Event* b) { return a->id < b->id; });
  return out;
}

}  // namespace hush::registry

