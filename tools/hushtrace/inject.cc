// FindBootstrap and CallInProcess (inject.h): a gdb-style function call through ptrace.
//
// The call is made only on a thread that is blocked in one of a few system calls (kSafeCalls):
// sleeps, poll/select/epoll, waits, and read/accept/recv on a pipe, socket or terminal. The C
// library takes none of these while it holds one of its internal locks (malloc arenas, the stack
// cache, the dynamic loader's), so the injected function may allocate and create a thread
// without deadlocking on a lock its own thread holds. A thread computing, or in any other system
// call, is never interrupted for the call. The steps (x86-64):
//
//   1. find a thread whose /proc/PID/task/TID/syscall shows a safe call;
//   2. PTRACE_SEIZE + PTRACE_INTERRUPT it; at the stop, check that the function is still at that
//      address (the process may have exec'd meanwhile) and that the thread really was blocked:
//      orig_rax is that call and rax a restart code (-ERESTART*), or -EINTR for the calls the
//      kernel does not restart (epoll_wait, rt_sigtimedwait): else detach and go back to 1;
//   3. save the general and extended (XSAVE) registers; set rip = fn, rsp below the red zone,
//      16-byte aligned, with a return address of 0; orig_rax = -1 so that the kernel does not
//      restart the interrupted call into our function;
//   4. continue; signals that arrive meanwhile are delivered; the function's `ret` to 0 faults:
//      the SIGSEGV stop with rip == 0 ends the call (the signal is never delivered);
//   5. restore the registers and detach: the kernel restarts the interrupted system call, as
//      after any ptrace stop (epoll_wait and rt_sigtimedwait return EINTR, as under strace).
#include "inject.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "base/dir_stream.h"
#include "base/read_at.h"
#include "base/unique_fd.h"
#include "elf/elf_file.h"

