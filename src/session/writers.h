// The threads that may be inside an event of a session, and the grace period that lets a stopped
// session give back its memory (rings, Core) while the program's threads keep running.
//
// Who can still hold a stopped session's pointers:
//   - a thread inside an event that took the fast path before Stop: its ThreadWriter's `pos`,
//     `end` and `commit` point into a ring of the session;
//   - a thread inside the slow path that loaded Core::Active() before Stop cleared it.
// Both are *inside an event*: their ThreadWriter::nesting is non-zero from EnterEvent to
// LeaveEvent (release). Every thread that enters the slow path is listed here first, so the list
// holds every thread that can have loaded a session pointer (the fast path of a thread that never
// took the slow path has `end == nullptr` and takes it).
//
// Reader side (emitting thread, slow path only):
//
//   EnterEvent: nesting = n + 1    plain store, then a compiler barrier (thread_writer.h)
//   RegisterThisThread()           once per thread: g_mu, link into the list
//   core = Core::Active()          ... ring pointers, core fields ...
//   LeaveEvent: nesting = n        release
//
// Writer side, WaitForEventsBefore(), after the session unpublished itself (Core::Stop: active_
// cleared, every attached writer's `end` stored nullptr, both before the call):
//   0. (send_to_slow_path) every listed writer's `end` stored nullptr, under g_mu.
//   1. membarrier(PRIVATE_EXPEDITED): every running thread executes a full barrier.
//   2. Under g_mu, for every listed thread: wait until its nesting is observed 0.
// Why it is enough (the argument of registry/grace.h, with nesting for the section counter): let
// B be the barrier step 1 forced on thread T. An event of T whose loads of `end` / active_ come
// after B in T's program order sees nullptr: it takes the slow path and finds no session (or a new
// one) and never touches the old one. An event whose loads came before B has its nesting store
// before B, so step 2 reads that value or a later one; reading 0 means the event left (the release
// in LeaveEvent orders all its accesses to the old session before our acquire load). A thread
// registered after step 2 took g_mu loads active_ after our caller cleared it. Records cannot go
// away during step 2: a thread unlists itself at exit under g_mu, after its last event.
// Without step 1, x86 may hold T's nesting store in its store buffer while T loads the old `end`,
// and step 2 would read 0 and free the ring T is about to write.
//
// A thread that stays inside an event (descheduled, stopped by a debugger, a signal handler that
// never returns) delays the grace period: the caller gives up after its budget and tries again
// later (session_api.cc keeps such sessions on a retired list). Without membarrier the grace period
// never ends: a stopped session's memory is then kept, as before this protocol existed.
#ifndef HUSHTRACE_SRC_SESSION_WRITERS_H_
#define HUSHTRACE_SRC_SESSION_WRITERS_H_

#include <chrono>

namespace hush::session::writers {

// Lists the calling thread until it exits (UnregisterThisThread); returns true when it was not
// listed before. Takes g_mu then only. Called by the slow path with the thread's nesting raised
// (never from a nested event: a signal handler may have interrupted this very function), before
// it loads Core::Active().
bool RegisterThisThread();
bool ThisThreadListed();
// At thread exit, after the thread's last event (thread_attach.cc, OnThreadExit).
void UnregisterThisThread();

// Steps 1 and 2 above. Returns true when every event that began before the call has ended; false
// when `budget` ran out first or membarrier is unavailable. The calling thread's own events are
// not waited for (the caller is not inside one); asynchronous signals are blocked on it while it
// holds g_mu, so no handler's event can wait for g_mu on the same thread.
//
// `send_to_slow_path`: first store `end = nullptr` in every listed thread's writer (all alive
// under g_mu), so that none of them takes the fast path into a ring it opened earlier. A stopped
// session needs this in a second grace period: an event that was inside the slow path when Stop()
// cleared the attached writers' `end` may have opened a packet afterwards and stored a new `end`
// into the stopped session's ring; the first grace period waits for that event, the second clears
// what it left and waits for fast-path events that loaded it. Only then is the memory free.
bool WaitForEventsBefore(std::chrono::nanoseconds budget, bool send_to_slow_path = false);

// The grace period after which a stopped session's memory may be freed (the two above, in order;
// `budget` for each).
bool WaitBeforeFreeing(std::chrono::nanoseconds budget);

// fork child: only the forking thread exists; the other records belong to threads that are gone,
// and g_mu may have been held by one of them.
void ForgetInChild();

// Number of listed threads (tests).
unsigned ListedThreads();

}  // namespace hush::session::writers

#endif  // HUSHTRACE_SRC_SESSION_WRITERS_H_
