// The two pieces of text syntax the runtime and the CLI must read alike, in one place: sizes
// ("256k", "4M") and comma-separated lists ("net:*, io:read"). The CLI checks what the user typed
// with the same functions the traced program later applies to the HUSHTRACE_* variables
// (base/env.h), so a value the CLI accepts is never refused by the program, and the other way.
#ifndef HUSHTRACE_SRC_BASE_PARSE_H_
#define HUSHTRACE_SRC_BASE_PARSE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hush::base {

// Decimal digits with an optional binary suffix: k/K/KiB/kB (2^10), m/M/MiB/MB (2^20),
// g/G/GiB/GB (2^30). False on anything else, and on values above `max` (no overflow).
bool ParseSize(std::string_view text, std::uint64_t max, std::uint64_t* out);

// "500ns", "2us", "1.5ms", "3s" (a unit is required); false on anything else or above 10^18 ns.
bool ParseDurationWithUnit(std::string_view text, std::uint64_t* ns);

// Splits at commas; trims blanks (space, tab, newline) around each item; drops empty items.
std::vector<std::string> SplitList(std::string_view text);

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_PARSE_H_
