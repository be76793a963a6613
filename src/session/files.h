// Writing trace files from the session's threads (core.cc, snapshots.cc): the library's writes
// must fail, never take the host program down.
#ifndef HUSHTRACE_SRC_SESSION_FILES_H_
#define HUSHTRACE_SRC_SESSION_FILES_H_

#include <signal.h>
#include <time.h>

#include <string>

namespace hush::session {

// Past RLIMIT_FSIZE a write fails with EFBIG and also raises SIGXFSZ at the writing thread,
// whose default action kills the process. The library's writes must fail, not take the host
// program down: SIGXFSZ is blocked while they run and one they raised is discarded. (One sent
// to the process by someone else during that window is discarded too: an accepted imprecision.)
class FileSizeSignalGuard {
 public:
  FileSizeSignalGuard() {
    sigemptyset(&xfsz_);
    sigaddset(&xfsz_, SIGXFSZ);
    ::pthread_sigmask(SIG_BLOCK, &xfsz_, &previous_);
    was_pending_ = IsPending();
  }
  ~FileSizeSignalGuard() {
    if (!was_pending_ && IsPending()) {
      const timespec no_wait = {};
      ::sigtimedwait(&xfsz_, nullptr, &no_wait);
    }
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  FileSizeSignalGuard(const FileSizeSignalGuard&) = delete;
  FileSizeSignalGuard& operator=(const FileSizeSignalGuard&) = delete;

 private:
  static bool IsPending() {
    sigset_t pending;
    return ::sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ) == 1;
  }
  sigset_t xfsz_;
  sigset_t previous_;
  bool was_pending_ = false;
};

// Writes `content` to `name` in `dirfd` through a temporary file and a rename (a reader never
// sees half a file). False and *error on failure (errno kept).
bool WriteFileAt(int dirfd, const char* name, const std::string& content, std::string* error);

}  // namespace hush::session

#endif  // HUSHTRACE_SRC_SESSION_FILES_H_
