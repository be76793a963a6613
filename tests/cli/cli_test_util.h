// Helpers of the cli tests: run processes, temporary directories, files.
#ifndef HUSHTRACE_TESTS_CLI_CLI_TEST_UTIL_H_
#define HUSHTRACE_TESTS_CLI_CLI_TEST_UTIL_H_

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/run.h"

namespace hush::clitest {

struct RunResult {
  int status = -1;  // exit status, 128+N if killed by signal N, -1 if it could not run or timed out
  std::string out;
  std::string err;
};

struct RunOptions {
  std::string cwd;               // "" = the test's
  std::vector<std::string> env;  // NAME=VALUE added to the environment
  int timeout_seconds = 120;
};

// Runs argv (PATH lookup for argv[0] without '/') and collects its output (support/run.h).
RunResult RunCommand(const std::vector<std::string>& argv, const RunOptions& options = {});

// Starts argv with stdout and stderr redirected to files; returns its pid (-1 on failure).
pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_file,
            const std::string& err_file);
// Waits for `pid`: exit status or 128+signal; -1 (after SIGKILL) if it takes longer than the
// timeout.
int Wait(pid_t pid, int timeout_seconds = 120);

std::string BinaryDir();  // $HUSH_BINARY_DIR
std::string SourceDir();  // $HUSH_SOURCE_DIR
std::string HushtraceCli();

// Files and directories: tests/support/files.h.
inline std::string MakeTempDir() { return testsupport::MakeTempDir("cli_test"); }
using testsupport::ListDir;
using testsupport::ReadFile;
using testsupport::RemoveTree;
using testsupport::WriteFile;
inline bool PathExists(const std::string& path) { return testsupport::Exists(path); }
bool WaitForFile(const std::string& path, int timeout_seconds);
std::vector<std::string> Lines(const std::string& text);
// 1-based number of the first line of `file` containing `marker`, 0 if none.
int LineOf(const std::string& file, const std::string& marker);
// The absolute path of `program` found in PATH, or "".
std::string FindInPath(const std::string& program);
// True if `s` has at least `min_length` characters, all lowercase hex digits.
bool IsLowerHex(const std::string& s, std::size_t min_length);
// True if `s` matches `shape`, where '#' stands for any decimal digit and other characters for
// themselves ("hushtrace-########-######").
bool MatchesShape(const std::string& s, const std::string& shape);
// The line of `text` containing `needle`, or "".
std::string LineContaining(const std::string& text, const std::string& needle);
// No sanitizer report and no crash in a child's stderr.
bool CleanStderr(const std::string& err);

}  // namespace hush::clitest

#endif  // HUSHTRACE_TESTS_CLI_CLI_TEST_UTIL_H_
