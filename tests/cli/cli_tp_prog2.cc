// Second translation unit of the cli_tp_* programs: the same tracepoint from another unit.
#include "cli_tp_events.h"

void CliSecondUnit(int argc, const char* arg0) {
  HUSH_TRACE(cliprog, start, static_cast<std::int32_t>(argc), arg0);
  CliInlineHelper();
}
