// Typed emission: checks each argument against its declared field type at compile time, sizes
// the payload (a constant for fixed-size fields) and encodes it into the reserved space.
#ifndef HUSHTRACE_INTERNAL_EMIT_H_
#define HUSHTRACE_INTERNAL_EMIT_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hushtrace/internal/descriptor.h"
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

// Everything the fast path does not handle: first event of a thread, full packet, extended
// header, nested event, slow clock. Out of line so that the inline path saves no registers.
// Scalars travel by value (a reference would force the caller to spill them to the stack).
template <typename T>
using PassArg = std::conditional_t<std::is_scalar_v<T>, T, const T&>;

template <typename... Fields>
struct SlowEmitter {
  // Called inside the event (nesting already raised from `previous`).
  template <typename... Args>
  [[gnu::cold, gnu::noinline]] static void Run(std::uint32_t previous, std::uint32_t id,
                                               std::uint64_t ts, Args... args) {
    ThreadWriter& w = tls_writer;
    const std::size_t payload = (std::size_t{0} + ... + FieldTraits<Fields>::Size(args));
    if (char* p = ReserveSlow(w, id, ts, payload)) {
      char* const start = p;
      ((p = FieldTraits<Fields>::Write(p, args)), ...);
      CommitSlow(w, id, start, p);
    }
    LeaveEvent(w, previous);
  }
};

// The event's id is `id`, or with `state` the site's state word less one, loaded inside the event
// (nesting raised), so that a
// session that disables the event and waits for the events in flight (writers.h: membarrier,
// then each thread's nesting) either sees this thread inside its event or is seen by its id
// load. Loaded before, the id of a stopped session could reach the next session's ring under
// another event's name (tests/soak: a soak:seq payload read back as soak:tick).
template <typename... Fields, typename... Args, std::size_t... I>
inline void EmitEvent(FieldList<Fields...>, std::index_sequence<I...>,
                      const std::atomic<std::uint32_t>* state, std::uint32_t id, const Args&... args) {
  static_assert(sizeof...(Fields) == sizeof...(Args),
                "hushtrace: HUSH_TRACE has a different number of arguments than its "
                "HUSH_TRACEPOINT has fields");
  static_assert((CheckArgument<Fields, Args, I>() && ...));
  const std::size_t payload = (std::size_t{0} + ... + FieldTraits<Fields>::Size(args));
  ThreadWriter& w = tls_writer;
  if (!EnterOuterEvent(w)) [[unlikely]] {
    DropNestedEvent(state != nullptr ? state->load(std::memory_order_relaxed) - 1 : id);
    return;
  }
  if (state != nullptr) id = state->load(std::memory_order_relaxed) - 1;
  // After the guard: a signal handler's event either completes before this read or is refused
  // as nested, so timestamps never go backwards within a stream.
  const std::uint64_t ts = ReadCycleCounter();
  CommitWord* commit;
  if (char* p = TryReserveFast(w, id, ts, payload, &commit)) [[likely]] {
    char* const start = p - kCompactHeaderSize;
    ((p = FieldTraits<Fields>::Write(p, args)), ...);
    CommitEvent(w, commit, start, p, ts);
    LeaveEvent(w, 0);
    return;
  }
  SlowEmitter<Fields...>::template Run<PassArg<Args>...>(0, id, ts, args...);
}

// Entry point used by the macros, after the enabled check.
template <typename Fields, typename... Args>
inline void Emit(std::uint32_t id, const Args&... args) {
  EmitEvent(Fields{}, std::index_sequence_for<Args...>{}, nullptr, id, args...);
}

// Called when the caller saw `d` enabled. Re-reads the state so that the caller's check can be a
// compare against memory (two instructions when disabled). An event disabled in between has the
// id kDisabledId, which the fast path's id test sends to the slow path, which drops it: no test
// of its own here.
template <typename Fields, typename... Args>
inline void EmitIfStillEnabled(const Descriptor& d, const Args&... args) {
  EmitEvent(Fields{}, std::index_sequence_for<Args...>{}, &d.state, 0, args...);
}

}  // namespace hush::internal

#endif  // HUSHTRACE_INTERNAL_EMIT_H_
