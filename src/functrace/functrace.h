// Function tracing: patches the compiler-emitted entry NOPs of selected functions into calls to a
// trampoline that records `func:entry` / `func:exit` (or `func:call`) on the calling thread's
// stream (docs/architecture.md, "Function tracing"; events in docs/format.md).
//
//   functrace.h / discover.cc  modules, patchable entries, symbol globs, near stubs, the batch
//   shadow.h / shadow.cc       per-thread shadow stack and the handlers the trampoline calls
//   interpose.cc               unwinder and dlopen wrappers (shared library only)
//   patch/arch/x86_64_trampoline.S, aarch64_trampoline.S  the trampolines and the return thunks
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

// Duration triggers on function calls (`--snapshot-on 'func:NAME>5ms'`, filter/trigger_spec.h):
// the session's side of them (docs/architecture.md, "Function triggers").
//
// A traced function whose names also match a trigger's glob is *marked* when its entry is
// patched (Start, Rescan): its entry jumps to a stub that goes to the marked trampoline
// (hush_ftrace_entry_marked, the same fast path as the other one), whose calls return through
// hush_ftrace_return_marked, which always takes the C++ exit (hush_ftrace_exit_marked): func:exit
// (or func:call) as usual, then `on_return` with the frame's entry time and the exit's. Functions
// that are not marked run exactly the code they ran before triggers existed; nothing on their
// entry or exit looks at marks.
struct FunctionTrigger {
  std::string glob;        // over the function's names, as Options::globs
  std::uint32_t spec = 0;  // the session's number for it, handed to make_state
};
struct TriggerHooks {
  void* context = nullptr;
  std::uint64_t generation = 0;  // the session's: handed to on_return with each state
  // Under functrace's mutex, once per marked function and trigger: the session's per-function
  // state of `spec` (threshold, percentile estimate, name), kept by the session while it lives.
  // `name` is the function's demangled name (its symbol when not mangled). nullptr: not marked.
  void* (*make_state)(void* context, std::uint32_t spec, const char* name, std::uintptr_t entry);
  // On the traced thread, after the exit event of a marked function's call was committed, with
  // the thread inside an event (ThreadWriter::nesting raised: session/writers.h's grace period
  // covers it): `generation` and `state` as given when the function was marked (the session
  // checks the generation is its own before it touches `state`); times in cycles.
  void (*on_return)(std::uint64_t generation, void* state, std::uint64_t entry_ts,
                    std::uint64_t exit_ts);
};

struct Options {
  std::vector<std::string> globs;  // over function names (mangled, demangled, demangled w/o args)
  std::uint32_t depth = 0;         // 0: as deep as the shadow stack goes
  std::uint64_t min_duration_ticks = 0;  // 0: every call; else only calls at least this long
  std::vector<FunctionTrigger> triggers;  // marks (see above); none: no function is marked
  TriggerHooks hooks;                     // set when `triggers` is not empty
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
  std::uint64_t marked = 0;           // of these, marked by a trigger (see FunctionTrigger)
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
