// Program (program.h): the runtime back end.
#include "filter/program.h"

#include <algorithm>
#include <cstring>

namespace hush::filter {
namespace {

template <typename T>
long double Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<long double>(v);
}

// Bytes of a fixed-size type (Program::Type order); 0: variable.
constexpr std::uint8_t kSize[] = {1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 1, 1, 0, 0};

}  // namespace

// Reads the fields of one payload for Run() (bind.h).
class Program::Source {
 public:
  Source(const Program& program, const char* data, const Span* spans)
      : types_(program.types_.data()), data_(data), spans_(spans) {}

  long double Number(std::uint32_t field) const {
    const char* p = data_ + spans_[field].offset;
    switch (types_[field]) {
      case Type::kI8: return Load<std::int8_t>(p);
      case Type::kI16: return Load<std::int16_t>(p);
      case Type::kI32: return Load<std::int32_t>(p);
      case Type::kI64: return Load<std::int64_t>(p);
      case Type::kU16: return Load<std::uint16_t>(p);
      case Type::kU32: return Load<std::uint32_t>(p);
      case Type::kU64: return Load<std::uint64_t>(p);
      case Type::kF32: return Load<float>(p);
      case Type::kF64: return Load<double>(p);
      default: return Load<std::uint8_t>(p);  // u8, bool, phase
    }
  }
  bool String(const StrRef& ref, std::string_view* out) const {
    const Span& s = spans_[ref.index];
    if (ref.kind == StrRef::Kind::kField) {
      *out = std::string_view(data_ + s.offset, s.size);
      return true;
    }
    if (ref.kind != StrRef::Kind::kLabel) return false;  // kThread: never bound here
    // The labels the trace's metadata gives these types (format/ctf_metadata.cc).
    static constexpr std::string_view kBool[] = {"false", "true"}, kPhase[] = {"begin", "end"};
    const auto value = static_cast<std::uint8_t>(data_[s.offset]);
    *out = value > 1 ? std::string_view() : types_[ref.index] == Type::kBool ? kBool[value] : kPhase[value];
    return true;
  }
  long double Tid() const { return 0; }  // never bound here

 private:
  const Type* types_;
  const char* data_;
  const Span* spans_;
};

bool Program::Check(const Parsed& parsed, Error* error) {
  Layout layout;
  layout.strict = false;  // fields are unknown here: only what no layout can hold is refused
  Code code;
  return filter::Bind(parsed, layout, &code, error);
}

std::unique_ptr<Program> Program::Bind(const Parsed& parsed, std::string_view event_name,
                                       const std::vector<std::string>& names,
                                       const std::vector<std::string>& types, Error* error) {
  static const std::pair<std::string_view, Type> kTypes[] = {
      {"i8", Type::kI8},     {"i16", Type::kI16},     {"i32", Type::kI32}, {"i64", Type::kI64},
      {"u8", Type::kU8},     {"u16", Type::kU16},     {"u32", Type::kU32}, {"u64", Type::kU64},
      {"bool", Type::kBool}, {"phase", Type::kPhase}, {"f32", Type::kF32}, {"f64", Type::kF64},
      {"str", Type::kStr},   {"bytes", Type::kBytes}};
  if (names.size() > kMaxFields || types.size() != names.size()) {
    *error = {1, "the event has more than " + std::to_string(kMaxFields) + " fields"};
    return nullptr;
  }
  auto program = std::unique_ptr<Program>(new Program());
  Layout layout;
  layout.event_name = event_name;
  std::vector<Type> all(names.size(), Type::kBytes);
  for (std::size_t i = 0; i < names.size(); ++i) {
    FieldClass cls = FieldClass::kBytes;  // an unknown type: refused if the filter uses it
    for (const auto& [code, type] : kTypes) {
      if (types[i] != code) continue;
      all[i] = type;
      cls = type == Type::kStr     ? FieldClass::kString
            : type == Type::kBytes ? FieldClass::kBytes
            : type == Type::kBool || type == Type::kPhase ? FieldClass::kLabelled
                                                          : FieldClass::kNumber;
    }
    layout.fields.push_back({names[i], cls});
  }
  if (!filter::Bind(parsed, layout, &program->code_, error)) return nullptr;
  std::size_t used = 0;  // fields up to the last one used
  for (const Instr& in : program->code_.code) {
    if (in.op == Op::kField) used = std::max<std::size_t>(used, in.field + 1);
    for (const StrRef* r : {&in.a, &in.b}) {
      if ((in.op == Op::kStrCmp || in.op == Op::kGlob) && r->kind != StrRef::Kind::kConst) {
        used = std::max<std::size_t>(used, r->index + 1);
      }
    }
  }
  for (std::size_t i = 0; i < used; ++i) {  // the registry checks type codes: never in practice
    if (all[i] == Type::kBytes && types[i] != "bytes") {
      *error = {1, "field '" + names[i] + "' has an unknown type '" + types[i] + "'"};
      return nullptr;
    }
  }
  program->types_.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(used));
  std::size_t offset = 0;
  for (std::size_t i = 0; i < used; ++i) {
    const std::uint8_t size = kSize[static_cast<int>(all[i])];
    if (size == 0) {
      program->fixed_.clear();  // variable sizes before the last field used: walk the payload
      return program;
    }
    program->fixed_.push_back({static_cast<std::uint32_t>(offset), size});
    offset += size;
  }
  program->fixed_size_ = offset;
  return program;
}

bool Program::Matches(const char* data, std::size_t size) const {
  if (types_.empty() || !fixed_.empty()) {
    if (size < fixed_size_) return false;
    return Run(code_, Source(*this, data, fixed_.data()));
  }
  Span spans[kMaxFields];
  std::size_t at = 0;
  for (std::size_t i = 0; i < types_.size(); ++i) {
    const Type t = types_[i];
    std::size_t len = kSize[static_cast<int>(t)], skip = 0;
    if (t == Type::kStr) {
      const void* nul = std::memchr(data + at, '\0', size - at);
      if (nul == nullptr) return false;
      len = static_cast<std::size_t>(static_cast<const char*>(nul) - (data + at));
      skip = 1;
    } else if (t == Type::kBytes) {
      if (size - at < 4) return false;
      std::uint32_t count;
      std::memcpy(&count, data + at, 4);
      len = 4 + std::size_t{count};
    }
    if (len + skip > size - at) return false;
    spans[i] = {static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(len)};
    at += len + skip;
  }
  return Run(code_, Source(*this, data, spans));
}

}  // namespace hush::filter
