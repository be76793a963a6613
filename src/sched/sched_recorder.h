// --sched: moves perf context-switch, task and comm records of this process's threads into the
// trace as sched:* events (sched_events.h), one stream per CPU.
//
// Threads: one library thread, `hush-sched`, started by Start() with every asynchronous signal
// blocked, owns the perf rings and the per-CPU writers. It wakes when a perf ring is a quarter
// full or every 50 ms, converts timestamps (clock_map.h) and writes the events through the
// session's rings (ring::Reserve; the session is reached only through ring::Owner) with writers
// that only it uses. Stop() (from Core::Stop, before the session's final write) wakes it for a
// last drain and joins it.
#ifndef HUSHTRACE_SRC_SCHED_SCHED_RECORDER_H_
#define HUSHTRACE_SRC_SCHED_SCHED_RECORDER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/unique_fd.h"
#include "hushtrace/internal/thread_writer.h"
#include "sched/clock_map.h"
#include "sched/perf_ring.h"

namespace hush::ring {
class Owner;
class Ring;
}

namespace hush::sched {

class SchedRecorder {
 public:
  // Opens the perf events and starts the reader thread. Returns nullptr when the kernel refuses
  // (the caller warns with `*error` and records the rest of the trace).
  // `ticks_per_second`: the session's clock frequency now (the session refines its own copy later).
  static std::unique_ptr<SchedRecorder> Start(ring::Owner* owner, std::uint64_t ticks_per_second,
                                              std::string* error);
  ~SchedRecorder();
  // Final drain, then releases the session's rings. Idempotent.
  void Stop();
  // In a fork child, on the parent's recorder (whose thread does not exist there): closes the
  // child's copies of the perf fds and maps, which would keep the parent's buffers alive.
  void ReleaseInChild();
  // Tests: replaces perf_event_open (nullptr restores it).
  static void SetOpenFnForTest(PerfOpenFn fn);
  // Tests: perf ring pages per CPU for the next Start() (0: the default sizes), and a reader that
  // stops draining (the kernel then loses records and reports them with PERF_RECORD_LOST).
  static void SetRingPagesForTest(std::size_t pages);
  static void PauseDrainForTest(bool paused);

 private:
  struct CpuStream {
    internal::ThreadWriter w{};
    ring::Ring* ring = nullptr;
    char name[16] = {};
    // tid -> kind of its last record on this CPU (Signature()). A thread that holds both its own
    // events and inherited copies (created while Start() ran) produces each record twice, one
    // after the other: a thread's switch records alternate out/in on a CPU, and a thread starts,
    // exits or is named once at a time, so a record whose kind repeats the previous one of its
    // thread is such a copy. Cleared on a LOST record (a lost record breaks the alternation) and
    // when it grows past kMaxTracked threads.
    std::unordered_map<std::uint32_t, std::uint32_t> last_kind;
  };
  static constexpr std::size_t kMaxTracked = 1 << 16;
  // Drops the second copy of a duplicated record (CpuStream::last_kind).
  static bool IsDuplicate(CpuStream& s, const PerfRecord& r);
  SchedRecorder(ring::Owner* owner, std::uint64_t ticks_per_second);
  void Loop();
  void DrainAll();
  void OnRecord(std::size_t stream, const PerfRecord& r);
  void SamplePair();
  bool Attach(CpuStream& s, std::uint64_t* ts);
  template <typename Spec, typename... Args>
  void Write(CpuStream& s, std::uint64_t ts, const Args&... args);
  template <typename... Fields, typename... Args>
  void WriteFields(CpuStream& s, std::uint32_t id, std::uint64_t ts, const Args&... args);
  void EmitInitialNames(const std::vector<int>& tids);

  ring::Owner* owner_;
  bool use_tsc_;
  // The session's TSC frequency as of Start() (under the session mutex). Read only here: the
  // consumer thread refines the session's calibration while this thread runs.
  long double ticks_per_ns_;
  ClockMap clock_;
  PerfRings perf_;
  std::unique_ptr<CpuStream[]> streams_;  // one per perf ring (CPU)
  std::size_t stream_count_ = 0;
  std::uint32_t pid_ = 0;
  std::uint64_t start_ts_ = 0;  // session clock, taken before the perf events were opened
  std::vector<int> initial_tids_;  // threads at start: their names are emitted first
  // A fork child's recorder writes its streams' first packets (and the initial names) at its
  // first record, not at start: a child that execs at once leaves no file.
  bool names_pending_ = false;
  std::atomic<std::uint32_t> reader_tid_{0};
  base::UniqueFd wake_fd_;  // eventfd: Stop() -> reader
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace hush::sched

#endif  // HUSHTRACE_SRC_SCHED_SCHED_RECORDER_H_
