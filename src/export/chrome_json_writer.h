// A TimelineSink writing Chrome Trace Event Format JSON (the "JSON Object Format").
//
//   {"displayTimeUnit":"ns","otherData":{...},"traceEvents":[
//   {"ph":"M","pid":P,"tid":0,"name":"process_name","args":{"name":"demo_server"}},
//   {"ph":"M","pid":P,"tid":T,"name":"thread_name","args":{"name":"worker"}},
//   {"ph":"B","pid":P,"tid":T,"ts":12.345,"name":"demo:handle","cat":"demo"},
//   {"ph":"E","pid":P,"tid":T,"ts":13.000},
//   {"ph":"i","s":"t","pid":P,"tid":T,"ts":..,"name":..,"cat":..,"args":{"worker":0,...}},
//   {"ph":"C","pid":P,"ts":..,"name":"demo:queue_depth","cat":"demo","args":{"value":3}},
//   ...]}
//
// `ts` is in microseconds since the first event, with 3 decimals (ns precision); the first
// event's time since the epoch is otherData.origin_epoch_ns. Scheduler "running" slices go to a
// second process, "<name> (scheduling)", pid P | 0x40000000 (above Linux's pid_max), with one
// thread per traced tid, so they do not interleave with the thread's own slices. Every string the
// program wrote is escaped (text_escape.h).
#ifndef HUSHTRACE_SRC_EXPORT_CHROME_JSON_WRITER_H_
#define HUSHTRACE_SRC_EXPORT_CHROME_JSON_WRITER_H_

#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "export/output_buffer.h"
#include "export/timeline.h"

namespace hush::exporter {

class ChromeJsonWriter final : public TimelineSink {
 public:
  static constexpr std::uint32_t kSchedPidBit = 0x40000000;

  explicit ChromeJsonWriter(std::FILE* out) : out_(out) {}

  void Process(const ProcessInfo& process) override;
  void Thread(std::uint32_t tid, std::string_view name) override;
  void CounterTrack(std::uint32_t counter, Name name, Name category) override;
  void SliceBegin(std::int64_t ns, Track track, Name name, Name category,
                  std::span<const Arg> args) override;
  void SliceEnd(std::int64_t ns, Track track, std::span<const Arg> args) override;
  void Instant(std::int64_t ns, Track track, Name name, Name category,
               std::span<const Arg> args) override;
  void CounterSample(std::int64_t ns, std::uint32_t counter, double value) override;
  bool Finish() override;

 private:
  void Open(const char* ph);  // `{"ph":"X"` with the separator before it
  void PidTid(Track track);
  void Ts(std::int64_t ns);
  void Uint(std::uint64_t v);
  void Int(std::int64_t v);
  void Double(double v);
  void NameCat(Name name, Name category);
  void Args(std::span<const Arg> args);
  void Metadata(std::uint32_t pid, std::uint32_t tid, const char* what, std::string_view name);
  void DeclareSched(std::uint32_t tid);
  const std::string& Cached(std::vector<std::string>& cache, Name name);

  OutputBuffer out_;
  bool started_ = false, first_ = true, have_origin_ = false;
  std::int64_t origin_ = 0;
  std::uint32_t pid_ = 0;
  std::string process_name_;
  std::unordered_map<std::uint32_t, std::string> thread_names_;
  std::unordered_map<std::uint32_t, bool> sched_declared_;
  bool sched_process_declared_ = false;
  std::vector<std::string> names_, categories_, arg_names_;  // escaped, by id
  std::vector<std::string> counter_names_;                   // `"name":..,"cat":..`, by counter
};

}  // namespace hush::exporter

#endif  // HUSHTRACE_SRC_EXPORT_CHROME_JSON_WRITER_H_
