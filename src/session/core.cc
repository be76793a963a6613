// Session start/stop, the consumer thread and trace-directory management.
#include "session/core.h"

#include "base/dir_stream.h"
#include "base/errno_message.h"
#include "base/fork_gate.h"
#include "base/library_thread.h"
#include "base/membarrier.h"
#include "base/proc_file.h"
#include "base/user_directory.h"
#include "base/write_all.h"
#include "filter/pattern_limits.h"
#include "format/ctf_metadata.h"
#include "format/numbered_name.h"
#include "format/ring_location.h"
#include "sched/sched_events.h"
#include "sched/sched_recorder.h"
#include "session/crash_handler.h"
#include "session/files.h"
#include "session/ring_sweep.h"
#include "session/writers.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>


namespace hush::session {

using base::ErrnoMessage;

bool WriteFileAt(int dirfd, const char* name, const std::string& content, std::string* error) {
  const std::string tmp = std::string(".") + name + ".tmp";
  base::UniqueFd fd(::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) {
    *error = ErrnoMessage(std::string("cannot write ") + name);
    return false;
  }
  if (const int e = base::WriteAll(fd.get(), content.data(), content.size()); e != 0) {
    errno = e;
    *error = ErrnoMessage(std::string("cannot write ") + name);
    fd.reset();
    ::unlinkat(dirfd, tmp.c_str(), 0);
    errno = e;  // the caller looks for ENOSPC (WriteMetadata)
    return false;
  }
  fd.reset();
  if (::renameat(dirfd, tmp.c_str(), dirfd, name) != 0) {
    *error = ErrnoMessage(std::string("cannot rename ") + name);
    return false;
  }
  return true;
}

std::unique_ptr<filter::Program> BindFilter(const filter::Parsed& parsed, const registry::Event& e,
                                            filter::Error* error) {
  std::vector<std::string> names, types;
  for (const auto& f : e.meta.fields) {
    names.push_back(f.name);
    types.push_back(f.type);
  }
  return filter::Program::Bind(parsed, e.meta.FullName(), names, types, error);
}

std::atomic<Core*> Core::active_{nullptr};
std::atomic<std::uint64_t> Core::next_generation_{1};

namespace {
std::uint8_t g_inherited_clock_uuid[16] = {};  // all zero: none
// A fork child's session (OnForkChild): stopped at exit, never freed, kept reachable for leak checkers.
[[gnu::used]] Core* g_fork_child_core = nullptr;
}  // namespace

std::string ClockUuidOfTrace(const std::string& dir) {
  const base::UniqueFd fd(::open((dir + "/metadata").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return "";
  std::string text(8192, '\0');
  const ssize_t n = ::read(fd.get(), text.data(), text.size());
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return format::ClockUuidOfMetadata(text);
}

void InheritClockUuid(const std::string& uuid) {
  std::uint8_t out[16];
  if (format::UuidFromString(uuid, out)) std::memcpy(g_inherited_clock_uuid, out, 16);
}

namespace {

using base::ErrnoMessage;

// Creates `path` as a 0700 directory, or accepts an existing empty directory owned by us.
// Returns an O_DIRECTORY|O_NOFOLLOW descriptor, so a symlink planted at `path` is refused.
// `*created`: the directory was made here (a failed start removes it again).
base::UniqueFd CreateTraceDirectory(const std::string& path, bool* created, std::string* error) {
  *created = ::mkdir(path.c_str(), 0700) == 0;
  if (!*created && errno != EEXIST) {
    *error = ErrnoMessage("cannot create trace directory " + path);
    return {};
  }
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    *error = ErrnoMessage("cannot open trace directory " + path);
    if (*created) ::rmdir(path.c_str());
    return {};
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid()) {
    *error = "trace directory " + path + " is not owned by this user";
    return {};
  }
  if ((st.st_mode & 077) != 0) ::fchmod(fd.get(), 0700);
  if (*created) return fd;
  // Must be empty: never mix a new trace with files already there (an old trace, or files an
  // attacker planted for us to append to).
  base::DirStream scan = base::DirStream::Of(fd.get());
  const bool empty = scan && scan.Next() == nullptr;
  if (!empty) {
    const bool has_trace = ::faccessat(fd.get(), "metadata", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
    *error = "trace directory " + path + (has_trace ? " already holds a trace" : " is not empty");
    return {};
  }
  return fd;
}


sem_t g_snapshot_sem;
// SIGUSR2 asks for a write of the flight recorder into the trace directory (a lock-free atomic:
// async-signal-safe, as sem_post is).
std::atomic<bool> g_snapshot_requested{false};
void OnSnapshotSignal(int) {
  g_snapshot_requested.store(true, std::memory_order_relaxed);  // the semaphore orders it
  ::sem_post(&g_snapshot_sem);
}

}  // namespace

Core::~Core() {
  // The stream consumer is detached (EnsureConsumer): Stop() told it to stop and closed the
  // streams to it (writes_closed_), so once woken here it leaves its loop without writing; its
  // last access to this Core is the release store of consumer_exited_, which this acquire load
  // waits for before the memory goes. ~Core runs off the traced program's path (a later start
  // or stop, core.h "Lifetime"), so a wait of a scheduling delay costs nobody an exit.
  if (consumer_started_.load(std::memory_order_relaxed)) {
    WakeConsumerToStop();
    while (!consumer_exited_.load(std::memory_order_acquire)) {
      const struct timespec pause = {0, 100 * 1000};
      ::nanosleep(&pause, nullptr);
    }
  }
  if (consumer_.joinable()) consumer_.join();  // flight mode's snapshot thread (Stop joined it)
}

bool Core::UserMayTrace() const {
  const uid_t uid = ::geteuid();
  return uid == owner_uid_ || uid == 0;
}

void Core::StopForCredentials() {
  if (sched_) sched_->Stop();  // as Stop(): before mu_
  std::unique_lock<std::mutex> lock(mu_);
  if (stopped_) return;
  std::fprintf(stderr,
               "hushtrace: this process now runs as user %u, who could not have started the session of user %u: "
               "tracing stops; what was recorded stays in %s (hushtrace recover)\n",
               static_cast<unsigned>(::geteuid()), static_cast<unsigned>(owner_uid_), output_dir_.c_str());
  Unpublish(lock);
  lock.unlock();
  // As Stop(): the threads go (the stream consumer leaves its loop; flight mode's snapshot thread
  // is woken and joined, never from itself: only Stop and the stream consumer come here).
  WakeConsumerToStop();
  if (options_.mode == Mode::kFlight) {
    ::sem_post(&g_snapshot_sem);
    if (consumer_.joinable()) consumer_.join();
  }
}

void Core::MarkStopping() {
  std::lock_guard<std::mutex> wake(wake_mu_);
  stopping_ = true;
}

void Core::WakeConsumerToStop() {
  MarkStopping();
  wake_cv_.notify_one();
}

// The parent's session as a fork child sees it: its rings are not mapped here (MADV_DONTFORK,
// ring_buffer.cc) and it holds no stream descriptor (RingSlot), so nothing in the child (a Stop() of the
// copied Session, a child that drops its privileges) can write into the parent's trace. The
// parent's Core is never freed in the child (session_api.cc keeps it as an orphan).
void Core::ReleaseParentInChild(Core* parent, bool keep_directories) {
  parent->stopped_ = true;
  // The parent's snapshot thread is not in the child: its snapshots' descriptors are closed here.
  parent->open_snapshots_.clear();
  parent->snapshots_dirfd_.reset();
  if (keep_directories) return;  // a following child creates its own files there
  parent->dirfd_.reset();
  parent->ring_dirfd_.reset();
}

void Core::ForgetInChild() {
  if (Core* parent = active_.load(std::memory_order_relaxed)) ReleaseParentInChild(parent, false);
  active_.store(nullptr, std::memory_order_relaxed);
  writers::ForgetInChild();
  ForgetOwnedCoresInChild();
  // The descriptors and the patched text are copy-on-write private memory: disabling them here
  // does not affect the parent. Only this thread exists in the child. Its static-key sites go
  // back to NOPs (src/patch); if another thread of the parent was in the middle of a patch batch,
  // they keep their jumps, which find every state 0.
  registry::Global().DisableAllInChild();
  crash::Disarm();  // a crash of the child is not the parent's trace's
  // This thread's writer points into a MAP_SHARED ring of the parent: detach it.
  internal::ThreadWriter& w = internal::tls_writer;
  w.end.store(nullptr, std::memory_order_relaxed);
  w.pos = nullptr;
  w.ring = nullptr;
  w.generation = 0;
}

void Core::OnForkChild() {
  Core* parent = active_.load(std::memory_order_relaxed);
  if (parent == nullptr || !parent->options_.follow_children) {
    ForgetInChild();
    return;
  }
  // Only this thread exists. The parent's Core, rings and locks (which another thread may have
  // held at fork time) are left untouched, and marked stopped so that a Session::Stop() in the
  // child cannot write the parent's rings. The child gets a new Core (kept forever, as all
  // cores) writing its own rings and streams into the same directory, under the parent's
  // metadata: same event ids (the registry is a copy), same clock. Events stay enabled.
  auto* child = new Core();
  g_fork_child_core = child;
  child->options_ = parent->options_;
  child->output_dir_ = parent->output_dir_;
  // The descriptors are the child's own copies; the parent's Core (a copy in the child's memory,
  // never freed here) gives them up.
  child->dirfd_ = std::move(parent->dirfd_);
  child->ring_dirfd_ = std::move(parent->ring_dirfd_);
  child->shared_ring_dir_ = parent->shared_ring_dir_;
  child->trace_path_ = parent->trace_path_;
  child->subbuf_size_ = parent->subbuf_size_;
  child->subbuf_count_ = parent->subbuf_count_;
  child->budget_ = parent->budget_;  // a budget of its own: its rings are its own memory
  child->budget_left_.store(parent->budget_, std::memory_order_relaxed);
  child->owner_uid_ = parent->owner_uid_;
  child->info_ = parent->info_;
  child->info_.pid = static_cast<std::uint32_t>(::getpid());
  child->calibration_ = parent->calibration_;
  child->forked_child_ = true;
  child->file_numbers_ = std::move(parent->file_numbers_);  // the page shared by the whole tree
  ReleaseParentInChild(parent, true);  // after the copies above: the directories stay open
  child->generation_ = next_generation_.fetch_add(1, std::memory_order_relaxed);
  // This thread's writer points into a ring of the parent: the next event re-attaches (new
  // generation) to a ring of the child.
  internal::ThreadWriter& w = internal::tls_writer;
  w.end.store(nullptr, std::memory_order_relaxed);
  w.pos = nullptr;
  w.ring = nullptr;
  w.generation = 0;
  ForgetThreadInChild();
  ForgetOwnedCoresInChild();
  active_.store(child, std::memory_order_release);
  // The parent's perf events are not inherited by forked processes (inherit_thread): the child
  // opens its own. Its reader thread creates no file before the child's first record, so a
  // child that execs at once leaves nothing behind.
  if (parent->sched_ != nullptr) {
    parent->sched_->ReleaseInChild();
    // ThreadSanitizer aborts a process that starts a thread after a multi-threaded fork (its
    // die_after_fork); glibc supports it. TSan builds leave --sched children without sched streams.
#if !defined(__SANITIZE_THREAD__)
    if (child->options_.sched) child->StartSched();
#endif
  }
}

void Core::WarnOnce(std::atomic<bool>& flag, const char* message) {
  if (!flag.exchange(true, std::memory_order_relaxed)) std::fprintf(stderr, "hushtrace: %s\n", message);
}

ring::Ring* Core::NoBufferForThread(const std::string& why) {
  WarnOnce(warned_attach_, (why + "; the events of threads without a buffer are discarded").c_str());
  CountUnattached();
  return nullptr;
}

bool Core::Start(const SessionOptions& options, std::string* error) {
  std::unique_lock<std::mutex> lock(mu_);
  if (Active() != nullptr) {
    *error = "a session is already active in this process";
    return false;
  }
  // The clock's reference now: its first estimate in this process is taken over the span of the
  // work below (directories, registry scan) instead of a spin of its own (clock.h).
  calibration_ = clock::CalibrateBegin();
  options_ = options;
  if (options_.buffer_size < 16 * 1024) {
    *error = "buffer size must be at least 16k";
    return false;
  }
  if (options_.buffer_size > ring::kMaxBufferSize) {
    *error = "buffer size " + std::to_string(options_.buffer_size) +
             " is above the largest ring, 256M (" + std::to_string(ring::kMaxSubbufCount) +
             " sub-buffers of 1M)";
    return false;
  }
  if (!options_.snapshot_on.empty() && options_.mode != Mode::kFlight) {
    *error = "snapshot triggers (snapshot_on) need flight mode";
    return false;
  }
  if (options_.blocking_timeout_ns != 0 && options_.mode != Mode::kStream) {
    *error = "blocking applies to stream mode (a flight recorder overwrites, it never waits)";
    return false;
  }
  if (!filter::CheckPatterns(options_.events, "event", error) ||
      !filter::CheckPatterns(options_.snapshot_on, "snapshot-on", error) ||
      !filter::ParseTriggers(options_.snapshot_on, &trigger_specs_, error)) {
    return false;
  }
  // Stop's grace period (writers.h) and the patching of sites need the process's membarrier
  // registration (base/membarrier.h: one, for both). Registered here, before the session starts a
  // thread: while a process has one thread the kernel registers it at once, with more it waits
  // for an RCU grace period first (synchronize_rcu). Registered lazily at Stop, that wait was
  // 10 ms on this VM on the exit path of every short traced program (strace of
  // bench/startup_hush; docs/benchmarks.md, "Per exec under a session").
  base::PrivateExpeditedAvailable();
  // Parsed before anything is created: a filter that does not parse, or uses what no payload
  // holds ($tid, $thread), costs nothing.
  std::unique_ptr<filter::Parsed> parsed;
  if (!options_.filter.empty()) {
    filter::Error filter_error;
    parsed = filter::Parse(options_.filter, &filter_error);
    if (!parsed || !filter::Program::Check(*parsed, &filter_error)) {
      *error = "bad filter, " + filter::Describe(options_.filter, filter_error);
      return false;
    }
  }
  // Sub-buffers: 8 of them, each at least 4 KiB and a multiple of 4 KiB, at most 1 MiB.
  // Small buffers: 4 KiB sub-buffers, as many as fit (at least 4 for 16 KiB).
  subbuf_count_ = 8;
  subbuf_size_ = (options_.buffer_size / subbuf_count_) & ~std::size_t{4095};
  if (subbuf_size_ < ring::kMinSubbufSize) {
    subbuf_size_ = ring::kMinSubbufSize;
    subbuf_count_ = static_cast<std::uint32_t>(options_.buffer_size / subbuf_size_);
  }
  if (subbuf_size_ > (1u << 20)) {
    subbuf_size_ = 1u << 20;
    subbuf_count_ = static_cast<std::uint32_t>(std::min<std::size_t>(
        options_.buffer_size / subbuf_size_, ring::kMaxSubbufCount));
  }
  // The budget must hold one full ring (a lone thread is never the one that runs out).
  const std::uint64_t ring_bytes = ring::RingBytes(subbuf_size_, subbuf_count_);
  budget_ = options_.buffer_budget != 0
                ? options_.buffer_budget
                : std::max<std::uint64_t>(kDefaultBufferBudget, 4 * ring_bytes);
  if (budget_ < ring_bytes) {
    *error = "buffer budget " + std::to_string(budget_) + " bytes cannot hold one ring of buffer size " +
             std::to_string(options_.buffer_size) + " (" + std::to_string(ring_bytes) + " bytes with its header)";
    return false;
  }
  budget_left_.store(budget_, std::memory_order_relaxed);
  owner_uid_ = ::geteuid();
  output_dir_ = options_.output_dir;
  dirfd_ = CreateTraceDirectory(output_dir_, &created_dir_, error);
  if (!dirfd_) return false;
  // The ring files live in the trace directory itself, hidden (.ring_<N>, docs/format.md): a
  // directory of their own cost every traced process a mkdir and an rmdir, ~0.1-0.2 ms on ext4
  // (docs/benchmarks.md, "Per exec under a session"). What the directory's presence told a
  // reader (a session writes here) the lock says now: shared, held through dirfd_'s open file
  // description for as long as the session runs, by the fork children that inherit it too, and
  // gone with the last of them, crash or not (recover::TraceBeingWritten). A reader's probe
  // holds it exclusively for two system calls: retried for a while, then done without.
  for (int tries = 0; tries < 100 && ::flock(dirfd_.get(), LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK; ++tries) {
    const timespec pause = {0, 20 * 1000};
    ::nanosleep(&pause, nullptr);
  }
  // Fork children take their file numbers from the same counter (file_numbers.h). Without the
  // shared page they still find free numbers, one O_EXCL attempt per number taken before them.
  if (options_.follow_children) file_numbers_.Map();
  if (::getrandom(info_.uuid, sizeof info_.uuid, 0) != sizeof info_.uuid) {
    for (auto& b : info_.uuid) b = static_cast<std::uint8_t>(std::rand());
  }
  info_.uuid[6] = static_cast<std::uint8_t>((info_.uuid[6] & 0x0f) | 0x40);
  info_.uuid[8] = static_cast<std::uint8_t>((info_.uuid[8] & 0x3f) | 0x80);
  PlaceRings();  // named after the uuid
  std::memcpy(info_.clock_uuid, g_inherited_clock_uuid, sizeof info_.clock_uuid);
  info_.pid = static_cast<std::uint32_t>(::getpid());
  info_.procname = base::ProcessName();
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  info_.hostname = host;
  info_.mode = options_.mode == Mode::kFlight ? "flight" : "stream";
  info_.buffer_size = options_.buffer_size;
  generation_ = next_generation_.fetch_add(1, std::memory_order_relaxed);

  registry::Registry& registry = registry::Global();
  registry.Scan();
  registry.ResetIds();
  // A filter that binds to none of the events it would enable is refused before the session is
  // published: nothing of a failed start is ever visible to other threads.
  if (parsed) {
    std::string bind_error;
    bool binds = false;
    for (const registry::Event* e : registry.Matching(options_.events)) {
      filter::Error why;
      if (BindFilter(*parsed, *e, &why)) {
        binds = true;
        break;
      }
      if (bind_error.empty()) {
        bind_error = e->meta.FullName() + ": " + why.Message() + ")\n" +
                     filter::Caret(options_.filter, why.column);
      }
    }
    if (!binds) {
      *error = "the filter applies to no enabled event (" +
               (bind_error.empty() ? std::string("no event matches the patterns)") : bind_error);
      Abandon();
      return false;
    }
  }
  clock::CalibrateEnd(calibration_);  // PrepareTriggers converts durations to cycles
  info_.clock = calibration_;
  if (!PrepareTriggers(error)) {
    Abandon();
    return false;
  }
  // The first chunk of ring slots, here on the starting thread: a program's first 32 threads
  // then attach without an allocation of their own (RingObjects in core.h says why that matters).
  slots_.Ensure(0);
  // Publish the session before enabling events: a thread that sees an enabled event and takes
  // the slow path must find the session (acquire in Active() pairs with this release).
  published_ = true;
  published_at_ = clock::Now(use_tsc());
  active_.store(this, std::memory_order_release);
  if (parsed) {
    filters_.clear();
    filters_.resize(registry.events().size());
    registry.Enable(options_.events, [&](registry::Event& e) {
      filter::Error why;
      filters_[static_cast<std::size_t>(e.id)] = BindFilter(*parsed, e, &why);
      e.filtered = true;
    });
  } else {
    registry.Enable(options_.events);
  }
  if (!trigger_specs_.empty()) BindTriggers();
  if (options_.sched) {
    registry.Enable(std::vector<std::string>(std::begin(sched::kSchedEventGlobs),
                                             std::end(sched::kSchedEventGlobs)));
  }
  if (!WriteMetadata(error)) {
    // Threads may have attached rings meanwhile: unpublish, wait for them, remove every file.
    Unpublish(lock);
    Abandon();
    return false;
  }
  if (options_.mode == Mode::kFlight) {
    static std::once_flag signal_once;
    std::call_once(signal_once, [] {
      ::sem_init(&g_snapshot_sem, 0, 0);
      struct sigaction sa = {};
      sa.sa_handler = OnSnapshotSignal;
      sa.sa_flags = SA_RESTART;
      sigemptyset(&sa.sa_mask);
      ::sigaction(SIGUSR2, &sa, nullptr);
    });
    try {
      consumer_ = base::StartLibraryThread("hush-snapshot", [this] { SignalLoop(); });
    } catch (const std::system_error& e) {
      // No thread (the process's limits): nothing of the session is left, as for the metadata.
      *error = std::string("cannot start the snapshot thread: ") + e.what();
      Unpublish(lock);
      Abandon();
      return false;
    }
  }
  crash::Arm(dirfd_.get());  // a fatal signal leaves DIR/.crashed (crash_handler.h)
  base::InstallForkGate([] { Core::OnForkChild(); });  // the gate is reset before OnForkChild runs
  if (options_.sched) StartSched();
  return true;
}

namespace {

// Removes the files of buffer N that never became part of a trace: a failed Start's (Abandon) and
// one whose session stopped while they were being created (Attach).
void RemoveBufferFiles(int dirfd, int ring_dirfd, std::uint32_t n) {
  ::unlinkat(dirfd, format::StreamName(n).c_str(), 0);
  ::unlinkat(ring_dirfd, format::RingName(n).c_str(), 0);
}

}  // namespace

void Core::Abandon() {
  for (std::uint32_t i = 0, n = ring_count_.load(std::memory_order_relaxed); i < n; ++i) {
    RemoveBufferFiles(dirfd_.get(), ring_dir(), slots_[i].ring->index());
  }
  CloseRingDirectory();
  if (dirfd_) {
    ::unlinkat(dirfd_.get(), "metadata", 0);
    ::unlinkat(dirfd_.get(), ".metadata.tmp", 0);
  }
  dirfd_.reset();
  if (created_dir_) ::rmdir(output_dir_.c_str());
}

void Core::PlaceRings() {
  // tmpfs and ramfs: the trace directory is memory already.
  struct statfs fs;
  if (::fstatfs(dirfd_.get(), &fs) != 0 || fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC) return;
  // /dev/shm must be tmpfs with room for the whole budget: the budget bounds what the rings can
  // make resident, and a container's /dev/shm (64 MiB by default) would otherwise make the
  // producers discard what a disk would have held.
  struct statfs shm;
  if (::statfs(format::kSharedRingBase, &shm) != 0 || shm.f_type != TMPFS_MAGIC ||
      static_cast<std::uint64_t>(shm.f_bavail) * static_cast<std::uint64_t>(shm.f_bsize) < budget_) {
    return;
  }
  const std::string user_dir = base::UserDirectory(format::kSharedRingBase, owner_uid_);
  if (base::MakeUserDirectory(user_dir, owner_uid_) != 0) return;
  // A new directory, never an existing one: the uuid is random, so one already there is not ours.
  struct stat st;
  if (::fstat(dirfd_.get(), &st) != 0) return;
  const std::string dir = format::SharedRingDirectory(st, format::UuidToString(info_.uuid));
  if (::mkdir(dir.c_str(), 0700) != 0) return;
  ring_dirfd_.reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  // The way back to the trace directory, for the sweep of orphans (session/ring_sweep.h): its
  // absolute path (output_dir_ may be relative). Not read from /proc/self/fd: a process whose /proc
  // entries were looked up pays for them at its exit (the dentries are flushed under a lock:
  // +84 us per traced exec on ext4 here, bench/startup_cost.sh).
  std::string path = output_dir_;
  if (path.empty() || path[0] != '/') {
    char cwd[4096];
    path = ::getcwd(cwd, sizeof cwd) != nullptr ? std::string(cwd) + "/" + path : std::string();
  }
  if (!ring_dirfd_ || path.empty() || ::symlinkat(path.c_str(), ring_dirfd_.get(), format::kRingTraceLink) != 0) {
    ring_dirfd_.reset();
    ::rmdir(dir.c_str());  // empty: no link was made
    return;
  }
  shared_ring_dir_ = dir;
  trace_path_ = path;
}

void Core::CloseRingDirectory() {
  if (!ring_dirfd_) return;
  // Removed with its link once no ring file is left in it; a fork child's rings may still be
  // there, and then the link stays for them (the last process of the tree removes both).
  ::unlinkat(ring_dirfd_.get(), format::kRingTraceLink, 0);
  if (::rmdir(shared_ring_dir_.c_str()) != 0) {
    ::symlinkat(trace_path_.c_str(), ring_dirfd_.get(), format::kRingTraceLink);
  }
  ring_dirfd_.reset();
}

void Core::StartSched() {
  std::string why;
  sched_ = sched::SchedRecorder::Start(this, calibration_.freq_hz, &why);  // takes mu_ only from its own thread
  if (!sched_) {
    std::fprintf(stderr, "hushtrace: --sched: no scheduler events in this trace: %s; the rest is recorded\n",
                 why.c_str());
  }
}

bool Core::WriteMetadata(std::string* error) {
  const FileSizeSignalGuard no_sigxfsz;
  info_.clock = calibration_;
  std::string& text = metadata_text_;
  format::BuildMetadata(info_, registry::Global().EventsWithIds(), &text);
  // Rewrites (the clock refined every 10 s and at Stop, the loss counts) go over the file in
  // place while the new text fits in it: one pwrite of the whole file, same size, no new inode.
  // Replacing the file by a rename instead made ext4 write the new file's data out at once
  // (auto_da_alloc) and allocate and free an inode per rewrite: ~0.2 ms of every short traced
  // program's exit (docs/benchmarks.md, "Per exec under a session"). For the room, a new file
  // is padded with blanks, which TSDL ignores, to a whole number of 4 KiB with at least 1 KiB
  // to spare: more event classes (a library loaded later) outgrow it and take the rename path.
  if (metadata_size_ >= text.size()) {
    text.resize(metadata_size_, ' ');
    text.back() = '\n';
    const base::UniqueFd fd(::openat(dirfd_.get(), "metadata", O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd && ::pwrite(fd.get(), text.data(), text.size(), 0) == static_cast<ssize_t>(text.size())) return true;
    while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
    text += '\n';
  }
  const std::size_t padded = (text.size() + 1024 + 4095) / 4096 * 4096;
  const std::size_t unpadded = text.size();
  text.resize(padded, ' ');
  text.back() = '\n';
  // The first write creates the file under its own name: the directory was empty or new, and
  // the session's lock (taken by Start before this) tells a reader the trace is being written.
  // A temporary file and a rename cost every traced exec two more directory updates.
  if (metadata_size_ == 0) {
    const base::UniqueFd fd(::openat(dirfd_.get(), "metadata", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd && base::WriteAll(fd.get(), text.data(), text.size()) == 0) {
      metadata_size_ = padded;
      return true;
    }
    if (fd) ::unlinkat(dirfd_.get(), "metadata", 0);  // a failed write: the rename path below says why
  }
  if (WriteFileAt(dirfd_.get(), "metadata", text, error)) {
    metadata_size_ = padded;
    return true;
  }
  // A full file system (the usual reason events were lost on write) has no room for the new copy,
  // but the blocks of the metadata written at start are there: overwrite it in place, which
  // allocates nothing while the text does not outgrow them. Not atomic, so only as a fallback.
  if (errno != ENOSPC && errno != EDQUOT) return false;
  text.resize(unpadded);
  const base::UniqueFd fd(::openat(dirfd_.get(), "metadata", O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return false;
  const bool ok = ::pwrite(fd.get(), text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()) &&
                  ::ftruncate(fd.get(), static_cast<off_t>(text.size())) == 0;
  if (ok) error->clear();
  return ok;
}

ring::Ring* Core::Attach(internal::ThreadWriter& w, bool fresh) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopped_) return nullptr;
  if (!UserMayTrace()) {  // the session is stopped by the consumer's next pass, or by Stop
    foreign_user_.store(true, std::memory_order_relaxed);
    CountUnattached();
    lock.unlock();
    WakeConsumer();
    return nullptr;
  }
  // Reuse a free ring (its previous thread exited) before creating one.
  for (std::uint32_t i = 0, n = fresh ? 0 : ring_count_.load(std::memory_order_relaxed); i < n; ++i) {
    RingSlot& slot = slots_[i];
    if (slot.writer == nullptr) {
      slot.writer = &w;
      return slot.ring.get();
    }
  }
  ring::RingConfig config;
  config.subbuf_size = subbuf_size_;
  config.subbuf_count = subbuf_count_;
  config.budget = &budget_left_;
  if (!scratch_) {
    scratch_ = base::AnonMapping::Create(subbuf_size_);  // off the heap: base/anon_mapping.h
    if (!scratch_) return NoBufferForThread(ErrnoMessage("cannot map the copy buffer"));
  }
  config.scratch = scratch_.data();  // compact rings (below) use less of it
  // Past half the budget, new threads get compact rings: 4 KiB sub-buffers (8 KiB for the header
  // and a first one), so that thousands of threads still each get a ring. Their largest event is
  // 4 KiB less the headers; a larger one is discarded and counted as in any ring.
  if (budget_left_.load(std::memory_order_relaxed) < budget_ / 2) {
    if (!warned_budget_.exchange(true, std::memory_order_relaxed)) {
      std::fprintf(stderr, "hushtrace: half the buffer budget (%llu MiB) is taken: new threads get compact "
                           "rings of %u x 4 KiB\n",
                   static_cast<unsigned long long>(budget_ >> 20), subbuf_count_);
    }
    config.subbuf_size = ring::kMinSubbufSize;
  }
  config.mode = options_.mode == Mode::kFlight ? ring::RingMode::kFlight : ring::RingMode::kStream;
  std::memcpy(config.uuid, info_.uuid, sizeof config.uuid);
  config.pid = info_.pid;
  // The files are created without mu_. Creating two files and sizing a ring takes 0.2-0.9 ms of
  // a busy machine's time (ext4, 2 CPUs, 16 threads starting at once), and a thread preempted
  // while holding mu_ made every other starting thread wait for it: the first events of 16
  // hackbench threads queued ~7 ms behind each other (issue 19). The directories stay open
  // meanwhile: Unpublish (Stop, a failed Start) waits for creating_ to fall to 0 before anything
  // closes them, and the creator installs nothing once the session is stopped.
  // At most kMaxCreators threads create them at a time: each holds two descriptors for a moment,
  // and a burst of threads starting together in a program near its descriptor limit took more
  // than it had left and lost their rings (EMFILE; 70 threads under a limit of 64,
  // tests/runtime/session_test.cc). A waiter is woken as each creation ends.
  created_cv_.wait(lock, [this] { return creating_ < kMaxCreators || stopped_; });
  if (stopped_) return nullptr;
  if (ring_count_.load(std::memory_order_relaxed) + creating_ >= kMaxRings) {
    WarnOnce(warned_alloc_, "too many threads: the thread's events are discarded");
    CountUnattached();
    return nullptr;
  }
  void* const storage = ring_objects_.Take();
  if (storage == nullptr) return NoBufferForThread(ErrnoMessage("cannot map the rings' objects"));
  ++creating_;
  const int dirfd = dirfd_.get();
  const int ring_dirfd = ring_dir();
  lock.unlock();
  std::string error;
  RingPtr r = CreateBufferFiles(storage, dirfd, ring_dirfd, config, &error);
  if (!r && errno == ENOBUFS) {
    error += " (" + std::to_string(budget_ >> 20) + " MiB; --buffer-budget, HUSHTRACE_BUFFER_BUDGET)";
  }
  lock.lock();
  --creating_;
  created_cv_.notify_all();  // Unpublish waits for 0, creators for fewer than kMaxCreators
  if (!r) {
    ring_objects_.Give(storage);
    return NoBufferForThread(error);
  }
  if (stopped_) {  // stopped meanwhile: the files were never part of the trace
    RemoveBufferFiles(dirfd, ring_dirfd, r->index());
    r.reset();
    ring_objects_.Give(storage);
    return nullptr;
  }
  const std::uint32_t index = ring_count_.load(std::memory_order_relaxed);
  slots_.Ensure(index);
  RingSlot& slot = slots_[index];
  slot.ring = std::move(r);
  slot.writer = &w;
  // Release: pairs with the acquire in the consumer's loop; it sees a fully built slot.
  ring_count_.store(index + 1, std::memory_order_release);
  return slot.ring.get();
}

RingPtr Core::CreateBufferFiles(void* storage, int dirfd, int ring_dirfd, const ring::RingConfig& config,
                                std::string* error) {
  // File number N of ring_<N> / stream_<N>: from the counter of the process tree
  // (file_numbers.h); O_EXCL on both files makes N ours, and a number found taken is skipped.
  const FileSizeSignalGuard no_sigxfsz;  // sizing a ring file may exceed RLIMIT_FSIZE
  for (std::uint32_t tries = 0; tries < 1024; ++tries) {
    const std::uint32_t n = file_numbers_.Take();
    error->clear();
    RingPtr r(ring::Ring::CreateAt(storage, ring_dirfd, n, config, error));
    if (!r) {
      if (errno == EEXIST) continue;  // Create fails right after its O_EXCL open
      return nullptr;
    }
    const std::string stream = format::StreamName(n);
    // Created now, empty, to claim N; the consumer reopens it by name for each write-out.
    const base::UniqueFd fd(::openat(dirfd, stream.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd) return r;
    const int e = errno;
    ::unlinkat(ring_dirfd, format::RingName(n).c_str(), 0);
    if (e != EEXIST) {
      errno = e;
      *error = ErrnoMessage("cannot create " + stream);
      return nullptr;
    }
  }
  *error = "no free stream number in " + output_dir_;
  return nullptr;
}

void Core::Detach(internal::ThreadWriter& w) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  for (std::uint32_t i = 0, n = ring_count_.load(std::memory_order_relaxed); i < n; ++i) {
    if (slots_[i].writer == &w) {
      // Ownerless first: the close publishes `produced` (release), and the consumer that sees
      // the exit's packet closed must not take the ring for a busy one (PrefaultBusyRings).
      slots_[i].ring->header().owner_tid.store(0, std::memory_order_relaxed);
      slots_[i].ring->ClosePacket(w, clock::Now(use_tsc()));
      slots_[i].writer = nullptr;
    }
  }
  w.ring = nullptr;
  w.generation = 0;
}

void Core::WakeConsumer() { wake_cv_.notify_one(); }

bool Core::WaitForRoom(std::uint64_t* waiting_since) {
  if (options_.blocking_timeout_ns == 0) return false;
  // A stopping session: its consumer writes no more packets for a producer to wait for (and
  // Unpublish waits for this thread to leave the slow path, writers.h).
  if (active_.load(std::memory_order_relaxed) != this) return false;
  timespec now;
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const std::uint64_t ns = static_cast<std::uint64_t>(now.tv_sec) * 1000000000u + static_cast<std::uint64_t>(now.tv_nsec);
  if (*waiting_since == 0) {
    *waiting_since = ns;
    blocked_events_.fetch_add(1, std::memory_order_relaxed);
  } else if (ns - *waiting_since >= options_.blocking_timeout_ns) {
    return false;
  }
  EnsureConsumer();
  WakeConsumer();
  // 50 us: a packet's write-out takes a few; shorter only spins the CPU the consumer needs.
  const timespec step = {0, 50000};
  ::nanosleep(&step, nullptr);
  return true;
}

void Core::EventTooLarge() {
  WarnOnce(warned_oversize_,
           "an event larger than a sub-buffer was discarded (counted); raise the buffer size");
}

// Stream mode: the consumer starts with the session (session_api.cc); this is the fallback for a
// session whose start could not make it then (a fork child's).
void Core::EnsureConsumer() {
  if (options_.mode != Mode::kStream || consumer_started_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_ || consumer_started_.load(std::memory_order_relaxed)) return;
  // Detached: Stop() does not wait for it (see Stop) and a Core that is never freed (stopped at
  // exit, or whose grace period never ends) leaves no joinable thread behind. ~Core waits for
  // consumer_exited_ instead. Started without allocating (base/library_thread.h): the loop itself
  // allocates nothing, so the thread never costs the process a malloc arena.
  if (const int e = base::StartLibraryThreadNoAlloc(&consumer_start_); e != 0) {
    // No consumer: the rings fill and their events are counted as discarded; Stop writes what
    // they hold. Not retried on every packet: marked started and exited.
    std::fprintf(stderr, "hushtrace: cannot start the consumer thread (%s); events past each thread's ring "
                         "are discarded\n",
                 std::strerror(e));
    consumer_exited_.store(true, std::memory_order_relaxed);
  }
  consumer_started_.store(true, std::memory_order_relaxed);
}

void Core::RunConsumer(void* core) {
  Core* self = static_cast<Core*>(core);
  self->ConsumerLoop();
  // Release: everything the loop did to this Core happens before ~Core's acquire. Nothing of the
  // Core may be touched after this store: it may be freed at once.
  self->consumer_exited_.store(true, std::memory_order_release);
}

void Core::WriteAll(bool include_open) {
  std::lock_guard<std::mutex> lock(write_mu_);
  WriteAllLocked(include_open);
}

void Core::WriteAllLocked(bool include_open, bool last) {
  // After Stop()'s final write the directories are closed (or about to be): a consumer that
  // wakes late writes nothing.
  if (writes_closed_) return;
  const FileSizeSignalGuard no_sigxfsz;
  for (std::uint32_t i = 0, n = ring_count_.load(std::memory_order_acquire); i < n; ++i) {
    ring::Ring& ring = *slots_[i].ring;
    // The periodic pass opens only the streams of rings with a closed packet not yet written.
    // A pass with the open packets (Stop, a snapshot) opens every one: besides the open packet
    // there may be losses since the last packet written, which WriteNew records in a loss
    // marker (ring_buffer.cc, WriteLossMarker), e.g. a last thread whose events were all
    // discarded.
    if (!include_open && !ring.HasUnwrittenPackets()) continue;
    const std::string stream = format::StreamName(ring.index());
    const base::UniqueFd fd(::openat(dirfd_.get(), stream.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC));
    const int open_error = fd ? 0 : errno;
    // Without a descriptor (the program used all it may have: EMFILE) the packets stay in the
    // ring for a later pass, which finds one free; the last pass counts them lost instead.
    if (!fd && !last) continue;
    ring::WriteResult r = ring.WriteNew(fd.get(), include_open);
    if (!fd && r.error != 0) r.error = open_error;
    if (r.error != 0) {
      write_errors_.fetch_add(1, std::memory_order_relaxed);
      if (!write_error_reported_.exchange(true)) {
        std::fprintf(stderr, "hushtrace: writing the trace to %s failed (%s); the events are counted lost\n",
                     output_dir_.c_str(), std::strerror(r.error));
      }
    }
  }
}

void Core::PrefaultBusyRings() {
  // A ring that closed a packet belongs to a thread that writes enough to fill packets: mapping
  // the sub-buffers it uses and the next one now (ring_buffer.h, Prefault) moves its first-touch
  // page faults, ~1.7 µs each, off the traced thread (docs/benchmarks.md, "Function tracing").
  // A stream ring grows only as far as this consumer falls behind (ring_layout.h), so each pass
  // maps at most what the ring grew by since the last one. Rings of quiet
  // threads stay lazily mapped: populating every ring would make each thread's whole buffer
  // resident. Nor is a ring populated once its thread has left (owner_tid 0: Detach): its one
  // packet was closed by the exit, not by going round, and no one writes there until another
  // thread takes the ring. Populating those cost a short many-threaded program more than all
  // its events (issue 19: 16 hackbench threads, 1 MiB each, ~20 ms of CPU per run on ext4).
  const base::ForkGateSection working;  // base/fork_gate.h
  std::lock_guard<std::mutex> lock(write_mu_);
  if (writes_closed_) return;
  for (std::uint32_t i = 0, n = ring_count_.load(std::memory_order_acquire); i < n; ++i) {
    ring::Ring& r = *slots_[i].ring;
    const ring::RingHeader& h = r.header();
    // Acquire: pairs with the release of `produced` in ClosePacket; a packet closed by a
    // thread's exit (Detach) is seen with its ring already ownerless.
    if (h.produced.load(std::memory_order_acquire) != 0 && h.owner_tid.load(std::memory_order_relaxed) != 0) {
      r.Prefault();
    }
  }
}

void Core::ConsumerLoop() {
  auto next_refine = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  bool swept = false;
  std::unique_lock<std::mutex> lock(wake_mu_);
  while (!stopping_) {
    lock.unlock();
    PrefaultBusyRings();
    lock.lock();
    if (stopping_) break;
    wake_cv_.wait_for(lock, std::chrono::milliseconds(50));
    lock.unlock();
    if (foreign_user_.load(std::memory_order_relaxed) || !UserMayTrace()) {
      StopForCredentials();  // no write-out from here on: the new user may not write the trace
      return;
    }
    {
      const base::ForkGateSection working;  // base/fork_gate.h
      WriteAll(false);
      // Once per session, after its first wait: a program that lives 50 ms pays nothing for it.
      if (!swept) {
        swept = true;
        SweepOrphanedRingDirectories(owner_uid_, shared_ring_dir_.substr(shared_ring_dir_.rfind('/') + 1));
      }
      if (std::chrono::steady_clock::now() >= next_refine) {
        // Keep the metadata's clock calibration recent for a trace whose writer might crash.
        std::lock_guard<std::mutex> session_lock(mu_);
        if (!stopped_ && !forked_child_) {
          clock::Refine(calibration_);
          std::string error;
          WriteMetadata(&error);
        }
        next_refine = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      }
    }
    lock.lock();
  }
}

bool Core::FilterAccepts(std::uint32_t id, const char* payload, std::size_t size) {
  if (id >= filters_.size()) return true;  // an event of a module scanned after Start()
  const filter::Program* program = filters_[id].get();
  if (program != nullptr && program->Matches(payload, size)) return true;
  filtered_out_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void WakeSnapshotThread() { ::sem_post(&g_snapshot_sem); }

// The snapshot thread of a flight-mode session: writes the trace directory on SIGUSR2, and the
// triggered snapshots (snapshots.cc): each begins when its trigger is taken and completes
// snapshot_after_ns later, or at Stop.
void Core::SignalLoop() {
  for (;;) {
    if (open_snapshots_.empty()) {
      while (::sem_wait(&g_snapshot_sem) != 0 && errno == EINTR) {
      }
    } else {
      auto deadline = open_snapshots_.front().deadline;
      for (const OpenSnapshot& o : open_snapshots_) deadline = std::min(deadline, o.deadline);
      const auto wait = std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{});
      timespec until;
      ::clock_gettime(CLOCK_REALTIME, &until);
      const std::int64_t ns = until.tv_nsec + std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
      until.tv_sec += static_cast<time_t>(ns / 1000000000);
      until.tv_nsec = static_cast<long>(ns % 1000000000);
      while (::sem_timedwait(&g_snapshot_sem, &until) != 0 && errno == EINTR) {
      }
    }
    bool stopping = false;
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      stopping = stopping_;
    }
    const base::ForkGateSection working;  // base/fork_gate.h
    if (!stopping && g_snapshot_requested.exchange(false, std::memory_order_relaxed)) WriteAll(true);
    TakePendingTriggers();
    const auto now = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < open_snapshots_.size();) {
      if (stopping || now >= open_snapshots_[i].deadline) {
        FinishSnapshot(open_snapshots_[i]);
        open_snapshots_.erase(open_snapshots_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    if (stopping) return;
  }
}

bool Core::Snapshot(std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) {
    if (error) *error = "the session is stopped";
    return false;
  }
  WriteAll(true);
  return true;
}

void Core::Unpublish(std::unique_lock<std::mutex>& lock) {
  stopped_ = true;
  registry::Global().DisableAll();
  // Force every attached thread off the fast path; its next event re-attaches (or is dropped).
  // Under mu_: a thread that exits meanwhile blocks in Detach() until we are done, so every
  // writer in slots_ is alive here; after the unlock below slots_[i].writer is never
  // dereferenced again (an exiting thread finds the session stopped and leaves its writer).
  for (std::uint32_t i = 0, n = ring_count_.load(std::memory_order_relaxed); i < n; ++i) {
    if (slots_[i].writer != nullptr) slots_[i].writer->end.store(nullptr, std::memory_order_seq_cst);
  }
  active_.store(nullptr, std::memory_order_release);
  // Let events already in flight commit, and learn whether any thread can still reach this Core
  // (writers.h). Bounded: a thread may be descheduled mid-event or stuck in a signal handler; the
  // owner then keeps the Core until a later grace period. Without mu_: a thread blocked in the
  // slow path on it must be able to finish its event.
  lock.unlock();
  quiescent_ = writers::WaitBeforeFreeing(std::chrono::milliseconds(20));
  lock.lock();
  // Threads creating buffer files (Attach) use the directory descriptors without mu_; they
  // install nothing now that stopped_ is set, and the directories may close once they are done.
  // Bounded by a few file creations, or by the file system's own stalls.
  created_cv_.wait(lock, [this] { return creating_ == 0; });
}

void Core::Stop(bool at_exit) {
  if (!UserMayTrace()) return StopForCredentials();
  if (sched_) sched_->Stop();  // before mu_: its last drain attaches and writes rings
  std::unique_lock<std::mutex> lock(mu_);
  if (stopped_) return;
  Unpublish(lock);
  // The open packets' events are written below; count them from the commit word (acquire: pairs
  // with the release in CommitEvent()), not from the owner's ClosePacket, which a thread still inside
  // an event after the bounded wait may be about to run. From now on the owners' events fail in
  // ReserveSlow; only such a straggler's commit, landing between this read and the write below,
  // can make the trace hold one event more per thread than Stats() counts.
  for (std::uint32_t i = 0, n = ring_count_.load(std::memory_order_relaxed); i < n; ++i) {
    if (slots_[i].writer == nullptr || !slots_[i].ring->HasOpenPacket()) continue;
    ring::RingHeader& h = slots_[i].ring->header();
    const std::uint64_t word = h.commit.offset.load(std::memory_order_acquire);
    if (word == ring::kCommitNone || word == ring::kCommitOpening) continue;
    h.events.store(h.events.load(std::memory_order_relaxed) + (word >> internal::kCommitEventsShift),
                   std::memory_order_relaxed);
  }
  lock.unlock();
  // At exit the stream consumer is told to stop, not woken: waking a thread that sleeps on
  // another CPU cost every short traced program's exit 26 us on a 2-vCPU VM (the futex wake's
  // interrupt to an idle CPU, timed inside: docs/benchmarks.md, "Per exec under a session"), and
  // the process ends that thread anyway. Otherwise it is woken, and leaves its loop without
  // writing (writes_closed_ below). It is not waited for either way: waiting for a woken thread
  // to be scheduled and exit cost a short program's exit a hand-off between threads,
  // milliseconds on a busy machine (docs/benchmarks.md, "Start-up"); ~Core waits for it.
  if (at_exit) {
    MarkStopping();
  } else {
    WakeConsumerToStop();
  }
  // Flight mode's snapshot thread waits on a process-wide semaphore, which the next session's
  // snapshots post too: it must be gone before Stop returns. The final write happens here, under
  // write_mu_, which closes the streams to the consumer for good.
  if (options_.mode == Mode::kFlight) {
    ::sem_post(&g_snapshot_sem);
    if (consumer_.joinable()) consumer_.join();
  }
  {
    std::lock_guard<std::mutex> write_lock(write_mu_);
    WriteAllLocked(true, /*last=*/true);
    writes_closed_ = true;
  }
  lock.lock();
  if (!forked_child_) {  // a fork child shares its parent's metadata (docs/format.md)
    clock::Refine(calibration_);
    info_.events_lost_on_write = Stats().events_lost_on_write;
    info_.events_without_buffer =
        unattached_events_.load(std::memory_order_relaxed);  // counter only
    std::string error;
    if (!WriteMetadata(&error)) std::fprintf(stderr, "hushtrace: %s\n", error.c_str());
  }
  if (const std::uint64_t lost = Stats().events_lost_on_write; lost != 0) {
    std::fprintf(stderr, "hushtrace: %llu events were lost because %s could not be written\n",
                 static_cast<unsigned long long>(lost), output_dir_.c_str());
  }
  if (const std::uint64_t n = unattached_events_.load(std::memory_order_relaxed); n != 0) {
    std::fprintf(stderr, "hushtrace: %llu events of threads without a buffer were discarded\n",
                 static_cast<unsigned long long>(n));
  }
  crash::Disarm();
  // Everything is on disk: the ring files are only needed to recover a crashed writer. Their
  // mappings stay valid after the unlink until the Core is freed (see "Lifetime" in core.h),
  // which gives their space back.
  for (std::uint32_t i = 0, n = ring_count_.load(std::memory_order_relaxed); i < n; ++i) {
    ::unlinkat(ring_dir(), format::RingName(slots_[i].ring->index()).c_str(), 0);
  }
  CloseRingDirectory();
  dirfd_.reset();
}

std::vector<std::string> Core::EnabledEventNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  if (stopped_) return names;
  for (const auto* e : registry::Global().EventsWithIds()) {
    if (e->enabled) names.push_back(e->meta.FullName());
  }
  return names;
}

SessionStats Core::Stats() const {
  SessionStats s;
  const std::uint32_t n = ring_count_.load(std::memory_order_acquire);
  s.rings = n;
  for (std::uint32_t i = 0; i < n; ++i) {
    const ring::Ring& r = *slots_[i].ring;
    const ring::RingHeader& h = r.header();
    s.events_written += h.events.load(std::memory_order_relaxed);
    s.events_discarded += h.discarded.load(std::memory_order_relaxed);
    s.events_overwritten += h.overwritten.load(std::memory_order_relaxed);
    s.bytes_written += h.bytes_written.load(std::memory_order_relaxed);
    s.events_lost_on_write += r.write_lost_events();
  }
  for (const auto* e : registry::Global().EventsWithIds()) s.enabled_events += e->enabled ? 1 : 0;
  s.snapshots_triggered = triggers_fired_.load(std::memory_order_relaxed);
  s.triggers_suppressed = triggers_suppressed_.load(std::memory_order_relaxed);
  s.events_filtered_out = filtered_out_.load(std::memory_order_relaxed);
  s.events_blocked = blocked_events_.load(std::memory_order_relaxed);
  s.events_without_buffer = unattached_events_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace hush::session
