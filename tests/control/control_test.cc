// Live control end to end: `hushtrace ps/start/stop/snapshot/status PID` against control_target,
// permissions between users, malformed requests on the control socket.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/cli_test_util.h"
#include "control/control_test_util.h"
#include "control/protocol.h"
#include "control/server.h"
#include "session/core.h"

namespace hush::controltest {
namespace {

using clitest::RunCommand;
using clitest::RunResult;

RunResult Cli(const std::vector<std::string>& args, const std::vector<std::string>& prefix = {}) {
  std::vector<std::string> argv = prefix;
  argv.push_back(HUSHTRACE_CLI);
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

mode_t ModeOf(const std::string& path, uid_t* owner = nullptr) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  if (owner) *owner = st.st_uid;
  return st.st_mode & 07777;
}

// Until `pid` (just forked, still this test's image) has exec'd a program named `name`.
void WaitForExec(pid_t pid, const std::string& name) {
  for (int i = 0; i < 5000; ++i) {
    char target[4096];
    const ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), target, sizeof target - 1);
    if (n > 0 && std::string(target, static_cast<std::size_t>(n)).ends_with("/" + name)) return;
    ::usleep(1000);
  }
}

void ExpectPrivateTrace(const std::string& trace, uid_t owner) {
  uid_t uid = 0;
  EXPECT_EQ(ModeOf(trace, &uid), 0700u) << trace;
  EXPECT_EQ(uid, owner);
  const std::vector<std::string> files = clitest::ListDir(trace);
  EXPECT_FALSE(files.empty());
  for (const std::string& f : files) {
    EXPECT_EQ(ModeOf(trace + "/" + f, &uid), 0600u) << f;
    EXPECT_EQ(uid, owner) << f;
  }
}

