// hushtrace hist: log-scale histogram of span durations or of a numeric field (docs/reader.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cli_app.h"
#include "commands.h"
#include "export/symbolizer.h"
#include "func_profile.h"
#include "hist/log_histogram.h"
#include "hushtrace/reader.h"
#include "json_writer.h"
#include "open_trace.h"
#include "progress.h"
#include "table.h"

namespace hush::cli {
namespace {

constexpr char kUsage[] =
    "hist [options] DIR --span PROVIDER:NAME\n"
    "       hushtrace hist [options] DIR --event PROVIDER:NAME --field FIELD\n"
    "       hushtrace hist [options] DIR --function NAME";
constexpr char kDescription[] =
    "Prints a log2-scale histogram with count, min/avg/max and p50/p90/p99/p99.9 of the\n"
    "durations of a span, the values of a numeric field of an event, or the durations of the\n"
    "calls of traced functions. Percentiles are within 0.8% of the exact value (exact for\n"
    "integers below 128); count, min, avg and max are exact.";
constexpr char kFooter[] =
    "exit status: 0 ok, 1 unreadable trace, 2 bad arguments (unknown event, field or function),\n"
    "3 partial: a damaged stream was read up to the damage (named on stderr), the others to\n"
    "their end\n";

struct Args {
  std::string dir, span, event, field, function, width, format = "text";
};

// The grammar of `hist`: one line per option.
// clang-format off
void Define(CLI::App& app, Args& a) {
  DescribeCommand(app, "hist", kUsage, kDescription, kFooter);
  app.add_option("DIR", a.dir, "the trace directory")->type_name("");
  app.add_option("--span", a.span, "the durations of a span (HUSH_SPAN), begin to end on each thread")->type_name("NAME");
  app.add_option("-e,--event", a.event, "the values of the numeric field --field of an event")->type_name("NAME");
  app.add_option("--field", a.field, "the field of --event")->type_name("F");
  app.add_option("--function", a.function, "the durations of the calls of the traced functions whose name\nmatches the glob NAME (demangled, with or without parameters;\nnamed as in report), entry to exit on each thread")->type_name("NAME");
  app.add_option("--width", a.width, "width of the longest bar (default 50)")->type_name("N");
  app.add_option("--format", a.format, "text (default), json, or csv: the buckets only, a row each\n(schemas: docs/cli.md)")->type_name("text|json|csv");
}
// clang-format on

int BadArgs(const std::string& message) {
  std::fprintf(stderr, "hushtrace hist: %s\n(see 'hushtrace hist --help')\n", message.c_str());
  return 2;
}

std::string Format(const char* fmt, double v, const char* unit = "") {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v, unit);
  return buf;
}

// ns with a unit (ns, us, ms, s), or a plain number.
std::string Value(double v, bool ns) {
  if (!ns) return Format("%.6g%s", v);
  const double a = std::fabs(v);
  if (a < 1e3) return Format("%.4g %s", v, "ns");
  if (a < 1e6) return Format("%.4g %s", v / 1e3, "us");
  if (a < 1e9) return Format("%.4g %s", v / 1e6, "ms");
  return Format("%.4g %s", v / 1e9, "s");
}

// The rows of the histogram, one per octave: [lower, upper) and count.
Table Buckets(const hist::LogHistogram& h) {
  Table t({"lower", "upper", "count"});
  for (const auto& r : h.Octaves()) t.Row().Double(r.lower).Double(r.upper).Uint(r.count);
  return t;
}

// The histogram as text (summary, then one row per octave), as one JSON object, or as CSV (the
// buckets: a table has one kind of row; the summary is in the other two).
void PrintHist(const hist::LogHistogram& h, const std::string& what, bool ns, int width,
               const std::string& format) {
  const auto rows = h.Octaves();
  if (format == "csv") {
    std::fputs(Buckets(h).Csv().c_str(), stdout);
    return;
  }
  if (format == "json") {
    JsonWriter j;
    j.BeginObject().Key("what").String(what).Key("unit").String(ns ? "ns" : "");
    j.Key("count").Uint(h.count());
    const bool any = h.count() != 0;
    j.Key("min");
    any ? j.Double(h.min()) : j.Null();
    j.Key("avg");
    any ? j.Double(h.mean()) : j.Null();
    j.Key("max");
    any ? j.Double(h.max()) : j.Null();
    j.Key("percentiles").BeginObject();
    static constexpr std::pair<const char*, double> kPercentiles[] = {
        {"p50", 50.0}, {"p90", 90.0}, {"p99", 99.0}, {"p99.9", 99.9}};
    for (const auto& [key, p] : kPercentiles) {
      j.Key(key);
      any ? j.Double(h.Percentile(p)) : j.Null();
    }
    j.EndObject();
    j.Key("buckets");
    Buckets(h).WriteJson(j);
    j.EndObject();
    std::fputs(j.text().c_str(), stdout);
    return;
  }
  std::printf("hushtrace hist: %s, %llu samples\n", what.c_str(),
              static_cast<unsigned long long>(h.count()));
  if (h.count() == 0) return;
  std::printf("  min %s  avg %s  max %s\n", Value(h.min(), ns).c_str(), Value(h.mean(), ns).c_str(),
              Value(h.max(), ns).c_str());
  std::printf("  p50 %s  p90 %s  p99 %s  p99.9 %s\n", Value(h.Percentile(50), ns).c_str(),
              Value(h.Percentile(90), ns).c_str(), Value(h.Percentile(99), ns).c_str(),
              Value(h.Percentile(99.9), ns).c_str());
  std::uint64_t peak = 1;
  for (const auto& r : rows) peak = std::max(peak, r.count);
  std::printf("\n  %-25s %12s\n", "range", "count");
  for (const auto& r : rows) {
    const std::string range = r.lower == 0 && r.upper == 0
                                  ? std::string("0")
                                  : "[" + Value(r.lower, ns) + ", " + Value(r.upper, ns) + ")";
    const auto bar = static_cast<int>(
        std::ceil(static_cast<double>(r.count) * width / static_cast<double>(peak)));
    std::printf("  %-25s %12llu %s\n", range.c_str(), static_cast<unsigned long long>(r.count),
                std::string(static_cast<std::size_t>(bar), '#').c_str());
  }
}

// `hist --function NAME`: durations of the calls of the matching functions (func:entry/exit
// matched per thread, or func:call). NAME matching no traced function is an error (exit 2).
int FunctionHist(const reader::Trace& trace, const std::string& glob, int width,
                 const std::string& format) {
  int entry = -1, exit = -1, call = -1;
  for (const reader::EventClass& ec : trace.metadata().events) {
    if (ec.name == "func:entry") entry = static_cast<int>(ec.index);
    if (ec.name == "func:exit") exit = static_cast<int>(ec.index);
    if (ec.name == "func:call") call = static_cast<int>(ec.index);
  }
  if (entry < 0 && call < 0) {
    return BadArgs("no function events in " + trace.dir() + " (record with --functions)");
  }
  exporter::Symbolizer symbols(trace);
  std::unordered_map<std::uint64_t, bool> matches;  // by address
  auto matching = [&](std::uint64_t addr) {
    auto [it, added] = matches.emplace(addr, false);
    if (added) it->second = FunctionNameMatches(glob, symbols.Resolve(addr));
    return it->second;
  };
  hist::LogHistogram h(/*integer=*/true);
  std::unordered_map<std::uint32_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> open;
  bool seen = false;
  reader::EventIterator it(trace);
  it.SkipDamagedStreams();
  Progress progress(trace, "hist");
  while (it.Next()) {
    const reader::Event& e = it.event();
    progress.Tick(e.timestamp());
    symbols.Observe(e);
    const int ci = static_cast<int>(e.event_class().index);
    if (ci != entry && ci != exit && ci != call) continue;
    const std::uint64_t addr = e.GetUint64("addr").value_or(0);
    if (!matching(addr)) continue;
    seen = true;
    std::uint64_t begin = 0;
    if (ci == entry) {
      open[e.tid()].emplace_back(addr, e.timestamp());
      continue;
    } else if (ci == exit) {
      auto& stack = open[e.tid()];
      std::size_t depth = stack.size();
      while (depth > 0 && stack[depth - 1].first != addr) --depth;
      if (depth == 0) continue;  // its entry was lost
      begin = stack[depth - 1].second;
      stack.resize(depth - 1);
    } else {
      begin = e.GetUint64("entry_ts").value_or(e.timestamp());
    }
    const std::uint64_t end = std::max(begin, e.timestamp());
    h.Add(static_cast<double>(trace.CyclesToNs(static_cast<std::int64_t>(end - begin))));
  }
  progress.Done();
  if (!seen && it.skipped().empty()) {
    return BadArgs("no traced function in " + trace.dir() + " matches '" + glob + "'");
  }
  PrintHist(h, "function " + glob + " call durations", /*ns=*/true, width, format);
  std::fflush(stdout);
  for (const std::string& w : symbols.warnings())
    std::fprintf(stderr, "hushtrace hist: warning: %s\n", w.c_str());
  return ReportSkippedStreams(it, "hushtrace hist");
}

}  // namespace