namespace hush::cli {
namespace {

constexpr char kBootstrapSymbol[] = "hushtrace_control_bootstrap";
// The thread stop and register protocol below is x86-64's (orig_rax, rip, XSAVE state); on
// other architectures CallInProcess refuses (the CLI says to use HUSHTRACE_CONTROL=1).
#if defined(__x86_64__)
constexpr long kERestartSys = 512, kERestartNoIntr = 513, kERestartNoHand = 514,
               kERestartBlock = 516;

struct SafeCall {
  long nr;
  bool needs_fd_check;  // read/recv/accept: only on a pipe, socket or terminal
  bool eintr;           // the kernel returns EINTR instead of restarting it
};
constexpr SafeCall kSafeCalls[] = {
    {SYS_read, true, false},          {SYS_poll, false, false},
    {SYS_select, false, false},       {SYS_pause, false, false},
    {SYS_nanosleep, false, false},    {SYS_clock_nanosleep, false, false},
    {SYS_accept, true, false},        {SYS_accept4, true, false},
    {SYS_recvfrom, true, false},      {SYS_recvmsg, true, false},
    {SYS_wait4, false, false},        {SYS_waitid, false, false},
    {SYS_rt_sigsuspend, false, false}, {SYS_rt_sigtimedwait, false, true},
    {SYS_pselect6, false, false},     {SYS_ppoll, false, false},
    {SYS_epoll_wait, false, true},    {SYS_epoll_pwait, false, true},
#ifdef SYS_epoll_pwait2
    {SYS_epoll_pwait2, false, true},
#endif
};

const SafeCall* FindSafe(long nr) {
  for (const SafeCall& c : kSafeCalls) {
    if (c.nr == nr) return &c;
  }
  return nullptr;
}

#endif  // __x86_64__

// The mappings of /proc/PID/maps, asked one at a time with PROCMAP_QUERY (Linux 6.11) where the
// kernel has it: reading the file makes the kernel format every mapping of the process as text,
// ~35 us for the 60 of a small C++ program on the test VM and ~80 us the first time in a process,
// which the first attach paid twice (FindBootstrap, then CallInProcess's check). Older kernels
// answer ENOTTY; the text is parsed then. The structure is the kernel's (uapi linux/fs.h); this
// Debian's headers predate it.
struct ProcmapQuery {
  std::uint64_t size;
  std::uint64_t query_flags;
  std::uint64_t query_addr;
  std::uint64_t vma_start;
  std::uint64_t vma_end;
  std::uint64_t vma_flags;
  std::uint64_t vma_page_size;
  std::uint64_t vma_offset;
  std::uint64_t inode;
  std::uint32_t dev_major;
  std::uint32_t dev_minor;
  std::uint32_t vma_name_size;
  std::uint32_t build_id_size;
  std::uint64_t vma_name_addr;
  std::uint64_t build_id_addr;
};
static_assert(sizeof(ProcmapQuery) == 104);
constexpr unsigned long kProcmapQuery = _IOWR('f', 17, ProcmapQuery);
constexpr std::uint64_t kQueryCoveringOrNext = 0x10;
constexpr std::uint64_t kQueryFileBacked = 0x20;

// The file-backed mapping at `addr` (or, with `or_next`, the first one after it): 1 and *out;
// 0: none; -1: the kernel cannot answer (no PROCMAP_QUERY, or an error: the caller reads the text).
int QueryMapping(int maps_fd, std::uint64_t addr, bool or_next, Mapping* out) {
  char name[4096];
  ProcmapQuery q = {};
  q.size = sizeof q;
  q.query_flags = kQueryFileBacked | (or_next ? kQueryCoveringOrNext : 0);
  q.query_addr = addr;
  q.vma_name_addr = reinterpret_cast<std::uintptr_t>(name);
  q.vma_name_size = sizeof name;
  if (::ioctl(maps_fd, kProcmapQuery, &q) != 0) return errno == ENOENT ? 0 : -1;
  out->start = q.vma_start;
  out->end = q.vma_end;
  out->offset = q.vma_offset;
  out->inode = q.inode;
  out->dev_major = q.dev_major;
  out->dev_minor = q.dev_minor;
  out->path.assign(name, q.vma_name_size == 0 ? 0 : strnlen(name, q.vma_name_size));
  return 1;
}

// The whole text of the maps file open at `fd` (what could be read of it).
std::string ReadAll(int fd) {
  std::string text;
  char buf[16384];
  for (int err = 0; err == 0;) {
    std::size_t done = 0;
    err = base::ReadAt(fd, buf, sizeof buf, text.size(), &done);
    text.append(buf, done);
  }
  return text;
}

base::UniqueFd OpenMaps(pid_t pid) {
  return base::UniqueFd(::open(("/proc/" + std::to_string(pid) + "/maps").c_str(), O_RDONLY | O_CLOEXEC));
}

// Every file-backed mapping of the process whose maps `maps_fd` is, in address order.
std::vector<Mapping> FileMappings(int maps_fd) {
  std::vector<Mapping> out;
  Mapping m;
  for (std::uint64_t addr = 0;;) {
    const int r = QueryMapping(maps_fd, addr, /*or_next=*/true, &m);
    if (r == 0) return out;
    if (r < 0) return ParseMapsText(ReadAll(maps_fd));
    addr = m.end;
    if (!m.path.empty() && m.path[0] == '/') out.push_back(m);
  }
}

#if defined(__x86_64__)
// Whether process `pid` still has `mapping` (as FindBootstrap found it).
bool HasMapping(pid_t pid, const Mapping& mapping) {
  const base::UniqueFd fd = OpenMaps(pid);
  if (!fd) return false;
  Mapping now;
  if (const int r = QueryMapping(fd.get(), mapping.start, /*or_next=*/false, &now); r >= 0) {
    return r == 1 && now == mapping;
  }
  const std::vector<Mapping> all = ParseMapsText(ReadAll(fd.get()));
  return std::find(all.begin(), all.end(), mapping) != all.end();
}

bool FdIsStream(pid_t pid, unsigned long fd) {
  char target[256];
  const std::string link = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0) return false;
  const std::string t(target, static_cast<std::size_t>(n));
  return t.rfind("pipe:", 0) == 0 || t.rfind("socket:", 0) == 0 || t.rfind("/dev/pts/", 0) == 0 ||
         t.rfind("/dev/tty", 0) == 0;
}

// The threads of `pid` blocked in a safe call now, in /proc order (the main thread first); false
// if /proc refuses (permission), with *error set.
bool FindBlockedThreads(pid_t pid, std::vector<pid_t>* found, std::string* error) {
  found->clear();
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  base::DirStream dir = base::DirStream::Open(task_dir.c_str());
  if (!dir) {
    *error = "cannot list the threads of process " + std::to_string(pid) + ": " + std::strerror(errno);
    return false;
  }
  while (const char* name = dir.Next()) {
    if (name[0] < '0' || name[0] > '9') continue;
    const std::string path = task_dir + "/" + name + "/syscall";
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) {
      if (errno == EACCES || errno == EPERM) {
        *error = "permission denied: cannot inspect process " + std::to_string(pid) +
                 " (only its user and root may control it)";
        return false;
      }
      continue;
    }
    long nr = -1;
    unsigned long arg0 = 0;
    const int got = std::fscanf(f, "%ld %lx", &nr, &arg0);
    std::fclose(f);
    const SafeCall* call = got == 2 ? FindSafe(nr) : nullptr;
    if (call == nullptr || (call->needs_fd_check && !FdIsStream(pid, arg0))) continue;
    found->push_back(static_cast<pid_t>(std::atol(name)));
  }
  return true;
}

