// hushtrace: static tracepoints you can leave on in production.
//
//   #include <hushtrace/hushtrace.h>
//
//   HUSH_TRACEPOINT(net, recv, (int32_t, fd), (uint64_t, bytes), (std::string_view, peer))
//
//   void OnRecv(int fd, uint64_t n, std::string_view peer) {
//     HUSH_TRACE(net, recv, fd, n, peer);        // disabled: one 5-byte NOP (x86-64)
//     HUSH_SPAN(net, handle);                    // begin now, end at scope exit
//     HUSH_COUNTER(net, queue_depth, depth);     // a numeric track
//     HUSH_INSTANT(net, accepted);               // a point in time
//   }
//
// Define each tracepoint once per translation unit that emits it (a header is the usual place),
// at namespace scope outside any namespace. While an event is disabled its arguments are not
// evaluated. On x86-64 each site is a patched 5-byte NOP (a "static key", see
// internal/enabled_check.h); define HUSH_NO_STATIC_KEYS for load-and-branch sites instead, where
// code must not be patched. Field types: fixed-width integers, bool, float, double, enums
// (recorded as their underlying integer), const char* / std::string_view / std::string (copied,
// at most hush::kMaxStringBytes bytes with a visible "...[truncated]" marker when cut) and
// std::span<const std::byte> (at most hush::kMaxBytesLength bytes). Up to 16 fields.
//
// Sessions are started by the environment (HUSHTRACE_EVENTS, see README), by `hushtrace record`,
// or programmatically with hush::Session (hushtrace/session.h).
#ifndef HUSHTRACE_HUSHTRACE_H_
#define HUSHTRACE_HUSHTRACE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "hushtrace/internal/descriptor.h"
#include "hushtrace/internal/emit.h"
#include "hushtrace/internal/enabled_check.h"
#include "hushtrace/internal/preprocessor.h"

