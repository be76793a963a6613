// The per-thread shadow stack of traced frames and the handlers the trampoline calls.
//
// The common case of both runs in the trampoline itself (x86_64_trampoline.S, "Fast paths");
// these handlers are its slow path and do the same with every case covered.
// Entry (trampoline -> hush_ftrace_enter): push {slot, real return address, site, entry time}
// and emit `func:entry` (unless a minimum duration is set); the trampoline then calls the body
// from the slot, whose return address becomes the return thunk (x86_64_trampoline.S). Exit (return thunk -> hush_ftrace_exit): find the frame whose slot is
// just below the stack pointer, emit `func:exit` (or `func:call` when long enough), pop, and
// return the real address for the thunk to jump to.
//
//   shadow stack (thread-local, mmap'd on first traced call, kCapacity frames)
//   +--------+--------+--------+--------+
//   | slot   | ret    | site   | ts     |  frames[0]   outermost traced frame
//   +--------+--------+--------+--------+
//   | ...                               |  frames[top-1] innermost
//
// Frames are matched by slot address, not only by position: frames skipped by longjmp or by
// exception unwinding are popped (their exit emitted) when an outer traced frame returns.
// Signal safety: a push reserves its frame (top + 1) before writing it and a pop reads the frame
// before releasing it, with compiler fences: a signal handler on the same thread only ever
// works above the frames of the code it interrupted.
#ifndef HUSHTRACE_SRC_FUNCTRACE_SHADOW_H_
#define HUSHTRACE_SRC_FUNCTRACE_SHADOW_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace hush::functrace {

inline constexpr std::uint32_t kCapacity = 4096;

struct Frame {
  std::uintptr_t* slot;  // where the traced function's return address lives
  std::uintptr_t ret;    // the real return address
  std::uintptr_t site;   // the function's patched entry
  std::uint64_t ts;      // entry time (cycle counter)
  // The slot holds `ret` again (an exception is being thrown): 1, it held hush_ftrace_return;
  // 2, hush_ftrace_return_marked (the thunk to put back).
  std::uint32_t restored;
  std::uint32_t pad;
#if defined(__aarch64__)
  // The caller's x19. While the body runs, x19 (callee-saved, so the body keeps it or saves it
  // where its unwind info says) holds this frame's address: the trampoline's unwind info finds
  // the real return address and the caller's x19 through it (aarch64_trampoline.S). `slot` is
  // then only a key, the stack pointer at the entry minus 8 (there is no return-address slot),
  // never dereferenced.
  std::uintptr_t saved_x19;
#endif
};

struct Shadow {
  std::uint32_t top;  // frames in use; written by the owning thread only
  std::uint32_t pad;
  Frame frames[kCapacity];
};

// Settings read by the handlers (relaxed: each is an independent value, set before the entries
// are patched; the patch batch's membarriers order it before any thread reaches the trampoline).
struct Settings {
  std::atomic<std::uint32_t> max_depth{kCapacity};
  std::atomic<std::uint64_t> min_ticks{0};
  std::atomic<bool> ever_started{false};  // the unwinder wrappers have work to do
};
// Assembler name: the trampoline's fast paths read max_depth and min_ticks (kAsm* in shadow.cc).
[[gnu::visibility("hidden")]] extern Settings g_settings __asm__("hush_ft_settings");

// The calling thread's shadow stack: nullptr before its first traced call, kDeadShadow after its
// destructor ran. Initial-exec TLS under an assembler name, read by the trampoline's fast paths.
[[gnu::visibility("hidden")]] extern thread_local Shadow* t_shadow __asm__("hush_ft_shadow")
    __attribute__((tls_model("initial-exec")));

// The marked functions (functrace.h, FunctionTrigger), read by hush_ftrace_exit_marked only:
// sorted by entry (a function marked by two triggers has two marks), immutable once published.
// Start and Rescan publish a new table when they mark functions (release); a table replaced is
// never freed (a thread may still be reading it; one per scan that marks something).
struct Mark {
  std::uintptr_t entry;      // the patched entry (Frame::site)
  std::uint64_t generation;  // TriggerHooks::generation
  void* state;               // TriggerHooks::make_state's
};
struct MarkTable {
  void (*on_return)(std::uint64_t generation, void* state, std::uint64_t entry_ts,
                    std::uint64_t exit_ts) = nullptr;
  std::vector<Mark> marks;
};
extern std::atomic<const MarkTable*> g_marks;

extern std::atomic<std::uint64_t> g_overflow;
extern std::atomic<std::uint64_t> g_unmatched;

// Called by the unwinder wrappers (interpose.cc) on the throwing / catching thread.
// Before the unwinder walks the stack: every hijacked slot gets its real return address back.
void RestoreForUnwind();
// After a catch at stack pointer `catcher_sp` (no other exception in flight): frames below it are
// gone (exit emitted); the restored ones above it are hijacked again.
void ResumeAfterCatch(std::uintptr_t catcher_sp, bool rehijack);
// Defined by interpose.cc: whether the program's unwinder calls reach our wrappers.
bool UnwindWrappersActive(std::string* why);
// Registers the module's descriptors for func:* events (discover.cc calls it once).
void RegisterEvents();
// The module-map event (func:module), on the calling thread.
void EmitModule(const char* path, const char* build_id, std::uint64_t base);

}  // namespace hush::functrace

extern "C" {
// The state words of func:entry and func:exit, for the trampoline's fast paths.
[[gnu::visibility("hidden")]] extern const std::atomic<std::uint32_t>* const hush_ft_entry_state;
[[gnu::visibility("hidden")]] extern const std::atomic<std::uint32_t>* const hush_ft_exit_state;
// The asm side (patch/arch/x86_64_trampoline.S, patch/arch/aarch64_trampoline.S).
void hush_ftrace_entry();
void hush_ftrace_return();
// The same for marked functions (functrace.h, FunctionTrigger): their stubs go to the first,
// their calls return to the second.
void hush_ftrace_entry_marked();
void hush_ftrace_return_marked();
// Called by the trampoline: `body` is the address after the patched entry, `slot` the stack slot
// holding the traced function's return address. 1: a frame was pushed (the trampoline calls
// the body, so that it returns through the thunk), 0: untraced (it jumps to the body).
int hush_ftrace_enter(std::uintptr_t body, std::uintptr_t* slot);
// aarch64 (aarch64_trampoline.S): the function entered at `site`, with the stack pointer `sp`, the
// return address `ret` (x30) and `x19` at its entry. Returns the frame pushed (the trampoline
// puts its address in x19 and calls the body), or 0: untraced (it branches to the body).
std::uintptr_t hush_ftrace_enter_a64(std::uintptr_t site, std::uintptr_t sp, std::uintptr_t ret,
                                     std::uintptr_t x19);
// Called by the return thunk with the stack pointer it was entered with; returns where to go.
std::uintptr_t hush_ftrace_exit(std::uintptr_t sp);
// The same for hush_ftrace_return_marked: then the frame's marks (g_marks) get on_return.
std::uintptr_t hush_ftrace_exit_marked(std::uintptr_t sp);
}

#endif  // HUSHTRACE_SRC_FUNCTRACE_SHADOW_H_
