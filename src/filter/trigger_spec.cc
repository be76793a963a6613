// See trigger_spec.h.
#include "filter/trigger_spec.h"

#include <cstdlib>

#include "base/parse.h"
#include "filter/filter.h"
#include "filter/program.h"

namespace hush::filter {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool ParseTrigger(std::string_view text, TriggerSpec* out, std::string* error) {
  TriggerSpec spec;
  spec.text = std::string(text);
  const auto fail = [&](const std::string& why) {
    *error = "snapshot-on '" + spec.text + "': " + why;
    return false;
  };
  std::size_t cut = text.find_first_of(">[");
  // func:NAME>D: the last '>' (a demangled name may hold some); a field condition keeps the first.
  const bool function = Trim(text).substr(0, 5) == "func:";
  if (function && cut != std::string_view::npos && text[cut] == '>') cut = text.rfind('>');
  spec.glob = std::string(Trim(text.substr(0, cut)));
  if (spec.glob.empty()) return fail("no event pattern before '>' or '['");
  if (cut == std::string_view::npos) {
    *out = std::move(spec);
    return true;
  }
  std::string_view rest = Trim(text.substr(cut + 1));
  if (text[cut] == '>') {
    spec.kind = TriggerSpec::Kind::kDuration;
    if (function) {
      spec.function = std::string(Trim(std::string_view(spec.glob).substr(5)));
      if (spec.function.empty()) return fail("no function pattern after 'func:'");
    }
    if (!rest.empty() && rest.front() == 'p') {
      // p99.9: at most two decimals, 50 <= percent <= 99.99 (warm-up grows as 10 / (1 - q)).
      const std::string_view digits = rest.substr(1);
      const std::size_t dot = digits.find('.');
      const bool well_formed =
          !digits.empty() && digits.find_first_not_of("0123456789.") == std::string_view::npos &&
          digits.front() != '.' && digits.back() != '.' &&
          (dot == std::string_view::npos || (digits.find('.', dot + 1) == std::string_view::npos &&
                                             digits.size() - dot - 1 <= 2));
      const double percent = well_formed ? std::strtod(std::string(digits).c_str(), nullptr) : -1;
      if (!(percent >= 50 && percent <= 99.99)) {
        return fail("'" + std::string(rest) +
                    "' is not a percentile threshold (p50 to p99.99, e.g. p99.9)");
      }
      spec.quantile = percent / 100;
      *out = std::move(spec);
      return true;
    }
    if (!base::ParseDurationWithUnit(rest, &spec.threshold_ns)) {
      return fail("'" + std::string(rest) +
                  "' is not a duration (a number and a unit: ns, us, ms or s, e.g. 50ms)");
    }
  } else {
    spec.kind = TriggerSpec::Kind::kField;
    if (rest.empty() || rest.back() != ']') return fail("the field condition has no closing ']'");
    rest.remove_suffix(1);
    spec.condition = std::string(Trim(rest));
    Error parse_error;
    const std::unique_ptr<Parsed> parsed = Parse(spec.condition, &parse_error);
    if (parsed == nullptr || !Program::Check(*parsed, &parse_error)) {
      return fail("bad field condition, " + Describe(spec.condition, parse_error));
    }
  }
  *out = std::move(spec);
  return true;
}

bool ParseTriggers(const std::vector<std::string>& patterns, std::vector<TriggerSpec>* out,
                   std::string* error) {
  out->clear();
  for (const std::string& p : patterns) {
    TriggerSpec spec;
    if (!ParseTrigger(p, &spec, error)) return false;
    out->push_back(std::move(spec));
  }
  return true;
}

}  // namespace hush::filter
