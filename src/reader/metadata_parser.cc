#include "reader/metadata_parser.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "reader/tsdl_lexer.h"
#include "reader/tsdl_types.h"

namespace hush::reader::internal {
namespace {

constexpr int kMaxDepth = 32;  // nesting of type specifiers: bounds the recursion on bad input

struct Value {  // right-hand side of `key = value;`
  enum Kind { kNumber, kString, kIdent };
  Kind kind = kNumber;
  bool negative = false;
  std::uint64_t number = 0;
  std::string text;
  std::size_t offset = 0;
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& file, ParsedMetadata* out, std::string* error)
      : text_(text), file_(file), out_(out), error_(error) {}

  bool Run() {
    if (!Tokenize(text_, file_, &toks_, error_)) return false;
    while (Peek().kind != TokenKind::kEnd) {
      if (!TopLevel()) return false;
    }
    return Finish();
  }

 private:
  using AssignFn = std::function<bool(const std::string&, const Value&)>;
  using TypeFn = std::function<bool(const std::string&, const TypePtr&)>;

  const Token& Peek(std::size_t k = 0) const {
    return toks_[std::min(pos_ + k, toks_.size() - 1)];
  }
  bool IsPunct(std::string_view p, std::size_t k = 0) const {
    return Peek(k).kind == TokenKind::kPunct && Peek(k).text == p;
  }
  bool IsIdent(std::string_view name) const {
    return Peek().kind == TokenKind::kIdent && Peek().text == name;
  }
  bool Fail(std::size_t offset, const std::string& message) {
    *error_ = LocateError(text_, file_, offset, message);
    return false;
  }
  std::string Describe(const Token& t) const {
    switch (t.kind) {
      case TokenKind::kEnd: return "end of file";
      case TokenKind::kString: return "a string";
      case TokenKind::kNumber: return "number " + std::to_string(t.number);
      default: return "'" + t.text + "'";
    }
  }
  bool Expect(std::string_view punct, const char* context) {
    if (!IsPunct(punct)) {
      return Fail(Peek().offset, "expected '" + std::string(punct) + "' " + context + ", found " +
                                     Describe(Peek()));
    }
    ++pos_;
    return true;
  }
  bool ExpectIdent(std::string* out, const char* what) {
    if (Peek().kind != TokenKind::kIdent) {
      return Fail(Peek().offset, std::string("expected ") + what + ", found " + Describe(Peek()));
    }
    *out = toks_[pos_++].text;
    return true;
  }
  // ident(.ident)*
  bool ParseKey(std::string* key, const char* what) {
    if (!ExpectIdent(key, what)) return false;
    while (IsPunct(".")) {
      ++pos_;
      std::string part;
      if (!ExpectIdent(&part, "an identifier after '.'")) return false;
      *key += "." + part;
    }
    return true;
  }
  bool ParseSignedNumber(bool* negative, std::uint64_t* number) {
    *negative = false;
    if (IsPunct("-") || IsPunct("+")) *negative = toks_[pos_++].text == "-";
    if (Peek().kind != TokenKind::kNumber) {
      return Fail(Peek().offset, "expected a number, found " + Describe(Peek()));
    }
    *number = toks_[pos_++].number;
    return true;
  }
  bool ParseValue(Value* v) {
    v->offset = Peek().offset;
    if (Peek().kind == TokenKind::kString) {
      v->kind = Value::kString;
      v->text = toks_[pos_++].text;
      return true;
    }
    if (Peek().kind == TokenKind::kIdent) {
      v->kind = Value::kIdent;
      return ParseKey(&v->text, "a value");
    }
    v->kind = Value::kNumber;
    return ParseSignedNumber(&v->negative, &v->number);
  }

  bool U64(const Value& v, std::uint64_t* out) {
    if (v.kind != Value::kNumber || v.negative) return Fail(v.offset, "expected a non-negative integer");
    *out = v.number;
    return true;
  }
  bool I64(const Value& v, std::int64_t* out) {
    if (v.kind != Value::kNumber) return Fail(v.offset, "expected an integer");
    if (v.number > (v.negative ? (std::uint64_t{1} << 63) : (std::uint64_t{1} << 63) - 1)) {
      return Fail(v.offset, "integer out of range");
    }
    *out = v.negative ? static_cast<std::int64_t>(0 - v.number) : static_cast<std::int64_t>(v.number);
    return true;
  }
  bool Bool(const Value& v, bool* out) {
    if (v.kind == Value::kNumber && !v.negative && v.number <= 1) {
      *out = v.number == 1;
      return true;
    }
    if (v.kind == Value::kIdent && (v.text == "true" || v.text == "TRUE" || v.text == "false" ||
                                    v.text == "FALSE")) {
      *out = v.text[0] == 't' || v.text[0] == 'T';
      return true;
    }
    return Fail(v.offset, "expected true or false");
  }
  bool Str(const Value& v, std::string* out) {
    if (v.kind != Value::kString) return Fail(v.offset, "expected a string literal");
    *out = v.text;
    return true;
  }
  static std::string Text(const Value& v) {
    if (v.kind != Value::kNumber) return v.text;
    return (v.negative && v.number != 0 ? "-" : "") + std::to_string(v.number);
  }