long NowMs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// Waits for a stop of `tid` (a thread we trace, not our child: __WALL).
bool WaitStop(pid_t tid, int* status, std::string* error) {
  for (;;) {
    const pid_t r = ::waitpid(tid, status, __WALL);
    if (r == tid) break;
    if (r < 0 && errno == EINTR) continue;
    *error = std::string("waitpid: ") + std::strerror(errno);
    return false;
  }
  if (!WIFSTOPPED(*status)) {
    *error = "the process exited";
    return false;
  }
  return true;
}

struct Registers {
  user_regs_struct regs{};
  std::vector<unsigned char> xstate = std::vector<unsigned char>(16384);
  std::size_t xstate_len = 0;

  bool Save(pid_t tid) {
    if (::ptrace(PTRACE_GETREGS, tid, nullptr, &regs) != 0) return false;
    iovec iov{xstate.data(), xstate.size()};
    xstate_len = ::ptrace(PTRACE_GETREGSET, tid, NT_X86_XSTATE, &iov) == 0 ? iov.iov_len : 0;
    return true;
  }
  bool Restore(pid_t tid) {
    if (xstate_len != 0) {
      iovec iov{xstate.data(), xstate_len};
      ::ptrace(PTRACE_SETREGSET, tid, NT_X86_XSTATE, &iov);
    }
    return ::ptrace(PTRACE_SETREGS, tid, nullptr, &regs) == 0;
  }
};

// Step 2: stops `tid` and checks it sits in a safe call. False: detached, try another time.
bool StopInSafeCall(pid_t tid, Registers* saved, bool* fatal, std::string* error) {
  if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
    *fatal = errno != ESRCH;  // ESRCH: the thread just exited
    *error = std::string("cannot attach with ptrace: ") + std::strerror(errno) +
             (errno == EPERM ? " (only the process's user and root may control it; with "
                               "ptrace restricted, start the program with HUSHTRACE_CONTROL=1)"
                             : "");
    return false;
  }
  int status = 0;
  for (int tries = 0;; ++tries) {
    ::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr);
    if (!WaitStop(tid, &status, error)) {
      *fatal = true;
      return false;
    }
    if ((status >> 16) == PTRACE_EVENT_STOP) break;
    // A signal-delivery stop came first: deliver it and interrupt again.
    if (tries == 8 || ::ptrace(PTRACE_CONT, tid, nullptr, WSTOPSIG(status)) != 0) {
      ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
      return false;
    }
  }
  if (!saved->Save(tid)) {
    ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
    return false;
  }
  const long nr = static_cast<long>(saved->regs.orig_rax);
  const long rax = static_cast<long>(saved->regs.rax);
  const SafeCall* call = FindSafe(nr);
  const bool blocked = call != nullptr && (rax == -kERestartSys || rax == -kERestartNoIntr ||
                                           rax == -kERestartNoHand || rax == -kERestartBlock ||
                                           (call->eintr && rax == -EINTR));
  if (!blocked) {
    ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
    return false;
  }
  return true;
}

