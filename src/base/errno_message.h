// "what: strerror(errno)", the one spelling of a failed system call in messages.
#ifndef HUSHTRACE_SRC_BASE_ERRNO_MESSAGE_H_
#define HUSHTRACE_SRC_BASE_ERRNO_MESSAGE_H_

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

namespace hush::base {

// Reads errno: call it right after the failed call, before anything that may change errno.
inline std::string ErrnoMessage(std::string_view what, int error = errno) {
  std::string s(what);
  s += ": ";
  s += std::strerror(error);
  return s;
}

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_ERRNO_MESSAGE_H_
