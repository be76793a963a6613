// Preprocessor helpers for HUSH_TRACEPOINT: iterate over the `(type, name)` field pairs.
// Supports up to 16 fields per tracepoint. Private to hushtrace (HUSH_INTERNAL_ prefix).
#ifndef HUSHTRACE_INTERNAL_PREPROCESSOR_H_
#define HUSHTRACE_INTERNAL_PREPROCESSOR_H_

#define HUSH_INTERNAL_CAT_(a, b) a##b
#define HUSH_INTERNAL_CAT(a, b) HUSH_INTERNAL_CAT_(a, b)
#define HUSH_INTERNAL_STR_(x) #x
#define HUSH_INTERNAL_STR(x) HUSH_INTERNAL_STR_(x)

#define HUSH_INTERNAL_NARGS(...) \
  HUSH_INTERNAL_NARGS_(__VA_OPT__(__VA_ARGS__, ) 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define HUSH_INTERNAL_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, \
                             N, ...)                                                              \
  N

// HUSH_INTERNAL_FOR_EACH(M, sep, a, b, c) -> M(a) sep() M(b) sep() M(c)
#define HUSH_INTERNAL_FOR_EACH(M, S, ...) \
  HUSH_INTERNAL_CAT(HUSH_INTERNAL_FE_, HUSH_INTERNAL_NARGS(__VA_ARGS__))(M, S __VA_OPT__(, ) __VA_ARGS__)
#define HUSH_INTERNAL_FE_0(M, S)
#define HUSH_INTERNAL_FE_1(M, S, x) M(x)
#define HUSH_INTERNAL_FE_2(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_1(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_3(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_2(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_4(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_3(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_5(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_4(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_6(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_5(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_7(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_6(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_8(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_7(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_9(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_8(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_10(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_9(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_11(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_10(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_12(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_11(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_13(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_12(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_14(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_13(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_15(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_14(M, S, __VA_ARGS__)
#define HUSH_INTERNAL_FE_16(M, S, x, ...) M(x) S() HUSH_INTERNAL_FE_15(M, S, __VA_ARGS__)

#define HUSH_INTERNAL_COMMA() ,
#define HUSH_INTERNAL_NOTHING()

// A field is written `(type, name)`.
#define HUSH_INTERNAL_FIELD_TYPE_(type, name) type
#define HUSH_INTERNAL_FIELD_NAME_(type, name) #name
#define HUSH_INTERNAL_FIELD_TYPE(pair) HUSH_INTERNAL_FIELD_TYPE_ pair
#define HUSH_INTERNAL_FIELD_NAME(pair) HUSH_INTERNAL_FIELD_NAME_ pair

#endif  // HUSHTRACE_INTERNAL_PREPROCESSOR_H_
