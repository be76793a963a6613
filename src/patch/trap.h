// The SIGTRAP handler of the patcher: a thread that executes a site while its first byte is the
// trap opcode (patch.cc, steps 2-5) lands here and is sent where the site's new instruction would
// send it. Every other SIGTRAP goes to whatever the program had installed.
//
//   trap at a site of the batch in flight    resume at the new state: the enabled block when
//                                            enabling, site + size when disabling
//   trap at a site no batch is patching      resume at the site itself: it holds a whole
//   (the thread slept between its trap and   instruction again (or a new batch's trap opcode,
//   its handler past the end of the batch)   which lands here again and finds that batch)
//   anything else                            the previous disposition: its handler, ignored, or
//                                            the default action (re-raised: the process dies)
//
// A program handler that replaced ours and chains to what it replaced (ours) gets ours installed
// over it again by the next batch; the trap then runs ours, the program's, ours again: that
// inner call goes to the disposition from before our first installation instead of looping.
//
// The handler reads only immutable arrays and atomics: async-signal-safe, lock-free.
// Installed by the first batch, never at start-up; re-installed (chaining to the new action) by
// any batch that finds the program replaced it.
#ifndef HUSHTRACE_SRC_PATCH_TRAP_H_
#define HUSHTRACE_SRC_PATCH_TRAP_H_

#include <cstdint>
#include <span>

namespace hush::patch::trap {

// Where a thread that traps at `site` continues while the batch is in flight.
struct Resume {
  std::uintptr_t site;
  std::uintptr_t pc;
};

// All of these run with the patch mutex held (or in a fork child, on its only thread).

// Makes our handler the SIGTRAP action, remembering the one it replaces.
void EnsureInstalled();
// Remembers sites for the late-trap rule above. Sorted and unique; known sites are skipped.
// Never forgotten (a site's trap can be handled long after its batch ended).
void AddKnownSites(std::span<const std::uintptr_t> sites);
// Publishes the batch (sorted by site) before its first trap opcode is written.
void Publish(std::span<const Resume> batch);
// Withdraws the batch after its last sync; returns once no handler can still be reading it.
void Retire();

std::uint64_t Traps();
std::uint64_t TrapsChained();

}  // namespace hush::patch::trap

#endif  // HUSHTRACE_SRC_PATCH_TRAP_H_
