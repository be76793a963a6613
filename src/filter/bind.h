// The binder and the evaluator that both back ends of the filter language share (filter.h).
//
// Bind() resolves a syntax tree against one kind of event (a Layout: its name and fields) into
// Code: a flat postfix program over a stack of long double, where fields are indices and every
// comparison of strings is one instruction naming its two strings. Run() executes Code, reading
// field values from a back end's Source:
//
//   struct Source {
//     long double Number(std::uint32_t field) const;   // a number or labelled field's value
//     // The string a kField / kLabel / kThread reference names; false when it cannot be read
//     // (the event does not decode: Run() then returns false).
//     bool String(const StrRef& ref, std::string_view* out) const;
//     long double Tid() const;                         // $tid (if Layout::thread_values)
//   };
//
// Run() allocates nothing, takes no lock and does not recurse: its stack is kMaxStack values on
// the caller's stack.
#ifndef HUSHTRACE_SRC_FILTER_BIND_H_
#define HUSHTRACE_SRC_FILTER_BIND_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "filter/filter.h"

namespace hush::filter {

// How a field takes part in comparisons (each back end maps its types to one of these).
enum class FieldClass : std::uint8_t {
  kNumber,    // integers, floats
  kLabelled,  // bool, enums: a number, or its label when compared with a string
  kString,    // str
  kBytes,     // never comparable
};

struct LayoutField {
  std::string_view name;
  FieldClass cls = FieldClass::kNumber;
};

struct Layout {
  std::string_view event_name;  // $name
  std::vector<LayoutField> fields;
  // True (the runtime): a word naming no field, a comparison of two types that do not compare
  // and a bytes field are errors. False (the reader): such a comparison, or such a field as a
  // condition, is false.
  bool strict = true;
  // True (the reader): $tid and $thread are values (Source::Tid, StrRef::kThread). False (the
  // runtime): they are errors.
  bool thread_values = false;
};

struct StrRef {
  enum class Kind : std::uint8_t { kConst, kField, kLabel, kThread };
  Kind kind = Kind::kConst;
  std::uint32_t index = 0;  // kConst: in Code::strings; kField, kLabel: the field
};

enum class Op : std::uint8_t {
  kField,   // push field `field`'s number
  kConst,   // push `value`
  kTid,     // push Source::Tid()
  kFalse,   // replace the top with 0 (a comparison that cannot hold, over a computed value)
  kStrCmp,  // push a `cmp` b (strings a, b)
  kGlob,    // push GlobMatch(b, a)
  kNot,
  kAnd,     // pop b, a; push a && b
  kOr,
  kEq,      // pop b, a; push a == b (numbers); kNe..kGe likewise, in the order of Cmp
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
};

// The numeric comparison instruction of `cmp` (not kGlob).
inline Op CompareOp(Cmp cmp) {
  return static_cast<Op>(static_cast<int>(Op::kEq) + static_cast<int>(cmp));
}

struct Instr {
  Op op = Op::kConst;
  Cmp cmp = Cmp::kEq;
  std::uint32_t field = 0;
  StrRef a, b;
  long double value = 0;
};

struct Code {
  std::vector<Instr> code;
  std::vector<std::string> strings;  // StrRef::kConst
};

// `parsed` bound to `layout`; false and *error ("column N: ...", at the construct) when
// something cannot be evaluated under the layout's rules (strict, thread_values). With
// !strict and thread_values it never fails.
bool Bind(const Parsed& parsed, const Layout& layout, Code* out, Error* error);

// a `cmp` b for strings: bytewise (memcmp order); kGlob: GlobMatch(b, a).
bool CompareStrings(Cmp cmp, std::string_view a, std::string_view b);

template <typename Source>
bool Run(const Code& code, const Source& source) {
  long double stack[kMaxStack];
  std::size_t sp = 0;
  const auto text = [&](const StrRef& ref, std::string_view* out) {
    if (ref.kind != StrRef::Kind::kConst) return source.String(ref, out);
    *out = code.strings[ref.index];
    return true;
  };
  for (const Instr& in : code.code) {
    switch (in.op) {
      case Op::kField: stack[sp++] = source.Number(in.field); break;
      case Op::kConst: stack[sp++] = in.value; break;
      case Op::kTid: stack[sp++] = source.Tid(); break;
      case Op::kFalse: stack[sp - 1] = 0; break;
      case Op::kNot: stack[sp - 1] = stack[sp - 1] == 0 ? 1 : 0; break;
      case Op::kStrCmp:
      case Op::kGlob: {
        std::string_view a, b;
        if (!text(in.a, &a) || !text(in.b, &b)) return false;
        stack[sp++] = CompareStrings(in.cmp, a, b) ? 1 : 0;
        break;
      }
      default: {
        const long double b = stack[--sp], a = stack[sp - 1];
        bool r = false;
        switch (in.op) {
          case Op::kEq: r = a == b; break;
          case Op::kNe: r = a != b; break;
          case Op::kLt: r = a < b; break;
          case Op::kLe: r = a <= b; break;
          case Op::kGt: r = a > b; break;
          case Op::kGe: r = a >= b; break;
          case Op::kAnd: r = a != 0 && b != 0; break;
          default: r = a != 0 || b != 0; break;
        }
        stack[sp - 1] = r ? 1 : 0;
      }
    }
  }
  return sp == 1 && stack[0] != 0;
}

}  // namespace hush::filter

#endif  // HUSHTRACE_SRC_FILTER_BIND_H_
