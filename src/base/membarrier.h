// membarrier(2): the process's expedited registration, and the barriers built on it. The one
// owner of the system call in the runtime. Two users:
//   - grace periods (registry probe lists: src/registry/grace.h; session teardown:
//     src/session/writers.h) need a full memory barrier on every running thread:
//     MEMBARRIER_CMD_PRIVATE_EXPEDITED;
//   - code patching (src/patch) needs, on top of it, a core-serializing instruction on every CPU
//     running the process: MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE.
//
// One registration serves both. Registering is what costs: the kernel makes every CPU's run queue
// see the new state, and in a process that already has more than one thread it waits for an RCU
// grace period (synchronize_rcu) to do so: ~15 ms on a 2-vCPU VM, once per registration command.
// Registering SYNC_CORE and then the plain command paid it twice on the first `hushtrace start
// PID` of a live program (strace of the target: docs/benchmarks.md, "Attach from the command
// line"). So SYNC_CORE is registered first and, when the kernel has it, the grace periods use the
// SYNC_CORE command: it does what the plain one does (the IPI handler's full barrier) and
// serializes the core as well, for no cost a teardown can measure. Only a kernel without SYNC_CORE
// gets the plain registration.
//
// So the runtime registers at start-up, in its constructor, while the process has one thread: the
// kernel then skips the grace period (one system call: docs/benchmarks.md, "Per exec"),
// and the first `hushtrace start PID` of a program that has since started its threads finds the
// registration done instead of waiting ~10 ms for it. A library loaded into a process that already
// has threads (dlopen) registers lazily, on first use, as before. What the registration costs a
// program that never traces: on x86-64 the kernel serializes the core when a CPU goes from a
// kernel thread (idle) back to one of the process's threads (membarrier_mm_sync_core_before_usermode:
// sync_core(), an IRET to itself on CPUs without SERIALIZE), which a pipe ping-pong does not show
// (docs/benchmarks.md, "Attach from the command line"). The registration is per process, dropped by
// exec(); a fork() child re-registers on first use (SyncCoreBarrier). Every function is
// thread-safe: racing first callers may both register, which the kernel accepts.
#ifndef HUSHTRACE_SRC_BASE_MEMBARRIER_H_
#define HUSHTRACE_SRC_BASE_MEMBARRIER_H_

namespace hush::base {

enum class Expedited {
  kUnavailable,  // neither command (Linux < 4.14, some emulators): callers fall back
  kPlain,        // MEMBARRIER_CMD_PRIVATE_EXPEDITED only (no SYNC_CORE in this kernel)
  kSyncCore,     // MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, which the barriers below use
};

// Registers once (SYNC_CORE first) and says what this process has. When SYNC_CORE was refused,
// *sync_core_errno (if given) is the kernel's answer to its registration.
Expedited RegisterExpedited(int* sync_core_errno = nullptr);

// Every running thread of this process has executed a full memory barrier when it returns true; a
// thread not running passes one at its next context switch. False if unavailable.
bool PrivateExpeditedBarrier();
// The start-up registration: RegisterExpedited() if the process has a single thread (glibc's
// __libc_single_threaded), else nothing (the first use registers). The constructor's only call.
void RegisterWhileSingleThreaded();

// Whether PrivateExpeditedBarrier() can work here (registers on first call).
bool PrivateExpeditedAvailable();

// On top of PrivateExpeditedBarrier(): every CPU running a thread of this process executes a
// core-serializing instruction before it returns, and threads not running do on their way back to
// user space. Needs kSyncCore. A fork child whose registration is not its parent's registers
// again on EPERM. Returns false with errno set on failure.
bool SyncCoreBarrier();

// Tests: forget the registration and answer the next one as a kernel without SYNC_CORE would
// (EINVAL), so that the plain command is registered. Irreversible.
void RefuseSyncCoreForTesting();

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_MEMBARRIER_H_
