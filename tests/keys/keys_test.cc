// Static keys (include/hushtrace/internal/enabled_check.h, src/patch): sites are NOPs until their
// event is enabled, JMPs while it is, NOPs again after; events go through patched sites; threads
// keep running patched code correctly while events are toggled; the program's own SIGTRAP
// disposition still applies; fork; a module found after its event was enabled; text that cannot
// be written.
//
// Built twice (CMakeLists.txt): keys_test with patched sites, keys_fallback_test with
// HUSH_NO_STATIC_KEYS (load-and-branch sites, an empty hush_jump table). Byte-level checks apply
// to the first only; every behavioural check runs in both.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hushtrace/session.h"
#include "keys/keys_sites.h"
#include "patch/patch.h"
#include "registry/registry.h"
#include "runtime/test_util.h"
#include "session/core.h"

extern "C" const char __start_hush_jump[] __attribute__((weak, visibility("hidden")));
extern "C" const char __stop_hush_jump[] __attribute__((weak, visibility("hidden")));

namespace {

using keystest::Expected;
using keystest::kStaticKeys;
using keystest::SiteInfo;

// Every kind of site, and one of an event no test enables.
[[gnu::noinline]] int Work(int x) {
  HUSH_SPAN(keys, work_span);
  const int r = Expected(x);
  HUSH_TRACE(keys, work, x, r);
  HUSH_COUNTER(keys, work_counter, r);
  HUSH_INSTANT(keys, work_instant);
  HUSH_TRACE(keys, idle, x);
  return r;
}

[[gnu::noinline]] int LateLocal(int x) {
  HUSH_TRACE(keys, late, x);
  return Expected(x);
}

std::vector<SiteInfo> OwnSites() {
  return keystest::DecodeTable(__start_hush_jump, __stop_hush_jump);
}

std::vector<SiteInfo> SitesOf(const std::vector<SiteInfo>& all, const std::string& event) {
  std::vector<SiteInfo> out;
  for (const SiteInfo& s : all) {
    if (s.event == event) out.push_back(s);
  }
  return out;
}
std::vector<SiteInfo> SitesOf(const std::string& event) { return SitesOf(OwnSites(), event); }

// "" if every site of `event` is a NOP (want_jump false) or a JMP to its enabled block.
std::string CheckSites(const std::vector<SiteInfo>& sites, bool want_jump) {
  std::string bad;
  for (const SiteInfo& s : sites) {
    if (want_jump ? !s.IsJumpToTarget() : !s.IsNop()) {
      char buf[128];
      const auto* p = reinterpret_cast<const std::uint8_t*>(s.addr);
      std::snprintf(buf, sizeof buf, "%s site %#lx: %02x %02x %02x %02x %02x; ", s.event.c_str(),
                    static_cast<unsigned long>(s.addr), p[0], p[1], p[2], p[3], p[4]);
      bad += buf;
    }
  }
  return bad;
}

std::unique_ptr<hush::Session> Start(const std::string& dir, std::vector<std::string> events,
                                     std::size_t buffer = std::size_t{1} << 20) {
  hush::SessionOptions o;
  o.events = std::move(events);
  o.output_dir = dir;
  o.mode = hush::Mode::kStream;
  o.buffer_size = buffer;
  std::string error;
  auto s = hush::Session::Start(o, &error);
  EXPECT_NE(s, nullptr) << "Session::Start(" << dir << "): " << error;
  return s;
}

// One event line of the babeltrace2 CLI's text output:
//   [time] (+delta) host:proc:(pid) provider:name: { context }, { payload }
struct CliEvent {
  std::string name;
  std::string payload;
  // The integer value of `field` in the payload ("x = 5"); INT64_MIN if absent.
  std::int64_t Int(const std::string& field) const {
    for (const char* sep : {"{ ", ", "}) {
      const std::size_t at = payload.find(sep + field + " = ");
      if (at != std::string::npos) {
        return std::strtoll(payload.c_str() + at + std::strlen(sep) + field.size() + 3, nullptr,
                            10);
      }
    }
    return INT64_MIN;
  }
};

std::vector<CliEvent> ReadWithCli(const std::string& dir, std::string* error) {
  const hushtest::ProcessResult r = hushtest::RunBabeltrace(dir);
  std::vector<CliEvent> out;
  if (!r.exited || r.exit_code != 0) {
    *error = r.Describe();
    return out;
  }
  std::size_t pos = 0;
  while (pos < r.out.size()) {
    std::size_t end = r.out.find('\n', pos);
    if (end == std::string::npos) end = r.out.size();
    const std::string line = r.out.substr(pos, end - pos);
    pos = end + 1;
    // The fourth space-separated token is "provider:name:".
    std::size_t t = 0;
    for (int i = 0; i < 3 && t != std::string::npos; ++i) t = line.find(' ', t + 1);
    if (t == std::string::npos) continue;
    const std::size_t name_end = line.find(": ", t + 1);
    if (name_end == std::string::npos) continue;
    CliEvent e;
    e.name = line.substr(t + 1, name_end - t - 1);
    const std::size_t last = line.rfind("{ ");
    if (last != std::string::npos) e.payload = line.substr(last);
    out.push_back(e);
  }
  return out;
}

std::size_t Count(const std::vector<CliEvent>& events, const std::string& name) {
  return static_cast<std::size_t>(std::count_if(events.begin(), events.end(),
                                                [&](const CliEvent& e) { return e.name == name; }));
}

// Runs `fn` on a new thread and waits for it. Tests whose traces are checked emit from a thread
// that never emitted in an earlier session: a thread that emitted in a stopped session and emits
// again within 2^24 cycles keeps writing into the stopped session's ring (the runtime bug
// "ThreadOfAStoppedSessionEmitsIntoTheNextSessionWithoutCrashing" in
// tests/runtime/session_test.cc).
template <typename Fn>
void OnFreshThread(Fn fn) {
  std::thread(fn).join();
}

// Runs Work() in `threads` threads until `stop`; counts calls and wrong results. Thread t calls
// Work(x) with x from (t + 1) * kWorkerBase on.
constexpr int kWorkerBase = 1000000;
class Workers {
 public:
  explicit Workers(int threads) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, t] {
        for (int i = (t + 1) * kWorkerBase; !stop_.load(std::memory_order_relaxed); ++i) {
          if (Work(i) != Expected(i)) wrong_.fetch_add(1, std::memory_order_relaxed);
          calls_.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
  }
  ~Workers() { Join(); }
  void Join() {
    stop_.store(true);
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  std::uint64_t calls() const { return calls_.load(); }
  std::uint64_t wrong() const { return wrong_.load(); }
  void WaitForCalls(std::uint64_t n) const {
    while (calls() < n) std::this_thread::yield();
  }

 private:
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> calls_{0};
  std::atomic<std::uint64_t> wrong_{0};
};

// ---------------------------------------------------------------------------------------------
// The table and the bytes at the sites
// ---------------------------------------------------------------------------------------------

// A page-aligned function of its own page (the page after it holds nothing else of interest).
extern "C" [[gnu::noinline, gnu::aligned(4096)]] int HushPrepareProbe(int x) { return x * 7 + 3; }

// Page-map entry of the page holding `addr` (/proc/self/pagemap: bit 63 present, bit 61 a file
// or shared page, i.e. not a private copy).
std::uint64_t PageMapEntry(const void* addr) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  std::uint64_t entry = 0;
  if (fd >= 0) {
    const auto index = reinterpret_cast<std::uintptr_t>(addr) / page;
    if (::pread(fd, &entry, sizeof entry, static_cast<off_t>(index * sizeof entry)) != 8) entry = 0;
    ::close(fd);
  }
  return entry;
}

// The permissions of the /proc/self/maps line holding `addr` ("" if none).
std::string MappingPerms(const void* addr) {
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  const std::string maps = hushtest::ReadFile("/proc/self/maps");
  std::size_t at = 0;
  while (at < maps.size()) {
    const std::size_t eol = std::min(maps.find('\n', at), maps.size());
    const std::string line = maps.substr(at, eol - at);
    at = eol + 1;
    unsigned long lo = 0, hi = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) == 3 && a >= lo && a < hi) {
      return perms;
    }
  }
  return "";
}

