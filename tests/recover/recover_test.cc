// `hushtrace recover` end to end: a traced program (victim_main.cc) dies without stopping its
// session, recover makes the trace readable, babeltrace2 reads it, and every event is either in
// the trace exactly once and in order, or counted lost. See docs/recovery.md.
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <hushtrace/hushtrace.h>
#include <hushtrace/session.h>

#include "recover/recover_test_util.h"
#include "format/packet.h"
#include "format/ring_location.h"
#include "format/trace_uuid.h"
#include "recover/recover.h"
#include "ring/ring_layout.h"

// The same tracepoint as the victim's, emitted by this process in the WriterWindows test.
HUSH_TRACEPOINT(recover, seq, (std::uint32_t, thread), (std::uint64_t, seq), (std::string_view, pad))

namespace {

using hush::recover::HasLeftovers;
using hush::recover::TraceBeingWritten;
using rectest::BtResult;
using rectest::Result;
using rectest::VictimSpec;

#define SKIP_WITHOUT_BABELTRACE()                                        \
  do {                                                                   \
    if (!rectest::HaveBabeltrace()) GTEST_SKIP() << "babeltrace2 is not installed"; \
  } while (0)

// Keeps a trace directory when the test failed, removes it otherwise.
class TraceDir {
 public:
  explicit TraceDir(const std::string& tag, rectest::Where where = rectest::Where::kTemp)
      : path_(rectest::NewTraceDir(tag, where)) {}
  ~TraceDir() {
    if (testing::Test::HasFailure()) {
      std::fprintf(stderr, "kept trace directory %s\n", path_.c_str());
    } else {
      rectest::RemoveTree(path_);
    }
  }
  const std::string& path() const { return path_; }
  std::string ring(unsigned n) const { return rectest::RingPath(path_, n); }

