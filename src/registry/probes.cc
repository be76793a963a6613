#include "registry/probes.h"

#include <sys/mman.h>

#include <atomic>

#include "hushtrace/internal/descriptor.h"
#include "registry/grace.h"

namespace hush::registry::probes {
namespace {

std::atomic<const ProbeList*> g_slots[kMaxSlots];

// Per-thread scratch for payloads that are not recorded: mmap'ed on first use (async-signal-safe,
// unlike malloc: the slow path may run in a signal handler), unmapped at thread exit.
struct Scratchpad {
  char* base = nullptr;
  ~Scratchpad() {
    if (base != nullptr) ::munmap(base, kMaxProbePayload);
  }
};
thread_local Scratchpad t_scratch;
thread_local std::uint32_t t_recorded_id = 0;

const ProbeList* Load(std::uint32_t id) {
  const std::uint32_t slot = id & internal::kIdMask;
  if (slot >= kMaxSlots) return nullptr;
  // Acquire: pairs with the release store in Publish(); the list's contents are visible.
  return g_slots[slot].load(std::memory_order_acquire);
}

}  // namespace

const ProbeList* Publish(std::uint32_t slot, const ProbeList* list) {
  // Release: a reader that loads `list` sees it fully built. The caller frees the old list only
  // after grace::Synchronize().
  return g_slots[slot].exchange(list, std::memory_order_acq_rel);
}

std::int64_t BeginEvent(std::uint32_t id) {
  grace::Reader& r = grace::ThisThread();  // may register: before the section
  // Pairs with the release store of the state word that carried `id` here: the slot's list was
  // published before it.
  std::atomic_thread_fence(std::memory_order_acquire);
  grace::ReadLock(r);
  const ProbeList* list = Load(id);
  std::int64_t out = -1;
  if (list != nullptr && list->record_id >= 0) {
    out = list->record_id | list->record_bits;
    t_recorded_id = static_cast<std::uint32_t>(out);
  }
  grace::ReadUnlock(r);
  return out;
}

char* Scratch(std::size_t payload_size) {
  if (payload_size > kMaxProbePayload) return nullptr;
  if (t_scratch.base == nullptr) {
    void* p = ::mmap(nullptr, kMaxProbePayload, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) return nullptr;
    t_scratch.base = static_cast<char*>(p);
  }
  return t_scratch.base;
}

bool IsScratch(const char* p) {
  return t_scratch.base != nullptr && p >= t_scratch.base && p < t_scratch.base + kMaxProbePayload;
}

std::uint32_t RecordedId() { return t_recorded_id; }

void RunProbes(std::uint32_t id, const char* payload, const char* end) {
  grace::Reader& r = grace::ThisThread();
  grace::ReadLock(r);
  if (const ProbeList* list = Load(id)) {
    const ProbeEvent event{list->name.c_str(), payload, static_cast<std::size_t>(end - payload)};
    for (const Entry& e : list->entries) e.callback(event, e.data);
  }
  grace::ReadUnlock(r);
}

}  // namespace hush::registry::probes
