// Positive control of the compile tests: every supported field type with the argument types a
// user would pass must compile without any diagnostic (-Wall -Wextra -Werror).
#include <hushtrace/hushtrace.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

enum class Color : std::int16_t { kRed = -1, kBlue = 7 };
enum Plain : unsigned { kPlainA = 1 };

HUSH_TRACEPOINT(good, ints, (std::int8_t, a), (std::int16_t, b), (std::int32_t, c),
                (std::int64_t, d), (std::uint8_t, e), (std::uint16_t, f), (std::uint32_t, g),
                (std::uint64_t, h))
HUSH_TRACEPOINT(good, misc, (bool, ok), (Color, color), (Plain, plain), (float, f), (double, d))
HUSH_TRACEPOINT(good, text, (const char*, c), (std::string_view, sv), (std::string, s))
HUSH_TRACEPOINT(good, blob, (std::span<const std::byte>, data))
HUSH_TRACEPOINT(good, empty)

void Emit(int n, long long big, unsigned char uc, const std::string& s, char* mutable_text,
          const std::vector<std::byte>& bytes) {
  HUSH_TRACE(good, ints, static_cast<std::int8_t>(n), n, n, big, uc, 1, n, big);
  HUSH_TRACE(good, misc, n > 0, Color::kBlue, kPlainA, 1.5f, 2.5);
  HUSH_TRACE(good, misc, true, Color::kRed, kPlainA, 3, 2.5f);
  HUSH_TRACE(good, text, "literal", s, s);
  HUSH_TRACE(good, text, mutable_text, std::string_view("sv"), "literal");
  HUSH_TRACE(good, blob, std::span<const std::byte>(bytes));
  HUSH_TRACE(good, blob, bytes);
  HUSH_TRACE(good, empty);
  HUSH_SPAN(good, scope);
  HUSH_INSTANT(good, now);
  HUSH_COUNTER(good, depth, n);
  HUSH_COUNTER(good, ratio, 0.5);
}

int main() {
  char text[] = "mutable";
  Emit(1, 2, 3, "s", text, std::vector<std::byte>(4));
  return 0;
}
