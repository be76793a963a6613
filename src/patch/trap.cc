// The patcher's SIGTRAP handler; see trap.h for what it does with each kind of trap.
#include "patch/trap.h"

#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <vector>

#include "patch/arch/arch.h"

namespace hush::patch::trap {
namespace {

// --- the batch in flight -----------------------------------------------------------------------
//
// g_batch points at g_view while a batch is published. A handler announces itself in
// g_in_handler before it loads g_batch; Retire() clears g_batch and then waits for g_in_handler
// to drop to 0. Both sides use seq_cst (a store then a load of another variable, like Dekker's
// algorithm): either the handler loads nullptr, or Retire() sees it announced and waits. With
// weaker orders both could miss each other, and the next Publish() would rewrite g_view under a
// handler still searching it.
struct BatchView {
  const Resume* entries;
  std::size_t count;
};
BatchView g_view;  // written only while unpublished and no handler is inside
std::atomic<const BatchView*> g_batch{nullptr};
std::atomic<std::uint32_t> g_in_handler{0};

// --- every site ever patched (append-only, never freed) ----------------------------------------
struct KnownSites {
  const KnownSites* next;
  std::uintptr_t lo, hi;  // first and last address
  std::size_t count;
  const std::uintptr_t* sites;  // `count` sorted addresses
};
// Release: pairs with the acquire in IsKnownSite(); a handler that finds a node sees its sites.
std::atomic<const KnownSites*> g_known{nullptr};
std::vector<std::uintptr_t>* g_known_sorted = nullptr;  // patch mutex; all of g_known, sorted

// --- the disposition we replaced ----------------------------------------------------------------
// Two slots so that re-installing never rewrites the slot a running handler may be reading;
// the index is published with release and read with acquire.
struct sigaction g_previous[2];
std::atomic<int> g_previous_index{0};
// The disposition before our first installation (written once, before the handler exists).
struct sigaction g_original;
bool g_have_original = false;
const struct sigaction g_default_action = {};  // all zero: sa_handler == SIG_DFL
// How deep this thread is in Chain(). A program handler that replaced ours may itself chain to
// ours (the disposition it replaced); re-installing ours on top of it would then loop forever.
// The inner call goes to the original disposition instead. Initial-exec: no allocation on first
// use in a signal handler.
thread_local int t_chain_depth __attribute__((tls_model("initial-exec"))) = 0;

std::atomic<std::uint64_t> g_traps{0};  // counters: relaxed, statistics only
std::atomic<std::uint64_t> g_chained{0};

bool Search(const std::uintptr_t* first, std::size_t n, std::uintptr_t site) {
  const std::uintptr_t* last = first + n;
  const std::uintptr_t* it = std::lower_bound(first, last, site);
  return it != last && *it == site;
}

bool FindInBatch(std::uintptr_t site, std::uintptr_t* pc) {
  g_in_handler.fetch_add(1, std::memory_order_seq_cst);
  bool found = false;
  if (const BatchView* b = g_batch.load(std::memory_order_seq_cst)) {
    const Resume* last = b->entries + b->count;
    const Resume* it = std::lower_bound(
        b->entries, last, site, [](const Resume& r, std::uintptr_t s) { return r.site < s; });
    if (it != last && it->site == site) {
      *pc = it->pc;
      found = true;
    }
  }
  // Release: our reads of the batch happen before Retire() sees the count drop.
  g_in_handler.fetch_sub(1, std::memory_order_release);
  return found;
}

bool IsKnownSite(std::uintptr_t site) {
  for (const KnownSites* k = g_known.load(std::memory_order_acquire); k != nullptr; k = k->next) {
    if (site >= k->lo && site <= k->hi && Search(k->sites, k->count, site)) return true;
  }
  return false;
}

void Chain(int sig, siginfo_t* info, void* ucontext) {
  g_chained.fetch_add(1, std::memory_order_relaxed);
  const struct sigaction& prev = t_chain_depth == 0
                                     ? g_previous[g_previous_index.load(std::memory_order_acquire)]
                                 : t_chain_depth == 1 ? g_original
                                                      : g_default_action;
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler == SIG_DFL) {
    // SIGTRAP's default action terminates with a core dump. Restore it and raise again: the
    // signal is blocked while this handler runs and is delivered as soon as it returns.
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(SIGTRAP, &dfl, nullptr);
    ::raise(SIGTRAP);
    return;
  }
  ++t_chain_depth;
  if (prev.sa_flags & SA_SIGINFO) {
    prev.sa_sigaction(sig, info, ucontext);
  } else {
    prev.sa_handler(sig);
  }
  --t_chain_depth;
}

void OnTrap(int sig, siginfo_t* info, void* ucontext) {
  if (!arch::IsTrapInstruction(info)) return Chain(sig, info, ucontext);
  const std::uintptr_t site = arch::TrapAddress(ucontext);
  std::uintptr_t pc = 0;
  if (!FindInBatch(site, &pc)) {
    if (!IsKnownSite(site)) return Chain(sig, info, ucontext);
    pc = site;  // late trap: run the site's current instruction
  }
  g_traps.fetch_add(1, std::memory_order_relaxed);
  arch::SetResumeAddress(ucontext, pc);
}

}  // namespace