 private:
  std::string path_;
};

// What the death of the victim must look like for each crash.
void ExpectDeath(const std::string& crash, const Result& r) {
  if (crash == "sigkill") {
    EXPECT_EQ(r.signal, SIGKILL) << r.Describe();
  } else if (crash == "segv" || crash == "segv-in-event") {
    EXPECT_EQ(r.signal, SIGSEGV) << r.Describe();
  } else if (crash == "abort") {
    EXPECT_EQ(r.signal, SIGABRT) << r.Describe();
  } else if (crash == "exit") {
    EXPECT_TRUE(r.exited && r.code == 3) << r.Describe();
  }
}

// Runs recover and babeltrace2 on a crashed trace and checks the events of `threads` threads that
// emitted `per_thread` events each (0: unknown). Returns the number of events missing.
struct Verified {
  std::uint64_t events = 0;
  std::uint64_t missing = 0;
  std::uint64_t recorded_lost = 0;
  bool suffix = false;
  Result recover;
};
Verified RecoverAndVerify(const std::string& dir, unsigned threads, std::uint64_t per_thread) {
  Verified v;
  EXPECT_FALSE(rectest::RingFiles(dir).empty()) << "the crash left no ring file";
  v.recover = rectest::Recover(dir);
  EXPECT_TRUE(v.recover.exited && v.recover.code == 0) << v.recover.Describe();
  EXPECT_NE(v.recover.out.find("recovered"), std::string::npos) << v.recover.Describe();
  EXPECT_TRUE(rectest::RingFiles(dir).empty()) << v.recover.Describe();
  const rectest::DiskCounters disk = rectest::ReadDiskCounters(dir);
  EXPECT_TRUE(disk.ok) << disk.error;
  v.recorded_lost = disk.lost;
  const BtResult bt = rectest::ReadWithBabeltrace(dir);
  EXPECT_TRUE(bt.ok()) << bt.run.Describe();
  v.events = bt.events.size();
  const std::string why = rectest::CheckSequences(bt.events, threads, per_thread, &v.missing, &v.suffix);
  EXPECT_EQ(why, "") << v.recover.Describe();
  // Every event below a thread's last one is in the trace or counted lost.
  EXPECT_LE(v.missing, disk.lost) << "events missing from the trace without being counted lost\n"
                                  << v.recover.Describe();
  return v;
}

// --- every way of dying, in both modes, 1 and 3 threads -------------------------------------------

using CrashParam = std::tuple<std::string /*mode*/, unsigned /*threads*/, std::string /*crash*/>;

class CrashTest : public testing::TestWithParam<CrashParam> {};

TEST_P(CrashTest, CommittedEventsAreRecovered) {
  SKIP_WITHOUT_BABELTRACE();
  const auto& [mode, threads, crash] = GetParam();
  VictimSpec spec;
  spec.mode = mode;
  spec.threads = threads;
  spec.crash = crash;
  // Stream: the ring holds every event (nothing discarded). Flight: several times the ring.
  spec.buffer = mode == "stream" ? "512k" : "64k";
  spec.events = mode == "stream" ? 3000 : 12000;
  TraceDir dir("crash_" + mode + "_" + crash);
  const Result victim = rectest::RunVictim(spec, dir.path());
  ExpectDeath(crash, victim);
  const Verified v = RecoverAndVerify(dir.path(), threads, spec.events);
  // All events emitted before the crash are accounted for exactly: in the trace, or lost and
  // counted in the packet contexts.
  EXPECT_EQ(v.missing, v.recorded_lost) << v.recover.Describe();
  if (mode == "stream") {
    EXPECT_EQ(v.recorded_lost, 0u) << v.recover.Describe();
    EXPECT_EQ(v.events, threads * spec.events);
  } else {
    EXPECT_GT(v.recorded_lost, 0u) << "the flight ring should have wrapped";
    EXPECT_TRUE(v.suffix) << "flight mode keeps the newest events of each thread";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CrashTest,
    testing::Combine(testing::Values("stream", "flight"), testing::Values(1u, 3u),
                     testing::Values("sigkill", "segv", "abort", "exit")),
    [](const testing::TestParamInfo<CrashParam>& p) {
      return std::get<0>(p.param) + "_" + std::to_string(std::get<1>(p.param)) + "threads_" +
             std::get<2>(p.param);
    });

// --- killed at a random moment, while the threads emit -------------------------------------------

TEST(RandomKill, Loop) {
  SKIP_WITHOUT_BABELTRACE();
  int runs = 20;
  if (const char* r = std::getenv("HUSH_RECOVER_RUNS"); r != nullptr && *r != '\0') runs = std::atoi(r);
  std::uint64_t seed = static_cast<std::uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
  if (const char* s = std::getenv("HUSH_RECOVER_SEED"); s != nullptr && *s != '\0') seed = std::strtoull(s, nullptr, 10);
  std::printf("HUSH_RECOVER_SEED=%llu HUSH_RECOVER_RUNS=%d\n", static_cast<unsigned long long>(seed), runs);
  std::mt19937_64 rng(seed);
  const char* kBuffers[] = {"32k", "64k", "256k", "1M"};
  const char* kInside[] = {"sigkill", "segv", "abort", "exit"};
  std::uint64_t total_events = 0, total_missing = 0;
  for (int run = 0; run < runs && !testing::Test::HasFailure(); ++run) {
    VictimSpec spec;
    spec.mode = rng() % 2 ? "flight" : "stream";
    spec.threads = rng() % 2 ? 3 : 1;
    spec.buffer = kBuffers[rng() % 4];
    spec.events = 0;  // until the end
    const unsigned paces[] = {0, 8, 64, 512};
    spec.pace = paces[rng() % 4];
    const unsigned delay_ms = static_cast<unsigned>(rng() % 120);
    const bool from_outside = rng() % 4 != 0;
    spec.crash = from_outside ? "wait" : kInside[rng() % 4];
    spec.after_ms = from_outside ? 0 : delay_ms + 1;
    SCOPED_TRACE("run " + std::to_string(run) + ": " + spec.mode + " " + std::to_string(spec.threads) +
                 " threads, buffer " + spec.buffer + ", pace " + std::to_string(spec.pace) + ", " +
                 (from_outside ? "SIGKILL from outside" : spec.crash) + " after " +
                 std::to_string(delay_ms) + " ms");
    TraceDir dir("random");
    Result victim;
    if (from_outside) {
      rectest::Child child(rectest::VictimArgv(spec), rectest::VictimEnv(spec, dir.path()));
      ASSERT_TRUE(child.WaitFor("ready")) << child.Wait().Describe();
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      child.Kill(SIGKILL);
      victim = child.Wait();
      ExpectDeath("sigkill", victim);
    } else {
      victim = rectest::RunVictim(spec, dir.path());
      ExpectDeath(spec.crash, victim);
    }
    const Verified v = RecoverAndVerify(dir.path(), spec.threads, 0);
    total_events += v.events;
    total_missing += v.missing;
  }
  std::printf("%d runs: %llu events read back, %llu missing and counted lost\n", runs,
              static_cast<unsigned long long>(total_events), static_cast<unsigned long long>(total_missing));
}

// --- special cases ---------------------------------------------------------------------------------

// The victim's threads emit `events` each and it returns from main: a cleanly stopped trace.
void RunCleanly(const std::string& dir, unsigned threads, std::uint64_t events) {
  VictimSpec spec;
  spec.crash = "return";
  spec.threads = threads;
  spec.events = events;
  const Result victim = rectest::RunVictim(spec, dir);
  ASSERT_TRUE(victim.exited && victim.code == 0) << victim.Describe();
}

TEST(Recover, CleanlyStoppedTraceIsLeftAlone) {
  TraceDir dir("clean");
  ASSERT_NO_FATAL_FAILURE(RunCleanly(dir.path(), 2, 500));
  ASSERT_TRUE(rectest::RingFiles(dir.path()).empty());
  EXPECT_EQ(hush::testsupport::RingDirectory(dir.path()), dir.path()) << "no ring directory is left on /dev/shm";
  const auto before = rectest::Snapshot(dir.path());
  const Result r = rectest::Recover(dir.path());
  EXPECT_TRUE(r.exited && r.code == 0) << r.Describe();
  EXPECT_NE(r.out.find("closed cleanly"), std::string::npos) << r.Describe();
  EXPECT_EQ(rectest::Snapshot(dir.path()), before);
}

TEST(Recover, PartialEventIsDroppedAndCounted) {
  SKIP_WITHOUT_BABELTRACE();
  for (const std::string mode : {"stream", "flight"}) {
    SCOPED_TRACE(mode);
    VictimSpec spec;
    spec.mode = mode;
    spec.threads = 2;
    spec.events = 300;
    spec.crash = "segv-in-event";
    TraceDir dir("partial_" + mode);
    ExpectDeath(spec.crash, rectest::RunVictim(spec, dir.path()));
    const Verified v = RecoverAndVerify(dir.path(), spec.threads, spec.events);
    EXPECT_EQ(v.events, 600u);
    EXPECT_NE(v.recover.out.find("1 partial event dropped"), std::string::npos) << v.recover.Describe();
    EXPECT_NE(v.recover.out.find("1 partial,"), std::string::npos) << v.recover.Describe();
  }
}

// A crashed 3-thread trace (stream mode), for the corruption tests.
void MakeCrashedTrace(const std::string& dir, const std::string& mode = "stream", unsigned threads = 3,
                      std::uint64_t events = 2000, const std::string& buffer = "256k") {
  VictimSpec spec;
  spec.mode = mode;
  spec.threads = threads;
  spec.events = events;
  spec.buffer = buffer;
  spec.crash = "sigkill";
  ExpectDeath("sigkill", rectest::RunVictim(spec, dir));
  ASSERT_TRUE(rectest::Exists(rectest::RingPath(dir, 0)));
}

bool PatchFile(const std::string& path, std::uint64_t offset, const void* data, std::size_t len) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::pwrite(fd, data, len, static_cast<off_t>(offset)) == static_cast<ssize_t>(len);
  ::close(fd);
  return ok;
}

bool OnTmpfs(const std::string& path) {
  struct statfs fs;
  return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

// Where a crashed writer's rings are (format/ring_location.h): a trace directory on tmpfs holds
// them; one on a disk file system has them in /dev/shm/hushtrace-UID/rings-UUID-DEV-INO, private
// to the user, named after the uuid of the trace's metadata and the trace directory, and recovery
// finds them there, recovers them and removes that directory.
TEST(Recover, RingsOfATraceOnDiskAreInSharedMemoryAndRecoveredFromThere) {
  SKIP_WITHOUT_BABELTRACE();
  TraceDir memory("rings_in_trace", rectest::Where::kMemory);
  if (OnTmpfs(memory.path().substr(0, memory.path().rfind('/')))) {
    MakeCrashedTrace(memory.path(), "stream", 2, 1000, "64k");
    EXPECT_EQ(rectest::RingFiles(memory.path()), (std::vector<std::string>{".ring_0", ".ring_1"}));
    EXPECT_EQ(hush::testsupport::RingDirectory(memory.path()), memory.path());
  }
  TraceDir disk("rings_in_shm");
  if (OnTmpfs(disk.path().substr(0, disk.path().rfind('/')))) {
    GTEST_SKIP() << "the temporary directory is on tmpfs: no trace on a disk file system here";
  }
  VictimSpec spec;
  spec.threads = 2;
  spec.events = 1000;
  spec.buffer = "64k";
  spec.crash = "sigkill";
  ExpectDeath("sigkill", rectest::RunVictim(spec, disk.path()));
  std::vector<std::string> in_trace;
  for (const std::string& name : hush::testsupport::ListDir(disk.path())) {
    if (name.rfind(".ring_", 0) == 0) in_trace.push_back(name);
  }
  EXPECT_TRUE(in_trace.empty()) << "no ring file in a trace directory on disk";
  const std::string uuid = hush::format::TraceUuidOfMetadata(rectest::ReadFile(disk.path() + "/metadata"));
  ASSERT_FALSE(uuid.empty());
  struct stat st;
  ASSERT_EQ(::stat(disk.path().c_str(), &st), 0);
  const std::string rings = hush::format::SharedRingDirectory(st, uuid);
  ASSERT_EQ(hush::testsupport::RingDirectory(disk.path()), rings);
  ASSERT_EQ(::lstat(rings.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  for (const std::string& name : rectest::RingFiles(disk.path())) {
    ASSERT_EQ(::lstat((rings + "/" + name).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << name;
  }
  // The way back to the trace, for the sweep of orphans: a link that resolves to the trace
  // directory itself.
  struct stat via_link, trace;
  ASSERT_EQ(::stat((rings + "/trace").c_str(), &via_link), 0);
  ASSERT_EQ(::stat(disk.path().c_str(), &trace), 0);
  EXPECT_TRUE(via_link.st_dev == trace.st_dev && via_link.st_ino == trace.st_ino);
  EXPECT_EQ(rectest::RingFiles(disk.path()), (std::vector<std::string>{".ring_0", ".ring_1"}));
  EXPECT_TRUE(HasLeftovers(disk.path()));
  const Verified v = RecoverAndVerify(disk.path(), spec.threads, spec.events);
  EXPECT_EQ(v.events, spec.threads * spec.events) << v.recover.Describe();
  EXPECT_NE(v.recover.out.find("removed the ring files of"), std::string::npos) << v.recover.Describe();
  EXPECT_FALSE(rectest::Exists(rings)) << "recovery removes the trace's ring directory";
  EXPECT_FALSE(HasLeftovers(disk.path()));
}

TEST(Recover, CorruptedRingHeaderIsReportedAndSkipped) {
  struct Corruption {
    const char* what;
    std::uint64_t offset;
    std::uint64_t value;  // 8 bytes written at offset (or a file size when offset == ~0)
    const char* expect;   // in the error message
  };
  const Corruption cases[] = {
      {"magic", 0, 0x4141414141414141ull, "byte 0: bad ring magic"},
      {"version", 8, 7, "byte 8: ring format version 7"},
      {"subbuf_count", 12, 0, "byte 12: sub-buffer count 0"},
      {"subbuf_size", 16, 1ull << 40, "byte 16: sub-buffer size"},
      {"stream_index", 24, 9, "byte 24: stream index 9"},
      {"mode", 32, 0x0000000700000007ull, "byte 32: unknown ring mode"},
      {"written_seq", 144, 1ull << 50, "byte 144: written_seq 1125899906842624 is beyond"},
      {"written_offset", 152, 3, "byte 152: written_offset 3 out of range"},
      {"consumed", 128, 1000, "byte 128: consumed 1000 is ahead"},
      {"commit", 72, 0xF0000000ull, "byte 72: commit offset 4026531840"},
      {"file size", ~0ull, 5000, "byte 16: 8 sub-buffers"},
  };
  static_assert(offsetof(hush::ring::RingHeader, consumed) == 128);
  static_assert(offsetof(hush::ring::RingHeader, written_seq) == 144);
  static_assert(offsetof(hush::ring::RingHeader, written_offset) == 152);
  static_assert(offsetof(hush::ring::RingHeader, commit) == 72);
  TraceDir base("corrupt_base", rectest::Where::kMemory);
  MakeCrashedTrace(base.path());
  for (const Corruption& c : cases) {
    SCOPED_TRACE(c.what);
    TraceDir dir(std::string("corrupt_") + c.what, rectest::Where::kMemory);
    ASSERT_TRUE(rectest::CopyTree(base.path(), dir.path()));
    if (c.offset == ~0ull) {
      ASSERT_EQ(::truncate(dir.ring(0).c_str(), static_cast<off_t>(c.value)), 0);
    } else {
      ASSERT_TRUE(PatchFile(dir.ring(0), c.offset, &c.value, sizeof c.value));
    }
    const Result r = rectest::Recover(dir.path());
    ASSERT_TRUE(r.exited) << r.Describe();  // never a crash
    EXPECT_EQ(r.code, 1) << r.Describe();
    EXPECT_NE(r.err.find(dir.path() + "/.ring_0: " + c.expect), std::string::npos) << r.Describe();
    EXPECT_NE(r.out.find("ring_0: FAILED"), std::string::npos) << r.Describe();
    // The other rings are recovered; the bad one is kept for inspection.
    EXPECT_NE(r.out.find("ring_1 (stream"), std::string::npos) << r.Describe();
    EXPECT_NE(r.out.find("ring_2 (stream"), std::string::npos) << r.Describe();
    EXPECT_TRUE(rectest::Exists(dir.ring(0)));
    EXPECT_FALSE(rectest::Exists(dir.ring(1)));
    EXPECT_FALSE(rectest::Exists(dir.ring(2)));
  }
}

// Random byte flips in the ring headers: recover never crashes, and whenever it succeeds the
// result is a trace babeltrace2 reads.
TEST(Recover, RandomHeaderDamageNeverCrashes) {
  SKIP_WITHOUT_BABELTRACE();
  TraceDir base("flip_base", rectest::Where::kMemory);
  MakeCrashedTrace(base.path(), "flight", 2, 6000, "64k");
  std::mt19937_64 rng(12345);
  int succeeded = 0;
  for (int i = 0; i < 60 && !testing::Test::HasFailure(); ++i) {
    TraceDir dir("flip", rectest::Where::kMemory);
    ASSERT_TRUE(rectest::CopyTree(base.path(), dir.path()));
    std::string flips;
    for (int k = 0; k < 3; ++k) {
      const std::uint64_t off = rng() % 256;
      const std::uint8_t byte = static_cast<std::uint8_t>(rng());
      flips += " " + std::to_string(off) + "=" + std::to_string(byte);
      ASSERT_TRUE(PatchFile(dir.ring(rng() % 2), off, &byte, 1));
    }
    SCOPED_TRACE("flips" + flips);
    const Result r = rectest::Recover(dir.path());
    ASSERT_TRUE(r.exited && (r.code == 0 || r.code == 1)) << r.Describe();
    if (r.code != 0) continue;
    ++succeeded;
    const BtResult bt = rectest::ReadWithBabeltrace(dir.path());
    EXPECT_TRUE(bt.ok()) << bt.run.Describe() << "\n" << r.Describe();
  }
  std::printf("%d of 60 damaged traces recovered\n", succeeded);
}

// Damage inside the packets the ring still holds (flight mode: nothing was written before the
// crash): the bad packet is cut or dropped, its events are counted lost, the rest is recovered.
TEST(Recover, CorruptedPacketIsCutAndCounted) {
  SKIP_WITHOUT_BABELTRACE();
  TraceDir base("packet_base", rectest::Where::kMemory);
  // 1 thread, 256k = 8 sub-buffers of 32 KiB; 4000 events of ~24 bytes: packets 0 and 1 closed,
  // packet 2 open.
  MakeCrashedTrace(base.path(), "flight", 1, 4000, "256k");
  const std::uint64_t S = 32 * 1024;
  struct Damage {
    const char* what;
    std::uint64_t packet, offset;
    std::uint64_t value;
    std::size_t len;
  };
  const Damage cases[] = {
      {"first event id", 1, 112, 254, 1},       // unknown event: packet 1 cut to nothing
      {"packet magic", 0, 0, 0xdeadbeef, 4},    // packet 0 dropped
      {"content size", 1, 48, 1ull << 40, 8},   // packet 1 dropped
      {"open packet event", 2, 112, 254, 1},     // the open packet cut to nothing
  };
  for (const Damage& d : cases) {
    SCOPED_TRACE(d.what);
    TraceDir dir(std::string("packet_") + d.what, rectest::Where::kMemory);
    ASSERT_TRUE(rectest::CopyTree(base.path(), dir.path()));
    ASSERT_TRUE(PatchFile(dir.ring(0), hush::ring::kRingHeaderSize + d.packet * S + d.offset, &d.value, d.len));
    const Result r = rectest::Recover(dir.path());
    ASSERT_TRUE(r.exited && r.code == 0) << r.Describe();
    EXPECT_NE(r.err.find("packet " + std::to_string(d.packet)), std::string::npos) << r.Describe();
    EXPECT_NE(r.out.find("in damaged packets"), std::string::npos) << r.Describe();
    const rectest::DiskCounters disk = rectest::ReadDiskCounters(dir.path());
    ASSERT_TRUE(disk.ok) << disk.error;
    const BtResult bt = rectest::ReadWithBabeltrace(dir.path());
    EXPECT_TRUE(bt.ok()) << bt.run.Describe();
    std::uint64_t missing = 0;
    EXPECT_EQ(rectest::CheckSequences(bt.events, 1, 4000, &missing), "");
    EXPECT_GT(missing, 0u);
    EXPECT_EQ(missing, disk.lost) << "the lost events of the damaged packet are counted on disk";
    // babeltrace2 reports losses between packets (not those before the first one).
    if (d.packet > 0) {
      EXPECT_EQ(bt.discarded, disk.lost) << bt.run.Describe();
    }
  }
}

// Issue 17: all-ones in a stream-mode ring's overwritten counter (which must be 0) was copied
// into the trace ("lost 18446744073709551615 events"; babeltrace2 aborted). Recovery counts an
// impossible counter as 0 and says so; a discarded counter beyond 2^50 likewise.
TEST(Recover, ImpossibleLossCountersAreClampedAndNamed) {
  SKIP_WITHOUT_BABELTRACE();
  TraceDir base("counters_base", rectest::Where::kMemory);
  MakeCrashedTrace(base.path());
  struct Case {
    const char* what;
    std::size_t offset;
    std::uint64_t value;
    const char* expect;
  };
  const Case cases[] = {
      {"overwritten", offsetof(hush::ring::RingHeader, overwritten), ~0ull,
       "overwritten counter 18446744073709551615 is impossible (a stream-mode ring overwrites "
       "nothing); "
       "counted as 0"},
      {"overwritten one", offsetof(hush::ring::RingHeader, overwritten), 1,
       "overwritten counter 1 is impossible (a stream-mode ring overwrites nothing)"},
      {"discarded", offsetof(hush::ring::RingHeader, discarded), (1ull << 50) + 1,
       "discarded counter 1125899906842625 is impossible (more than 2^50 events); counted as 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    TraceDir dir(std::string("counters_") + c.what, rectest::Where::kMemory);
    ASSERT_TRUE(rectest::CopyTree(base.path(), dir.path()));
    ASSERT_TRUE(PatchFile(dir.ring(0), c.offset, &c.value, sizeof c.value));
    const Result r = rectest::Recover(dir.path());
    ASSERT_TRUE(r.exited && r.code == 0) << r.Describe();
    EXPECT_NE(r.err.find(dir.path() + "/.ring_0: byte " + std::to_string(c.offset) +
                         ": ring header's " + c.expect),
              std::string::npos)
        << r.Describe();
    const rectest::DiskCounters disk = rectest::ReadDiskCounters(dir.path());
    ASSERT_TRUE(disk.ok) << disk.error;
    EXPECT_LT(disk.lost, 1000000u);
    const Result report = rectest::Run({rectest::CliPath(), "report", dir.path()});
    EXPECT_TRUE(report.exited && report.code == 0) << report.Describe();
    EXPECT_EQ(report.out.find("18446744073709551615"), std::string::npos) << report.out;
    EXPECT_EQ(report.out.find("1125899906842625"), std::string::npos) << report.out;
    const BtResult bt = rectest::ReadWithBabeltrace(dir.path());
    EXPECT_TRUE(bt.ok()) << bt.run.Describe();
    EXPECT_EQ(bt.events.size(), 3u * 2000u);
  }
}

// Issue 17: a FIFO where a trace file belongs hung every reader in a blocking open(). Each
// command now returns at once with an error naming the path (the harness kills it after 30 s,
// so a regression fails instead of hanging).
TEST(Recover, FifoInTheTraceDirectoryIsRefusedAtOnce) {
  TraceDir base("fifo_base", rectest::Where::kMemory);
  MakeCrashedTrace(base.path());
  struct Case {
    const char* file;
    const char* command;
  };
  const Case cases[] = {{".ring_0", "recover"},  {"metadata", "recover"},
                        {"stream_1", "recover"}, {"metadata", "dump"},
                        {"stream_1", "dump"},    {"stream_1", "report"},
                        {".crashed", "recover"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.command) + " " + c.file);
    TraceDir dir(std::string("fifo_") + c.command, rectest::Where::kMemory);
    ASSERT_TRUE(rectest::CopyTree(base.path(), dir.path()));
    const std::string path = dir.path() + "/" + c.file;
    if (std::string(c.file) == "stream_1" && std::string(c.command) != "recover") {
      ASSERT_EQ(rectest::Recover(dir.path()).code, 0);
    }
    ::unlink(path.c_str());
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
    const auto start = std::chrono::steady_clock::now();
    const Result r = rectest::Run({rectest::CliPath(), c.command, dir.path()}, rectest::Env(), 30);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
    ASSERT_TRUE(r.exited) << r.Describe();
    if (std::string(c.file) == ".crashed") {
      // Only a note: the marker adds to the report, the trace is recovered without it.
      EXPECT_EQ(r.code, 0) << r.Describe();
      EXPECT_NE(r.err.find("/.crashed is not a regular file; ignored"), std::string::npos)
          << r.Describe();
      continue;
    }
    EXPECT_EQ(r.code, 1) << r.Describe();
    EXPECT_NE(r.err.find(path + ": not a regular file"), std::string::npos) << r.Describe();
  }
}

TEST(Recover, MissingMetadataCannotBeRecovered) {
  TraceDir dir("nometa", rectest::Where::kMemory);  // its rings in it: found without the metadata
  MakeCrashedTrace(dir.path());
  ASSERT_EQ(::unlink((dir.path() + "/metadata").c_str()), 0);
  const auto before = rectest::Snapshot(dir.path());
  const Result r = rectest::Recover(dir.path());
  EXPECT_TRUE(r.exited && r.code == 1) << r.Describe();
  EXPECT_NE(r.err.find("metadata is missing: the trace cannot be recovered"), std::string::npos) << r.Describe();
  EXPECT_EQ(rectest::Snapshot(dir.path()), before) << "nothing is changed";
}

TEST(Recover, RefusesWhileTheWriterRuns) {
  VictimSpec spec;
  spec.crash = "wait";
  spec.events = 0;
  spec.pace = 64;
  TraceDir dir("live");
  rectest::Child child(rectest::VictimArgv(spec), rectest::VictimEnv(spec, dir.path()));
  ASSERT_TRUE(child.WaitFor("ready")) << child.Wait().Describe();
  const Result r = rectest::Recover(dir.path());
  EXPECT_TRUE(r.exited && r.code == 1) << r.Describe();
  EXPECT_NE(r.err.find("is still running"), std::string::npos) << r.Describe();
  EXPECT_FALSE(rectest::RingFiles(dir.path()).empty());
  child.Kill(SIGKILL);
  child.Wait();
  const Result again = rectest::Recover(dir.path());
  EXPECT_TRUE(again.exited && again.code == 0) << again.Describe();
}

TEST(Recover, ReadingCommandsRecoverADeadWritersTraceFirst) {
  TraceDir dir("transparent", rectest::Where::kMemory);
  MakeCrashedTrace(dir.path(), "stream", 2, 5000, "64k");
  TraceDir copy("transparent-copy", rectest::Where::kMemory);
  ASSERT_TRUE(rectest::CopyTree(dir.path(), copy.path()));
  const Result explicit_recovery = rectest::Recover(copy.path());
  ASSERT_TRUE(explicit_recovery.exited && explicit_recovery.code == 0)
      << explicit_recovery.Describe();
  const Result expected = rectest::Run({rectest::CliPath(), "dump", copy.path()});
  ASSERT_TRUE(expected.exited && expected.code == 0) << expected.Describe();

  const Result dump = rectest::Run({rectest::CliPath(), "dump", dir.path()});
  ASSERT_TRUE(dump.exited && dump.code == 0) << dump.Describe();
  EXPECT_NE(dump.err.find("its writer died; recovered"), std::string::npos) << dump.Describe();
  EXPECT_TRUE(rectest::RingFiles(dir.path()).empty());
  EXPECT_EQ(dump.out, expected.out) << "the same events as after 'hushtrace recover'";
  const Result report = rectest::Run({rectest::CliPath(), "report", dir.path()});
  EXPECT_TRUE(report.exited && report.code == 0) << report.Describe();
  EXPECT_EQ(report.err.find("recovered"), std::string::npos) << "recovered once only";
}

TEST(Recover, ReadingCommandsRemoveAnEmptyRingDirectorySilently) {
  // Earlier versions kept the rings in DIR/.ring/, and a followed fork child could leave it
  // empty behind: nothing to recover, and nothing to say about it.
  VictimSpec spec;
  spec.crash = "return";
  spec.events = 100;
  TraceDir dir("empty-ring-dir");
  const Result victim = rectest::RunVictim(spec, dir.path());
  ASSERT_TRUE(victim.exited && victim.code == 0) << victim.Describe();
  ASSERT_EQ(::mkdir((dir.path() + "/.ring").c_str(), 0700), 0);
  const Result dump = rectest::Run({rectest::CliPath(), "dump", dir.path()});
  EXPECT_TRUE(dump.exited && dump.code == 0) << dump.Describe();
  EXPECT_EQ(dump.err, "") << dump.Describe();
  EXPECT_FALSE(rectest::Exists(dir.path() + "/.ring"));
}

// Moves the ring files of `dir` to where earlier versions kept them: DIR/.ring/ring_N (0700),
// with, if `marker` is not empty, the crash marker DIR/.ring/crashed.
void ToEarlierLayout(const std::string& dir, const std::string& marker) {
  const std::vector<std::string> rings = rectest::RingFiles(dir);
  ASSERT_FALSE(rings.empty()) << dir;
  ASSERT_EQ(::mkdir((dir + "/.ring").c_str(), 0700), 0) << dir;
  for (const std::string& name : rings) {  // ".ring_N" -> ".ring/ring_N"
    const std::string to = dir + "/.ring/" + name.substr(1);
    ASSERT_EQ(::rename((dir + "/" + name).c_str(), to.c_str()), 0) << name;
  }
  if (!marker.empty()) {
    ASSERT_TRUE(rectest::WriteFile(dir + "/.ring/crashed", marker));
  }
  ASSERT_TRUE(rectest::RingFiles(dir).empty());
}

// A trace written by an earlier version keeps its rings in DIR/.ring/ring_N and its crash marker
// in DIR/.ring/crashed. Recovering it gives the same trace as the same crash in today's layout
// (DIR/.ring_N): ring N still goes to stream_N, nothing is missed or doubled. The marker is
// reported, and DIR/.ring goes (nothing would remove it later). A reading command recovers it
// first, as it does a trace of today.
TEST(Recover, EarlierVersionsRingDirectoryRecoversTheSameEvents) {
  // The tid and pid are never checked against live processes: made up.
  const std::string marker = "signal 11 tid 4242 pid 4241\n";
  const std::string said = "the program died of SIGSEGV in thread 4242 (pid 4241)";
  for (const std::string mode : {"stream", "flight"}) {
    SCOPED_TRACE(mode);
    TraceDir base("legacy_base_" + mode, rectest::Where::kMemory);
    // Flight: 64k rings that wrap (overwritten packets); stream: 256k, some events already
    // written by the consumer, the rest in the rings.
    if (mode == "flight") {
      MakeCrashedTrace(base.path(), mode, 3, 6000, "64k");
    } else {
      MakeCrashedTrace(base.path(), mode, 3, 2000, "256k");
    }
    ASSERT_EQ(rectest::RingFiles(base.path()).size(), 3u);
    TraceDir today("legacy_today_" + mode, rectest::Where::kMemory),
        earlier("legacy_earlier_" + mode, rectest::Where::kMemory), read("legacy_read_" + mode, rectest::Where::kMemory);
    ASSERT_TRUE(rectest::CopyTree(base.path(), today.path()));
    ASSERT_TRUE(rectest::CopyTree(base.path(), earlier.path()));
    ASSERT_TRUE(rectest::CopyTree(base.path(), read.path()));
    ToEarlierLayout(earlier.path(), marker);
    ToEarlierLayout(read.path(), marker);
    if (testing::Test::HasFatalFailure()) return;

    const Result expected = rectest::Recover(today.path());
    ASSERT_TRUE(expected.exited && expected.code == 0) << expected.Describe();
    const Result r = rectest::Recover(earlier.path());
    ASSERT_TRUE(r.exited && r.code == 0) << r.Describe();
    EXPECT_NE(r.out.find("3 of 3 rings recovered"), std::string::npos) << r.Describe();
    for (const char* ring : {".ring/ring_0", ".ring/ring_1", ".ring/ring_2"}) {
      EXPECT_NE(r.out.find(ring), std::string::npos) << ring << " not reported\n" << r.Describe();
    }
    EXPECT_NE(r.out.find(earlier.path() + ": " + said), std::string::npos) << r.Describe();
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.Describe();
    EXPECT_NE(r.out.find("removed the ring files of"), std::string::npos) << r.Describe();
    EXPECT_FALSE(rectest::Exists(earlier.path() + "/.ring")) << "the earlier .ring/ is kept";
    EXPECT_TRUE(rectest::RingFiles(earlier.path()).empty());
    EXPECT_FALSE(HasLeftovers(earlier.path()));
    // The same stream files and metadata, byte for byte, as the recovery of today's layout.
    EXPECT_EQ(rectest::Snapshot(earlier.path()), rectest::Snapshot(today.path()));
    const Result dump_today = rectest::Run({rectest::CliPath(), "dump", today.path()});
    ASSERT_TRUE(dump_today.exited && dump_today.code == 0) << dump_today.Describe();
    EXPECT_NE(dump_today.out, "");
    const Result dump_earlier = rectest::Run({rectest::CliPath(), "dump", earlier.path()});
    ASSERT_TRUE(dump_earlier.exited && dump_earlier.code == 0) << dump_earlier.Describe();
    EXPECT_EQ(dump_earlier.out, dump_today.out) << "not the events of the same crash";
    const Result again = rectest::Recover(earlier.path());
    EXPECT_TRUE(again.exited && again.code == 0) << again.Describe();
    EXPECT_NE(again.out.find("closed cleanly"), std::string::npos) << again.Describe();
    EXPECT_EQ(again.out.find("died of"), std::string::npos) << "the marker was kept\n"
                                                            << again.Describe();

    // A reading command on the earlier layout: recovered first, the crash said on stderr.
    const Result dump_read = rectest::Run({rectest::CliPath(), "dump", read.path()});
    ASSERT_TRUE(dump_read.exited && dump_read.code == 0) << dump_read.Describe();
    EXPECT_NE(dump_read.err.find("its writer died; recovered"), std::string::npos)
        << dump_read.Describe();
    EXPECT_NE(dump_read.err.find(said), std::string::npos) << dump_read.Describe();
    EXPECT_EQ(dump_read.out, dump_today.out) << "not the events of the same crash";
    EXPECT_FALSE(rectest::Exists(read.path() + "/.ring"));
  }
}

TEST(Recover, ReadingCommandsReadALiveTraceAsItIs) {
  VictimSpec spec;
  spec.crash = "wait";
  spec.events = 0;
  spec.pace = 64;
  TraceDir dir("live-read");
  rectest::Child child(rectest::VictimArgv(spec), rectest::VictimEnv(spec, dir.path()));
  ASSERT_TRUE(child.WaitFor("ready")) << child.Wait().Describe();
  const Result dump = rectest::Run({rectest::CliPath(), "dump", dir.path()});
  EXPECT_TRUE(dump.exited && dump.code == 0) << dump.Describe();
  EXPECT_NE(dump.err.find("is still being written"), std::string::npos) << dump.Describe();
  EXPECT_FALSE(rectest::RingFiles(dir.path()).empty()) << "nothing written behind a live writer";
  child.Kill(SIGKILL);
  child.Wait();
}

TEST(Recover, KeepRingsMakesRecoveryRepeatable) {
  TraceDir dir("keep");
  MakeCrashedTrace(dir.path(), "flight", 2, 5000, "64k");
  const Result first = rectest::Recover(dir.path(), {"--keep-rings"});
  ASSERT_TRUE(first.exited && first.code == 0) << first.Describe();
  EXPECT_NE(first.out.find("kept"), std::string::npos) << first.Describe();
  const auto once = rectest::Snapshot(dir.path());
  const Result second = rectest::Recover(dir.path(), {"--keep-rings"});
  ASSERT_TRUE(second.exited && second.code == 0) << second.Describe();
  EXPECT_EQ(rectest::Snapshot(dir.path()), once) << "a second recovery gives the same files";
  const Result last = rectest::Recover(dir.path());
  ASSERT_TRUE(last.exited && last.code == 0) << last.Describe();
  EXPECT_TRUE(rectest::RingFiles(dir.path()).empty());
  auto after = rectest::Snapshot(dir.path());
  for (const auto& [name, content] : once) {
    if (name.rfind(".ring_", 0) == 0) continue;
    EXPECT_EQ(after[name], content) << name;
  }
}

TEST(Recover, DryRunChangesNothing) {
  TraceDir dir("dry");
  MakeCrashedTrace(dir.path());
  const auto before = rectest::Snapshot(dir.path());
  const Result r = rectest::Recover(dir.path(), {"--dry-run"});
  EXPECT_TRUE(r.exited && r.code == 0) << r.Describe();
  EXPECT_NE(r.out.find("dry run"), std::string::npos) << r.Describe();
  EXPECT_EQ(rectest::Snapshot(dir.path()), before);
}

TEST(Recover, CommandLine) {
  const Result help = rectest::Run({rectest::CliPath(), "recover", "--help"});
  EXPECT_TRUE(help.exited && help.code == 0) << help.Describe();
  EXPECT_NE(help.out.find("usage: hushtrace recover DIR"), std::string::npos);
  const Result none = rectest::Run({rectest::CliPath(), "recover"});
  EXPECT_TRUE(none.exited && none.code == 2) << none.Describe();
  const Result bad = rectest::Run({rectest::CliPath(), "recover", "--frobnicate", "/tmp"});
  EXPECT_TRUE(bad.exited && bad.code == 2) << bad.Describe();
  const Result two = rectest::Run({rectest::CliPath(), "recover", "/tmp/a", "/tmp/b"});
  EXPECT_TRUE(two.exited && two.code == 2) << two.Describe();
  const Result missing = rectest::Run({rectest::CliPath(), "recover", "/nonexistent/trace"});
  EXPECT_TRUE(missing.exited && missing.code == 1) << missing.Describe();
  TraceDir empty("notatrace");
  ASSERT_EQ(::mkdir(empty.path().c_str(), 0700), 0);
  const Result not_trace = rectest::Run({rectest::CliPath(), "recover", empty.path()});
  EXPECT_TRUE(not_trace.exited && not_trace.code == 1) << not_trace.Describe();
  EXPECT_NE(not_trace.err.find("not a hushtrace trace directory"), std::string::npos) << not_trace.Describe();
}

// --- a session's lock on its trace directory (recover::TraceBeingWritten, HasLeftovers) ---
//
// While a session runs it holds a shared flock on its trace directory, which `ship --watch` and
// the reading commands test with recover::TraceBeingWritten: the ring files alone cannot say it
// (a session that has not emitted yet has none, a dead writer leaves them).

// A session in this process: the lock is held from Start, before the first event creates a ring,
// to Stop, and a probe leaves it as it found it. A stopped trace has no leftovers.
TEST(TraceBeingWritten, HeldFromStartToStopEvenBeforeTheFirstEvent) {
  for (const hush::Mode mode : {hush::Mode::kStream, hush::Mode::kFlight}) {
    SCOPED_TRACE(mode == hush::Mode::kStream ? "stream" : "flight");
    TraceDir dir("lock_session");
    EXPECT_FALSE(TraceBeingWritten(dir.path())) << "no directory yet";
    hush::SessionOptions options;
    options.events = {"recover:*"};
    options.output_dir = dir.path();
    options.mode = mode;
    options.buffer_size = 64 * 1024;
    std::string error;
    auto session = hush::Session::Start(options, &error);
    ASSERT_NE(session, nullptr) << error;
    // Before the first event: a metadata file and no ring, as a complete trace looks.
    ASSERT_TRUE(rectest::RingFiles(dir.path()).empty()) << "the premise: no ring yet";
    EXPECT_TRUE(TraceBeingWritten(dir.path())) << "a started session without a ring yet";
    EXPECT_TRUE(TraceBeingWritten(dir.path())) << "the first probe took the lock away";
    HUSH_TRACE(recover, seq, std::uint32_t{0}, std::uint64_t{0}, std::string_view("x"));
    ASSERT_FALSE(rectest::RingFiles(dir.path()).empty());
    EXPECT_TRUE(TraceBeingWritten(dir.path()));
    EXPECT_TRUE(HasLeftovers(dir.path())) << "a running session's ring file";
    session->Stop();
    EXPECT_FALSE(TraceBeingWritten(dir.path())) << "the lock outlives Stop";
    EXPECT_FALSE(HasLeftovers(dir.path())) << "a cleanly stopped trace";
    EXPECT_TRUE(rectest::Exists(dir.path() + "/metadata"));
  }
}

// The lock goes with its process, crash or not: a SIGKILLed writer's trace is not being written
// (recover, ship --watch go ahead), and what it left is.
TEST(TraceBeingWritten, FalseOnceTheWriterIsKilled) {
  VictimSpec spec;
  spec.crash = "wait";
  spec.threads = 2;
  spec.events = 100;  // then the threads block
  TraceDir dir("lock_killed");
  rectest::Child child(rectest::VictimArgv(spec), rectest::VictimEnv(spec, dir.path()));
  ASSERT_TRUE(child.WaitFor("ready")) << child.Wait().Describe();
  EXPECT_TRUE(TraceBeingWritten(dir.path())) << "a live writer";
  EXPECT_TRUE(HasLeftovers(dir.path())) << "a live writer's rings";
  child.Kill(SIGKILL);
  const Result victim = child.Wait();
  ExpectDeath("sigkill", victim);
  // Reaped: the kernel closed its descriptors, the lock with them. No waiting for it.
  EXPECT_FALSE(TraceBeingWritten(dir.path())) << "a dead writer's lock";
  EXPECT_TRUE(HasLeftovers(dir.path())) << "the rings it left";
  const Result r = rectest::Recover(dir.path());
  EXPECT_TRUE(r.exited && r.code == 0) << r.Describe();
  EXPECT_FALSE(HasLeftovers(dir.path())) << r.Describe();
  EXPECT_FALSE(TraceBeingWritten(dir.path()));
}

// Waits (at most 10 s) for `pid`, a child of this process, to exit, without reaping it.
bool WaitForExitNotReaped(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    siginfo_t info = {};
    const int r = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// A fork child inherits the open file description that holds the lock. A followed child
// (HUSHTRACE_FOLLOW=1) writes the same trace: it is being written for as long as the child lives,
// after its parent returned from main and stopped its session. A child that does not follow
// writes nothing there and holds no lock: the trace is complete when the parent is gone.
TEST(TraceBeingWritten, AFollowedForkChildHoldsTheLockAfterItsParentExits) {
  for (const bool follow : {true, false}) {
    SCOPED_TRACE(follow ? "HUSHTRACE_FOLLOW=1" : "not followed");
    VictimSpec spec;
    spec.crash = "fork-wait";
    spec.events = 100;
    TraceDir dir(follow ? "lock_follow" : "lock_no_follow");
    std::vector<std::string> env = rectest::VictimEnv(spec, dir.path());
    if (follow) env.push_back("HUSHTRACE_FOLLOW=1");
    rectest::Child parent(rectest::VictimArgv(spec), env);
    ASSERT_TRUE(parent.WaitFor("parent returns\n")) << parent.Wait().Describe();
    const std::string& out = parent.output();
    const std::size_t at = out.find("child ");
    ASSERT_NE(at, std::string::npos) << out;
    const pid_t child = static_cast<pid_t>(std::atoi(out.c_str() + at + 6));
    ASSERT_GT(child, 0) << out;
    // The orphaned child (not ours to reap) is killed whatever happens below; once it is known
    // dead, its pid is forgotten (it may be reused).
    struct KillAtEnd {
      pid_t pid;
      ~KillAtEnd() {
        if (pid > 0) ::kill(pid, SIGKILL);
      }
    } kill_child{child};
    ASSERT_TRUE(WaitForExitNotReaped(parent.pid())) << "the parent did not exit";
    EXPECT_EQ(TraceBeingWritten(dir.path()), follow) << "the parent exited, its child lives";
    // The followed child's ring; none otherwise (the parent stopped cleanly).
    EXPECT_EQ(HasLeftovers(dir.path()), follow);
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    // Reaps the parent and reads its stdout to the end, which comes when the child, the last to
    // hold it, is dead: its descriptors are closed, the lock's included.
    const Result r = parent.Wait();
    kill_child.pid = 0;
    EXPECT_TRUE(r.exited && r.code == 0) << r.Describe();
    EXPECT_FALSE(TraceBeingWritten(dir.path())) << "the lock outlives the last process";
    if (follow) {
      const Result rec = rectest::Recover(dir.path());
      EXPECT_TRUE(rec.exited && rec.code == 0) << rec.Describe();
      EXPECT_NE(rec.out.find("1 of 1 ring recovered"), std::string::npos) << rec.Describe();
    }
  }
}

// What a session leaves only when it did not stop: a ring file, a crash marker, a metadata
// rewrite cut short, an earlier version's .ring/ (empty or not). Each of them alone makes a
// cleanly stopped trace one to recover; other names do not.
TEST(HasLeftovers, EachLeftoverAloneCountsOnACleanlyStoppedTrace) {
  TraceDir dir("leftovers");
  ASSERT_NO_FATAL_FAILURE(RunCleanly(dir.path(), 2, 100));
  ASSERT_TRUE(rectest::Exists(dir.path() + "/stream_0"));
  EXPECT_FALSE(HasLeftovers(dir.path())) << "a cleanly stopped trace";
  EXPECT_FALSE(TraceBeingWritten(dir.path())) << "a cleanly stopped trace";
  EXPECT_FALSE(HasLeftovers(dir.path() + "/missing"));
  EXPECT_FALSE(TraceBeingWritten(dir.path() + "/missing"));
  struct Entry {
    const char* name;
    bool directory;
    bool leftover;
  };
  const Entry entries[] = {
      {".ring_0", false, true},         // ring files
      {".ring_17", false, true},
      {".crashed", false, true},        // the crash marker
      {".metadata.tmp", false, true},   // a metadata rewrite cut short
      {".ring", true, true},            // an earlier version's ring directory, even empty
      {".ring_", false, false},         // not ring names
      {".ring_x", false, false},
      {"snapshots", true, false},       // a flight recorder's triggered snapshots
  };
  for (const Entry& e : entries) {
    SCOPED_TRACE(e.name);
    const std::string path = dir.path() + "/" + e.name;
    if (e.directory) {
      ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
    } else {
      ASSERT_TRUE(rectest::WriteFile(path, "x"));
    }
    EXPECT_EQ(HasLeftovers(dir.path()), e.leftover);
    if (std::string(e.name) == ".ring") {  // with a ring in it
      ASSERT_TRUE(rectest::WriteFile(path + "/ring_0", "x"));
      EXPECT_TRUE(HasLeftovers(dir.path()));
      ASSERT_EQ(::unlink((path + "/ring_0").c_str()), 0);
    }
    ASSERT_EQ(e.directory ? ::rmdir(path.c_str()) : ::unlink(path.c_str()), 0);
    EXPECT_FALSE(HasLeftovers(dir.path())) << "after removing it";
  }
}

// --- the writer dying between two steps of a write-out ---------------------------------------------
//
// A flight-mode session in this process writes parts of packets (Snapshot), then its directory is
// copied as a crash would leave it. The ring header is then edited to the states the writer passes
// through inside Ring::WriteNew (a write done but not recorded, recorded but not done, torn...).
// Each must recover to the same events, timestamps included, as the genuine state.

std::uint64_t ReadU64(const std::string& data, std::size_t offset) {
  std::uint64_t v = 0;
  std::memcpy(&v, data.data() + offset, sizeof v);
  return v;
}
void SetU64(std::string* data, std::size_t offset, std::uint64_t v) { std::memcpy(data->data() + offset, &v, sizeof v); }

// Ends of the packets of a stream file.
std::vector<std::size_t> PacketEnds(const std::string& stream) {
  std::vector<std::size_t> ends;
  for (std::size_t off = 0; off + 112 <= stream.size();) {
    off += ReadU64(stream, off + 48) / 8;
    ends.push_back(off);
  }
  return ends;
}

using Files = std::map<std::string, std::string>;

// Writes `files` as a trace directory, recovers it and returns its events as babeltrace2 reads
// them: "seq [time]" lines. (Not the whole text: babeltrace2 2.0.4 sometimes prints a stale
// value for an empty string field, depending on where the field falls in its read buffer.)
std::vector<std::string> RecoverCopy(const Files& files, const std::string& tag, std::string* recover_out) {
  TraceDir dir(tag);
  EXPECT_EQ(::mkdir(dir.path().c_str(), 0700), 0);
  for (const auto& [name, content] : files) EXPECT_TRUE(rectest::WriteFile(dir.path() + "/" + name, content));
  const Result r = rectest::Recover(dir.path());
  EXPECT_TRUE(r.exited && r.code == 0) << r.Describe();
  *recover_out = r.out + r.err;
  const BtResult bt = rectest::ReadWithBabeltrace(dir.path());
  EXPECT_TRUE(bt.ok()) << bt.run.Describe().substr(0, 2000);
  std::uint64_t missing = 0;
  EXPECT_EQ(rectest::CheckSequences(bt.events, 1, 3100, &missing), "") << r.Describe();
  EXPECT_EQ(missing, 0u) << r.Describe();
  std::vector<std::string> lines;
  for (const rectest::SeqEvent& e : bt.events) lines.push_back(std::to_string(e.seq) + " " + e.time);
  return lines;
}

TEST(WriterWindows, EveryIntermediateStateRecoversTheSameEvents) {
  SKIP_WITHOUT_BABELTRACE();
  using hush::ring::RingHeader;
  TraceDir live("windows_live", rectest::Where::kMemory);  // its rings in it: copied below
  hush::SessionOptions options;
  options.events = {"recover:*"};
  options.output_dir = live.path();
  options.mode = hush::Mode::kFlight;
  options.buffer_size = 256 * 1024;  // 8 sub-buffers of 32 KiB: no overwrite below
  std::string error;
  auto session = hush::Session::Start(options, &error);
  ASSERT_NE(session, nullptr) << error;
  static constexpr char kPad[] = "abcdefghijkl";
  std::uint64_t seq = 0;
  const auto emit = [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i, ++seq) {
      HUSH_TRACE(recover, seq, std::uint32_t{0}, seq, std::string_view(kPad, (seq * 7) % 13));
    }
  };
  emit(2000);  // packet 0 closed, packet 1 open
  ASSERT_TRUE(session->Snapshot(&error)) << error;  // packet 0, first part of packet 1
  const Files a1 = rectest::Snapshot(live.path());
  emit(1000);  // packet 1 closed, packet 2 open
  ASSERT_TRUE(session->Snapshot(&error)) << error;  // rest of packet 1, first part of packet 2
  const Files a2 = rectest::Snapshot(live.path());
  emit(100);
  const Files crash = rectest::Snapshot(live.path());
  session->Stop();
  ASSERT_TRUE(crash.count(".ring_0") && crash.count("stream_0") && crash.count("metadata"));

  const std::string& ring = crash.at(".ring_0");
  const std::size_t kRingHeaderSize = hush::ring::kRingHeaderSize;
  const std::size_t kSeq = offsetof(RingHeader, written_seq), kOff = offsetof(RingHeader, written_offset),
                    kBegin = offsetof(RingHeader, written_begin_ts), kDisk = offsetof(RingHeader, disk_seq),
                    kBytes = offsetof(RingHeader, stream_bytes);
  // The genuine states: progress after the second snapshot.
  ASSERT_EQ(ReadU64(ring, kSeq), 2u);
  ASSERT_NE(ReadU64(ring, kOff), 0u);
  const std::string& s1 = a1.at("stream_0");
  const std::string& s2 = a2.at("stream_0");
  const std::vector<std::size_t> ends2 = PacketEnds(s2);
  ASSERT_EQ(ends2.size(), 4u);  // packet 0, packet 1 (first part), packet 1 (rest), packet 2 (first part)
  ASSERT_EQ(PacketEnds(s1).size(), 2u);
  const std::uint64_t begin1 = ReadU64(a1.at(".ring_0"), kBegin);

  std::string out;
  const std::vector<std::string> reference = RecoverCopy(crash, "windows_ref", &out);
  ASSERT_EQ(reference.size(), 3100u) << out;

  struct Variant {
    const char* what;
    std::function<void(Files*)> edit;
    bool undamaged = false;  // recovery must report no damaged packet
  };
  const auto header = [](Files* f) { return &(*f)[".ring_0"]; };
  const auto set_stream_mode = [&](Files* f) {
    const std::uint32_t stream_mode = 0;
    std::memcpy(header(f)->data() + offsetof(RingHeader, mode), &stream_mode, 4);
  };
  // The rest of packet 1 recorded (written_seq 2) but not written: stream_0 ends with packet 0
  // and a torn write after it.
  const auto packet_1_recorded_not_written = [&](Files* f) {
    (*f)["stream_0"] = s2.substr(0, ends2[0]) + s2.substr(ends2[0], 300);
    SetU64(header(f), kBytes, ends2[0]);
    SetU64(header(f), kDisk, 1);
    SetU64(header(f), kSeq, 2);
    SetU64(header(f), kOff, 0);
  };
  // Packet 2 closed as ClosePacket leaves it in a stream ring: end, content size, event count,
  // `produced`, with the commit word still at its last event (the window before OpenPacket).
  const auto close_packet_2 = [&](Files* f) {
    set_stream_mode(f);
    std::string& h = *header(f);
    SetU64(&h, offsetof(RingHeader, consumed), 2);
    const std::uint64_t word = ReadU64(h, offsetof(RingHeader, commit));
    const std::uint64_t last_ts = ReadU64(h, offsetof(RingHeader, commit) + 8);
    const std::uint64_t subbuf = ReadU64(h, offsetof(RingHeader, subbuf_size));
    std::uint16_t entry2 = 0;
    std::memcpy(&entry2, h.data() + offsetof(RingHeader, packet_slot) + 2 * sizeof entry2, sizeof entry2);
    const std::size_t start = kRingHeaderSize + (entry2 & hush::ring::kSlotMask) * subbuf;
    const std::uint64_t end = hush::ring::CommitOffsetOf(word) - (start - kRingHeaderSize);
    SetU64(&h, start + hush::format::field::kContentSize, end * 8);
    SetU64(&h, start + hush::format::field::kTsEnd, last_ts);
    const auto events = static_cast<std::uint32_t>(hush::ring::CommitEventsOf(word));
    std::memcpy(h.data() + offsetof(RingHeader, packet_events) + 2 * sizeof events, &events, sizeof events);
    SetU64(&h, offsetof(RingHeader, produced), 3);
    return entry2 & hush::ring::kSlotMask;
  };
  const std::vector<Variant> variants = {
      {"first part of packet 2 written, progress not recorded",
       [&](Files* f) {
         SetU64(header(f), kOff, 0);
         SetU64(header(f), kBegin, begin1);
       }},
      {"rest of packet 1 recorded (written_seq + 1) but its write torn",
       [&](Files* f) {
         (*f)["stream_0"] = s2.substr(0, ends2[1]) + s2.substr(ends2[1], 700);
         SetU64(header(f), kBytes, ends2[1]);
         SetU64(header(f), kDisk, 2);
         SetU64(header(f), kSeq, 2);
         SetU64(header(f), kOff, 0);
       }},
      {"rest of packet 1 written, written_offset reset, written_seq not advanced",
       [&](Files* f) {
         (*f)["stream_0"] = s2.substr(0, ends2[2]);
         SetU64(header(f), kBytes, ends2[2]);
         SetU64(header(f), kDisk, 3);
         SetU64(header(f), kSeq, 1);
         SetU64(header(f), kOff, 0);
       }},
      {"flight: rest of packet 1 recorded but not written, packet 0 overwritten since",
       [&](Files* f) {
         packet_1_recorded_not_written(f);
         SetU64(header(f), kRingHeaderSize + 64, 8);  // sub-buffer 0 now holds packet 8
       }},
      {"stream: packet 1 recorded but not written, packet 0 released and reused",
       [&](Files* f) {
         packet_1_recorded_not_written(f);
         SetU64(header(f), kRingHeaderSize + 64, 8);
         set_stream_mode(f);
         SetU64(header(f), offsetof(RingHeader, consumed), 1);
       }},
      {"stream ring of format version 2 (packet n in sub-buffer n % K, no slot table)",
       [&](Files* f) {
         packet_1_recorded_not_written(f);
         set_stream_mode(f);
         const std::uint32_t version2 = hush::ring::kRingVersionModuloSlots;
         std::memcpy(header(f)->data() + offsetof(RingHeader, version), &version2, 4);
         SetU64(header(f), offsetof(RingHeader, consumed), 1);
         std::memset(header(f)->data() + offsetof(RingHeader, packet_slot), 0, sizeof(RingHeader::packet_slot));
       }},
      {"stream: the writer died between closing packet 2 and opening packet 3, entry 3 never written",
       [&](Files* f) {
         close_packet_2(f);
         ASSERT_EQ(ReadU64(*header(f), offsetof(RingHeader, packet_slot) + 3 * 2) & 0xffff, hush::ring::kSlotNone);
       },
       true},
      {"stream: the same window, entry 3 still naming an older packet's sub-buffer (ring_layout.h)",
       [&](Files* f) {
         const std::uint16_t other = static_cast<std::uint16_t>((close_packet_2(f) + 1) % 8);
         std::memcpy(header(f)->data() + offsetof(RingHeader, packet_slot) + 3 * sizeof other, &other, sizeof other);
       },
       true},
      {"written_offset set, written_begin_ts stale", [&](Files* f) { SetU64(header(f), kBegin, 0); }},
      {"written_offset not an event boundary",
       [&](Files* f) { SetU64(header(f), kOff, ReadU64(ring, kOff) + 1); }},
      {"torn write after the last recorded one", [&](Files* f) { (*f)["stream_0"] += std::string(777, '\x5a'); }},
      {"nothing on disk",
       [&](Files* f) {
         (*f)["stream_0"].clear();
         SetU64(header(f), kBytes, 0);
         SetU64(header(f), kDisk, 0);
       }},
  };
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.what);
    Files files = crash;
    v.edit(&files);
    const std::vector<std::string> got = RecoverCopy(files, "windows_variant", &out);
    if (std::getenv("RECOVER_TEST_VERBOSE")) std::printf("== %s\n%s", v.what, out.c_str());
    if (v.undamaged) {
      EXPECT_NE(out.find(", 0 in damaged packets"), std::string::npos) << out;
      EXPECT_EQ(out.find("dropped"), std::string::npos) << out;
    }
    ASSERT_EQ(got.size(), reference.size()) << out;
    const auto diff = std::mismatch(got.begin(), got.end(), reference.begin());
    EXPECT_TRUE(diff.first == got.end()) << "first difference: " << *diff.first << " instead of "
                                         << *diff.second << "\n" << out;
  }
}

}  // namespace
