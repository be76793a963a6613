// base::UniqueFd: the one owner of a file descriptor. Every descriptor the runtime and the tools
// open lives in one of these (or is handed to one at once), so that each early return closes what
// it opened and nothing is closed twice.
//
//   base::UniqueFd fd(::openat(dir, name, O_RDONLY | O_CLOEXEC));
//   if (!fd) return Errno("cannot open " + name);
//   ::read(fd.get(), ...);                    // still owned
//   slot.fd = std::move(fd);                  // ownership moves; the moved-from object holds -1
//
// close() is called at most once per descriptor and its result is ignored, as Linux documents for
// close(2): the descriptor is released even when close reports an error, and retrying could close
// a descriptor another thread just received.
#ifndef HUSHTRACE_SRC_BASE_UNIQUE_FD_H_
#define HUSHTRACE_SRC_BASE_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace hush::base {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor held (if any) and takes `fd`.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_UNIQUE_FD_H_