namespace hush::internal {

template <std::size_t N>
constexpr TracepointSpec<N> MakeSpec(EventKind kind, std::uint32_t line,
                                     std::array<std::string_view, N> strings) {
  return {kind, line, strings};
}

// Adapts a captureless lambda returning a TracepointSpec to the Spec interface (static Get()).
template <typename Lambda>
struct LambdaSpec {
  static constexpr auto Get() { return Lambda{}(); }
};

template <typename Spec, typename Fields, typename... Args>
inline void EmitIfEnabled(const Args&... args) {
  if (IsEnabled<site_descriptor<Spec>>()) [[unlikely]] {
    EmitIfStillEnabled<Fields>(site_descriptor<Spec>, args...);
  }
}

// HUSH_SPAN's guard. The end is emitted only if the begin was, and only while still enabled.
template <typename Spec>
class ScopedSpan {
 public:
  ScopedSpan() {
    HUSH_INTERNAL_REGISTER_DESCRIPTOR(site_descriptor<Spec>);
    if (IsEnabled<site_descriptor<Spec>>()) [[unlikely]] {
      const std::uint32_t state = site_descriptor<Spec>.state.load(std::memory_order_relaxed);
      if (state != 0) {
        began_ = true;
        Emit<FieldList<SpanPhase>>(state - 1, SpanPhase{0});
      }
    }
  }
  ~ScopedSpan() {
    if (began_) [[unlikely]] {
      EmitIfEnabled<Spec, FieldList<SpanPhase>>(SpanPhase{1});
    }
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  bool began_ = false;
};

}  // namespace hush::internal

#define HUSH_INTERNAL_TP_TYPE(provider, name) hush_tp_##provider##_##name
#define HUSH_INTERNAL_FIELD_STRINGS(pair)                                           \
  std::string_view(HUSH_INTERNAL_FIELD_NAME(pair)),                                \
      ::hush::internal::FieldTraits<HUSH_INTERNAL_FIELD_TYPE(pair)>::kCode

// Defines the event `provider:name` with typed fields `(type, field)`.
#define HUSH_TRACEPOINT(provider, name, ...)                                                     \
  struct HUSH_INTERNAL_TP_TYPE(provider, name) {                                                 \
    using Fields = ::hush::internal::FieldList<HUSH_INTERNAL_FOR_EACH(                           \
        HUSH_INTERNAL_FIELD_TYPE, HUSH_INTERNAL_COMMA __VA_OPT__(, ) __VA_ARGS__)>;              \
    static constexpr auto Get() {                                                                \
      return ::hush::internal::MakeSpec(                                                         \
          ::hush::internal::EventKind::kEvent, __LINE__,                                         \
          std::array{std::string_view(#provider), std::string_view(#name),                       \
                     std::string_view(__FILE__) __VA_OPT__(, ) HUSH_INTERNAL_FOR_EACH(           \
                         HUSH_INTERNAL_FIELD_STRINGS, HUSH_INTERNAL_COMMA __VA_OPT__(, ) __VA_ARGS__)}); \
    }                                                                                            \
  };

// Emits `provider:name` if enabled; the arguments are evaluated only then.
#define HUSH_TRACE(provider, name, ...)                                                        \
  do {                                                                                         \
    using HushInternalSpec = HUSH_INTERNAL_TP_TYPE(provider, name);                            \
    HUSH_INTERNAL_REGISTER_DESCRIPTOR(::hush::internal::site_descriptor<HushInternalSpec>);    \
    if (::hush::internal::IsEnabled<::hush::internal::site_descriptor<HushInternalSpec>>())    \
        [[unlikely]] {                                                                         \
      ::hush::internal::EmitIfStillEnabled<HushInternalSpec::Fields>(                          \
          ::hush::internal::site_descriptor<HushInternalSpec> __VA_OPT__(, ) __VA_ARGS__);      \
    }                                                                                          \
  } while (0)

#define HUSH_INTERNAL_SITE_SPEC(kind, provider, name, ...)                           \
  ::hush::internal::LambdaSpec<decltype([] {                                        \
    return ::hush::internal::MakeSpec(                                              \
        ::hush::internal::EventKind::kind, __LINE__,                                \
        std::array{std::string_view(#provider), std::string_view(#name),            \
                   std::string_view(__FILE__) __VA_OPT__(, ) __VA_ARGS__});          \
  })>

// Opens a slice `provider:name` now and closes it at the end of the enclosing scope.
#define HUSH_SPAN(provider, name)                                                              \
  ::hush::internal::ScopedSpan<HUSH_INTERNAL_SITE_SPEC(kSpan, provider, name,                  \
                                                       std::string_view("phase"),              \
                                                       std::string_view("phase"))>             \
      HUSH_INTERNAL_CAT(hush_internal_span_, __LINE__)

// A point event `provider:name` with no fields.
#define HUSH_INSTANT(provider, name)                                                       \
  do {                                                                                     \
    using HushInternalSpec = HUSH_INTERNAL_SITE_SPEC(kInstant, provider, name);           \
    HUSH_INTERNAL_REGISTER_DESCRIPTOR(::hush::internal::site_descriptor<HushInternalSpec>); \
    ::hush::internal::EmitIfEnabled<HushInternalSpec, ::hush::internal::FieldList<>>();    \
  } while (0)

// A sample `value` (recorded as double) of the counter track `provider:name`.
#define HUSH_COUNTER(provider, name, value)                                                 \
  do {                                                                                      \
    using HushInternalSpec = HUSH_INTERNAL_SITE_SPEC(kCounter, provider, name,              \
                                                     std::string_view("value"),             \
                                                     std::string_view("f64"));              \
    HUSH_INTERNAL_REGISTER_DESCRIPTOR(::hush::internal::site_descriptor<HushInternalSpec>); \
    if (::hush::internal::IsEnabled<::hush::internal::site_descriptor<HushInternalSpec>>()) \
        [[unlikely]] {                                                                      \
      ::hush::internal::EmitIfStillEnabled<::hush::internal::FieldList<double>>(            \
          ::hush::internal::site_descriptor<HushInternalSpec>, (value));                    \
    }                                                                                       \
  } while (0)

#endif  // HUSHTRACE_HUSHTRACE_H_
