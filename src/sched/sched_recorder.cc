#include "sched/sched_recorder.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "base/dir_stream.h"
#include "clock/clock.h"
#include "sched/sched_events.h"
#include "base/proc_file.h"
#include "ring/reserve.h"
#include "base/library_thread.h"

namespace hush::sched {
namespace {

int RealPerfOpen(perf_event_attr* attr, int tid, int cpu) {
  return static_cast<int>(::syscall(SYS_perf_event_open, attr, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

std::atomic<PerfOpenFn> g_open_fn{RealPerfOpen};
std::atomic<std::size_t> g_test_pages{0};
std::atomic<bool> g_test_paused{false};

// Ring size per CPU: the largest of these the memlock limit accepts (perf_event_mlock_kb is
// 516 KiB per CPU for non-root users; other perf users of the same account share it).
constexpr std::size_t kDataPages[] = {64, 16, 4};

std::vector<int> ThreadsOfThisProcess() {
  std::vector<int> tids;
  base::DirStream tasks = base::DirStream::Open("/proc/self/task");
  if (!tasks) return {static_cast<int>(::syscall(SYS_gettid))};
  while (const char* name = tasks.Next()) {
    if (name[0] >= '0' && name[0] <= '9') tids.push_back(std::atoi(name));
  }
  return tids;
}

std::string ThreadComm(int tid) { return base::ReadProcLine("/proc/self/task/" + std::to_string(tid) + "/comm"); }

}  // namespace

void SchedRecorder::SetOpenFnForTest(PerfOpenFn fn) { g_open_fn.store(fn != nullptr ? fn : RealPerfOpen); }
void SchedRecorder::SetRingPagesForTest(std::size_t pages) { g_test_pages.store(pages); }
void SchedRecorder::PauseDrainForTest(bool paused) { g_test_paused.store(paused); }

SchedRecorder::SchedRecorder(ring::Owner* owner, std::uint64_t ticks_per_second)
    : owner_(owner),
      use_tsc_(owner->use_tsc()),
      ticks_per_ns_(static_cast<long double>(ticks_per_second) / 1e9L),
      clock_(owner->use_tsc(), ticks_per_ns_) {}

std::unique_ptr<SchedRecorder> SchedRecorder::Start(ring::Owner* owner, std::uint64_t ticks_per_second,
                                                    std::string* error) {
  std::unique_ptr<SchedRecorder> s(new SchedRecorder(owner, ticks_per_second));
  s->pid_ = static_cast<std::uint32_t>(::getpid());
  const std::vector<int> tids = ThreadsOfThisProcess();
  s->SamplePair();  // before any record can exist
  // Older than every record: the initial names are stamped with it, so they never push a
  // stream's time past records still to come.
  s->start_ts_ = clock::Now(s->use_tsc_);
  int err = 0;
  std::string message;
  bool opened = false;
  for (std::size_t pages : kDataPages) {
    if (g_test_pages.load() != 0) pages = g_test_pages.load();
    opened = s->perf_.Open(s->clock_.perf_clock(), pages, tids, g_open_fn.load(), &err, &message);
    if (opened || (err != EPERM && err != ENOMEM) || message.rfind("mmap", 0) != 0) break;
  }
  if (!opened) {
    *error = message;
    if (err == EACCES || err == EPERM) {
      std::string level = base::ReadProcLine("/proc/sys/kernel/perf_event_paranoid");
      *error += " (kernel.perf_event_paranoid is " + (level.empty() ? "unreadable" : level) +
                "; 3 or more, or a seccomp filter, refuses it)";
    } else if (err == ENOSYS) {
      *error += " (the kernel or a seccomp filter does not offer perf_event_open)";
    }
    return nullptr;
  }
  // Threads created while Open() ran, by threads not yet covered, inherited nothing (or, in the
  // gap between their creator's per-CPU opens, part): list the threads again and give the new
  // ones events of their own, until the list is stable (at most 16 rounds: a process may keep
  // creating threads from uncovered ones). A new thread may have inherited its creator's events
  // as well: nothing tells (perf writes the FORK record after copying the events, so an event
  // opened in between leaves a FORK record without a copy); its records then come twice, one
  // after the other, and IsDuplicate() drops the copies.
  std::vector<int> known = tids;
  std::sort(known.begin(), known.end());
  for (int round = 0; round < 16; ++round) {
    std::vector<int> added;
    for (int tid : ThreadsOfThisProcess()) {
      if (!std::binary_search(known.begin(), known.end(), tid)) added.push_back(tid);
    }
    if (added.empty()) break;
    if (!s->perf_.AddThreads(added, &message)) {
      *error = message;
      return nullptr;
    }
    known.insert(known.end(), added.begin(), added.end());
    std::sort(known.begin(), known.end());
  }
  s->wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s->wake_fd_) {
    *error = std::string("eventfd: ") + std::strerror(errno);
    return nullptr;
  }
  s->stream_count_ = s->perf_.cpu_count();
  s->streams_.reset(new CpuStream[s->stream_count_]);
  for (std::size_t i = 0; i < s->stream_count_; ++i) {
    std::snprintf(s->streams_[i].name, sizeof s->streams_[i].name, "hush-sched/%u", static_cast<unsigned>(s->perf_.cpu(i)) % 10000u);
  }
  s->initial_tids_ = known;
  SchedRecorder* self = s.get();
  try {
    s->thread_ = base::StartLibraryThread("hush-sched", [self] { self->Loop(); });
  } catch (const std::system_error& e) {
    *error = std::string("cannot start its thread: ") + e.what();
    return nullptr;
  }
  return s;
}

SchedRecorder::~SchedRecorder() {
  Stop();
}

void SchedRecorder::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    while (::write(wake_fd_.get(), &one, sizeof one) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  for (std::size_t i = 0; i < stream_count_; ++i) {
    CpuStream& s = streams_[i];
    if (s.ring != nullptr) owner_->Detach(s.w);
    s.ring = nullptr;
  }
  perf_.Close();  // the kernel's buffers go now, not when the session is freed
}

void SchedRecorder::ReleaseInChild() {
  perf_.Close();
  wake_fd_.reset();
  stopped_ = true;
  stream_count_ = 0;
  // thread_ stays as it is: it names the parent's thread, and this object is never destroyed in
  // the child (a fork child never frees its parent's session: session_api.cc).
}

void SchedRecorder::SamplePair() {
  if (!use_tsc_) return;
  std::uint64_t ticks = 0, ns = 0;
  SampleRawPair(ticks_per_ns_, &ticks, &ns);
  clock_.AddPair(ticks, ns);
}

void SchedRecorder::Loop() {
  reader_tid_.store(static_cast<std::uint32_t>(::syscall(SYS_gettid)), std::memory_order_relaxed);
  std::vector<pollfd> fds;
  {
    const base::ForkGateSection working;  // base/fork_gate.h: allocations
    fds.push_back({wake_fd_.get(), POLLIN, 0});
    for (const base::UniqueFd& fd : perf_.fds()) fds.push_back({fd.get(), POLLIN, 0});
    // Here, not in Start(): Start() runs under the session mutex, which attaching a ring takes.
    // Every CPU's stream gets its ring now, so its first packet begins at the session's start.
    if (owner_->forked_child()) {
      names_pending_ = true;
    } else {
      for (std::size_t i = 0; i < stream_count_; ++i) {
        std::uint64_t ts = start_ts_;
        Attach(streams_[i], &ts);
      }
      EmitInitialNames(initial_tids_);
    }
  }
  for (;;) {
    const int n = ::poll(fds.data(), fds.size(), 50);
    const bool stopping = n > 0 && (fds[0].revents & POLLIN) != 0;
    if (!stopping && g_test_paused.load(std::memory_order_relaxed)) {
      ::usleep(5000);  // the rings stay above their watermark: do not spin
      continue;
    }
    {
      const base::ForkGateSection working;
      DrainAll();
    }
    if (stopping) return;
  }
}

void SchedRecorder::DrainAll() {
  // Heads first, then the clock pair: every record drained below was written before the pair,
  // so conversions interpolate or extrapolate by at most one drain period.
  perf_.SnapshotHeads();
  SamplePair();
  for (std::size_t i = 0; i < stream_count_; ++i) {
    perf_.Drain(i, [this, i](const PerfRecord& r) { OnRecord(i, r); });
  }
}

bool SchedRecorder::Attach(CpuStream& s, std::uint64_t* ts) {
  if (s.ring == nullptr) {
    s.ring = owner_->Attach(s.w, /*fresh=*/true);
    if (s.ring == nullptr) return false;
    s.w.ring = s.ring;
    s.w.generation = owner_->generation();
    s.w.pending_ts = s.ring->LastEndTimestamp();
  }
  // Per-CPU perf rings are in time order; the clamp only absorbs conversion jitter so that the
  // stream never goes back in time (CTF requires it).
  *ts = std::max(*ts, s.w.pending_ts);  // the last event's (ring::Reserve sets it)
  return true;
}

template <typename... Fields, typename... Args>
void SchedRecorder::WriteFields(CpuStream& s, std::uint32_t id, std::uint64_t ts, const Args&... args) {
  if (!Attach(s, &ts)) return;
  const std::size_t payload = (std::size_t{0} + ... + internal::FieldTraits<Fields>::Size(args));
  const std::uint32_t previous = internal::EnterEvent(s.w);
  const std::uint32_t vtid = reader_tid_.load(std::memory_order_relaxed);
  if (char* p = ring::Reserve(*owner_, *s.ring, s.w, id, ts, payload, vtid, s.name, false)) {
    ((p = internal::FieldTraits<Fields>::Write(p, args)), ...);
    internal::Commit(s.w, p);
  }
  internal::LeaveEvent(s.w, previous);
}

template <typename Spec, typename... Args>
void SchedRecorder::Write(CpuStream& s, std::uint64_t ts, const Args&... args) {
  auto& descriptor = internal::site_descriptor<Spec>;
  HUSH_INTERNAL_REGISTER_DESCRIPTOR(descriptor);
  const std::uint32_t state = descriptor.state.load(std::memory_order_relaxed);
  if (state == 0) return;
  [&]<typename... Fields>(internal::FieldList<Fields...>) {
    WriteFields<Fields...>(s, state - 1, ts, args...);
  }(typename Spec::Fields{});
}

void SchedRecorder::EmitInitialNames(const std::vector<int>& tids) {
  const std::uint64_t ts = start_ts_;
  for (int tid : tids) {
    const std::string name = ThreadComm(tid);
    if (!name.empty()) {
      Write<hush_tp_sched_thread_name>(streams_[0], ts, static_cast<std::uint32_t>(tid), std::string_view(name));
    }
  }
}

bool SchedRecorder::IsDuplicate(CpuStream& s, const PerfRecord& r) {
  if (r.kind == PERF_RECORD_LOST) {
    s.last_kind.clear();
    return false;
  }
  const std::uint32_t kind = r.kind * 2 + (r.switch_out ? 1 : 0);
  if (s.last_kind.size() >= kMaxTracked) s.last_kind.clear();
  auto [it, inserted] = s.last_kind.try_emplace(r.tid, kind);
  if (inserted) return false;
  if (it->second == kind && r.kind != PERF_RECORD_COMM) return true;
  it->second = kind;
  return false;
}

void SchedRecorder::OnRecord(std::size_t stream, const PerfRecord& r) {
  CpuStream& s = streams_[stream];
  if (IsDuplicate(s, r)) return;
  const std::uint64_t ts = clock_.ToSession(r.time);
  // The reader's own thread is left out (its start, name and switches are ours, not the app's).
  if (r.kind != PERF_RECORD_LOST && r.tid == reader_tid_.load(std::memory_order_relaxed)) return;
  if (names_pending_) {
    names_pending_ = false;
    EmitInitialNames(initial_tids_);
  }
  switch (r.kind) {
    case PERF_RECORD_SWITCH:
      if (r.pid != pid_) return;
      if (r.switch_out) {
        Write<hush_tp_sched_switch_out>(s, ts, r.tid, static_cast<std::uint8_t>(r.preempted), r.cpu);
      } else {
        Write<hush_tp_sched_switch_in>(s, ts, r.tid, r.cpu);
      }
      break;
    case PERF_RECORD_FORK:
      if (r.pid == pid_ && r.ppid == pid_ && r.tid != pid_) Write<hush_tp_sched_thread_start>(s, ts, r.tid);
      break;
    case PERF_RECORD_EXIT:
      if (r.pid == pid_) Write<hush_tp_sched_thread_exit>(s, ts, r.tid);
      break;
    case PERF_RECORD_COMM:
      if (r.pid == pid_) Write<hush_tp_sched_thread_name>(s, ts, r.tid, std::string_view(r.comm));
      break;
    case PERF_RECORD_LOST: {
      std::uint64_t now = ts;
      if (Attach(s, &now)) s.ring->CountDiscarded(r.lost);
      break;
    }
    default:
      break;
  }
}

}  // namespace hush::sched
