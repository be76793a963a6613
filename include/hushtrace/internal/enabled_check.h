// The disabled-site check, isolated behind one seam per platform.
//
//   x86-64:   cmpl $0, state(%rip) ; jne enabled      2 instructions when disabled
//   generic:  relaxed load, test, branch              3 instructions when disabled
//
// The asm form is a relaxed load of Descriptor::state (a plain aligned 32-bit read). A later
// step replaces both with a patched 5-byte NOP (static keys); this is where it plugs in.
#ifndef HUSHTRACE_INTERNAL_ENABLED_CHECK_H_
#define HUSHTRACE_INTERNAL_ENABLED_CHECK_H_

#include <atomic>

#include "hushtrace/internal/descriptor.h"

namespace hush::internal {

[[gnu::always_inline]] inline bool IsEnabled(const Descriptor& d) {
#if defined(__x86_64__) && !defined(HUSH_NO_ASM_CHECK)
  asm goto("cmpl $0, %0\n\tjne %l[enabled]" : : "m"(d.state) : "cc" : enabled);
  return false;
enabled:
  return true;
#else
  return d.state.load(std::memory_order_relaxed) != 0;
#endif
}

}  // namespace hush::internal

#endif  // HUSHTRACE_INTERNAL_ENABLED_CHECK_H_
