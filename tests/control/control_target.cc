// The program the live-control tests and benchmark attach to. It links libhushtrace and never
// starts a session itself. Commands, one per line on stdin (the main thread blocks in read(),
// a point where `hushtrace start PID` may open the control channel):
//
//   emit N     emit ctl:tick(seq) N times (seq counts from 0 over the whole run), print "done"
//   pid        print the process id
//   quit       exit 0
//
// A second thread sleeps (nanosleep) for the whole run: another thread the CLI may pick.
//
//   control_target spin     instead: emit ctl:clock(monotonic ns) in a loop until killed; the
//                           event carries its own emission time (start-to-first-event benchmark)
//   control_target paced    instead: emit ctl:tick(seq) every 100 µs until killed, a service that
//                           is traced on and off (lifecycle_cli_test)
#include <hushtrace/hushtrace.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

HUSH_TRACEPOINT(ctl, tick, (std::uint64_t, seq))
HUSH_TRACEPOINT(ctl, clock, (std::int64_t, mono_ns))
HUSH_TRACEPOINT(ctl, other, (std::int32_t, x))

namespace {

std::int64_t MonotonicNs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  std::thread sleeper([] {
    for (;;) ::sleep(3600);
  });
  sleeper.detach();
  if (argc > 1 && std::string(argv[1]) == "spin") {
    for (;;) HUSH_TRACE(ctl, clock, MonotonicNs());
  }
  if (argc > 1 && std::string(argv[1]) == "paced") {
    std::printf("ready\n");
    std::fflush(stdout);
    const timespec pause = {0, 100 * 1000};
    for (std::uint64_t seq = 0;; ++seq) {
      HUSH_TRACE(ctl, tick, seq);
      ::nanosleep(&pause, nullptr);
    }
  }
  std::uint64_t seq = 0;
  std::string line;
  std::printf("ready\n");
  std::fflush(stdout);
  while (std::getline(std::cin, line)) {
    if (line.rfind("emit ", 0) == 0) {
      const std::uint64_t n = std::stoull(line.substr(5));
      for (std::uint64_t i = 0; i < n; ++i, ++seq) HUSH_TRACE(ctl, tick, seq);
      HUSH_TRACE(ctl, other, 1);
      std::printf("done\n");
    } else if (line == "pid") {
      std::printf("%d\n", static_cast<int>(::getpid()));
    } else if (line == "quit") {
      return 0;
    } else {
      std::printf("unknown\n");
    }
    std::fflush(stdout);
  }
  return 0;
}
