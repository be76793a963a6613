// See writers.h for the protocol.
#include "session/writers.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <mutex>
#include <new>

#include "base/library_thread.h"
#include "base/membarrier.h"
#include "hushtrace/internal/thread_writer.h"

namespace hush::session::writers {
namespace {

struct Record {
  internal::ThreadWriter* writer;
  Record* next;
  Record* prev;
  bool listed;
};

// initial-exec like tls_writer: the slow path of a signal handler's event may reach it, where a
// lazily allocated dynamic TLS block is not an option.
thread_local constinit Record t_record __attribute__((tls_model("initial-exec"))) = {};

std::mutex g_mu;           // guards the list; a leaf lock
Record* g_head = nullptr;  // listed threads (their thread_local records)

}  // namespace

bool ThisThreadListed() { return t_record.listed; }

bool RegisterThisThread() {
  Record& r = t_record;
  if (r.listed) [[likely]] return false;
  std::lock_guard<std::mutex> lock(g_mu);
  r.writer = &internal::tls_writer;
  r.prev = nullptr;
  r.next = g_head;
  if (g_head != nullptr) g_head->prev = &r;
  g_head = &r;
  r.listed = true;
  return true;
}

void UnregisterThisThread() {
  Record& r = t_record;
  if (!r.listed) return;
  std::lock_guard<std::mutex> lock(g_mu);
  if (r.prev != nullptr) {
    r.prev->next = r.next;
  } else {
    g_head = r.next;
  }
  if (r.next != nullptr) r.next->prev = r.prev;
  r.listed = false;
}

bool WaitForEventsBefore(std::chrono::nanoseconds budget, bool send_to_slow_path) {
  // No signal handler runs on this thread while it holds g_mu: a handler's event would list the
  // thread (RegisterThisThread takes g_mu) and wait for itself.
  sigset_t previous;
  base::BlockAsyncSignals(&previous);
  std::unique_lock<std::mutex> lock(g_mu);
  if (send_to_slow_path) {  // step 0; records cannot go away while we hold g_mu
    for (Record* r = g_head; r != nullptr; r = r->next) {
      if (r != &t_record) r->writer->end.store(nullptr, std::memory_order_seq_cst);
    }
  }
  bool done = base::PrivateExpeditedBarrier();  // step 1; also orders our caller's stores
  if (done) {
    const auto deadline = std::chrono::steady_clock::now() + budget;
    for (Record* r = g_head; r != nullptr && done; r = r->next) {
      if (r == &t_record) continue;
      // Acquire: pairs with the release in LeaveEvent (writers.h, "why it is enough").
      for (int spins = 0; r->writer->nesting.load(std::memory_order_acquire) != 0; ++spins) {
        if (std::chrono::steady_clock::now() >= deadline) {
          done = false;
          break;
        }
        if (spins > 64) ::sched_yield();  // the thread may be descheduled inside its event
      }
    }
  }
  lock.unlock();
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return done;
}

bool WaitBeforeFreeing(std::chrono::nanoseconds budget) {
  return WaitForEventsBefore(budget) && WaitForEventsBefore(budget, /*send_to_slow_path=*/true);
}

void ForgetInChild() {
  new (&g_mu) std::mutex();
  Record& self = t_record;
  g_head = self.listed ? &self : nullptr;
  self.next = nullptr;
  self.prev = nullptr;
}

unsigned ListedThreads() {
  std::lock_guard<std::mutex> lock(g_mu);
  unsigned n = 0;
  for (Record* r = g_head; r != nullptr; r = r->next) ++n;
  return n;
}

}  // namespace hush::session::writers
