// What a process holds, read from /proc: the figures a long-running traced program must keep flat
// (descriptors, mappings, resident memory). For the lifecycle tests and the soak.
#ifndef HUSHTRACE_TESTS_SUPPORT_PROCESS_USAGE_H_
#define HUSHTRACE_TESTS_SUPPORT_PROCESS_USAGE_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace hush::testsupport {

struct ProcessUsage {
  int fds = -1;                          // entries of /proc/PID/fd
  std::uint64_t vm_bytes = 0;            // VmSize
  std::uint64_t rss_bytes = 0;           // VmRSS
  std::uint64_t file_map_bytes = 0;      // mappings of files whose path starts with `root`, and
                                         // of ring files in the user's directory on /dev/shm
  int file_maps = 0;                     // how many such mappings
  std::uint64_t deleted_map_bytes = 0;   // of those, files already unlinked ("(deleted)")
  bool ok = false;                       // /proc was readable
};

// `root`: a directory whose files' mappings are counted (e.g. the trace directories' parent);
// "" counts none.
ProcessUsage ReadProcessUsage(pid_t pid, const std::string& root);
std::string Describe(const ProcessUsage& u);

}  // namespace hush::testsupport

#endif  // HUSHTRACE_TESTS_SUPPORT_PROCESS_USAGE_H_
