// libFuzzer target: a whole trace directory through the reader library (metadata parser, packet
// header checks, stream decoder, k-way merge, field access). Input: metadata, then stream_0 and
// stream_1, separated by "\n--8<--\n" (fuzz_util.h).
// Invariants beyond "no crash, no hang": a refused trace or a stopped iteration says why.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "hushtrace/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string dir = hush::fuzz::ScratchDir() + "/trace";
  hush::fuzz::ResetDir(dir);
  const auto parts = hush::fuzz::SplitParts(data, size, 3);
  hush::fuzz::WriteFile(dir + "/metadata", parts[0]);
  for (std::size_t i = 1; i < parts.size(); ++i) {
    hush::fuzz::WriteFile(dir + "/stream_" + std::to_string(i - 1), parts[i]);
  }
  std::string error;
  auto trace = hush::reader::Trace::Open(dir, &error);
  if (trace == nullptr) {
    if (error.empty()) std::abort();
    return 0;
  }
  hush::reader::EventIterator it(*trace);
  std::uint64_t checksum = 0;
  while (it.Next()) {
    const hush::reader::Event& e = it.event();
    checksum += e.name().size();
    for (std::size_t i = 0; i < e.field_count(); ++i) {
      const hush::reader::FieldValue v = e.field(i);
      checksum += static_cast<std::uint64_t>(v.AsInt64()) + v.AsString().size() +
                  static_cast<std::uint64_t>(v.AsDouble() != 0);
    }
  }
  if (!it.error().empty() && it.error().find(dir) == std::string::npos &&
      it.error().find("stream_") == std::string::npos) {
    std::abort();  // an iteration error names the stream file
  }
  static volatile std::uint64_t sink;
  sink = checksum;  // keeps the field reads
  return 0;
}
