// The disabled-site check, isolated behind one seam: IsEnabled<descriptor>().
//
// Static keys (x86-64, the default). The site is one 5-byte instruction that the runtime rewrites
// (src/patch) when the event is enabled or disabled; nothing is read from memory:
//
//   event          bytes at the site      the CPU                          disabled cost
//   -------------  ---------------------  -------------------------------  -------------
//   disabled       0f 1f 44 00 00 (nopl)  falls through                    1 instruction
//   enabled        e9 <rel32>     (jmp)   jumps to the enabled block       -
//   being patched  cc ?? ?? ?? ??  (int3) traps; the runtime's SIGTRAP     -
//                                         handler resumes at the new
//                                         state (enabled block or site+5)
//
// The site's `asm goto` also appends one entry to the ELF section `hush_jump`, three 32-bit
// offsets, each from the address of the field itself (link-time constants: no dynamic relocation,
// nothing to do at load time):
//
//   +--------------+-------------------------+----------------------+
//   | site - .     | enabled block - .       | &Descriptor - .      |   12 bytes, 4-aligned
//   +--------------+-------------------------+----------------------+
//
// The entry goes into the COMDAT group of the function that holds the site (the "?" section
// flag), so the copy of an inline function that the linker discards takes its entries with it.
// The runtime finds the section through the module's jump note (descriptor.h).
//
// The enabled block still re-reads Descriptor::state (EmitIfStillEnabled): the jump may be taken
// while the state is 0, because disabling clears the state before it removes the jump, and a
// fork child that could not un-patch keeps its parent's jumps with every state 0.
//
// aarch64: the site is one 4-byte `nop` (d503201f), enabled a `b <enabled block>` (imm26, +-128
// MiB, always in reach inside one function). Both are in the architecture's list of instructions
// that may be swapped while other CPUs execute them (Arm ARM B2.2.5, "Concurrent modification and
// execution of instructions"), so there is no trap state: one aligned 32-bit store, the cache
// maintenance and a context synchronization on every CPU (src/patch/arch/aarch64.cc). The table
// entry is the same; the descriptor's address goes through HUSH_INTERNAL_ASM_SYMBOL ("S", a
// symbolic address, which aarch64 GCC accepts in position-independent code where "i" is refused).
//
//   event          instruction at the site   disabled cost
//   -------------  ------------------------  -------------
//   disabled       d503201f (nop)            1 instruction
//   enabled        14xxxxxx (b enabled)      -
//
// Fallback (HUSH_NO_STATIC_KEYS defined, or neither x86-64 nor aarch64): load and branch,
// nothing is patched.
//
//   x86-64:   cmpl $0, state(%rip) ; jne enabled      2 instructions when disabled
//   generic:  relaxed load, test, branch              3 instructions when disabled
//
// Consumers choose per translation unit; the runtime supports both at once. Define
// HUSH_NO_STATIC_KEYS (CMake: -DHUSH_STATIC_KEYS=OFF) where code cannot be patched: a NOP has no
// state word to fall back on, so there static-key sites would stay disabled.
#ifndef HUSHTRACE_INTERNAL_ENABLED_CHECK_H_
#define HUSHTRACE_INTERNAL_ENABLED_CHECK_H_

#include <atomic>

#include "hushtrace/internal/descriptor.h"

#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(HUSH_NO_STATIC_KEYS)
#define HUSH_INTERNAL_STATIC_KEYS 1
#else
#define HUSH_INTERNAL_STATIC_KEYS 0
#endif

namespace hush::internal {

// `kDesc` is a template argument, not a parameter, so that its address is an assembler constant
// even at -O0 (the "i" constraint): site_descriptor<> has internal linkage, which keeps the
// offset a link-time constant in position-independent code.
template <const Descriptor& kDesc>
[[gnu::always_inline]] inline bool IsEnabled() {
#if HUSH_INTERNAL_STATIC_KEYS && defined(__aarch64__)
  asm goto(
      "1:\n\tnop\n\t"
      ".pushsection hush_jump, \"a?\"\n\t.balign 4\n\t"
      ".long 1b - ., %l[enabled] - ., %c0 - .\n\t.popsection"
      :
      : HUSH_INTERNAL_ASM_SYMBOL(&kDesc)
      :
      : enabled);
  return false;
enabled:
  return true;
#elif HUSH_INTERNAL_STATIC_KEYS
  asm goto(
      "1:\n\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\t"
      ".pushsection hush_jump, \"a?\"\n\t.balign 4\n\t"
      ".long 1b - ., %l[enabled] - ., %c0 - .\n\t.popsection"
      :
      : "i"(&kDesc)
      :
      : enabled);
  return false;
enabled:
  return true;
#elif defined(__x86_64__) && !defined(HUSH_NO_ASM_CHECK)
  // A relaxed load of Descriptor::state (a plain aligned 32-bit read).
  asm goto("cmpl $0, %0\n\tjne %l[enabled]" : : "m"(kDesc.state) : "cc" : enabled);
  return false;
enabled:
  return true;
#else
  return kDesc.state.load(std::memory_order_relaxed) != 0;
#endif
}

}  // namespace hush::internal

#endif  // HUSHTRACE_INTERNAL_ENABLED_CHECK_H_
