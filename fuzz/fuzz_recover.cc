// libFuzzer target: crash recovery (src/recover) of a directory holding a metadata file, a ring
// file left by a dead writer, and the stream file it was writing. Input: metadata, .ring_0
// and stream_0, separated by "\n--8<--\n" (fuzz_util.h). Ring files come from a dead process
// and may be anything: recovery must refuse or repair, never crash, hang or write out of bounds.
// Invariant: a failed recovery says why.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "recover/recover.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string dir = hush::fuzz::ScratchDir() + "/trace";
  hush::fuzz::ResetDir(dir);
  const auto parts = hush::fuzz::SplitParts(data, size, 3);
  hush::fuzz::WriteFile(dir + "/metadata", parts[0]);
  if (parts.size() > 1) hush::fuzz::WriteFile(dir + "/.ring_0", parts[1]);
  if (parts.size() > 2) hush::fuzz::WriteFile(dir + "/stream_0", parts[2]);
  hush::recover::Options options;
  options.force = true;  // the pid in a fuzzed ring header may be a live process
  hush::recover::Report report;
  if (!hush::recover::Recover(dir, options, &report)) {
    bool explained = !report.error.empty();
    for (const auto& ring : report.rings) explained |= !ring.error.empty();
    if (!explained) std::abort();
  }
  hush::fuzz::ResetDir(dir);
  return 0;
}
