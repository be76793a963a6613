// hushtrace dump: one line per event, in time order (format: docs/reader.md).
//
//   [  1.234567890] tid 1234 demo:request worker=0 request_id=7 path="/index.html"
//
// Lines are built in a large buffer with std::to_chars and written with fwrite.
#include <fnmatch.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli_app.h"
#include "commands.h"
#include "export/symbolizer.h"
#include "export/timeline.h"
#include "filter_expr.h"
#include "hushtrace/reader.h"
#include "json_writer.h"
#include "open_trace.h"
#include "progress.h"

namespace hush::cli {
namespace {

constexpr char kUsage[] = "dump DIR [options]";
constexpr char kDescription[] =
    "Prints the events of the trace in DIR, one line each, in time order:\n"
    "  [  1.234567890] tid 1234 demo:request worker=0 request_id=7 path=\"/index.html\"\n"
    "Function events end with func=\"NAME\": the function at addr, named as in report.";
constexpr char kFooter[] =
    "T: a number of seconds, or with a unit: 1.5s 250ms 40us 1200ns\n"
    "\n"
    "exit status: 0 ok, 1 unreadable trace, 2 bad arguments, 3 partial: a damaged stream was\n"
    "read up to the damage (named on stderr), the other streams to their end\n";

struct Args {
  std::string dir;
  std::vector<std::string> globs;
  std::vector<std::string> filter;
  std::string since, until, format = "text";
  bool absolute = false;
};

// The grammar of `dump`: one line per option.
// clang-format off
void Define(CLI::App& app, Args& a) {
  DescribeCommand(app, "dump", kUsage, kDescription, kFooter);
  app.add_option("DIR", a.dir, "the trace directory")->type_name("");
  AddList(app, "-e,--event,--events", a.globs, "only events whose provider:name matches GLOB (repeatable; * ? [...]);\na GLOB matching no event of the trace's metadata is an error")->type_name("GLOB");
  AddList(app, "--filter", a.filter, "only events for which EXPR holds, e.g. 'status >= 500 && path ~ \"/api*\"'\n(== != < <= > >= ~, && || ! ( ); $name $tid $thread; the filter language:\ndocs/cli.md, Filters)")->type_name("EXPR");
  app.add_option("--since", a.since, "only events at or after T, relative to the first event of the trace")->type_name("T");
  app.add_option("--until", a.until, "only events at or before T (same origin)")->type_name("T");
  app.add_flag("--absolute", a.absolute, "print seconds since the epoch instead of since the first event");
  app.add_option("--format", a.format, "text (default) or json: one JSON object per line (JSON Lines) with\nts_ns (since the first event), epoch_ns, tid, name, fields and, for\nfunction events, func (schema: docs/cli.md)")->type_name("FMT");
}
// clang-format on

constexpr std::size_t kFlushAt = 1 << 20;

class Output {
 public:
  Output() { buf_.reserve(kFlushAt + 4096); }
  void Put(char c) { buf_.push_back(c); }
  void Put(std::string_view s) { buf_.append(s); }
  template <typename T>
  void Number(T v) {
    char tmp[64];
    const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
  }
  // Unsigned, right-aligned in `width` columns.
  void Padded(std::uint64_t v, int width) {
    char tmp[32];
    const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    for (int n = static_cast<int>(r.ptr - tmp); n < width; ++n) buf_.push_back(' ');
    buf_.append(tmp, r.ptr);
  }
  void Nanos9(std::uint64_t v) {  // 9 digits, zero-padded
    char tmp[9];
    for (int i = 8; i >= 0; --i, v /= 10) tmp[i] = static_cast<char>('0' + v % 10);
    buf_.append(tmp, 9);
  }
  void Quoted(std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    buf_.push_back('"');
    std::size_t run = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') continue;
      buf_.append(s.data() + run, i - run);
      run = i + 1;
      if (c == '"' || c == '\\') {
        buf_.push_back('\\');
        buf_.push_back(static_cast<char>(c));
      } else {
        const char esc[4] = {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
        buf_.append(esc, 4);
      }
    }
    buf_.append(s.data() + run, s.size() - run);
    buf_.push_back('"');
  }
  void Hex(std::span<const std::uint8_t> bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    buf_.push_back('<');
    for (std::uint8_t b : bytes) {
      buf_.push_back(kHex[b >> 4]);
      buf_.push_back(kHex[b & 15]);
    }
    buf_.push_back('>');
  }
  bool MaybeFlush() { return buf_.size() < kFlushAt || Flush(); }
  bool Flush() {
    const bool ok = buf_.empty() || std::fwrite(buf_.data(), 1, buf_.size(), stdout) == buf_.size();
    buf_.clear();
    return ok && std::fflush(stdout) == 0;
  }

