// 272 distinct events (many:e<hex><hex>), enough that some get an id >= 255 and therefore the
// extended event header. Used by session_test.cc (ManyEvents*).
#include <hushtrace/hushtrace.h>

#include <cstdint>

#define HUSH_T_TP(R_, C_) HUSH_TRACEPOINT(many, e##R_##C_, (std::uint32_t, v))
#define HUSH_T_ROW(M, ROW_)                                                               \
  M(ROW_, 0)                                                                              \
  M(ROW_, 1)                                                                              \
  M(ROW_, 2) M(ROW_, 3) M(ROW_, 4) M(ROW_, 5) M(ROW_, 6) M(ROW_, 7) M(ROW_, 8) M(ROW_, 9) \
      M(ROW_, a) M(ROW_, b) M(ROW_, c) M(ROW_, d) M(ROW_, e) M(ROW_, f)
#define HUSH_T_ALL(M)                                                                      \
  HUSH_T_ROW(M, 0)                                                                         \
  HUSH_T_ROW(M, 1)                                                                         \
  HUSH_T_ROW(M, 2) HUSH_T_ROW(M, 3) HUSH_T_ROW(M, 4) HUSH_T_ROW(M, 5) HUSH_T_ROW(M, 6)     \
      HUSH_T_ROW(M, 7) HUSH_T_ROW(M, 8) HUSH_T_ROW(M, 9) HUSH_T_ROW(M, a) HUSH_T_ROW(M, b) \
          HUSH_T_ROW(M, c) HUSH_T_ROW(M, d) HUSH_T_ROW(M, e) HUSH_T_ROW(M, f) HUSH_T_ROW(M, g)

HUSH_T_ALL(HUSH_T_TP)

// Emits every many:* event once; event e<a><b> carries 16 * row + column (row g = 16).
int EmitManyEvents() {
  int n = 0;
#define HUSH_T_EMIT(R_, C_)                                                                        \
  {                                                                                                \
    const char name[] = #R_ #C_;                                                                   \
    auto digit = [](char c) -> unsigned {                                                          \
      return c == 'g' ? 16 : (c <= '9' ? c - '0' : c - 'a' + 10);                                  \
    };                                                                                             \
    HUSH_TRACE(many, e##R_##C_, static_cast<std::uint32_t>(digit(name[0]) * 16 + digit(name[1]))); \
    ++n;                                                                                           \
  }
  HUSH_T_ALL(HUSH_T_EMIT)
#undef HUSH_T_EMIT
  return n;
}
