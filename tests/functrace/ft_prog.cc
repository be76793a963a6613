// The traced program of the function-tracing tests (functrace_test.cc), built with patchable
// function entries. Each mode exercises one hazard and checks every result itself: exit status 0
// and, on stdout, "count <function> <n>" lines giving how many times each traced function ran,
// which the test compares with the func:entry events of the trace.
//
//   recursion   fib(22) and mutual recursion; float/int argument registers survive the trampoline
//   exceptions  throws through traced frames: caught mid-stack, rethrown, caught in a destructor
//               during unwinding (nested), thrown from a depth with untraced frames between
//   longjmp     longjmp out of traced frames, then traced frames return normally
//   signals     SIGALRM handlers that call traced functions while main calls them; a SIGUSR1
//               handler that siglongjmps out of traced frames
//   threads     threads created and exiting while patched, each calling traced functions
//   fork        the child calls traced functions (patched code, copied shadow stack) and exits
//   dlopen      a module built with the flags, loaded after tracing started (argv[2])
//   dlreopen    the same module loaded, called, unloaded, then loaded and called again
//   deep        recursion deeper than the shadow stack (untraced below it, counted)
//   backtrace   _Unwind_Backtrace from a function three traced calls deep: prints
//               "program_frames N end M", N the frames walked whose pc is in this program,
//               M 1 if the walk reached the end of the stack (aarch64: through the trampoline's
//               unwind info; x86-64 stops at the return thunk)
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unwind.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#define NI __attribute__((noinline, noipa))

namespace {

enum Fn { kFib, kEven, kOdd, kMix, kLeaf, kThrower, kCatcher, kNested, kJumper, kSetter, kDeep, kWork, kCount };
const char* const kNames[kCount] = {"fib", "is_even", "is_odd", "mix", "leaf", "thrower", "catcher",
                                    "nested_thrower", "jumper", "setter", "deep", "thread_work"};
std::atomic<long> g_calls[kCount];
std::atomic<int> g_bad{0};

void Count(Fn f) { g_calls[f].fetch_add(1, std::memory_order_relaxed); }
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "WRONG: %s\n", what);
    g_bad.store(1);
  }
}

}  // namespace

NI long fib(int n) {
  Count(kFib);
  if (n < 2) return n;
  const long a = fib(n - 1);
  const long b = fib(n - 2);
  return a + b;
}
NI bool is_odd(unsigned n);
NI bool is_even(unsigned n) {
  Count(kEven);
  return n == 0 ? true : is_odd(n - 1);
}
NI bool is_odd(unsigned n) {
  Count(kOdd);
  return n == 0 ? false : is_even(n - 1);
}
// Eight float and six integer argument registers plus stack arguments.
NI double mix(double a, int b, double c, long d, float e, int f, double g, int h, double i, long j,
              double k, int l, double m, double n, long o) {
  Count(kMix);
  return a + b * 2 + c * 3 + static_cast<double>(d) * 4 + e * 5 + f * 6 + g * 7 + h * 8 + i * 9 +
         static_cast<double>(j) * 10 + k * 11 + l * 12 + m * 13 + n * 14 +
         static_cast<double>(o) * 15;
}
NI long leaf(long x) {
  Count(kLeaf);
  return x * 3 + 1;
}

struct Err {
  int v;
};
NI void thrower(int n) {
  Count(kThrower);
  if (n == 0) throw Err{42};
  thrower(n - 1);
  Check(false, "thrower continued after the throw");
}
NI int catcher(int n) {
  Count(kCatcher);
  try {
    thrower(n);
  } catch (const Err& e) {
    return e.v + static_cast<int>(leaf(0));  // traced call inside the handler
  }
  return -1;
}
struct CatchesInDestructor {
  ~CatchesInDestructor() {
    try {
      thrower(2);
    } catch (const Err& e) {
      Check(e.v == 42, "inner exception value");
    }
  }
};
NI void nested_thrower(int n) {
  Count(kNested);
  CatchesInDestructor d;
  thrower(n);
}

jmp_buf g_jmp;
NI void jumper(int n) {
  Count(kJumper);
  if (n == 0) longjmp(g_jmp, 7);
  jumper(n - 1);
  Check(false, "jumper continued after longjmp");
}
NI int setter(int n) {
  Count(kSetter);
  volatile int result = -1;
  if (const int v = setjmp(g_jmp); v == 0) {
    jumper(n);
  } else {
    result = v + static_cast<int>(leaf(1));
  }
  return result;
}

