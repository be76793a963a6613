// Writes the CTF 1.8 TSDL metadata of a trace (docs/format.md, section 2).
#ifndef HUSHTRACE_SRC_FORMAT_CTF_METADATA_H_
#define HUSHTRACE_SRC_FORMAT_CTF_METADATA_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "clock/clock.h"
#include "registry/registry.h"

namespace hush::format {

struct TraceInfo {
  std::uint8_t uuid[16] = {};
  // The clock's UUID; all zero: the trace's. The traces of one `hushtrace record` (exec'd
  // programs, docs/format.md) share their root's so that CTF readers correlate their clocks.
  std::uint8_t clock_uuid[16] = {};
  std::uint32_t pid = 0;
  std::string procname;
  std::string hostname;
  std::string mode;  // "stream" | "flight"
  std::uint64_t buffer_size = 0;  // each thread's ring (the session's buffer size); 0: not written
  clock::Calibration clock;
  // Known at stop only; written to the env block when not 0 (docs/format.md): losses that are
  // not the ring's, so that `record` names their cause rather than the buffer size.
  std::uint64_t events_lost_on_write = 0;   // the stream file could not be written (disk full...)
  std::uint64_t events_without_buffer = 0;  // no ring for the thread (its file not created...)
  // More env entries, after the others: a triggered snapshot's hushtrace_snapshot_* (docs/format.md,
  // "Snapshots"). Strings are quoted; numbers written in decimal.
  std::vector<std::pair<std::string, std::string>> env_strings;
  std::vector<std::pair<std::string, std::uint64_t>> env_numbers;
};

std::string UuidToString(const std::uint8_t uuid[16]);
std::string BuildMetadata(const TraceInfo& info, const std::vector<const registry::Event*>& events);
// The same text, written over *out, whose capacity is kept: a session that rewrites its
// metadata (the refined clock, the loss counts) builds every copy in one buffer, so a rewrite at
// a short program's exit takes no fresh heap page (each costs a page fault: base/anon_mapping.h).
// Reserves kMetadataReserve up front: the text of a program with a few dozen event classes, and
// its padding (core.cc, WriteMetadata), grow no buffer through its doublings.
inline constexpr std::size_t kMetadataReserve = 8192;
void BuildMetadata(const TraceInfo& info, const std::vector<const registry::Event*>& events, std::string* out);

// The clock UUID of metadata BuildMetadata() wrote ("" if `text` is not such metadata): what an
// exec'd program of a followed trace inherits (docs/format.md, "Processes"). Reads only what the
// writer above writes, in the same file, so the two cannot drift; the tools read any CTF metadata
// with the reader library instead.
std::string ClockUuidOfMetadata(const std::string& text);
// Parses a 36-character UUID string; false if it is not one.
bool UuidFromString(const std::string& text, std::uint8_t out[16]);

}  // namespace hush::format

#endif  // HUSHTRACE_SRC_FORMAT_CTF_METADATA_H_
