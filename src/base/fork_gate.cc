#include "base/fork_gate.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace hush::base {

thread_local constinit bool t_library_thread = false;  // library_thread.h

namespace {

pthread_rwlock_t g_gate = PTHREAD_RWLOCK_INITIALIZER;
thread_local bool t_gate_held = false;  // by this (forking) thread, from prepare to parent/child
std::atomic<int> g_threads_starting{0};
std::atomic<void (*)()> g_child_hook{nullptr};
std::once_flag g_install_once;

constexpr long kMaxWaitNs = 2'000'000'000;

std::int64_t MonotonicNs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer locks its own allocator around fork(), and it would take the child's reset of
// a write-held lock (below) for a double lock: the gate is not needed there and stays open.
constexpr bool kGateOn = false;
#else
constexpr bool kGateOn = true;
#endif

void BeforeFork() {
  if (!kGateOn) return;
  const std::int64_t deadline = MonotonicNs() + kMaxWaitNs;
  const timespec abs = {static_cast<time_t>(deadline / 1'000'000'000), static_cast<long>(deadline % 1'000'000'000)};
  t_gate_held = ::pthread_rwlock_clockwrlock(&g_gate, CLOCK_MONOTONIC, &abs) == 0;
  // Acquire: pairs with the release decrement in ThreadStarted(); the new thread's start-up is
  // over. A thread counted here cannot need the gate to get there.
  while (g_threads_starting.load(std::memory_order_acquire) > 0 && MonotonicNs() < deadline) {
    ::sched_yield();
  }
}

void AfterForkInParent() {
  if (t_gate_held) {
    t_gate_held = false;
    ::pthread_rwlock_unlock(&g_gate);
  }
}

void AfterForkInChild() {
  if (!kGateOn) {
    if (void (*hook)() = g_child_hook.load(std::memory_order_relaxed)) hook();
    return;
  }
  // One thread exists: the gate is made new rather than unlocked (glibc's rwlock records the
  // writer's tid, which the fork changed). Threads that were starting do not exist here.
  static const pthread_rwlock_t fresh = PTHREAD_RWLOCK_INITIALIZER;
  std::memcpy(static_cast<void*>(&g_gate), &fresh, sizeof fresh);
  t_gate_held = false;
  g_threads_starting.store(0, std::memory_order_relaxed);
  if (void (*hook)() = g_child_hook.load(std::memory_order_relaxed)) hook();
}

}  // namespace

void InstallForkGate(void (*child_hook)()) {
  if (child_hook != nullptr) g_child_hook.store(child_hook, std::memory_order_relaxed);
  std::call_once(g_install_once, [] { ::pthread_atfork(BeforeFork, AfterForkInParent, AfterForkInChild); });
}

// glibc's default rwlock prefers readers: a section starts even while a fork() waits, so a
// section that waits for another thread's section (a control request stopping the session joins
// the consumer) cannot deadlock against a pending fork.
ForkGateSection::ForkGateSection() {
  if (kGateOn) ::pthread_rwlock_rdlock(&g_gate);
}
ForkGateSection::~ForkGateSection() {
  if (kGateOn) ::pthread_rwlock_unlock(&g_gate);
}

bool WaitForLibraryThreadsStarted() {
  const std::int64_t deadline = MonotonicNs() + kMaxWaitNs;
  // Acquire: pairs with the release decrement in ThreadStarted(), after the thread's name.
  while (g_threads_starting.load(std::memory_order_acquire) > 0) {
    if (MonotonicNs() >= deadline) return false;
    ::sched_yield();
  }
  return true;
}

void ThreadStarting() { g_threads_starting.fetch_add(1, std::memory_order_relaxed); }
void ThreadStartFailed() { g_threads_starting.fetch_sub(1, std::memory_order_relaxed); }
// Release: pairs with the acquire loads in BeforeFork() and WaitForLibraryThreadsStarted().
void ThreadStarted() { g_threads_starting.fetch_sub(1, std::memory_order_release); }

}  // namespace hush::base
