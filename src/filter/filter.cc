// Parse, Bind and Matches (filter.h).
#include "filter/filter.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string_view>

namespace hush::filter {
namespace {

constexpr std::size_t kMaxDepth = 64;  // values on the evaluation stack

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  bool Run(Parsed* out, std::string* error) {
    out_ = out;
    bool ok = Or();
    Skip();
    if (ok && pos_ != s_.size()) ok = Fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    if (!ok) *error = error_;
    return ok;
  }

 private:
  void Skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Fail(const std::string& what) {
    if (error_.empty()) error_ = "column " + std::to_string(pos_ + 1) + ": " + what;
    return false;
  }
  bool Eat(std::string_view tok) {
    Skip();
    if (s_.compare(pos_, tok.size(), tok) != 0) return false;
    pos_ += tok.size();
    return true;
  }
  void Emit(Op op, int depth_change) {
    out_->code.push_back({op, 0, 0, {}});
    depth_ += depth_change;
  }
  bool Push() {
    if (++depth_ > kMaxDepth) return Fail("expression nested too deeply");
    if (depth_ > out_->max_depth) out_->max_depth = depth_;
    return true;
  }

  bool Or() {
    if (!And()) return false;
    while (Eat("||")) {
      if (!And()) return false;
      Emit(Op::kOr, -1);
    }
    return true;
  }
  bool And() {
    if (!Unary()) return false;
    while (Eat("&&")) {
      if (!Unary()) return false;
      Emit(Op::kAnd, -1);
    }
    return true;
  }
  // '(' and '!' recurse: each level costs a few frames of the parsing thread's stack, which may
  // be a program's thread before main() or the control thread, so the levels are bounded.
  bool Nest() {
    if (++nesting_ > kMaxNesting) {
      return Fail("expression nested too deeply (at most " + std::to_string(kMaxNesting) +
                  " levels of '(' and '!')");
    }
    return true;
  }
  bool Unary() {
    Skip();
    if (pos_ < s_.size() && s_[pos_] == '!' && (pos_ + 1 >= s_.size() || s_[pos_ + 1] != '=')) {
      if (!Nest()) return false;
      ++pos_;
      if (!Unary()) return false;
      --nesting_;
      Emit(Op::kNot, 0);
      return true;
    }
    return Compare();
  }
  bool Compare() {
    if (!Operand()) return false;
    static constexpr std::pair<std::string_view, Op> kOps[] = {
        {"==", Op::kEq}, {"!=", Op::kNe}, {"<=", Op::kLe}, {">=", Op::kGe}, {"<", Op::kLt}, {">", Op::kGt}};
    for (const auto& [tok, op] : kOps) {
      if (!Eat(tok)) continue;
      if (!Operand()) return false;
      Emit(op, -1);
      return true;
    }
    return true;
  }
  bool Operand() {
    Skip();
    if (pos_ >= s_.size()) return Fail("expected a number, a field name or '(' at the end");
    const char c = s_[pos_];
    if (c == '(') {
      if (!Nest()) return false;
      ++pos_;
      if (!Or()) return false;
      if (!Eat(")")) return Fail("expected ')'");
      --nesting_;
      return true;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.') return Number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t begin = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
      std::string name = s_.substr(begin, pos_ - begin);
      if (!Push()) return false;
      if (name == "true" || name == "false") {
        out_->code.push_back({Op::kConst, 0, name == "true" ? 1.0L : 0.0L, {}});
        return true;
      }
      bool known = false;
      for (const std::string& f : out_->fields) known = known || f == name;
      if (!known) out_->fields.push_back(name);
      out_->code.push_back({Op::kField, 0, 0, std::move(name)});
      return true;
    }
    return Fail("expected a number, a field name or '(' instead of '" + std::string(1, c) + "'");
  }
  bool Number() {
    const std::size_t begin = pos_;
    if (s_[pos_] == '-') ++pos_;
    std::size_t digits = 0;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.')) {
      digits += std::isdigit(static_cast<unsigned char>(s_[pos_])) ? 1 : 0;
      ++pos_;
    }
    const std::string text = s_.substr(begin, pos_ - begin);
    char* end = nullptr;
    const long double v = std::strtold(text.c_str(), &end);
    if (digits == 0 || end != text.c_str() + text.size()) {
      pos_ = begin;
      return Fail("malformed number '" + text + "'");
    }
    if (!Push()) return false;
    out_->code.push_back({Op::kConst, 0, v, {}});
    return true;
  }

  const std::string& s_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
  std::size_t nesting_ = 0;
  Parsed* out_ = nullptr;
  std::string error_;
};

template <typename T>
long double Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<long double>(v);
}

}  // namespace

std::unique_ptr<Parsed> Parse(const std::string& text, std::string* error) {
  if (text.size() > kMaxFilterBytes) {
    *error = "column " + std::to_string(kMaxFilterBytes + 1) + ": filter longer than " +
             std::to_string(kMaxFilterBytes) + " bytes";
    return nullptr;
  }
  auto out = std::make_unique<Parsed>();
  out->text = text;
  Parser p(text);
  if (!p.Run(out.get(), error)) return nullptr;
  if (out->code.empty()) {
    *error = "column 1: empty filter";
    return nullptr;
  }
  return out;
}

