// Running a program from a test: one implementation for every suite (the CLI's, the reader's,
// recovery's and the runtime's helpers adapt its result to their own shapes).
//
//   RunResult r = Run({"hushtrace", "dump", dir}, {.extra_env = {"TZ=UTC"}, .timeout_seconds = 60});
//   EXPECT_EQ(r.Status(), 0) << r.Describe();
//
// The child starts with stdin from /dev/null, default signal dispositions and an empty signal
// mask; its stdout and stderr go to unlinked temporary files, read back once it has exited, so a
// grandchild that keeps them open cannot make the test wait. argv[0] without a '/' is looked up
// in PATH. Programs of the test's own architecture run under the emulator of a cross build
// (emulated_exec.h). Past the timeout the child is killed (SIGKILL) and timed_out is set.
#ifndef HUSHTRACE_TESTS_SUPPORT_RUN_H_
#define HUSHTRACE_TESTS_SUPPORT_RUN_H_

#include <string>
#include <vector>

namespace hush::testsupport {

struct RunOptions {
  std::string cwd;                     // "": the test's
  std::vector<std::string> extra_env;  // NAME=VALUE over this process's environment
  // When set, the child's whole environment instead (extra_env is then added to it).
  const std::vector<std::string>* env = nullptr;
  int timeout_seconds = 120;
};

struct RunResult {
  bool started = false;
  bool exited = false;  // normal exit
  int exit_code = -1;   // when exited
  int signal = 0;       // the signal that ended it (SIGKILL after a timeout)
  bool timed_out = false;
  std::string out, err;
  // The exit code, 128 + the signal, or -1 if it did not start or timed out.
  int Status() const;
  // For assertion messages: how it ended, then the start of its stdout and stderr.
  std::string Describe() const;
};

RunResult Run(const std::vector<std::string>& argv, const RunOptions& options = {});

// The start Run makes, for helpers that keep a child running (a pipe on its stdin): argv with the
// environment `env` (whole), stdin from `stdin_fd` (-1: /dev/null), `close_in_child` closed in
// the child (-1: none), stdout and stderr to `out_fd` and `err_fd`, in `cwd` ("": the test's).
// The pid, or -1 with errno set.
int Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int stdin_fd,
          int close_in_child, int out_fd, int err_fd, const std::string& cwd = "");

}  // namespace hush::testsupport

#endif  // HUSHTRACE_TESTS_SUPPORT_RUN_H_
