// Threads the library owns (consumer, snapshot, sched, control server) are started through here.
#ifndef HUSHTRACE_SRC_BASE_LIBRARY_THREAD_H_
#define HUSHTRACE_SRC_BASE_LIBRARY_THREAD_H_

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

#include "base/fork_gate.h"

namespace hush::base {

// Set on the library's threads (defined in fork_gate.cc): their events are dropped
// uncounted, before any attach (see ReserveSlow).
extern thread_local bool t_library_thread;

// The library's own threads block every asynchronous signal: a process-directed signal goes to
// an application thread, and an application handler (which may trace, and so attach and
// allocate) never runs on a thread the library owns. Fault signals stay open: blocking them
// would turn a crash into a silent kill. The new thread inherits the mask set around its creation.
// It is named (`name`, at most 15 characters) before this returns, and records no event.
template <class Body>
std::thread StartLibraryThread(const char* name, Body&& body) {
  sigset_t all, previous;
  sigfillset(&all);
  for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&all, fault);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  InstallForkGate();
  ThreadStarting();  // a fork() from now until the body runs waits for the thread's start-up
  std::thread thread;
  try {
    thread = std::thread([b = std::forward<Body>(body)]() mutable {
      t_library_thread = true;
      ThreadStarted();
      b();
    });
  } catch (...) {
    ThreadStartFailed();
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::pthread_setname_np(thread.native_handle(), name);
  return thread;
}

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_LIBRARY_THREAD_H_
