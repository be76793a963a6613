// FilterExpr: recursive-descent parser and evaluator (grammar in filter_expr.h).
#include "filter_expr.h"

#include <fnmatch.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <vector>

namespace hush::cli {
namespace {

using reader::FieldType;

struct Literal {
  enum class Kind { kInt, kFloat, kString, kBool, kWord } kind = Kind::kInt;
  __int128 i = 0;
  double d = 0;
  std::string s;  // kString, kWord
};

enum class Op { kEq, kNe, kLt, kLe, kGt, kGe, kGlob };

template <typename T>
bool Compare(Op op, const T& a, const T& b) {
  switch (op) {
    case Op::kEq:
      return a == b;
    case Op::kNe:
      return a != b;
    case Op::kLt:
      return a < b;
    case Op::kLe:
      return a <= b;
    case Op::kGt:
      return a > b;
    case Op::kGe:
      return a >= b;
    case Op::kGlob:
      return false;
  }
  return false;
}

class CompareExpr final : public FilterExpr {
 public:
  CompareExpr(std::string operand, Op op, Literal lit)
      : operand_(std::move(operand)), op_(op), lit_(std::move(lit)) {}

  bool Matches(const reader::Event& e) const override {
    if (operand_ == "$name") return MatchString(e.name());
    if (operand_ == "$thread") return MatchString(e.thread_name());
    if (operand_ == "$tid") return MatchInteger(e.tid());
    const std::optional<reader::FieldValue> v = e.Find(operand_);
    if (!v) return false;
    switch (v->type()) {
      case FieldType::kString:
        return MatchString(v->AsString());
      case FieldType::kBytes:
        return false;
      case FieldType::kFloat:
        return (lit_.kind == Literal::Kind::kInt || lit_.kind == Literal::Kind::kFloat) &&
               op_ != Op::kGlob && Compare(op_, v->AsDouble(), Number());
      case FieldType::kBool:
        if (lit_.kind == Literal::Kind::kBool)
          return MatchInteger(v->AsUint64() != 0 ? 1 : 0, true);
        return MatchInteger(v->AsUint64());
      case FieldType::kEnum:
        if (lit_.kind == Literal::Kind::kString || lit_.kind == Literal::Kind::kWord) {
          return MatchString(v->info().LabelFor(v->AsInt64()));
        }
        return v->info().is_signed ? MatchInteger(v->AsInt64()) : MatchInteger(v->AsUint64());
      case FieldType::kSigned:
        return MatchInteger(v->AsInt64());
      case FieldType::kUnsigned:
        return MatchInteger(v->AsUint64());
    }
    return false;
  }

 private:
  double Number() const {
    return lit_.kind == Literal::Kind::kFloat ? lit_.d : static_cast<double>(lit_.i);
  }
  bool MatchInteger(__int128 value, bool bool_literal_ok = false) const {
    if (op_ == Op::kGlob) return false;
    if (lit_.kind == Literal::Kind::kInt) return Compare(op_, value, lit_.i);
    if (lit_.kind == Literal::Kind::kFloat) return Compare(op_, static_cast<double>(value), lit_.d);
    if (lit_.kind == Literal::Kind::kBool && bool_literal_ok) return Compare(op_, value, lit_.i);
    return false;
  }
  bool MatchString(std::string_view value) const {
    if (lit_.kind != Literal::Kind::kString && lit_.kind != Literal::Kind::kWord) return false;
    if (op_ == Op::kGlob) return ::fnmatch(lit_.s.c_str(), std::string(value).c_str(), 0) == 0;
    return Compare(op_, value, std::string_view(lit_.s));
  }

  std::string operand_;
  Op op_;
  Literal lit_;
};

class NotExpr final : public FilterExpr {
 public:
  explicit NotExpr(std::unique_ptr<FilterExpr> a) : a_(std::move(a)) {}
  bool Matches(const reader::Event& e) const override { return !a_->Matches(e); }

 private:
  std::unique_ptr<FilterExpr> a_;
};

class BinaryExpr final : public FilterExpr {
 public:
  BinaryExpr(bool is_and, std::unique_ptr<FilterExpr> a, std::unique_ptr<FilterExpr> b)
      : is_and_(is_and), a_(std::move(a)), b_(std::move(b)) {}
  bool Matches(const reader::Event& e) const override {
    return is_and_ ? a_->Matches(e) && b_->Matches(e) : a_->Matches(e) || b_->Matches(e);
  }

 private:
  bool is_and_;
  std::unique_ptr<FilterExpr> a_, b_;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : t_(text) {}

  std::unique_ptr<FilterExpr> ParseAll(std::string* error) {
    if (t_.size() > kMaxFilterExprBytes) {
      *error = "--filter: longer than " + std::to_string(kMaxFilterExprBytes) + " bytes";
      return nullptr;
    }
    std::unique_ptr<FilterExpr> e = Or();
    Skip();
    if (e && pos_ != t_.size()) Fail("unexpected '" + std::string(t_.substr(pos_, 1)) + "'");
    if (!error_.empty()) {
      *error = error_;
      return nullptr;
    }
    return e;
  }

