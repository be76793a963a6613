#include "recover/recover_test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "emulated_exec.h"

extern char** environ;

namespace rectest {
namespace {

std::atomic<unsigned> g_counter{0};

std::string TempFile(const char* tag) {
  return testing::TempDir() + "/rectest_" + std::to_string(::getpid()) + "_" + tag + "_" +
         std::to_string(g_counter.fetch_add(1));
}

// Stdin from /dev/null, stdout to `out_fd`, stderr to `err_fd` (support/run.h).
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int out_fd, int err_fd) {
  return hush::testsupport::Spawn(argv, env, -1, -1, out_fd, err_fd);
}

void FillResult(int status, Result* r) {
  if (WIFEXITED(status)) {
    r->exited = true;
    r->code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r->signal = WTERMSIG(status);
  }
}

// Waits for `pid` at most `timeout_s`, then kills it.
int WaitPid(pid_t pid, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return status;
    }
    ::usleep(1000);
  }
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

std::string Result::Describe() const {
  std::string s = exited ? "exit " + std::to_string(code)
                         : (signal != 0 ? "signal " + std::to_string(signal) : std::string("not run"));
  return s + "\n--- stdout ---\n" + out.substr(0, 4000) + "\n--- stderr ---\n" + err.substr(0, 4000);
}

std::vector<std::string> Env(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "HUSHTRACE_", 10) == 0 || std::strncmp(*e, "ASAN_OPTIONS=", 13) == 0 ||
        std::strncmp(*e, "TSAN_OPTIONS=", 13) == 0) {
      continue;
    }
    env.push_back(*e);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

Result Run(const std::vector<std::string>& argv, const std::vector<std::string>& env, int timeout_s) {
  const hush::testsupport::RunResult r = hush::testsupport::Run(argv, {"", {}, &env, timeout_s});
  Result out;
  out.exited = r.exited;
  out.code = r.exit_code;
  out.signal = r.signal;
  out.out = r.out;
  out.err = r.started ? r.err : "cannot start " + Join(argv) + ": " + r.err;
  return out;
}

Child::Child(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  err_path_ = TempFile("child_err");
  const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  pid_ = Spawn(argv, env, fds[1], err);
  ::close(fds[1]);
  ::close(err);
  out_fd_ = fds[0];
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (!err_path_.empty()) ::unlink(err_path_.c_str());
}

bool Child::WaitFor(const std::string& text, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (out_.find(text) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0 || out_fd_ < 0) return false;
    pollfd p{out_fd_, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    char buf[4096];
    const ssize_t got = ::read(out_fd_, buf, sizeof buf);
    if (got <= 0) return false;
    out_.append(buf, static_cast<std::size_t>(got));
  }
  return true;
}

void Child::Kill(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

Result Child::Wait(int timeout_s) {
  Result r;
  if (pid_ <= 0) return r;
  if (!reaped_) {
    FillResult(WaitPid(pid_, timeout_s), &r);
    reaped_ = true;
  }
  if (out_fd_ >= 0) {
    char buf[4096];
    ssize_t got;
    while ((got = ::read(out_fd_, buf, sizeof buf)) > 0) out_.append(buf, static_cast<std::size_t>(got));
  }
  r.out = out_;
  r.err = ReadFile(err_path_);
  return r;
}

std::string VictimPath() { return RECOVER_VICTIM; }

std::string CliPath() {
  if (const char* b = std::getenv("HUSH_BINARY_DIR"); b != nullptr && *b != '\0') {
    const std::string p = std::string(b) + "/tools/hushtrace/hushtrace";
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return RECOVER_CLI;
}

std::string NewTraceDir(const std::string& tag, Where where) {
  struct statfs fs;
  const bool shm = where == Where::kMemory && ::statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC;
  const std::string base =
      (shm ? std::string("/dev/shm") : testing::TempDir()) + "/recover_test_" + std::to_string(::getpid());
  if (::mkdir(base.c_str(), 0700) == 0) {
    // Removed at exit once empty (a failed test keeps its trace directory, and so this).
    static std::vector<std::string> bases;
    if (bases.empty()) std::atexit([] { for (const std::string& b : bases) ::rmdir(b.c_str()); });
    bases.push_back(base);
  }
  return base + "/" + tag + "_" + std::to_string(g_counter.fetch_add(1));
}

std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const char* sub : {"", ".ring/"}) {
    DIR* d = ::opendir((dir + "/" + sub).c_str());
    if (d == nullptr) continue;
    while (const dirent* e = ::readdir(d)) {
      const std::string path = dir + "/" + sub + e->d_name;
      struct stat st;
      if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) files[std::string(sub) + e->d_name] = ReadFile(path);
    }
    ::closedir(d);
  }
  return files;
}

