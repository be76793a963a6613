// libFuzzer target: the session field filter (src/filter), as `--filter` / HUSHTRACE_FILTER / a
// control request hand it to a traced process, evaluated in the emitting thread. Input: the
// expression, then an event payload, separated by "\n--8<--\n" (fuzz_util.h). The payload is
// matched against a fixed layout of every field type (a string and a byte sequence included,
// so the decoder walks variable-size fields of any length the input claims).
// Invariants: a refused expression says where ("column N"); Matches() never reads outside the
// payload (ASan) and never crashes on a payload that does not decode.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "filter/filter.h"
#include "filter/program.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts = hush::fuzz::SplitParts(data, size, 2);
  const std::string text(parts[0]);
  hush::filter::Error error;
  const auto parsed = hush::filter::Parse(text, &error);
  if (!parsed) {
    if (error.Message().rfind("column ", 0) != 0) std::abort();
    return 0;
  }
  static const std::vector<std::string> kNames = {"a", "b", "c", "d", "e", "f", "s", "x", "y", "z"};
  static const std::vector<std::string> kTypes = {"i8",  "u16", "i32", "u64",  "f32",
                                                  "f64", "str", "u8",  "bytes", "i64"};
  const auto program = hush::filter::Program::Bind(*parsed, "fuzz:event", kNames, kTypes, &error);
  if (!program) {
    if (error.what.empty()) std::abort();
    return 0;
  }
  if (parts.size() > 1) {
    // A heap copy of exactly the payload's size, so that ASan sees any read past its end.
    std::vector<char> payload(parts[1].begin(), parts[1].end());
    static volatile bool sink;
    sink = program->Matches(payload.data(), payload.size());
  }
  return 0;
}
