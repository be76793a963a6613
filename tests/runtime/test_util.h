// Shared helpers of the runtime tests: temporary directories, child processes and reading traces
// back through libbabeltrace2 (the hush_bt_dump helper, see bt_dump.cc for its line format).
#ifndef HUSHTRACE_TESTS_RUNTIME_TEST_UTIL_H_
#define HUSHTRACE_TESTS_RUNTIME_TEST_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/files.h"
#include "support/run.h"

namespace hushtest {

// --- files and directories ---

// A fresh empty directory under testing::TempDir(), removed (recursively) at destruction unless
// the current test failed (then it is kept for inspection and its path is logged).
class TempDir {
 public:
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // A path inside this directory that does not exist yet (for Session output_dir).
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Files and directories: tests/support/files.h.
using hush::testsupport::Exists;
using hush::testsupport::ListDir;
using hush::testsupport::RingDirectory;
using hush::testsupport::RingFiles;
using hush::testsupport::RingPath;
using hush::testsupport::ReadFile;
using hush::testsupport::RemoveTree;
using hush::testsupport::WriteFile;
// Permission bits (st_mode & 07777) from lstat, or -1.
int Mode(const std::string& path);

// "" if madvise(MADV_POPULATE_WRITE) populates pages here, else why not, for GTEST_SKIP: a kernel
// older than 5.14 refuses it; qemu-user accepts it and does nothing (it ignores madvise advice).
// Checked on an anonymous mapping of our own through /proc/self/pagemap.
std::string PopulateWriteProblem();

// --- child processes ---

struct ProcessResult {
  bool exited = false;  // normal exit (else killed by a signal, or failed to start)
  int exit_code = -1;
  int term_signal = 0;
  std::string out;
  std::string err;
  std::string Describe() const;  // for assertion messages
};

// The environment of this process without any HUSHTRACE_* variable, plus `extra` ("K=V").
// LeakSanitizer is off in the child (ASan builds) unless `leak_check`: leaks are checked by a
// dedicated test (ProcessTest.TracedProgramExitsCleanlyUnderLeakSanitizer), not by every test.
std::vector<std::string> ChildEnv(const std::vector<std::string>& extra = {},
                                  bool leak_check = false);

// Runs argv[0] (a path) with `env`, waits at most `timeout_s` seconds (then kills it and reports
// the kill), capturing stdout and stderr.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         int timeout_s = 60);

// A running child with a pipe on its stdin and stdout/stderr captured to files.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& env);
  ~Child();  // kills and reaps the child if still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Waits until the child's stdout contains `text`; false on timeout or child exit.
  bool WaitForOutput(const std::string& text, int timeout_ms = 20000);
  bool WriteStdin(const std::string& text);
  void CloseStdin();
  ProcessResult Wait(int timeout_s = 60);
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  std::string out_path_, err_path_;
  TempDir* files_ = nullptr;
  bool reaped_ = false;
};

// Runs `fn` in a forked child so that a crash (or a sanitizer abort) fails only the current test.
// `fn` must not use gtest assertions: it reports numbers and, if something went wrong, a message;
// the parent checks them. Call it while this process has a single thread. Returns false (with a
// description in *failure) when the child did not exit normally with status 0 or did not finish
// within timeout_s seconds (it is then killed).
struct ChildReport {
  std::vector<std::uint64_t> numbers;
  std::string error;
};
bool RunInChild(const std::function<ChildReport()>& fn, ChildReport* report, std::string* failure,
                int timeout_s = 120);

// --- traces ---

struct TraceEvent {
  std::uint64_t stream = 0;
  std::int64_t vtid = -1;
  std::uint64_t cycles = 0;
  std::int64_t ns = 0;  // nanoseconds from the clock's origin
  std::string name;
  std::string emf;  // event kind: event, span, instant, counter
  std::vector<std::pair<std::string, std::string>> fields;  // name -> "kind:value" as printed

  bool Has(const std::string& field) const;
  std::string Kind(const std::string& field) const;  // "i", "u", "e", "d", "s", "a", ...
  std::uint64_t U(const std::string& field) const;   // u and e fields
  std::int64_t I(const std::string& field) const;    // i and n fields
  double D(const std::string& field) const;          // d and f fields
  std::string S(const std::string& field) const;     // s (decoded string) and a (decoded bytes)
};

struct Trace {
  bool ok = false;    // the dump helper read the whole trace without error
  std::string error;  // its stderr when !ok (or a spawn failure)
  std::vector<TraceEvent> events;
  std::map<std::uint64_t, std::uint64_t> discarded;  // stream -> sum of discarded-events counts
  std::uint64_t discard_messages = 0;  // discarded-events messages, with or without a count
  std::uint64_t unknown_discards = 0;  // ... of which without a count
  std::uint64_t discarded_packets = 0;
  std::uint64_t packets = 0;
  std::vector<std::string> raw;  // every line of the dump
  std::uint64_t TotalDiscarded() const;
  std::vector<const TraceEvent*> Named(const std::string& name) const;
};

Trace ReadTrace(const std::string& dir);

// The loss counters a trace records, read from the packet headers of its stream_<N> files
// (docs/format.md, section 3): per stream, those of the last packet, summed over the streams.
// On disk events_discarded includes the overwritten events. Needed because a CTF reader cannot
// give the count of events lost before the first packet of a stream (babeltrace2 reports an
// unknown count), which is where flight-mode losses usually are.
struct RecordedLosses {
  bool ok = false;
  std::uint64_t discarded = 0;    // sum of the last packets' events_discarded
  std::uint64_t overwritten = 0;  // sum of the last packets' events_overwritten
  std::uint64_t packets = 0;
};
RecordedLosses ReadRecordedLosses(const std::string& dir);
// Runs /usr/bin/babeltrace2 DIR (text sink); the caller checks exit status and stderr.
ProcessResult RunBabeltrace(const std::string& dir);

// Path of a helper built next to the tests (compile definitions set by CMakeLists.txt).
std::string HelperPath(const char* name);

}  // namespace hushtest

#endif  // HUSHTRACE_TESTS_RUNTIME_TEST_UTIL_H_