TEST(ControlTest, StartStopWritesEveryCommittedEvent) {
  Target t(CONTROL_TARGET);
  ASSERT_TRUE(t.ok());
  TempDir dir;
  const std::string trace = dir.path() + "/trace";
  const std::string pid = std::to_string(t.pid());
  RunResult r = Cli({"start", pid, "-e", "ctl:tick", "-o", trace});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_EQ(t.Command("emit 1000"), "done");
  r = Cli({"status", pid});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(StatusValue(r.out, "session"), "active");
  EXPECT_EQ(StatusValue(r.out, "started-by"), "hushtrace");
  EXPECT_EQ(StatusValue(r.out, "mode"), "stream");
  EXPECT_EQ(StatusValue(r.out, "enabled"), "ctl:tick");  // ctl:other and ctl:clock are not
  EXPECT_EQ(StatusValue(r.out, "buffers"), "1");
  EXPECT_EQ(StatusValue(r.out, "output"), trace);
  // The same keys as JSON; numbers as numbers (parsed by Python's json module).
  const std::string json = dir.path() + "/status.json";
  r = Cli({"status", pid, "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  {
    std::FILE* f = std::fopen(json.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(r.out.c_str(), f);
    std::fclose(f);
  }
  const RunResult py = clitest::RunCommand(
      {"/usr/bin/env", "python3", "-c",
       "import json,sys; d=json.load(open(sys.argv[1])); print(d['session'], d['buffers'] == 1)",
       json});
  EXPECT_EQ(py.out, "active True\n") << py.err << r.out;
  // CSV: a header row of the same keys, one row of values (Python's csv module): the same
  // strings, and digits where the JSON has a number (counters and times move between the calls).
  const std::string csv = dir.path() + "/status.csv";
  r = Cli({"status", pid, "--format", "csv"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(clitest::WriteFile(csv, r.out));
  const RunResult py_csv = clitest::RunCommand(
      {"/usr/bin/env", "python3", "-c",
       "import csv,json,sys\n"
       "rows=list(csv.reader(open(sys.argv[2], newline=''), strict=True))\n"
       "d=json.load(open(sys.argv[1]))\n"
       "print(len(rows), rows[0]==list(d),\n"
       "      all(c.isdigit() if isinstance(v, int) else c==v for c, v in zip(rows[1], d.values())),\n"
       "      len(rows[1])==len(d))",
       json, csv});
  EXPECT_EQ(py_csv.out, "2 True True True\n") << py_csv.err << r.out;
  r = Cli({"stop", pid});
  ASSERT_EQ(r.status, 0) << r.err;
  // Every event committed before `stop` returned is on disk.
  const TickSummary ticks = ReadTicks(trace);
  EXPECT_EQ(ticks.error, "");
  EXPECT_EQ(ticks.ticks, 1000u);
  EXPECT_EQ(ticks.first, 0u);
  EXPECT_EQ(ticks.last, 999u);
  EXPECT_TRUE(ticks.consecutive);
  ExpectPrivateTrace(trace, ::geteuid());
  // Tracing is off again and the program carries on.
  EXPECT_EQ(t.Command("emit 10"), "done");
  r = Cli({"status", pid});
  EXPECT_EQ(StatusValue(r.out, "session"), "none");
  EXPECT_EQ(ReadTicks(trace).ticks, 1000u);
}

TEST(ControlTest, SecondSessionUsesTheOpenChannel) {
  Target t(CONTROL_TARGET);
  ASSERT_TRUE(t.ok());
  TempDir dir;
  const std::string pid = std::to_string(t.pid());
  ASSERT_EQ(Cli({"start", pid, "-e", "ctl:*", "-o", dir.path() + "/a"}).status, 0);
  EXPECT_EQ(t.Command("emit 5"), "done");
  ASSERT_EQ(Cli({"stop", pid}).status, 0);
  const RunResult ps = Cli({"ps"});
  EXPECT_NE(clitest::LineContaining(ps.out, " " + pid + " ").find("open"), std::string::npos) << ps.out;
  const RunResult ps_json = Cli({"ps", "--format=json"});
  EXPECT_NE(ps_json.out.find("{\"pid\":" + pid + ",\"user\":"), std::string::npos) << ps_json.out;
  EXPECT_NE(ps_json.out.find("\"control\":\"open\""), std::string::npos) << ps_json.out;
  const RunResult ps_csv = Cli({"ps", "--format", "csv"});
  EXPECT_EQ(ps_csv.out.rfind("pid,user,control,command\r\n", 0), 0u) << ps_csv.out;
  EXPECT_NE(clitest::LineContaining(ps_csv.out, pid + ",").find(",open,"), std::string::npos)
      << ps_csv.out;
  EXPECT_EQ(t.Command("emit 7"), "done");  // not traced
  ASSERT_EQ(Cli({"start", pid, "-e", "ctl:tick", "-o", dir.path() + "/b"}).status, 0);
  RunResult again = Cli({"start", pid, "-e", "ctl:tick", "-o", dir.path() + "/c"});
  EXPECT_EQ(again.status, 1);
  EXPECT_NE(again.err.find("already active"), std::string::npos) << again.err;
  EXPECT_EQ(t.Command("emit 3"), "done");
  ASSERT_EQ(Cli({"stop", pid}).status, 0);
  const TickSummary a = ReadTicks(dir.path() + "/a"), b = ReadTicks(dir.path() + "/b");
  EXPECT_EQ(a.ticks, 5u);
  EXPECT_EQ(b.ticks, 3u);
  EXPECT_EQ(b.first, 12u);
  EXPECT_FALSE(clitest::PathExists(dir.path() + "/c"));
}

TEST(ControlTest, FlightSnapshotWritesTheLatestEvents) {
  Target t(CONTROL_TARGET);
  ASSERT_TRUE(t.ok());
  TempDir dir;
  const std::string pid = std::to_string(t.pid());
  ASSERT_EQ(Cli({"start", pid, "-e", "ctl:tick", "-o", dir.path() + "/t", "--mode", "flight",
                 "--buffer-size", "16k", "--buffer-budget", "1M"}).status, 0);
  EXPECT_EQ(t.Command("emit 100000"), "done");
  RunResult r = Cli({"snapshot", pid, "-o", dir.path() + "/copy"});
  ASSERT_EQ(r.status, 0) << r.err;
  const TickSummary snap = ReadTicks(dir.path() + "/copy");
  EXPECT_EQ(snap.error, "");
  EXPECT_GT(snap.ticks, 0u);
  EXPECT_LT(snap.ticks, 100000u);  // the ring kept only the latest
  EXPECT_EQ(snap.last, 99999u);    // up to the last committed event
  EXPECT_TRUE(snap.consecutive);
  ExpectPrivateTrace(dir.path() + "/copy", ::geteuid());
  r = Cli({"status", pid});
  EXPECT_EQ(StatusValue(r.out, "mode"), "flight");
  EXPECT_NE(StatusValue(r.out, "events-overwritten"), "0");
  ASSERT_EQ(Cli({"stop", pid}).status, 0);
}

TEST(ControlTest, SnapshotOnEvent) {
  Target t(CONTROL_TARGET);
  ASSERT_TRUE(t.ok());
  TempDir dir;
  const std::string pid = std::to_string(t.pid());
  const std::string trace = dir.path() + "/t";
  RunResult r = Cli({"start", pid, "-e", "ctl:tick", "-o", trace, "--mode", "flight",
                     "--snapshot-on", "ctl:other", "--snapshot-interval", "3600000"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(t.Command("emit 300"), "done");  // ends with ctl:other, the trigger
  // Written without any snapshot request, as a trace of its own: trace/snapshots/<time>-1.
  std::vector<std::string> snapshots;
  for (int i = 0; i < 6000 && snapshots.empty(); ++i) {
    for (const std::string& name : clitest::ListDir(trace + "/snapshots")) {
      if (name[0] != '.') snapshots.push_back(trace + "/snapshots/" + name);
    }
    if (snapshots.empty()) ::usleep(10000);
  }
  ASSERT_EQ(snapshots.size(), 1u);
  const TickSummary ticks = ReadTicks(snapshots[0]);
  EXPECT_EQ(ticks.ticks, 300u);
  EXPECT_TRUE(ticks.consecutive);
  r = Cli({"status", pid});
  EXPECT_EQ(StatusValue(r.out, "snapshots-triggered"), "1") << r.out;
  EXPECT_EQ(Cli({"start", pid, "--snapshot-on", "x:y", "-o", dir.path() + "/u"}).status, 1);
  ASSERT_EQ(Cli({"stop", pid}).status, 0);
  // A duration applies to spans only: refused by the process, which keeps running untraced.
  RunResult span = Cli({"start", pid, "-e", "ctl:tick", "-o", dir.path() + "/w", "--mode", "flight",
                        "--snapshot-on", "ctl:other>1ms"});
  EXPECT_EQ(span.status, 1);
  EXPECT_NE(span.err.find("'ctl:other' names no span"), std::string::npos) << span.err;
  // A pattern that does not parse never reaches the process.
  RunResult typo = Cli({"start", pid, "-o", dir.path() + "/x", "--snapshot-on", "ctl:other>1"});
  EXPECT_EQ(typo.status, 2);
  EXPECT_NE(typo.err.find("'1' is not a duration"), std::string::npos) << typo.err;
  RunResult bad = Cli({"start", pid, "-o", dir.path() + "/v", "--snapshot-on", "ctl:other"});
  EXPECT_EQ(bad.status, 1);  // stream mode
  EXPECT_NE(bad.err.find("flight"), std::string::npos) << bad.err;
}

TEST(ControlTest, FieldFilter) {
  Target t(CONTROL_TARGET);
  ASSERT_TRUE(t.ok());
  TempDir dir;
  const std::string pid = std::to_string(t.pid());
  RunResult r = Cli({"start", pid, "-e", "ctl:*", "-o", dir.path() + "/bad", "--filter", "seq >= && seq"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("column 8: expected a number, a string, a field name, $name, $tid, "
                       "$thread or '(' instead of '&'\n  seq >= && seq\n         ^"),
            std::string::npos)
      << r.err;
  r = Cli({"start", pid, "-e", "ctl:*", "-o", dir.path() + "/t", "--filter", "seq >= 10 && seq < 20"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(t.Command("emit 100"), "done");
  r = Cli({"status", pid});
  EXPECT_EQ(StatusValue(r.out, "events-filtered-out"), "91");  // 90 ticks and ctl:other
  ASSERT_EQ(Cli({"stop", pid}).status, 0);
  const TickSummary ticks = ReadTicks(dir.path() + "/t");
  EXPECT_EQ(ticks.ticks, 10u);
  EXPECT_EQ(ticks.first, 10u);
  EXPECT_EQ(ticks.last, 19u);
}

TEST(ControlTest, StaticRuntime) {
  Target t(CONTROL_TARGET_STATIC);
  ASSERT_TRUE(t.ok());
  TempDir dir;
  const std::string pid = std::to_string(t.pid());
  RunResult r = Cli({"start", pid, "-e", "ctl:tick", "-o", dir.path() + "/t"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(t.Command("emit 20"), "done");
  ASSERT_EQ(Cli({"stop", pid}).status, 0);
  EXPECT_EQ(ReadTicks(dir.path() + "/t").ticks, 20u);
}

TEST(ControlTest, PsListsOnlyProcessesWithTheRuntime) {
  Target t(CONTROL_TARGET);
  ASSERT_TRUE(t.ok());
  const RunResult r = Cli({"ps"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string line = clitest::LineContaining(r.out, " " + std::to_string(t.pid()) + " ");
  EXPECT_NE(line.find("control_target"), std::string::npos) << r.out;
  EXPECT_NE(line.find(" - "), std::string::npos) << line;  // never attached: no channel
  TempDir dir;
  const pid_t sleeper = clitest::Spawn({"sleep", "60"}, dir.path() + "/out", dir.path() + "/err");
  ASSERT_GT(sleeper, 0);
  WaitForExec(sleeper, "sleep");
  const RunResult again = Cli({"ps"});
  EXPECT_EQ(clitest::LineContaining(again.out, " " + std::to_string(sleeper) + " "), "");
  ::kill(sleeper, SIGKILL);
  clitest::Wait(sleeper, 10);
}

TEST(ControlTest, ProcessWithoutTheRuntimeIsRefused) {
  TempDir dir;
  const pid_t sleeper = clitest::Spawn({"sleep", "60"}, dir.path() + "/out", dir.path() + "/err");
  ASSERT_GT(sleeper, 0);
  WaitForExec(sleeper, "sleep");
  const RunResult r = Cli({"start", std::to_string(sleeper), "-e", "*", "-o", dir.path() + "/t"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("does not have the hushtrace runtime loaded"), std::string::npos) << r.err;
  EXPECT_EQ(::kill(sleeper, 0), 0);
  ::kill(sleeper, SIGKILL);
  clitest::Wait(sleeper, 10);
}

TEST(ControlTest, BadArguments) {
  EXPECT_EQ(Cli({"start"}).status, 2);
  EXPECT_EQ(Cli({"start", "12x"}).status, 2);
  EXPECT_EQ(Cli({"start", "1", "--mode", "fast"}).status, 2);
  EXPECT_EQ(Cli({"stop", "1", "extra"}).status, 2);
  EXPECT_EQ(Cli({"status", "999999999"}).status, 1);
}

// The traced program of the tests below runs as user 65534.
const std::vector<std::string> kAsOwner = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};

// *parent = DIR/owner, a 0700 directory of user 65534 (DIR made 0755 so that 65534 reaches it):
// where that program's trace goes. Call with ASSERT_NO_FATAL_FAILURE.
void MakeOwnerDirectory(const TempDir& dir, std::string* parent) {
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  *parent = dir.path() + "/owner";
  ASSERT_EQ(::mkdir(parent->c_str(), 0700), 0);
  ASSERT_EQ(::chown(parent->c_str(), 65534, 65534), 0);
}

// The traced program runs as 65534; root may control it, user 65533 may not, before or after the
// control channel exists, and the trace belongs to 65534 with private modes.
TEST(ControlTest, AnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run processes as other users";
  const std::vector<std::string>& as_owner = kAsOwner;
  const std::vector<std::string> as_other = {"setpriv", "--reuid=65533", "--regid=65533", "--clear-groups"};
  if (Cli({"--version"}, as_other).status != 0) {
    GTEST_SKIP() << "user 65533 cannot run the CLI from the build tree (directory permissions)";
  }
  Target t(CONTROL_TARGET, as_owner);
  if (!t.ok()) GTEST_SKIP() << "user 65534 cannot run control_target from the build tree";
  TempDir dir;
  std::string parent;
  ASSERT_NO_FATAL_FAILURE(MakeOwnerDirectory(dir, &parent));
  const std::string pid = std::to_string(t.pid());

  // Before the channel exists: ptrace is refused.
  RunResult r = Cli({"start", pid, "-e", "*", "-o", dir.path() + "/x"}, as_other);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("ermission denied"), std::string::npos) << r.err;

  r = Cli({"start", pid, "-e", "ctl:tick", "-o", parent + "/trace"});  // root
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(t.Command("emit 50"), "done");
  uid_t owner = 0;
  EXPECT_EQ(ModeOf(control::SocketDirectory(65534), &owner), 0700u);
  EXPECT_EQ(owner, 65534u);
  EXPECT_EQ(ModeOf(control::SocketPath(65534, t.pid())) & 0777, 0600u);

  // After: the socket is out of reach, and nothing changed.
  for (const char* verb : {"stop", "snapshot", "status"}) {
    r = Cli({verb, pid}, as_other);
    EXPECT_EQ(r.status, 1) << verb;
    EXPECT_NE(r.err.find("ermission denied"), std::string::npos) << verb << ": " << r.err;
  }
  r = Cli({"status", pid});
  EXPECT_EQ(StatusValue(r.out, "session"), "active") << r.err;
  ASSERT_EQ(Cli({"stop", pid}).status, 0);
  EXPECT_EQ(ReadTicks(parent + "/trace").ticks, 50u);
  ExpectPrivateTrace(parent + "/trace", 65534);
}

// /dev/shm/hushtrace-<uid> taken by another user (here root, for the target's 65534): the server
// refuses that directory and opens its socket under /tmp/hushtrace-<uid> instead, where the CLI
// finds it. protocol.h, SocketPath.
TEST(ControlTest, SocketFallsBackToTmpWhenItsShmDirectoryIsAnotherUsers) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run processes as other users";
  const std::string taken = control::SocketDirectory(65534, 0);
  // Removed first (left by an earlier test of this binary: user 65534's), and however the test
  // ends: AnotherUserIsRefused expects user 65534's socket there.
  const hush::testsupport::ScopedRemoval remove_taken({taken});
  ASSERT_EQ(::mkdir(taken.c_str(), 0700), 0) << taken;  // root's: not the target's
  Target t(CONTROL_TARGET, kAsOwner);
  if (!t.ok()) GTEST_SKIP() << "user 65534 cannot run control_target from the build tree";
  TempDir dir;
  std::string parent;
  ASSERT_NO_FATAL_FAILURE(MakeOwnerDirectory(dir, &parent));
  const std::string pid = std::to_string(t.pid());
  const RunResult r = Cli({"start", pid, "-e", "ctl:tick", "-o", parent + "/trace"});
  EXPECT_EQ(r.status, 0) << r.err;
  uid_t owner = 0;
  EXPECT_EQ(ModeOf(control::SocketPath(65534, t.pid(), 1), &owner) & 0777, 0600u);
  EXPECT_EQ(owner, 65534u);
  EXPECT_FALSE(clitest::PathExists(control::SocketPath(65534, t.pid(), 0)));
  EXPECT_EQ(t.Command("emit 20"), "done");
  EXPECT_EQ(Cli({"stop", pid}).status, 0);
  EXPECT_EQ(ReadTicks(parent + "/trace").ticks, 20u);
}

// A socket connected to the control socket of `pid`; -1 if the connection failed.
int ConnectRaw(pid_t pid) {
  const std::string path = control::SocketPath(::geteuid(), pid);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string RawRequest(pid_t pid, const std::string& bytes) {
  const int fd = ConnectRaw(pid);
  if (fd < 0) return "connect failed";
  ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::string reply(control::kMaxMessage, '\0');
  const ssize_t n = ::recv(fd, reply.data(), reply.size(), 0);
  ::close(fd);
  reply.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return reply;
}

const std::vector<std::string>& Garbage() {
  static const std::vector<std::string> g = {
      std::string("\x00\x01\x02\xff", 4),
      "hello\n",
      "hushtrace-control 1 start",  // no newline
      "hushtrace-control 1 launch\n",
      "hushtrace-control 2 status\n",
      "hushtrace-control 1 start\nevent *\n",  // no output
      "hushtrace-control 1 start\nevent *\noutput relative/dir\n",
      "hushtrace-control 1 start\nevent *\noutput /tmp/x\nmode warp\n",
      "hushtrace-control 1 start\nevent *\noutput /tmp/x\nbuffer-size lots\n",
      "hushtrace-control 1 start\nevent *\noutput /tmp/x\n\n",
      "hushtrace-control 1 start\nEVENT *\noutput /tmp/x\n",
      "hushtrace-control 1 start\nevent\toops\n",
      "hushtrace-control 1 stop\nforce yes\n",
      "hushtrace-control 1 status\nevent \x7f\n",
      std::string(control::kMaxMessage + 100, 'a'),
  };
  return g;
}

TEST(ControlTest, MalformedRequestsGetAnErrorAndChangeNothing) {
  // HUSHTRACE_CONTROL=1: the channel is open from the start (no ptrace).
  Target t(CONTROL_TARGET, {}, {"HUSHTRACE_CONTROL=1"});
  ASSERT_TRUE(t.ok());
  const std::string pid = std::to_string(t.pid());
  EXPECT_NE(clitest::LineContaining(Cli({"ps"}).out, " " + pid + " ").find("open"), std::string::npos);
  for (const std::string& g : Garbage()) {
    EXPECT_EQ(RawRequest(t.pid(), g).rfind("error ", 0), 0u) << g.substr(0, 80);
  }
  EXPECT_EQ(RawRequest(t.pid(), "hushtrace-control 1 stop\n").rfind("error no active session\n", 0), 0u);
  // A client that connects and sends nothing does not wedge the server.
  const int idle = ConnectRaw(t.pid());
  ASSERT_GE(idle, 0);
  RunResult r = Cli({"status", pid});
  ::close(idle);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(StatusValue(r.out, "session"), "none");
  EXPECT_FALSE(clitest::PathExists("/tmp/x"));
  // Still serving valid requests.
  TempDir dir;
  ASSERT_EQ(Cli({"start", pid, "-e", "ctl:tick", "-o", dir.path() + "/t"}).status, 0);
  EXPECT_EQ(t.Command("emit 4"), "done");
  ASSERT_EQ(Cli({"stop", pid}).status, 0);
  EXPECT_EQ(ReadTicks(dir.path() + "/t").ticks, 4u);
}

TEST(ControlProtocolTest, HandleRequestRefusesGarbageInProcess) {
  for (const std::string& g : Garbage()) {
    EXPECT_EQ(control::HandleRequest(g).rfind("error ", 0), 0u) << g.substr(0, 80);
    EXPECT_EQ(session::Core::Active(), nullptr);
  }
  EXPECT_EQ(control::HandleRequest("hushtrace-control 1 status\n"), "ok\nsession none\n");
}

TEST(ControlProtocolTest, DecodeReportsTheLine) {
  std::string first, error;
  control::Fields fields;
  EXPECT_FALSE(control::DecodeMessage("a\nkey value\nbad\n", &first, &fields, &error));
  EXPECT_EQ(error, "line 3: expected '<key> <value>'");
  ASSERT_TRUE(control::DecodeMessage("a b\nkey some value\n", &first, &fields, &error));
  EXPECT_EQ(first, "a b");
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields[0].second, "some value");
}

}  // namespace
}  // namespace hush::controltest

namespace hush::controltest {
namespace {

// Issue 17: a `start` whose filter is 20,000 parentheses (or 60,000 '!') overflowed the
// hush-control thread's stack and took the program down. Every limit of a request (filter size
// and nesting, pattern length and count, the message size) is answered with an error and the
// program keeps serving; at the limits the session starts.
// A buffer budget (record --buffer-budget, docs/architecture.md) that is not a size, or cannot hold
// one ring, is refused before anything is created.
// Issue 15: as `record` warns before running a program, `start` says when no event of the process
// matches the patterns; the session still starts (a module loaded later may bring some).
TEST(ControlTest, PatternsMatchingNoEventGetAWarning) {
  Target t(CONTROL_TARGET);
  ASSERT_TRUE(t.ok());
  TempDir dir;
  const std::string pid = std::to_string(t.pid());
  const RunResult r = Cli({"start", pid, "-e", "nosuch:*", "-o", dir.path() + "/t"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("hushtrace start: warning: no event of this process matches the patterns"), std::string::npos)
      << r.err;
  EXPECT_EQ(Cli({"stop", pid}).status, 0);
}

TEST(ControlTest, BadBufferBudgetIsRefused) {
  Target t(CONTROL_TARGET, {}, {"HUSHTRACE_CONTROL=1"});
  ASSERT_TRUE(t.ok());
  TempDir dir;
  const std::string start = "hushtrace-control 1 start\noutput " + dir.path() + "/t\nevent ctl:*\n";
  std::string got = RawRequest(t.pid(), start + "buffer-budget lots\n");
  EXPECT_EQ(got.substr(0, got.find('\n') + 1), "error bad buffer-budget 'lots'\n");
  got = RawRequest(t.pid(), start + "buffer-budget 1M\n");
  EXPECT_EQ(got.substr(0, got.find('\n') + 1),
            "error buffer budget 1048576 bytes cannot hold one ring of buffer size 1048576 (1052672 bytes "
            "with its header)\n");
  EXPECT_EQ(t.Command("emit 1"), "done");  // alive and untraced
  EXPECT_FALSE(clitest::PathExists(dir.path() + "/t"));
}

TEST(ControlTest, HostileStartRequestsAreRefusedAndTheProgramLives) {
  Target t(CONTROL_TARGET, {}, {"HUSHTRACE_CONTROL=1"});
  ASSERT_TRUE(t.ok());
  TempDir dir;
  const std::string start = "hushtrace-control 1 start\noutput " + dir.path() + "/t\n";
  const auto nested = [](std::size_t n, const std::string& inner) {
    return std::string(n, '(') + inner + std::string(n, ')');
  };
  std::string many_patterns;
  for (int i = 0; i < 1025; ++i) many_patterns += "event a\n";
  const std::pair<std::string, std::string> refused[] = {
      {"event ctl:*\nfilter " + nested(20000, "seq") + "\n",
       "error bad filter, column 4097: filter longer than 4096 bytes\n"},
      {"event ctl:*\nfilter " + std::string(60000, '!') + "seq\n",
       "error bad filter, column 4097: filter longer than 4096 bytes\n"},
      {"event ctl:*\nfilter " + nested(65, "seq") + "\n",
       "error bad filter, column 65: expression nested too deeply (at most 64 levels of '(' and "
       "'!')\n"},
      {"event ctl:" + std::string(253, '*') + "\n",
       "error event pattern 1 is 257 bytes long (at most 256)\n"},
      {many_patterns, "error 1025 event patterns (at most 1024)\n"},
      {"event ctl:*\nmode flight\nsnapshot-on " + std::string(257, '?') + "\n",
       "error snapshot-on pattern 1 is 257 bytes long (at most 256)\n"},
      {"event ctl:*\nbuffer-size 16G\n",
       "error buffer size 17179869184 is above the largest ring, 256M (256 sub-buffers of 1M)\n"},

  };
  for (const auto& [fields, reply] : refused) {
    const std::string got = RawRequest(t.pid(), start + fields);
    EXPECT_EQ(got.substr(0, got.find('\n') + 1), reply) << fields.substr(0, 80);
    EXPECT_EQ(t.Command("emit 1"), "done");  // alive and untraced
  }
  // A request one byte over the message limit, then one at it (padded with a long filter of
  // spaces beyond the filter limit: refused by the filter's, not the message's, limit).
  std::string at_limit = start + "event ctl:*\nfilter seq";
  at_limit += std::string(control::kMaxMessage - at_limit.size() - 1, ' ') + "\n";
  ASSERT_EQ(at_limit.size(), control::kMaxMessage);
  EXPECT_EQ(
      RawRequest(t.pid(), at_limit).rfind("error bad filter, column 4097: filter longer than", 0),
      0u);
  EXPECT_EQ(RawRequest(t.pid(), at_limit + "x").rfind("error request larger than 65536 bytes", 0),
            0u);
  // At the limits: 64 levels in 4096 bytes, a 256-byte pattern.
  std::string filter = nested(64, "seq >= 8");
  filter += std::string(4096 - filter.size(), ' ');
  const std::string ok = RawRequest(
      t.pid(), start + "event ctl:" + std::string(252, '*') + "\nfilter " + filter + "\n");
  ASSERT_EQ(ok.rfind("ok\n", 0), 0u) << ok;
  EXPECT_EQ(t.Command("emit 5"), "done");
  ASSERT_EQ(Cli({"stop", std::to_string(t.pid())}).status, 0);
  const TickSummary ticks = ReadTicks(dir.path() + "/t");
  // One tick per refused request came before the start (seq 0..), then 5: those from 8 on pass.
  EXPECT_EQ(ticks.ticks, std::size(refused) + 5 - 8);
  EXPECT_EQ(ticks.first, 8u);
}

}  // namespace
}  // namespace hush::controltest

namespace hush::controltest {
namespace {

// CLOCK_MONOTONIC milliseconds, the clock of deadline-ms (steady_clock is CLOCK_MONOTONIC).
std::uint64_t NowMs() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// Issue 17: `kill -STOP P; hushtrace stop P` waited 60 s, said "no reply", and the stop happened
// after SIGCONT anyway. Now the CLI refuses a stopped process at once, a request read after its
// deadline is refused unread, and nothing happens late.
TEST(ControlTest, StoppedProcessAnswersAtOnceAndNothingHappensLate) {
  Target t(CONTROL_TARGET, {}, {"HUSHTRACE_CONTROL=1"});
  ASSERT_TRUE(t.ok());
  TempDir dir;
  const std::string pid = std::to_string(t.pid());
  ASSERT_EQ(Cli({"start", pid, "-e", "ctl:tick", "-o", dir.path() + "/t"}).status, 0);
  ASSERT_EQ(::kill(t.pid(), SIGSTOP), 0);
  for (int i = 0; i < 1000; ++i) {  // until the kernel shows it stopped
    if (clitest::ReadFile("/proc/" + pid + "/stat").find(") T ") != std::string::npos) break;
    ::usleep(1000);
  }
  const auto before = NowMs();
  const RunResult r = Cli({"stop", pid});
  EXPECT_LT(NowMs() - before, 10000u);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("process " + pid +
                       " is stopped (by a signal: SIGCONT resumes it): it cannot act on "
                       "the request; nothing was sent"),
            std::string::npos)
      << r.err;
  // A request already queued when the process stopped, whose deadline passes meanwhile.
  const int c = ConnectRaw(t.pid());
  ASSERT_GE(c, 0);
  const std::string expiring =
      "hushtrace-control 1 stop\ndeadline-ms " + std::to_string(NowMs() + 100) + "\n";
  ASSERT_EQ(::send(c, expiring.data(), expiring.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(expiring.size()));
  ::usleep(300 * 1000);
  ASSERT_EQ(::kill(t.pid(), SIGCONT), 0);
  std::string reply(4096, '\0');
  const ssize_t n = ::recv(c, reply.data(), reply.size(), 0);
  ::close(c);
  reply.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  EXPECT_EQ(reply.rfind("error stop: the request expired ", 0), 0u) << reply;
  EXPECT_NE(reply.find("nothing was done"), std::string::npos) << reply;
  // Still running: the session was not stopped, late or otherwise.
  EXPECT_EQ(t.Command("emit 3"), "done");
  RunResult status = Cli({"status", pid});
  EXPECT_EQ(StatusValue(status.out, "session"), "active") << status.out;
  // A deadline still ahead is honoured.
  EXPECT_EQ(RawRequest(t.pid(), "hushtrace-control 1 status\ndeadline-ms " +
                                    std::to_string(NowMs() + 60000) + "\n")
                .rfind("ok\n", 0),
            0u);
  EXPECT_EQ(RawRequest(t.pid(), "hushtrace-control 1 status\ndeadline-ms soon\n")
                .rfind("error malformed request: bad deadline-ms 'soon'", 0),
            0u);
  ASSERT_EQ(Cli({"stop", pid}).status, 0);
  EXPECT_EQ(ReadTicks(dir.path() + "/t").ticks, 3u);
}

// Issue 17: a `start` killed while waiting left a session running that the next `start`
// tripped over. A request whose client is gone when the process reads it is dropped.
TEST(ControlTest, StartWhoseClientIsGoneLeavesNoSession) {
  Target t(CONTROL_TARGET, {}, {"HUSHTRACE_CONTROL=1"});
  ASSERT_TRUE(t.ok());
  TempDir dir;
  const std::string pid = std::to_string(t.pid());
  ASSERT_EQ(::kill(t.pid(), SIGSTOP), 0);  // so that the client is gone before the read
  const int c = ConnectRaw(t.pid());
  ASSERT_GE(c, 0);
  const std::string start =
      "hushtrace-control 1 start\nevent ctl:*\noutput " + dir.path() + "/gone\n";
  ASSERT_EQ(::send(c, start.data(), start.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(start.size()));
  ::close(c);  // the client dies while the process is stopped
  ASSERT_EQ(::kill(t.pid(), SIGCONT), 0);
  EXPECT_EQ(t.Command("emit 1"), "done");
  RunResult status = Cli({"status", pid});
  EXPECT_EQ(StatusValue(status.out, "session"), "none") << status.out;
  EXPECT_FALSE(clitest::PathExists(dir.path() + "/gone"));
  // The next start works.
  ASSERT_EQ(Cli({"start", pid, "-e", "ctl:tick", "-o", dir.path() + "/t"}).status, 0);
  EXPECT_EQ(t.Command("emit 2"), "done");
  ASSERT_EQ(Cli({"stop", pid}).status, 0);
  EXPECT_EQ(ReadTicks(dir.path() + "/t").ticks, 2u);
}

}  // namespace
}  // namespace hush::controltest
