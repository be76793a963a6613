// Threads the library owns (consumer, snapshot, sched, control server) are started through here.
#ifndef HUSHTRACE_SRC_BASE_LIBRARY_THREAD_H_
#define HUSHTRACE_SRC_BASE_LIBRARY_THREAD_H_

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <cstddef>
#include <memory>
#include <system_error>
#include <thread>
#include <utility>

#include "base/fork_gate.h"

namespace hush::base {

// Set on the library's threads (defined in fork_gate.cc): their events are dropped
// uncounted, before any attach (see ReserveSlow).
extern thread_local constinit bool t_library_thread;

// Blocks every signal but the fault signals in the calling thread; *previous gets the old mask.
inline void BlockAsyncSignals(sigset_t* previous) {
  sigset_t all;
  sigfillset(&all);
  for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&all, fault);
  ::pthread_sigmask(SIG_SETMASK, &all, previous);
}

// The library's own threads block every asynchronous signal: a process-directed signal goes to
// an application thread, and an application handler (which may trace, and so attach and
// allocate) never runs on a thread the library owns. Fault signals stay open: blocking them
// would turn a crash into a silent kill. The new thread inherits the mask set around its creation.
// It names itself (`name`, at most 15 characters) before its body runs, and records no event.
//
// Named by itself, not by the caller: naming another thread goes through /proc/self/task/TID/comm,
// and a thread whose /proc entries were instantiated costs its exit a walk of the /proc dentry
// cache under a spin lock (release_task -> proc_flush_pid -> d_invalidate). On the VMs of this
// project that walk took 0.5-2.5 ms of CPU at the exit of every short traced program (the
// consumer thread's), profiled with perf: docs/benchmarks.md, "Per exec under a session". A thread
// naming itself uses prctl(PR_SET_NAME) and instantiates nothing.
template <class Body>
std::thread StartLibraryThread(const char* name, Body&& body) {
  sigset_t previous;
  BlockAsyncSignals(&previous);
  InstallForkGate();
  ThreadStarting();  // a fork() from now until the body runs waits for the thread's start-up
  std::thread thread;
  try {
    thread = std::thread([name, b = std::forward<Body>(body)]() mutable {
      t_library_thread = true;
      ::pthread_setname_np(::pthread_self(), name);
      ThreadStarted();
      b();
    });
  } catch (...) {
    ThreadStartFailed();
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return thread;
}

// The same for a detached thread (named by itself as it starts) with a stack of `stack_bytes` of
// its own (plus the guard page):
// the default size is the program's (RLIMIT_STACK, pthread_setattr_default_np), which may be too
// small for a thread whose worst case is known. Throws std::system_error like std::thread.
template <class Body>
void StartLibraryDetachedThread(const char* name, std::size_t stack_bytes, Body&& body) {
  struct Start {
    const char* name;
    Body body;
    static void* Run(void* arg) {
      std::unique_ptr<Start> self(static_cast<Start*>(arg));
      t_library_thread = true;
      // Named by itself, as above (and a detached thread's handle is not ours to use once it may
      // have ended).
      ::pthread_setname_np(::pthread_self(), self->name);
      ThreadStarted();
      self->body();
      return nullptr;
    }
  };
  auto start = std::make_unique<Start>(Start{name, std::forward<Body>(body)});
  pthread_attr_t attr;
  ::pthread_attr_init(&attr);
  ::pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int e = ::pthread_attr_setstacksize(&attr, stack_bytes);
  sigset_t previous;
  BlockAsyncSignals(&previous);
  InstallForkGate();
  ThreadStarting();
  pthread_t thread;
  if (e == 0) e = ::pthread_create(&thread, &attr, &Start::Run, start.get());
  if (e != 0) ThreadStartFailed();
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::pthread_attr_destroy(&attr);
  if (e != 0) throw std::system_error(e, std::generic_category(), "pthread_create");
  start.release();  // the thread owns it
}

// A detached library thread that never calls malloc or free, for the stream consumer: std::thread
// hands its callable to the new thread on the heap, and the new thread's free() of it is its
// first call into malloc, on which glibc gives the thread an arena of its own (a 64 MiB
// reservation trimmed to its alignment: four system calls, then the first touch of the arena's
// pages, ~15 us each on this project's VMs). The consumer of a short traced program allocates
// nothing else, so without that free it never gets an arena (gdb of cmp_hush hackbench: no other
// malloc or free on that thread until its exit). The body `fn(arg)` must not allocate either.
// `start` is the caller's and must stay valid until the body has returned (a member of the object
// the body works on). The thread keeps the program's default stack size, as std::thread's does.
// Returns 0, or the error of pthread_create (nothing started).
struct NoAllocThread {
  const char* name;
  void (*fn)(void*);
  void* arg;
};

inline int StartLibraryThreadNoAlloc(const NoAllocThread* start) {
  struct Trampoline {
    static void* Run(void* p) {
      const NoAllocThread* s = static_cast<const NoAllocThread*>(p);
      t_library_thread = true;
      ::pthread_setname_np(::pthread_self(), s->name);  // named by itself, as above
      ThreadStarted();
      s->fn(s->arg);
      return nullptr;
    }
  };
  pthread_attr_t attr;
  ::pthread_attr_init(&attr);
  ::pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  sigset_t previous;
  BlockAsyncSignals(&previous);
  InstallForkGate();
  ThreadStarting();
  pthread_t thread;
  const int e = ::pthread_create(&thread, &attr, &Trampoline::Run, const_cast<NoAllocThread*>(start));
  if (e != 0) ThreadStartFailed();
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::pthread_attr_destroy(&attr);
  return e;
}

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_LIBRARY_THREAD_H_
