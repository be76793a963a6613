// Helpers of the recovery tests: child processes, trace directories, reading a trace back with
// the babeltrace2 CLI and with the stream files' packet headers.
#ifndef HUSHTRACE_TESTS_RECOVER_RECOVER_TEST_UTIL_H_
#define HUSHTRACE_TESTS_RECOVER_RECOVER_TEST_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/run.h"

namespace rectest {

// --- processes ---

struct Result {
  bool exited = false;  // normal exit (else killed by a signal, or not started)
  int code = -1;
  int signal = 0;
  std::string out, err;
  std::string Describe() const;
};

// The environment of this process without HUSHTRACE_* and ASAN_OPTIONS, plus `extra` ("K=V").
std::vector<std::string> Env(const std::vector<std::string>& extra = {});

// Runs argv (argv[0] a path) and waits at most `timeout_s` (then SIGKILL).
Result Run(const std::vector<std::string>& argv, const std::vector<std::string>& env = Env(),
           int timeout_s = 120);

// A child whose stdout is a pipe we can wait on.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& env);
  ~Child();  // SIGKILL and reap if still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Waits until stdout contains `text` (false on timeout or end of output).
  bool WaitFor(const std::string& text, int timeout_ms = 30000);
  const std::string& output() const { return out_; }  // stdout read so far (by WaitFor)
  void Kill(int sig);
  Result Wait(int timeout_s = 120);

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string out_;
  std::string err_path_;
  bool reaped_ = false;
};

// --- paths and files ---

std::string VictimPath();
std::string CliPath();  // $HUSH_BINARY_DIR/tools/hushtrace/hushtrace
// A fresh, not yet existing path.
// Where a new trace directory goes: where the tests' temporary files go (a disk file system on
// most machines: the trace's rings then live in /dev/shm, format/ring_location.h), or on tmpfs
// (/dev/shm), where a trace holds its rings itself and a crashed trace can be copied whole, its
// ring files patched and renamed (the corruption and layout tests).
enum class Where { kTemp, kMemory };
std::string NewTraceDir(const std::string& tag, Where where = Where::kTemp);
// Files and directories: tests/support/files.h.
using hush::testsupport::Exists;
using hush::testsupport::ReadFile;
using hush::testsupport::RingFiles;
using hush::testsupport::RingPath;
using hush::testsupport::RemoveTree;
using hush::testsupport::WriteFile;
// name -> content of every regular file in `dir` (the ring files included) and in `dir`/.ring
// (where earlier versions kept them).
std::map<std::string, std::string> Snapshot(const std::string& dir);
bool CopyTree(const std::string& from, const std::string& to);  // dir + .ring, flat files

// --- the traced program and recovery ---

struct VictimSpec {
  std::string mode = "stream";  // HUSHTRACE_MODE
  std::string buffer = "256k";  // HUSHTRACE_BUFFER_SIZE
  unsigned threads = 1;
  std::uint64_t events = 1000;  // per thread, 0: unlimited
  std::string crash = "sigkill";
  unsigned after_ms = 0;
  unsigned pace = 0;
};
std::vector<std::string> VictimArgv(const VictimSpec& spec);
std::vector<std::string> VictimEnv(const VictimSpec& spec, const std::string& dir);
Result RunVictim(const VictimSpec& spec, const std::string& dir);
Result Recover(const std::string& dir, const std::vector<std::string>& options = {});

// --- reading traces ---

bool HaveBabeltrace();

struct SeqEvent {
  std::uint32_t thread = 0;
  std::uint64_t seq = 0;
  std::uint64_t vtid = 0;
  std::string time;  // babeltrace2's "[HH:MM:SS.nnnnnnnnn]"
};

struct BtResult {
  Result run;                       // babeltrace2's exit status and output
  std::vector<SeqEvent> events;     // recover:seq events in output order
  std::uint64_t other_events = 0;   // any other event
  std::uint64_t discarded = 0;      // sum of the "discarded N events" warnings
  std::uint64_t discard_warnings = 0;
  bool ok() const;                  // exit 0 and no ERROR in its output
};
BtResult ReadWithBabeltrace(const std::string& dir);

// The loss counters recorded in the stream files (the last packet of each stream): on disk,
// events_discarded counts every lost event (overwritten included).
struct DiskCounters {
  bool ok = false;
  std::string error;
  std::uint64_t lost = 0;
  std::uint64_t overwritten = 0;
  std::uint64_t packets = 0;
};
DiskCounters ReadDiskCounters(const std::string& dir);

// Per-thread check of recover:seq events: strictly increasing, no duplicate. `expected_per_thread`
// (0: unknown) is the number of events each thread emitted. Returns "" or what is wrong; fills
// *missing with the events below each thread's last one (or below expected_per_thread) that are
// not in the trace, summed over the threads.
std::string CheckSequences(const std::vector<SeqEvent>& events, unsigned threads,
                           std::uint64_t expected_per_thread, std::uint64_t* missing,
                           bool* contiguous_suffix = nullptr);

}  // namespace rectest

#endif  // HUSHTRACE_TESTS_RECOVER_RECOVER_TEST_UTIL_H_
