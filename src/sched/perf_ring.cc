#include "sched/perf_ring.h"

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hush::sched {
namespace {

// sample_id trailer with PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU, at the end of
// every non-sample record (sample_id_all).
struct SampleId {
  std::uint32_t pid, tid;
  std::uint64_t time;
  std::uint32_t cpu, reserved;
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
  for (int fd : fds_) ::close(fd);
  cpus_.clear();
  fds_.clear();
}

bool PerfRings::Open(clockid_t clock, std::size_t data_pages, const std::vector<int>& tids,
                     PerfOpenFn open_fn, int* err, std::string* message) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_DUMMY;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
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
  auto fail = [&](const std::string& what) {
    *err = errno;
    *message = what + ": " + std::strerror(errno);
    Close();
    return false;
  };
  for (int cpu : ConfiguredCpus()) {
    int leader = -1;
    for (int tid : tids) {
      int fd = open_fn(&a, tid, cpu);
      if (fd < 0 && errno == EINVAL && a.inherit_thread) {
        a.inherit_thread = 0;  // kernels before 5.13: forked children then share our rings
        fd = open_fn(&a, tid, cpu);
      }
      if (fd < 0 && errno == ESRCH) continue;  // the thread exited meanwhile
      if (fd < 0 && errno == ENODEV && leader < 0) break;  // offline CPU
      if (fd < 0) return fail("perf_event_open(cpu " + std::to_string(cpu) + ")");
      fds_.push_back(fd);
      if (leader >= 0) {
        if (::ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, leader) != 0) {
          return fail("PERF_EVENT_IOC_SET_OUTPUT (cpu " + std::to_string(cpu) + ")");
        }
        continue;
      }
      leader = fd;
      Cpu c;
      c.cpu = cpu;
      c.data_size = data_pages * page;
      c.map_size = c.data_size + page;
      void* m = ::mmap(nullptr, c.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (m == MAP_FAILED) {
        return fail("mmap of a " + std::to_string(c.map_size / 1024) +
                    " KiB perf ring (cpu " + std::to_string(cpu) + ", see perf_event_mlock_kb)");
      }
      c.map = m;
      cpus_.push_back(c);
    }
  }
  if (cpus_.empty()) {
    errno = ENODEV;
    return fail("no CPU accepted a perf event");
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
      r.cpu = id.cpu;
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
