// The runtime back end of the filter language (filter.h): a filter bound to one event kind's
// payload layout, evaluated on the emitting thread.
//
//   filter::Error error;
//   auto parsed = filter::Parse(text, &error);                     // once per session
//   auto program = filter::Program::Bind(*parsed, "net:recv", names, types, &error);
//   if (program && program->Matches(payload, size)) ...             // per event
//
// Bind() resolves names with the binder of bind.h in strict mode: every error ("column N: ...",
// Describe() shows it) points at the construct that cannot be evaluated from the payload.
// Matches() finds the fields it needs in the payload bytes (the encoding of docs/format.md:
// packed little-endian, strings NUL-terminated, byte sequences after a u32 length) and runs the
// shared evaluator. It allocates nothing, takes no lock, calls no locale-dependent function,
// and uses a few KiB of the caller's stack.
#ifndef HUSHTRACE_SRC_FILTER_PROGRAM_H_
#define HUSHTRACE_SRC_FILTER_PROGRAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filter/bind.h"
#include "filter/filter.h"

namespace hush::filter {

class Program {
 public:
  // At most this many fields in a layout (a tracepoint has at most 255).
  static constexpr std::size_t kMaxFields = 256;

  // What Bind() refuses whatever the layout ($tid, $thread): the CLI checks this before the
  // program runs. True when nothing is refused; else false and *error.
  static bool Check(const Parsed& parsed, Error* error);
  // `parsed` bound to the event `event_name` ("provider:name") whose field i is named names[i]
  // and has the type code types[i] (registry::FieldInfo::type: i8..u64, bool, phase, f32, f64,
  // str, bytes). nullptr and *error when a name is not one of the event's fields, a field is
  // compared with a value it does not compare with, a field's type is unknown, or the filter
  // uses what the payload does not hold ($tid, $thread).
  static std::unique_ptr<Program> Bind(const Parsed& parsed, std::string_view event_name,
                                       const std::vector<std::string>& names,
                                       const std::vector<std::string>& types, Error* error);
  // The payload [data, data + size) of one event of that layout; false also for a payload that
  // does not decode (never from a well-formed event).
  bool Matches(const char* data, std::size_t size) const;

 private:
  enum class Type : std::uint8_t { kI8, kI16, kI32, kI64, kU8, kU16, kU32, kU64, kF32, kF64, kBool, kPhase, kStr, kBytes };
  struct Span {
    std::uint32_t offset, size;  // strings: without the NUL
  };
  class Source;

  Code code_;
  std::vector<Type> types_;  // every field up to the last one used
  // Offsets of the fields of types_ when none before the last has a variable size; else empty
  // and Matches() walks the payload.
  std::vector<Span> fixed_;
  std::size_t fixed_size_ = 0;  // bytes the fixed layout needs
};

}  // namespace hush::filter

#endif  // HUSHTRACE_SRC_FILTER_PROGRAM_H_
