#include "fuzz_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hush::fuzz {
namespace {

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) {
  ::remove(path);
  return 0;
}

void RemoveTree(const std::string& dir) {
  ::nftw(dir.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace

const std::string& ScratchDir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
                        "/hush-fuzz-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      std::perror("hush-fuzz: mkdtemp");
      std::abort();
    }
    static std::string to_remove;
    to_remove = templ;
    std::atexit([] { RemoveTree(to_remove); });
    return templ;
  }();
  return dir;
}

void ResetDir(const std::string& dir) {
  RemoveTree(dir);
  ::mkdir(dir.c_str(), 0700);
}

void WriteFile(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n <= 0) break;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  ::close(fd);
}

std::vector<std::string_view> SplitParts(const std::uint8_t* data, std::size_t size,
                                         std::size_t max_parts) {
  static constexpr std::string_view kSeparator = "\n--8<--\n";
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const std::size_t at = rest.find(kSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(rest.substr(0, at));
    rest.remove_prefix(at + kSeparator.size());
  }
  parts.push_back(rest);
  return parts;
}

}  // namespace hush::fuzz
