// Strings written by the traced program, made safe for the exporters' output formats.
//
// The trace stores strings as the program gave them: any bytes but NUL. JSON needs valid UTF-8
// with `"`, `\` and control characters escaped; protobuf `string` fields need valid UTF-8.
// Invalid UTF-8 (stray continuation bytes, overlong forms, surrogates, code points above
// U+10FFFF, truncated sequences) becomes U+FFFD, one per maximal invalid subpart.
#ifndef HUSHTRACE_SRC_EXPORT_TEXT_ESCAPE_H_
#define HUSHTRACE_SRC_EXPORT_TEXT_ESCAPE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "export/output_buffer.h"

namespace hush::exporter {

// Length of the valid UTF-8 sequence starting at s[i] (1 to 4), or 0 when it is invalid.
std::size_t Utf8SequenceLength(std::string_view s, std::size_t i);

// True when s is valid UTF-8.
bool IsValidUtf8(std::string_view s);

// s with every invalid sequence replaced by U+FFFD.
std::string ToValidUtf8(std::string_view s);

// Appends s as a JSON string literal, quotes included.
void AppendJsonString(OutputBuffer& out, std::string_view s);
std::string JsonString(std::string_view s);

}  // namespace hush::exporter

#endif  // HUSHTRACE_SRC_EXPORT_TEXT_ESCAPE_H_