  // `{ key = value; key := type; ... }` (the trailing ';' is the caller's).
  bool ParseBody(const AssignFn& on_assign, const TypeFn& on_type, int depth) {
    if (!Expect("{", "to open a block")) return false;
    while (!IsPunct("}")) {
      if (Peek().kind == TokenKind::kEnd) return Fail(Peek().offset, "unterminated block");
      const std::size_t at = Peek().offset;
      std::string key;
      if (!ParseKey(&key, "an attribute name")) return false;
      if (IsPunct("=")) {
        ++pos_;
        Value v;
        if (!ParseValue(&v) || !on_assign(key, v)) return false;
      } else if (IsPunct(":=")) {
        ++pos_;
        if (!on_type) return Fail(at, "unexpected type assignment to '" + key + "'");
        TypePtr t;
        if (!ParseType(&t, depth + 1) || !on_type(key, t)) return false;
      } else {
        return Fail(Peek().offset, "expected '=' or ':=' after '" + key + "', found " + Describe(Peek()));
      }
      if (!Expect(";", "after an attribute")) return false;
    }
    ++pos_;
    return true;
  }

  // Nesting through aliases and array dimensions does not recurse here, but it does where the
  // type is used: the same bound as the parser's own recursion.
  bool CheckLevels(const Type& t) {
    if (t.levels <= static_cast<std::uint32_t>(kMaxDepth)) return true;
    return Fail(t.offset,
                "types nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
  }

  bool ParseType(TypePtr* out, int depth) {
    if (depth > kMaxDepth) return Fail(Peek().offset, "types nested too deeply");
    auto t = std::make_shared<Type>();
    t->offset = Peek().offset;
    std::string word;
    if (!ExpectIdent(&word, "a type")) return false;
    if (word == "integer") {
      t->kind = Type::kInteger;
      if (!ParseBody([&](const std::string& k, const Value& v) { return IntegerAttr(*t, k, v); }, nullptr, depth)) {
        return false;
      }
      if (t->size == 0 || t->size > 64) return Fail(t->offset, "integer size must be 1 to 64 bits");
    } else if (word == "floating_point") {
      t->kind = Type::kFloat;
      if (!ParseBody([&](const std::string& k, const Value& v) { return FloatAttr(*t, k, v); }, nullptr, depth)) {
        return false;
      }
      t->size = t->exp_dig + t->mant_dig;
    } else if (word == "string") {
      t->kind = Type::kString;
      if (IsPunct("{") && !ParseBody([](const std::string&, const Value&) { return true; }, nullptr, depth)) {
        return false;
      }
    } else if (word == "enum") {
      if (!ParseEnum(*t, depth)) return false;
    } else if (word == "struct" || word == "variant") {
      t->kind = word == "struct" ? Type::kStruct : Type::kVariant;
      if (Peek().kind == TokenKind::kIdent) ++pos_;  // name
      if (t->kind == Type::kVariant && IsPunct("<")) {
        ++pos_;
        std::string tag;
        if (!ParseKey(&tag, "a variant tag") || !Expect(">", "after the variant tag")) return false;
      }
      if (!Expect("{", "to open the field list") || !ParseDeclarations(&t->fields, depth)) return false;
      for (const auto& field : t->fields) t->levels = std::max(t->levels, field.second->levels + 1);
      if (!CheckLevels(*t)) return false;
      if (IsIdent("align") && IsPunct("(", 1)) {
        pos_ += 2;
        bool neg;
        if (!ParseSignedNumber(&neg, &t->align) || !Expect(")", "after align")) return false;
      }
    } else {
      auto it = aliases_.find(word);
      if (it == aliases_.end()) return Fail(t->offset, "unknown type '" + word + "'");
      *out = it->second;
      return true;
    }
    *out = std::move(t);
    return true;
  }

  bool IntegerAttr(Type& t, const std::string& key, const Value& v) {
    if (key == "size") return U64(v, &t.size);
    if (key == "align") return U64(v, &t.align) && (t.align != 0 || Fail(v.offset, "align must be > 0"));
    if (key == "signed") return Bool(v, &t.is_signed);
    if (key == "byte_order") return ByteOrder(t, v);
    return true;  // encoding, base, map: no effect on decoding
  }
  bool FloatAttr(Type& t, const std::string& key, const Value& v) {
    if (key == "exp_dig") return U64(v, &t.exp_dig);
    if (key == "mant_dig") return U64(v, &t.mant_dig);
    if (key == "align") return U64(v, &t.align) && (t.align != 0 || Fail(v.offset, "align must be > 0"));
    if (key == "byte_order") return ByteOrder(t, v);
    return true;
  }
  bool ByteOrder(Type& t, const Value& v) {
    const std::string s = Text(v);
    if (s == "be" || s == "network") t.big_endian = true;
    else if (s == "le" || s == "native") t.big_endian = false;
    else return Fail(v.offset, "unknown byte_order '" + s + "'");
    return true;
  }

  bool ParseEnum(Type& t, int depth) {
    t.kind = Type::kEnum;
    if (Peek().kind == TokenKind::kIdent) ++pos_;  // name
    if (!IsPunct(":")) return Fail(Peek().offset, "enum without a container type (': integer_type')");
    ++pos_;
    if (!ParseType(&t.elem, depth + 1)) return false;
    t.levels = t.elem->levels + 1;
    if (t.elem->kind != Type::kInteger) return Fail(t.elem->offset, "enum container must be an integer");
    if (!Expect("{", "to open the enumerator list")) return false;
    std::int64_t next = 0;
    while (!IsPunct("}")) {
      EnumLabel label;
      if (Peek().kind == TokenKind::kString || Peek().kind == TokenKind::kIdent) {
        label.name = toks_[pos_++].text;
      } else {
        return Fail(Peek().offset, "expected an enumerator, found " + Describe(Peek()));
      }
      label.first = label.last = next;
      if (IsPunct("=")) {
        ++pos_;
        if (!EnumValue(&label.first)) return false;
        label.last = label.first;
        if (IsPunct("...")) {
          ++pos_;
          if (!EnumValue(&label.last)) return false;
        }
      }
      next = label.last + 1;
      t.labels.push_back(std::move(label));
      if (!IsPunct(",")) break;
      ++pos_;
    }
    return Expect("}", "to close the enumerator list");
  }
  bool EnumValue(std::int64_t* out) {
    Value v;
    v.offset = Peek().offset;
    return ParseSignedNumber(&v.negative, &v.number) && I64(v, out);
  }

  // Declarations up to and including the closing '}'.
  bool ParseDeclarations(std::vector<std::pair<std::string, TypePtr>>* fields, int depth) {
    while (!IsPunct("}")) {
      if (Peek().kind == TokenKind::kEnd) return Fail(Peek().offset, "unterminated field list");
      TypePtr base;
      if (!ParseType(&base, depth + 1)) return false;
      for (;;) {
        std::string name;
        TypePtr t;
        if (!ParseDeclarator(base, &name, &t)) return false;
        fields->emplace_back(std::move(name), std::move(t));
        if (!IsPunct(",")) break;
        ++pos_;
      }
      if (!Expect(";", "after a field declaration")) return false;
    }
    ++pos_;
    return true;
  }
  bool ParseDeclarator(const TypePtr& base, std::string* name, TypePtr* out) {
    if (!ExpectIdent(name, "a field name")) return false;
    std::vector<std::shared_ptr<Type>> dims;
    while (IsPunct("[")) {
      ++pos_;
      auto d = std::make_shared<Type>();
      d->offset = Peek().offset;
      if (Peek().kind == TokenKind::kNumber) {
        d->kind = Type::kArray;
        d->length = toks_[pos_++].number;
      } else {
        d->kind = Type::kSequence;
        if (!ParseKey(&d->length_ref, "an array length")) return false;
      }
      if (!Expect("]", "after an array length")) return false;
      dims.push_back(std::move(d));
    }
    TypePtr t = base;
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
      (*it)->elem = t;
      (*it)->levels = t->levels + 1;
      if (!CheckLevels(**it)) return false;
      t = *it;
    }
    *out = std::move(t);
    return true;
  }

