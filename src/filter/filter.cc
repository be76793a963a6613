// The parser, Caret and GlobMatch (filter.h).
#include "filter/filter.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

namespace hush::filter {
namespace {

bool IsWordStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// What the parser knows of a value's type without the event: the checks that hold for every
// event are made here, the others by the binder.
enum class Static : std::uint8_t { kNumber, kString, kWord };

struct Value {
  Static type = Static::kNumber;
  bool leaf = false;        // one operand, no operator (parentheses around it do not count)
  bool grouped = false;     // written in parentheses
  std::uint32_t column = 1;
};

class Parser {
 public:
  explicit Parser(const std::string& text, Parsed* out) : s_(text), out_(out) {}

  bool Run(Error* error) {
    Value v;
    bool ok = Or(&v) && Condition(v);
    Skip();
    if (ok && pos_ != s_.size()) ok = Fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    if (!ok) *error = error_;
    return ok;
  }

 private:
  void Skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool FailAt(std::size_t column, const std::string& what) {
    if (error_.what.empty()) error_ = {column, what};
    return false;
  }
  bool Fail(const std::string& what) { return FailAt(pos_ + 1, what); }
  bool Eat(std::string_view tok) {
    Skip();
    if (s_.compare(pos_, tok.size(), tok) != 0) return false;
    pos_ += tok.size();
    return true;
  }
  std::uint32_t Column() const { return static_cast<std::uint32_t>(pos_ + 1); }
  bool Emit(Node node, int depth_change) {
    depth_ += depth_change;
    if (depth_ > kMaxStack) return Fail("expression nested too deeply");
    out_->max_depth = std::max(out_->max_depth, depth_);
    out_->code.push_back(std::move(node));
    return true;
  }
  bool Term(std::uint32_t column) {
    if (++terms_ > kMaxComparisons) {
      return FailAt(column, "more than " + std::to_string(kMaxComparisons) + " comparisons");
    }
    return true;
  }
  // A value used as a condition: an operand of '!', '&&', '||', or the whole filter.
  bool Condition(const Value& v) {
    if (v.type == Static::kString) {
      return FailAt(v.column, "a string is not a condition (compare it: == != < <= > >= ~)");
    }
    return true;
  }

