// Tracepoints inside an inline function and a function template of a header included by two
// translation units (inline_tp_a.cc, inline_tp_b.cc): must link without duplicate symbols or
// section conflicts, and every copy of every site must emit when enabled.
#ifndef HUSHTRACE_TESTS_RUNTIME_COMPILE_INLINE_TP_H_
#define HUSHTRACE_TESTS_RUNTIME_COMPILE_INLINE_TP_H_

#include <hushtrace/hushtrace.h>

#include <cstdint>

HUSH_TRACEPOINT(inl, inline_fn, (std::int32_t, from))
HUSH_TRACEPOINT(inl, templ, (std::int64_t, value), (std::uint32_t, size))

inline void InlineEmit(std::int32_t from) {
  HUSH_TRACE(inl, inline_fn, from);
  HUSH_INSTANT(inl, inline_instant);
}

template <typename T>
void TemplateEmit(T v) {
  HUSH_SPAN(inl, templ_span);
  HUSH_TRACE(inl, templ, static_cast<std::int64_t>(v), static_cast<std::uint32_t>(sizeof(T)));
  HUSH_COUNTER(inl, templ_counter, static_cast<double>(v));
}

void FromA();
void FromB();

#endif  // HUSHTRACE_TESTS_RUNTIME_COMPILE_INLINE_TP_H_
