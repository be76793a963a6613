// One patch batch: rewrite many static-key sites while other threads may be executing them.
//
// The step list (Linux's text_poke_bp() in arch/x86/kernel/alternative.c, done from user space):
//
//   0. Work list: the sites whose bytes differ from the requested instruction, sorted by address,
//      without duplicates. On the first batch: register for membarrier SYNC_CORE, install the
//      SIGTRAP handler (trap.h).
//   1. mprotect the pages of the batch RWX; a page mprotect refuses is written through
//      /proc/self/mem instead. Publish the batch to the SIGTRAP handler.
//   2. Write the trap opcode (int3, 0xcc) over byte 0 of every site.                    sync
//   3. Write bytes 1..4 of the new instruction of every site.                            sync
//   4. Write byte 0 of the new instruction of every site.                                sync
//   5. Withdraw the batch from the handler (waiting out handlers still reading it); pages RX.
//
// sync = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE): every CPU running a thread of
// this process executes a core-serializing instruction before the call returns; threads not
// running serialize on their way back to user space. What breaks without each one:
//   - after 2: a CPU that fetched the old byte 0 before the int3 landed could combine it with the
//     new bytes of step 3, e.g. 0f (the NOP's opcode) followed by a rel32: a different, torn
//     instruction of any length -> SIGILL, SIGSEGV or silent garbage.
//   - after 3: a CPU could fetch the new byte 0 (e9) of step 4 with stale bytes 1..4 still in its
//     pipeline: a jump to a wrong address.
//   - after 4: a thread on another CPU could go on running the old instruction after SetSites()
//     returned: events emitted after Session::Start() returns could be missed, and Stop() could
//     not rely on its sites being NOPs. (A stale int3 is harmless: see the late trap in trap.h.)
//
// Three syncs per batch, whatever the number of sites: ~30-100 us for 10,000 sites, where
// patching them one by one takes 0.15-0.9 s (docs/benchmarks.md).
#include "patch/patch.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/errno_message.h"
#include "base/membarrier.h"
#include "base/unique_fd.h"
#include "patch/arch/arch.h"
#include "patch/trap.h"

