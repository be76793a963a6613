// base::WriteAll: write() at the file offset until `len` bytes are out, across short writes and
// EINTR. The one copy of that loop for the runtime's file writes (a ring's write-out, the
// metadata), the twin of base::ReadAt. write(), not pwrite(): a sandbox may deny pwrite to keep
// /proc/self/mem closed (tests/keys).
//
//   if (const int err = base::WriteAll(fd, data, len); err != 0) { /* an errno */ }
//
// Async-signal-safe (write only), allocates nothing. Past RLIMIT_FSIZE a write raises SIGXFSZ:
// callers that may get there block it (session/files.h, FileSizeSignalGuard).
#ifndef HUSHTRACE_SRC_BASE_WRITE_ALL_H_
#define HUSHTRACE_SRC_BASE_WRITE_ALL_H_

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace hush::base {

// 0 when all `len` bytes were written; else the errno of the failing write (ENOSPC for a write
// that wrote nothing).
inline int WriteAll(int fd, const void* data, std::size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    const ssize_t n = ::write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return ENOSPC;
    p += n;
    len -= static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_WRITE_ALL_H_