 private:
  void Skip() {
    while (pos_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[pos_]))) ++pos_;
  }
  bool Eat(std::string_view s) {
    Skip();
    if (t_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  std::unique_ptr<FilterExpr> Fail(const std::string& what) {
    if (error_.empty()) error_ = "--filter: " + what + " at byte " + std::to_string(pos_);
    return nullptr;
  }
  std::unique_ptr<FilterExpr> Or() {
    std::unique_ptr<FilterExpr> a = And();
    while (a && Eat("||")) {
      std::unique_ptr<FilterExpr> b = And();
      if (!b) return nullptr;
      a = std::make_unique<BinaryExpr>(false, std::move(a), std::move(b));
    }
    return a;
  }
  std::unique_ptr<FilterExpr> And() {
    std::unique_ptr<FilterExpr> a = Unary();
    while (a && Eat("&&")) {
      std::unique_ptr<FilterExpr> b = Unary();
      if (!b) return nullptr;
      a = std::make_unique<BinaryExpr>(true, std::move(a), std::move(b));
    }
    return a;
  }
  std::unique_ptr<FilterExpr> Unary() {
    if (++depth_ > kMaxFilterExprNesting) {
      return Fail("expression nested too deeply (at most " + std::to_string(kMaxFilterExprNesting) +
                  " levels of '(' and '!')");
    }
    std::unique_ptr<FilterExpr> r;
    if (Eat("!") && !(pos_ < t_.size() && t_[pos_] == '=')) {
      std::unique_ptr<FilterExpr> a = Unary();
      if (a) r = std::make_unique<NotExpr>(std::move(a));
    } else if (Eat("(")) {
      r = Or();
      if (r && !Eat(")")) r = Fail("expected ')'");
    } else {
      r = Comparison();
    }
    --depth_;
    return r;
  }
  std::string Word() {
    Skip();
    const std::size_t start = pos_;
    if (pos_ < t_.size() && t_[pos_] == '$') ++pos_;
    while (pos_ < t_.size() &&
           (std::isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '_'))
      ++pos_;
    return std::string(t_.substr(start, pos_ - start));
  }
  std::unique_ptr<FilterExpr> Comparison() {
    // Matches() and the destructor recurse along the && / || chain: its length is bounded too.
    if (++comparisons_ > kMaxFilterExprComparisons) {
      return Fail("more than " + std::to_string(kMaxFilterExprComparisons) + " comparisons");
    }
    const std::string operand = Word();
    if (operand.empty() || operand == "$")
      return Fail("expected a field name, $name, $tid or $thread");
    if (operand[0] == '$' && operand != "$name" && operand != "$tid" && operand != "$thread") {
      return Fail("unknown variable '" + operand + "' ($name, $tid, $thread)");
    }
    Op op;
    if (Eat("=="))
      op = Op::kEq;
    else if (Eat("!="))
      op = Op::kNe;
    else if (Eat("<="))
      op = Op::kLe;
    else if (Eat(">="))
      op = Op::kGe;
    else if (Eat("<"))
      op = Op::kLt;
    else if (Eat(">"))
      op = Op::kGt;
    else if (Eat("~"))
      op = Op::kGlob;
    else
      return Fail("expected == != < <= > >= or ~ after '" + operand + "'");
    Literal lit;
    if (!ParseLiteral(&lit)) return nullptr;
    if (op == Op::kGlob && lit.kind != Literal::Kind::kString && lit.kind != Literal::Kind::kWord) {
      return Fail("'~' needs a string pattern");
    }
    return std::make_unique<CompareExpr>(operand, op, std::move(lit));
  }
  bool ParseLiteral(Literal* lit) {
    Skip();
    if (pos_ >= t_.size()) return Fail("expected a value"), false;
    const char c = t_[pos_];
    if (c == '"') {
      lit->kind = Literal::Kind::kString;
      for (++pos_; pos_ < t_.size() && t_[pos_] != '"'; ++pos_) {
        if (t_[pos_] == '\\' && pos_ + 1 < t_.size()) ++pos_;
        lit->s += t_[pos_];
      }
      if (pos_ >= t_.size()) return Fail("unterminated string"), false;
      ++pos_;
      return true;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') {
      std::size_t end = pos_;
      while (end < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[end])) ||
                                 t_[end] == '.' || t_[end] == '-' || t_[end] == '+')) {
        ++end;
      }
      const std::string num(t_.substr(pos_, end - pos_));
      const bool neg = !num.empty() && num[0] == '-';
      const std::string mag = num.substr(neg || (!num.empty() && num[0] == '+') ? 1 : 0);
      const bool hex = mag.size() > 2 && mag[0] == '0' && (mag[1] == 'x' || mag[1] == 'X');
      std::uint64_t u = 0;
      const char* first = mag.data() + (hex ? 2 : 0);
      const auto r = std::from_chars(first, mag.data() + mag.size(), u, hex ? 16 : 10);
      if (r.ec == std::errc() && r.ptr == mag.data() + mag.size() && !mag.empty()) {
        lit->kind = Literal::Kind::kInt;
        lit->i = neg ? -static_cast<__int128>(u) : static_cast<__int128>(u);
      } else {
        char* stop = nullptr;
        lit->d = std::strtod(num.c_str(), &stop);
        if (num.empty() || stop != num.c_str() + num.size())
          return Fail("bad number '" + num + "'"), false;
        lit->kind = Literal::Kind::kFloat;
      }
      pos_ = end;
      return true;
    }
    const std::string w = Word();
    if (w.empty() || w[0] == '$') return Fail("expected a value"), false;
    if (w == "true" || w == "false") {
      lit->kind = Literal::Kind::kBool;
      lit->i = w == "true" ? 1 : 0;
      lit->s = w;
    } else {
      lit->kind = Literal::Kind::kWord;
      lit->s = w;
    }
    return true;
  }

  std::string_view t_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
  std::size_t comparisons_ = 0;
  std::string error_;
};

}  // namespace

std::unique_ptr<FilterExpr> FilterExpr::Parse(std::string_view text, std::string* error) {
  return Parser(text).ParseAll(error);
}

}  // namespace hush::cli
