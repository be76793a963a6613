#include "registry/grace.h"

#include <pthread.h>
#include <sched.h>

#include "base/membarrier.h"

#include <mutex>
#include <new>

namespace hush::registry::grace {
namespace {

std::mutex g_mu;             // guards the reader list; a leaf lock
Reader* g_readers = nullptr;  // registered threads (their thread_local records)
std::atomic<std::uint64_t> g_syncs{0};

// Unregisters the thread's record at exit (the record is thread_local storage).
struct Registration {
  Reader reader;
  ~Registration() {
    if (!reader.registered) return;
    std::lock_guard<std::mutex> lock(g_mu);
    if (reader.prev != nullptr) reader.prev->next = reader.next;
    else g_readers = reader.next;
    if (reader.next != nullptr) reader.next->prev = reader.prev;
    reader.registered = false;
  }
};
thread_local Registration t_registration;

// fork child: only the forking thread exists. The other records belong to threads that are gone
// (one of them may have been inside a section: its odd counter would stall every grace period),
// and g_mu may have been held by one of them.
void OnForkChild() {
  new (&g_mu) std::mutex();
  Reader& self = t_registration.reader;
  g_readers = self.registered ? &self : nullptr;
  self.next = nullptr;  // its counter is kept: it may fork from inside a section
  self.prev = nullptr;
}

std::once_flag g_fork_once;

}  // namespace

Reader& ThisThread() {
  Reader& r = t_registration.reader;
  if (!r.registered) [[unlikely]] {
    std::call_once(g_fork_once, [] { ::pthread_atfork(nullptr, nullptr, OnForkChild); });
    std::lock_guard<std::mutex> lock(g_mu);
    // A section that starts after this unlock happens after any writer's scan that missed us;
    // that writer published its pointer before taking g_mu, so we see it.
    r.next = g_readers;
    r.prev = nullptr;
    if (g_readers != nullptr) g_readers->prev = &r;
    g_readers = &r;
    r.registered = true;
  }
  return r;
}

bool Available() { return base::PrivateExpeditedAvailable(); }

bool Synchronize() {
  if (!Available()) return false;
  // Register this thread first: a signal handler that interrupts the wait below and emits a
  // probed event must not need g_mu to register (it would wait for itself).
  ThisThread();
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_readers == nullptr) return true;  // no thread ever entered a section
  g_syncs.fetch_add(1, std::memory_order_relaxed);
  // Step 1 (banner): a full barrier on every running thread; also one on this thread, ordering
  // the caller's release stores of the new pointers before the loads below.
  if (!base::PrivateExpeditedBarrier()) return false;
  // Step 2. Records cannot go away meanwhile: unregistering needs g_mu.
  for (Reader* r = g_readers; r != nullptr; r = r->next) {
    const std::uint64_t seen = r->ctr.load(std::memory_order_acquire);
    if ((seen & 1) == 0) continue;
    for (int spins = 0; r->ctr.load(std::memory_order_acquire) == seen; ++spins) {
      if (spins > 64) ::sched_yield();  // the reader may be descheduled inside its section
    }
  }
  return true;
}

std::uint64_t SynchronizeCount() { return g_syncs.load(std::memory_order_relaxed); }

}  // namespace hush::registry::grace
