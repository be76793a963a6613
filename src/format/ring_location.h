// Where the ring files of a trace are (docs/format.md, "Ring files"): the one place writers
// (src/session) and readers (src/recover) learn it.
//
// A trace directory on tmpfs holds its rings itself, as .ring_<N> (numbered_name.h). A trace
// directory on any other file system has them in memory, in
//
//   /dev/shm/hushtrace-<uid>/rings-<trace uuid>-<dev>-<inode>/.ring_<N>
//
// <uid> owns the trace directory (base/user_directory.h: the user's private directory, shared
// with the control sockets), <trace uuid> is the one of its metadata (TraceUuidOfMetadata), and
// <dev> and <inode> (decimal) are the trace directory's: a reader that has the trace directory
// finds its rings without a pointer in it, and never those of another directory whose metadata
// has the same uuid (a flight recorder's snapshots, a copy). A ring's pages
// are written at every event and read back only after a crash: on tmpfs they stay memory (as
// LTTng-UST's shared-memory buffers do), where in a file of a disk file system the kernel wrote
// them back to the disk every few seconds and a thread's first touch of each page went through
// the file system's block reservation (docs/architecture.md, "Where rings live"). Where the user's
// directory on /dev/shm cannot be made or /dev/shm is smaller than the session's buffer budget
// (a container's 64 MiB), the rings stay in the trace directory; readers look in both places.
#ifndef HUSHTRACE_SRC_FORMAT_RING_LOCATION_H_
#define HUSHTRACE_SRC_FORMAT_RING_LOCATION_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/user_directory.h"

namespace hush::format {

inline constexpr const char* kSharedRingBase = base::kMemoryBase;
inline constexpr std::string_view kSharedRingPrefix = "rings-";
// In a ring directory on /dev/shm, beside the ring files: a symbolic link to the trace directory
// the rings belong to (its absolute path when the session started). Nothing reads the rings
// through it; it tells a sweep of orphaned ring directories (src/session/ring_sweep.h) whether
// their trace still exists.
inline constexpr char kRingTraceLink[] = "trace";

// Where the rings of the trace directory `st` (its stat) whose metadata has `trace_uuid` are when
// they are not in it.
inline std::string SharedRingDirectory(const struct stat& st, std::string_view trace_uuid) {
  return base::UserDirectory(kSharedRingBase, st.st_uid) + "/" + std::string(kSharedRingPrefix) +
         std::string(trace_uuid) + "-" + std::to_string(st.st_dev) + "-" + std::to_string(st.st_ino);
}

// Parses a SharedRingDirectory name, "rings-<36-character uuid>-<dev>-<inode>": the trace
// directory's device and inode. False if `name` is not such a name.
inline bool ParseSharedRingDirectoryName(std::string_view name, dev_t* dev, ino_t* ino) {
  if (name.substr(0, kSharedRingPrefix.size()) != kSharedRingPrefix) return false;
  name.remove_prefix(kSharedRingPrefix.size());
  if (name.size() < 36 + 4 || name[36] != '-') return false;
  name.remove_prefix(37);
  std::uint64_t v[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const std::size_t end = i == 0 ? name.find('-') : name.size();
    if (end == 0 || end == std::string_view::npos || end > 20) return false;
    for (const char c : name.substr(0, end)) {
      if (c < '0' || c > '9') return false;
      v[i] = v[i] * 10 + static_cast<std::uint64_t>(c - '0');
    }
    name.remove_prefix(i == 0 ? end + 1 : end);
  }
  *dev = static_cast<dev_t>(v[0]);
  *ino = static_cast<ino_t>(v[1]);
  return true;
}

}  // namespace hush::format

#endif  // HUSHTRACE_SRC_FORMAT_RING_LOCATION_H_