void EnsureInstalled() {
  struct sigaction current;
  if (::sigaction(SIGTRAP, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == OnTrap) return;
  if (!g_have_original) {
    g_original = current;
    g_have_original = true;
  }
  const int slot = 1 - g_previous_index.load(std::memory_order_relaxed);
  g_previous[slot] = current;
  // Release: a handler that reads the index (acquire) sees the slot's contents.
  g_previous_index.store(slot, std::memory_order_release);
  struct sigaction sa = {};
  sa.sa_sigaction = OnTrap;
  // SA_ONSTACK: a program that set up an alternate signal stack for its own handlers keeps it.
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTRAP, &sa, nullptr);
}

void AddKnownSites(std::span<const std::uintptr_t> sites) {
  if (g_known_sorted == nullptr) g_known_sorted = new std::vector<std::uintptr_t>();
  std::vector<std::uintptr_t>& known = *g_known_sorted;
  // Both sorted: one linear pass (a batch usually re-patches sites known since its first time).
  std::vector<std::uintptr_t> fresh;
  std::set_difference(sites.begin(), sites.end(), known.begin(), known.end(),
                      std::back_inserter(fresh));
  if (fresh.empty()) return;
  const std::size_t old_size = known.size();
  known.insert(known.end(), fresh.begin(), fresh.end());
  std::inplace_merge(known.begin(), known.begin() + static_cast<std::ptrdiff_t>(old_size),
                     known.end());
  auto* addresses = new std::uintptr_t[fresh.size()];
  std::copy(fresh.begin(), fresh.end(), addresses);
  // Only the patch mutex holder writes g_known, hence the relaxed load.
  auto* node = new KnownSites{g_known.load(std::memory_order_relaxed), fresh.front(), fresh.back(),
                              fresh.size(), addresses};
  g_known.store(node, std::memory_order_release);
}

void Publish(std::span<const Resume> batch) {
  g_view = {batch.data(), batch.size()};
  // seq_cst: see g_batch. It also orders the publication before the trap opcodes written next
  // (plain stores or /proc/self/mem writes): a thread that traps on one finds the batch.
  g_batch.store(&g_view, std::memory_order_seq_cst);
}

void Retire() {
  g_batch.store(nullptr, std::memory_order_seq_cst);
  while (g_in_handler.load(std::memory_order_seq_cst) != 0) ::sched_yield();
}

std::uint64_t Traps() { return g_traps.load(std::memory_order_relaxed); }
std::uint64_t TrapsChained() { return g_chained.load(std::memory_order_relaxed); }

}  // namespace hush::patch::trap
