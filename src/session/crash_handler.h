// Crash marker: while a session runs, a fatal signal (SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE)
// leaves the file DIR/.crashed, then goes on to the program's own handler or to the default
// action exactly as if hushtrace were not there.
//
// Recovery never depends on the marker (SIGKILL runs no handler; a program may replace the
// handler after the session started): src/recover only reports it when it is there
// ("the program died of SIGSEGV in thread N").
//
// Marker format (one line, ASCII): "signal S tid T pid P\n".
//
// Installation: Arm() is called by Core::Start, never at start-up of a program that traces
// nothing. The first Arm() installs the handler for the five signals, keeping the actions found
// there to chain to; Disarm() (Core::Stop, fork child) only clears the marker directory, and
// puts the previous actions back where the handler is still ours. Arm()/Disarm() are called
// under the session's mu_, never concurrently.
//
// Chaining, in the handler (async-signal-safe: openat/write/close/gettid/sigaction/raise):
//   previous action          what the handler does after writing the marker
//   SA_SIGINFO handler       calls it with (sig, info, context) under its sa_mask
//   plain handler            calls it with (sig) under its sa_mask; SA_RESETHAND honoured
//   SIG_IGN                  returns if the signal was sent (kill/raise); a fault is fatal as
//                            the kernel makes it with SIG_IGN: treated as SIG_DFL
//   SIG_DFL                  resets the action to SIG_DFL and re-raises: the process dies of
//                            the same signal (core dump and exit status are the program's)
#ifndef HUSHTRACE_SRC_SESSION_CRASH_HANDLER_H_
#define HUSHTRACE_SRC_SESSION_CRASH_HANDLER_H_

namespace hush::session::crash {


// From now on a fatal signal writes the marker in `dirfd` (the session's trace directory;
// the descriptor must stay open until Disarm()).
void Arm(int dirfd);
// No marker is written any more; the program's previous actions are restored where ours is
// still installed.
void Disarm();

}  // namespace hush::session::crash

#endif  // HUSHTRACE_SRC_SESSION_CRASH_HANDLER_H_