std::string Caret(const std::string& text, std::size_t column) {
  // At most kCaretWindow bytes of a long filter, around the column.
  constexpr std::size_t kCaretWindow = 72;
  std::size_t at = column > 0 ? column - 1 : 0;
  if (text.size() <= kCaretWindow) return "  " + text + "\n  " + std::string(at, ' ') + "^";
  const std::size_t begin =
      at > kCaretWindow / 2 ? std::min(at - kCaretWindow / 2, text.size() - kCaretWindow) : 0;
  const std::string prefix = begin > 0 ? "..." : "";
  const std::string suffix = begin + kCaretWindow < text.size() ? "..." : "";
  at = at - begin + prefix.size();
  return "  " + prefix + text.substr(begin, kCaretWindow) + suffix + "\n  " + std::string(at, ' ') +
         "^";
}

std::unique_ptr<Program> Program::Bind(const Parsed& parsed, const std::vector<std::string>& names,
                                       const std::vector<std::string>& types, std::string* error) {
  static const std::pair<std::string_view, Type> kTypes[] = {
      {"i8", Type::kI8},   {"i16", Type::kI16}, {"i32", Type::kI32}, {"i64", Type::kI64},
      {"u8", Type::kU8},   {"u16", Type::kU16}, {"u32", Type::kU32}, {"u64", Type::kU64},
      {"bool", Type::kU8}, {"phase", Type::kU8}, {"f32", Type::kF32}, {"f64", Type::kF64},
      {"str", Type::kStr}, {"bytes", Type::kBytes}};
  auto program = std::unique_ptr<Program>(new Program());
  program->code_ = parsed.code;
  program->max_depth_ = parsed.max_depth;
  for (Instr& in : program->code_) {
    if (in.op != Op::kField) continue;
    std::size_t i = 0;
    while (i < names.size() && names[i] != in.name) ++i;
    if (i == names.size()) {
      *error = "no field '" + in.name + "'";
      return nullptr;
    }
    in.field = static_cast<std::uint32_t>(i);
    if (program->types_.size() <= i) program->types_.resize(i + 1, Type::kStr);
  }
  program->needed_.assign(program->types_.size(), false);
  for (std::size_t i = 0; i < program->types_.size(); ++i) {
    bool found = false;
    for (const auto& [code, type] : kTypes) {
      if (types[i] == code) {
        program->types_[i] = type;
        found = true;
      }
    }
    if (!found) {
      *error = "field '" + names[i] + "' has an unknown type '" + types[i] + "'";
      return nullptr;
    }
  }
  for (const Instr& in : program->code_) {
    if (in.op != Op::kField) continue;
    const Type t = program->types_[in.field];
    if (t == Type::kStr || t == Type::kBytes) {
      *error = "field '" + in.name + "' is not a number (filters compare numeric fields)";
      return nullptr;
    }
    program->needed_[in.field] = true;
  }
  return program;
}

bool Program::Matches(const char* data, std::size_t size) const {
  long double fields[kMaxDepth * 4];  // values of the first fields (the layout has at most 255)
  const std::size_t n = types_.size() < sizeof fields / sizeof fields[0] ? types_.size() : 0;
  if (n != types_.size()) return false;
  std::size_t at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    static constexpr std::uint8_t kSize[] = {1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 0, 0};
    const Type t = types_[i];
    std::size_t len = kSize[static_cast<int>(t)];
    if (t == Type::kStr) {
      const void* nul = std::memchr(data + at, '\0', size - at);
      if (nul == nullptr) return false;
      len = static_cast<std::size_t>(static_cast<const char*>(nul) - (data + at)) + 1;
    } else if (t == Type::kBytes) {
      if (size - at < 4) return false;
      std::uint32_t count;
      std::memcpy(&count, data + at, 4);
      len = 4 + std::size_t{count};
    }
    if (len > size - at) return false;
    if (needed_[i]) {
      switch (t) {
        case Type::kI8: fields[i] = Load<std::int8_t>(data + at); break;
        case Type::kI16: fields[i] = Load<std::int16_t>(data + at); break;
        case Type::kI32: fields[i] = Load<std::int32_t>(data + at); break;
        case Type::kI64: fields[i] = Load<std::int64_t>(data + at); break;
        case Type::kU8: fields[i] = Load<std::uint8_t>(data + at); break;
        case Type::kU16: fields[i] = Load<std::uint16_t>(data + at); break;
        case Type::kU32: fields[i] = Load<std::uint32_t>(data + at); break;
        case Type::kU64: fields[i] = Load<std::uint64_t>(data + at); break;
        case Type::kF32: fields[i] = Load<float>(data + at); break;
        case Type::kF64: fields[i] = Load<double>(data + at); break;
        default: break;
      }
    }
    at += len;
  }
  long double stack[kMaxDepth];
  std::size_t sp = 0;
  for (const Instr& in : code_) {
    switch (in.op) {
      case Op::kField: stack[sp++] = fields[in.field]; break;
      case Op::kConst: stack[sp++] = in.value; break;
      case Op::kNot: stack[sp - 1] = stack[sp - 1] == 0 ? 1 : 0; break;
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
          case Op::kOr: r = a != 0 || b != 0; break;
          default: break;
        }
        stack[sp - 1] = r ? 1 : 0;
      }
    }
  }
  return sp == 1 && stack[0] != 0;
}

}  // namespace hush::filter
