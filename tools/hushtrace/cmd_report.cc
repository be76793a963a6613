// hushtrace report: a short human summary of a trace (sections: docs/reader.md).
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cli_app.h"
#include "commands.h"
#include "func_profile.h"
#include "hushtrace/reader.h"
#include "json_writer.h"
#include "open_trace.h"
#include "progress.h"
#include "table.h"

namespace hush::cli {
namespace {

constexpr char kUsage[] = "report DIR [options]";
constexpr char kDescription[] =
    "Summarizes the trace in DIR: duration, events and bytes, events per name and per thread,\n"
    "lost events (lines starting with WARNING:), spans by total and self time, traced functions\n"
    "(calls, total, self, avg, max; names resolved from the modules' symbol tables), counters.\n"
    "Function times are uftrace's: total counts the outermost frames of a recursive function\n"
    "only, self excludes the direct callees, calls counts every call.";
constexpr char kFooter[] =
    "NAME: a glob on the demangled name, with or without its parameters; calls and time are\n"
    "those of the callee's frames under that caller.\n"
    "\n"
    "exit status: 0 ok, 1 unreadable trace, 2 bad arguments, 3 partial: a damaged stream was\n"
    "analysed up to the damage (WARNING line), the other streams to their end\n";

struct Args {
  std::string dir, callers, callees, format = "text", section;
};

// The tables of the summary: their keys in the JSON, and the names --section takes, in the
// order of SectionTables().
constexpr const char* kSections[] = {"event_counts", "threads", "spans", "functions", "counters"};

// The grammar of `report`: one line per option.
// clang-format off
void Define(CLI::App& app, Args& a) {
  DescribeCommand(app, "report", kUsage, kDescription, kFooter);
  app.add_option("DIR", a.dir, "the trace directory")->type_name("");
  app.add_option("--format", a.format, "text (default); json: every row of every section, times in ns;\ncsv: every row of the table --section names (schemas: docs/cli.md)")->type_name("text|json|csv");
  app.add_option("--section", a.section, "with --format csv, the table: event_counts, threads, spans,\nfunctions or counters (the keys of the json)")->type_name("event_counts|threads|spans|functions|counters");
  app.add_option("--callers", a.callers, "instead of the summary: the functions that called NAME directly")->type_name("NAME");
  app.add_option("--callees", a.callees, "instead of the summary: the functions NAME called directly")->type_name("NAME");
}
// clang-format on

constexpr std::size_t kMaxRows = 20;
// After the damage of a stream (EventIterator::skipped()), in its WARNING line.
constexpr const char kSkipped[] =
    ": the rest of this stream was skipped; the other streams were analysed";

struct ClassStats {
  std::uint64_t count = 0;
  // Spans, in clock cycles.
  std::uint64_t spans = 0;
  std::int64_t total = 0, self = 0, max = 0;
  // Counters.
  std::uint64_t samples = 0;
  double min = std::numeric_limits<double>::infinity();
  double max_value = -std::numeric_limits<double>::infinity();
  double sum = 0;
};

struct OpenSpan {
  std::size_t cls;
  std::uint64_t begin;
  std::int64_t children = 0;
};

struct ThreadStats {
  std::uint32_t tid = 0;
  std::string name;
  std::uint64_t events = 0;
  std::vector<OpenSpan> stack;
};

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Duration(std::int64_t ns) {
  const double v = static_cast<double>(ns);
  if (ns < 1000) return std::to_string(ns) + " ns";
  if (ns < 1000000) return Format("%.1f us", v / 1e3);
  if (ns < 1000000000) return Format("%.2f ms", v / 1e6);
  return Format("%.3f s", v / 1e9);
}

std::string Bytes(std::uint64_t n) {
  if (n < 1024) return std::to_string(n) + " B";
  if (n < (1u << 20)) return Format("%.1f KiB", static_cast<double>(n) / 1024);
  if (n < (1u << 30)) return Format("%.1f MiB", static_cast<double>(n) / (1 << 20));
  return Format("%.2f GiB", static_cast<double>(n) / (1 << 30));
}

std::string Rate(double per_second) {
  if (per_second >= 1e6) return Format("%.2f M/s", per_second / 1e6);
  if (per_second >= 1e3) return Format("%.1f k/s", per_second / 1e3);
  return Format("%.0f /s", per_second);
}

std::string Value(double v) { return Format("%.6g", v); }

// Trace::ToEpochNs clamps to the int64 range: a time at either end comes from a clock offset in
// the metadata that no real clock has, and is said so rather than shown as a date in 1677.
// Times before 1970 round down (floor), so the milliseconds are never negative.
std::string WallClock(std::int64_t ns);

// What fired a triggered snapshot (docs/format.md, "Snapshots"): "app:req>10ms: app:req lasted
// 20.1 ms (threshold 10 ms), thread 1234, ended 12:00:01.234567" ("func:serve>10ms: function
// serve(int) lasted ..." for a function trigger); "" for other traces.
std::string SnapshotTrigger(const reader::Trace& trace) {
  const reader::Metadata& md = trace.metadata();
  const std::string_view pattern = md.Env("hushtrace_snapshot_trigger");
  if (pattern.empty()) return "";
  const auto number = [&md](std::string_view key) {
    const std::string_view v = md.Env(key);
    return v.empty() ? std::int64_t{-1} : std::strtoll(std::string(v).c_str(), nullptr, 10);
  };
  const std::string_view function = md.Env("hushtrace_snapshot_function");
  std::string out = std::string(pattern) + ": " +
                    (function.empty() ? std::string(md.Env("hushtrace_snapshot_event"))
                                      : "function " + std::string(function));
  if (const std::int64_t d = number("hushtrace_snapshot_duration_ns"); d >= 0) {
    out += " lasted " + Duration(d) + " (threshold " + Duration(number("hushtrace_snapshot_threshold_ns")) + ")";
  }
  if (const std::int64_t tid = number("hushtrace_snapshot_tid"); tid > 0) out += ", thread " + std::to_string(tid);
  if (const std::int64_t ts = number("hushtrace_snapshot_timestamp"); ts >= 0) {
    out += ", at " + WallClock(trace.ToEpochNs(static_cast<std::uint64_t>(ts)));
  }
  if (const std::int64_t after = number("hushtrace_snapshot_after_ns"); after > 0) {
    out += "; kept " + Duration(after) + " after it";
  }
  return out;
}

std::string WallClock(std::int64_t ns) {
  if (ns == std::numeric_limits<std::int64_t>::min() ||
      ns == std::numeric_limits<std::int64_t>::max()) {
    return "out of range (the metadata's clock offset is not a real time)";
  }
  std::int64_t s = ns / 1000000000, frac = ns % 1000000000;
  if (frac < 0) {
    --s;
    frac += 1000000000;
  }
  const time_t t = static_cast<time_t>(s);
  struct tm tm;
  if (::gmtime_r(&t, &tm) == nullptr) return "out of range";
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  char out[96];
  std::snprintf(out, sizeof out, "%s.%03d UTC", buf, static_cast<int>(frac / 1000000));
  return out;
}

int BadArgs(const std::string& message) {
  std::fprintf(stderr, "hushtrace report: %s\n(see 'hushtrace report --help')\n", message.c_str());
  return 2;
}

void CloseSpan(ThreadStats& t, std::size_t depth, std::uint64_t ts, std::vector<ClassStats>& stats) {
  const OpenSpan s = t.stack[depth];
  t.stack.resize(depth);  // spans opened above it and never closed are dropped
  const std::int64_t d = ts >= s.begin ? static_cast<std::int64_t>(ts - s.begin) : 0;
  ClassStats& c = stats[s.cls];
  ++c.spans;
  c.total += d;
  c.self += std::max<std::int64_t>(0, d - s.children);
  c.max = std::max(c.max, d);
  if (!t.stack.empty()) t.stack.back().children += d;
}

// The tables of the summary, in the order of kSections: every row (no kMaxRows), times in ns.
std::vector<Table> SectionTables(const reader::Trace& trace, const std::vector<ClassStats>& stats,
                                 const std::unordered_map<std::uint32_t, ThreadStats>& threads,
                                 const std::vector<FunctionProfile::Row>& func_rows) {
  const auto& classes = trace.metadata().events;
  std::vector<Table> tables;
  tables.reserve(std::size(kSections));  // the references below stay valid
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < classes.size(); ++i) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return stats[a].count != stats[b].count ? stats[a].count > stats[b].count : a < b;
  });
  Table& events = tables.emplace_back(std::vector<std::string>{"name", "count"});
  for (std::size_t c : order) {
    if (stats[c].count != 0) events.Row().Text(classes[c].name).Uint(stats[c].count);
  }
  std::vector<const ThreadStats*> ts;
  for (const auto& [tid, t] : threads) ts.push_back(&t);
  std::sort(ts.begin(), ts.end(), [](const ThreadStats* a, const ThreadStats* b) {
    return a->events != b->events ? a->events > b->events : a->tid < b->tid;
  });
  Table& thread_table = tables.emplace_back(std::vector<std::string>{"tid", "name", "events"});
  for (const ThreadStats* t : ts) thread_table.Row().Uint(t->tid).Text(t->name).Uint(t->events);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return stats[a].total != stats[b].total ? stats[a].total > stats[b].total : a < b;
  });
  Table& spans = tables.emplace_back(
      std::vector<std::string>{"name", "count", "total_ns", "self_ns", "max_ns"});
  for (std::size_t c : order) {
    const ClassStats& st = stats[c];
    if (st.spans == 0) continue;
    spans.Row().Text(classes[c].name).Uint(st.spans).Int(trace.CyclesToNs(st.total));
    spans.Int(trace.CyclesToNs(st.self)).Int(trace.CyclesToNs(st.max));
  }
  Table& funcs = tables.emplace_back(
      std::vector<std::string>{"name", "calls", "total_ns", "self_ns", "max_ns"});
  for (const FunctionProfile::Row& r : func_rows) {
    funcs.Row().Text(r.name).Uint(r.calls).Int(trace.CyclesToNs(r.total));
    funcs.Int(trace.CyclesToNs(r.self)).Int(trace.CyclesToNs(r.max));
  }
  Table& counters =
      tables.emplace_back(std::vector<std::string>{"name", "count", "min", "avg", "max"});
  for (std::size_t c = 0; c < classes.size(); ++c) {
    const ClassStats& st = stats[c];
    if (st.samples == 0) continue;
    counters.Row().Text(classes[c].name).Uint(st.samples).Double(st.min);
    counters.Double(st.sum / static_cast<double>(st.samples)).Double(st.max_value);
  }
  return tables;
}

