// The user's private directory hushtrace-<uid> under a base directory (/dev/shm, /tmp): where the
// runtime keeps what belongs to a process rather than to its trace. The control sockets live in
// it (src/control, protocol.h), and so do the rings of a trace written to a disk file system
// (src/session, format/ring_location.h).
//
//   const std::string dir = base::UserDirectory("/dev/shm", ::geteuid());
//   if (base::MakeUserDirectory(dir, ::geteuid()) == 0) { ... create files in dir ... }
//
// The directory is made 0700 by whoever needs it first and refused, never repaired, when it is
// not the user's own: another user who made it first could otherwise read or replace what we put
// in it.
#ifndef HUSHTRACE_SRC_BASE_USER_DIRECTORY_H_
#define HUSHTRACE_SRC_BASE_USER_DIRECTORY_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cerrno>
#include <string>

namespace hush::base {

// The base on tmpfs (memory on Linux), tried first for both.
inline constexpr char kMemoryBase[] = "/dev/shm";

inline std::string UserDirectory(const char* base, uid_t uid) {
  return std::string(base) + "/hushtrace-" + std::to_string(uid);
}

// Whether `dir` is a directory (not a symlink) owned by `uid` and private. 0, or -errno: -EPERM
// when it is someone else's or not private.
inline int CheckUserDirectory(const std::string& dir, uid_t uid) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return -errno;
  if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077) != 0) return -EPERM;
  return 0;
}

// Makes `dir` (0700) if it is missing, then checks it as CheckUserDirectory does.
inline int MakeUserDirectory(const std::string& dir, uid_t uid) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return -errno;
  return CheckUserDirectory(dir, uid);
}

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_USER_DIRECTORY_H_