// Before anything in this process is patched: PrepareCode turns the text page of a site into a
// private copy (what the first write of a batch would do) with the same bytes, and leaves it RX.
TEST(KeysPrepare, PrepareCodeCopiesTheTextPageUnchangedAndLeavesItReadExecute) {
  auto* fn = reinterpret_cast<const std::uint8_t*>(&HushPrepareProbe);
  ASSERT_EQ(HushPrepareProbe(5), 38);  // maps the page
  const std::uint64_t before = PageMapEntry(fn);
  ASSERT_NE(before >> 63, 0u) << "page not present";
  ASSERT_NE((before >> 61) & 1, 0u) << "the probe's page is already a private copy";
  const std::vector<std::uint8_t> bytes(fn, fn + 64);
  hush::patch::CodeSite site;
  site.addr = reinterpret_cast<std::uintptr_t>(fn);
  site.resume = site.addr + 5;
  hush::patch::PrepareCode({&site, 1});
  // Whether MADV_POPULATE_WRITE works here, asked on pages of our own.
  if (const std::string why = hushtest::PopulateWriteProblem(); !why.empty()) GTEST_SKIP() << why;
  const std::uint64_t after = PageMapEntry(fn);
  EXPECT_EQ((after >> 61) & 1, 0u) << "still the file's page, not a private copy";
  EXPECT_NE(after >> 63, 0u);
  EXPECT_EQ(std::vector<std::uint8_t>(fn, fn + 64), bytes);
  EXPECT_EQ(MappingPerms(fn).substr(0, 3), "r-x");
  EXPECT_EQ(HushPrepareProbe(6), 45);
}

