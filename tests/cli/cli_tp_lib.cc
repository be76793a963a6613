// The shared library of the cli tests (cli_tplib), with tracepoints of its own.
#include "cli_tp_lib.h"

#include <hushtrace/hushtrace.h>

#include <cstdint>
#include <string_view>

HUSH_TRACEPOINT(clilib, call, (std::uint64_t, n), (std::string_view, tag))

int CliLibWork(int n) {
  HUSH_SPAN(clilib, work);
  int sum = 0;
  for (int i = 0; i < n; ++i) {
    HUSH_TRACE(clilib, call, static_cast<std::uint64_t>(i), std::string_view("lib"));
    sum += i;
  }
  HUSH_COUNTER(clilib, depth, static_cast<double>(n));
  return sum;
}
