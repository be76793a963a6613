/* The C side of capi_test's comparisons: the same declarations as the C++ ones in capi_test.cc,
 * compiled as C. */
#include "capi_meta_c.h"

#include <hushtrace/hushtrace_c.h>
#include <stdbool.h>
#include <stdint.h>

HUSH_C_TRACEPOINT(cmp, ev, HUSH_C_I8(a), HUSH_C_I16(b), HUSH_C_I32(c), HUSH_C_I64(d), HUSH_C_U8(e),
                  HUSH_C_U16(f), HUSH_C_U32(g), HUSH_C_U64(h), HUSH_C_BOOL(i), HUSH_C_F32(j),
                  HUSH_C_F64(k), HUSH_C_STR(l), HUSH_C_BYTES(m))
HUSH_C_TRACEPOINT(cmp, empty)

const void* capi_c_record_ev(size_t* size) {
  *size = sizeof hush_c_meta_cmp_ev;
  return &hush_c_meta_cmp_ev;
}

const void* capi_c_record_empty(size_t* size) {
  *size = sizeof hush_c_meta_cmp_empty;
  return &hush_c_meta_cmp_empty;
}

void capi_c_emit_all(void) {
  static const unsigned char kBytes[] = {0xde, 0xad, 0xbe, 0xef};
  HUSH_C_TRACE(cmp, ev, -5, -300, -70000, INT64_C(-5000000000), 250, 65000, UINT32_C(3000000000),
               UINT64_C(10000000000000000000), true, 0.5f, 1.0 / 3.0, "same", kBytes,
               sizeof kBytes);
  HUSH_C_TRACE(cmp, empty);
  HUSH_C_SPAN_BEGIN(cmp, sp);
  HUSH_C_INSTANT(cmp, inst);
  HUSH_C_COUNTER(cmp, ctr, 2.5);
  HUSH_C_SPAN_END(cmp, sp);
}
