// The traced program of the crash-marker tests (src/session/crash_handler.h).
//
//   crash_marker_victim DIR HANDLER CRASH
//
// HANDLER: the program's own action for the crash signal, installed before the session starts:
//   siginfo   an SA_SIGINFO handler      plain   an sa_handler handler
//   oneshot   a plain handler with SA_RESETHAND      none    SIG_DFL
// The program's handler writes "own handler: signal S" to stdout, sets SIG_DFL and returns, so
// that the process dies of the same signal.
// CRASH: segv (a write through a null pointer), abort, or stop (the session is stopped, the
// program's action must be back, then a null write).
// It prints the action of the crash signal ("own", "default" or "other") before the session
// starts ("at start: "), while it runs ("in session: ") and with CRASH stop after it stopped
// ("after stop: "). The session is a stream session on DIR; a thread emits 500 crashmark:tick
// events, prints "crash tid T" and crashes.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <hushtrace/hushtrace.h>
#include <hushtrace/session.h>

HUSH_TRACEPOINT(crashmark, tick, (std::uint64_t, seq))

namespace {

void Say(const char* text) { [[maybe_unused]] ssize_t n = ::write(1, text, std::strlen(text)); }

void ResetAndReport(int sig) {
  char line[64];
  const int n = std::snprintf(line, sizeof line, "own handler: signal %d\n", sig);  // glibc: safe for %d
  [[maybe_unused]] ssize_t w = ::write(1, line, static_cast<std::size_t>(n));
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
}

void OwnSiginfo(int sig, siginfo_t*, void*) { ResetAndReport(sig); }
void OwnPlain(int sig) { ResetAndReport(sig); }

// "own" (the program's handler), "default" or "other" (hushtrace's), as a line for the test.
const char* State(int sig) {
  struct sigaction a;
  ::sigaction(sig, nullptr, &a);
  if (a.sa_flags & SA_SIGINFO) return a.sa_sigaction == OwnSiginfo ? "own" : "other";
  if (a.sa_handler == OwnPlain) return "own";
  return a.sa_handler == SIG_DFL ? "default" : "other";
}

void SayState(const char* when, int sig) {
  Say(when);
  Say(State(sig));
  Say("\n");
}

[[gnu::no_sanitize("address", "undefined")]] [[gnu::noinline]] void NullWrite() {
  volatile std::uintptr_t address = 0;
  *reinterpret_cast<volatile int*>(address) = 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: crash_marker_victim DIR siginfo|plain|oneshot|none segv|abort|stop\n");
    return 64;
  }
  const std::string handler = argv[2], crash = argv[3];
  const int sig = crash == "abort" ? SIGABRT : SIGSEGV;
  struct sigaction own = {};
  sigemptyset(&own.sa_mask);
  if (handler == "siginfo") {
    own.sa_sigaction = OwnSiginfo;
    own.sa_flags = SA_SIGINFO;
  } else if (handler == "plain" || handler == "oneshot") {
    own.sa_handler = OwnPlain;
    own.sa_flags = handler == "oneshot" ? SA_RESETHAND : 0;
  } else {
    own.sa_handler = SIG_DFL;
  }
  ::sigaction(sig, &own, nullptr);
  SayState("at start: ", sig);

  hush::SessionOptions options;
  options.events = {"crashmark:*"};
  options.output_dir = argv[1];
  options.buffer_size = 256 * 1024;
  std::string error;
  std::unique_ptr<hush::Session> session = hush::Session::Start(options, &error);
  if (!session) {
    std::fprintf(stderr, "crash_marker_victim: %s\n", error.c_str());
    return 65;
  }
  SayState("in session: ", sig);
  if (crash == "stop") {
    session->Stop();
    SayState("after stop: ", sig);
  }
  std::thread([&] {
    for (std::uint64_t i = 0; i < 500; ++i) HUSH_TRACE(crashmark, tick, i);
    std::printf("crash tid %ld\n", static_cast<long>(::syscall(SYS_gettid)));
    std::fflush(stdout);
    if (crash == "abort") std::abort();
    NullWrite();
  }).join();
  return 0;  // not reached
}
