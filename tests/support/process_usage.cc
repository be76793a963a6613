#include "support/process_usage.h"

#include <dirent.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "format/ring_location.h"

namespace hush::testsupport {

ProcessUsage ReadProcessUsage(pid_t pid, const std::string& root) {
  ProcessUsage u;
  const std::string proc = "/proc/" + std::to_string(pid);
  if (DIR* d = ::opendir((proc + "/fd").c_str())) {
    u.fds = 0;
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++u.fds;
    }
    ::closedir(d);
    if (pid == ::getpid()) --u.fds;  // opendir's own descriptor was in the list it read
  } else {
    return u;
  }
  std::ifstream status(proc + "/status");
  for (std::string line; std::getline(status, line);) {
    std::uint64_t kb = 0;
    if (std::sscanf(line.c_str(), "VmSize: %" SCNu64, &kb) == 1) u.vm_bytes = kb * 1024;
    if (std::sscanf(line.c_str(), "VmRSS: %" SCNu64, &kb) == 1) u.rss_bytes = kb * 1024;
  }
  // The rings of traces on a disk file system are mapped from the user's directory on /dev/shm
  // (format/ring_location.h): "/dev/shm/hushtrace-UID/rings-".
  const std::string rings = base::UserDirectory(format::kSharedRingBase, ::geteuid()) + "/" +
                            std::string(format::kSharedRingPrefix);
  std::ifstream maps(proc + "/maps");
  for (std::string line; std::getline(maps, line);) {
    std::uint64_t from = 0, to = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64, &from, &to) != 2) continue;
    const std::size_t slash = line.find('/');
    if (root.empty() || slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.rfind(root, 0) != 0 && path.rfind(rings, 0) != 0) continue;
    u.file_map_bytes += to - from;
    ++u.file_maps;
    if (path.size() >= 10 && path.compare(path.size() - 10, 10, " (deleted)") == 0) {
      u.deleted_map_bytes += to - from;
    }
  }
  u.ok = true;
  return u;
}

std::string Describe(const ProcessUsage& u) {
  std::ostringstream s;
  s << "fds " << u.fds << ", VmSize " << u.vm_bytes / 1024 << " KiB, RSS " << u.rss_bytes / 1024
    << " KiB, trace-file mappings " << u.file_maps << " (" << u.file_map_bytes / 1024
    << " KiB, of which unlinked " << u.deleted_map_bytes / 1024 << " KiB)";
  return s.str();
}

}  // namespace hush::testsupport