namespace hush::patch {
namespace {

enum class Method : std::uint8_t { kStore, kProcMem, kSkip };

// 32 bytes: a 10,000-site batch walks this list about ten times.
struct Work {
  std::uintptr_t addr;
  std::uintptr_t resume;  // where a thread trapping at the site goes: the new state
  std::uint8_t bytes[arch::kMaxSiteSize];  // the new instruction
  std::uint8_t old_head[arch::kMaxHeadSize];
  Method method;
  bool failed;  // its bytes could not all be written; step 4 restored its old byte 0
};
static_assert(sizeof(Work) == 32);

std::mutex g_mu;  // one batch at a time; guards everything below except the counters
bool g_sync_registered = false;
int g_mem_fd = -1;
pid_t g_mem_pid = 0;  // the process g_mem_fd belongs to: a fork child must not use its parent's

// Counters: relaxed, statistics only.
std::atomic<std::uint64_t> g_batches{0};
std::atomic<std::uint64_t> g_sites_written{0};
std::atomic<bool> g_proc_mem_used{false};
std::atomic<bool> g_failed{false};
void (*g_step_hook)(int) = nullptr;  // tests only; patch mutex

void AfterStep(int step) {
  if (g_step_hook != nullptr) g_step_hook(step);
}

void Fail(const std::string& why) {
  if (!g_failed.exchange(true, std::memory_order_relaxed)) {
    std::fprintf(stderr,
                 "hushtrace: cannot patch code (%s); static-key sites stay disabled, rebuild with "
                 "-DHUSH_STATIC_KEYS=OFF for load-and-branch sites\n",
                 why.c_str());
  }
}

// The barrier of Sync(): SYNC_CORE, or on an architecture whose return from an interrupt is itself
// context-synchronizing (arch.h) the plain expedited one when the kernel has no SYNC_CORE (a
// kernel without CONFIG_ARCH_HAS_MEMBARRIER_SYNC_CORE, an emulator). The registration is the
// process's one (base/membarrier.h), shared with the grace periods.
bool g_sync_plain = false;                      // patch mutex
std::atomic<bool> g_sync_core_missing{false};  // statistics and tests (relaxed)

bool EnsureSyncCore(std::string* why) {
  if (g_sync_registered) return true;
  int err = 0;
  const base::Expedited e = base::RegisterExpedited(&err);
  if (e != base::Expedited::kSyncCore) {
    if (e != base::Expedited::kPlain || !arch::ExpeditedMembarrierSynchronizes()) {
      *why = base::ErrnoMessage("membarrier SYNC_CORE registration", err);
      return false;
    }
    g_sync_plain = true;
    if (!g_sync_core_missing.exchange(true, std::memory_order_relaxed)) {
      std::fprintf(stderr,
                   "hushtrace: membarrier SYNC_CORE unavailable (%s); patching with "
                   "MEMBARRIER_CMD_PRIVATE_EXPEDITED, whose IPI returns through a "
                   "context-synchronizing exception return on this architecture\n",
                   std::strerror(err));
    }
  }
  g_sync_registered = true;
  return true;
}

void Sync() {
  if (g_sync_plain ? base::PrivateExpeditedBarrier() : base::SyncCoreBarrier()) return;
  Fail(base::ErrnoMessage("membarrier SYNC_CORE", errno));
}

// Why sites could not be written, for the warning.
struct Reasons {
  std::string mprotect, mem;
  std::string Describe() const {
    if (mprotect.empty()) return mem.empty() ? "unknown error" : mem;
    return mem.empty() ? mprotect : mprotect + "; " + mem;
  }
};

bool OpenProcMem(std::string* why) {
  const pid_t pid = ::getpid();
  if (g_mem_fd >= 0 && g_mem_pid == pid) return true;
  // One inherited from the parent writes the parent's memory: replaced, and closed here.
  const base::UniqueFd inherited(std::exchange(g_mem_fd, ::open("/proc/self/mem", O_RDWR | O_CLOEXEC)));
  g_mem_pid = pid;
  if (g_mem_fd < 0) *why = base::ErrnoMessage("/proc/self/mem", errno);
  return g_mem_fd >= 0;
}

bool WriteText(Method method, std::uintptr_t addr, const std::uint8_t* bytes, std::size_t n) {
  if (method == Method::kStore) {
    arch::StoreCode(addr, bytes, n);
    return true;
  }
  if (method != Method::kProcMem) return false;
  // The kernel writes through a forced access (FOLL_FORCE), as a debugger's PTRACE_POKETEXT does.
  return ::pwrite(g_mem_fd, bytes, n, static_cast<off_t>(addr)) == static_cast<ssize_t>(n);
}

// A run of consecutive pages made writable for the batch.
struct PageRun {
  std::uintptr_t start, end;
  bool writable;
};

// The pages holding `size` bytes at each site's `addr`, as runs of consecutive pages. Sites in
// address order (a batch's work list) give sorted, merged runs; sites sorted only piecewise (one
// module after another) may give a run more than once, which costs its callers nothing.
template <typename Sites>
std::vector<PageRun> PageRunsOf(const Sites& sites, std::size_t size) {
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  std::vector<PageRun> runs;
  for (const auto& site : sites) {
    const std::uintptr_t first = site.addr & ~(page - 1);
    const std::uintptr_t end = ((site.addr + size - 1) & ~(page - 1)) + page;
    if (!runs.empty() && first >= runs.back().start && first <= runs.back().end) {
      runs.back().end = std::max(runs.back().end, end);
    } else {
      runs.push_back({first, end, false});
    }
  }
  return runs;
}

// Step 1: makes the pages of `work` writable, picks each site's write method and lists the sites
// that will be written (`addrs`, `resume`: for the SIGTRAP handler), in one pass.
std::vector<PageRun> PrepareText(std::vector<Work>& work, std::size_t size, Reasons* why,
                                 std::vector<std::uintptr_t>& addrs,
                                 std::vector<trap::Resume>& resume) {
  std::vector<PageRun> runs = PageRunsOf(work, size);  // work is sorted: runs are sorted too
  bool any_refused = false;
  for (PageRun& r : runs) {
    // RWX, not RW: other threads keep executing these pages during the batch.
    r.writable = ::mprotect(reinterpret_cast<void*>(r.start), r.end - r.start,
                            PROT_READ | PROT_WRITE | PROT_EXEC) == 0;
    if (!r.writable && !any_refused) {
      any_refused = true;
      why->mprotect = base::ErrnoMessage("mprotect", errno);
    }
  }
  const bool have_mem = any_refused && OpenProcMem(&why->mem);
  addrs.clear();
  resume.clear();
  std::size_t r = 0;
  for (Work& w : work) {
    while (runs[r].end <= w.addr) ++r;
    // A site spanning two runs would have merged them: one run holds the whole site.
    w.method = runs[r].writable ? Method::kStore : have_mem ? Method::kProcMem : Method::kSkip;
    if (w.method == Method::kSkip) continue;
    if (w.method == Method::kProcMem) g_proc_mem_used.store(true, std::memory_order_relaxed);
    addrs.push_back(w.addr);
    resume.push_back({w.addr, w.resume});
  }
  return runs;
}

void RestoreText(const std::vector<PageRun>& runs) {
  // Text is mapped RX (PT_LOAD R E); a site never lives in a writable segment.
  for (const PageRun& r : runs) {
    if (r.writable)
      ::mprotect(reinterpret_cast<void*>(r.start), r.end - r.start, PROT_READ | PROT_EXEC);
  }
}

// Per-batch scratch, kept between batches (g_mu): a 10,000-site batch would otherwise allocate
// and fault in fresh pages for its lists every time.
struct Scratch {
  std::vector<Work> work;
  std::vector<std::uintptr_t> addrs;
  std::vector<trap::Resume> resume;
};
Scratch* g_scratch = nullptr;

// Step 0 for static-key sites: the new instruction of each site; sites already in that state
// are left out.
bool BuildKeyWork(std::span<const Site> sites, bool enabled, std::vector<Work>& work) {
  const std::size_t size = arch::SiteSize();
  const std::size_t head = arch::HeadSize();
  bool ok = true;
  work.clear();
  for (const Site& s : sites) {
    Work w{};
    w.addr = s.addr;
    if (enabled) {
      if (!arch::EncodeJump(s.addr, s.target, w.bytes)) {
        Fail("a site's enabled block is out of jump range");
        ok = false;
        continue;
      }
      w.resume = s.target;
    } else {
      arch::EncodeNop(w.bytes);
      w.resume = s.addr + size;
    }
    std::memcpy(w.old_head, reinterpret_cast<const void*>(s.addr), head);
    if (std::memcmp(reinterpret_cast<const void*>(s.addr), w.bytes, size) != 0) work.push_back(w);
  }
  return ok;
}

// Step 0 for explicit code (function entries): the same, with the bytes given.
void BuildCodeWork(std::span<const CodeSite> sites, std::vector<Work>& work) {
  const std::size_t size = arch::SiteSize();
  work.clear();
  for (const CodeSite& s : sites) {
    Work w{};
    w.addr = s.addr;
    w.resume = s.resume;
    std::memcpy(w.bytes, s.bytes, size);
    std::memcpy(w.old_head, reinterpret_cast<const void*>(s.addr), arch::HeadSize());
    if (std::memcmp(reinterpret_cast<const void*>(s.addr), w.bytes, size) != 0) work.push_back(w);
  }
}

Scratch& GetScratch() {
  if (g_scratch == nullptr) g_scratch = new Scratch();
  return *g_scratch;
}

// Steps 1-5 over the work list of step 0, with g_mu held. `fresh_targets`: the new instructions
// jump to code written just before the batch (function-entry stubs), which every CPU must see
// through a context synchronization before any of them can branch there.
bool RunBatch(std::vector<Work>& work, bool fresh_targets) {
  const std::size_t size = arch::SiteSize();
  const std::size_t head = arch::HeadSize();
  bool ok = true;
  if (work.empty()) return ok;
  const auto by_addr = [](const Work& a, const Work& b) { return a.addr < b.addr; };
  // The registry's lists come in table order, which is address order within a module.
  if (!std::is_sorted(work.begin(), work.end(), by_addr))
    std::sort(work.begin(), work.end(), by_addr);
  work.erase(std::unique(work.begin(), work.end(),
                         [](const Work& a, const Work& b) { return a.addr == b.addr; }),
             work.end());
  std::string sync_error;
  if (!EnsureSyncCore(&sync_error)) {
    Fail(sync_error);
    return false;
  }
  Reasons why;
  trap::EnsureInstalled();

  // 1. Writable text; the batch published to the SIGTRAP handler before any trap opcode exists.
  std::vector<std::uintptr_t>& addrs = g_scratch->addrs;
  std::vector<trap::Resume>& resume = g_scratch->resume;
  const std::vector<PageRun> runs = PrepareText(work, size, &why, addrs, resume);
  trap::AddKnownSites(addrs);
  trap::Publish(resume);

  // Sites swapped by one store (arch.h, OneStoreSites: aarch64 NOP <-> B) skip steps 2 and 3:
  // step 4 alone writes the whole instruction, and no trap opcode is ever written.
  if (!arch::OneStoreSites()) {
    // 2. Trap opcode on byte 0. A site whose byte cannot be written is left as it was.
    for (Work& w : work) {
      if (w.method != Method::kSkip && !WriteText(w.method, w.addr, arch::TrapOpcode(), head)) {
        if (why.mem.empty()) why.mem = base::ErrnoMessage("/proc/self/mem", errno);
        w.method = Method::kSkip;
      }
    }
    Sync();
    AfterStep(2);
    // 3. Bytes 1..4. If they cannot be written, step 4 puts the old byte 0 back.
    for (Work& w : work) {
      if (w.method != Method::kSkip &&
          !WriteText(w.method, w.addr + head, w.bytes + head, size - head)) {
        std::memcpy(w.bytes, w.old_head, head);
        if (why.mem.empty()) why.mem = base::ErrnoMessage("/proc/self/mem", errno);
        w.failed = true;
      }
    }
    Sync();
    AfterStep(3);
  } else if (fresh_targets) {
    // One-store sites whose targets are new code (aarch64 entry stubs, arch/aarch64.cc): the
    // stubs were written and cleaned to the point of unification before the batch; this sync is
    // each CPU's context synchronization after that, so none can run stale bytes of a stub once
    // a branch to it exists. (The trap protocol gets the same from its step-2 sync.)
    Sync();
  }
  // 4. Byte 0 (one-store sites: the whole instruction): the new instruction is whole.
  std::size_t written = 0;
  for (Work& w : work) {
    if (w.method == Method::kSkip) continue;
    if (!WriteText(w.method, w.addr, w.bytes, head)) {
      // Only reachable for one-store sites (a failed step 2 skips the others): the site keeps
      // its old instruction.
      if (why.mem.empty()) why.mem = base::ErrnoMessage("/proc/self/mem", errno);
      w.failed = true;
    }
    written += w.failed ? 0 : 1;
  }
  Sync();
  AfterStep(4);

  // 5. No new trap can hit the batch now; handlers already running finish with it first.
  trap::Retire();
  RestoreText(runs);
  if (written != work.size()) {
    Fail(why.Describe());
    ok = false;
  }
  g_batches.fetch_add(1, std::memory_order_relaxed);
  g_sites_written.fetch_add(written, std::memory_order_relaxed);
  return ok;
}

bool Apply(std::span<const Site> sites, bool enabled) {
  if (sites.empty()) return true;
  if (const char* why = arch::Unsupported()) {
    Fail(why);
    return false;
  }
  std::vector<Work>& work = GetScratch().work;
  const bool ok = BuildKeyWork(sites, enabled, work);
  return RunBatch(work, false) && ok;
}

}  // namespace

bool SetSites(std::span<const Site> sites, bool enabled) {
  std::lock_guard<std::mutex> lock(g_mu);
  return Apply(sites, enabled);
}

bool WriteCode(std::span<const CodeSite> sites) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (sites.empty()) return true;
  if (const char* why = arch::Unsupported()) {
    Fail(why);
    return false;
  }
  std::vector<Work>& work = GetScratch().work;
  BuildCodeWork(sites, work);
  return RunBatch(work, true);
}

