#include "registry/registry.h"

#include <elf.h>
#include <fnmatch.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace hush::registry {
namespace {

struct ScanContext {
  std::vector<internal::Descriptor*> found;
};

void ScanNotes(const char* p, const char* end, ScanContext* ctx) {
  while (p + sizeof(ElfW(Nhdr)) <= end) {
    ElfW(Nhdr) n;
    std::memcpy(&n, p, sizeof n);
    const char* name = p + sizeof n;
    const char* desc = name + ((n.n_namesz + 3) & ~3u);
    const char* next = desc + ((n.n_descsz + 3) & ~3u);
    if (next > end || next <= p) return;
    if (n.n_type == internal::kNoteType && n.n_namesz == 7 && std::memcmp(name, "hushtr", 7) == 0 &&
        n.n_descsz == 16) {
      std::int64_t to_start, to_stop;
      std::memcpy(&to_start, desc, 8);
      std::memcpy(&to_stop, desc + 8, 8);
      const auto start = reinterpret_cast<uintptr_t>(desc) + static_cast<uintptr_t>(to_start);
      const auto stop = reinterpret_cast<uintptr_t>(desc + 8) + static_cast<uintptr_t>(to_stop);
      // Weak undefined bounds (module without sites) resolve to 0: both offsets point at 0.
      if (start != 0 && stop > start && (stop - start) % sizeof(void*) == 0) {
        for (auto* slot = reinterpret_cast<internal::Descriptor* const*>(start);
             slot < reinterpret_cast<internal::Descriptor* const*>(stop); ++slot) {
          if (*slot != nullptr) ctx->found.push_back(*slot);
        }
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
  std::size_t added = 0;
  for (internal::Descriptor* d : ctx.found) {
    if (std::find(seen_.begin(), seen_.end(), d) != seen_.end()) continue;
    seen_.push_back(d);
    Add(d);
    ++added;
  }
  return added;
}

void Registry::Add(internal::Descriptor* d) {
  MetaRecord meta;
  std::string error;
  if (ParseMetaRecord(d->meta, 65536, &meta, &error) == 0) {
    std::fprintf(stderr, "hushtrace: ignoring a tracepoint with bad metadata: %s\n", error.c_str());
    return;
  }
  for (Event& e : events_) {
    if (e.meta.FullName() == meta.FullName() && e.meta.kind == meta.kind &&
        e.meta.Signature() == meta.Signature()) {
      e.descriptors.push_back(d);
      if (e.enabled) d->state.store(static_cast<std::uint32_t>(e.id + 1), std::memory_order_release);
      return;
    }
  }
  Event e;
  e.meta = std::move(meta);
  e.descriptors.push_back(d);
  events_.push_back(std::move(e));
}

std::size_t Registry::Enable(const std::vector<std::string>& globs) {
  std::size_t n = 0;
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
    // Release is not needed by emitting threads (the state word carries the id); it orders the
    // registry's own bookkeeping for a later reader of the same descriptor on another thread.
    for (internal::Descriptor* d : e.descriptors) {
      d->state.store(static_cast<std::uint32_t>(e.id + 1), std::memory_order_release);
    }
  }
  return n;
}

void Registry::DisableAll() {
  for (Event& e : events_) {
    e.enabled = false;
    for (internal::Descriptor* d : e.descriptors) d->state.store(0, std::memory_order_release);
  }
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

