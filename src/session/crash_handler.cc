// The crash marker's signal handler: crash_handler.h (what it writes, how it chains).
#include "session/crash_handler.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>

#include "base/unique_fd.h"
#include "format/numbered_name.h"

namespace hush::session::crash {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};
constexpr std::size_t kCount = sizeof kSignals / sizeof kSignals[0];

// The trace directory of the running session, -1 when none. Release in Arm() pairs with the
// acquire in the handler: a handler that sees the descriptor sees it open.
std::atomic<int> g_dirfd{-1};
// Set by the first handler that writes the marker: one marker, even if several threads fault.
std::atomic<bool> g_marked{false};
// The program's actions found by Arm(), chained to by the handler. Written only while our
// handler is not installed (Arm), read by the handler and Disarm.
struct sigaction g_previous[kCount];
bool g_installed = false;  // under the session's mu_ (Arm/Disarm are never concurrent)

int IndexOf(int sig) {
  for (std::size_t i = 0; i < kCount; ++i) {
    if (kSignals[i] == sig) return static_cast<int>(i);
  }
  return -1;
}

// Decimal digits of `v` at `out` (at most 10 bytes); returns the end.
char* AppendNumber(char* out, unsigned long v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) *out++ = digits[--n];
  return out;
}

char* AppendText(char* out, const char* text) {
  while (*text != '\0') *out++ = *text++;
  return out;
}

void WriteMarker(int sig) {
  const int dirfd = g_dirfd.load(std::memory_order_acquire);
  if (dirfd < 0 || g_marked.exchange(true, std::memory_order_relaxed)) return;
  char line[96];
  char* p = AppendText(line, "signal ");
  p = AppendNumber(p, static_cast<unsigned long>(sig));
  p = AppendText(p, " tid ");
  p = AppendNumber(p, static_cast<unsigned long>(::syscall(SYS_gettid)));
  p = AppendText(p, " pid ");
  p = AppendNumber(p, static_cast<unsigned long>(::getpid()));
  *p++ = '\n';
  const base::UniqueFd fd(
      ::openat(dirfd, format::kCrashMarker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return;
  // One short write to a fresh file: complete unless the disk is full (then no marker).
  [[maybe_unused]] const ssize_t n = ::write(fd.get(), line, static_cast<std::size_t>(p - line));
}

void OnFatalSignal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  WriteMarker(sig);
  const int i = IndexOf(sig);
  struct sigaction previous = g_previous[i < 0 ? 0 : i];
  if (i < 0) previous.sa_handler = SIG_DFL;
  // SIG_IGN: a signal sent with kill()/raise() (si_code <= 0) is ignored as it would have been; a
  // fault with the signal ignored is fatal (the kernel resets such an action to SIG_DFL).
  if (previous.sa_handler == SIG_IGN && !(previous.sa_flags & SA_SIGINFO)) {
    if (info != nullptr && info->si_code <= 0) {
      errno = saved_errno;
      return;
    }
    previous.sa_handler = SIG_DFL;
  }
  if (previous.sa_handler == SIG_DFL && !(previous.sa_flags & SA_SIGINFO)) {
    // The signal is blocked while we run: the one raised here is delivered, with the default
    // action, as soon as we return (before a faulting instruction runs again).
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    ::raise(sig);
    errno = saved_errno;
    return;
  }
  if (previous.sa_flags & SA_RESETHAND) {  // one-shot: the kernel would have reset it
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    g_previous[i].sa_handler = SIG_DFL;
    g_previous[i].sa_flags &= ~SA_SIGINFO;
  }
  sigset_t old;
  ::pthread_sigmask(SIG_BLOCK, &previous.sa_mask, &old);
  errno = saved_errno;
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(sig, info, context);
  } else {
    previous.sa_handler(sig);
  }
  const int handler_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = handler_errno;
}

bool IsOurs(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) && a.sa_sigaction == OnFatalSignal;
}

}  // namespace

void Arm(int dirfd) {
  g_marked.store(false, std::memory_order_relaxed);
  g_dirfd.store(dirfd, std::memory_order_release);
  if (g_installed) return;
  struct sigaction ours = {};
  ours.sa_sigaction = OnFatalSignal;
  // SA_ONSTACK: a stack overflow's SIGSEGV runs on the program's alternate stack, if it has one.
  ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  for (std::size_t i = 0; i < kCount; ++i) {
    struct sigaction current;
    if (::sigaction(kSignals[i], nullptr, &current) != 0 || IsOurs(current)) continue;
    g_previous[i] = current;
    ::sigaction(kSignals[i], &ours, nullptr);
  }
  g_installed = true;
}

void Disarm() {
  g_dirfd.store(-1, std::memory_order_release);
  if (!g_installed) return;
  for (std::size_t i = 0; i < kCount; ++i) {
    struct sigaction current;
    // The program may have installed its own action since Arm(): it stays.
    if (::sigaction(kSignals[i], nullptr, &current) == 0 && IsOurs(current)) {
      ::sigaction(kSignals[i], &g_previous[i], nullptr);
    }
  }
  g_installed = false;
}

}  // namespace hush::session::crash
