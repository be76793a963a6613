// The one tracepoint of the comparison workloads (bench/compare/workloads.cc), built three ways
// from the same source (bench/compare/CMakeLists.txt):
//   HUSHCMP_TRACER 0  cmp_plain   CMP_EVENT() compiles to nothing: the untraced baseline;
//   HUSHCMP_TRACER 1  cmp_hush    hushbench:two_int through HUSH_TRACE (off unless
//   HUSHTRACE_EVENTS); HUSHCMP_TRACER 2  cmp_lttng   hushbench:two_int through lttng_ust_tracepoint
//   (off unless an
//                                 LTTng session enables it).
// Both tracers record the same event: two int32 fields.
#ifndef HUSHTRACE_BENCH_COMPARE_TRACER_H_
#define HUSHTRACE_BENCH_COMPARE_TRACER_H_

#include <cstdint>

#if HUSHCMP_TRACER == 1
#include "hush_tracepoints.h"
#define CMP_EVENT(a, b) \
  HUSH_TRACE(hushbench, two_int, static_cast<std::int32_t>(a), static_cast<std::int32_t>(b))
inline constexpr const char* kCmpTracer = "hushtrace";
#elif HUSHCMP_TRACER == 2
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"
#define CMP_EVENT(a, b)                                                  \
  lttng_ust_tracepoint(hushbench, two_int, static_cast<std::int32_t>(a), \
                       static_cast<std::int32_t>(b))
inline constexpr const char* kCmpTracer = "lttng-ust";
#else
#define CMP_EVENT(a, b) static_cast<void>(0)
inline constexpr const char* kCmpTracer = "none";
#endif

#endif  // HUSHTRACE_BENCH_COMPARE_TRACER_H_
