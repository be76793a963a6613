// aarch64 static-key sites: one 4-byte `nop` (d503201f), enabled a `b <enabled block>` (imm26).
// Function entries (-fpatchable-function-entry=2): two `nop`s, the first one of which becomes
// `b <stub>` while the function is traced.
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
// Function entries. gcc and clang emit `nop; nop` at the entry of a function built with
// -fpatchable-function-entry=2 and list its address in __patchable_function_entries. Tracing it
// rewrites only the FIRST instruction, NOP <-> `b stub`, by the protocol above; the second NOP is
// never written. The stub (EncodeEntryStub: per function, in an arena functrace maps within
// the B's +-128 MiB of the module) is
//
//   adrp x16, body ; add x16, x16, :lo12:body      x16 = entry + 8, the function's body
//   adrp x17, slot ; ldr x17, [x17, :lo12:slot]    the trampoline's address, from the arena
//   br   x17
//   brk  #0x4873                                   (padding: never reached)
//
// x16/x17 are the intra-procedure-call scratch registers (AAPCS64 5.1.1): free at a function
// entry, which a veneer or a PLT stub may reach with them clobbered. Nothing else is written: x30
// still holds the caller's return address and sp the caller's stack pointer when the trampoline
// (aarch64_trampoline.S) starts, and `b` pushes nothing on the return-address predictor.
//
// Why one store is enough, for a thread running through the entry at each moment:
//   - enabling (NOP -> B): a thread that fetches the entry before the store (or whose pipeline
//     still holds the NOP) runs `nop; nop; body`: that call is untraced, as if it had come just
//     before the batch. One that fetches the B goes to the stub, written, cleaned to the point of
//     unification and made executable before the batch, and synchronized by the batch's first
//     membarrier (patch.cc: one-store code batches sync before the store as well), so no CPU can
//     run stale bytes of a stub. A thread already past the first instruction runs the second NOP
//     and the body: untraced. Nothing can be half-executed: the sequence never needs the two
//     instructions to change together, which is what makes two-instruction schemes (`mov x9,
//     x30; bl`) need an order of writes.
//   - disabling (B -> NOP): a thread that took the B finishes a traced call (stub, trampoline,
//     body, return thunk); stubs and trampolines are never unmapped.
//   - the BRK trap of the common protocol is never written for entries either; a stale B after
//     the batch's last membarrier is impossible (step 3).
// What the argument rests on is B2.2.5 (NOP and B are both in the list) and the single-copy
// atomicity of an aligned 32-bit store; neither is observable under qemu-user, which retranslates
// a page when it is written (docs/architecture.md, "aarch64").
//
// The trap (BRK #0x4873, "Hs") is still what the batch would write over a site it cannot swap;
// the single-store protocol never writes it, but the SIGTRAP handler understands it, so a fork
// child or a future two-instruction site can use the common protocol.
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

std::uint32_t EncodeAdrp(std::uintptr_t pc, std::uintptr_t target, unsigned rd, bool* ok) {
  // Pages of 4 KiB counted from the instruction's own page: a signed 21-bit count (+-4 GiB).
  const std::int64_t pages =
      static_cast<std::int64_t>((target >> 12) - (pc >> 12));
  if (pages < -(std::int64_t{1} << 20) || pages >= (std::int64_t{1} << 20)) {
    *ok = false;
    return 0;
  }
  const auto imm = static_cast<std::uint32_t>(pages) & 0x1fffffu;
  return 0x90000000u | ((imm & 3u) << 29) | ((imm >> 2) << 5) | rd;
}

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

std::size_t EntrySize() { return 8; }                         // nop; nop
std::uint64_t JumpReach() { return std::uint64_t{1} << 27; }  // b imm26: +-128 MiB

EntryKind ClassifyEntry(const std::uint8_t* bytes) {
  std::uint32_t first, second;
  std::memcpy(&first, bytes, 4);
  std::memcpy(&second, bytes + 4, 4);
  if (first == kNop && second == kNop) return EntryKind::kNop;
  if ((first & 0xfc000000u) == kB && second == kNop) return EntryKind::kPatched;
  return EntryKind::kOther;
}

// adrp x16; add x16; adrp x17; ldr x17; br x17; brk (see the banner).
std::size_t EntryStubSize() { return 24; }

bool EncodeEntryStub(std::uintptr_t stub, std::uintptr_t body, std::uintptr_t trampoline_slot,
                     std::uint8_t* out) {
  if ((stub & 3) != 0 || (trampoline_slot & 7) != 0) return false;
  bool ok = true;
  constexpr unsigned kX16 = 16, kX17 = 17;
  const std::uint32_t insns[6] = {
      EncodeAdrp(stub, body, kX16, &ok),
      0x91000000u | static_cast<std::uint32_t>((body & 0xfff) << 10) | (kX16 << 5) | kX16,
      EncodeAdrp(stub + 8, trampoline_slot, kX17, &ok),
      // ldr x17, [x17, #off]: the unsigned offset in units of 8 bytes
      0xf9400000u | static_cast<std::uint32_t>(((trampoline_slot & 0xfff) >> 3) << 10) |
          (kX17 << 5) | kX17,
      0xd61f0000u | (kX17 << 5),  // br x17
      kBrk,
  };
  if (!ok) return false;
  for (int i = 0; i < 6; ++i) Put(insns[i], out + 4 * i);
  return true;
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

// The trampolines are aarch64_trampoline.S.
