// aarch64 static-key sites: one 4-byte `nop` (d503201f), enabled a `b <enabled block>` (imm26).
//
// Arm ARM (DDI 0487) B2.2.5, "Concurrent modification and execution of instructions": when one
// thread writes an instruction that another executes, the other may see the old one, the new one
// or, in general, anything (a torn or UNPREDICTABLE encoding), except when both the old and the
// new instruction are one of B, BL, BRK, HVC, ISB, NOP, SMC, SVC. For those, each execution is
// exactly the old or exactly the new instruction. A site is therefore written with one naturally
// aligned 32-bit store and no trap state (OneStoreSites(): patch.cc skips steps 2 and 3):
//
//   1. STR  the new instruction (one single-copy-atomic 32-bit store: B2.2.1)
//   2. DC CVAU, DSB ISH, IC IVAU, DSB ISH, ISB   __builtin___clear_cache on the site; the IC
//      IVAU is broadcast to the Inner Shareable domain, so every CPU's instruction cache drops
//      the old line
//   3. a context synchronization event on every other CPU running this process (their pipelines
//      may still hold the old instruction): patch.cc's sync, membarrier
//      MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE; on arm64 the kernel implements it by an IPI
//      whose exception return is context-synchronizing.
//
// Linux's aarch64_insn_patch_text_nosync() (arch/arm64/kernel/patching.c) is the same store and
// cache maintenance, used for its jump labels (NOP <-> B). What step 3 buys: after SetSites()
// returns, no thread runs the old instruction any more; without it a thread could go on taking a
// stale branch for as long as its pipeline keeps it, which the architecture does not bound.
//
// The trap (BRK #0x4873, "Hs") is still what the batch would write over a site it cannot swap;
// the single-store protocol never writes it, but the SIGTRAP handler understands it, so a fork
// child or a future two-instruction site (function entries) can use the common protocol.
#include <signal.h>
#include <sys/ucontext.h>

#include <cstring>

#include "patch/arch/arch.h"

namespace hush::patch::arch {
namespace {

constexpr std::uint32_t kNop = 0xd503201f;
constexpr std::uint32_t kB = 0x14000000;                     // b imm26: offset / 4 in bits 25:0
constexpr std::uint32_t kBrk = 0xd4200000 | (0x4873u << 5);  // brk #0x4873
constexpr std::uint8_t kBrkBytes[4] = {kBrk & 0xff, (kBrk >> 8) & 0xff, (kBrk >> 16) & 0xff,
                                       kBrk >> 24};

void Put(std::uint32_t insn, std::uint8_t* out) { std::memcpy(out, &insn, 4); }  // little-endian

}  // namespace

const char* Unsupported() { return nullptr; }
bool ExpeditedMembarrierSynchronizes() { return true; }
bool OneStoreSites() { return true; }

std::size_t SiteSize() { return 4; }
std::size_t HeadSize() { return 4; }
const std::uint8_t* TrapOpcode() { return kBrkBytes; }

void EncodeNop(std::uint8_t* out) { Put(kNop, out); }

bool EncodeJump(std::uintptr_t site, std::uintptr_t target, std::uint8_t* out) {
  // imm26 counts words from the branch itself: +-128 MiB.
  const std::int64_t rel = static_cast<std::int64_t>(target - site);
  if ((rel & 3) != 0 || rel < -(std::int64_t{1} << 27) || rel >= (std::int64_t{1} << 27))
    return false;
  Put(kB | (static_cast<std::uint32_t>(rel >> 2) & 0x03ffffffu), out);
  return true;
}

// Function tracing (-fpatchable-function-entry=2, two NOPs: `mov x9, lr; bl trampoline`) is not
// implemented on aarch64: SiteSize() is one instruction, and functrace refuses (discover.cc)
// before it would classify an entry.
EntryKind ClassifyEntry(const std::uint8_t*) { return EntryKind::kOther; }
std::size_t EntryStubSize() { return 0; }
bool EncodeEntryStub(std::uintptr_t, std::uintptr_t, std::uintptr_t, std::uint8_t*) {
  return false;
}

void StoreCode(std::uintptr_t addr, const std::uint8_t* bytes, std::size_t n) {
  if (n == 4 && (addr & 3) == 0) {
    // One single-copy-atomic store of the whole instruction: another CPU fetches the old or the
    // new encoding, never a mix (see the banner).
    std::uint32_t insn;
    std::memcpy(&insn, bytes, 4);
    asm volatile("str %w1, %0" : "=Q"(*reinterpret_cast<std::uint32_t*>(addr)) : "r"(insn));
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      asm volatile("strb %w1, %0"
                   : "=Q"(*reinterpret_cast<std::uint8_t*>(addr + i))
                   : "r"(static_cast<std::uint32_t>(bytes[i])));
    }
  }
  // DC CVAU + DSB ISH + IC IVAU + DSB ISH + ISB over the written bytes: the data reaches the point
  // of unification and every CPU's instruction cache drops the stale line (CTR_EL0.IDC/DIC let
  // libgcc skip what the hardware makes unnecessary).
  __builtin___clear_cache(reinterpret_cast<char*>(addr), reinterpret_cast<char*>(addr + n));
}

bool IsTrapInstruction(const siginfo_t* info) {
  // BRK reaches user space as SIGTRAP with si_code TRAP_BRKPT (1); kill(), raise() and
  // sigqueue() give SI_USER, SI_TKILL, SI_QUEUE, all <= 0.
  return info != nullptr && info->si_code > 0;
}

std::uintptr_t TrapAddress(const void* ucontext) {
  // BRK is reported with the PC of the BRK itself (it does not advance).
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  return static_cast<std::uintptr_t>(uc->uc_mcontext.pc);
}

void SetResumeAddress(void* ucontext, std::uintptr_t pc) {
  auto* uc = static_cast<ucontext_t*>(ucontext);
  uc->uc_mcontext.pc = pc;
}

}  // namespace hush::patch::arch

// Function tracing has no trampoline on aarch64 yet; functrace::Start() refuses before anything
// could reach these (EntryStubSize() == 0).
extern "C" void hush_ftrace_entry() { __builtin_trap(); }
extern "C" void hush_ftrace_return() { __builtin_trap(); }
extern "C" void hush_ftrace_entry_marked() { __builtin_trap(); }
extern "C" void hush_ftrace_return_marked() { __builtin_trap(); }
