#include "runtime/test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "base/unique_fd.h"
#include "emulated_exec.h"

extern char** environ;

#ifndef HUSH_RT_HELPER_DIR
#error "HUSH_RT_HELPER_DIR must be defined by tests/runtime/CMakeLists.txt"
#endif

namespace hushtest {
namespace {

std::uint64_t NowMs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000000;
}

// Spawns argv with stdin from `stdin_fd` (or /dev/null when -1), stdout and stderr to files.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int stdin_fd,
            int stdin_close_fd, const std::string& out_path, const std::string& err_path) {
  const hush::base::UniqueFd out(::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  const hush::base::UniqueFd err(::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!out || !err) return -1;
  return hush::testsupport::Spawn(argv, env, stdin_fd, stdin_close_fd, out.get(), err.get());
}

// Waits for `pid` at most `timeout_s`; kills it with SIGKILL on timeout.
void Reap(pid_t pid, int timeout_s, ProcessResult* r) {
  const std::uint64_t deadline = NowMs() + static_cast<std::uint64_t>(timeout_s) * 1000;
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return;
    if (NowMs() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r->err += "\n[test harness: killed after " + std::to_string(timeout_s) + " s timeout]\n";
      break;
    }
    ::usleep(2000);
  }
  if (WIFEXITED(status)) {
    r->exited = true;
    r->exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r->term_signal = WTERMSIG(status);
  }
}

std::string Unhex(const std::string& hex) {
  std::string out;
  auto val = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>((val(hex[i]) << 4) | val(hex[i + 1]));
  }
  return out;
}

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  return out;
}

}  // namespace

// --- files and directories ---

TempDir::TempDir(const std::string& tag) {
  std::string base = testing::TempDir();
  if (base.empty()) base = "/tmp/";
  if (base.back() != '/') base += '/';
  std::string templ = base + "hush-rt-" + tag + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << templ << ": " << std::strerror(errno);
  }
  path_ = templ;
}

TempDir::~TempDir() {
  const testing::TestInfo* info = testing::UnitTest::GetInstance()->current_test_info();
  if (info != nullptr && testing::Test::HasFailure()) {
    std::fprintf(stderr, "[kept for inspection: %s]\n", path_.c_str());
    return;
  }
  RemoveTree(path_);
}

int Mode(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 07777);
}

// --- child processes ---

std::string ProcessResult::Describe() const {
  std::ostringstream s;
  if (exited) {
    s << "exit code " << exit_code;
  } else if (term_signal != 0) {
    s << "killed by signal " << term_signal << " (" << strsignal(term_signal) << ")";
  } else {
    s << "did not run";
  }
  s << "\n--- stdout ---\n" << out.substr(0, 4000) << "\n--- stderr ---\n" << err.substr(0, 4000);
  return s.str();
}

std::vector<std::string> ChildEnv(const std::vector<std::string>& extra, bool leak_check) {
  std::vector<std::string> env;
  std::string asan = "ASAN_OPTIONS=";
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "HUSHTRACE_", 10) == 0) continue;
    if (std::strncmp(*e, "ASAN_OPTIONS=", 13) == 0) {
      asan = std::string(*e) + ":";
      continue;
    }
    // A variable `extra` sets replaces the inherited one (getenv finds the first).
    const char* eq = std::strchr(*e, '=');
    const std::size_t name_len = eq != nullptr ? static_cast<std::size_t>(eq - *e) + 1 : 0;
    bool replaced = false;
    for (const std::string& x : extra) replaced = replaced || (name_len != 0 && x.compare(0, name_len, *e, name_len) == 0);
    if (replaced) continue;
    env.push_back(*e);
  }
  // The last setting of an option wins.
  env.push_back(asan + (leak_check ? "detect_leaks=1" : "detect_leaks=0"));
  for (const std::string& x : extra) env.push_back(x);
  return env;
}

ProcessResult RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         int timeout_s) {
  const hush::testsupport::RunResult run = hush::testsupport::Run(argv, {"", {}, &env, timeout_s});
  ProcessResult r;
  r.exited = run.exited;
  r.exit_code = run.exit_code;
  r.term_signal = run.signal;
  r.out = run.out;
  r.err = run.err;
  if (!run.started) r.err = "cannot spawn " + argv[0] + ": " + run.err;
  if (run.timed_out) r.err += "\n[test harness: killed after " + std::to_string(timeout_s) + " s timeout]\n";
  return r;
}

Child::Child(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  files_ = new TempDir("child");
  out_path_ = files_->Sub("out");
  err_path_ = files_->Sub("err");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  pid_ = Spawn(argv, env, fds[0], fds[1], out_path_, err_path_);
  ::close(fds[0]);
  stdin_fd_ = fds[1];
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  delete files_;
}

