// Helpers of the live-control tests: a control_target child driven through pipes.
#ifndef HUSHTRACE_TESTS_CONTROL_CONTROL_TEST_UTIL_H_
#define HUSHTRACE_TESTS_CONTROL_CONTROL_TEST_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hush::controltest {

// A running control_target (tests/control/control_target.cc); killed by the destructor.
class Target {
 public:
  // `prefix` runs before the program (e.g. setpriv ...); `env` adds NAME=VALUE entries.
  explicit Target(const std::string& program, const std::vector<std::string>& prefix = {},
                  const std::vector<std::string>& env = {});
  ~Target();
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;

  pid_t pid() const { return pid_; }  // the target's own pid (after any prefix exec'ed it)
  bool ok() const { return pid_ > 0; }
  // Sends a command line and returns the reply line ("" on EOF or after 60 s).
  std::string Command(const std::string& line);

 private:
  std::string ReadLine();
  pid_t child_ = -1;
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  std::string pending_;
};

struct TickSummary {
  std::uint64_t ticks = 0;
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  bool consecutive = true;  // each seq is the previous + 1
  std::string error;
};
// Reads the ctl:tick events of the trace at `dir`.
TickSummary ReadTicks(const std::string& dir);

// A fresh directory (clitest::MakeTempDir), removed with its contents at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// "key: value" line of `text`, value only ("" if absent).
std::string StatusValue(const std::string& text, const std::string& key);

}  // namespace hush::controltest

#endif  // HUSHTRACE_TESTS_CONTROL_CONTROL_TEST_UTIL_H_