  // operand (TOKEN operand)*: '||' over And(), '&&' over Unary(), both operands conditions.
  bool Chain(Value* v, std::string_view token, NodeKind kind, bool (Parser::*operand)(Value*)) {
    if (!(this->*operand)(v)) return false;
    while (Skip(), s_.compare(pos_, token.size(), token) == 0) {
      const std::uint32_t column = Column();
      pos_ += token.size();
      Value b;
      if (!Condition(*v) || !(this->*operand)(&b) || !Condition(b)) return false;
      if (!Emit({kind, Cmp::kEq, column, 0, std::string(token)}, -1)) return false;
      *v = {Static::kNumber, false, false, v->column};
    }
    return true;
  }
  bool Or(Value* v) { return Chain(v, "||", NodeKind::kOr, &Parser::And); }
  bool And(Value* v) { return Chain(v, "&&", NodeKind::kAnd, &Parser::Unary); }
  // '(' and '!' recurse: each level costs a few frames of the parsing thread's stack, which may
  // be a program's thread before main() or the control thread, so the levels are bounded.
  bool Nest() {
    if (++nesting_ > kMaxNesting) {
      return Fail("expression nested too deeply (at most " + std::to_string(kMaxNesting) +
                  " levels of '(' and '!')");
    }
    return true;
  }
  bool Unary(Value* v) {
    Skip();
    if (pos_ < s_.size() && s_[pos_] == '!' && (pos_ + 1 >= s_.size() || s_[pos_ + 1] != '=')) {
      const std::uint32_t column = Column();
      if (!Nest()) return false;
      ++pos_;
      Value a;
      if (!Unary(&a) || !Condition(a)) return false;
      --nesting_;
      *v = {Static::kNumber, false, false, column};
      return Emit({NodeKind::kNot, Cmp::kEq, column, 0, "!"}, 0);
    }
    return Compare(v);
  }
  bool Operator(Cmp* cmp, std::uint32_t* column) {
    static constexpr std::pair<std::string_view, Cmp> kOps[] = {
        {"==", Cmp::kEq}, {"!=", Cmp::kNe}, {"<=", Cmp::kLe}, {">=", Cmp::kGe},
        {"<", Cmp::kLt},  {">", Cmp::kGt},  {"~", Cmp::kGlob}};
    Skip();
    for (const auto& [tok, op] : kOps) {
      if (s_.compare(pos_, tok.size(), tok) != 0) continue;
      *column = Column();
      pos_ += tok.size();
      *cmp = op;
      return true;
    }
    return false;
  }
  bool Compare(Value* v) {
    if (!Operand(v)) return false;
    Cmp cmp;
    std::uint32_t column;
    if (!Operator(&cmp, &column)) {
      // A bare operand is a condition of its own; in parentheses it was counted inside.
      return !v->leaf || v->grouped || Term(v->column);
    }
    if (!Term(column)) return false;
    const Value a = *v;
    Value b;
    if (cmp == Cmp::kGlob) {
      if (a.type == Static::kNumber) return FailAt(column, "'~' matches strings, not numbers");
      if (!Pattern()) return false;
    } else {
      if (!Operand(&b)) return false;
      if ((a.type == Static::kNumber && b.type == Static::kString) ||
          (a.type == Static::kString && b.type == Static::kNumber)) {
        return FailAt(column, "'" + std::string(CmpText(cmp)) + "' between a number and a string");
      }
    }
    *v = {Static::kNumber, false, false, a.column};
    return Emit({NodeKind::kCompare, cmp, column, 0, std::string(CmpText(cmp))}, -1);
  }
  static std::string_view CmpText(Cmp cmp) {
    static constexpr std::string_view kText[] = {"==", "!=", "<", "<=", ">", ">=", "~"};
    return kText[static_cast<int>(cmp)];
  }
  // The right side of '~': a string or a bare word, taken as the pattern.
  bool Pattern() {
    Skip();
    const std::uint32_t column = Column();
    if (pos_ < s_.size() && s_[pos_] == '"') {
      Value ignored;
      return String(&ignored);
    }
    if (pos_ < s_.size() && IsWordStart(s_[pos_])) {
      const std::size_t begin = pos_;
      while (pos_ < s_.size() && IsWordChar(s_[pos_])) ++pos_;
      return Emit({NodeKind::kString, Cmp::kEq, column, 0, s_.substr(begin, pos_ - begin)}, 1);
    }
    return Fail("'~' needs a pattern: a string (\"net:*\") or a bare word");
  }
  bool Operand(Value* v) {
    Skip();
    if (pos_ >= s_.size()) return Fail(std::string(kExpected) + " at the end");
    const char c = s_[pos_];
    const std::uint32_t column = Column();
    if (c == '(') {
      if (!Nest()) return false;
      ++pos_;
      const std::size_t first = out_->code.size();
      if (!Or(v)) return false;
      if (!Eat(")")) return Fail("expected ')'");
      --nesting_;
      v->leaf = out_->code.size() == first + 1 && out_->code[first].kind != NodeKind::kCompare;
      v->grouped = true;
      v->column = column;
      return true;
    }
    *v = {Static::kNumber, true, false, column};
    if (IsDigit(c) || c == '-' || c == '+' || c == '.') return Number();
    if (c == '"') return String(v);
    if (c == '$') return Variable(v);
    if (IsWordStart(c)) {
      const std::size_t begin = pos_;
      while (pos_ < s_.size() && IsWordChar(s_[pos_])) ++pos_;
      std::string word = s_.substr(begin, pos_ - begin);
      if (word == "true" || word == "false") {
        return Emit({NodeKind::kNumber, Cmp::kEq, column, word == "true" ? 1.0L : 0.0L, word}, 1);
      }
      v->type = Static::kWord;
      return Emit({NodeKind::kWord, Cmp::kEq, column, 0, std::move(word)}, 1);
    }
    return Fail(std::string(kExpected) + " instead of '" + std::string(1, c) + "'");
  }
  bool Variable(Value* v) {
    const std::uint32_t column = Column();
    const std::size_t begin = pos_++;
    while (pos_ < s_.size() && IsWordChar(s_[pos_])) ++pos_;
    std::string name = s_.substr(begin, pos_ - begin);
    NodeKind kind;
    if (name == "$name") {
      kind = NodeKind::kName;
      v->type = Static::kString;
    } else if (name == "$thread") {
      kind = NodeKind::kThread;
      v->type = Static::kString;
    } else if (name == "$tid") {
      kind = NodeKind::kTid;
    } else {
      pos_ = begin;
      return Fail("unknown variable '" + name + "' ($name, $tid, $thread)");
    }
    return Emit({kind, Cmp::kEq, column, 0, std::move(name)}, 1);
  }
  bool String(Value* v) {
    const std::size_t begin = pos_;
    std::string text;
    for (++pos_; pos_ < s_.size() && s_[pos_] != '"'; ++pos_) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      text += s_[pos_];
    }
    if (pos_ >= s_.size()) {
      pos_ = begin;
      return Fail("unterminated string");
    }
    ++pos_;
    v->type = Static::kString;
    return Emit({NodeKind::kString, Cmp::kEq, static_cast<std::uint32_t>(begin + 1), 0,
                 std::move(text)},
                1);
  }
  // [+-] then letters, digits, '.', and a sign right after the exponent's 'e' of a decimal.
  bool Number() {
    const std::size_t begin = pos_;
    if (s_[pos_] == '-' || s_[pos_] == '+') ++pos_;
    const bool hex = s_.compare(pos_, 2, "0x") == 0 || s_.compare(pos_, 2, "0X") == 0;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      const bool sign = (c == '-' || c == '+') && !hex && pos_ > begin &&
                        (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E');
      if (!IsWordChar(c) && c != '.' && !sign) break;
      ++pos_;
    }
    const std::string text = s_.substr(begin, pos_ - begin);
    const bool negative = text[0] == '-';
    const std::size_t digits = text[0] == '-' || text[0] == '+' ? 1 : 0;
    std::uint64_t u = 0;
    const char* first = text.data() + digits + (hex ? 2 : 0);
    const char* last = text.data() + text.size();
    const auto r = std::from_chars(first, last, u, hex ? 16 : 10);
    long double value;
    if (first != last && r.ec == std::errc() && r.ptr == last) {
      value = static_cast<long double>(u);  // exact: the 64-bit mantissa holds every u64
      if (negative) value = -value;
    } else {
      char* end = nullptr;
      value = std::strtold(text.c_str(), &end);
      if (end != text.c_str() + text.size() ||
          text.find_first_of("0123456789") == std::string::npos) {
        pos_ = begin;
        return Fail("malformed number '" + text + "'");
      }
    }
    return Emit({NodeKind::kNumber, Cmp::kEq, static_cast<std::uint32_t>(begin + 1), value, text},
                1);
  }

