// The parsed form of TSDL type specifiers, and its conversion to the reader's event fields.
#ifndef HUSHTRACE_SRC_READER_TSDL_TYPES_H_
#define HUSHTRACE_SRC_READER_TSDL_TYPES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hushtrace/reader.h"

namespace hush::reader::internal {

struct Type;
using TypePtr = std::shared_ptr<const Type>;

struct Type {
  enum Kind { kInteger, kFloat, kString, kEnum, kStruct, kVariant, kArray, kSequence };
  Kind kind = kInteger;
  std::size_t offset = 0;  // where it is declared
  std::uint64_t size = 0;  // bits (integers, floats)
  std::uint64_t align = 8;  // bits
  bool is_signed = false;
  bool big_endian = false;
  std::uint64_t exp_dig = 0, mant_dig = 0;
  TypePtr elem;  // enum container; array or sequence element
  std::uint64_t length = 0;
  std::string length_ref;
  std::vector<EnumLabel> labels;
  std::vector<std::pair<std::string, TypePtr>> fields;  // struct, variant
  // Levels of types this one holds, itself included (aliases count what they stand for): the
  // decoder and the class table recurse this deep, so the parser bounds it (kMaxDepth).
  std::uint32_t levels = 1;
};


bool ParseUuid(const std::string& s, std::array<std::uint8_t, 16>* out);
// CTF 1.8: a leading underscore of an identifier is an escape, not part of the name.
std::string Unescape(const std::string& name);
// Bytes of a fixed-size type; 0 for variable-size ones.
std::uint64_t FixedBytes(const Type& t);
// Fills ec->fields from the `fields` struct. False with the offending offset and a message.
bool ConvertFields(const Type& st, EventClass* ec, std::size_t* at, std::string* message);

}  // namespace hush::reader::internal

#endif  // HUSHTRACE_SRC_READER_TSDL_TYPES_H_
