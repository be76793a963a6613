// x86-64 static-key sites: a 5-byte NOP (nopl 0x0(%rax,%rax,1)) or a 5-byte JMP rel32, patched
// with int3 (0xcc) over the first byte while the other four change.
//
// Intel SDM vol. 3, 8.1.3 "Handling Self- and Cross-Modifying Code": another processor may execute
// a modified instruction only after the writer has made it safe and every processor that may run
// it has executed a serializing instruction. Writing the single byte int3 first is safe because a
// one-byte opcode is always fetched whole; patch.cc issues the serialization with
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE). Linux's text_poke_bp() does the same.
#include <signal.h>
#include <sys/ucontext.h>

#include <cstring>

#include "patch/arch/arch.h"

namespace hush::patch::arch {
namespace {

constexpr std::uint8_t kNop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
constexpr std::uint8_t kInt3[1] = {0xcc};
constexpr std::uint8_t kJmpRel32 = 0xe9;

}  // namespace

const char* Unsupported() { return nullptr; }
bool ExpeditedMembarrierSynchronizes() { return false; }
bool OneStoreSites() { return false; }

std::size_t SiteSize() { return sizeof kNop5; }
std::size_t HeadSize() { return sizeof kInt3; }
const std::uint8_t* TrapOpcode() { return kInt3; }

void EncodeNop(std::uint8_t* out) { std::memcpy(out, kNop5, sizeof kNop5); }

bool EncodeJump(std::uintptr_t site, std::uintptr_t target, std::uint8_t* out) {
  // rel32 counts from the end of the 5-byte instruction.
  const std::int64_t rel = static_cast<std::int64_t>(target - (site + 5));
  if (rel < INT32_MIN || rel > INT32_MAX) return false;
  const std::int32_t rel32 = static_cast<std::int32_t>(rel);
  out[0] = kJmpRel32;
  std::memcpy(out + 1, &rel32, sizeof rel32);
  return true;
}

std::size_t EntrySize() { return 5; }
std::uint64_t JumpReach() { return std::uint64_t{1} << 31; }  // jmp rel32

EntryKind ClassifyEntry(const std::uint8_t* bytes) {
  // gcc -fpatchable-function-entry=5: five one-byte NOPs (a thread may sit between them);
  // clang and gcc -mnop-mcount: one 5-byte NOP (0f 1f 44 00 xx); a jmp: already patched.
  static constexpr std::uint8_t kSplit[5] = {0x90, 0x90, 0x90, 0x90, 0x90};
  // nopl disp8(%rax,%rax,1) with any displacement (clang writes 0x08 there).
  if (std::memcmp(bytes, kNop5, 4) == 0) return EntryKind::kNop;
  if (std::memcmp(bytes, kSplit, 5) == 0) return EntryKind::kSplitNop;
  if (bytes[0] == kJmpRel32) return EntryKind::kPatched;
  return EntryKind::kOther;
}

// 16 bytes: lea body(%rip), %r11; jmp *trampoline_slot(%rip); int3 x 3. r11 is free at a
// function entry (a scratch register that carries no argument; PLT stubs clobber it too).
std::size_t EntryStubSize() { return 16; }

bool EncodeEntryStub(std::uintptr_t stub, std::uintptr_t body, std::uintptr_t trampoline_slot,
                     std::uint8_t* out) {
  const auto rel = [](std::uintptr_t target, std::uintptr_t next, std::int32_t* r) {
    const std::int64_t d = static_cast<std::int64_t>(target - next);
    if (d < INT32_MIN || d > INT32_MAX) return false;
    *r = static_cast<std::int32_t>(d);
    return true;
  };
  std::int32_t body_rel, slot_rel;
  if (!rel(body, stub + 7, &body_rel) || !rel(trampoline_slot, stub + 13, &slot_rel)) return false;
  static constexpr std::uint8_t kLeaR11[3] = {0x4c, 0x8d, 0x1d};  // lea disp32(%rip), %r11
  static constexpr std::uint8_t kJmpMem[2] = {0xff, 0x25};        // jmp *disp32(%rip)
  std::memcpy(out, kLeaR11, 3);
  std::memcpy(out + 3, &body_rel, 4);
  std::memcpy(out + 7, kJmpMem, 2);
  std::memcpy(out + 9, &slot_rel, 4);
  std::memset(out + 13, 0xcc, 3);
  return true;
}

void StoreCode(std::uintptr_t addr, const std::uint8_t* bytes, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    asm volatile("movb %1, %0" : "=m"(*reinterpret_cast<std::uint8_t*>(addr + i)) : "q"(bytes[i]));
  }
}

bool IsTrapInstruction(const siginfo_t* info) {
  // int3 reaches user space as SIGTRAP with si_code SI_KERNEL (0x80; under valgrind TRAP_BRKPT);
  // kill(), raise() and sigqueue() give SI_USER, SI_TKILL, SI_QUEUE, all <= 0.
  return info != nullptr && info->si_code > 0;
}

std::uintptr_t TrapAddress(const void* ucontext) {
  // After int3 the saved RIP points past the one-byte opcode.
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  return static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]) - 1;
}

void SetResumeAddress(void* ucontext, std::uintptr_t pc) {
  auto* uc = static_cast<ucontext_t*>(ucontext);
  uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(pc);
}

}  // namespace hush::patch::arch
