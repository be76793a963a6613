/* Every macro of hushtrace_c.h, compiled by the capi_usage_* tests as ISO C11/C17 with -pedantic
 * and as C++20, all warnings as errors. Not linked. (A tracepoint without fields is left out:
 * ISO C before C23 warns about an empty "...", see the header.) */
#include <hushtrace/hushtrace_c.h>

HUSH_C_TRACEPOINT(strict, all, HUSH_C_I8(a), HUSH_C_I16(b), HUSH_C_I32(c), HUSH_C_I64(d),
                  HUSH_C_U8(e), HUSH_C_U16(f), HUSH_C_U32(g), HUSH_C_U64(h), HUSH_C_BOOL(i),
                  HUSH_C_F32(j), HUSH_C_F64(k), HUSH_C_STR(l), HUSH_C_BYTES(m))
HUSH_C_TRACEPOINT(strict, fixed_only, HUSH_C_I32(x), HUSH_C_U64(y))
HUSH_C_TRACEPOINT(strict, declared_not_used, HUSH_C_STR(s))

int strict_use(int v, const char* s, const void* p, size_t n);
int strict_use(int v, const char* s, const void* p, size_t n) {
  HUSH_C_TRACE(strict, all, 1, 2, 3, 4, 5, 6, 7, 8, v > 0, 1.5f, 2.5, s, p, n);
  HUSH_C_TRACE(strict, fixed_only, v, 9u);
  HUSH_C_SPAN_BEGIN(strict, span);
  HUSH_C_INSTANT(strict, instant);
  HUSH_C_COUNTER(strict, counter, v * 2);
  HUSH_C_SPAN_END(strict, span);
  {
    HUSH_C_SPAN_SCOPE(strict, scoped);
    HUSH_C_INSTANT(strict, inner);
  }
  return HUSH_C_ENABLED(strict, all) ? 1 : 0;
}
