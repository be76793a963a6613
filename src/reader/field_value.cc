// Typed access to decoded fields; small helpers of the public types.
#include <cmath>
#include <cstring>
#include <limits>

#include "hushtrace/reader.h"

namespace hush::reader {
namespace {

template <typename T>
T Load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool IsInteger(FieldType t) {
  return t == FieldType::kSigned || t == FieldType::kUnsigned || t == FieldType::kBool ||
         t == FieldType::kEnum;
}

}  // namespace

const char* FieldTypeName(FieldType type) {
  switch (type) {
    case FieldType::kSigned: return "signed";
    case FieldType::kUnsigned: return "unsigned";
    case FieldType::kBool: return "bool";
    case FieldType::kEnum: return "enum";
    case FieldType::kFloat: return "float";
    case FieldType::kString: return "string";
    case FieldType::kBytes: return "bytes";
  }
  return "?";
}

const char* EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kEvent: return "event";
    case EventKind::kSpan: return "span";
    case EventKind::kInstant: return "instant";
    case EventKind::kCounter: return "counter";
    case EventKind::kUnknown: break;
  }
  return "unknown";
}

std::string_view FieldInfo::LabelFor(std::int64_t value) const {
  for (const EnumLabel& l : labels) {
    if (value >= l.first && value <= l.last) return l.name;
  }
  return {};
}

int EventClass::FieldIndex(std::string_view field_name) const {
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == field_name) return static_cast<int>(i);
  }
  return -1;
}

std::string_view Metadata::Env(std::string_view key) const {
  for (const auto& [k, v] : env) {
    if (k == key) return v;
  }
  return {};
}

const EventClass* Metadata::FindById(std::uint32_t id) const {
  for (const EventClass& e : events) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

namespace {

// Float to integer without undefined behaviour: truncated, saturated at the type's bounds, NaN
// gives 0 (a trace is untrusted input: its floats may be anything).
template <typename Int>
Int SaturatingCast(double d) {
  if (std::isnan(d)) return 0;
  constexpr double kLow = static_cast<double>(std::numeric_limits<Int>::min());
  constexpr double kHigh = static_cast<double>(std::numeric_limits<Int>::max());  // 2^63 or 2^64
  if (d <= kLow) return std::numeric_limits<Int>::min();
  if (d >= kHigh) return std::numeric_limits<Int>::max();
  return static_cast<Int>(d);
}

}  // namespace

std::int64_t FieldValue::AsInt64() const {
  const FieldType t = type();
  if (t == FieldType::kFloat) return SaturatingCast<std::int64_t>(AsDouble());
  if (!IsInteger(t)) return 0;
  if (info_->is_signed) {
    switch (size_) {
      case 1: return Load<std::int8_t>(data_);
      case 2: return Load<std::int16_t>(data_);
      case 4: return Load<std::int32_t>(data_);
      case 8: return Load<std::int64_t>(data_);
    }
    return 0;
  }
  return static_cast<std::int64_t>(AsUint64());
}

std::uint64_t FieldValue::AsUint64() const {
  const FieldType t = type();
  if (t == FieldType::kFloat) return SaturatingCast<std::uint64_t>(AsDouble());
  if (!IsInteger(t)) return 0;
  if (info_->is_signed) return static_cast<std::uint64_t>(AsInt64());
  switch (size_) {
    case 1: return Load<std::uint8_t>(data_);
    case 2: return Load<std::uint16_t>(data_);
    case 4: return Load<std::uint32_t>(data_);
    case 8: return Load<std::uint64_t>(data_);
  }
  return 0;
}

double FieldValue::AsDouble() const {
  if (type() == FieldType::kFloat) {
    return size_ == 4 ? static_cast<double>(Load<float>(data_)) : Load<double>(data_);
  }
  if (!IsInteger(type())) return 0;
  return info_->is_signed ? static_cast<double>(AsInt64()) : static_cast<double>(AsUint64());
}

bool FieldValue::AsBool() const {
  if (type() == FieldType::kFloat) return AsDouble() != 0;
  return AsUint64() != 0;
}

std::string_view FieldValue::AsString() const {
  if (type() != FieldType::kString) return {};
  return std::string_view(reinterpret_cast<const char*>(data_), size_);
}

std::span<const std::uint8_t> FieldValue::AsBytes() const { return {data_, size_}; }

std::optional<FieldValue> Event::Find(std::string_view field_name) const {
  const int i = class_->FieldIndex(field_name);
  if (i < 0) return std::nullopt;
  return field(static_cast<std::size_t>(i));
}

std::optional<std::int64_t> Event::GetInt64(std::string_view field_name) const {
  const auto f = Find(field_name);
  if (!f || !IsInteger(f->type())) return std::nullopt;
  return f->AsInt64();
}

std::optional<std::uint64_t> Event::GetUint64(std::string_view field_name) const {
  const auto f = Find(field_name);
  if (!f || !IsInteger(f->type())) return std::nullopt;
  if (f->info().is_signed && f->AsInt64() < 0) return std::nullopt;
  return f->AsUint64();
}

std::optional<double> Event::GetDouble(std::string_view field_name) const {
  const auto f = Find(field_name);
  if (!f || !f->IsNumeric()) return std::nullopt;
  return f->AsDouble();
}

std::optional<bool> Event::GetBool(std::string_view field_name) const {
  const auto f = Find(field_name);
  if (!f || !IsInteger(f->type())) return std::nullopt;
  return f->AsBool();
}

std::optional<std::string_view> Event::GetString(std::string_view field_name) const {
  const auto f = Find(field_name);
  if (!f || f->type() != FieldType::kString) return std::nullopt;
  return f->AsString();
}

std::optional<std::span<const std::uint8_t>> Event::GetBytes(std::string_view field_name) const {
  const auto f = Find(field_name);
  if (!f || f->type() != FieldType::kBytes) return std::nullopt;
  return f->AsBytes();
}

}  // namespace hush::reader