 private:
  std::string buf_;
};

void PutField(Output& out, const reader::FieldValue& v) {
  using reader::FieldType;
  switch (v.type()) {
    case FieldType::kSigned: out.Number(v.AsInt64()); break;
    case FieldType::kUnsigned: out.Number(v.AsUint64()); break;
    case FieldType::kBool: {
      const std::uint64_t b = v.AsUint64();
      if (b <= 1) out.Put(b ? "true" : "false");
      else out.Number(b);
      break;
    }
    case FieldType::kEnum: {
      const std::int64_t n = v.AsInt64();
      const std::string_view label = v.info().LabelFor(n);
      if (!label.empty()) {
        out.Put(label);
      } else if (v.info().is_signed) {
        out.Number(n);
      } else {
        out.Number(v.AsUint64());
      }
      break;
    }
    case FieldType::kFloat:
      if (v.info().size == 4) {
        out.Number(static_cast<float>(v.AsDouble()));
      } else {
        out.Number(v.AsDouble());
      }
      break;
    case FieldType::kString: out.Quoted(v.AsString()); break;
    case FieldType::kBytes: out.Hex(v.AsBytes()); break;
  }
}

// One event as a line of JSON: {"ts_ns":..,"epoch_ns":..,"tid":..,"name":"p:n","fields":{..}}
// plus "func":"name" for function events. Enums are their label (or number), bytes a hex string,
// floats that are not finite null.
void PutJsonEvent(Output& out, const reader::Event& e, std::int64_t rel, std::int64_t ns,
                  const std::string& func) {
  JsonWriter j;
  j.BeginObject().Key("ts_ns").Int(rel).Key("epoch_ns").Int(ns).Key("tid").Uint(e.tid());
  j.Key("name").String(e.name()).Key("fields").BeginObject();
  using reader::FieldType;
  for (std::size_t i = 0; i < e.field_count(); ++i) {
    const reader::FieldValue v = e.field(i);
    if (v.info().hidden) continue;
    j.Key(v.info().name);
    switch (v.type()) {
      case FieldType::kSigned:
        j.Int(v.AsInt64());
        break;
      case FieldType::kUnsigned:
        j.Uint(v.AsUint64());
        break;
      case FieldType::kBool:
        if (v.AsUint64() <= 1)
          j.Bool(v.AsUint64() == 1);
        else
          j.Uint(v.AsUint64());
        break;
      case FieldType::kEnum: {
        const std::string_view label = v.info().LabelFor(v.AsInt64());
        if (!label.empty())
          j.String(label);
        else if (v.info().is_signed)
          j.Int(v.AsInt64());
        else
          j.Uint(v.AsUint64());
        break;
      }
      case FieldType::kFloat:
        j.Double(v.AsDouble());
        break;
      case FieldType::kString:
        j.String(v.AsString());
        break;
      case FieldType::kBytes: {
        static constexpr char kHex[] = "0123456789abcdef";
        std::string hex;
        for (std::uint8_t b : v.AsBytes()) hex += {kHex[b >> 4], kHex[b & 15]};
        j.String(hex);
        break;
      }
    }
  }
  j.EndObject();
  if (!func.empty()) j.Key("func").String(func);
  j.EndObject();
  out.Put(j.text());  // ends with '\n'
}

// "1.5", "250ms", "40us", "1200ns", "2s" -> ns. False on bad input.
bool ParseTime(std::string_view s, std::int64_t* ns) {
  std::size_t i = 0;
  std::int64_t whole = 0, frac = 0, frac_scale = 1;
  bool digits = false;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, digits = true) {
    if (whole > 1'000'000'000'000LL) return false;
    whole = whole * 10 + (s[i] - '0');
  }
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, digits = true) {
      if (frac_scale < 1'000'000'000'000LL) {
        frac = frac * 10 + (s[i] - '0');
        frac_scale *= 10;
      }
    }
  }
  if (!digits) return false;
  const std::string_view unit = s.substr(i);
  std::int64_t mult;
  if (unit.empty() || unit == "s") mult = 1'000'000'000;
  else if (unit == "ms") mult = 1'000'000;
  else if (unit == "us") mult = 1'000;
  else if (unit == "ns") mult = 1;
  else return false;
  const __int128 total = static_cast<__int128>(whole) * mult + static_cast<__int128>(frac) * mult / frac_scale;
  if (total > INT64_MAX) return false;
  *ns = static_cast<std::int64_t>(total);
  return true;
}

}  // namespace

void DescribeDump(CLI::App& app) { DescribeWith(app, Define); }

