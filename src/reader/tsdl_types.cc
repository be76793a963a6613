#include "reader/tsdl_types.h"

#include <algorithm>

namespace hush::reader::internal {

bool ParseUuid(const std::string& s, std::array<std::uint8_t, 16>* out) {
  if (s.size() != 36) return false;
  std::size_t b = 0;
  for (std::size_t i = 0; i < 36;) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i++] != '-') return false;
      continue;
    }
    auto hex = [](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int hi = hex(s[i]), lo = hex(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[b++] = static_cast<std::uint8_t>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

std::string Unescape(const std::string& name) {
  return name.size() > 1 && name[0] == '_' ? name.substr(1) : name;
}

std::uint64_t FixedBytes(const Type& t) {
  switch (t.kind) {
    case Type::kInteger:
    case Type::kFloat: return t.size / 8;
    case Type::kEnum: return t.elem ? FixedBytes(*t.elem) : 0;
    case Type::kArray: return t.elem ? t.length * FixedBytes(*t.elem) : 0;
    default: return 0;
  }
}

bool ConvertFields(const Type& st, EventClass* ec, std::size_t* at, std::string* message) {
  auto fail = [&](std::size_t offset, std::string m) {
    *at = offset;
    *message = std::move(m);
    return false;
  };
  if (st.kind != Type::kStruct) return fail(st.offset, "event fields must be a struct");
  ec->payload_align = 1;
  for (const auto& [name, tp] : st.fields) {
    const Type& t = *tp;
    FieldInfo f;
    // CTF 1.8: a leading underscore of a field name is an escape, not part of the name (this is
    // how babeltrace2 shows it too: "_data_length" is "data_length").
    f.name = Unescape(name);
    const Type* scalar = t.kind == Type::kEnum ? t.elem.get() : &t;
    if (scalar->big_endian) return fail(t.offset, "field '" + name + "': big-endian fields are not supported");
    if (scalar->align % 8 != 0) return fail(t.offset, "field '" + name + "': bit-aligned fields are not supported");
    if (scalar->align > 8 * 4096) return fail(t.offset, "field '" + name + "': alignment out of range");
    f.align = static_cast<std::uint32_t>(scalar->align / 8);
    switch (t.kind) {
      case Type::kInteger:
      case Type::kEnum:
        if (scalar->size != 8 && scalar->size != 16 && scalar->size != 32 && scalar->size != 64) {
          return fail(t.offset, "field '" + name + "': integers must be 8, 16, 32 or 64 bits");
        }
        f.size = static_cast<std::uint32_t>(scalar->size / 8);
        f.is_signed = scalar->is_signed;
        f.type = f.is_signed ? FieldType::kSigned : FieldType::kUnsigned;
        if (t.kind == Type::kEnum) {
          f.labels = t.labels;
          const bool is_bool = f.labels.size() == 2 && f.labels[0].name == "false" &&
                               f.labels[0].first == 0 && f.labels[0].last == 0 &&
                               f.labels[1].name == "true" && f.labels[1].first == 1 && f.labels[1].last == 1;
          f.type = is_bool ? FieldType::kBool : FieldType::kEnum;
        }
        break;
      case Type::kFloat:
        if (t.exp_dig == 8 && t.mant_dig == 24) f.size = 4;
        else if (t.exp_dig == 11 && t.mant_dig == 53) f.size = 8;
        else return fail(t.offset, "field '" + name + "': only 32- and 64-bit IEEE floats are supported");
        f.type = FieldType::kFloat;
        break;
      case Type::kString: f.type = FieldType::kString; break;
      case Type::kArray:
      case Type::kSequence: {
        const Type& e = *t.elem;
        if (e.kind != Type::kInteger || e.size != 8 || e.align != 8) {
          return fail(t.offset, "field '" + name + "': only arrays and sequences of uint8 are supported");
        }
        f.type = FieldType::kBytes;
        f.align = 1;
        if (t.kind == Type::kArray) {
          if (t.length > (1u << 30)) return fail(t.offset, "field '" + name + "': array too long");
          f.size = static_cast<std::uint32_t>(t.length);
          break;
        }
        const std::string ref = Unescape(t.length_ref.substr(t.length_ref.rfind('.') + 1));
        for (std::size_t j = 0; j < ec->fields.size(); ++j) {
          if (ec->fields[j].name == ref && (ec->fields[j].type == FieldType::kUnsigned ||
                                            ec->fields[j].type == FieldType::kSigned)) {
            f.length_field = static_cast<int>(j);
          }
        }
        if (f.length_field < 0) {
          return fail(t.offset, "field '" + name + "': length '" + t.length_ref +
                                    "' is not an earlier integer field");
        }
        ec->fields[static_cast<std::size_t>(f.length_field)].hidden = true;
        break;
      }
      default: return fail(t.offset, "field '" + name + "': unsupported type (struct or variant)");
    }
    ec->payload_align = std::max(ec->payload_align, f.align);
    ec->fields.push_back(std::move(f));
  }
  return true;
}

}  // namespace hush::reader::internal
