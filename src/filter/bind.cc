// Bind (bind.h): the resolution rules of filter.h, "How a bare word resolves" and "Comparisons".
#include "filter/bind.h"

#include <optional>

namespace hush::filter {
namespace {

// A leaf operand resolved against the layout.
struct Operand {
  enum class Type : std::uint8_t { kNumber, kLabelled, kString, kBytes, kMissing };
  Type type = Type::kNumber;
  enum class From : std::uint8_t { kConst, kField, kTid, kThread } from = From::kConst;
  std::uint32_t field = 0;
  long double number = 0;
  std::string text;  // kConst strings; the word of kMissing
  std::uint32_t column = 1;
};

// An entry of the binder's stack: a leaf not emitted yet (emitted when its use is known, so
// that a comparison of two strings becomes one instruction), or a computed number.
struct Entry {
  bool pending = false;
  std::size_t node = 0;
};

Cmp Mirror(Cmp cmp) {
  switch (cmp) {
    case Cmp::kLt: return Cmp::kGt;
    case Cmp::kLe: return Cmp::kGe;
    case Cmp::kGt: return Cmp::kLt;
    case Cmp::kGe: return Cmp::kLe;
    default: return cmp;
  }
}

class Binder {
 public:
  Binder(const Parsed& parsed, const Layout& layout, Code* out, Error* error)
      : parsed_(parsed), layout_(layout), out_(out), error_(error) {}

  bool Run() {
    std::vector<Entry> stack;
    for (std::size_t i = 0; i < parsed_.code.size(); ++i) {
      const Node& n = parsed_.code[i];
      switch (n.kind) {
        case NodeKind::kNot: {
          if (!Settle(stack.back())) return false;
          Emit({Op::kNot});
          stack.back() = {};
          break;
        }
        case NodeKind::kAnd:
        case NodeKind::kOr: {
          // Commutative: a pending left side settled now lands above the right one.
          const Entry b = stack.back();
          stack.pop_back();
          if (!Settle(stack.back()) || !Settle(b)) return false;
          Emit({n.kind == NodeKind::kAnd ? Op::kAnd : Op::kOr});
          stack.back() = {};
          break;
        }
        case NodeKind::kCompare: {
          const Entry b = stack.back();
          stack.pop_back();
          if (!Compare(n, stack.back(), b)) return false;
          stack.back() = {};
          break;
        }
        default:
          stack.push_back({true, i});
      }
    }
    return stack.size() == 1 && Settle(stack.back());
  }

 private:
  void Emit(Instr in) { out_->code.push_back(in); }
  bool Fail(std::uint32_t column, const std::string& what) {
    *error_ = {column, what};
    return false;
  }

  std::optional<Operand> Resolve(const Node& n) {
    Operand o;
    o.column = n.column;
    switch (n.kind) {
      case NodeKind::kNumber: o.number = n.number; return o;
      case NodeKind::kString: o.type = Operand::Type::kString, o.text = n.text; return o;
      case NodeKind::kName:
        o.type = Operand::Type::kString, o.text = std::string(layout_.event_name);
        return o;
      case NodeKind::kTid:
      case NodeKind::kThread:
        if (!layout_.thread_values) {
          Fail(n.column, n.text + " is not known to the runtime filter, which reads the payload "
                                  "only (dump --filter knows it)");
          return std::nullopt;
        }
        o.type = n.kind == NodeKind::kTid ? Operand::Type::kNumber : Operand::Type::kString;
        o.from = n.kind == NodeKind::kTid ? Operand::From::kTid : Operand::From::kThread;
        return o;
      default: break;
    }
    o.text = n.text;  // kWord
    o.type = Operand::Type::kMissing;
    for (std::size_t f = 0; f < layout_.fields.size(); ++f) {
      if (layout_.fields[f].name != n.text) continue;
      static constexpr Operand::Type kTypes[] = {Operand::Type::kNumber, Operand::Type::kLabelled,
                                                 Operand::Type::kString, Operand::Type::kBytes};
      o.type = kTypes[static_cast<int>(layout_.fields[f].cls)];
      o.from = Operand::From::kField;
      o.field = static_cast<std::uint32_t>(f);
      break;
    }
    return o;
  }

  // Why `o` does not take part (strict: the error; else the caller folds to false).
  bool Unusable(const Operand& o) {
    if (!layout_.strict) return false;
    if (o.type == Operand::Type::kMissing) return Fail(o.column, "no field '" + o.text + "'");
    return Fail(o.column, "field '" + o.text + "' holds bytes, which filters do not compare");
  }

  // Pushes a number operand.
  void Push(const Operand& o) {
    if (o.from == Operand::From::kField) Emit({Op::kField, Cmp::kEq, o.field});
    else if (o.from == Operand::From::kTid) Emit({Op::kTid});
    else Emit({Op::kConst, Cmp::kEq, 0, {}, {}, o.number});
  }