// `report --callers/--callees`: only those tables. NAME matching no traced function is an error
// (exit 2), as an unknown event is for `hist`.
int PrintCallGraph(const reader::Trace& trace, const FunctionProfile& functions,
                   const std::string& callers, const std::string& callees,
                   const reader::EventIterator& it) {
  for (const std::string* name : {&callers, &callees}) {
    if (!name->empty() && !functions.Matches(*name)) {
      return BadArgs("no traced function in " + trace.dir() + " matches '" + *name + "'");
    }
  }
  std::printf("hushtrace report: %s\n", trace.dir().c_str());
  if (!callers.empty()) functions.PrintEdges(trace, callers, /*callers=*/true, kMaxRows);
  if (!callees.empty()) functions.PrintEdges(trace, callees, /*callers=*/false, kMaxRows);
  std::fflush(stdout);
  for (const std::string& damage : it.skipped())
    std::printf("WARNING: %s%s\n", damage.c_str(), kSkipped);
  std::fflush(stdout);
  return ReportSkippedStreams(it, "hushtrace report");
}

}  // namespace

void DescribeReport(CLI::App& app) { DescribeWith(app, Define); }

int RunReport(int argc, char** argv) {
  Args args;
  CLI::App app;
  Define(app, args);
  if (const int status = ParseCommand(app, argc, argv); status >= 0) return status;
  const std::string &dir = args.dir, &callers = args.callers, &callees = args.callees;
  if (app.count("--callers") && callers.empty()) return BadArgs("--callers needs a function NAME");
  if (app.count("--callees") && callees.empty()) return BadArgs("--callees needs a function NAME");
  if (args.format != "text" && args.format != "json" && args.format != "csv") {
    return BadArgs("--format needs text, json or csv");
  }
  const bool json = args.format == "json", csv = args.format == "csv";
  std::string sections;
  for (const char* s : kSections) sections += (sections.empty() ? "" : "|") + std::string(s);
  // One CSV document holds one table: the summary's are chosen by name.
  if (csv &&
      std::find(std::begin(kSections), std::end(kSections), args.section) == std::end(kSections)) {
    return BadArgs("--format csv prints one table: give --section " + sections);
  }
  if (!csv && app.count("--section")) return BadArgs("--section goes with --format csv");
  if (dir.empty()) return BadArgs("missing the trace directory DIR");
  if ((json || csv) && (!callers.empty() || !callees.empty())) {
    return BadArgs("--format " + args.format + " goes with the summary, not --callers/--callees");
  }
  std::string error;
  auto trace = OpenTraceRecovering(dir, "hushtrace report", &error);
  if (!trace) {
    std::fprintf(stderr, "hushtrace report: %s\n", error.c_str());
    return 1;
  }
  const auto& classes = trace->metadata().events;
  std::vector<ClassStats> stats(classes.size());
  std::vector<int> phase_field(classes.size(), -1), value_field(classes.size(), -1);
  for (const reader::EventClass& ec : classes) {
    if (ec.kind == reader::EventKind::kSpan) phase_field[ec.index] = ec.FieldIndex("phase");
    if (ec.kind == reader::EventKind::kCounter) {
      value_field[ec.index] = ec.FieldIndex("value");
      for (std::size_t i = 0; i < ec.fields.size() && value_field[ec.index] < 0; ++i) {
        if (ec.fields[i].type == reader::FieldType::kFloat || ec.fields[i].type == reader::FieldType::kSigned ||
            ec.fields[i].type == reader::FieldType::kUnsigned) {
          value_field[ec.index] = static_cast<int>(i);
        }
      }
    }
  }
  std::unordered_map<std::uint32_t, ThreadStats> threads;
  std::uint64_t total = 0, first_ts = 0, last_ts = 0, unmatched = 0;
  FunctionProfile functions(*trace);
  reader::EventIterator it(*trace);
  it.SkipDamagedStreams();
  Progress progress(*trace, "report");
  while (it.Next()) {
    const reader::Event& e = it.event();
    progress.Tick(e.timestamp());
    functions.Add(e);
    const std::size_t ci = e.event_class().index;
    if (total++ == 0) first_ts = e.timestamp();
    last_ts = std::max(last_ts, e.timestamp());
    ++stats[ci].count;
    ThreadStats& t = threads[e.tid()];
    if (t.events++ == 0) {
      t.tid = e.tid();
      t.name.assign(e.thread_name());
    }
    if (phase_field[ci] >= 0) {
      if (e.field(static_cast<std::size_t>(phase_field[ci])).AsUint64() == 0) {
        t.stack.push_back(OpenSpan{ci, e.timestamp()});
      } else {
        std::size_t depth = t.stack.size();
        while (depth > 0 && t.stack[depth - 1].cls != ci) --depth;
        if (depth == 0) ++unmatched;
        else CloseSpan(t, depth - 1, e.timestamp(), stats);
      }
    } else if (value_field[ci] >= 0) {
      const double v = e.field(static_cast<std::size_t>(value_field[ci])).AsDouble();
      ClassStats& c = stats[ci];
      ++c.samples;
      c.sum += v;
      c.min = std::min(c.min, v);
      c.max_value = std::max(c.max_value, v);
    }
  }
  progress.Done();
  std::uint64_t unclosed = 0;
  for (auto& [tid, t] : threads) unclosed += t.stack.size();
  if (!callers.empty() || !callees.empty())
    return PrintCallGraph(*trace, functions, callers, callees, it);

  const std::int64_t duration = trace->ToEpochNs(last_ts) - trace->ToEpochNs(first_ts);
  const reader::Metadata& md = trace->metadata();
  // Overwritten events are what flight mode is for: the window kept, not a loss. Losses are
  // discarded events, missing packets and truncated streams, each with a warning.
  std::uint64_t discarded = 0, overwritten = 0, missing_packets = 0, truncated = 0;
  for (const reader::StreamInfo& s : trace->streams()) {
    discarded += s.DiscardedOnly();
    overwritten += s.events_overwritten;
    missing_packets += s.lost_packets;
    truncated += s.truncated ? 1 : 0;
  }
  std::vector<std::string> warnings = LossWarnings(*trace);  // the same lines as dump's
  for (const std::string& w : trace->warnings()) warnings.push_back(w);
  for (const std::string& damage : it.skipped()) warnings.push_back(damage + kSkipped);
  if (json || csv) {
    const std::vector<Table> tables = SectionTables(*trace, stats, threads, functions.Rows());
    if (csv) {
      // The warnings go where a reader of the table still sees them.
      for (const std::string& w : warnings)
        std::fprintf(stderr, "hushtrace report: warning: %s\n", w.c_str());
      for (const std::string& w : functions.warnings())
        std::fprintf(stderr, "hushtrace report: warning: %s\n", w.c_str());
      for (std::size_t i = 0; i < std::size(kSections); ++i) {
        if (args.section == kSections[i]) std::fputs(tables[i].Csv().c_str(), stdout);
      }
      std::fflush(stdout);
      return ReportSkippedStreams(it, "hushtrace report");
    }
    JsonWriter j;
    j.BeginObject();
    j.Key("trace").String(trace->dir());
    j.Key("process").BeginObject();
    j.Key("name").String(trace->procname()).Key("pid").Uint(trace->pid());
    j.Key("hostname").String(trace->hostname()).EndObject();
    j.Key("mode").String(md.Env("hushtrace_mode"));
    if (const std::string trigger = SnapshotTrigger(*trace); !trigger.empty()) {
      j.Key("snapshot_trigger").String(trigger);
    }
    j.Key("clock").BeginObject().Key("source").String(md.Env("hushtrace_clock_source"));
    j.Key("freq_hz").Uint(md.clock.freq).EndObject();
    if (total > 0)
      j.Key("start_epoch_ns").Int(trace->ToEpochNs(first_ts));
    else
      j.Key("start_epoch_ns").Null();
    j.Key("duration_ns").Int(duration);
    j.Key("events").Uint(total).Key("packets").Uint(trace->packets());
    j.Key("streams")
        .Uint(trace->streams().size())
        .Key("bytes_on_disk")
        .Uint(trace->bytes_on_disk());
    j.Key("lost").BeginObject().Key("events_discarded").Uint(discarded);
    j.Key("packets_missing")
        .Uint(missing_packets)
        .Key("streams_cut_short")
        .Uint(truncated)
        .EndObject();
    j.Key("overwritten").Uint(overwritten);
    j.Key("warnings").BeginArray();
    for (const std::string& w : warnings) j.String(w);
    for (const std::string& w : functions.warnings()) j.String(w);
    j.EndArray();
    for (std::size_t i = 0; i < std::size(kSections); ++i) {
      j.Key(kSections[i]);
      tables[i].WriteJson(j);
    }
    j.Key("complete").Bool(warnings.empty());
    j.EndObject();
    std::fputs(j.text().c_str(), stdout);
    std::fflush(stdout);
    return ReportSkippedStreams(it, "hushtrace report");
  }

  // Header.
  std::printf("hushtrace report: %s\n", trace->dir().c_str());
  const double freq = static_cast<double>(md.clock.freq);
  std::printf("  process    %s (pid %u) on %s, %s mode, %s clock at %s\n",
              std::string(trace->procname()).c_str(), trace->pid(), std::string(trace->hostname()).c_str(),
              std::string(md.Env("hushtrace_mode")).c_str(),
              std::string(md.Env("hushtrace_clock_source")).c_str(),
              freq >= 1e9 ? Format("%.4g GHz", freq / 1e9).c_str() : Format("%.4g MHz", freq / 1e6).c_str());
  if (total > 0) std::printf("  start      %s\n", WallClock(trace->ToEpochNs(first_ts)).c_str());
  std::printf("  duration   %s\n", Duration(duration).c_str());
  std::printf("  events     %llu (%s), %llu packets in %zu stream%s, %s on disk\n",
              static_cast<unsigned long long>(total),
              duration > 0 ? Rate(static_cast<double>(total) * 1e9 / static_cast<double>(duration)).c_str() : "-",
              static_cast<unsigned long long>(trace->packets()), trace->streams().size(),
              trace->streams().size() == 1 ? "" : "s", Bytes(trace->bytes_on_disk()).c_str());
  std::string lost;
  auto add_lost = [&lost](std::uint64_t n, const char* what) {
    if (n == 0) return;
    lost += (lost.empty() ? "" : ", ") + std::to_string(n) + what;
  };
  add_lost(discarded, discarded == 1 ? " event discarded" : " events discarded");
  add_lost(missing_packets, missing_packets == 1 ? " packet missing" : " packets missing");
  add_lost(truncated, truncated == 1 ? " stream cut short" : " streams cut short");
  std::printf("  lost       %s\n",
              lost.empty() ? "none" : (lost + " (WARNING lines below)").c_str());
  if (overwritten != 0 && total > 0) {
    std::printf("  window     flight mode kept %s to %s (%s); %llu older events overwritten\n",
                WallClock(trace->ToEpochNs(first_ts)).c_str(),
                WallClock(trace->ToEpochNs(last_ts)).c_str(), Duration(duration).c_str(),
                static_cast<unsigned long long>(overwritten));
  }
  if (const std::string trigger = SnapshotTrigger(*trace); !trigger.empty()) {
    std::printf("  trigger    %s\n", trigger.c_str());
  }
  for (const std::string& w : warnings) std::printf("WARNING: %s\n", w.c_str());

  std::size_t width = 24;
  for (const reader::EventClass& ec : classes) width = std::max(width, std::min<std::size_t>(ec.name.size() + 2, 48));
  const int w = static_cast<int>(width);

  // Events by name.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (stats[i].count > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return stats[a].count != stats[b].count ? stats[a].count > stats[b].count : a < b;
  });
  std::printf("\n%-*s %10s %7s\n", w, "events", "count", "share");
  for (std::size_t i = 0; i < order.size() && i < kMaxRows; ++i) {
    const std::size_t c = order[i];
    std::printf("  %-*s %10llu %6.1f%%\n", w - 2, classes[c].name.c_str(),
                static_cast<unsigned long long>(stats[c].count),
                100.0 * static_cast<double>(stats[c].count) / static_cast<double>(total));
  }
  if (order.size() > kMaxRows) std::printf("  ... %zu more\n", order.size() - kMaxRows);

  // Threads.
  std::vector<const ThreadStats*> ts;
  for (const auto& [tid, t] : threads) ts.push_back(&t);
  std::sort(ts.begin(), ts.end(), [](const ThreadStats* a, const ThreadStats* b) {
    return a->events != b->events ? a->events > b->events : a->tid < b->tid;
  });
  std::printf("\n%-*s %10s\n", w, "threads", "events");
  for (std::size_t i = 0; i < ts.size() && i < kMaxRows; ++i) {
    const std::string label = std::to_string(ts[i]->tid) + " " + ts[i]->name;
    std::printf("  %-*s %10llu\n", w - 2, label.c_str(), static_cast<unsigned long long>(ts[i]->events));
  }
  if (ts.size() > kMaxRows) std::printf("  ... %zu more\n", ts.size() - kMaxRows);

  // Spans by total time (self time alongside).
  order.clear();
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (stats[i].spans > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return stats[a].total != stats[b].total ? stats[a].total > stats[b].total : a < b;
  });
  if (!order.empty() || unclosed != 0 || unmatched != 0) {
    std::printf("\n%-*s %10s %10s %10s %10s %10s\n", w, "spans (by total time)", "count", "total",
                "self", "avg", "max");
    for (std::size_t i = 0; i < order.size() && i < kMaxRows; ++i) {
      const ClassStats& c = stats[order[i]];
      std::printf("  %-*s %10llu %10s %10s %10s %10s\n", w - 2, classes[order[i]].name.c_str(),
                  static_cast<unsigned long long>(c.spans), Duration(trace->CyclesToNs(c.total)).c_str(),
                  Duration(trace->CyclesToNs(c.self)).c_str(),
                  Duration(trace->CyclesToNs(c.total / static_cast<std::int64_t>(c.spans))).c_str(),
                  Duration(trace->CyclesToNs(c.max)).c_str());
    }
    if (order.size() > kMaxRows) std::printf("  ... %zu more\n", order.size() - kMaxRows);
    if (unclosed != 0 || unmatched != 0) {
      std::printf("  (%llu spans still open at the end of the trace, %llu ends without a begin)\n",
                  static_cast<unsigned long long>(unclosed), static_cast<unsigned long long>(unmatched));
    }
  }

  functions.Print(*trace, kMaxRows);

  // Counters.
  order.clear();
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (stats[i].samples > 0) order.push_back(i);
  }
  if (!order.empty()) {
    std::printf("\n%-*s %10s %10s %10s %10s\n", w, "counters", "count", "min", "avg", "max");
    for (std::size_t c : order) {
      const ClassStats& s = stats[c];
      std::printf("  %-*s %10llu %10s %10s %10s\n", w - 2, classes[c].name.c_str(),
                  static_cast<unsigned long long>(s.samples), Value(s.min).c_str(),
                  Value(s.sum / static_cast<double>(s.samples)).c_str(), Value(s.max_value).c_str());
    }
  }
  std::fflush(stdout);
  return ReportSkippedStreams(it, "hushtrace report");
}

}  // namespace hush::cli
