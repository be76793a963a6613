// The sweep of orphaned ring directories on /dev/shm (format/ring_location.h).
//
// A session whose process dies leaves its rings for `hushtrace recover`; when the trace directory
// is on a disk, they are in /dev/shm/hushtrace-<uid>/rings-<uuid>-<dev>-<ino>/, memory. Deleting
// that trace directory without recovering it leaves them there: nothing could read them any more,
// and nothing else would free them before the machine restarts. A stream session's consumer
// thread sweeps its user's directory once, off the program's path (core.cc, ConsumerLoop), and
// removes each ring directory that is an orphan:
//
//   - its `trace` link (kRingTraceLink) names no directory, or one that is not the trace it was
//     made for (the device and inode in the ring directory's name differ): deleted, or replaced;
//   - and no process that wrote one of its rings still runs (the pid in each ring header): a
//     running writer keeps its rings, whatever became of its trace.
//
// A ring directory without the link is left alone: a session may be between the `mkdir` and the
// `symlink` of PlaceRings, and one made by a version without the link cannot be judged. A trace
// directory moved to another path after its writer died has a stale link too, and its rings are
// swept: recover a crashed trace before moving it (docs/format.md).
#ifndef HUSHTRACE_SRC_SESSION_RING_SWEEP_H_
#define HUSHTRACE_SRC_SESSION_RING_SWEEP_H_

#include <sys/types.h>

#include <string>

namespace hush::session {

// Sweeps the ring directories of `uid` on /dev/shm but `own` (a name, the caller's). Returns how
// many it removed.
int SweepOrphanedRingDirectories(uid_t uid, const std::string& own);

}  // namespace hush::session

#endif  // HUSHTRACE_SRC_SESSION_RING_SWEEP_H_