  static constexpr char kExpected[] =
      "expected a number, a string, a field name, $name, $tid, $thread or '('";

  const std::string& s_;
  Parsed* out_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
  std::size_t nesting_ = 0;
  std::size_t terms_ = 0;
  Error error_;
};

// One byte against the set that starts after '[' at pattern[*i]; *i ends after the ']'. False
// when the set has no ']' (the '[' is then an ordinary byte).
bool MatchSet(std::string_view pattern, std::size_t* i, unsigned char c, bool* matched) {
  // Lambdas, not the addresses of <cctype>'s functions: C++20 does not promise those, and each
  // was a symbol the dynamic linker looked up at every traced program's start.
  static constexpr std::pair<std::string_view, int (*)(int)> kClasses[] = {
      {"alnum", [](int b) { return std::isalnum(b); }}, {"alpha", [](int b) { return std::isalpha(b); }},
      {"blank", [](int b) { return std::isblank(b); }}, {"cntrl", [](int b) { return std::iscntrl(b); }},
      {"digit", [](int b) { return std::isdigit(b); }}, {"graph", [](int b) { return std::isgraph(b); }},
      {"lower", [](int b) { return std::islower(b); }}, {"print", [](int b) { return std::isprint(b); }},
      {"punct", [](int b) { return std::ispunct(b); }}, {"space", [](int b) { return std::isspace(b); }},
      {"upper", [](int b) { return std::isupper(b); }}, {"xdigit", [](int b) { return std::isxdigit(b); }}};
  std::size_t p = *i;
  const bool negate = p < pattern.size() && (pattern[p] == '!' || pattern[p] == '^');
  if (negate) ++p;
  bool in = false;
  for (bool first = true; p < pattern.size() && (first || pattern[p] != ']'); first = false) {
    if (pattern[p] == '[' && pattern.substr(p, 2) == "[:") {
      const std::size_t close = pattern.find(":]", p + 2);
      if (close != std::string_view::npos) {
        const std::string_view name = pattern.substr(p + 2, close - p - 2);
        for (const auto& [cls, test] : kClasses) in = in || (cls == name && test(c) != 0);
        p = close + 2;
        continue;
      }
    }
    unsigned char lo = static_cast<unsigned char>(pattern[p]);
    if (lo == '\\' && p + 1 < pattern.size()) lo = static_cast<unsigned char>(pattern[++p]);
    ++p;
    unsigned char hi = lo;
    if (p + 1 < pattern.size() && pattern[p] == '-' && pattern[p + 1] != ']') {
      hi = static_cast<unsigned char>(pattern[p + 1]);
      if (hi == '\\' && p + 2 < pattern.size()) hi = static_cast<unsigned char>(pattern[++p + 1]);
      p += 2;
    }
    in = in || (c >= lo && c <= hi);
  }
  if (p >= pattern.size()) return false;
  *i = p + 1;
  *matched = in != negate;
  return true;
}

}  // namespace