  bool TopLevel() {
    const std::size_t at = Peek().offset;
    std::string word;
    if (!ExpectIdent(&word, "a declaration")) return false;
    if (word == "typealias") {
      TypePtr t;
      if (!ParseType(&t, 0) || !Expect(":=", "in typealias")) return false;
      std::string name;
      if (!ExpectIdent(&name, "the alias name")) return false;
      while (Peek().kind == TokenKind::kIdent) name += " " + toks_[pos_++].text;
      aliases_[name] = t;
      return Expect(";", "after typealias");
    }
    if (word == "typedef") {
      TypePtr base, t;
      std::string name;
      if (!ParseType(&base, 0) || !ParseDeclarator(base, &name, &t)) return false;
      aliases_[name] = t;
      return Expect(";", "after typedef");
    }
    bool ok;
    if (word == "trace") ok = TraceBlock();
    else if (word == "env") ok = EnvBlock();
    else if (word == "clock") ok = ClockBlock();
    else if (word == "stream") ok = StreamBlock();
    else if (word == "event") ok = EventBlock(at);
    else return Fail(at, "unexpected '" + word + "' at top level");
    return ok && Expect(";", "after a block");
  }

  bool TraceBlock() {
    seen_trace_ = true;
    return ParseBody(
        [&](const std::string& k, const Value& v) {
          if (k == "major") {
            std::uint64_t major;
            if (!U64(v, &major)) return false;
            if (major != 1) return Fail(v.offset, "unsupported CTF major version " + Text(v));
          } else if (k == "uuid") {
            std::string u;
            if (!Str(v, &u)) return false;
            if (!ParseUuid(u, &out_->uuid)) return Fail(v.offset, "malformed uuid \"" + u + "\"");
            out_->has_uuid = true;
            out_->metadata.uuid = u;
          } else if (k == "byte_order") {
            if (Text(v) != "le") return Fail(v.offset, "only byte_order = le is supported");
          }
          return true;
        },
        [&](const std::string& k, const TypePtr& t) {
          if (k != "packet.header") return true;
          seen_packet_header_ = true;
          return CheckLayout(*t, "packet.header",
                             {{"magic", 4}, {"uuid", 16}, {"stream_id", 4}, {"stream_instance_id", 8}});
        },
        0);
  }
  bool EnvBlock() {
    return ParseBody(
        [&](const std::string& k, const Value& v) {
          out_->metadata.env.emplace_back(k, Text(v));
          return true;
        },
        nullptr, 0);
  }
  bool ClockBlock() {
    ClockInfo& c = out_->metadata.clock;
    return ParseBody(
        [&](const std::string& k, const Value& v) {
          if (k == "name") {
            c.name = Text(v);
            return true;
          }
          if (k == "uuid") return Str(v, &c.uuid);
          if (k == "description") return Str(v, &c.description);
          if (k == "freq") return U64(v, &c.freq) && (c.freq > 0 || Fail(v.offset, "clock freq must be > 0"));
          if (k == "precision") return U64(v, &c.precision);
          if (k == "offset_s") return I64(v, &c.offset_s);
          if (k == "offset") return I64(v, &c.offset);
          if (k == "absolute") return Bool(v, &c.absolute);
          return true;
        },
        nullptr, 0);
  }
  bool StreamBlock() {
    seen_stream_ = true;
    return ParseBody(
        [&](const std::string& k, const Value& v) {
          std::uint64_t id;
          if (k == "id" && (!U64(v, &id) || id != 0)) {
            return Fail(v.offset, "only stream id 0 is supported");
          }
          return true;
        },
        [&](const std::string& k, const TypePtr& t) {
          if (k == "event.header") {
            seen_event_header_ = true;
            return CheckLayout(*t, k, {{"id", 1}, {"v", 0}});
          }
          if (k == "packet.context") {
            seen_packet_context_ = true;
            return CheckLayout(*t, k,
                               {{"timestamp_begin", 8}, {"timestamp_end", 8}, {"content_size", 8},
                                {"packet_size", 8}, {"packet_seq_num", 8}, {"events_discarded", 8},
                                {"events_overwritten", 8}, {"vpid", 4}, {"vtid", 4}, {"thread_name", 16}});
          }
          if (k == "event.context" && !t->fields.empty()) {
            return Fail(t->offset, "stream event.context is not supported");
          }
          return true;
        },
        0);
  }
  bool CheckLayout(const Type& t, const std::string& what,
                   std::initializer_list<std::pair<const char*, std::uint64_t>> expected) {
    bool ok = t.kind == Type::kStruct && t.fields.size() == expected.size();
    std::size_t i = 0;
    for (const auto& [name, bytes] : expected) {
      if (!ok) break;
      const auto& f = t.fields[i++];
      ok = f.first == name && (bytes == 0 || FixedBytes(*f.second) == bytes) && !f.second->big_endian;
    }
    if (ok) return true;
    std::string names;
    for (const auto& [name, bytes] : expected) names += std::string(names.empty() ? "" : ", ") + name;
    return Fail(t.offset, what + " does not have the layout of docs/format.md (expected fields " + names + ")");
  }