// Runs before this process has patched anything (the first tests of the file).
TEST(KeysSites, AreNopsBeforeAnySession) {
  if (!kStaticKeys) {
    EXPECT_TRUE(OwnSites().empty()) << "load-and-branch sites have no hush_jump entries";
    return;
  }
  EXPECT_EQ(hush::patch::GetStats().batches, 0u) << "run this test first (no --gtest_shuffle)";
  const std::vector<SiteInfo> all = OwnSites();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(CheckSites(all, false), "");
}

TEST(KeysSites, TableHasEverySiteKindAndTheRegistryFindsThem) {
  if (!kStaticKeys) GTEST_SKIP() << "HUSH_NO_STATIC_KEYS: no hush_jump table";
  EXPECT_GE(SitesOf("keys:work").size(), 1u);
  EXPECT_GE(SitesOf("keys:work_span").size(), 2u) << "begin and end";
  EXPECT_GE(SitesOf("keys:work_counter").size(), 1u);
  EXPECT_GE(SitesOf("keys:work_instant").size(), 1u);
  EXPECT_GE(SitesOf("keys:idle").size(), 1u);
  EXPECT_GE(SitesOf("keys:late").size(), 1u);
  for (const SiteInfo& s : OwnSites()) {
    EXPECT_NE(s.addr, s.target) << s.event;
    // The enabled block is code of this binary, within jmp rel32 reach.
    EXPECT_LT(s.target > s.addr ? s.target - s.addr : s.addr - s.target, std::uintptr_t{1} << 31);
  }
  hush::registry::Registry registry;
  registry.Scan();
  std::set<std::uintptr_t> found;
  for (const hush::registry::Event& e : registry.events()) {
    for (const hush::patch::Site& s : e.sites) found.insert(s.addr);
  }
  for (const SiteInfo& s : OwnSites()) EXPECT_EQ(found.count(s.addr), 1u) << s.event;
}

TEST(KeysSites, JumpWhileEnabledAndAreNopsAgainAfterStop) {
  hushtest::TempDir dir("keys");
  auto s = Start(dir.Sub("trace"), {"keys:work", "keys:work_span"});
  ASSERT_NE(s, nullptr);
  if (kStaticKeys) {
    EXPECT_EQ(CheckSites(SitesOf("keys:work"), true), "");
    EXPECT_EQ(CheckSites(SitesOf("keys:work_span"), true), "");
    EXPECT_EQ(CheckSites(SitesOf("keys:idle"), false), "");
    EXPECT_EQ(CheckSites(SitesOf("keys:work_counter"), false), "");
    EXPECT_EQ(CheckSites(SitesOf("keys:work_instant"), false), "");
  }
  EXPECT_EQ(Work(7), Expected(7));
  s->Stop();
  if (kStaticKeys) {
    EXPECT_EQ(CheckSites(OwnSites(), false), "");
  }
  EXPECT_EQ(Work(8), Expected(8));
}

// ---------------------------------------------------------------------------------------------
// Events through patched sites
// ---------------------------------------------------------------------------------------------