int RunDump(int argc, char** argv) {
  Args a;
  CLI::App app;
  Define(app, a);
  if (const int status = ParseCommand(app, argc, argv); status >= 0) return status;
  const auto BadArgs = [&](const std::string& message) { return BadArguments(app, message); };
  const std::string& dir = a.dir;
  const std::vector<std::string>& globs = a.globs;
  for (const std::string& g : globs) {
    if (g.empty()) return BadArgs("-e needs a GLOB");
  }
  std::int64_t since = INT64_MIN, until = INT64_MAX;
  if (app.count("--since") && !ParseTime(a.since, &since)) return BadArgs("--since needs a time such as 1.5, 250ms, 40us");
  if (app.count("--until") && !ParseTime(a.until, &until)) return BadArgs("--until needs a time such as 1.5, 250ms, 40us");
  std::unique_ptr<FilterExpr> filter;
  if (a.filter.size() > 1) return BadArgs("--filter given twice (combine with && instead)");
  if (!a.filter.empty()) {
    if (a.filter[0].empty()) return BadArgs("--filter needs an expression");
    std::unique_ptr<filter::Parsed> parsed = ParseFilterOption(app, a.filter[0]);
    if (!parsed) return 2;
    filter = std::make_unique<FilterExpr>(std::move(parsed));
  }
  if (a.format != "text" && a.format != "json") return BadArgs("--format needs text or json");
  const bool json = a.format == "json", absolute = a.absolute;
  if (dir.empty()) return BadArgs("missing the trace directory DIR");
  if (since > until) return BadArgs("--since is after --until");

  std::string error;
  std::unique_ptr<reader::Trace> trace = OpenTraceRecovering(dir, "hushtrace dump", &error);
  if (!trace) {
    std::fprintf(stderr, "hushtrace dump: %s\n", error.c_str());
    return 1;
  }
  const auto& classes = trace->metadata().events;
  std::vector<char> selected(classes.size(), globs.empty() ? 1 : 0);
  for (const std::string& g : globs) {
    bool any = false;
    for (const reader::EventClass& ec : classes) {
      if (::fnmatch(g.c_str(), ec.name.c_str(), 0) == 0) selected[ec.index] = 1, any = true;
    }
    if (!any) return BadArgs("no event matching '" + g + "' in the trace's metadata");
  }
  // Function events get the name of their address (func="calc::fib(int)") after their fields.
  exporter::Symbolizer symbols(*trace);
  std::vector<int> func_addr(classes.size(), -1);
  for (const reader::EventClass& ec : classes) {
    if (ec.name == "func:entry" || ec.name == "func:exit" || ec.name == "func:call") {
      func_addr[ec.index] = ec.FieldIndex("addr");
    }
  }

  Output out;
  reader::EventIterator it(*trace);
  it.SkipDamagedStreams();
  Progress progress(*trace, "dump", /*stdout_is_output=*/true);
  exporter::EpochNsConverter clock(*trace);  // Trace::ToEpochNs() without a 128-bit division
  bool first = true, write_ok = true;
  std::int64_t origin = 0;
  while (write_ok && it.Next()) {
    const reader::Event& e = it.event();
    progress.Tick(e.timestamp());
    symbols.Observe(e);
    const std::int64_t ns = clock.Convert(e.timestamp());
    if (first) {
      origin = ns;
      first = false;
    }
    const std::int64_t rel = ns - origin;
    if (rel > until) break;
    if (rel < since || !selected[e.event_class().index]) continue;
    if (filter && !filter->Matches(e)) continue;
    if (json) {
      PutJsonEvent(
          out, e, rel, ns,
          func_addr[e.event_class().index] >= 0
              ? symbols.Resolve(
                    e.field(static_cast<std::size_t>(func_addr[e.event_class().index])).AsUint64())
              : std::string());
      write_ok = out.MaybeFlush();
      continue;
    }
    const std::int64_t shown = absolute ? ns : rel;
    const std::uint64_t mag = shown < 0 ? 0 - static_cast<std::uint64_t>(shown) : static_cast<std::uint64_t>(shown);
    out.Put('[');
    if (shown < 0) out.Put('-');
    out.Padded(mag / 1'000'000'000, shown < 0 ? 2 : 3);
    out.Put('.');
    out.Nanos9(mag % 1'000'000'000);
    out.Put("] tid ");
    out.Number(e.tid());
    out.Put(' ');
    out.Put(e.name());
    for (std::size_t i = 0; i < e.field_count(); ++i) {
      const reader::FieldValue v = e.field(i);
      if (v.info().hidden) continue;
      out.Put(' ');
      out.Put(v.info().name);
      out.Put('=');
      PutField(out, v);
    }
    if (const int a = func_addr[e.event_class().index]; a >= 0) {
      out.Put(" func=");
      out.Quoted(symbols.Resolve(e.field(static_cast<std::size_t>(a)).AsUint64()));
    }
    out.Put('\n');
    write_ok = out.MaybeFlush();
  }
  progress.Done();
  write_ok = out.Flush() && write_ok;
  for (const std::string& line : LossWarnings(*trace)) {
    std::fprintf(stderr, "hushtrace dump: warning: %s\n", line.c_str());
  }
  for (const std::string& w : trace->warnings()) std::fprintf(stderr, "hushtrace dump: warning: %s\n", w.c_str());
  for (const std::string& w : symbols.warnings())
    std::fprintf(stderr, "hushtrace dump: warning: %s\n", w.c_str());
  if (!write_ok) {
    std::fprintf(stderr, "hushtrace dump: writing the output failed: %s\n", std::strerror(errno));
    return 1;
  }
  return ReportSkippedStreams(it, "hushtrace dump");
}

}  // namespace hush::cli
