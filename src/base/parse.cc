#include "base/parse.h"

#include <cmath>
#include <cstdlib>

namespace hush::base {

bool ParseSize(std::string_view text, std::uint64_t max, std::uint64_t* out) {
  std::size_t i = 0;
  std::uint64_t digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    digits = digits * 10 + static_cast<unsigned>(text[i] - '0');
    if (digits > max) return false;
    ++i;
  }
  if (i == 0) return false;
  const std::string_view suffix = text.substr(i);
  unsigned shift = 0;
  if (suffix.empty()) {
  } else if (suffix == "k" || suffix == "K" || suffix == "KiB" || suffix == "kB") {
    shift = 10;
  } else if (suffix == "m" || suffix == "M" || suffix == "MiB" || suffix == "MB") {
    shift = 20;
  } else if (suffix == "g" || suffix == "G" || suffix == "GiB" || suffix == "GB") {
    shift = 30;
  } else {
    return false;
  }
  if (digits > (max >> shift)) return false;
  *out = digits << shift;
  return true;
}

std::vector<std::string> SplitList(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::size_t b = start, e = end;
    while (b < e && blank(text[b])) ++b;
    while (e > b && blank(text[e - 1])) --e;
    if (e > b) out.emplace_back(text.substr(b, e - b));
    start = end + 1;
  }
  return out;
}

bool ParseDurationWithUnit(std::string_view text, std::uint64_t* ns) {
  std::size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  const std::string_view number = text.substr(0, i);
  if (number.empty() || number == "." || number.find('.') != number.rfind('.')) return false;
  const std::string_view unit = text.substr(i);
  double scale = 0;
  if (unit == "ns") {
    scale = 1;
  } else if (unit == "us") {
    scale = 1e3;
  } else if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "s") {
    scale = 1e9;
  } else {
    return false;
  }
  const double v = std::strtod(std::string(number).c_str(), nullptr) * scale;
  if (!std::isfinite(v) || v < 0 || v > 1e18) return false;
  *ns = static_cast<std::uint64_t>(std::llround(v));
  return true;
}

}  // namespace hush::base
