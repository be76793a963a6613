#include "support/run.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/unique_fd.h"
#include "emulated_exec.h"

extern char** environ;

namespace hush::testsupport {
namespace {

// An unlinked file for one output stream of the child.
base::UniqueFd TempOutput() {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hush_run.XXXXXX";
  base::UniqueFd fd(::mkostemp(path.data(), O_CLOEXEC));
  if (fd) ::unlink(path.c_str());
  return fd;
}

std::string ReadAll(int fd) {
  std::string out;
  if (::lseek(fd, 0, SEEK_SET) != 0) return out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// The child's environment: the base (this process's, or options.env) with extra_env over it.
std::vector<std::string> Environment(const RunOptions& options) {
  std::vector<std::string> env;
  const auto overridden = [&](const std::string& entry) {
    const std::size_t eq = entry.find('=');
    for (const std::string& x : options.extra_env) {
      if (eq != std::string::npos && x.compare(0, eq + 1, entry, 0, eq + 1) == 0) return true;
    }
    return false;
  };
  if (options.env != nullptr) {
    for (const std::string& e : *options.env) {
      if (!overridden(e)) env.push_back(e);
    }
  } else {
    for (char** e = environ; *e != nullptr; ++e) {
      if (!overridden(*e)) env.emplace_back(*e);
    }
  }
  env.insert(env.end(), options.extra_env.begin(), options.extra_env.end());
  return env;
}

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const std::string& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

int RunResult::Status() const {
  if (!started || timed_out) return -1;
  return exited ? exit_code : 128 + signal;
}

std::string RunResult::Describe() const {
  std::string s = !started    ? std::string("did not start")
                  : timed_out ? std::string("timed out (killed)")
                  : exited    ? "exit code " + std::to_string(exit_code)
                              : "killed by signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
  return s + "\n--- stdout ---\n" + out.substr(0, 4000) + "\n--- stderr ---\n" + err.substr(0, 4000);
}

int Spawn(const std::vector<std::string>& program_argv, const std::vector<std::string>& env, int stdin_fd,
          int close_in_child, int out_fd, int err_fd, const std::string& cwd) {
  const std::vector<std::string> argv = hushtest::EmulatedArgv(program_argv);
  if (argv.empty()) {
    errno = EINVAL;
    return -1;
  }
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  if (stdin_fd >= 0) {
    posix_spawn_file_actions_adddup2(&files, stdin_fd, 0);
  } else {
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  }
  if (close_in_child >= 0) posix_spawn_file_actions_addclose(&files, close_in_child);
  posix_spawn_file_actions_adddup2(&files, out_fd, 1);
  posix_spawn_file_actions_adddup2(&files, err_fd, 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&files, cwd.c_str());
  // Children start with default signal dispositions and an empty mask.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> a = CStrings(argv), e = CStrings(env);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, a[0], &files, &attr, a.data(), e.data());
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  return pid;
}

RunResult Run(const std::vector<std::string>& argv, const RunOptions& options) {
  RunResult r;
  const base::UniqueFd out = TempOutput(), err = TempOutput();
  if (argv.empty() || !out || !err) {
    r.err = "cannot set up the child's output";
    return r;
  }
  const pid_t pid = Spawn(argv, Environment(options), -1, -1, out.get(), err.get(), options.cwd);
  if (pid < 0) {
    r.err = "cannot start " + argv[0] + ": " + std::strerror(errno);
    return r;
  }
  r.started = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_seconds);
  int status = 0;
  bool reaped = false;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      reaped = true;
      break;
    }
    if (done < 0 && errno != EINTR) break;  // not ours to wait for: how it ended is unknown
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      pid_t done_now;
      while ((done_now = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
      }
      reaped = done_now == pid;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!reaped) {
  } else if (WIFEXITED(status)) {
    r.exited = true;
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  r.out = ReadAll(out.get());
  r.err = ReadAll(err.get());
  return r;
}

}  // namespace hush::testsupport