  bool EventBlock(std::size_t at) {
    EventClass ec;
    bool has_id = false, has_name = false;
    const bool ok = ParseBody(
        [&](const std::string& k, const Value& v) {
          if (k == "name") {
            has_name = true;
            return Str(v, &ec.name);
          }
          if (k == "id") {
            std::uint64_t id;
            if (!U64(v, &id)) return false;
            if (id > UINT32_MAX) return Fail(v.offset, "event id out of range");
            ec.id = static_cast<std::uint32_t>(id);
            has_id = true;
          } else if (k == "stream_id") {
            std::uint64_t id;
            if (!U64(v, &id) || id != 0) return Fail(v.offset, "only stream id 0 is supported");
          } else if (k == "loglevel") {
            return I64(v, &ec.loglevel);
          } else if (k == "model.emf.uri") {
            return Str(v, &ec.kind_name);
          }
          return true;
        },
        [&](const std::string& k, const TypePtr& t) {
          if (k == "fields") {
            std::size_t at = 0;
            std::string message;
            return ConvertFields(*t, &ec, &at, &message) || Fail(at, message);
          }
          if (k == "context" && !t->fields.empty()) return Fail(t->offset, "event context is not supported");
          return true;
        },
        0);
    if (!ok) return false;
    if (!has_name) return Fail(at, "event without a name");
    if (!has_id) return Fail(at, "event \"" + ec.name + "\" without an id");
    for (const EventClass& other : out_->metadata.events) {
      if (other.id == ec.id) return Fail(at, "duplicate event id " + std::to_string(ec.id));
    }
    static constexpr std::pair<const char*, EventKind> kKinds[] = {
        {"event", EventKind::kEvent}, {"span", EventKind::kSpan},
        {"instant", EventKind::kInstant}, {"counter", EventKind::kCounter}};
    ec.kind = ec.kind_name.empty() ? EventKind::kEvent : EventKind::kUnknown;
    for (const auto& [name, kind] : kKinds) {
      if (ec.kind_name == name) ec.kind = kind;
    }
    ec.index = out_->metadata.events.size();
    out_->metadata.events.push_back(std::move(ec));
    return true;
  }

