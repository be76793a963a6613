// See ring_sweep.h.
#include "session/ring_sweep.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/dir_stream.h"
#include "base/read_at.h"
#include "base/unique_fd.h"
#include "base/user_directory.h"
#include "format/numbered_name.h"
#include "format/ring_location.h"
#include "ring/ring_layout.h"

namespace hush::session {
namespace {

// Whether the writer of ring file `name` in `dirfd` may still run: its pid (from the ring header)
// names a process. A ring whose header cannot be read counts as not running.
bool WriterMayRun(int dirfd, const char* name) {
  const base::UniqueFd fd(::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return false;
  std::uint32_t pid = 0;
  std::size_t got = 0;
  if (base::ReadAt(fd.get(), &pid, sizeof pid, offsetof(ring::RingHeader, pid), &got) != 0 || got != sizeof pid ||
      pid == 0) {
    return false;
  }
  // EPERM: another user's process with that pid (not ours, but we keep the rings: it may be ours
  // after a privilege change); only ESRCH says no such process.
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

// Whether the ring directory `dirfd`, named for the trace directory (dev, ino), is an orphan
// (ring_sweep.h).
bool IsOrphan(int dirfd, dev_t dev, ino_t ino) {
  char target[4096];
  const ssize_t n = ::readlinkat(dirfd, format::kRingTraceLink, target, sizeof target - 1);
  if (n <= 0) return false;  // no link: being made, or cannot be judged
  target[n] = '\0';
  struct stat st;
  if (::stat(target, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == dev && st.st_ino == ino) return false;
  base::DirStream list = base::DirStream::Of(dirfd);
  if (!list) return false;
  while (const char* name = list.Next()) {
    std::uint32_t index = 0;
    if (format::ParseNumberedName(name, format::kRingPrefix, &index) && WriterMayRun(dirfd, name)) return false;
  }
  return true;
}

}  // namespace

int SweepOrphanedRingDirectories(uid_t uid, const std::string& own) {
  const std::string user_dir = base::UserDirectory(format::kSharedRingBase, uid);
  if (base::CheckUserDirectory(user_dir, uid) != 0) return 0;
  const base::UniqueFd userfd(::open(user_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!userfd) return 0;
  std::vector<std::string> orphans;
  {
    base::DirStream list = base::DirStream::Of(userfd.get());
    if (!list) return 0;
    while (const char* name = list.Next()) {
      dev_t dev = 0;
      ino_t ino = 0;
      if (own == name || !format::ParseSharedRingDirectoryName(name, &dev, &ino)) continue;
      const base::UniqueFd dirfd(::openat(userfd.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (dirfd && IsOrphan(dirfd.get(), dev, ino)) orphans.emplace_back(name);
    }
  }
  int removed = 0;
  for (const std::string& name : orphans) {
    const base::UniqueFd dirfd(::openat(userfd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dirfd) continue;
    std::vector<std::string> entries;
    {
      base::DirStream list = base::DirStream::Of(dirfd.get());
      while (const char* entry = list ? list.Next() : nullptr) entries.emplace_back(entry);
    }
    for (const std::string& entry : entries) ::unlinkat(dirfd.get(), entry.c_str(), 0);
    if (::unlinkat(userfd.get(), name.c_str(), AT_REMOVEDIR) == 0) ++removed;
  }
  return removed;
}

}  // namespace hush::session
