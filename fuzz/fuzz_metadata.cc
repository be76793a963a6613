// libFuzzer target: the TSDL metadata parser (src/reader/metadata_parser.h) on arbitrary text.
// Invariant checked beyond "no crash, no hang, no unbounded allocation": a refused input always
// comes with a message that names the file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "reader/metadata_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  hush::reader::internal::ParsedMetadata parsed;
  std::string error;
  if (!hush::reader::internal::ParseMetadata(text, "metadata", &parsed, &error)) {
    if (error.rfind("metadata", 0) != 0) std::abort();  // every error names the file
  }
  return 0;
}
