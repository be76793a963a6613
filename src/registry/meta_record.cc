#include "registry/meta_record.h"

#include <cstring>

namespace hush::registry {

std::string MetaRecord::Signature() const {
  std::string s;
  for (const FieldInfo& f : fields) {
    if (!s.empty()) s += ", ";
    s += f.type + " " + f.name;
  }
  return s;
}

const char* KindName(std::uint8_t kind) {
  switch (kind) {
    case 0: return "event";
    case 1: return "span";
    case 2: return "instant";
    case 3: return "counter";
    default: return "unknown";
  }
}

bool IsKnownTypeCode(std::string_view code) {
  static constexpr std::string_view kCodes[] = {"i8",  "i16", "i32", "i64",  "u8",   "u16", "u32",
                                                "u64", "bool", "f32", "f64", "str", "bytes", "phase"};
  for (std::string_view c : kCodes) {
    if (c == code) return true;
  }
  return false;
}

std::size_t ParseMetaRecord(const char* data, std::size_t avail, MetaRecord* out, std::string* error) {
  if (avail < 12 || std::memcmp(data, "HTP1", 4) != 0) {
    *error = "bad tracepoint record magic";
    return 0;
  }
  const std::size_t size = static_cast<unsigned char>(data[4]) | (static_cast<unsigned char>(data[5]) << 8);
  if (size < 12 || size > avail) {
    *error = "tracepoint record size out of range";
    return 0;
  }
  out->kind = static_cast<std::uint8_t>(data[6]);
  const unsigned field_count = static_cast<unsigned char>(data[7]);
  std::uint32_t line;
  std::memcpy(&line, data + 8, 4);
  out->line = line;
  std::size_t at = 12;
  auto next = [&](std::string* s) {
    const void* nul = std::memchr(data + at, '\0', size - at);
    if (at >= size || nul == nullptr) return false;
    const std::size_t len = static_cast<const char*>(nul) - (data + at);
    s->assign(data + at, len);
    at += len + 1;
    return true;
  };
  if (!next(&out->provider) || !next(&out->name) || !next(&out->file)) {
    *error = "truncated tracepoint record";
    return 0;
  }
  out->fields.resize(field_count);
  for (FieldInfo& f : out->fields) {
    if (!next(&f.name) || !next(&f.type)) {
      *error = "truncated tracepoint record fields";
      return 0;
    }
    if (!IsKnownTypeCode(f.type)) {
      *error = "unknown field type code '" + f.type + "'";
      return 0;
    }
  }
  if (out->kind > 3) {
    *error = "unknown tracepoint kind";
    return 0;
  }
  return size;
}

}  // namespace hush::registry
