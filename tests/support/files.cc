#include "support/files.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdlib>

#include "base/dir_stream.h"
#include "base/unique_fd.h"

namespace hush::testsupport {
namespace {

int RemoveEntry(const char* path, const struct stat*, int type, struct FTW*) {
  if (type == FTW_DP) {
    ::rmdir(path);
  } else {
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
  ::nftw(path.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
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

std::vector<std::string> RingFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (std::string& name : ListDir(dir)) {
    if (name.rfind(".ring_", 0) == 0) out.push_back(std::move(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hush::testsupport
