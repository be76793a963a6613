// Field filters: `bytes > 1000 && fd != 3`, evaluated on an event's payload in the emitting thread.
//
//   expr    := and ('||' and)*
//   and     := unary ('&&' unary)*
//   unary   := '!' unary | compare
//   compare := operand (('=='|'!='|'<'|'<='|'>'|'>=') operand)?
//   operand := number | field | 'true' | 'false' | '(' expr ')'      (number: [-]digits[.digits])
//
// A bare field is true when it is not 0. Fields are the event's numeric fields (integers, enums,
// bool, f32, f64); comparisons are exact for every 64-bit integer (values are long double, whose
// 64-bit mantissa holds them).
//
// Limits (the text comes from the environment, the command line and the control socket, and is
// parsed on the program's own threads): at most kMaxFilterBytes bytes and kMaxNesting levels of
// '(' and '!' (the parser recurses once per level), at most 64 values on the evaluation stack.
//
// Parse() checks the syntax once (a message with the column otherwise); Bind() resolves the field
// names against one event's layout into a Program: a flat postfix bytecode over a fixed stack.
// Program::Matches() decodes the fields it needs from the payload bytes (the encoding of
// docs/format.md: packed little-endian, strings NUL-terminated, byte sequences after a u32
// length) and runs the bytecode. It allocates nothing and takes no lock.
#ifndef HUSHTRACE_SRC_FILTER_FILTER_H_
#define HUSHTRACE_SRC_FILTER_FILTER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hush::filter {

enum class Op : std::uint8_t { kField, kConst, kEq, kNe, kLt, kLe, kGt, kGe, kAnd, kOr, kNot };

struct Instr {
  Op op;
  std::uint32_t field = 0;  // kField: index in the event's fields; else unused
  long double value = 0;    // kConst
  std::string name;         // kField, before Bind()
};

inline constexpr std::size_t kMaxFilterBytes = 4096;
inline constexpr std::size_t kMaxNesting = 64;

// The syntax tree flattened to postfix order, with field names unresolved.
struct Parsed {
  std::string text;
  std::vector<Instr> code;
  std::size_t max_depth = 0;
  std::vector<std::string> fields;  // distinct field names used
};

// nullptr and *error = "column N: what was expected" (1-based) on a syntax error.
std::unique_ptr<Parsed> Parse(const std::string& text, std::string* error);
// "  TEXT\n  ^" pointing at column `column` (1-based) of `text`, for messages; a long TEXT is cut
// to a window around the column ("..." on the cut sides).
std::string Caret(const std::string& text, std::size_t column);

class Program {
 public:
  // `types[i]` is the type code of field i (registry::FieldInfo::type). Fails (nullptr, *error)
  // if a name is not a numeric field of the layout.
  static std::unique_ptr<Program> Bind(const Parsed& parsed, const std::vector<std::string>& names,
                                       const std::vector<std::string>& types, std::string* error);
  // The payload [data, data + size) of one event of that layout; false also for a payload that
  // does not decode (never from a well-formed event).
  bool Matches(const char* data, std::size_t size) const;

 private:
  enum class Type : std::uint8_t { kI8, kI16, kI32, kI64, kU8, kU16, kU32, kU64, kF32, kF64, kStr, kBytes };
  std::vector<Instr> code_;
  std::vector<Type> types_;     // every field up to the last one used
  std::vector<bool> needed_;    // per field of types_
  std::size_t max_depth_ = 0;
};

}  // namespace hush::filter

#endif  // HUSHTRACE_SRC_FILTER_FILTER_H_
