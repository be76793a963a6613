#include "sched/perf_ring.h"

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hush::sched {
namespace {

// sample_id trailer with PERF_SAMPLE_TID | PERF_SAMPLE_TIME, at the end of every non-sample record
// (sample_id_all). No PERF_SAMPLE_CPU: a ring is one CPU's, and the kernel's cost of a record
// grows with its size (bench/sched_perf_cost.cc: 24-byte switch records instead of 32).
struct SampleId {
  std::uint32_t pid, tid;
  std::uint64_t time;
};

// Every configured CPU, not only those this thread may run on: other threads may be allowed
// elsewhere. Offline CPUs fail to open (ENODEV) and are skipped.
std::vector<int> ConfiguredCpus() {
  std::vector<int> cpus;
  const long n = ::sysconf(_SC_NPROCESSORS_CONF);
  for (int c = 0; c < n; ++c) cpus.push_back(c);
  return cpus;
}

}  // namespace

PerfRings::~PerfRings() { Close(); }

void PerfRings::Close() {
  for (Cpu& c : cpus_) {
    if (c.map != nullptr) ::munmap(c.map, c.map_size);
  }
  cpus_.clear();
  fds_.clear();
}

bool PerfRings::Open(clockid_t clock, std::size_t data_pages, const std::vector<int>& tids,
                     PerfOpenFn open_fn, int* err, std::string* message) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::memset(&attr_, 0, sizeof attr_);
  perf_event_attr& a = attr_;
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_DUMMY;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  a.sample_id_all = 1;
  a.context_switch = 1;
  a.task = 1;
  a.comm = 1;
  a.inherit = 1;
  a.inherit_thread = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.use_clockid = 1;
  a.clockid = clock;
  a.watermark = 1;
  a.wakeup_watermark = static_cast<std::uint32_t>(data_pages * page / 4);
  open_fn_ = open_fn;
  // Thread by thread, each on every CPU: a thread created by a listed thread while this runs
  // inherits all of its creator's events or none, except in the short gap between the creator's
  // per-CPU opens (the recorder drops the duplicate records that such a thread may then produce).
  std::vector<Cpu> cpus;
  std::vector<bool> offline;
  for (int cpu : ConfiguredCpus()) {
    Cpu c;
    c.cpu = cpu;
    cpus.push_back(c);
    offline.push_back(false);
  }
  for (int tid : tids) {
    for (std::size_t i = 0; i < cpus.size(); ++i) {
      if (offline[i]) continue;
      const OpenResult r = OpenOne(cpus[i], tid, data_pages * page, page);
      if (r == kCpuOffline) offline[i] = true;
      if (r == kThreadGone) break;
      if (r == kFailed) {
        *err = errno;
        for (Cpu& c : cpus) {
          if (c.map != nullptr) ::munmap(c.map, c.map_size);
        }
        *message = last_error_ + ": " + std::strerror(errno);
        Close();
        return false;
      }
    }
  }
  for (const Cpu& c : cpus) {
    if (c.leader >= 0) cpus_.push_back(c);
  }
  if (cpus_.empty()) {
    *err = errno = ENODEV;
    *message = std::string("no CPU accepted a perf event: ") + std::strerror(ENODEV);
    Close();
    return false;
  }
  return true;
}

PerfRings::OpenResult PerfRings::OpenOne(Cpu& c, int tid, std::size_t data_size, std::size_t page) {
  int fd = open_fn_(&attr_, tid, c.cpu);
  if (fd < 0 && errno == EINVAL && attr_.inherit_thread) {
    attr_.inherit_thread = 0;  // kernels before 5.13: forked children then share our rings
    fd = open_fn_(&attr_, tid, c.cpu);
  }
  if (fd < 0 && errno == ESRCH) return kThreadGone;  // the thread exited meanwhile
  if (fd < 0 && errno == ENODEV && c.leader < 0) return kCpuOffline;
  if (fd < 0) {
    last_error_ = "perf_event_open(cpu " + std::to_string(c.cpu) + ")";
    return kFailed;
  }
  fds_.emplace_back(fd);
  if (c.leader >= 0) {
    if (::ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, c.leader) != 0) {
      last_error_ = "PERF_EVENT_IOC_SET_OUTPUT (cpu " + std::to_string(c.cpu) + ")";
      return kFailed;
    }
    return kOpened;
  }
  c.data_size = data_size;
  c.map_size = data_size + page;
  void* m = ::mmap(nullptr, c.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    last_error_ = "mmap of a " + std::to_string(c.map_size / 1024) + " KiB perf ring (cpu " +
                  std::to_string(c.cpu) + ", see perf_event_mlock_kb)";
    return kFailed;
  }
  c.map = m;
  c.leader = fd;
  return kOpened;
}