bool CopyTree(const std::string& from, const std::string& to) {
  if (::mkdir(to.c_str(), 0700) != 0) return false;
  if (Exists(from + "/.ring") && ::mkdir((to + "/.ring").c_str(), 0700) != 0) return false;
  for (const auto& [name, content] : Snapshot(from)) {
    if (!WriteFile(to + "/" + name, content)) return false;
  }
  return true;
}

std::vector<std::string> VictimArgv(const VictimSpec& s) {
  return {VictimPath(), std::to_string(s.threads), std::to_string(s.events), s.crash,
          std::to_string(s.after_ms), std::to_string(s.pace)};
}

std::vector<std::string> VictimEnv(const VictimSpec& s, const std::string& dir) {
  // Sanitizer builds: let SIGSEGV and SIGABRT kill the process as they would without sanitizers.
  return Env({"HUSHTRACE_EVENTS=recover:*", "HUSHTRACE_OUTPUT=" + dir, "HUSHTRACE_MODE=" + s.mode,
              "HUSHTRACE_BUFFER_SIZE=" + s.buffer,
              "ASAN_OPTIONS=handle_segv=0:handle_abort=0:detect_leaks=0",
              "TSAN_OPTIONS=handle_segv=0:handle_abort=0:report_signal_unsafe=0"});
}

Result RunVictim(const VictimSpec& spec, const std::string& dir) {
  return Run(VictimArgv(spec), VictimEnv(spec, dir), 120);
}

Result Recover(const std::string& dir, const std::vector<std::string>& options) {
  std::vector<std::string> argv = {CliPath(), "recover"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(dir);
  return Run(argv, Env(), 300);
}

bool HaveBabeltrace() { return ::access("/usr/bin/babeltrace2", X_OK) == 0; }

bool BtResult::ok() const {
  return run.exited && run.code == 0 && run.err.find("ERROR") == std::string::npos &&
         run.out.find("ERROR") == std::string::npos;
}

namespace {

bool ParseUint(const std::string& s, std::size_t at, std::uint64_t* v) {
  if (at >= s.size() || s[at] < '0' || s[at] > '9') return false;
  std::uint64_t x = 0;
  while (at < s.size() && s[at] >= '0' && s[at] <= '9') x = x * 10 + static_cast<std::uint64_t>(s[at++] - '0');
  *v = x;
  return true;
}

bool FieldAfter(const std::string& line, const std::string& key, std::uint64_t* v) {
  const std::size_t at = line.find(key);
  return at != std::string::npos && ParseUint(line, at + key.size(), v);
}

}  // namespace

BtResult ReadWithBabeltrace(const std::string& dir) {
  BtResult bt;
  bt.run = Run({"/usr/bin/babeltrace2", dir}, Env(), 300);
  std::size_t pos = 0;
  const std::string& out = bt.run.out;
  while (pos < out.size()) {
    std::size_t nl = out.find('\n', pos);
    if (nl == std::string::npos) nl = out.size();
    const std::string line = out.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.find(" recover:seq: ") != std::string::npos) {
      SeqEvent e;
      std::uint64_t thread = 0;
      if (FieldAfter(line, "{ thread = ", &thread) && FieldAfter(line, ", seq = ", &e.seq)) {
        e.thread = static_cast<std::uint32_t>(thread);
        FieldAfter(line, "vtid = ", &e.vtid);
        if (const std::size_t close = line.find(']'); line[0] == '[' && close != std::string::npos) {
          e.time = line.substr(0, close + 1);
        }
        bt.events.push_back(e);
        continue;
      }
    }
    if (!line.empty() && line[0] == '[') ++bt.other_events;
  }
  // "WARNING: Tracer discarded 192 events between ..." (stderr).
  const std::string key = "Tracer discarded ";
  for (std::size_t at = bt.run.err.find(key); at != std::string::npos; at = bt.run.err.find(key, at + 1)) {
    std::uint64_t n = 0;
    if (ParseUint(bt.run.err, at + key.size(), &n)) bt.discarded += n;
    ++bt.discard_warnings;
  }
  return bt;
}

