#include "control/control_test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <hushtrace/reader.h>

#include "cli/cli_test_util.h"

namespace hush::controltest {

Target::Target(const std::string& program, const std::vector<std::string>& prefix,
               const std::vector<std::string>& env) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return;
  std::vector<std::string> args = prefix;
  args.push_back(program);
  child_ = ::fork();
  if (child_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  to_ = in[1];
  from_ = out[0];
  if (child_ < 0 || ReadLine() != "ready") return;
  const std::string pid = Command("pid");
  pid_ = pid.empty() ? -1 : static_cast<pid_t>(std::atoi(pid.c_str()));
}

Target::~Target() {
  if (child_ > 0) {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
    ::kill(child_, SIGKILL);
    ::waitpid(child_, nullptr, 0);
  }
  if (to_ >= 0) ::close(to_);
  if (from_ >= 0) ::close(from_);
}

std::string Target::ReadLine() {
  for (;;) {
    const std::size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    pollfd p{from_, POLLIN, 0};
    if (::poll(&p, 1, 60000) <= 0) return "";
    char buf[256];
    const ssize_t n = ::read(from_, buf, sizeof buf);
    if (n <= 0) return "";
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

std::string Target::Command(const std::string& line) {
  const std::string l = line + "\n";
  if (::write(to_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) return "";
  return ReadLine();
}

TickSummary ReadTicks(const std::string& dir) {
  TickSummary s;
  auto trace = reader::Trace::Open(dir, &s.error);
  if (!trace) return s;
  reader::EventIterator it(*trace);
  while (it.Next()) {
    const reader::Event& e = it.event();
    if (e.name() != "ctl:tick") continue;
    const std::uint64_t seq = e.GetUint64("seq").value_or(~0ull);
    if (s.ticks == 0) {
      s.first = seq;
    } else if (seq != s.last + 1) {
      s.consecutive = false;
    }
    s.last = seq;
    ++s.ticks;
  }
  if (!it.error().empty()) s.error = it.error();
  return s;
}

TempDir::TempDir() : path_(clitest::MakeTempDir()) {}
TempDir::~TempDir() { clitest::RemoveTree(path_); }

std::string StatusValue(const std::string& text, const std::string& key) {
  const std::string prefix = key + ": ";
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    if (text.compare(begin, prefix.size(), prefix) == 0) {
      return text.substr(begin + prefix.size(), end - begin - prefix.size());
    }
    begin = end + 1;
  }
  return "";
}

}  // namespace hush::controltest
