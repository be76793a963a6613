// See record_functions.h.
#include "record_functions.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <vector>

#include "elf/elf_file.h"

namespace hush::cli {
namespace {

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// 0 when `path` is a regular file this process may execute, else the errno execve would give.
int ExecutableError(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return errno;
  if (!S_ISREG(st.st_mode)) return EACCES;
  return ::access(path.c_str(), X_OK) == 0 ? 0 : errno;
}

std::string SelfDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string p(buf, static_cast<std::size_t>(n));
  return p.substr(0, p.rfind('/'));
}

}  // namespace

std::string FindInPath(const std::string& name, int* exec_error) {
  int ignored;
  int& error = exec_error != nullptr ? *exec_error : ignored;
  if (name.find('/') != std::string::npos) {
    error = ExecutableError(name);
    return name;
  }
  error = ENOENT;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + name;
    const int e = ExecutableError(candidate);
    if (e == 0) {
      error = 0;
      return candidate;
    }
    if (e == EACCES) error = EACCES;  // as execvp: reported when nothing later is executable
    start = end + 1;
  }
  return name;
}

bool ParseDurationNs(const std::string& text, std::uint64_t* ns) {
  std::size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  if (i == 0 || text.find('.') != text.rfind('.')) return false;
  const std::string unit = text.substr(i);
  double scale;
  if (unit.empty() || unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else return false;
  const double v = std::strtod(text.substr(0, i).c_str(), nullptr) * scale;
  if (!std::isfinite(v) || v < 0 || v > 1e18) return false;
  *ns = static_cast<std::uint64_t>(std::llround(v));
  return true;
}

std::string RuntimeLibrary() {
  if (const char* env = std::getenv("HUSHTRACE_RUNTIME"); env != nullptr && *env != '\0') {
    return IsFile(env) ? env : "";
  }
  std::vector<std::string> candidates;
  const std::string self = SelfDir();
  if (!self.empty()) {
    candidates.push_back(self + "/../" HUSH_INSTALL_LIBDIR "/" HUSH_RUNTIME_NAME);
    candidates.push_back(self + "/../lib/" HUSH_RUNTIME_NAME);
  }
  candidates.push_back(HUSH_BUILD_RUNTIME);
  for (const std::string& c : candidates) {
    if (IsFile(c)) {
      char real[4096];
      return ::realpath(c.c_str(), real) != nullptr ? std::string(real) : c;
    }
  }
  return "";
}

bool ProgramHasRuntime(const std::string& program) {
  std::string error;
  std::unique_ptr<elf::ElfFile> file = elf::ElfFile::Open(FindInPath(program), &error);
  if (!file) return false;
  if (const elf::ElfFile::Section* dynstr = file->FindSection(".dynstr")) {
    std::string strings(dynstr->header.sh_size, '\0');
    if (file->Read(dynstr->header.sh_offset, strings.size(), strings.data()) &&
        strings.find("libhushtrace.so") != std::string::npos) {
      return true;
    }
  }
  std::uint64_t value = 0;
  return file->FindFunction("_ZN4hush8internal20StartFromEnvironmentEv", &value);
}

}  // namespace hush::cli