DiskCounters ReadDiskCounters(const std::string& dir) {
  DiskCounters c;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    c.error = "cannot open " + dir;
    return c;
  }
  std::vector<std::string> streams;
  while (const dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, "stream_", 7) == 0) streams.push_back(e->d_name);
  }
  ::closedir(d);
  for (const std::string& name : streams) {
    const std::string data = ReadFile(dir + "/" + name);
    std::size_t off = 0;
    std::uint64_t lost = 0, overwritten = 0;
    while (off < data.size()) {
      if (data.size() - off < 112) {
        c.error = name + ": truncated packet header at " + std::to_string(off);
        return c;
      }
      std::uint32_t magic;
      std::uint64_t content, packet;
      std::memcpy(&magic, data.data() + off, 4);
      std::memcpy(&content, data.data() + off + 48, 8);
      std::memcpy(&packet, data.data() + off + 56, 8);
      if (magic != 0xC1FC1FC1u || content != packet || content % 8 != 0 || content / 8 < 112 ||
          content / 8 > data.size() - off) {
        c.error = name + ": bad packet at " + std::to_string(off);
        return c;
      }
      std::memcpy(&lost, data.data() + off + 72, 8);
      std::memcpy(&overwritten, data.data() + off + 80, 8);
      off += content / 8;
      ++c.packets;
    }
    c.lost += lost;
    c.overwritten += overwritten;
  }
  c.ok = true;
  return c;
}

std::string CheckSequences(const std::vector<SeqEvent>& events, unsigned threads,
                           std::uint64_t expected_per_thread, std::uint64_t* missing,
                           bool* contiguous_suffix) {
  std::vector<std::int64_t> last(threads, -1);
  std::vector<std::uint64_t> count(threads, 0), first(threads, 0);
  std::map<std::uint32_t, std::uint64_t> vtid_of;
  for (const SeqEvent& e : events) {
    if (e.thread >= threads) return "event of an unknown thread " + std::to_string(e.thread);
    std::int64_t& l = last[e.thread];
    if (static_cast<std::int64_t>(e.seq) <= l) {
      return "thread " + std::to_string(e.thread) + ": seq " + std::to_string(e.seq) + " after " +
             std::to_string(l) + " (duplicate or out of order)";
    }
    if (expected_per_thread != 0 && e.seq >= expected_per_thread) {
      return "thread " + std::to_string(e.thread) + ": seq " + std::to_string(e.seq) + " beyond " +
             std::to_string(expected_per_thread);
    }
    if (count[e.thread] == 0) first[e.thread] = e.seq;
    l = static_cast<std::int64_t>(e.seq);
    ++count[e.thread];
    if (e.vtid != 0) {
      auto [it, inserted] = vtid_of.emplace(e.thread, e.vtid);
      if (!inserted && it->second != e.vtid) return "thread " + std::to_string(e.thread) + " under two vtids";
    }
  }
  std::uint64_t miss = 0;
  bool suffix = true;
  for (unsigned k = 0; k < threads; ++k) {
    const std::uint64_t end = expected_per_thread != 0 ? expected_per_thread : static_cast<std::uint64_t>(last[k] + 1);
    miss += end - count[k];
    if (count[k] != 0 && (last[k] + 1 - static_cast<std::int64_t>(first[k]) != static_cast<std::int64_t>(count[k]) ||
                          static_cast<std::uint64_t>(last[k] + 1) != end)) {
      suffix = false;
    }
  }
  *missing = miss;
  if (contiguous_suffix != nullptr) *contiguous_suffix = suffix;
  return "";
}

}  // namespace rectest
