// Names of the files of a trace directory that its writers and readers share (docs/format.md):
// the numbered stream_<N> and .ring_<N>, and the crash marker.
// The one place they are spelled: writers build them with StreamName/RingName, readers parse
// them with ParseNumberedName; N is the ring's index, shared by the pair.
#ifndef HUSHTRACE_SRC_FORMAT_NUMBERED_NAME_H_
#define HUSHTRACE_SRC_FORMAT_NUMBERED_NAME_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace hush::format {

inline constexpr std::string_view kStreamPrefix = "stream_";
// Hidden (a leading dot): CTF readers skip it, babeltrace2 included. Traces written before the
// rings moved out of their own directory hold them as .ring/ring_<N> (kLegacyRingDir,
// kLegacyRingPrefix), which src/recover still reads.
inline constexpr std::string_view kRingPrefix = ".ring_";
inline constexpr std::string_view kLegacyRingDir = ".ring";
inline constexpr std::string_view kLegacyRingPrefix = "ring_";
// The crash marker a fatal signal leaves (src/session/crash_handler.h), in the trace directory;
// earlier versions left it as .ring/crashed.
inline constexpr char kCrashMarker[] = ".crashed";
inline constexpr char kLegacyCrashMarker[] = "crashed";

// "stream_<index>" and ".ring_<index>", both in the trace directory.
inline std::string StreamName(std::uint64_t index) {
  return std::string(kStreamPrefix) + std::to_string(index);
}
inline std::string RingName(std::uint64_t index) {
  return std::string(kRingPrefix) + std::to_string(index);
}

// Whether `name` is `prefix` followed by 1 to 9 decimal digits; sets *index to their value.
inline bool ParseNumberedName(std::string_view name, std::string_view prefix, std::uint32_t* index) {
  if (name.substr(0, prefix.size()) != prefix) return false;
  const std::string_view digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 9) return false;
  std::uint32_t v = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint32_t>(c - '0');
  }
  *index = v;
  return true;
}

}  // namespace hush::format

#endif  // HUSHTRACE_SRC_FORMAT_NUMBERED_NAME_H_
