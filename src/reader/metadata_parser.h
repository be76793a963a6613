// Parser of the TSDL metadata our writer emits (docs/format.md, section 2): typealiases, typedefs,
// trace/env/clock/stream/event blocks, and event fields of types intN_t/uintN_t, enums (bool,
// phase, others), floating_point (32/64-bit), string, uint8 sequences and arrays.
//
// The packet header, packet context and event header must have the fixed layout of
// docs/format.md, section 3 (checked by field names and sizes): the stream decoder reads them at
// fixed offsets.
#ifndef HUSHTRACE_SRC_READER_METADATA_PARSER_H_
#define HUSHTRACE_SRC_READER_METADATA_PARSER_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "hushtrace/reader.h"

namespace hush::reader::internal {

struct ParsedMetadata {
  Metadata metadata;
  bool has_uuid = false;
  std::array<std::uint8_t, 16> uuid{};  // trace uuid, compared with every packet header's
};

// `file` names the metadata in error messages ("FILE: line L, column C (byte B): ...").
bool ParseMetadata(std::string_view text, const std::string& file, ParsedMetadata* out,
                   std::string* error);

}  // namespace hush::reader::internal

#endif  // HUSHTRACE_SRC_READER_METADATA_PARSER_H_
