// The traced program of the function-trigger test (functrace_test.cc, FunctionTrigger*): serve()
// is usually fast and rarely slow. Three rounds of 1,000 fast calls, then one call that sleeps
// 30 ms; rounds are 60 ms apart (past `--snapshot-interval`). helper() is traced too and never
// slow. Prints "slow <n>" for each slow call's argument and "count serve <n>", "count helper <n>".
#include <time.h>

#include <cstdio>

#define NI __attribute__((noinline, noipa))

namespace {

volatile long g_sink = 0;

void SleepMs(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1000000};
  while (::nanosleep(&t, &t) != 0) {
  }
}

}  // namespace

NI long helper(long x) { return x * 7 + 1; }

NI long serve(int request, bool slow) {
  if (slow) SleepMs(30);
  g_sink = g_sink + helper(request);
  return g_sink;
}

int main() {
  long serves = 0;
  int request = 0;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 1000; ++i, ++serves) serve(request++, false);
    std::printf("slow %d\n", request);
    serve(request++, true);
    ++serves;
    SleepMs(60);
  }
  std::printf("count serve %ld\ncount helper %ld\n", serves, serves);
  return 0;
}
