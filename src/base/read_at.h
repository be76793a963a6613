// base::ReadAt: pread() until `len` bytes are in, across short reads and EINTR. The one copy of
// that loop for the tools and the runtime (the ELF reader, the trace reader, crash recovery).
//
//   std::size_t done = 0;
//   if (const int err = base::ReadAt(fd, buf, len, offset, &done); err != 0) {
//     // err == base::kEndOfFile: the file ends `done` bytes in; else an errno from pread
//   }
//
// Async-signal-safe (pread only), allocates nothing.
#ifndef HUSHTRACE_SRC_BASE_READ_AT_H_
#define HUSHTRACE_SRC_BASE_READ_AT_H_

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace hush::base {

inline constexpr int kEndOfFile = -1;  // never an errno

// 0 when all `len` bytes at `offset` were read; kEndOfFile when the file ended first; else the
// errno of the failing pread. `*done` (optional): the bytes read, whatever the result.
inline int ReadAt(int fd, void* data, std::size_t len, std::uint64_t offset, std::size_t* done = nullptr) {
  std::size_t got = 0;
  int result = 0;
  while (got < len) {
    const ssize_t n = ::pread(fd, static_cast<char*>(data) + got, len - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      result = n == 0 ? kEndOfFile : errno;
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  if (done != nullptr) *done = got;
  return result;
}

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_READ_AT_H_