NI long deep(int n) {
  Count(kDeep);
  if (n == 0) return 0;
  return 1 + deep(n - 1);
}

NI long thread_work(int seed) {
  Count(kWork);
  long s = 0;
  for (int i = 0; i < 200; ++i) {
    const long r = leaf(seed + i);
    if (r != (seed + i) * 3 + 1) g_bad.store(1);
    s += r;
  }
  return s + fib(8);
}

namespace {

void CheckMix() {
  const double expect = 1.5 + 2 * 2 + 2.5 * 3 + 4.0 * 4 + 0.5f * 5 + 6 * 6 + 7.5 * 7 + 8 * 8 +
                        9.5 * 9 + 10.0 * 10 + 11.5 * 11 + 12 * 12 + 13.5 * 13 + 14.5 * 14 + 15.0 * 15;
  Check(mix(1.5, 2, 2.5, 4, 0.5f, 6, 7.5, 8, 9.5, 10, 11.5, 12, 13.5, 14.5, 15) == expect, "mix");
}

int Recursion() {
  Check(fib(22) == 17711, "fib(22)");
  Check(is_even(1001) == false && is_even(2000), "is_even");
  for (int i = 0; i < 100; ++i) CheckMix();
  return 0;
}

int Exceptions() {
  for (int i = 0; i < 200; ++i) {
    Check(catcher(i % 8) == 42 + 1, "caught value");
    try {
      nested_thrower(3);
    } catch (const Err& e) {
      Check(e.v == 42, "outer exception value");
    }
    try {
      try {
        thrower(2);
      } catch (...) {
        throw;
      }
    } catch (const Err& e) {
      Check(e.v == 42, "rethrown value");
    }
    Check(leaf(i) == i * 3 + 1, "leaf after exceptions");
  }
  CheckMix();
  return 0;
}

int Longjmp() {
  for (int i = 0; i < 300; ++i) {
    Check(setter(i % 10) == 7 + 4, "setter result");
    Check(fib(6) == 8, "fib after longjmp");
  }
  return 0;
}

std::atomic<int> g_alarms{0};
sigjmp_buf g_sigjmp;
void OnAlarm(int) {
  g_alarms.fetch_add(1, std::memory_order_relaxed);
  if (leaf(5) != 16 || fib(6) != 8) g_bad.store(1);
}
void OnUsr1(int) {
  if (leaf(2) != 7) g_bad.store(1);
  siglongjmp(g_sigjmp, 1);
}
NI void RaiseDeep(int n) {
  if (n == 0) {
    raise(SIGUSR1);
    Check(false, "returned from a handler that siglongjmps");
  }
  if (leaf(n) != n * 3 + 1) g_bad.store(1);
  RaiseDeep(n - 1);
}

int Signals() {
  struct sigaction sa = {};
  sa.sa_handler = OnAlarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, nullptr);
  sa.sa_handler = OnUsr1;
  sigaction(SIGUSR1, &sa, nullptr);
  itimerval it = {{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &it, nullptr);
  // Untraced work between traced calls keeps the event rate well below what the consumer
  // writes: a full ring would drop events (counted), which this test must not see.
  for (long i = 0; i < 2000000 && g_alarms.load() < 200; ++i) {
    for (int k = 0; k < 100; ++k) asm volatile("" ::: "memory");
    if (leaf(i) != i * 3 + 1) g_bad.store(1);
    if (i % 64 == 0 && fib(5) != 5) g_bad.store(1);
  }
  itimerval off = {};
  setitimer(ITIMER_REAL, &off, nullptr);
  for (int i = 0; i < 100; ++i) {
    if (sigsetjmp(g_sigjmp, 1) == 0) RaiseDeep(5);
    Check(fib(4) == 3, "fib after siglongjmp");
  }
  std::printf("alarms %d\n", g_alarms.load());
  return 0;
}

int Threads() {
  for (int round = 0; round < 20; ++round) {
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) {
      ts.emplace_back([t, round] {
        const int seed = t * 1000 + round;
        long expect = 0;
        for (int i = 0; i < 200; ++i) expect += (seed + i) * 3 + 1;
        if (thread_work(seed) != expect + 21) g_bad.store(1);
      });
    }
    for (auto& th : ts) th.join();
  }
  return 0;
}

