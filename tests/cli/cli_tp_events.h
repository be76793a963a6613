// Tracepoints of the `hushtrace list` / `hushtrace record` test programs (cli_tp_*). The tests
// find the expected source lines by searching this file for the HUSH_TRACEPOINT lines.
#ifndef HUSHTRACE_TESTS_CLI_CLI_TP_EVENTS_H_
#define HUSHTRACE_TESTS_CLI_CLI_TP_EVENTS_H_

#include <hushtrace/hushtrace.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

enum class CliColor : std::uint16_t { kRed = 1, kBlue = 2 };

HUSH_TRACEPOINT(cliprog, start, (std::int32_t, argc), (const char*, arg0))
HUSH_TRACEPOINT(cliprog, values, (std::int8_t, a), (std::int16_t, b), (std::int32_t, c),
                (std::int64_t, d), (std::uint8_t, e), (std::uint16_t, f), (std::uint32_t, g),
                (std::uint64_t, h), (bool, flag), (float, ratio), (double, mean), (CliColor, color))
HUSH_TRACEPOINT(cliprog, text, (std::string_view, view), (std::string, owned))
HUSH_TRACEPOINT(cliprog, blob, (std::span<const std::byte>, data))
HUSH_TRACEPOINT(cliprog, empty)

// Used by both translation units of the program: one tracepoint, one location, several sites.
inline void CliInlineHelper() { HUSH_INSTANT(cliprog, inline_helper); }

// Defined in cli_tp_prog2.cc.
void CliSecondUnit(int argc, const char* arg0);

#endif  // HUSHTRACE_TESTS_CLI_CLI_TP_EVENTS_H_
