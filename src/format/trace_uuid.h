// The trace UUID of metadata that BuildMetadata (ctf_metadata.h) wrote, read without parsing
// TSDL: what names the directory of the trace's rings outside the trace (ring_location.h), which
// src/recover finds before it reads anything else. The writer writes kTraceBlockPrefix, this
// header finds it, so the two cannot drift; any other CTF metadata gives "".
#ifndef HUSHTRACE_SRC_FORMAT_TRACE_UUID_H_
#define HUSHTRACE_SRC_FORMAT_TRACE_UUID_H_

#include <string>
#include <string_view>

namespace hush::format {

// The start of the trace block, up to its UUID.
inline constexpr char kTraceBlockPrefix[] = "\ntrace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"";

// The 36-character UUID after kTraceBlockPrefix in `text` (8-4-4-4-12 lowercase hex digits, as
// UuidToString writes it), or "".
inline std::string TraceUuidOfMetadata(std::string_view text) {
  const std::size_t at = text.find(kTraceBlockPrefix);
  if (at == std::string_view::npos) return "";
  const std::string_view uuid = text.substr(at + sizeof kTraceBlockPrefix - 1, 36);
  if (uuid.size() != 36) return "";
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    const char c = uuid[i];
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return "";
  }
  return std::string(uuid);
}

}  // namespace hush::format

#endif  // HUSHTRACE_SRC_FORMAT_TRACE_UUID_H_