TEST(KeysEvents, AreRecordedThroughPatchedSites) {
  hushtest::TempDir dir("keys");
  auto s = Start(dir.Sub("trace"), {"keys:work*"});
  ASSERT_NE(s, nullptr);
  constexpr int kN = 100;
  OnFreshThread([] {
    for (int i = 0; i < kN; ++i) ASSERT_EQ(Work(i), Expected(i));
  });
  s->Stop();
  std::string error;
  const std::vector<CliEvent> events = ReadWithCli(s->output_dir(), &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(Count(events, "keys:work"), std::size_t{kN});
  EXPECT_EQ(Count(events, "keys:work_span"), std::size_t{2 * kN}) << "begin and end";
  EXPECT_EQ(Count(events, "keys:work_counter"), std::size_t{kN});
  EXPECT_EQ(Count(events, "keys:work_instant"), std::size_t{kN});
  EXPECT_EQ(Count(events, "keys:idle"), 0u);
  int next = 0;
  for (const CliEvent& e : events) {
    if (e.name != "keys:work") continue;
    EXPECT_EQ(e.Int("x"), next) << e.payload;
    EXPECT_EQ(e.Int("r"), Expected(next)) << e.payload;
    ++next;
  }
}

// ---------------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------------

// Two threads run the traced function in a tight loop while this thread enables and disables
// its events thousands of times (through the registry: no session, so the enabled blocks run the
// event path up to the slow path, which drops the events).
TEST(KeysConcurrency, ThreadsRunPatchedCodeWhileEventsAreToggled) {
  hush::registry::Registry& registry = hush::registry::Global();
  registry.Scan();
  const hush::patch::Stats before = hush::patch::GetStats();
  Workers workers(2);
  workers.WaitForCalls(1000);
  constexpr int kToggles = 2000;
  const std::vector<SiteInfo> work_sites = SitesOf("keys:work");
  for (int i = 0; i < kToggles; ++i) {
    registry.Enable({"keys:work*"});
    if (kStaticKeys && i % 100 == 0) {
      ASSERT_EQ(CheckSites(work_sites, true), "") << i;
    }
    registry.DisableAll();
    if (kStaticKeys && i % 100 == 0) {
      ASSERT_EQ(CheckSites(work_sites, false), "") << i;
    }
  }
  workers.Join();
  const hush::patch::Stats after = hush::patch::GetStats();
  EXPECT_EQ(workers.wrong(), 0u);
  EXPECT_GT(workers.calls(), 1000u);
  EXPECT_FALSE(after.failed);
  if (kStaticKeys) {
    EXPECT_EQ(after.batches - before.batches, 2u * kToggles);
  }
  std::printf("%d toggles, %llu calls, %llu traps stepped over\n", kToggles,
              static_cast<unsigned long long>(workers.calls()),
              static_cast<unsigned long long>(after.traps - before.traps));
}

// Sessions start while threads run the traced function (Start patches the sites under them):
// every trace is readable and every recorded event carries a right result. New threads for every
// session (see OnFreshThread), stopped before the session: a thread inside an event while
// Core::Stop() runs may write past its ring (Stop clears ThreadWriter::end but not ::pos, the
// reported runtime bug above; ASan catches the overflow, TSan the race on the ring's packet
// state). Un-patching under running threads is covered by the toggle test above.
TEST(KeysConcurrency, SessionsStartAndStopWhileThreadsRun) {
  hushtest::TempDir dir("keys");
  constexpr int kSessions = 40;
  std::vector<std::string> dirs;
  std::uint64_t wrong = 0;
  for (int i = 0; i < kSessions; ++i) {
    Workers workers(2);
    workers.WaitForCalls(100);
    dirs.push_back(dir.Sub("t" + std::to_string(i)));
    auto s = Start(dirs.back(), {"keys:work", "keys:work_span"}, 64 * 1024);
    ASSERT_NE(s, nullptr);
    const std::uint64_t calls = workers.calls();
    workers.WaitForCalls(calls + 200);
    workers.Join();
    s->Stop();
    wrong += workers.wrong();
  }
  EXPECT_EQ(wrong, 0u);
  std::size_t recorded = 0;
  for (int i = 0; i < kSessions; i += 8) {
    std::string error;
    const std::vector<CliEvent> events = ReadWithCli(dirs[static_cast<std::size_t>(i)], &error);
    ASSERT_EQ(error, "") << dirs[static_cast<std::size_t>(i)];
    for (const CliEvent& e : events) {
      if (e.name != "keys:work") continue;
      ++recorded;
      ASSERT_EQ(e.Int("r"), Expected(static_cast<int>(e.Int("x")))) << e.payload;
    }
  }
  EXPECT_GT(recorded, 0u);
  if (kStaticKeys) {
    EXPECT_EQ(CheckSites(OwnSites(), false), "");
  }
}

// ---------------------------------------------------------------------------------------------
// Traps at sites being patched
// ---------------------------------------------------------------------------------------------

int g_hook_base = 0;
std::vector<int> g_hook_errors;
void CallWorkInStepHook(int step) {
  const int x = g_hook_base + step;
  g_hook_errors.push_back(Work(x) - Expected(x));
}

// The patching thread itself runs the traced function right after steps 2, 3 and 4 of a batch.
// After 2 and 3 the sites start with int3: every call traps, and the SIGTRAP handler must resume
// where the new instruction goes: past the site while disabling, into the enabled block while
// enabling (so those events are recorded).
TEST(KeysTraps, ThreadAtASiteBeingPatchedResumesInTheNewState) {
  if (!kStaticKeys) GTEST_SKIP() << "HUSH_NO_STATIC_KEYS: nothing is patched";
  hushtest::TempDir dir("keys");
  auto s = Start(dir.Sub("trace"), {"keys:work"});
  ASSERT_NE(s, nullptr);
  hush::patch::Stats before, after;
  OnFreshThread([&] {
    ASSERT_EQ(Work(1), Expected(1));  // attaches this thread to a ring first (takes the mutex)
    hush::registry::Registry& registry = hush::registry::Global();
    before = hush::patch::GetStats();
    g_hook_errors.clear();
    hush::patch::SetStepHookForTesting(CallWorkInStepHook);
    g_hook_base = 1000;
    registry.DisableAll();  // Work(1002), Work(1003), Work(1004): not recorded
    g_hook_base = 2000;
    registry.Enable({"keys:work"});  // Work(2002), Work(2003), Work(2004): recorded
    hush::patch::SetStepHookForTesting(nullptr);
    after = hush::patch::GetStats();
  });
  s->Stop();
  std::string error;
  std::vector<std::int64_t> xs;
  for (const CliEvent& e : ReadWithCli(s->output_dir(), &error)) {
    if (e.name == "keys:work") xs.push_back(e.Int("x"));
  }
  ASSERT_EQ(error, "");
  if (keystest::kOneStoreSites) {
    // aarch64: NOP <-> B in one store, no trap steps: the hook runs after step 4 only, and no
    // call ever traps.
    EXPECT_EQ(g_hook_errors, std::vector<int>(2, 0));
    EXPECT_EQ(after.traps - before.traps, 0u) << "one-store sites never hold a trap";
    EXPECT_EQ(xs, (std::vector<std::int64_t>{1, 2004}));
    return;
  }
  EXPECT_EQ(g_hook_errors, std::vector<int>(6, 0));
  EXPECT_GE(after.traps - before.traps, 4u) << "calls after steps 2 and 3 trap";
  EXPECT_EQ(xs, (std::vector<std::int64_t>{1, 2002, 2003, 2004}));
}

// ---------------------------------------------------------------------------------------------
// SIGTRAP: the program's own disposition still applies
// ---------------------------------------------------------------------------------------------

std::atomic<int> g_program_traps{0};
void ProgramTrapHandler(int, siginfo_t* info, void* uc) {
  g_program_traps.fetch_add(1);
#if defined(__aarch64__)
  // BRK leaves the PC on itself (int3 moves it past): step over the program's own breakpoint.
  if (info->si_code > 0) static_cast<ucontext_t*>(uc)->uc_mcontext.pc += 4;
#else
  static_cast<void>(info);
  static_cast<void>(uc);
#endif
}

// A breakpoint instruction of the program's own, not at a site.
void ProgramBreakpoint() {
#if defined(__aarch64__)
  asm volatile("brk #0x1");
#else
  asm volatile("int3");
#endif
}

void InstallProgramHandler() {
  struct sigaction sa = {};
  sa.sa_sigaction = ProgramTrapHandler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(::sigaction(SIGTRAP, &sa, nullptr), 0);
}

void RestoreDefaultTrap() {
  struct sigaction sa = {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTRAP, &sa, nullptr);
}

TEST(KeysSignals, ProgramHandlerInstalledBeforePatchingGetsItsTraps) {
  InstallProgramHandler();
  g_program_traps = 0;
  hushtest::TempDir dir("keys");
  auto s = Start(dir.Sub("trace"), {"keys:work"});  // the first batch chains to our handler
  ASSERT_NE(s, nullptr);
  ::raise(SIGTRAP);
  EXPECT_EQ(g_program_traps.load(), 1);
  ProgramBreakpoint();
  EXPECT_EQ(g_program_traps.load(), 2);
  EXPECT_EQ(Work(3), Expected(3));
  s->Stop();
  ::raise(SIGTRAP);
  EXPECT_EQ(g_program_traps.load(), 3);
  RestoreDefaultTrap();
}

TEST(KeysSignals, ProgramHandlerInstalledAfterPatchingGetsItsTrapsAndPatchingGoesOn) {
  hushtest::TempDir dir("keys");
  auto first = Start(dir.Sub("first"), {"keys:work"});
  ASSERT_NE(first, nullptr);
  first->Stop();
  InstallProgramHandler();  // replaces the patcher's handler
  g_program_traps = 0;
  ::raise(SIGTRAP);
  EXPECT_EQ(g_program_traps.load(), 1);
  {
    // The next batches find their handler replaced, re-install it and chain to the program's,
    // while threads run through the sites being patched.
    Workers workers(2);
    hush::registry::Registry& registry = hush::registry::Global();
    registry.Scan();
    for (int i = 0; i < 200; ++i) {
      registry.Enable({"keys:work*"});
      registry.DisableAll();
    }
    workers.Join();
    EXPECT_EQ(workers.wrong(), 0u);
  }
  ::raise(SIGTRAP);
  ProgramBreakpoint();
  EXPECT_EQ(g_program_traps.load(), 3);
  RestoreDefaultTrap();
}

TEST(KeysSignals, DefaultSigtrapActionStillKillsTheProcess) {
  // Made (and removed) by the parent: the child dies of the signal, its destructors never run.
  hushtest::TempDir dir("keys-child");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const struct rlimit no_core = {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    RestoreDefaultTrap();
    auto s = Start(dir.Sub("trace"), {"keys:work"});  // installs the handler over SIG_DFL
    if (s == nullptr) ::_exit(2);
    Work(1);
    ::raise(SIGTRAP);  // must kill the process
    ::_exit(3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTRAP);
}

// A program handler that replaced the patcher's and chains to the disposition it replaced (the
// patcher's) must not loop once the next batch installs the patcher's handler over it again:
// patcher -> program -> patcher -> the disposition from before (here SIG_DFL: the process dies).
int g_chain_pipe = -1;
struct sigaction g_saved_by_program;
void ChainingProgramHandler(int sig, siginfo_t* info, void* ucontext) {
  const char byte = 'x';
  (void)!::write(g_chain_pipe, &byte, 1);
  if ((g_saved_by_program.sa_flags & SA_SIGINFO) && g_saved_by_program.sa_sigaction != nullptr) {
    g_saved_by_program.sa_sigaction(sig, info, ucontext);
  }
}

TEST(KeysSignals, ProgramHandlerChainingBackToThePatcherDoesNotLoop) {
  if (!kStaticKeys) GTEST_SKIP() << "HUSH_NO_STATIC_KEYS: no SIGTRAP handler is installed";
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  hushtest::TempDir dir("keys-child");  // the parent's: the child dies of the signal
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    g_chain_pipe = fds[1];
    const struct rlimit no_core = {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    auto s = Start(dir.Sub("trace"), {"keys:work"});  // the patcher's handler is current
    if (s == nullptr) ::_exit(2);
    struct sigaction sa = {};
    sa.sa_sigaction = ChainingProgramHandler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTRAP, &sa, &g_saved_by_program);  // saves the patcher's
    s->Stop();  // a batch: the patcher's handler goes on top again, chaining to the program's
    ::raise(SIGTRAP);
    ::_exit(3);
  }
  ::close(fds[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  std::string written;
  char buf[64];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    written.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTRAP) << "SIGSEGV here: the chain looped until the stack ran out";
  EXPECT_EQ(written, "x") << "the program's handler ran once";
}

// ---------------------------------------------------------------------------------------------
// fork
// ---------------------------------------------------------------------------------------------

TEST(KeysFork, ChildRunsTheTracedFunctionAndGetsItsSitesBack) {
  hushtest::TempDir dir("keys");
  auto s = Start(dir.Sub("trace"), {"keys:work"});
  ASSERT_NE(s, nullptr);
  OnFreshThread([] {
    for (int i = 0; i < 10; ++i) Work(i);
  });
  hushtest::ChildReport report;
  std::string failure;
  ASSERT_TRUE(hushtest::RunInChild(
      [] {
        hushtest::ChildReport r;
        std::uint64_t wrong = 0;
        for (int i = 0; i < 100000; ++i) wrong += Work(i) != Expected(i);
        r.numbers.push_back(wrong);
        if (kStaticKeys) r.error = CheckSites(OwnSites(), false);  // un-patched in the child
        return r;
      },
      &report, &failure))
      << failure;
  ASSERT_EQ(report.numbers.size(), 1u);
  EXPECT_EQ(report.numbers[0], 0u);
  EXPECT_EQ(report.error, "");
  if (kStaticKeys) {
    EXPECT_EQ(CheckSites(SitesOf("keys:work"), true), "") << "the parent's stay";
  }
  OnFreshThread([] {
    for (int i = 10; i < 20; ++i) Work(i);
  });
  s->Stop();
  std::string error;
  const std::vector<CliEvent> events = ReadWithCli(s->output_dir(), &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(Count(events, "keys:work"), 20u) << "the parent's events, none of the child's";
}

// ---------------------------------------------------------------------------------------------
// A module found after its event was enabled
// ---------------------------------------------------------------------------------------------

TEST(KeysLate, ModuleScannedWhileItsEventIsEnabledGetsItsSitesPatched) {
  hushtest::TempDir dir("keys");
  auto s = Start(dir.Sub("trace"), {"keys:late"});
  ASSERT_NE(s, nullptr);
  OnFreshThread([&] {
    EXPECT_EQ(LateLocal(1), Expected(1));
    void* module = ::dlopen(HUSH_KEYS_MODULE, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(module, nullptr) << ::dlerror();
    auto late = reinterpret_cast<int (*)(int)>(::dlsym(module, "keys_module_late"));
    auto table = reinterpret_cast<void (*)(const char**, const char**)>(
        ::dlsym(module, "keys_module_table"));
    ASSERT_NE(late, nullptr);
    ASSERT_NE(table, nullptr);
    const char* start = nullptr;
    const char* stop = nullptr;
    table(&start, &stop);
    const std::vector<SiteInfo> sites = SitesOf(keystest::DecodeTable(start, stop), "keys:late");
    EXPECT_EQ(sites.empty(), !kStaticKeys);
    EXPECT_EQ(CheckSites(sites, false), "") << "not scanned yet";
    EXPECT_EQ(late(100), Expected(100));  // not recorded: the module is unknown to the registry

    // What a session does when it finds new modules (the session mutex is not needed here: this
    // thread is the only one using the registry).
    hush::registry::Global().Scan();
    EXPECT_EQ(CheckSites(sites, true), "");
    EXPECT_EQ(late(200), Expected(200));
    EXPECT_EQ(LateLocal(2), Expected(2));
    s->Stop();
    EXPECT_EQ(CheckSites(sites, false), "");
    EXPECT_EQ(late(300), Expected(300));
  });

  std::string error;
  const std::vector<CliEvent> events = ReadWithCli(s->output_dir(), &error);
  ASSERT_EQ(error, "");
  std::vector<std::int64_t> xs;
  for (const CliEvent& e : events) {
    if (e.name == "keys:late") xs.push_back(e.Int("x"));
  }
  // Fallback sites read the state word: the module's descriptor is enabled by the same Scan.
  EXPECT_EQ(xs, (std::vector<std::int64_t>{1, 200, 2}));
  // The module stays loaded: the registry keeps its descriptors (dlclose is not supported).
}

// ---------------------------------------------------------------------------------------------
// Text that cannot be written
// ---------------------------------------------------------------------------------------------

// Installs a seccomp filter on this (single-threaded) process: mprotect() asking for write and
// execute together fails with EACCES, and, if `deny_pwrite`, pwrite64() fails with EPERM (the
// runtime uses pwrite only for /proc/self/mem).
#if defined(__aarch64__)
constexpr std::uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr std::uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#endif

// Whether this process may install a seccomp filter: qemu-user refuses PR_SET_SECCOMP (EINVAL),
// since a guest filter would apply to the emulator's own host system calls. Probed in a child.
bool SeccompFiltersWork() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog prog = {1, allow};
    const bool ok = ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
                    ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

bool RefuseWritableText(bool deny_pwrite) {
  const std::uint32_t pwrite_action =
      deny_pwrite ? SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA) : SECCOMP_RET_ALLOW;
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pwrite64, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, pwrite_action),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),  // prot, low half
      BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// In a child, after `setup` (false: it failed, errno says why): start two sessions with
// keys:work enabled, stderr into a file, 50 calls per session on this thread while a worker runs
// the sites too. Reports: [wrong results, keys:work events of this thread recorded, failed flag,
// flag(stats)], error = the child's stderr (or what went wrong).
hushtest::ChildReport RunTwoSessions(const std::string& dir, const std::function<bool()>& setup,
                                     bool (*flag)(const hush::patch::Stats&)) {
  hushtest::ChildReport r;
  const std::string err_path = dir + "/stderr";
  const int fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ::dup2(fd, 2) < 0 || !setup()) {
    r.error = "setup failed: " + std::string(std::strerror(errno));
    return r;
  }
  std::uint64_t wrong = 0;
  std::uint64_t recorded = 0;
  for (int round = 0; round < 2; ++round) {
    const std::string trace = dir + "/trace" + std::to_string(round);
    hush::SessionOptions o;
    o.events = {"keys:work"};
    o.output_dir = trace;
    std::string error;
    auto s = hush::Session::Start(o, &error);
    if (s == nullptr) {
      r.error = "Session::Start: " + error;
      return r;
    }
    {
      Workers workers(1);  // a thread in the sites while they are (not) patched
      OnFreshThread([&] {
        for (int i = 0; i < 50; ++i) wrong += Work(i) != Expected(i);
      });
      workers.Join();
      wrong += workers.wrong();
    }
    s->Stop();
    std::string cli_error;
    for (const CliEvent& e : ReadWithCli(trace, &cli_error)) {
      recorded += e.name == "keys:work" && e.Int("x") < kWorkerBase;  // this thread's
    }
    if (!cli_error.empty()) r.error += cli_error;
  }
  const hush::patch::Stats stats = hush::patch::GetStats();
  r.numbers = {wrong, recorded, stats.failed ? 1u : 0u, flag(stats) ? 1u : 0u};
  r.error += hushtest::ReadFile(err_path);
  return r;
}

// Under the seccomp filter; the flag is proc_mem_used.
hushtest::ChildReport RunWithRefusedText(const std::string& dir, bool deny_pwrite) {
  return RunTwoSessions(
      dir, [deny_pwrite] { return RefuseWritableText(deny_pwrite); },
      [](const hush::patch::Stats& s) { return s.proc_mem_used; });
}

TEST(KeysUnwritableText, WarnsOnceAndStaticSitesStayDisabled) {
  if (!SeccompFiltersWork()) {
    GTEST_SKIP() << "seccomp filters unavailable here (qemu-user refuses PR_SET_SECCOMP): "
                    "refused text cannot be simulated";
  }
  hushtest::TempDir dir("keys");
  hushtest::ChildReport report;
  std::string failure;
  ASSERT_TRUE(
      hushtest::RunInChild([&] { return RunWithRefusedText(dir.path(), true); }, &report, &failure))
      << failure;
  ASSERT_EQ(report.numbers.size(), 4u) << report.error;
  EXPECT_EQ(report.numbers[0], 0u) << "wrong results";
  const std::string warning =
      "hushtrace: cannot patch code (mprotect: Permission denied; /proc/self/mem: Operation not "
      "permitted); static-key sites stay disabled, rebuild with -DHUSH_STATIC_KEYS=OFF for "
      "load-and-branch sites\n";
  if (kStaticKeys) {
    EXPECT_EQ(report.numbers[1], 0u) << "events recorded through sites that could not be patched";
    EXPECT_EQ(report.numbers[2], 1u);
    EXPECT_EQ(report.error, warning) << "exactly one warning over two sessions";
  } else {
    // The fallback build exists for exactly this: nothing to patch, everything recorded.
    EXPECT_EQ(report.numbers[1], 100u);
    EXPECT_EQ(report.numbers[2], 0u);
    EXPECT_EQ(report.error, "");
  }
}

TEST(KeysUnwritableText, PatchesThroughProcSelfMemWhenMprotectIsRefused) {
  if (!SeccompFiltersWork()) {
    GTEST_SKIP() << "seccomp filters unavailable here (qemu-user refuses PR_SET_SECCOMP): "
                    "refused text cannot be simulated";
  }
  hushtest::TempDir dir("keys");
  hushtest::ChildReport report;
  std::string failure;
  ASSERT_TRUE(hushtest::RunInChild([&] { return RunWithRefusedText(dir.path(), false); }, &report,
                                   &failure))
      << failure;
  ASSERT_EQ(report.numbers.size(), 4u) << report.error;
  EXPECT_EQ(report.numbers[0], 0u) << "wrong results";
  EXPECT_EQ(report.numbers[1], 100u) << "every event of the two sessions";
  EXPECT_EQ(report.numbers[2], 0u) << report.error;
  EXPECT_EQ(report.numbers[3], kStaticKeys ? 1u : 0u);
  EXPECT_EQ(report.error, "");
}

// ---------------------------------------------------------------------------------------------
// No membarrier SYNC_CORE (a kernel without it, an emulator)
// ---------------------------------------------------------------------------------------------

// In a child: the patcher registers again as if the kernel refused SYNC_CORE, then the two
// sessions of RunTwoSessions; the flag is sync_core_missing.
hushtest::ChildReport RunWithoutSyncCore(const std::string& dir) {
  return RunTwoSessions(
      dir,
      [] {
        hush::patch::RefuseSyncCoreForTesting();
        return true;
      },
      [](const hush::patch::Stats& s) { return s.sync_core_missing; });
}

// aarch64 patches with the plain expedited membarrier (its IPI's exception return synchronizes
// the context) and says so once; x86-64 has no such fallback and warns that sites stay disabled.
TEST(KeysNoSyncCore, FallsBackWhereTheArchitectureAllowsItAndSaysSoOnce) {
  if (!kStaticKeys) GTEST_SKIP() << "HUSH_NO_STATIC_KEYS: nothing is patched";
  hushtest::TempDir dir("keys");
  hushtest::ChildReport report;
  std::string failure;
  ASSERT_TRUE(
      hushtest::RunInChild([&] { return RunWithoutSyncCore(dir.path()); }, &report, &failure))
      << failure;
  ASSERT_EQ(report.numbers.size(), 4u) << report.error;
  EXPECT_EQ(report.numbers[0], 0u) << "wrong results";
#if defined(__aarch64__)
  EXPECT_EQ(report.numbers[1], 100u) << "every event of the two sessions";
  EXPECT_EQ(report.numbers[2], 0u) << report.error;
  EXPECT_EQ(report.numbers[3], 1u);
  EXPECT_EQ(report.error,
            "hushtrace: membarrier SYNC_CORE unavailable (Invalid argument); patching with "
            "MEMBARRIER_CMD_PRIVATE_EXPEDITED, whose IPI returns through a "
            "context-synchronizing exception return on this architecture\n")
      << "exactly one message over two sessions";
#else
  EXPECT_EQ(report.numbers[1], 0u) << "events recorded through sites that could not be patched";
  EXPECT_EQ(report.numbers[2], 1u);
  EXPECT_EQ(report.numbers[3], 0u);
  EXPECT_EQ(report.error,
            "hushtrace: cannot patch code (membarrier SYNC_CORE registration: Invalid argument); "
            "static-key sites stay disabled, rebuild with -DHUSH_STATIC_KEYS=OFF for "
            "load-and-branch sites\n");
#endif
}

}  // namespace
