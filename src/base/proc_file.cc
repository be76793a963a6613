#include "base/proc_file.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "base/unique_fd.h"

namespace hush::base {

std::string ReadProcLine(const std::string& path) {
  char buf[64] = {};
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return "";
  const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  std::string s(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

std::string ProcessName() {
  if (::gettid() == ::getpid()) {
    char name[17] = {};  // PR_GET_NAME writes at most 16 bytes, NUL included
    if (::prctl(PR_GET_NAME, name) == 0) return name;
  }
  return ReadProcLine("/proc/self/comm");
}

}  // namespace hush::base
