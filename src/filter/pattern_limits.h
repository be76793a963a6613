// Limits on the event patterns a session is given (SessionOptions::events and ::snapshot_on):
// they come from the environment, the command line and the control socket, and every pattern is
// matched (fnmatch) against every event name on each Enable. Checked by Core::Start and, before
// the program runs, by `hushtrace record`.
#ifndef HUSHTRACE_SRC_FILTER_PATTERN_LIMITS_H_
#define HUSHTRACE_SRC_FILTER_PATTERN_LIMITS_H_

#include <cstddef>
#include <string>
#include <vector>

namespace hush::filter {

inline constexpr std::size_t kMaxPatternBytes = 256;
inline constexpr std::size_t kMaxPatterns = 1024;

// False and *error ("WHAT pattern N is L bytes long (at most 256)", N 1-based) when a list breaks
// a limit.
inline bool CheckPatterns(const std::vector<std::string>& patterns, const std::string& what,
                          std::string* error) {
  if (patterns.size() > kMaxPatterns) {
    *error = std::to_string(patterns.size()) + " " + what + " patterns (at most " +
             std::to_string(kMaxPatterns) + ")";
    return false;
  }
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    if (patterns[i].size() > kMaxPatternBytes) {
      *error = what + " pattern " + std::to_string(i + 1) + " is " +
               std::to_string(patterns[i].size()) + " bytes long (at most " +
               std::to_string(kMaxPatternBytes) + ")";
      return false;
    }
  }
  return true;
}

}  // namespace hush::filter

#endif  // HUSHTRACE_SRC_FILTER_PATTERN_LIMITS_H_