  bool Finish() {
    const std::size_t end = text_.size();
    if (!seen_trace_) return Fail(end, "no trace block");
    if (!seen_packet_header_) return Fail(end, "the trace block has no packet.header");
    if (!seen_stream_) return Fail(end, "no stream block");
    if (!seen_packet_context_) return Fail(end, "the stream block has no packet.context");
    if (!seen_event_header_) return Fail(end, "the stream block has no event.header");
    return true;
  }

  std::string_view text_;
  const std::string& file_;
  ParsedMetadata* out_;
  std::string* error_;
  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  std::map<std::string, TypePtr> aliases_;
  bool seen_trace_ = false, seen_packet_header_ = false, seen_stream_ = false;
  bool seen_packet_context_ = false, seen_event_header_ = false;
};

}  // namespace

bool ParseMetadata(std::string_view text, const std::string& file, ParsedMetadata* out,
                   std::string* error) {
  if (text.size() >= 4 && static_cast<unsigned char>(text[0]) == 0x57 &&
      static_cast<unsigned char>(text[1]) == 0x1d && static_cast<unsigned char>(text[2]) == 0xd1 &&
      static_cast<unsigned char>(text[3]) == 0x75) {
    *error = file + ": byte 0: packetized (binary) metadata is not supported";
    return false;
  }
  if (text.find('\0') != std::string_view::npos) {
    *error = LocateError(text, file, text.find('\0'), "NUL byte in metadata text");
    return false;
  }
  *out = ParsedMetadata();
  Parser parser(text, file, out, error);
  return parser.Run();
}

}  // namespace hush::reader::internal
