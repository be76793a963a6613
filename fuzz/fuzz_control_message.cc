// libFuzzer target: the decoder of live-control requests (src/control/protocol.h), the first
// code that sees bytes another process wrote to the control socket. Invariants: a refused
// message says why; an accepted one re-encodes to itself (the format is canonical).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "control/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string first, error;
  hush::control::Fields fields;
  if (!hush::control::DecodeMessage(text, &first, &fields, &error)) {
    if (error.empty()) std::abort();
    return 0;
  }
  if (hush::control::EncodeMessage(first, fields) != text) std::abort();
  return 0;
}
