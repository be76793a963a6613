// libFuzzer target: the filter language's parser (src/filter/filter.h) through the read-side
// back end (`hushtrace dump --filter`, tools/hushtrace/filter_expr.h) on arbitrary text.
// Invariants: a refused expression has an error message and a column inside the text (or one
// past it); an accepted one binds to a lenient layout without failing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "filter/bind.h"
#include "filter/filter.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hush::filter::Error error;
  auto parsed = hush::filter::Parse(text, &error);
  if (parsed == nullptr) {
    if (error.what.empty() || error.column < 1 || error.column > text.size() + 1) std::abort();
    return 0;
  }
  hush::filter::Layout layout;  // the reader's binding, over fields of every class
  layout.strict = false;
  layout.thread_values = true;
  layout.fields = {{"a", hush::filter::FieldClass::kNumber}, {"s", hush::filter::FieldClass::kString},
                   {"l", hush::filter::FieldClass::kLabelled}, {"b", hush::filter::FieldClass::kBytes}};
  hush::filter::Code code;
  if (!hush::filter::Bind(*parsed, layout, &code, &error)) std::abort();
  return 0;
}
