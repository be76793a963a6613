// Per-CPU perf_event_open software events carrying context-switch, task and comm records of this
// process's threads, and the reader side of their mmapped ring buffers.
//
// Recipe (unprivileged at perf_event_paranoid <= 2): PERF_COUNT_SW_DUMMY with context_switch,
// task and comm records, exclude_kernel (else EACCES), inherit + inherit_thread (new threads of
// this process, not forked children), one event per CPU with pid=0 (an inherited cpu=-1 event
// cannot be mmapped), use_clockid, sample_id_all with TID|TIME (the CPU is the ring's).
//
// Ring protocol (perf_event_mmap_page): the kernel writes records and publishes data_head; the
// reader loads data_head with acquire, reads the records, then stores data_tail with release so
// the kernel may reuse the space.
#ifndef HUSHTRACE_SRC_SCHED_PERF_RING_H_
#define HUSHTRACE_SRC_SCHED_PERF_RING_H_

#include <linux/perf_event.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace hush::sched {

// A decoded record. `kind` is the perf record type; fields not carried by it are 0.
struct PerfRecord {
  std::uint32_t kind = 0;   // PERF_RECORD_SWITCH, _FORK, _EXIT, _COMM, _LOST
  bool switch_out = false;
  bool preempted = false;
  std::uint32_t pid = 0;    // from sample_id (FORK/EXIT: the record's own pid)
  std::uint32_t tid = 0;    // the subject thread
  std::uint32_t ppid = 0;   // FORK/EXIT
  std::uint32_t cpu = 0;
  std::uint64_t time = 0;   // perf clock ns
  std::uint64_t lost = 0;   // LOST
  std::string comm;         // COMM
};

// perf_event_open, replaceable by tests to simulate refusal.
using PerfOpenFn = int (*)(perf_event_attr* attr, int tid, int cpu);

class PerfRings {
 public:
  ~PerfRings();
  // Opens, for each online CPU, one event per thread of `tids` (each inherited by the threads it
  // creates later), all writing to one ring of `data_pages` (a power of two) pages for that CPU.
  // On failure returns false with errno-style `*err` and a message; nothing stays open.
  bool Open(clockid_t clock, std::size_t data_pages, const std::vector<int>& tids, PerfOpenFn open_fn,
            int* err, std::string* message);
  // Opens the same events for threads that were not in Open()'s list (created while it ran, before
  // their creator's event existed to be inherited). A thread that exited meanwhile is skipped.
  bool AddThreads(const std::vector<int>& tids, std::string* message);
  std::size_t cpu_count() const { return cpus_.size(); }
  int cpu(std::size_t i) const { return cpus_[i].cpu; }  // the CPU of ring i
  const std::vector<base::UniqueFd>& fds() const { return fds_; }
  // Decodes every record published so far on ring `i` (in the ring's order), then frees them.
  // Returns the number of records.
  std::size_t Drain(std::size_t i, const std::function<void(const PerfRecord&)>& on_record);
  // Loads data_head of every ring (acquire). Records published before this call are drained by
  // the next Drain() calls up to these heads.
  void SnapshotHeads();
  void Close();  // idempotent

 private:
  struct Cpu {
    int cpu = 0;
    int leader = -1;  // the event whose ring the CPU's other events write to (SET_OUTPUT)
    void* map = nullptr;
    std::size_t map_size = 0;
    std::size_t data_size = 0;
    std::uint64_t head = 0;  // snapshot
  };
  enum OpenResult { kOpened, kThreadGone, kCpuOffline, kFailed };
  // One event of `tid` on `c.cpu`: the first becomes the CPU's leader and is mmapped.
  OpenResult OpenOne(Cpu& c, int tid, std::size_t data_size, std::size_t page);

  perf_event_attr attr_{};
  PerfOpenFn open_fn_ = nullptr;
  std::string last_error_;
  std::vector<Cpu> cpus_;
  std::vector<base::UniqueFd> fds_;
  std::vector<char> scratch_;  // a record that wraps around the ring's end
};

}  // namespace hush::sched

#endif  // HUSHTRACE_SRC_SCHED_PERF_RING_H_