std::string Error::Message() const { return "column " + std::to_string(column) + ": " + what; }

std::string Describe(const std::string& text, const Error& error) {
  return error.Message() + "\n" + Caret(text, error.column);
}

std::unique_ptr<Parsed> Parse(const std::string& text, Error* error) {
  if (text.size() > kMaxFilterBytes) {
    *error = {kMaxFilterBytes + 1, "filter longer than " + std::to_string(kMaxFilterBytes) + " bytes"};
    return nullptr;
  }
  auto out = std::make_unique<Parsed>();
  out->text = text;
  if (!Parser(text, out.get()).Run(error)) return nullptr;
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

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Greedy with one backtrack point, the last '*': O(pattern * text), no recursion.
  std::size_t p = 0, t = 0;
  std::size_t star = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    bool advanced = false;
    if (p < pattern.size()) {
      const char pc = pattern[p];
      const unsigned char c = static_cast<unsigned char>(text[t]);
      if (pc == '*') {
        star = ++p;
        star_t = t;
        continue;
      }
      if (pc == '?') {
        ++p, ++t;
        continue;
      }
      std::size_t next = p + 1;
      bool matched = false;
      if (pc == '[' && MatchSet(pattern, &next, c, &matched)) {
        if (matched) p = next, ++t, advanced = true;
      } else {
        char literal = pc;
        next = p + 1;
        if (pc == '\\' && p + 1 < pattern.size()) literal = pattern[p + 1], next = p + 2;
        if (literal == text[t]) p = next, ++t, advanced = true;
      }
    }
    if (advanced) continue;
    if (star == std::string_view::npos) return false;
    p = star;
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace hush::filter
