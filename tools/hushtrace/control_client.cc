// SendControl / ControlListening (control_client.h).
#include "control_client.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

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

// A connected socket, or -1 with *error; *absent when nothing listens there (yet).
int Connect(pid_t pid, uid_t uid, bool* absent, std::string* error) {
  *absent = false;
  const std::string path = control::SocketPath(uid, pid);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), std::min(path.size() + 1, sizeof addr.sun_path - 1));
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    ::close(fd);
    *absent = e == ENOENT || e == ECONNREFUSED;
    *error = e == EACCES ? "permission denied: the control socket of process " +
                               std::to_string(pid) + " belongs to another user"
                         : "cannot connect to " + path + ": " + std::strerror(e);
    return -1;
  }
  // The server must be the process itself, not whoever managed to bind that name.
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid != pid) {
    ::close(fd);
    *error = path + " is not served by process " + std::to_string(pid);
    return -1;
  }
  return fd;
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
  const int fd = Connect(pid, uid, &absent, &error);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

ControlReply SendControl(pid_t pid, const std::string& verb, const control::Fields& fields) {
  ControlReply reply;
  uid_t uid;
  if (!ProcessUid(pid, &uid)) {
    reply.error = "no process " + std::to_string(pid);
    return reply;
  }
  bool absent = false;
  int fd = Connect(pid, uid, &absent, &reply.error);
  if (fd < 0 && absent) {
    const std::uint64_t fn = FindBootstrap(pid, &reply.error);
    if (fn == 0) return reply;
    int result = 0;
    if (!CallInProcess(pid, fn, 2000, &result, &reply.error)) return reply;
    if (result != 0) {
      reply.error = "process " + std::to_string(pid) + " cannot open its control socket " +
                    control::SocketPath(uid, pid) + ": " + std::strerror(-result) +
                    (result == -EPERM ? " (the directory must be a 0700 directory of its user)" : "");
      return reply;
    }
    fd = Connect(pid, uid, &absent, &reply.error);
  }
  if (fd < 0) return reply;
  const std::string request =
      control::EncodeMessage(std::string(control::kRequestMagic) + verb, fields);
  timeval tv{60, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    reply.error = std::string("cannot send the request: ") + std::strerror(errno);
    ::close(fd);
    return reply;
  }
  std::vector<char> buf(control::kMaxMessage + 1);
  ssize_t n;
  do {
    n = ::recv(fd, buf.data(), buf.size(), 0);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) {
    reply.error = n == 0 ? "the process closed the connection without a reply"
                         : std::string("no reply: ") + std::strerror(errno);
    return reply;
  }
  std::string first;
  if (!control::DecodeMessage(std::string_view(buf.data(), static_cast<std::size_t>(n)), &first,
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
