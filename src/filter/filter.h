// The filter language of hushtrace: one grammar, one parser, one error style, for every filter
// the tools take (docs/cli.md, "Filters"):
//   - the runtime filter (`record --filter`, `start --filter`, HUSHTRACE_FILTER,
//     SessionOptions::filter, the `[...]` of a snapshot trigger): program.h compiles it to a
//     bytecode that runs on the emitting thread over the payload bytes;
//   - the read-side filter (`hushtrace dump --filter`): tools/hushtrace/filter_expr.h runs it on
//     reader::Event.
// Both back ends bind the same syntax tree through the same binder (bind.h) and run the same
// evaluator, so one text means one thing wherever it is given.
//
//   expr     := and ('||' and)*
//   and      := unary ('&&' unary)*
//   unary    := '!' unary | compare                 ('!' followed by '=' is the operator '!=')
//   compare  := operand (OP operand)?               OP: == != < <= > >= ~
//   operand  := number | string | word | 'true' | 'false' | '$name' | '$tid' | '$thread'
//             | '(' expr ')'
//   number   := [+-]? (decimal integer | 0x hex integer | decimal with '.' or exponent: 1.5, 1e6)
//   string   := '"' characters '"'                  ('\' takes the next character as it is)
//   word     := [A-Za-z_][A-Za-z0-9_]*
//
// Blanks separate tokens anywhere. `&&` binds tighter than `||`; a comparison has at most one
// operator (`a < b < c` is an error).
//
// Values. A number is exact for every 64-bit integer (values are long double, whose 64-bit
// mantissa holds them; a float field compares as itself, not rounded): `bytes == 18446744073709551615`
// and `x == 7.0` hold when they should. `true` and `false` are the numbers 1 and 0. `$tid` is the
// thread id (a number); `$name` is the event's "provider:name" and `$thread` its thread's name
// (strings). A field is a number (integers, floats), a string (str), bytes (never comparable), or
// labelled (bool: labels "false", "true"; enums such as a span's phase: "begin", "end"): a
// labelled field is its number, and its label when compared with a string.
//
// How a bare word resolves, for the event the filter is bound to:
//   1. `true` and `false` are the numbers, never fields.
//   2. A word that names one of the event's fields is that field (`a < b` compares two fields).
//   3. Otherwise, when the other side of its comparison is a string (a string field, a string,
//      `$name`, `$thread`) or a labelled field, the word is that string: `phase == end`,
//      `comm == bash` (an enum label, or an unquoted string).
//   4. Otherwise it names a field the event does not have (below).
//   The right side of `~` is always the pattern itself: a string, or a bare word taken as it is.
//
// Comparisons. Numbers with numbers compare numerically; strings with strings bytewise (`<` is
// memcmp order); `~` matches a glob (GlobMatch: `*`, `?`, `[set]`, `[!set]`, `[a-z]`, `\`) on a
// string or a label. A comparison of a number with a string is refused when the parser sees it
// (`$tid == "x"`, `(a < b) == "x"`); a string where a condition is expected (`$name && x`,
// `"x"`) too. A bare number or field is a condition: true when not 0 (`bytes && fd`).
//
// Where the back ends differ, they differ only in what the binder is told (bind.h, Layout):
//   - Runtime (program.h): bound per event kind before the program runs. A word naming no field,
//     a field compared with a value of another type, a bytes field, `$tid` and `$thread` (unknown
//     when the payload is read) are errors ("column N: ..."). An event of a kind the filter does
//     not bind to is not recorded; a filter that binds to none is refused.
//   - Reader (dump): any event may come by. A comparison that involves a field the event does not
//     have, or a field of another type than its other side, is false (so `!(x == 1)` holds for
//     events without x); so is such a field as a condition.
//
// Limits, the same for every filter (the text comes from the environment, the command line and
// the control socket, and the runtime parses it on the program's own threads): at most
// kMaxFilterBytes bytes; at most kMaxNesting levels of '(' and '!' (the parser recurses once per
// level; siblings do not add up); at most kMaxComparisons comparisons (each comparison operator
// and each operand that stands alone as a condition counts one). They bound the evaluation stack
// to kMaxStack values.
//
// Errors, syntax and binding alike, are "column N: what was expected or is wrong" (N 1-based, in
// bytes), shown with the text and a caret under the column: Describe(text, error).
#ifndef HUSHTRACE_SRC_FILTER_FILTER_H_
#define HUSHTRACE_SRC_FILTER_FILTER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hush::filter {

inline constexpr std::size_t kMaxFilterBytes = 4096;
inline constexpr std::size_t kMaxNesting = 64;
inline constexpr std::size_t kMaxComparisons = 1024;
// Values on the evaluation stack: each level of '(' holds at most three pending values (the left
// sides of '||', '&&' and a comparison), and the innermost operand one more.
inline constexpr std::size_t kMaxStack = 3 * (kMaxNesting + 1) + 1;

// A syntax or binding error: `column` (1-based byte position in the text) and what is wrong.
struct Error {
  std::size_t column = 1;
  std::string what;
  // "column N: what".
  std::string Message() const;
};

// "column N: what\n" followed by Caret(text, N): the one way every filter error is shown.
std::string Describe(const std::string& text, const Error& error);

// "  TEXT\n  ^" pointing at column `column` (1-based) of `text`; a long TEXT is cut to a window
// around the column ("..." on the cut sides).
std::string Caret(const std::string& text, std::size_t column);

// fnmatch(pattern, text, 0) in the C locale, byte by byte: `*` any run of bytes, `?` one byte,
// `[set]` / `[!set]` / `[^set]` one byte in (not in) the set of single bytes, ranges `a-z` and
// classes `[:alpha:]` (alnum alpha blank cntrl digit graph lower print punct space upper
// xdigit), `\c` the byte c. A malformed set (no closing ']') matches '[' itself. Allocates
// nothing, recurses nowhere: safe on the emitting thread, in any locale.
bool GlobMatch(std::string_view pattern, std::string_view text);

enum class Cmp : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kGlob };

// The syntax tree, flattened to postfix order: a node's operands come right before it.
enum class NodeKind : std::uint8_t {
  kNumber,   // number; `true` and `false` (1, 0)
  kString,   // text (escapes resolved); also the bare word after '~'
  kWord,     // text: a field name, or a string (see "How a bare word resolves")
  kName,     // $name
  kTid,      // $tid
  kThread,   // $thread
  kCompare,  // cmp, over the two values before it
  kNot,
  kAnd,
  kOr,
};

struct Node {
  NodeKind kind = NodeKind::kNumber;
  Cmp cmp = Cmp::kEq;       // kCompare
  std::uint32_t column = 1;  // of the token (operators: of the operator), 1-based
  long double number = 0;   // kNumber
  std::string text;         // kString, kWord; the source token of the others
};

struct Parsed {
  std::string text;
  std::vector<Node> code;     // postfix
  std::size_t max_depth = 0;  // values on the evaluation stack at most (<= kMaxStack)
};

// The syntax tree of `text`; nullptr and *error on a syntax error or a broken limit. Never
// recurses deeper than kMaxNesting levels, whatever the text.
std::unique_ptr<Parsed> Parse(const std::string& text, Error* error);

}  // namespace hush::filter

#endif  // HUSHTRACE_SRC_FILTER_FILTER_H_
