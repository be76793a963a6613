// A TimelineSink writing the Perfetto trace format (protobuf, perfetto.protos.Trace).
//
// Output layout (docs/architecture.md, "Export"):
//   packet 1        TrackDescriptor of the process; sequence_flags = INCREMENTAL_STATE_CLEARED
//   packets 2..     TrackDescriptor of each thread (parent: the process), with its name
//   then, in time order, TrackEvent packets (SLICE_BEGIN/END, INSTANT, COUNTER) on sequence 1,
//   each with sequence_flags = NEEDS_INCREMENTAL_STATE; a packet whose event uses a name,
//   category or argument name for the first time carries it in InternedData (iid = id + 1).
//   Counter and scheduler ("running") tracks get their TrackDescriptor before their first event;
//   a renamed thread gets its descriptor again.
//
// Track uuids: thread tid<<3|1, its "running" track tid<<3|2, counter c<<3|3, process pid<<3|4.
#ifndef HUSHTRACE_SRC_EXPORT_PERFETTO_WRITER_H_
#define HUSHTRACE_SRC_EXPORT_PERFETTO_WRITER_H_

#include <cstdio>
#include <unordered_map>
#include <vector>

#include "export/output_buffer.h"
#include "export/proto_encoder.h"
#include "export/timeline.h"

namespace hush::exporter {

class PerfettoWriter final : public TimelineSink {
 public:
  explicit PerfettoWriter(std::FILE* out) : out_(out), enc_(out_) {}

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

  static std::uint64_t ThreadUuid(std::uint32_t tid) { return std::uint64_t{tid} << 3 | 1; }
  static std::uint64_t SchedUuid(std::uint32_t tid) { return std::uint64_t{tid} << 3 | 2; }
  static std::uint64_t CounterUuid(std::uint32_t c) { return std::uint64_t{c} << 3 | 3; }
  static std::uint64_t ProcessUuid(std::uint32_t pid) { return std::uint64_t{pid} << 3 | 4; }

 private:
  std::uint64_t TrackUuid(Track track);
  void Event(std::int64_t ns, std::uint32_t type, Track track, const Name* name,
             const Name* category, std::span<const Arg> args, const double* counter_value);
  bool FastEvent(std::int64_t ns, std::uint32_t type, std::uint64_t uuid, const Name* name,
                 const Name* category, std::span<const Arg> args, const double* counter_value);
  void ThreadDescriptor(std::uint32_t tid, std::string_view name);
  void StringField(std::uint32_t field, std::string_view s);  // made valid UTF-8

  OutputBuffer out_;
  proto::Encoder enc_;
  std::uint32_t pid_ = 0;
  std::vector<std::uint8_t> name_sent_, category_sent_, arg_sent_;  // by id: 1 once written
  std::unordered_map<std::uint32_t, bool> sched_declared_;
};

}  // namespace hush::exporter

#endif  // HUSHTRACE_SRC_EXPORT_PERFETTO_WRITER_H_
