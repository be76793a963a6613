// base::DirStream: the one owner of a directory listing (a DIR*), as UniqueFd is of a descriptor.
//
//   base::DirStream dir = base::DirStream::Of(dirfd);     // a listing of an open directory
//   if (!dir) return Errno("cannot list " + name);
//   while (const char* name = dir.Next()) { ... }         // "." and ".." are skipped
//
// closedir() runs once, when the DirStream goes; it also closes the descriptor the listing reads
// through. Of() lists through a duplicate of `dirfd`, which stays the caller's: fdopendir() takes
// ownership of the descriptor it is given, and a listing started on the caller's own descriptor
// would move its offset.
#ifndef HUSHTRACE_SRC_BASE_DIR_STREAM_H_
#define HUSHTRACE_SRC_BASE_DIR_STREAM_H_

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "base/unique_fd.h"

namespace hush::base {

class DirStream {
 public:
  DirStream() = default;
  // Lists `path` (opendir: O_DIRECTORY | O_CLOEXEC). Empty on failure, errno set.
  static DirStream Open(const char* path) { return DirStream(::opendir(path)); }
  // Lists the directory `dirfd` refers to, through a duplicate (see above). Empty on failure,
  // errno set.
  static DirStream Of(int dirfd) { return Adopt(UniqueFd(::fcntl(dirfd, F_DUPFD_CLOEXEC, 0))); }
  // Lists through `fd`, which it owns from now on (closed here if fdopendir fails).
  static DirStream Adopt(UniqueFd fd) {
    if (!fd) return DirStream();
    DIR* dir = ::fdopendir(fd.get());
    if (dir != nullptr) fd.release();  // closedir() closes it
    return DirStream(dir);
  }

  ~DirStream() { reset(); }
  DirStream(DirStream&& other) noexcept : dir_(std::exchange(other.dir_, nullptr)) {}
  DirStream& operator=(DirStream&& other) noexcept {
    if (this != &other) {
      reset();
      dir_ = std::exchange(other.dir_, nullptr);
    }
    return *this;
  }
  DirStream(const DirStream&) = delete;
  DirStream& operator=(const DirStream&) = delete;

  explicit operator bool() const { return dir_ != nullptr; }
  // The next entry's name, or nullptr at the end (or on a read error: errno set). "." and ".."
  // are skipped. The name stays valid until the next call.
  const char* Next() {
    if (dir_ == nullptr) return nullptr;
    while (const dirent* e = ::readdir(dir_)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) return e->d_name;
    }
    return nullptr;
  }
  // The descriptor the listing reads through, for *at() calls on its entries; owned here.
  int fd() const { return dir_ != nullptr ? ::dirfd(dir_) : -1; }

 private:
  explicit DirStream(DIR* dir) : dir_(dir) {}
  void reset() {
    if (dir_ != nullptr) ::closedir(std::exchange(dir_, nullptr));
  }

  DIR* dir_ = nullptr;
};

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_DIR_STREAM_H_
