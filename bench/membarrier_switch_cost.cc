// What the constructor's membarrier registration costs a program that never traces (issue 14;
// docs/benchmarks.md, "Attach from the command line"): two threads pass a byte back and forth over
// two pipes, ROUNDS round trips, with or without
// membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) made first, as libhushtrace's
// constructor makes it (src/base/membarrier.h). On x86-64 a registered process gets a
// core-serializing instruction whenever a CPU goes from a kernel thread (idle) back to one of its
// threads, which is what each blocking round trip does on each side.
//
//   membarrier_switch_cost ROUNDS 0|1       prints ns per round trip
//
// Alternate the two modes over several runs (and under `taskset -c 0` for switches on one CPU).
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s ROUNDS 0|1\n", argv[0]);
    return 2;
  }
  const long rounds = std::atol(argv[1]);
  if (std::atoi(argv[2]) != 0 &&
      ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) != 0) {
    std::perror("membarrier(REGISTER_PRIVATE_EXPEDITED_SYNC_CORE)");
    return 1;
  }
  int to_peer[2], to_main[2];
  if (::pipe(to_peer) != 0 || ::pipe(to_main) != 0) {
    std::perror("pipe");
    return 1;
  }
  std::thread peer([&] {
    char c;
    for (long i = 0; i < rounds; ++i) {
      if (::read(to_peer[0], &c, 1) != 1 || ::write(to_main[1], &c, 1) != 1) std::abort();
    }
  });
  timespec t0, t1;
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  char c = 1;
  for (long i = 0; i < rounds; ++i) {
    if (::write(to_peer[1], &c, 1) != 1 || ::read(to_main[0], &c, 1) != 1) std::abort();
  }
  ::clock_gettime(CLOCK_MONOTONIC, &t1);
  peer.join();
  const double ns = static_cast<double>(t1.tv_sec - t0.tv_sec) * 1e9 + static_cast<double>(t1.tv_nsec - t0.tv_nsec);
  std::printf("%.0f ns per round trip (%s)\n", ns / static_cast<double>(rounds),
              argv[2][0] != '0' ? "registered" : "not registered");
  return 0;
}
