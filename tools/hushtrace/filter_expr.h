// `hushtrace dump --filter EXPR`: a small boolean expression over an event's fields.
//
//   expr    := or
//   or      := and ( "||" and )*
//   and     := unary ( "&&" unary )*
//   unary   := "!" unary | "(" expr ")" | compare
//   compare := operand OP literal            OP: == != < <= > >= ~ (glob match, strings)
//   operand := FIELD | $name | $tid | $thread      (event name, thread id, thread name)
//   literal := integer (decimal, 0x hex, signed) | decimal/float | "string" (\" \\ escapes)
//              | true | false | bare word (an enum label)
//
// Integers compare exactly (128-bit); a float on either side compares as double; strings
// compare bytewise, `~` matches a glob (fnmatch); enum fields compare their label with a string
// or a bare word, their value with a number; bools with true/false or numbers. A comparison on a
// field the event does not have, or of incompatible types, is false (so `!(x == 1)` holds for
// events without x). Parse errors name the byte offset.
//
// Limits (the parser and the evaluator recurse): at most kMaxFilterExprBytes bytes, 200 levels
// of '(' and '!', kMaxFilterExprComparisons comparisons.
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_FILTER_EXPR_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_FILTER_EXPR_H_

#include <memory>
#include <string>
#include <string_view>

#include "hushtrace/reader.h"

namespace hush::cli {

inline constexpr std::size_t kMaxFilterExprBytes = 64 * 1024;
inline constexpr std::size_t kMaxFilterExprNesting = 200;
inline constexpr std::size_t kMaxFilterExprComparisons = 4096;

class FilterExpr {
 public:
  // nullptr and *error on a syntax error.
  static std::unique_ptr<FilterExpr> Parse(std::string_view text, std::string* error);
  virtual ~FilterExpr() = default;
  virtual bool Matches(const reader::Event& event) const = 0;
};

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_FILTER_EXPR_H_