// Steps 3-5.
bool CallStopped(pid_t tid, const Registers& saved, std::uint64_t fn, int* result,
                 std::string* error) {
  user_regs_struct call = saved.regs;
  call.rsp = ((saved.regs.rsp - 1024) & ~std::uint64_t{15}) - 8;  // below the 128-byte red zone
  call.rip = fn;
  call.rax = 0;
  call.orig_rax = static_cast<unsigned long long>(-1);
  bool ok = ::ptrace(PTRACE_POKEDATA, tid, call.rsp, 0) == 0 &&
            ::ptrace(PTRACE_SETREGS, tid, nullptr, &call) == 0 &&
            ::ptrace(PTRACE_CONT, tid, nullptr, 0) == 0;
  if (!ok) *error = std::string("ptrace: ") + std::strerror(errno);
  int status = 0;
  while (ok) {
    if (!WaitStop(tid, &status, error)) return false;  // the process is gone
    const int sig = WSTOPSIG(status);
    if ((status >> 16) != 0) {  // group stop or interrupt: keep going
      ok = ::ptrace(PTRACE_CONT, tid, nullptr, 0) == 0;
      continue;
    }
    if (sig == SIGSEGV) {
      user_regs_struct now{};
      ::ptrace(PTRACE_GETREGS, tid, nullptr, &now);
      if (now.rip == 0) {
        *result = static_cast<int>(now.rax);
        break;
      }
      *error = "the control bootstrap crashed in the process (SIGSEGV); the thread was restored";
      ok = false;
      break;
    }
    ok = ::ptrace(PTRACE_CONT, tid, nullptr, sig) == 0;  // the application's signal
  }
  const bool restored = const_cast<Registers&>(saved).Restore(tid);
  ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
  if (ok && !restored) *error = "cannot restore the thread's registers";
  return ok && restored;
}
#endif  // __x86_64__

}  // namespace

std::vector<Mapping> ParseMapsText(std::string_view text) {
  std::vector<Mapping> out;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t eol = text.find('\n', at);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string line(text.substr(at, eol - at));
    at = eol + 1;
    unsigned long start = 0, end = 0, offset = 0, inode = 0;
    unsigned major = 0, minor = 0;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %x:%x %lu %n", &start, &end, perms, &offset, &major,
                    &minor, &inode, &path_at) < 7 ||
        path_at == 0 || static_cast<std::size_t>(path_at) >= line.size() || line[path_at] != '/') {
      continue;  // anonymous, or a pseudo-file such as [heap]
    }
    Mapping m;
    m.start = start;
    m.end = end;
    m.offset = offset;
    m.inode = inode;
    m.dev_major = major;
    m.dev_minor = minor;
    m.path = line.substr(static_cast<std::size_t>(path_at));
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<Mapping> FileMappingsOf(pid_t pid) {
  const base::UniqueFd fd = OpenMaps(pid);
  return fd ? FileMappings(fd.get()) : std::vector<Mapping>{};
}