int Fork() {
  Check(fib(10) == 55, "fib before fork");
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    const bool ok = fib(15) == 610 && leaf(3) == 10 && catcher(3) == 43;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked child's results");
  Check(fib(10) == 55, "fib after fork");
  return 0;
}

int Dlopen(const char* path) {
  Check(fib(5) == 5, "fib before dlopen");
  void* h = dlopen(path, RTLD_NOW);
  if (h == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto square = reinterpret_cast<long (*)(long)>(dlsym(h, "ft_mod_square"));
  auto sum = reinterpret_cast<long (*)(int)>(dlsym(h, "ft_mod_sum"));
  if (square == nullptr || sum == nullptr) return 1;
  for (long i = 0; i < 1000; ++i) Check(square(i) == i * i, "ft_mod_square");
  Check(sum(10) == 55, "ft_mod_sum");
  return 0;
}

// dlopen, calls, dlclose (unloaded: the only reference), dlopen again, the same calls: the
// second copy must be traced too.
int Dlreopen(const char* path) {
  for (int round = 0; round < 2; ++round) {
    void* h = dlopen(path, RTLD_NOW);
    if (h == nullptr) {
      std::fprintf(stderr, "dlopen: %s\n", dlerror());
      return 1;
    }
    auto square = reinterpret_cast<long (*)(long)>(dlsym(h, "ft_mod_square"));
    if (square == nullptr) return 1;
    for (long i = 0; i < 100; ++i) Check(square(i) == i * i, "ft_mod_square");
    if (dlclose(h) != 0) return 1;
  }
  return 0;
}

int Deep() {
  // Run on a thread with a large stack: 20,000 frames of deep() exceed the shadow stack.
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 << 20);
  pthread_t t;
  pthread_create(&t, &attr, [](void*) -> void* {
    Check(deep(20000) == 20000, "deep(20000)");
    Check(deep(100) == 100, "deep(100) after");
    return nullptr;
  }, nullptr);
  pthread_join(t, nullptr);
  return 0;
}

}  // namespace

std::uintptr_t g_text_lo = 0, g_text_hi = 0;  // this program's executable segment
int g_program_frames = 0;

_Unwind_Reason_Code CountFrame(_Unwind_Context* context, void*) {
  const std::uintptr_t ip = _Unwind_GetIP(context);
  if (ip >= g_text_lo && ip < g_text_hi) ++g_program_frames;
  return _URC_NO_REASON;
}

NI int bt_leaf(int n) {
  const _Unwind_Reason_Code rc = _Unwind_Backtrace(CountFrame, nullptr);
  return rc == _URC_END_OF_STACK ? n : -1;
}
NI int bt_mid(int n) { return bt_leaf(n + 1) + 1; }
NI int bt_outer(int n) { return bt_mid(n + 1) + 1; }

int Backtrace() {
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void*) {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0) {
            g_text_lo = info->dlpi_addr + ph.p_vaddr;
            g_text_hi = g_text_lo + ph.p_memsz;
          }
        }
        return 1;  // the first module is the program
      },
      nullptr);
  const int r = bt_outer(0);
  std::printf("program_frames %d end %d\n", g_program_frames, r == 4 ? 1 : 0);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string mode = argv[1];
  int rc = 2;
  if (mode == "recursion") rc = Recursion();
  if (mode == "exceptions") rc = Exceptions();
  if (mode == "longjmp") rc = Longjmp();
  if (mode == "signals") rc = Signals();
  if (mode == "threads") rc = Threads();
  if (mode == "fork") rc = Fork();
  if (mode == "dlopen" && argc > 2) rc = Dlopen(argv[2]);
  if (mode == "dlreopen" && argc > 2) rc = Dlreopen(argv[2]);
  if (mode == "deep") rc = Deep();
  if (mode == "backtrace") rc = Backtrace();
  for (int f = 0; f < kCount; ++f) {
    if (long n = g_calls[f].load()) std::printf("count %s %ld\n", kNames[f], n);
  }
  return rc != 0 ? rc : g_bad.load() != 0 ? 3 : 0;
}
