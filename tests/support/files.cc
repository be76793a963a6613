#include "support/files.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/dir_stream.h"
#include "base/unique_fd.h"
#include "format/ring_location.h"
#include "format/trace_uuid.h"

namespace hush::testsupport {
namespace {

// The ring directories on /dev/shm of the traces RemoveTree removes (format/ring_location.h).
thread_local std::vector<std::string>* t_ring_dirs = nullptr;

int RemoveEntry(const char* path, const struct stat* st, int type, struct FTW* ftw) {
  if (type == FTW_DP) {
    ::rmdir(path);
  } else {
    // A trace's metadata names the directory its rings live in when the trace is on a disk file
    // system (a crashed writer leaves them there): removed with the trace.
    if (type == FTW_F && S_ISREG(st->st_mode) && t_ring_dirs != nullptr &&
        std::strcmp(path + ftw->base, "metadata") == 0) {
      const std::string uuid = format::TraceUuidOfMetadata(ReadFile(path));
      struct stat dir;
      const std::string trace(path, ftw->base > 0 ? ftw->base - 1 : 0);
      if (!uuid.empty() && ::lstat(trace.c_str(), &dir) == 0) {
        t_ring_dirs->push_back(format::SharedRingDirectory(dir, uuid));
      }
    }
    ::unlink(path);
  }
  return 0;  // go on with the rest whatever this one did
}

}  // namespace

std::string MakeTempDir(const std::string& tag) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hush_" + tag + ".XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return "";
  char* real = ::realpath(pattern.c_str(), nullptr);
  std::string out = real != nullptr ? real : pattern;
  std::free(real);
  return out;
}

void RemoveTree(const std::string& path) {
  if (path.empty()) return;
  std::vector<std::string> ring_dirs;
  t_ring_dirs = &ring_dirs;
  ::nftw(path.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
  t_ring_dirs = nullptr;
  for (const std::string& dir : ring_dirs) ::nftw(dir.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

ScopedRemoval::ScopedRemoval(std::vector<std::string> paths) : paths_(std::move(paths)) {
  for (const std::string& path : paths_) RemoveTree(path);
}

ScopedRemoval::~ScopedRemoval() {
  for (const std::string& path : paths_) RemoveTree(path);
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::string ReadFile(const std::string& path) {
  const base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string out;
  if (!fd) return out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

bool WriteFile(const std::string& path, std::string_view content) {
  const base::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd) return false;
  while (!content.empty()) {
    const ssize_t n = ::write(fd.get(), content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  base::DirStream d = base::DirStream::Open(dir.c_str());
  if (!d) return out;
  while (const char* name = d.Next()) out.emplace_back(name);
  return out;
}

std::string RingDirectory(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return dir;
  const std::string uuid = format::TraceUuidOfMetadata(ReadFile(dir + "/metadata"));
  if (uuid.empty()) return dir;
  const std::string shared = format::SharedRingDirectory(st, uuid);
  return Exists(shared) ? shared : dir;
}

std::string RingPath(const std::string& dir, unsigned n) {
  return RingDirectory(dir) + "/.ring_" + std::to_string(n);
}

std::vector<std::string> RingFiles(const std::string& dir) {
  std::vector<std::string> out;
  const std::string rings = RingDirectory(dir);
  for (const std::string& in : rings == dir ? std::vector<std::string>{dir} : std::vector<std::string>{dir, rings}) {
    for (std::string& name : ListDir(in)) {
      if (name.rfind(".ring_", 0) == 0) out.push_back(std::move(name));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hush::testsupport