void DescribeHist(CLI::App& app) { DescribeWith(app, Define); }

int RunHist(int argc, char** argv) {
  Args args;
  CLI::App app;
  Define(app, args);
  if (const int status = ParseCommand(app, argc, argv); status >= 0) return status;
  const std::string &dir = args.dir, &span = args.span, &event = args.event, &field = args.field,
                    &function = args.function;
  if (app.count("--span") && span.empty()) return BadArgs("--span needs PROVIDER:NAME");
  if (app.count("--event") && event.empty()) return BadArgs("--event needs PROVIDER:NAME");
  if (app.count("--function") && function.empty()) return BadArgs("--function needs a NAME");
  if (app.count("--field") && field.empty()) return BadArgs("--field needs a field name");
  const std::string& format = args.format;
  if (format != "text" && format != "json" && format != "csv") {
    return BadArgs("--format needs text, json or csv");
  }
  int width = 50;
  if (app.count("--width")) {
    const std::string& w = args.width;
    if (w.empty() || w.find_first_not_of("0123456789") != std::string::npos || w.size() > 4) {
      return BadArgs("--width needs a number");
    }
    width = std::max(1, std::stoi(w));
  }
  if (dir.empty()) return BadArgs("missing the trace directory DIR");
  if (!span.empty() + !event.empty() + !function.empty() != 1)
    return BadArgs("give one of --span NAME, --event NAME --field F, --function NAME");
  if (!event.empty() && field.empty()) return BadArgs("--event needs --field F");
  if (!span.empty() && !field.empty()) return BadArgs("--field goes with --event, not --span");

  std::string error;
  std::unique_ptr<reader::Trace> trace = OpenTraceRecovering(dir, "hushtrace hist", &error);
  if (!trace) {
    std::fprintf(stderr, "hushtrace hist: %s\n", error.c_str());
    return 1;
  }
  if (!function.empty()) return FunctionHist(*trace, function, width, format);
  const std::string& wanted = span.empty() ? event : span;
  const reader::EventClass* cls = nullptr;
  for (const reader::EventClass& ec : trace->metadata().events) {
    if (ec.name == wanted) cls = &ec;
  }
  if (cls == nullptr) return BadArgs("no event '" + wanted + "' in the trace's metadata");
  int field_index = -1;
  if (!span.empty()) {
    field_index = cls->FieldIndex("phase");
    if (cls->kind != reader::EventKind::kSpan || field_index < 0)
      return BadArgs("'" + span + "' is not a span");
  } else {
    field_index = cls->FieldIndex(field);
    if (field_index < 0) return BadArgs("event '" + event + "' has no field '" + field + "'");
    const reader::FieldType t = cls->fields[static_cast<std::size_t>(field_index)].type;
    if (t == reader::FieldType::kString || t == reader::FieldType::kBytes) {
      return BadArgs("field '" + field + "' is not numeric");
    }
  }
  const auto fi = static_cast<std::size_t>(field_index);
  const bool integer = !span.empty() || cls->fields[fi].type != reader::FieldType::kFloat;
  hist::LogHistogram h(integer);
  std::unordered_map<std::uint32_t, std::vector<std::uint64_t>> open;  // tid -> begin timestamps
  std::uint64_t unmatched = 0;

  reader::EventIterator it(*trace);
  it.SkipDamagedStreams();
  Progress progress(*trace, "hist");
  while (it.Next()) {
    const reader::Event& e = it.event();
    progress.Tick(e.timestamp());
    if (&e.event_class() != cls) continue;
    const reader::FieldValue v = e.field(fi);
    if (span.empty()) {
      h.Add(v.type() == reader::FieldType::kUnsigned ? static_cast<double>(v.AsUint64())
                                                     : v.AsDouble());
      continue;
    }
    std::vector<std::uint64_t>& stack = open[e.tid()];
    if (v.AsUint64() == 0) {
      stack.push_back(e.timestamp());
    } else if (stack.empty()) {
      ++unmatched;
    } else {
      const std::uint64_t begin = stack.back();
      stack.pop_back();
      h.Add(
          static_cast<double>(trace->CyclesToNs(static_cast<std::int64_t>(e.timestamp() - begin))));
    }
  }
  progress.Done();
  std::uint64_t unclosed = 0;
  for (const auto& [tid, stack] : open) unclosed += stack.size();

  const bool ns = !span.empty();
  PrintHist(h, wanted + (ns ? " span durations" : " field " + field), ns, width, format);
  if (format == "text" && (unmatched != 0 || unclosed != 0)) {
    std::printf(
        "  (%llu span ends without a begin, %llu spans still open at the end: not counted)\n",
        static_cast<unsigned long long>(unmatched), static_cast<unsigned long long>(unclosed));
  }
  std::fflush(stdout);
  for (const std::string& w : trace->warnings())
    std::fprintf(stderr, "hushtrace hist: warning: %s\n", w.c_str());
  return ReportSkippedStreams(it, "hushtrace hist");
}

}  // namespace hush::cli