bool Child::WaitForOutput(const std::string& text, int timeout_ms) {
  const std::uint64_t deadline = NowMs() + static_cast<std::uint64_t>(timeout_ms);
  while (NowMs() < deadline) {
    if (ReadFile(out_path_).find(text) != std::string::npos) return true;
    int status;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      return ReadFile(out_path_).find(text) != std::string::npos;
    }
    ::usleep(2000);
  }
  return false;
}

bool Child::WriteStdin(const std::string& text) {
  return stdin_fd_ >= 0 &&
         ::write(stdin_fd_, text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

void Child::CloseStdin() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  stdin_fd_ = -1;
}

ProcessResult Child::Wait(int timeout_s) {
  ProcessResult r;
  if (pid_ > 0 && !reaped_) {
    Reap(pid_, timeout_s, &r);
    reaped_ = true;
  }
  r.out = Stdout();
  r.err = Stderr() + r.err;
  return r;
}

std::string Child::Stdout() const { return ReadFile(out_path_); }
std::string Child::Stderr() const { return ReadFile(err_path_); }

bool RunInChild(const std::function<ChildReport()>& fn, ChildReport* report, std::string* failure,
                int timeout_s) {
  int fds[2];
  if (::pipe(fds) != 0) {
    *failure = "pipe failed";
    return false;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    *failure = std::string("fork failed: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    ::close(fds[0]);
    const ChildReport r = fn();
    std::string msg = std::to_string(r.numbers.size()) + "\n";
    for (std::uint64_t n : r.numbers) msg += std::to_string(n) + "\n";
    msg += r.error;
    const char* p = msg.data();
    std::size_t left = msg.size();
    while (left > 0) {
      const ssize_t w = ::write(fds[1], p, left);
      if (w <= 0) break;
      p += w;
      left -= static_cast<std::size_t>(w);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string data;
  char buf[4096];
  const std::uint64_t deadline = NowMs() + static_cast<std::uint64_t>(timeout_s) * 1000;
  bool timed_out = false;
  for (;;) {
    pollfd pfd = {fds[0], POLLIN, 0};
    const std::uint64_t now = NowMs();
    if (now >= deadline) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    const int ready =
        ::poll(&pfd, 1, static_cast<int>(std::min<std::uint64_t>(deadline - now, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    *failure = "the child did not finish within " + std::to_string(timeout_s) + " s (killed)";
    return false;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *failure = WIFSIGNALED(status)
                   ? std::string("the child crashed: signal ") + strsignal(WTERMSIG(status))
                   : "the child exited with status " + std::to_string(WEXITSTATUS(status));
    return false;
  }
  std::size_t at = data.find('\n');
  if (at == std::string::npos) {
    *failure = "the child reported nothing";
    return false;
  }
  const std::size_t count = std::strtoull(data.substr(0, at).c_str(), nullptr, 10);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t next = data.find('\n', at + 1);
    report->numbers.push_back(
        std::strtoull(data.substr(at + 1, next - at - 1).c_str(), nullptr, 10));
    at = next;
  }
  report->error = data.substr(at + 1);
  return true;
}

// --- traces ---

bool TraceEvent::Has(const std::string& field) const {
  for (const auto& f : fields) {
    if (f.first == field) return true;
  }
  return false;
}

std::string TraceEvent::Kind(const std::string& field) const {
  for (const auto& f : fields) {
    if (f.first == field) return f.second.substr(0, f.second.find(':'));
  }
  ADD_FAILURE() << "event " << name << " has no field " << field;
  return "";
}

namespace {
std::string RawValue(const TraceEvent& e, const std::string& field) {
  for (const auto& f : e.fields) {
    if (f.first == field) return f.second.substr(f.second.find(':') + 1);
  }
  ADD_FAILURE() << "event " << e.name << " has no field " << field;
  return "0";
}
}  // namespace

std::uint64_t TraceEvent::U(const std::string& field) const {
  return std::strtoull(RawValue(*this, field).c_str(), nullptr, 10);
}
std::int64_t TraceEvent::I(const std::string& field) const {
  return std::strtoll(RawValue(*this, field).c_str(), nullptr, 10);
}
double TraceEvent::D(const std::string& field) const {
  return std::strtod(RawValue(*this, field).c_str(), nullptr);
}
std::string TraceEvent::S(const std::string& field) const { return Unhex(RawValue(*this, field)); }

std::uint64_t Trace::TotalDiscarded() const {
  std::uint64_t n = 0;
  for (const auto& [stream, count] : discarded) n += count;
  return n;
}

std::vector<const TraceEvent*> Trace::Named(const std::string& name) const {
  std::vector<const TraceEvent*> out;
  for (const TraceEvent& e : events) {
    if (e.name == name) out.push_back(&e);
  }
  return out;
}

Trace ReadTrace(const std::string& dir) {
  Trace t;
  const ProcessResult r = RunProcess({HelperPath("hush_bt_dump"), dir}, ChildEnv(), 120);
  if (!r.exited || r.exit_code != 0) {
    t.error = r.Describe();
    return t;
  }
  t.ok = true;
  std::size_t start = 0;
  while (start < r.out.size()) {
    std::size_t nl = r.out.find('\n', start);
    if (nl == std::string::npos) nl = r.out.size();
    const std::string line = r.out.substr(start, nl - start);
    start = nl + 1;
    if (line.empty()) continue;
    t.raw.push_back(line);
    const std::vector<std::string> c = SplitTabs(line);
    if (c[0] == "E" && c.size() >= 7) {
      TraceEvent e;
      e.stream = std::strtoull(c[1].c_str(), nullptr, 10);
      e.vtid = std::strtoll(c[2].c_str(), nullptr, 10);
      e.cycles = std::strtoull(c[3].c_str(), nullptr, 10);
      e.ns = std::strtoll(c[4].c_str(), nullptr, 10);
      e.name = c[5];
      e.emf = c[6];
      for (std::size_t i = 7; i < c.size(); ++i) {
        const std::size_t eq = c[i].find('=');
        e.fields.emplace_back(c[i].substr(0, eq), c[i].substr(eq + 1));
      }
      t.events.push_back(std::move(e));
    } else if (c[0] == "D" && c.size() >= 3) {
      const std::int64_t n = std::strtoll(c[2].c_str(), nullptr, 10);
      ++t.discard_messages;
      if (n < 0) ++t.unknown_discards;
      t.discarded[std::strtoull(c[1].c_str(), nullptr, 10)] +=
          n > 0 ? static_cast<std::uint64_t>(n) : 0;
    } else if (c[0] == "L" && c.size() >= 3) {
      const std::int64_t n = std::strtoll(c[2].c_str(), nullptr, 10);
      t.discarded_packets += n > 0 ? static_cast<std::uint64_t>(n) : 0;
    } else if (c[0] == "B") {
      ++t.packets;
    }
  }
  return t;
}

RecordedLosses ReadRecordedLosses(const std::string& dir) {
  RecordedLosses r;
  r.ok = true;
  for (const std::string& name : ListDir(dir)) {
    if (name.rfind("stream_", 0) != 0) continue;
    const std::string data = ReadFile(dir + "/" + name);
    std::size_t at = 0;
    std::uint64_t discarded = 0, overwritten = 0;
    while (at + 112 <= data.size()) {
      std::uint64_t content_bits = 0;
      std::memcpy(&content_bits, data.data() + at + 48, 8);
      std::memcpy(&discarded, data.data() + at + 72, 8);
      std::memcpy(&overwritten, data.data() + at + 80, 8);
      ++r.packets;
      if (content_bits / 8 < 112) {
        r.ok = false;
        break;
      }
      at += content_bits / 8;
    }
    if (at != data.size()) r.ok = false;
    r.discarded += discarded;
    r.overwritten += overwritten;
  }
  return r;
}

ProcessResult RunBabeltrace(const std::string& dir) {
  return RunProcess({"/usr/bin/babeltrace2", dir}, ChildEnv(), 120);
}

std::string PopulateWriteProblem() {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  constexpr std::size_t kPages = 4;
  void* p =
      ::mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return std::string("mmap: ") + std::strerror(errno);
  std::string problem;
  if (::madvise(p, kPages * page, 23 /* MADV_POPULATE_WRITE */) != 0) {
    problem = "MADV_POPULATE_WRITE unsupported (kernel < 5.14)";
  } else {
    const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    std::size_t present = 0;
    for (std::size_t i = 0; fd >= 0 && i < kPages; ++i) {
      std::uint64_t entry = 0;
      const off_t at = static_cast<off_t>((reinterpret_cast<std::uintptr_t>(p) / page + i) * 8);
      if (::pread(fd, &entry, sizeof entry, at) == 8 && (entry >> 63) != 0) ++present;
    }
    if (fd >= 0) ::close(fd);
    if (present != kPages) {
      problem =
          "madvise(MADV_POPULATE_WRITE) succeeds but populates nothing (qemu-user ignores "
          "madvise advice)";
    }
  }
  ::munmap(p, kPages * page);
  return problem;
}

std::string HelperPath(const char* name) { return std::string(HUSH_RT_HELPER_DIR) + "/" + name; }

}  // namespace hushtest
