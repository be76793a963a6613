// SendControl / ControlListening (control_client.h).
#include "control_client.h"

#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "base/unique_fd.h"
#include "inject.h"

namespace hush::cli {
namespace {

// The traced user's uid: the owner of /proc/PID (the process's effective uid).
bool ProcessUid(pid_t pid, uid_t* uid) {
  struct stat st;
  if (::stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0) return false;
  *uid = st.st_uid;
  return true;
}

// A socket connected to the control socket of `pid` in one base directory (protocol.h,
// SocketPath), or an empty UniqueFd with *error; *absent when nothing listens there (yet).
base::UniqueFd ConnectIn(int base, pid_t pid, uid_t uid, bool* absent, std::string* error) {
  *absent = false;
  const std::string path = control::SocketPath(uid, pid, base);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), std::min(path.size() + 1, sizeof addr.sun_path - 1));
  base::UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd) {
    *error = std::string("socket: ") + std::strerror(errno);
    return fd;
  }
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    *absent = e == ENOENT || e == ECONNREFUSED;
    *error = e == EACCES ? "permission denied: the control socket of process " +
                               std::to_string(pid) + " belongs to another user"
                         : "cannot connect to " + path + ": " + std::strerror(e);
    return {};
  }
  // The server must be the process itself, not whoever managed to bind that name.
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid != pid) {
    *error = path + " is not served by process " + std::to_string(pid);
    return {};
  }
  return fd;
}

// The process's control socket under the first base that has it (the server's order). *absent:
// none connected and nothing listens under at least one base, where the bootstrap may open it;
// *error then is the first base's error, unless another base's says more than "absent".
base::UniqueFd Connect(pid_t pid, uid_t uid, bool* absent, std::string* error) {
  *absent = false;
  bool any_absent = false, error_says_absent = true;
  for (int base = 0; base < control::kSocketBaseCount; ++base) {
    bool this_absent = false;
    std::string this_error;
    base::UniqueFd fd = ConnectIn(base, pid, uid, &this_absent, &this_error);
    if (fd) return fd;
    any_absent = any_absent || this_absent;
    if (base == 0 || (error_says_absent && !this_absent)) {
      *error = this_error;
      error_says_absent = this_absent;
    }
  }
  *absent = any_absent;
  return {};
}

// The state letter of /proc/PID/stat ('R', 'S', 'T' stopped, 't' stopped by a tracer...), or 0.
char ProcessState(pid_t pid) {
  const base::UniqueFd fd(
      ::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return 0;
  char buf[512];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return 0;
  const std::string_view stat(buf, static_cast<std::size_t>(n));
  const std::size_t paren = stat.rfind(')');  // comm may hold spaces and parentheses
  return paren != std::string_view::npos && paren + 2 < stat.size() ? stat[paren + 2] : 0;
}

std::uint64_t MonotonicMs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000000;
}

}  // namespace

std::string ControlReply::Get(const std::string& key) const {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return "";
}

bool ControlListening(pid_t pid) {
  uid_t uid;
  bool absent;
  std::string error;
  if (!ProcessUid(pid, &uid)) return false;
  return static_cast<bool>(Connect(pid, uid, &absent, &error));
}

ControlReply SendControl(pid_t pid, const std::string& verb, const control::Fields& fields) {
  ControlReply reply;
  uid_t uid;
  if (!ProcessUid(pid, &uid)) {
    reply.error = "no process " + std::to_string(pid);
    return reply;
  }
  // A stopped process cannot act: say so now rather than after the timeout (the deadline below
  // covers one stopped after this check).
  if (const char state = ProcessState(pid); state == 'T' || state == 't') {
    reply.error = "process " + std::to_string(pid) + " is stopped (" +
                  (state == 'T' ? "by a signal: SIGCONT resumes it" : "by a tracer") +
                  "): it cannot act on the request; nothing was sent";
    return reply;
  }
  bool absent = false;
  base::UniqueFd fd = Connect(pid, uid, &absent, &reply.error);
  if (!fd && absent) {
    Mapping mapping;
    const std::uint64_t fn = FindBootstrap(pid, &reply.error, &mapping);
    if (fn == 0) return reply;
    int result = 0;
    if (!CallInProcess(pid, fn, mapping, 2000, &result, &reply.error)) return reply;
    if (result != 0) {
      reply.error = "process " + std::to_string(pid) + " cannot open its control socket " +
                    control::SocketPath(uid, pid) + ": " + std::strerror(-result) +
                    (result == -EPERM ? " (the directory must be a 0700 directory of its user)" : "");
      return reply;
    }
    fd = Connect(pid, uid, &absent, &reply.error);
  }
  if (!fd) return reply;
  // The process refuses the request once its deadline has passed (protocol.h); the wait for the
  // reply lasts a little longer, for a request read just before it.
  control::Fields with_deadline = fields;
  with_deadline.emplace_back("deadline-ms", std::to_string(MonotonicMs() + kReplyTimeoutMs));
  const std::string request =
      control::EncodeMessage(std::string(control::kRequestMagic) + verb, with_deadline);
  timeval tv{(kReplyTimeoutMs + kReplyGraceMs) / 1000, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    reply.error = std::string("cannot send the request: ") + std::strerror(errno);
    return reply;
  }
  // Not zeroed: that touched 16 pages (~0.1-0.5 ms of faults on this VM) for a reply of a few
  // hundred bytes.
  const std::size_t buf_size = control::kMaxMessage + 1;
  const std::unique_ptr<char[]> buf(new char[buf_size]);
  ssize_t n;
  do {
    n = ::recv(fd.get(), buf.get(), buf_size, 0);
  } while (n < 0 && errno == EINTR);
  const int recv_errno = errno;
  int unread = 0;  // bytes of the request the process has not read (SIOCOUTQ)
  if (n < 0 && ::ioctl(fd.get(), SIOCOUTQ, &unread) != 0) unread = -1;
  fd.reset();
  if (n == 0) {
    reply.error = "the process closed the connection without a reply";
    return reply;
  }
  if (n < 0 && (recv_errno == EAGAIN || recv_errno == EWOULDBLOCK)) {
    const std::string waited = std::to_string((kReplyTimeoutMs + kReplyGraceMs) / 1000) + " s";
    reply.error = unread > 0
                      ? "no reply within " + waited + ": process " + std::to_string(pid) +
                            " did not read the request (stopped or busy); it has expired and will "
                            "not take effect"
                      : "no reply within " + waited + ": process " + std::to_string(pid) +
                            " read the request but did not answer; it may have taken effect "
                            "('hushtrace status " +
                            std::to_string(pid) + "' tells)";
    return reply;
  }
  if (n < 0) {
    reply.error = std::string("no reply: ") + std::strerror(recv_errno);
    return reply;
  }
  std::string first;
  if (!control::DecodeMessage(std::string_view(buf.get(), static_cast<std::size_t>(n)), &first,
                              &reply.fields, &reply.error)) {
    reply.error = "malformed reply: " + reply.error;
    return reply;
  }
  if (first == "ok") {
    reply.ok = true;
  } else {
    reply.error = first.rfind("error ", 0) == 0 ? first.substr(6) : "malformed reply: " + first;
  }
  return reply;
}

}  // namespace hush::cli
