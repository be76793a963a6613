// Grace periods for the probe lists (src/registry/probes.cc): a minimal userspace RCU of the
// "membarrier" flavour, written here because liburcu registers constructors and a signal-free
// reader set-up at load time, which the zero-start-up promise forbids (docs/architecture.md,
// "Probe lists").
//
// Readers (emitting threads, slow path only):
//
//   ReadLock()     ctr = ctr + 1 (odd)    plain store by the owner, then a compiler barrier
//   p = list.load(acquire)                 ... use p ...
//   ReadUnlock()   ctr = ctr + 1 (even)   release store
//
// No lock, no atomic read-modify-write, no fence instruction. A thread registers once, before its
// first ReadLock, under a mutex (cold path, like the ring attach); the registration is undone at
// thread exit.
//
// Writer: Synchronize() after publishing new pointers (release stores):
//   1. membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): every running thread of the process executes
//      a full barrier; a thread that is not running passes one at its next context switch.
//   2. For every registered reader whose ctr is odd, wait until it changes (acquire load).
// Why it is enough: let B be the barrier step 1 forced on reader R. A read section whose list
// load comes after B in R's program order sees the new pointer (published before the
// membarrier call). A section whose list load comes before B has its odd ctr store before B, so
// step 2 (after the call returned) reads that value or a later one, and waits until it changes:
// the release store of the even value then orders R's last use of the old list before the
// writer's free. Without step 1, x86 may hold R's ctr store in its store buffer while R loads the
// old pointer, and the writer would read an even ctr and free a list R is walking.
//
// membarrier registration (MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) happens on the first
// Synchronize() that has readers, never at start-up; MEMBARRIER_CMD_GLOBAL is never used.
#ifndef HUSHTRACE_SRC_REGISTRY_GRACE_H_
#define HUSHTRACE_SRC_REGISTRY_GRACE_H_

#include <atomic>
#include <cstdint>

namespace hush::registry::grace {

struct Reader {
  // Odd while the owner is inside a read section. Written by the owner only.
  std::atomic<std::uint64_t> ctr{0};
  Reader* next = nullptr;
  Reader* prev = nullptr;
  bool registered = false;
};

// The calling thread's record; registers it (takes the registry mutex) on first use. Never call
// it inside a read section.
Reader& ThisThread();

inline void ReadLock(Reader& r) {
  r.ctr.store(r.ctr.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  // Compiler barrier only: the CPU-side ordering of this store before the list load is provided
  // by the writer's membarrier (see the banner).
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

inline void ReadUnlock(Reader& r) {
  // Release: the section's reads of the list happen before a writer that sees the new value
  // frees it (pairs with the acquire load in Synchronize()).
  r.ctr.store(r.ctr.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

// Waits until every read section that may have seen a pointer replaced before the call has
// ended. Returns false (and waits for nothing) if membarrier is not available: the caller must
// then not free what it replaced. Takes the reader-list mutex; never call from a read section.
bool Synchronize();

// Whether Synchronize() can work here (registers for membarrier on first call).
bool Available();

// Statistics for benchmarks: number of Synchronize() calls that had to issue a membarrier.
std::uint64_t SynchronizeCount();

}  // namespace hush::registry::grace

#endif  // HUSHTRACE_SRC_REGISTRY_GRACE_H_
