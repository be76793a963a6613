// Function tracing: patches the compiler-emitted entry NOPs of selected functions into calls to a
// trampoline that records `func:entry` / `func:exit` (or `func:call`) on the calling thread's
// stream (docs/architecture.md, "Function tracing"; events in docs/format.md).
//
//   functrace.h / discover.cc  modules, patchable entries, symbol globs, near stubs, the batch
//   shadow.h / shadow.cc       per-thread shadow stack and the handlers the trampoline calls
//   interpose.cc               unwinder and dlopen wrappers (shared library only)
//   patch/arch/x86_64_trampoline.S  the trampoline and the return thunk
//
// Nothing here runs unless a session asks for functions: no module is scanned, no file read, no
// page allocated before Start().
//
// Threading: Start/Stop/Rescan are serialized by one mutex (lock order: API mutex, functrace
// mutex, patch mutex; never with the session core mutex held, because Start emits the module map).
#ifndef HUSHTRACE_SRC_FUNCTRACE_FUNCTRACE_H_
#define HUSHTRACE_SRC_FUNCTRACE_FUNCTRACE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace hush::functrace {

struct Options {
  std::vector<std::string> globs;  // over function names (mangled, demangled, demangled w/o args)
  std::uint32_t depth = 0;         // 0: as deep as the shadow stack goes
  std::uint64_t min_duration_ticks = 0;  // 0: every call; else only calls at least this long
};

// Start and Stop are weak references: only the shared runtime defines them (src/CMakeLists.txt);
// the session code checks for nullptr.
//
// Patches the selected entries of every loaded module in one batch and writes the module map.
// False with *error if nothing could be set up (no entry matched is not an error).
[[gnu::weak]] bool Start(const Options& options, std::string* error);
// Puts every patched entry back to its NOP in one batch. Frames already hijacked keep returning
// through the return thunk, which stays mapped forever.
[[gnu::weak]] void Stop();
// After dlopen(): patches the selected entries of modules loaded since the last scan.
void Rescan();
// After dlclose() unloaded the module loaded at `base` from `path`: its entries and its place in
// the module list are dropped, so that a module mapped there later (the same library loaded
// again, usually at the same address) is scanned and patched afresh.
void ForgetModule(std::uintptr_t base, const std::string& path);

struct Stats {
  std::uint64_t modules = 0;          // modules with patchable entries
  std::uint64_t entries = 0;          // patchable entries seen
  std::uint64_t patched = 0;          // entries currently patched
  std::uint64_t refused_split = 0;    // gcc five-NOP entries refused (other threads were running)
  std::uint64_t converted_split = 0;  // gcc five-NOP entries rewritten while single-threaded
  std::uint64_t overflow = 0;         // calls untraced because the shadow stack was full
  std::uint64_t unmatched_returns = 0;  // returns whose frame was dropped (longjmp, unwinding)
  double last_batch_us = 0;           // wall time of the last patch batch (Start, Rescan or Stop)
  // The patching thread lost its CPU involuntarily during that batch (RUSAGE_THREAD ru_nivcsw):
  // its wall time then includes another thread's time slice.
  bool last_batch_preempted = false;
};
Stats GetStats();

}  // namespace hush::functrace

#endif  // HUSHTRACE_SRC_FUNCTRACE_FUNCTRACE_H_
