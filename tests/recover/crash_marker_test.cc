// The crash marker (src/session/crash_handler.h): a program dying of SIGSEGV or SIGABRT while a
// session runs leaves DIR/.crashed, its own handler is still called, it still dies of the
// same signal, and `hushtrace recover` / reading commands say which signal and thread.
#include <signal.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <tuple>

#include "recover/recover_test_util.h"

namespace {

using rectest::Result;

std::string MarkerVictim() { return CRASH_MARKER_VICTIM; }

// Sanitizer builds: the program's (or the default) action must see the signal, not the
// sanitizer's own handler.
std::vector<std::string> VictimEnv() {
  return rectest::Env({"ASAN_OPTIONS=handle_segv=0:handle_abort=0:detect_leaks=0",
                       "TSAN_OPTIONS=handle_segv=0:handle_abort=0:report_signal_unsafe=0"});
}

// The value after "KEY " on a line of `text` ("" if absent).
std::string LineValue(const std::string& text, const std::string& key) {
  const std::size_t at = text.find(key);
  if (at == std::string::npos) return "";
  const std::size_t end = text.find('\n', at);
  return text.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
}

class CrashMarker : public testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(CrashMarker, OwnHandlerRunsDeathIsTheProgramsAndTheMarkerIsReported) {
  const auto& [handler, crash] = GetParam();
  const int sig = crash == "abort" ? SIGABRT : SIGSEGV;
  const char* sig_name = crash == "abort" ? "SIGABRT" : "SIGSEGV";
  const std::string dir = rectest::NewTraceDir("marker", rectest::Where::kMemory);  // copied whole below
  const Result r = rectest::Run({MarkerVictim(), dir, handler, crash}, VictimEnv());

  // The process died of the signal, as it would have without hushtrace.
  ASSERT_FALSE(r.exited) << r.Describe();
  EXPECT_EQ(r.signal, sig) << r.Describe();
  const std::string at_start = handler == "none" ? "default" : "own";
  EXPECT_EQ(LineValue(r.out, "at start: "), at_start) << r.Describe();
  // Installed by the session start, chaining to what was there.
  EXPECT_EQ(LineValue(r.out, "in session: "), "other") << r.Describe();
  const bool own_called = r.out.find("own handler: signal " + std::to_string(sig)) != std::string::npos;
  EXPECT_EQ(own_called, handler != "none") << r.Describe();

  const std::string tid = LineValue(r.out, "crash tid ");
  ASSERT_FALSE(tid.empty()) << r.Describe();
  const std::string marker = rectest::ReadFile(dir + "/.crashed");
  EXPECT_EQ(marker.rfind("signal " + std::to_string(sig) + " tid " + tid + " pid ", 0), 0u) << marker;

  // `hushtrace dump` on a copy: the reading command recovers and reports the crash on stderr.
  const std::string copy = rectest::NewTraceDir("marker_copy", rectest::Where::kMemory);
  ASSERT_TRUE(rectest::CopyTree(dir, copy));
  const Result dump = rectest::Run({rectest::CliPath(), "dump", copy}, rectest::Env());
  EXPECT_TRUE(dump.exited && dump.code == 0) << dump.Describe();
  const std::string said = std::string("the program died of ") + sig_name + " in thread " + tid;
  EXPECT_NE(dump.err.find(said), std::string::npos) << dump.Describe();
  EXPECT_TRUE(rectest::RingFiles(copy).empty()) << "the recovered copy keeps its rings";
  EXPECT_FALSE(rectest::Exists(copy + "/.crashed")) << "the recovered copy keeps its marker";

  const Result rec = rectest::Recover(dir);
  EXPECT_TRUE(rec.exited && rec.code == 0) << rec.Describe();
  EXPECT_NE(rec.out.find(said), std::string::npos) << rec.Describe();
  EXPECT_TRUE(rectest::RingFiles(dir).empty()) << "the rings were kept";
  EXPECT_FALSE(rectest::Exists(dir + "/.crashed")) << "the marker was kept";

  if (rectest::HaveBabeltrace()) {
    const rectest::BtResult bt = rectest::ReadWithBabeltrace(dir);
    EXPECT_TRUE(bt.ok()) << bt.run.Describe();
    // Every event was committed before the crash (the emitting thread finished them).
    EXPECT_EQ(bt.other_events, 500u) << bt.run.Describe();
  }
  if (!testing::Test::HasFailure()) {
    rectest::RemoveTree(dir);
    rectest::RemoveTree(copy);
  }
}

INSTANTIATE_TEST_SUITE_P(Handlers, CrashMarker,
                         testing::Values(std::make_tuple("siginfo", "segv"), std::make_tuple("plain", "segv"),
                                         std::make_tuple("oneshot", "segv"), std::make_tuple("none", "segv"),
                                         std::make_tuple("siginfo", "abort"), std::make_tuple("none", "abort")),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

// Stop() puts the program's action back; a crash after it leaves no marker, and recovery has
// nothing to do (the trace was closed).
TEST(CrashMarkerStop, StopRestoresTheProgramsActionAndACrashAfterItIsNotMarked) {
  for (const std::string handler : {"siginfo", "none"}) {
    const std::string dir = rectest::NewTraceDir("marker_stop");
    const Result r = rectest::Run({MarkerVictim(), dir, handler, "stop"}, VictimEnv());
    EXPECT_EQ(r.signal, SIGSEGV) << r.Describe();
    const std::string expected = handler == "none" ? "default" : "own";
    EXPECT_EQ(LineValue(r.out, "at start: "), expected) << r.Describe();
    EXPECT_EQ(LineValue(r.out, "in session: "), "other") << r.Describe();
    EXPECT_EQ(LineValue(r.out, "after stop: "), expected) << r.Describe();
    EXPECT_TRUE(rectest::RingFiles(dir).empty()) << dir;
    EXPECT_FALSE(rectest::Exists(dir + "/.crashed")) << dir;
    const Result rec = rectest::Recover(dir);
    EXPECT_TRUE(rec.exited && rec.code == 0) << rec.Describe();
    EXPECT_EQ(rec.out.find("died of"), std::string::npos) << rec.Describe();
    if (!testing::Test::HasFailure()) rectest::RemoveTree(dir);
  }
}

// SIGKILL runs no handler: no marker, recovery works all the same and says nothing of a signal.
TEST(CrashMarkerStop, SigkillLeavesNoMarker) {
  rectest::VictimSpec spec;
  spec.crash = "sigkill";
  const std::string dir = rectest::NewTraceDir("marker_kill");
  const Result r = rectest::RunVictim(spec, dir);
  EXPECT_EQ(r.signal, SIGKILL) << r.Describe();
  EXPECT_FALSE(rectest::Exists(dir + "/.crashed"));
  const Result rec = rectest::Recover(dir);
  EXPECT_TRUE(rec.exited && rec.code == 0) << rec.Describe();
  EXPECT_EQ(rec.out.find("died of"), std::string::npos) << rec.Describe();
  if (!testing::Test::HasFailure()) rectest::RemoveTree(dir);
}

}  // namespace
