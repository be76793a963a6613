// Snapshot trigger patterns (SessionOptions::snapshot_on, `--snapshot-on`, HUSHTRACE_SNAPSHOT_ON,
// the control socket's snapshot-on): one syntax, parsed by the CLI before the program runs and by
// the runtime when a session starts.
//
//   pattern   := glob                      any event matching glob fires
//              | glob '>' duration         a span matching glob fires when it ends after lasting
//                                          longer than duration (number + ns|us|ms|s: 50ms, 1.5us)
//              | glob '>' 'p' percent      ... longer than the running estimate of that percentile
//                                          of its durations (p99.9: session/quantile_threshold.h);
//                                          percent from 50 to 99.99
//              | glob '[' filter ']'       an event matching glob fires when the field filter
//                                          (filter.h) holds on its payload: net:recv[bytes > 1000]
//              | 'func:' fglob '>' duration
//              | 'func:' fglob '>' 'p' percent
//                                          function calls (`--functions`): a traced call of a
//                                          function matching fglob fires when it returns after
//                                          lasting longer than the threshold (func:work>5ms)
//   glob      := fnmatch pattern over "provider:name", without '>' or '['
//   fglob     := fnmatch pattern over a function's names, as `--functions` matches them: the
//                mangled name, the demangled name, the demangled name without its parameters
//                (func:parse*, 'func:db::Query*', func:_ZN2db5QueryEv). The text is cut at its
//                LAST '>', so template arguments may be spelled out (func:f<int>>1ms)
//
// Blanks around the parts are ignored. A duration on "func:..." always means function calls:
// func:entry / func:exit are not spans, so no span trigger is spelled that way. The glob's meaning
// (which events, whether they are spans, whether they have the filter's fields) is checked by the
// session against the program's events; a function glob is matched by functrace when it patches
// entries (functions that are traced and match are "marked": docs/architecture.md, "Function
// triggers").
#ifndef HUSHTRACE_SRC_FILTER_TRIGGER_SPEC_H_
#define HUSHTRACE_SRC_FILTER_TRIGGER_SPEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hush::filter {

struct TriggerSpec {
  enum class Kind : std::uint8_t { kEvent, kDuration, kField };
  std::string text;  // the pattern as given
  std::string glob;
  Kind kind = Kind::kEvent;
  std::uint64_t threshold_ns = 0;  // kDuration with a fixed threshold
  double quantile = 0;             // kDuration with an adaptive one: 0.999 for p99.9; else 0
  std::string condition;           // kField: the filter expression
  // kDuration on function calls: fglob ("func:" removed, never empty); empty for spans.
  std::string function;
};

// False and *error ("snapshot-on 'TEXT': what is wrong") when `text` does not parse.
bool ParseTrigger(std::string_view text, TriggerSpec* out, std::string* error);
// Every pattern of `patterns`, in order; false at the first that does not parse.
bool ParseTriggers(const std::vector<std::string>& patterns, std::vector<TriggerSpec>* out,
                   std::string* error);

}  // namespace hush::filter

#endif  // HUSHTRACE_SRC_FILTER_TRIGGER_SPEC_H_
