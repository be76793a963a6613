// Helpers shared by the benchmark executables (no tracer code here).
#ifndef HUSHTRACE_BENCH_BENCH_COMMON_H_
#define HUSHTRACE_BENCH_BENCH_COMMON_H_

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace hushbench {

// 32 characters (33 bytes with the NUL), the payload of the string benchmarks.
inline constexpr char kString32[] = "0123456789abcdef0123456789ABCDEF";
static_assert(sizeof kString32 == 33);

// Hides a value from the optimizer (so that a string's length is not folded at compile time:
// LTTng-UST's probe is out of line and computes strlen at run time, so must hushtrace here).
template <typename T>
inline T Opaque(T v) {
  asm volatile("" : "+r"(v));
  return v;
}

// Where benchmark traces go: $HUSHBENCH_TMP, else /dev/shm (so that both tracers are measured
// writing to memory, not to this VM's shared disk), else $TMPDIR, else /tmp.
inline std::string ScratchBase() {
  if (const char* t = ::getenv("HUSHBENCH_TMP"); t != nullptr && *t != '\0') return t;
  if (::access("/dev/shm", W_OK) == 0) return "/dev/shm";
  if (const char* t = ::getenv("TMPDIR"); t != nullptr && *t != '\0') return t;
  return "/tmp";
}

// Creates a fresh private directory under ScratchBase(); returns "" on failure.
inline std::string MakeScratchDir(const char* prefix) {
  std::string templ = ScratchBase() + "/" + prefix + ".XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return "";
  return templ;
}

}  // namespace hushbench

#endif  // HUSHTRACE_BENCH_BENCH_COMMON_H_
