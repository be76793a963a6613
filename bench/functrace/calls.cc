// The call-heavy program of the function-tracing benchmarks (bench/functrace/run.sh): recursive
// fib plus small non-inlined functions. The same source is built plain and with entry NOPs
// (bench/CMakeLists.txt), then run untraced, traced by hushtrace and traced by uftrace.
//
//   calls N   runs fib(N) and a loop of small calls; prints "calls C ns_per_call X"
//             (wall time of the whole workload over the number of calls it makes, counted
//             in a variable that is not a function call)
//
// FTBENCH_STOP_FUNCTIONS=1 with the runtime preloaded and HUSHTRACE_FUNCTIONS='*': function
// tracing is stopped before main() (hush::functrace::Stop(), looked up by name). Every entry
// is then back to a NOP, and gcc's five 1-byte NOPs have become one 5-byte NOP (the runtime
// converts them when it patches while single-threaded): the untraced cost after conversion.
#include <dlfcn.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>

#if defined(__clang__)
#define NI __attribute__((noinline))
#else
#define NI __attribute__((noinline, noipa))
#endif

static long g_calls = 0;

NI long fib(int n) {
  ++g_calls;
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}
NI long add3(long x) {
  ++g_calls;
  return x + 3;
}
NI long mul_add(long x, long y) {
  ++g_calls;
  return x * y + 1;
}
NI long small_loop(long n) {
  ++g_calls;
  long s = 0;
  for (long i = 0; i < n; ++i) s = mul_add(add3(s), 3) & 0xffff;
  return s;
}

// Before main(): the preloaded runtime's constructor (which starts tracing) has run, and
// callgrind's --toggle-collect=main counts none of this.
__attribute__((constructor)) static void StopFunctionTracing() {
  const char* stop = std::getenv("FTBENCH_STOP_FUNCTIONS");
  if (stop == nullptr || *stop != '1') return;
  auto fn = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "_ZN4hush9functrace4StopEv"));
  if (fn == nullptr) {
    std::fprintf(stderr, "FTBENCH_STOP_FUNCTIONS: the runtime is not loaded\n");
    std::exit(2);
  }
  fn();
}

int main(int argc, char** argv) {
  // FTBENCH_N: N for a harness that runs the program without arguments (bench/startup_runner).
  const char* n_env = std::getenv("FTBENCH_N");
  const int n = argc > 1 ? std::atoi(argv[1]) : n_env != nullptr ? std::atoi(n_env) : 27;
  if (n < 0 || n > 40) {
    std::fprintf(stderr, "usage: %s [N] (or FTBENCH_N=N), 0 <= N <= 40\n", argv[0]);
    return 2;
  }
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  const long f = fib(n);
  const long s = small_loop(n > 8 ? static_cast<long>(1) << (n - 8) : 1);  // n < 8: no negative shift
  clock_gettime(CLOCK_MONOTONIC, &b);
  const double ns = static_cast<double>(b.tv_sec - a.tv_sec) * 1e9 + static_cast<double>(b.tv_nsec - a.tv_nsec);
  std::printf("result %ld %ld calls %ld ns_per_call %.3f\n", f, s, g_calls, ns / static_cast<double>(g_calls));
  return 0;
}
