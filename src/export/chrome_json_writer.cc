// ChromeJsonWriter: timeline -> Chrome Trace Event JSON (see chrome_json_writer.h).
#include "export/chrome_json_writer.h"

#include <charconv>
#include <cmath>

#include "export/text_escape.h"

namespace hush::exporter {

const std::string& ChromeJsonWriter::Cached(std::vector<std::string>& cache, Name name) {
  if (name.id >= cache.size()) cache.resize(std::size_t{name.id} * 2 + 16);
  std::string& s = cache[name.id];
  if (s.empty()) s = JsonString(name.text);
  return s;
}

void ChromeJsonWriter::Open(const char* ph) {
  if (!started_) {
    started_ = true;
    out_.Append("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  }
  out_.Append(first_ ? "{\"ph\":\"" : ",\n{\"ph\":\"");
  first_ = false;
  out_.Append(std::string_view(ph));
  out_.Put('"');
}

void ChromeJsonWriter::Uint(std::uint64_t v) {
  std::uint8_t* p = out_.Ensure(24);
  const auto r = std::to_chars(reinterpret_cast<char*>(p), reinterpret_cast<char*>(p) + 24, v);
  out_.Advance(static_cast<std::size_t>(r.ptr - reinterpret_cast<char*>(p)));
}

void ChromeJsonWriter::Int(std::int64_t v) {
  std::uint8_t* p = out_.Ensure(24);
  const auto r = std::to_chars(reinterpret_cast<char*>(p), reinterpret_cast<char*>(p) + 24, v);
  out_.Advance(static_cast<std::size_t>(r.ptr - reinterpret_cast<char*>(p)));
}

void ChromeJsonWriter::Double(double v) {
  if (!std::isfinite(v)) {  // JSON has no NaN or infinity: write them as strings
    out_.Append(std::isnan(v) ? "\"nan\"" : v > 0 ? "\"inf\"" : "\"-inf\"");
    return;
  }
  std::uint8_t* p = out_.Ensure(32);
  const auto r = std::to_chars(reinterpret_cast<char*>(p), reinterpret_cast<char*>(p) + 32, v);
  out_.Advance(static_cast<std::size_t>(r.ptr - reinterpret_cast<char*>(p)));
}

void ChromeJsonWriter::Ts(std::int64_t ns) {
  if (!have_origin_) {
    have_origin_ = true;
    origin_ = ns;
  }
  const std::uint64_t rel = ns > origin_ ? static_cast<std::uint64_t>(ns - origin_) : 0;
  out_.Append(",\"ts\":");
  Uint(rel / 1000);
  std::uint8_t* p = out_.Ensure(4);
  const std::uint64_t frac = rel % 1000;
  p[0] = '.';
  p[1] = static_cast<std::uint8_t>('0' + frac / 100);
  p[2] = static_cast<std::uint8_t>('0' + frac / 10 % 10);
  p[3] = static_cast<std::uint8_t>('0' + frac % 10);
  out_.Advance(4);
}

void ChromeJsonWriter::PidTid(Track track) {
  out_.Append(",\"pid\":");
  Uint(track.kind == TrackKind::kSched ? (pid_ | kSchedPidBit) : pid_);
  out_.Append(",\"tid\":");
  Uint(track.id);
}

void ChromeJsonWriter::NameCat(Name name, Name category) {
  out_.Append(",\"name\":");
  out_.Append(Cached(names_, name));
  out_.Append(",\"cat\":");
  out_.Append(Cached(categories_, category));
}

void ChromeJsonWriter::Args(std::span<const Arg> args) {
  if (args.empty()) return;
  out_.Append(",\"args\":{");
  bool first = true;
  for (const Arg& a : args) {
    if (!first) out_.Put(',');
    first = false;
    out_.Append(Cached(arg_names_, a.name));
    out_.Put(':');
    switch (a.type) {
      case Arg::Type::kInt:
        Int(a.i);
        break;
      case Arg::Type::kUint:
        Uint(a.u);
        break;
      case Arg::Type::kBool:
        out_.Append(a.u != 0 ? "true" : "false");
        break;
      case Arg::Type::kDouble:
        Double(a.d);
        break;
      case Arg::Type::kString:
        AppendJsonString(out_, a.s);
        break;
      case Arg::Type::kBytes: {
        static constexpr char kHex[] = "0123456789abcdef";
        std::uint8_t* p = out_.Ensure(a.bytes.size() * 2 + 4);
        std::size_t n = 0;
        p[n++] = '"';
        p[n++] = '<';
        for (const std::uint8_t b : a.bytes) {
          p[n++] = static_cast<std::uint8_t>(kHex[b >> 4]);
          p[n++] = static_cast<std::uint8_t>(kHex[b & 15]);
        }
        p[n++] = '>';
        p[n++] = '"';
        out_.Advance(n);
        break;
      }
    }
  }
  out_.Put('}');
}

void ChromeJsonWriter::Metadata(std::uint32_t pid, std::uint32_t tid, const char* what,
                                std::string_view name) {
  Open("M");
  out_.Append(",\"pid\":");
  Uint(pid);
  out_.Append(",\"tid\":");
  Uint(tid);
  out_.Append(",\"ts\":0,\"name\":\"");
  out_.Append(std::string_view(what));
  out_.Append("\",\"args\":{\"name\":");
  AppendJsonString(out_, name);
  out_.Append("}}");
}

void ChromeJsonWriter::Process(const ProcessInfo& process) {
  pid_ = process.pid;
  process_name_ = process.name;
  Metadata(pid_, 0, "process_name", process.name);
}

void ChromeJsonWriter::Thread(std::uint32_t tid, std::string_view name) {
  thread_names_[tid] = std::string(name);
  Metadata(pid_, tid, "thread_name", name);
  if (auto it = sched_declared_.find(tid); it != sched_declared_.end()) {
    Metadata(pid_ | kSchedPidBit, tid, "thread_name", std::string(name) + " running");
  }
  out_.MaybeFlush();
}

void ChromeJsonWriter::DeclareSched(std::uint32_t tid) {
  if (!sched_process_declared_) {
    sched_process_declared_ = true;
    Metadata(pid_ | kSchedPidBit, 0, "process_name", process_name_ + " (scheduling)");
  }
  auto [it, added] = sched_declared_.emplace(tid, true);
  if (added) Metadata(pid_ | kSchedPidBit, tid, "thread_name", thread_names_[tid] + " running");
}

void ChromeJsonWriter::CounterTrack(std::uint32_t counter, Name name, Name category) {
  if (counter >= counter_names_.size()) counter_names_.resize(std::size_t{counter} + 1);
  counter_names_[counter] =
      ",\"name\":" + JsonString(name.text) + ",\"cat\":" + JsonString(category.text);
}

void ChromeJsonWriter::SliceBegin(std::int64_t ns, Track track, Name name, Name category,
                                  std::span<const Arg> args) {
  if (track.kind == TrackKind::kSched) DeclareSched(track.id);
  Open("B");
  PidTid(track);
  Ts(ns);
  NameCat(name, category);
  Args(args);
  out_.Put('}');
  out_.MaybeFlush();
}

void ChromeJsonWriter::SliceEnd(std::int64_t ns, Track track, std::span<const Arg> args) {
  Open("E");
  PidTid(track);
  Ts(ns);
  Args(args);
  out_.Put('}');
  out_.MaybeFlush();
}

void ChromeJsonWriter::Instant(std::int64_t ns, Track track, Name name, Name category,
                               std::span<const Arg> args) {
  Open("i");
  out_.Append(",\"s\":\"t\"");
  PidTid(track);
  Ts(ns);
  NameCat(name, category);
  Args(args);
  out_.Put('}');
  out_.MaybeFlush();
}

void ChromeJsonWriter::CounterSample(std::int64_t ns, std::uint32_t counter, double value) {
  Open("C");
  out_.Append(",\"pid\":");
  Uint(pid_);
  Ts(ns);
  out_.Append(counter_names_[counter]);
  out_.Append(",\"args\":{\"value\":");
  Double(value);
  out_.Append("}}");
  out_.MaybeFlush();
}

bool ChromeJsonWriter::Finish() {
  if (!started_) {
    started_ = true;
    out_.Append("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  }
  out_.Append("\n],\"otherData\":{\"exporter\":\"hushtrace\",\"origin_epoch_ns\":");
  Int(origin_);
  out_.Append("}}\n");
  return out_.Flush();
}

}  // namespace hush::exporter