  // A pending leaf becomes a value on the stack: a number, or 0 for what cannot be one.
  bool Settle(const Entry& e) {
    if (!e.pending) return true;
    const std::optional<Operand> o = Resolve(parsed_.code[e.node]);
    if (!o) return false;
    switch (o->type) {
      case Operand::Type::kNumber:
      case Operand::Type::kLabelled: Push(*o); return true;
      case Operand::Type::kString:
        if (layout_.strict) {
          return Fail(o->column, "field '" + o->text +
                                     "' is a string, not a condition (compare it: == != < <= > >= ~)");
        }
        break;
      default:
        if (layout_.strict) return Unusable(*o);
    }
    Emit({Op::kConst});
    return true;
  }

  StrRef Ref(const Operand& o) {
    if (o.from == Operand::From::kThread) return {StrRef::Kind::kThread, 0};
    if (o.from == Operand::From::kField) {
      return {o.type == Operand::Type::kLabelled ? StrRef::Kind::kLabel : StrRef::Kind::kField,
              o.field};
    }
    out_->strings.push_back(o.text);
    return {StrRef::Kind::kConst, static_cast<std::uint32_t>(out_->strings.size() - 1)};
  }

  bool Compare(const Node& n, const Entry& ea, const Entry& eb) {
    using Type = Operand::Type;
    Operand a, b;  // a computed side is a number
    if (ea.pending) {
      const std::optional<Operand> o = Resolve(parsed_.code[ea.node]);
      if (!o) return false;
      a = *o;
    }
    if (eb.pending) {
      const std::optional<Operand> o = Resolve(parsed_.code[eb.node]);
      if (!o) return false;
      b = *o;
    }
    // A word naming no field, beside a string or a labelled field, is a string.
    const auto stringy = [](const Operand& o) {
      return o.type == Type::kString || o.type == Type::kLabelled;
    };
    if (a.type == Type::kMissing && stringy(b)) a.type = Type::kString, a.from = Operand::From::kConst;
    if (b.type == Type::kMissing && stringy(a)) b.type = Type::kString, b.from = Operand::From::kConst;

    bool holds = true;  // false: the comparison is folded to false (not strict)
    for (const Operand* o : {&a, &b}) {
      if (o->type == Type::kMissing || o->type == Type::kBytes) {
        if (layout_.strict) return Unusable(*o);
        holds = false;
      }
    }
    const bool numbers = a.type != Type::kString && b.type != Type::kString;
    if (holds && n.cmp == Cmp::kGlob && a.type == Type::kNumber) {
      if (layout_.strict) {
        return Fail(n.column, "'~' matches strings; field '" + a.text + "' is a number");
      }
      holds = false;
    } else if (holds && n.cmp != Cmp::kGlob && !numbers && (a.type == Type::kNumber || b.type == Type::kNumber)) {
      if (layout_.strict) {  // the parser refused it unless a field takes part
        const bool a_field = a.from == Operand::From::kField;
        const Operand& f = a_field && (a.type == Type::kString || b.from != Operand::From::kField) ? a : b;
        const bool is_string = f.type == Type::kString;
        return Fail(f.column, "field '" + f.text + "' is a " + (is_string ? "string" : "number") +
                                  "; '" + n.text + "' compares it with a " +
                                  (is_string ? "number" : "string"));
      }
      holds = false;
    }
    if (!holds) {
      if (ea.pending && eb.pending) Emit({Op::kConst});
      else Emit({Op::kFalse});
      return true;
    }
    if (n.cmp == Cmp::kGlob || !numbers) {  // both are leaves: strings come from leaves only
      Emit({n.cmp == Cmp::kGlob ? Op::kGlob : Op::kStrCmp, n.cmp, 0, Ref(a), Ref(b)});
      return true;
    }
    Cmp cmp = n.cmp;
    if (ea.pending) {
      Push(a);
      if (!eb.pending) cmp = Mirror(cmp);  // a now lies above the computed b
    }
    if (eb.pending) Push(b);
    Emit({CompareOp(cmp)});
    return true;
  }

  const Parsed& parsed_;
  const Layout& layout_;
  Code* out_;
  Error* error_;
};

}  // namespace

bool Bind(const Parsed& parsed, const Layout& layout, Code* out, Error* error) {
  *out = Code();
  return Binder(parsed, layout, out, error).Run();
}

bool CompareStrings(Cmp cmp, std::string_view a, std::string_view b) {
  if (cmp == Cmp::kGlob) return GlobMatch(b, a);
  const int c = a.compare(b);
  switch (cmp) {
    case Cmp::kEq: return c == 0;
    case Cmp::kNe: return c != 0;
    case Cmp::kLt: return c < 0;
    case Cmp::kLe: return c <= 0;
    case Cmp::kGt: return c > 0;
    case Cmp::kGe: return c >= 0;
    default: return false;
  }
}

}  // namespace hush::filter
