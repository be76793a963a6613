// Live patching of static-key sites (include/hushtrace/internal/enabled_check.h).
//
// The registry calls SetSites() when it enables or disables events: every site of the batch is
// rewritten from NOP to JMP (or back) with the int3 protocol of patch.cc, under one process-wide
// mutex, with three core-serializing membarriers per batch however many sites it has. Nothing
// here runs before the first batch: the SIGTRAP handler, the membarrier registration and the
// /proc/self/mem descriptor are all set up lazily by it.
//
//   patch.h / patch.cc   batch logic: work list, page protection, the step list, failure handling
//   trap.h / trap.cc     the SIGTRAP handler that steps threads over sites being patched
//   arch/arch.h          what differs per architecture: instruction encodings, the trap opcode,
//                        the program counter in a ucontext; arch/x86_64.cc, arch/generic.cc
//
// Threading: SetSites() may be called from any thread; batches are serialized by the patch
// mutex. SetSitesInChild() is for a pthread_atfork child handler (a single thread) and never
// blocks. Lock order: the session mutex (Core::mu_) before the patch mutex.
#ifndef HUSHTRACE_SRC_PATCH_PATCH_H_
#define HUSHTRACE_SRC_PATCH_PATCH_H_

#include <cstdint>
#include <span>

namespace hush::patch {

// One static-key site: the instruction at `addr`, the enabled block it jumps to at `target`.
struct Site {
  std::uintptr_t addr = 0;
  std::uintptr_t target = 0;
  friend bool operator==(const Site&, const Site&) = default;
};

// Makes every site a JMP to its target (`enabled`) or a NOP. Sites already in that state are left
// alone; duplicates are fine. Returns false if some site could not be written (not x86-64, text
// neither mprotect-able nor writable through /proc/self/mem, no membarrier): those sites keep
// their old instruction, and a warning is printed once per process.
bool SetSites(std::span<const Site> sites, bool enabled);

// The same in a fork child (pthread_atfork child handler). If another thread of the parent was in
// the middle of a batch when it forked, the child's copy of the patch mutex is held forever: then
// nothing is done and false is returned (the child's sites keep their jumps; its enabled blocks
// re-check the state word, so they emit nothing once the states are 0).
bool SetSitesInChild(std::span<const Site> sites, bool enabled);

// Explicit code for one site (function entries, src/functrace): the SiteSize() bytes `bytes`
// become the instruction at `addr`; a thread that traps at `addr` during the batch continues at
// `resume` (for a function entry: addr + SiteSize(), i.e. that one call runs untraced).
struct CodeSite {
  std::uintptr_t addr = 0;
  std::uintptr_t resume = 0;
  std::uint8_t bytes[8] = {};
};

// Writes every site with the same step list and batch as SetSites() (sites already holding their
// bytes are skipped). Returns false if some site could not be written (warned once).
bool WriteCode(std::span<const CodeSite> sites);
// The same in a fork child; false without doing anything if the patch mutex is held.
bool WriteCodeInChild(std::span<const CodeSite> sites);
// Does now what the first batch of `sites` would otherwise do while other threads run into its
// traps: gives their text pages private copies (copy-on-write of the mapped file; best effort:
// needs MADV_POPULATE_WRITE, Linux 5.14; the pages are RX again on return) and grows the batch's
// work lists. On 10,000 entries, ~0.8 ms of a first batch (docs/benchmarks.md).
void PrepareCode(std::span<const CodeSite> sites);

// Does the once-per-process set-up of the first batch now (the process's membarrier registration,
// base/membarrier.h, which in a process of several threads waits for an RCU grace period in the
// kernel: ~15 ms on a 2-vCPU VM), so that a later SetSites() does not pay it. The live-control
// thread calls it when it starts.
void Prepare();
// Tests: makes the next batch register for membarrier again as if the kernel had no SYNC_CORE
// (EINVAL): an architecture where the plain expedited command synchronizes (aarch64) patches with
// it and says so once on stderr; others fail the batch with the usual warning. Irreversible.
void RefuseSyncCoreForTesting();
// Tests: `hook` is called on the patching thread right after the sync that ends steps 2, 3 and 4
// of every batch (patch.cc), with the step number, the patch mutex held; nullptr removes it.
// A hook that runs a site of the batch traps and is stepped over by the SIGTRAP handler.
void SetStepHookForTesting(void (*hook)(int step));

// Counters for tests and benchmarks (relaxed snapshots).
struct Stats {
  std::uint64_t batches = 0;        // batches that wrote at least one site
  std::uint64_t sites_written = 0;  // sites rewritten
  std::uint64_t traps = 0;          // SIGTRAPs at a site, stepped over by the handler
  std::uint64_t traps_chained = 0;  // other SIGTRAPs, passed to the program's disposition
  bool proc_mem_used = false;       // some batch wrote through /proc/self/mem
  bool failed = false;              // some site could not be patched (the warning was printed)
  bool sync_core_missing = false;   // membarrier SYNC_CORE refused: plain expedited (aarch64)
};
Stats GetStats();

}  // namespace hush::patch

#endif  // HUSHTRACE_SRC_PATCH_PATCH_H_
