// Prototype measurement for the next function-tracing step (docs/benchmarks.md, "Function
// tracing"): what the mispredicted return of the return-address hijack costs, against a
// trampoline that calls the body in place (return_scheme.S explains both). The same functions,
// entry NOPs patched in turn to each scheme, interleaved rounds, one process, one thread.
//   ftbench_return_scheme [ROUNDS]
// Prints ns per call (median over rounds) for: plain (one 5-byte NOP), hijack, callin, and checks
// every result, including stack-passed arguments through the in-place call.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
void rs_set_buffer(void* events, void* end, void* shadow);
void rs_hijack_entry();
void rs_stub_rs_fib();
void rs_stub_rs_leaf();
void rs_stub_rs_many_args();
extern std::uint64_t rs_shadow_top;

#define TRACEABLE __attribute__((noinline, patchable_function_entry(5, 0)))
TRACEABLE long rs_fib(long n) { return n < 2 ? n : rs_fib(n - 1) + rs_fib(n - 2); }
TRACEABLE long rs_leaf(long x) {
  asm volatile("" : "+r"(x));
  return x + 1;
}
// Eight arguments: the last two travel on the stack.
TRACEABLE long rs_many_args(long a, long b, long c, long d, long e, long f, long g, long h) {
  return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}
}

namespace {

enum Scheme { kPlain, kHijack, kCallin };
const char* const kNames[] = {"plain", "hijack", "callin"};

void Patch(void* fn, Scheme s, void (*stub)()) {
  auto* p = static_cast<std::uint8_t*>(fn);
  const long page = ::sysconf(_SC_PAGESIZE);
  auto* start = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) & ~static_cast<std::uintptr_t>(page - 1));
  if (::mprotect(start, 2 * page, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
    std::perror("mprotect");
    std::exit(1);
  }
  std::uint8_t code[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};  // nopl 0(%rax,%rax,1)
  if (s != kPlain) {
    const auto target = reinterpret_cast<std::intptr_t>(s == kHijack ? reinterpret_cast<void*>(rs_hijack_entry)
                                                                       : reinterpret_cast<void*>(stub));
    const std::int64_t rel = target - (reinterpret_cast<std::intptr_t>(p) + 5);
    const std::int32_t rel32 = static_cast<std::int32_t>(rel);
    if (rel32 != rel) {
      std::fprintf(stderr, "target out of rel32 range\n");
      std::exit(1);
    }
    code[0] = s == kHijack ? 0xe8 : 0xe9;  // call / jmp rel32
    std::memcpy(code + 1, &rel32, 4);
  }
  std::memcpy(p, code, 5);
  __builtin___clear_cache(reinterpret_cast<char*>(p), reinterpret_cast<char*>(p + 5));
}

void PatchAll(Scheme s) {
  Patch(reinterpret_cast<void*>(rs_fib), s, rs_stub_rs_fib);
  Patch(reinterpret_cast<void*>(rs_leaf), s, rs_stub_rs_leaf);
  Patch(reinterpret_cast<void*>(rs_many_args), s, rs_stub_rs_many_args);
}

constexpr long kFibN = 22;
constexpr long kLeafCalls = 20000;

long Workload(long* calls) {
  long sum = rs_fib(kFibN);
  for (long i = 0; i < kLeafCalls; ++i) sum += rs_leaf(i);
  sum += rs_many_args(1, 2, 3, 4, 5, 6, 7, 8);
  *calls = 57313 + kLeafCalls + 1;  // fib(22) makes 57,313 calls
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  std::vector<std::uint64_t> events(1 << 20), shadow(1 << 12);
  rs_set_buffer(events.data(), events.data() + events.size(), shadow.data());
  const std::uint64_t shadow_base = rs_shadow_top;
  std::vector<double> ns[3];
  long expect = 0;
  for (int r = 0; r < rounds; ++r) {
    for (Scheme s : {kPlain, kHijack, kCallin}) {
      PatchAll(s);
      long calls = 0;
      long sum = Workload(&calls);  // warm-up
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < 10; ++k) sum += Workload(&calls);
      const auto t1 = std::chrono::steady_clock::now();
      if (expect == 0) expect = sum;
      if (sum != expect || rs_shadow_top != shadow_base ||
          rs_many_args(1, 2, 3, 4, 5, 6, 7, 8) != 204 || rs_many_args(8, 7, 6, 5, 4, 3, 2, 1) != 120) {
        std::fprintf(stderr, "%s: wrong result (%ld vs %ld, shadow %+ld)\n", kNames[s], sum, expect,
                     static_cast<long>(rs_shadow_top - shadow_base));
        return 1;
      }
      ns[s].push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / (10.0 * calls));
    }
  }
  PatchAll(kPlain);
  // One rdtsc, for scale (both schemes read it twice per call).
  std::vector<double> tsc;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t x = 0;
    for (int k = 0; k < 1000000; ++k) x += __builtin_ia32_rdtsc();
    const auto t1 = std::chrono::steady_clock::now();
    asm volatile("" : : "r"(x));
    tsc.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / 1e6);
  }
  std::sort(tsc.begin(), tsc.end());
  double med[3];
  for (int s = 0; s < 3; ++s) {
    std::sort(ns[s].begin(), ns[s].end());
    med[s] = ns[s][ns[s].size() / 2];
  }
  std::printf("rounds %d, calls per workload %ld, rdtsc %.2f ns (median)\n", rounds, 57313 + kLeafCalls + 1,
              tsc[tsc.size() / 2]);
  for (int s = 0; s < 3; ++s) {
    std::printf("%-7s ns_per_call median %.2f  min %.2f  max %.2f   traced cost %.2f\n", kNames[s], med[s],
                ns[s].front(), ns[s].back(), med[s] - med[kPlain]);
  }
  std::printf("callin / hijack traced cost: %.2f\n", (med[kCallin] - med[kPlain]) / (med[kHijack] - med[kPlain]));
  return 0;
}