bool PerfRings::AddThreads(const std::vector<int>& tids, std::string* message) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  for (Cpu& c : cpus_) {
    for (int tid : tids) {
      if (OpenOne(c, tid, c.data_size, page) == kFailed) {
        *message = last_error_ + ": " + std::strerror(errno);
        return false;
      }
    }
  }
  return true;
}

void PerfRings::SnapshotHeads() {
  for (Cpu& c : cpus_) {
    auto* meta = static_cast<perf_event_mmap_page*>(c.map);
    // Acquire: pairs with the kernel's publication of data_head; records below it are complete.
    c.head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  }
}

std::size_t PerfRings::Drain(std::size_t i, const std::function<void(const PerfRecord&)>& on_record) {
  Cpu& c = cpus_[i];
  auto* meta = static_cast<perf_event_mmap_page*>(c.map);
  const char* data = static_cast<const char*>(c.map) + (c.map_size - c.data_size);
  std::uint64_t tail = meta->data_tail;  // only we write it
  std::size_t count = 0;
  while (tail < c.head) {
    const std::size_t off = tail % c.data_size;
    perf_event_header h;
    // The header itself never wraps (records are 8-byte aligned), but copy defensively.
    if (off + sizeof h <= c.data_size) {
      std::memcpy(&h, data + off, sizeof h);
    } else {
      const std::size_t first = c.data_size - off;
      std::memcpy(&h, data + off, first);
      std::memcpy(reinterpret_cast<char*>(&h) + first, data, sizeof h - first);
    }
    if (h.size < sizeof h || tail + h.size > c.head) break;  // corrupt: resynchronize at head
    const char* rec = data + off;
    if (off + h.size > c.data_size) {
      scratch_.resize(h.size);
      const std::size_t first = c.data_size - off;
      std::memcpy(scratch_.data(), data + off, first);
      std::memcpy(scratch_.data() + first, data, h.size - first);
      rec = scratch_.data();
    }
    PerfRecord r;
    r.kind = h.type;
    r.cpu = static_cast<std::uint32_t>(c.cpu);
    if (h.size >= sizeof h + sizeof(SampleId)) {
      SampleId id;
      std::memcpy(&id, rec + h.size - sizeof id, sizeof id);
      r.pid = id.pid;
      r.tid = id.tid;
      r.time = id.time;
    }
    const char* body = rec + sizeof h;
    const std::size_t body_size = h.size - sizeof h;
    bool known = true;
    switch (h.type) {
      case PERF_RECORD_SWITCH:
        r.switch_out = (h.misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
        r.preempted = (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
        break;
      case PERF_RECORD_FORK:
      case PERF_RECORD_EXIT:
        if (body_size >= 24) {
          std::uint32_t v[4];
          std::memcpy(v, body, sizeof v);
          r.pid = v[0];
          r.ppid = v[1];
          r.tid = v[2];
          std::memcpy(&r.time, body + 16, 8);
        }
        break;
      case PERF_RECORD_COMM:
        if (body_size >= 8 + sizeof(SampleId)) {
          std::uint32_t v[2];
          std::memcpy(v, body, sizeof v);
          r.pid = v[0];
          r.tid = v[1];
          const char* name = body + 8;
          r.comm.assign(name, ::strnlen(name, body_size - 8 - sizeof(SampleId)));
        }
        break;
      case PERF_RECORD_LOST:
        if (body_size >= 16) std::memcpy(&r.lost, body + 8, 8);
        break;
      default:
        known = false;
        break;
    }
    if (known) {
      on_record(r);
      ++count;
    }
    tail += h.size;
  }
  if (tail < c.head) tail = c.head;
  // Release: our reads of the records happen before the kernel may overwrite them.
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
  return count;
}

}  // namespace hush::sched
