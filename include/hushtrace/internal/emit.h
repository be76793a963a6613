// Typed emission: checks each argument against its declared field type at compile time, sizes
// the payload (a constant for fixed-size fields) and encodes it into the reserved space.
#ifndef HUSHTRACE_INTERNAL_EMIT_H_
#define HUSHTRACE_INTERNAL_EMIT_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hushtrace/internal/field_traits.h"
#include "hushtrace/internal/thread_writer.h"

namespace hush::internal {

template <typename Field, typename Arg, std::size_t Index>
constexpr bool CheckArgument() {
  using A = std::remove_cvref_t<Arg>;
  static_assert(FieldTraits<Field>::template Accepts<A>,
                "hushtrace: an argument of HUSH_TRACE does not match the type of its field in "
                "HUSH_TRACEPOINT (the 'required from' lines above name the field's type as "
                "'Field' and the argument's as 'Arg'; Index is the argument's position, from 0)");
  return true;
}

template <typename... Fields>
struct FieldList {
  static constexpr std::size_t kCount = sizeof...(Fields);
};

template <typename... Fields, typename... Args, std::size_t... I>
inline void EmitEvent(FieldList<Fields...>, std::index_sequence<I...>, std::uint32_t id,
                      const Args&... args) {
  static_assert(sizeof...(Fields) == sizeof...(Args),
                "hushtrace: HUSH_TRACE has a different number of arguments than its "
                "HUSH_TRACEPOINT has fields");
  static_assert((CheckArgument<Fields, Args, I>() && ...));
  const std::size_t payload = (std::size_t{0} + ... + FieldTraits<Fields>::Size(args));
  const std::uint64_t ts = ReadCycleCounter();
  ThreadWriter& w = tls_writer;
  ++w.nesting;
  SignalFence();
  if (char* p = Reserve(w, id, ts, payload)) [[likely]] {
    ((p = FieldTraits<Fields>::Write(p, args)), ...);
    Commit(w, p);
  }
  SignalFence();
  --w.nesting;
}

// Entry point used by the macros.
template <typename Fields, typename... Args>
inline void Emit(std::uint32_t id, const Args&... args) {
  EmitEvent(Fields{}, std::index_sequence_for<Args...>{}, id, args...);
}

}  // namespace hush::internal

#endif  // HUSHTRACE_INTERNAL_EMIT_H_
