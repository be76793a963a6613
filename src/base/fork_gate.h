// The fork gate: fork() of a traced process never copies a library thread mid-allocation.
//
// A fork child inherits every lock exactly as it was, but only the forking thread. glibc's malloc
// takes its own locks around fork(); other allocators do not (the ASan allocator of GCC 12 among
// them), and a fork child then deadlocks in its first allocation of the size class a vanished
// thread was allocating from. The library's own threads (consumer, snapshot, sched, control
// server) allocate while they work, at times no application controls, so they hold this gate
// (shared) while they work; the pthread_atfork prepare handler takes it exclusively, so fork()
// waits for their current work item to finish (LTTng-UST's listener threads are treated the
// same way), and then for library threads still starting (a thread's runtime allocates before
// its body runs: ASan does).
//
// Invariants:
//   - A work section never blocks on a lock the forking thread may hold: sections only take the
//     library's internal locks, and no library lock is held around a fork() (the gate's wait is
//     still bounded, 2 s, for the pathological case; the fork then goes ahead unguarded).
//   - Waits (poll, condition variables, accept) happen outside sections, so fork() never waits
//     for an idle thread.
//   - The child handler makes the gate new before any other of the library's child work (it runs
//     the session's child hook itself, which may start a thread that enters a section at once).
// Not covered: a library thread's own teardown after its body returned (its runtime frees its
// thread data then; only at session stop), and allocations of the application's threads,
// including the library's slow path running on them (attaching a ring): those are the program's
// own fork hazard under such an allocator, as any allocation of its threads is.
#ifndef HUSHTRACE_SRC_BASE_FORK_GATE_H_
#define HUSHTRACE_SRC_BASE_FORK_GATE_H_

namespace hush::base {

// Registers the pthread_atfork handlers, once; `child_hook` (if not null) runs in a fork child
// after the gate is reset. Called before the first library thread starts.
void InstallForkGate(void (*child_hook)() = nullptr);

// Held while a library thread works. Not re-entrant on purpose (do not nest).
class ForkGateSection {
 public:
  ForkGateSection();
  ~ForkGateSection();
  ForkGateSection(const ForkGateSection&) = delete;
  ForkGateSection& operator=(const ForkGateSection&) = delete;
};

// For StartLibraryThread: counts a library thread from just before its creation until its body
// runs (ThreadStarted, on the new thread); the prepare handler waits for the count to be 0.
void ThreadStarting();
void ThreadStartFailed();
void ThreadStarted();

// Waits (yielding, at most 2 s, as a fork does) until every library thread started so far has run
// ThreadStarted(), which each does after naming itself (library_thread.h): afterwards the
// threads named "hush-*" in /proc/self/task are all of them but those started since. Returns
// whether the count reached 0.
bool WaitForLibraryThreadsStarted();

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_FORK_GATE_H_
