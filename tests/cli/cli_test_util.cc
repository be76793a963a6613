#include "cli/cli_test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "emulated_exec.h"

namespace hush::clitest {
namespace {

std::vector<char*> CArgs(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const std::string& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

int DecodeStatus(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}


}  // namespace

RunResult RunCommand(const std::vector<std::string>& argv, const RunOptions& options) {
  const testsupport::RunResult r =
      testsupport::Run(argv, {options.cwd, options.env, nullptr, options.timeout_seconds});
  return RunResult{r.Status(), r.out, r.err};
}

pid_t Spawn(const std::vector<std::string>& program_argv, const std::string& out_file,
            const std::string& err_file) {
  const std::vector<std::string> argv = hushtest::EmulatedArgv(program_argv);
  std::vector<char*> args = CArgs(argv);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0) ::_exit(126);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

int Wait(pid_t pid, int timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  for (;;) {
    int wstatus = 0;
    const pid_t r = ::waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) return DecodeStatus(wstatus);
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
      }
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string BinaryDir() { return Env("HUSH_BINARY_DIR"); }
std::string SourceDir() { return Env("HUSH_SOURCE_DIR"); }
std::string HushtraceCli() { return BinaryDir() + "/tools/hushtrace/hushtrace"; }

bool WaitForFile(const std::string& path, int timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (PathExists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

int LineOf(const std::string& file, const std::string& marker) {
  const std::vector<std::string> lines = Lines(ReadFile(file));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(marker) != std::string::npos) return static_cast<int>(i + 1);
  }
  return 0;
}

std::string FindInPath(const std::string& program) {
  std::istringstream path(Env("PATH"));
  std::string dir;
  while (std::getline(path, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

bool IsLowerHex(const std::string& s, std::size_t min_length) {
  if (s.size() < min_length) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool MatchesShape(const std::string& s, const std::string& shape) {
  if (s.size() != shape.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (shape[i] == '#' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i]) return false;
  }
  return true;
}

std::string LineContaining(const std::string& text, const std::string& needle) {
  for (const std::string& line : Lines(text)) {
    if (line.find(needle) != std::string::npos) return line;
  }
  return "";
}

bool CleanStderr(const std::string& err) {
  return err.find("Sanitizer") == std::string::npos &&
         err.find("runtime error:") == std::string::npos &&
         err.find("Segmentation fault") == std::string::npos;
}

}  // namespace hush::clitest