std::uint64_t FindBootstrap(pid_t pid, std::string* error, Mapping* mapping) {
  // The kernel refuses another user's process when the file is opened (a ptrace access check),
  // although its mode is 0444.
  const base::UniqueFd maps_fd = OpenMaps(pid);
  if (!maps_fd) {
    *error = errno == EACCES || errno == EPERM
                 ? "permission denied: process " + std::to_string(pid) +
                       " belongs to another user (only its user and root may control it)"
                 : "no process " + std::to_string(pid);
    return 0;
  }
  char exe[4096];
  const ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof exe - 1);
  const std::string exe_path = n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : "";
  // Candidate files: libhushtrace.so (shared runtime) and the executable (static runtime). The
  // mapping at file offset 0 gives the load base (ET_DYN); ET_EXEC loads at its link addresses.
  // The shared runtime is tried first, although the executable comes first in the maps: its
  // symbol is in .dynsym, a table of some fifty symbols (src/libhushtrace.map), where the
  // executable's lookup reads its whole .symtab, megabytes for a large program, before it is
  // known not to hold the runtime.
  std::vector<Mapping> runtimes, executables;
  for (Mapping& m : FileMappings(maps_fd.get())) {
    if (m.offset != 0) continue;
    const bool runtime = m.path.find("/libhushtrace.so") != std::string::npos;
    if (!runtime && m.path != exe_path) continue;
    std::vector<Mapping>& list = runtime ? runtimes : executables;
    if (std::any_of(list.begin(), list.end(), [&](const Mapping& c) { return c.path == m.path; })) continue;
    list.push_back(std::move(m));
  }
  runtimes.insert(runtimes.end(), executables.begin(), executables.end());
  for (const Mapping& c : runtimes) {
    std::string elf_error;
    std::unique_ptr<elf::ElfFile> file = elf::ElfFile::Open(c.path, &elf_error);
    std::uint64_t value = 0;
    if (!file || !file->FindFunction(kBootstrapSymbol, &value)) continue;
    std::uint64_t base = 0;
    if (file->type() == ET_DYN) {
      std::uint64_t first_vaddr = ~std::uint64_t{0};
      for (const auto& ph : file->segments()) {
        if (ph.p_type == PT_LOAD) first_vaddr = std::min<std::uint64_t>(first_vaddr, ph.p_vaddr & ~0xfffULL);
      }
      base = c.start - (first_vaddr == ~std::uint64_t{0} ? 0 : first_vaddr);
    }
    if (mapping != nullptr) *mapping = c;
    return base + value;
  }
  *error = "process " + std::to_string(pid) + " does not have the hushtrace runtime loaded";
  return 0;
}

#if defined(__x86_64__)
bool CallInProcess(pid_t pid, std::uint64_t fn, const Mapping& mapping, int timeout_ms,
                   int* result, std::string* error) {
  const long deadline = NowMs() + timeout_ms;
  std::vector<pid_t> candidates;
  do {
    if (!FindBlockedThreads(pid, &candidates, error)) return false;
    // Each candidate in turn before waiting: a thread seen in a short sleep (a paced loop's
    // 100 us) has often left it by the time it is stopped, while another one still waits.
    for (const pid_t tid : candidates) {
      Registers saved;
      bool fatal = false;
      if (StopInSafeCall(tid, &saved, &fatal, error)) {
        // The address was found before the stop: the process may have exec'd since (a child
        // between fork and exec still shows its parent's image). With this thread stopped the
        // image can no longer change (an exec by another thread would kill it): the mapping the
        // address came from must still be there.
        if (!HasMapping(pid, mapping)) {
          ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
          *error = "process " + std::to_string(pid) + " changed (exec) while attaching; retry";
          return false;
        }
        return CallStopped(tid, saved, fn, result, error);
      }
      if (fatal) return false;
    }
    ::usleep(candidates.empty() ? 1000 : 200);
  } while (NowMs() < deadline);
  *error = "no thread of process " + std::to_string(pid) +
           " was waiting in a system call where the control channel can be opened safely (sleep, "
           "poll, epoll, read on a pipe or socket...); retry, or start the program with "
           "HUSHTRACE_CONTROL=1";
  return false;
}
#else
bool CallInProcess(pid_t, std::uint64_t, const Mapping&, int, int*, std::string* error) {
  *error = "attaching to a running process is implemented for x86-64 only; start the program with "
           "HUSHTRACE_CONTROL=1 instead";
  return false;
}
#endif  // __x86_64__

}  // namespace hush::cli