void PrepareCode(std::span<const CodeSite> sites) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (sites.empty() || arch::Unsupported() != nullptr) return;
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL (the batch faults)
#endif
  // Discovery order: address order within a module.
  for (const PageRun& r : PageRunsOf(sites, arch::SiteSize())) {
    void* p = reinterpret_cast<void*>(r.start);
    // RWX, as during a batch (other threads keep executing these pages); the write faults the
    // kernel simulates copy each page with its contents unchanged. Back to RX right after.
    if (::mprotect(p, r.end - r.start, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) continue;
    ::madvise(p, r.end - r.start, MADV_POPULATE_WRITE);
    ::mprotect(p, r.end - r.start, PROT_READ | PROT_EXEC);
  }
  // The batch's lists, grown and touched now: their first-touch page faults (10,000 sites:
  // ~0.5 MiB, ~0.3 ms) would otherwise be part of the batch.
  Scratch& scratch = GetScratch();
  const auto presize = [n = sites.size()](auto& v) {
    if (v.size() < n) v.resize(n);
    v.clear();  // the capacity and its touched pages stay
  };
  presize(scratch.work);
  presize(scratch.addrs);
  presize(scratch.resume);
}

bool WriteCodeInChild(std::span<const CodeSite> sites) {
  if (!g_mu.try_lock()) return false;
  bool ok = true;
  if (!sites.empty() && arch::Unsupported() == nullptr) {
    std::vector<Work>& work = GetScratch().work;
    BuildCodeWork(sites, work);
    ok = RunBatch(work, true);
  }
  g_mu.unlock();
  return ok;
}

bool SetSitesInChild(std::span<const Site> sites, bool enabled) {
  if (!g_mu.try_lock()) return false;
  const bool ok = Apply(sites, enabled);
  g_mu.unlock();
  return ok;
}

void Prepare() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::string why;
  EnsureSyncCore(&why);  // a failure is reported by the first batch, which retries
}

void RefuseSyncCoreForTesting() {
  std::lock_guard<std::mutex> lock(g_mu);
  base::RefuseSyncCoreForTesting();
  g_sync_registered = false;
}

void SetStepHookForTesting(void (*hook)(int step)) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_step_hook = hook;
}

Stats GetStats() {
  Stats s;
  s.batches = g_batches.load(std::memory_order_relaxed);
  s.sites_written = g_sites_written.load(std::memory_order_relaxed);
  s.traps = trap::Traps();
  s.traps_chained = trap::TrapsChained();
  s.proc_mem_used = g_proc_mem_used.load(std::memory_order_relaxed);
  s.failed = g_failed.load(std::memory_order_relaxed);
  s.sync_core_missing = g_sync_core_missing.load(std::memory_order_relaxed);
  return s;
}

}  // namespace hush::patch
