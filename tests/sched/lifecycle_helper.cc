// A traced program for the process lifecycle tests: forks and execs itself.
//   lifecycle_helper exec-parent   emits lc:hello gen=0, runs `lifecycle_helper exec-child`
//                                  (fork + exec), waits for it, emits gen=2
//   lifecycle_helper exec-child    emits lc:hello gen=1 (10 times)
//   lifecycle_helper fork          emits gen=0, forks a child that emits gen=1 (10 times), sleeps
//                                  1 ms 3 times (context switches for --sched) and exits normally,
//                                  waits for it, emits gen=2
//   lifecycle_helper fork-exit     emits gen=0, forks 20 children that emit gen=1 (10 times each)
//                                  and leave with _exit() (no exit-time write-out), emits gen=2
//   lifecycle_helper fork-many N   emits gen=0, forks N children one after another, each emitting
//                                  gen=1 once and leaving with exit(), waits for each before the
//                                  next, emits gen=2 (issue 17, item 5: a child's cost must not
//                                  grow with the number of children before it; bench/fork_cost.sh)
//   lifecycle_helper chain         emits gen=0, execs itself as `chain-1` under the same pid, which
//                                  emits gen=1 and execs `chain-2`, which emits gen=2 and exits
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hushtrace/hushtrace.h"

HUSH_TRACEPOINT(lc, hello, (std::uint32_t, gen), (std::uint32_t, pid), (std::uint32_t, i))

namespace {

void Emit(std::uint32_t gen, int n) {
  for (int i = 0; i < n; ++i) HUSH_TRACE(lc, hello, gen, static_cast<std::uint32_t>(::getpid()), static_cast<std::uint32_t>(i));
}

int WaitFor(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "lifecycle_helper: child failed (status %d)\n", status);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "fork-many") == 0) {
    const long n = std::strtol(argv[2], nullptr, 10);
    if (n < 0 || n > 100000) return 2;
    Emit(0, 1);
    std::fflush(nullptr);
    int failed = 0;
    for (long i = 0; i < n && failed == 0; ++i) {
      const pid_t kid = ::fork();
      if (kid < 0) return 1;
      if (kid == 0) {
        Emit(1, 1);
        std::exit(0);
      }
      failed = WaitFor(kid);
    }
    Emit(2, 1);
    return failed;
  }
  if (argc != 2) return 2;
  const std::string mode = argv[1];
  if (mode == "exec-child") {
    Emit(1, 10);
    return 0;
  }
  if (mode == "chain" || mode == "chain-1") {
    // An exec does not stop the session: these events stay in the ring until `record` recovers
    // them.
    Emit(mode == "chain" ? 0 : 1, 10);
    char next[] = "chain-1", last[] = "chain-2";
    char* args[] = {argv[0], mode == "chain" ? next : last, nullptr};
    ::execv("/proc/self/exe", args);
    std::perror("execv");
    return 127;
  }
  if (mode == "chain-2") {
    Emit(2, 10);
    return 0;
  }
  if (mode == "fork-exit") {
    Emit(0, 10);
    std::fflush(nullptr);
    pid_t kids[20];
    for (pid_t& kid : kids) {
      kid = ::fork();
      if (kid < 0) return 1;
      if (kid == 0) {
        Emit(1, 10);
        ::_exit(0);
      }
    }
    int failed = 0;
    for (const pid_t kid : kids) failed |= WaitFor(kid);
    Emit(2, 10);
    return failed;
  }
  if (mode != "exec-parent" && mode != "fork") return 2;
  Emit(0, 10);
  const pid_t pid = ::fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    if (mode == "fork") {
      Emit(1, 10);
      for (int i = 0; i < 3; ++i) {
        const timespec ms = {0, 1000 * 1000};
        ::nanosleep(&ms, nullptr);
      }
      std::exit(0);
    }
    char child_mode[] = "exec-child";
    char* args[] = {argv[0], child_mode, nullptr};
    ::execv("/proc/self/exe", args);
    std::perror("execv");
    ::_exit(127);
  }
  std::printf("child %d\n", static_cast<int>(pid));
  const int status = WaitFor(pid);
  Emit(2, 10);
  return status;
}
