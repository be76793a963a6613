/* Tracepoints of the C API test program (tests/capi/capi_program.c). */
#ifndef HUSHTRACE_TESTS_CAPI_CAPI_TRACEPOINTS_H_
#define HUSHTRACE_TESTS_CAPI_CAPI_TRACEPOINTS_H_

#include <hushtrace/hushtrace_c.h>

HUSH_C_TRACEPOINT(capi, all_types, HUSH_C_I8(i8), HUSH_C_I16(i16), HUSH_C_I32(i32), HUSH_C_I64(i64),
                  HUSH_C_U8(u8), HUSH_C_U16(u16), HUSH_C_U32(u32), HUSH_C_U64(u64),
                  HUSH_C_BOOL(flag), HUSH_C_F32(f32), HUSH_C_F64(f64), HUSH_C_STR(text),
                  HUSH_C_BYTES(blob))
/* Variable fields first, between and last: the emitter splits the fixed runs around them. */
HUSH_C_TRACEPOINT(capi, mixed, HUSH_C_STR(first), HUSH_C_U16(a), HUSH_C_U32(b), HUSH_C_BYTES(data),
                  HUSH_C_BOOL(c), HUSH_C_STR(last))
HUSH_C_TRACEPOINT(capi, fixed, HUSH_C_I32(x), HUSH_C_U64(y))
HUSH_C_TRACEPOINT(capi, text, HUSH_C_U32(seq), HUSH_C_STR(s))
HUSH_C_TRACEPOINT(capi, nofields)
HUSH_C_TRACEPOINT(capi, sixteen, HUSH_C_U8(f1), HUSH_C_U8(f2), HUSH_C_U8(f3), HUSH_C_U8(f4),
                  HUSH_C_U8(f5), HUSH_C_U8(f6), HUSH_C_U8(f7), HUSH_C_U8(f8), HUSH_C_U8(f9),
                  HUSH_C_U8(f10), HUSH_C_U8(f11), HUSH_C_U8(f12), HUSH_C_U8(f13), HUSH_C_U8(f14),
                  HUSH_C_STR(f15), HUSH_C_U8(f16))
HUSH_C_TRACEPOINT(capi, thread, HUSH_C_U32(worker), HUSH_C_U32(i))
/* Never enabled by the tests: its arguments must not be evaluated. */
HUSH_C_TRACEPOINT(off, never, HUSH_C_I32(x), HUSH_C_STR(s))

#endif /* HUSHTRACE_TESTS_CAPI_CAPI_TRACEPOINTS_H_ */
