// libFuzzer target: the `hushtrace dump --filter` expression parser (tools/hushtrace/
// filter_expr.h) on arbitrary text. Invariants: a refused expression has an error message that
// gives the byte offset; an accepted one can be destroyed (its tree is well formed).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "filter_expr.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  auto expr = hush::cli::FilterExpr::Parse(text, &error);
  if (expr == nullptr && error.empty()) std::abort();
  return 0;
}
