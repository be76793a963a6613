// The disabled tracepoint of hush_insn_driver built as a load-and-branch site (HUSH_NO_STATIC_KEYS
// is defined for this file only, see CMakeLists.txt), so that one binary measures both kinds of
// disabled site: `disabled` (static key, a 5-byte NOP) and `disabled_flag` (cmpl + jne).
#ifndef HUSH_NO_STATIC_KEYS
#error "insn_driver_flag.cc must be compiled with HUSH_NO_STATIC_KEYS"
#endif
#include <cstdint>

#include "hush_tracepoints.h"

#define HUSHBENCH_LOOP_BARRIER(i) asm volatile("" : "+r"(i) : : "memory")

extern "C" [[gnu::noinline]] void bench_loop_disabled_flag(std::int32_t n) {
  for (std::int32_t i = 0; i < n; ++i) {
    HUSH_TRACE(hushbench_off, disabled, i, i);
    HUSHBENCH_LOOP_BARRIER(i);
  }
}
