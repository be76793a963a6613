// What the patcher needs from an architecture. One implementation is compiled in:
// arch/x86_64.cc on x86-64, arch/aarch64.cc on aarch64, arch/generic.cc (patching unsupported)
// everywhere else.
//
// The patch protocol (patch.cc) writes a site in three parts: the trap opcode over the first
// kHeadSize bytes, then the tail, then the new head. An architecture whose sites are one
// naturally aligned instruction of one store (aarch64: a 4-byte NOP / B) needs no trap at all;
// docs/architecture.md, "Static keys", says how such a port fits this interface.
#ifndef HUSHTRACE_SRC_PATCH_ARCH_ARCH_H_
#define HUSHTRACE_SRC_PATCH_ARCH_ARCH_H_

#include <signal.h>

#include <cstddef>
#include <cstdint>

namespace hush::patch::arch {

inline constexpr std::size_t kMaxSiteSize = 8;
inline constexpr std::size_t kMaxHeadSize = 4;  // HeadSize() <= this (aarch64: 4)

// nullptr if sites can be patched on this architecture, else why not (for the warning).
const char* Unsupported();

// Whether a site is one instruction that may be replaced by the other while other CPUs execute
// it (aarch64: NOP <-> B), written with one store: patch.cc then skips the trap steps (2, 3).
bool OneStoreSites();

// Whether MEMBARRIER_CMD_PRIVATE_EXPEDITED alone makes every CPU running the process execute a
// context synchronization (aarch64: its IPI returns to user space through ERET, which is one), so
// that patch.cc may use it where the kernel has no SYNC_CORE command.
bool ExpeditedMembarrierSynchronizes();

// Size of a site in bytes, and how many leading bytes the trap opcode covers.
std::size_t SiteSize();
std::size_t HeadSize();
// The trap opcode, HeadSize() bytes (x86-64: int3).
const std::uint8_t* TrapOpcode();

// The instruction of a disabled site (a NOP) and of an enabled one (a jump from `site` to
// `target`), SiteSize() bytes into `out`. EncodeJump fails if the target is out of reach.
void EncodeNop(std::uint8_t* out);
bool EncodeJump(std::uintptr_t site, std::uintptr_t target, std::uint8_t* out);

// Function entries (src/functrace). A compiler-emitted patchable entry is EntrySize() bytes
// (x86-64: 5, one or five NOPs; aarch64: 8, two NOPs); its body starts right after it. Only its
// first SiteSize() bytes are ever rewritten. EntryKind classifies the EntrySize() bytes at an
// entry (kPatched: a jump, as this runtime writes). A traced entry jumps (EncodeJump, which
// reaches JumpReach() bytes either way) to a per-function stub, EntryStubSize() bytes, that
// hands the trampoline the function's body (entry + EntrySize()) and jumps to it through the
// pointer at `trampoline_slot` (which must be within reach of the stub): EncodeEntryStub writes
// it for a stub placed at `stub` (false if out of reach).
enum class EntryKind { kNop, kSplitNop, kPatched, kOther };
std::size_t EntrySize();
std::uint64_t JumpReach();
EntryKind ClassifyEntry(const std::uint8_t* bytes);
std::size_t EntryStubSize();
bool EncodeEntryStub(std::uintptr_t stub, std::uintptr_t body, std::uintptr_t trampoline_slot,
                     std::uint8_t* out);

// Stores `n` bytes into code made writable by mprotect, one single-byte store each (byte 0 of a
// site must change in one store: it is what other CPUs decode first). Plain machine stores that
// sanitizers do not see: ThreadSanitizer has no writable shadow memory for text, and the bytes
// are code, which no sanitizer checks the accesses of anyway.
void StoreCode(std::uintptr_t addr, const std::uint8_t* bytes, std::size_t n);

// In a SIGTRAP handler: whether the signal comes from a trap instruction executed by this thread
// (rather than kill/raise), and the address of that instruction.
bool IsTrapInstruction(const siginfo_t* info);
std::uintptr_t TrapAddress(const void* ucontext);
// Makes the interrupted thread continue at `pc` when the handler returns.
void SetResumeAddress(void* ucontext, std::uintptr_t pc);

}  // namespace hush::patch::arch

#endif  // HUSHTRACE_SRC_PATCH_ARCH_ARCH_H_
