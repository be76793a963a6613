// Workload 5 of bench/compare/run.py ("compiled in but off", the lmbench subtests of the
// function-tracer thread): the same source built plain, with one 5-byte entry NOP per function
// (gcc -pg -mfentry -mnop-mcount -mrecord-mcount) and with five 1-byte NOPs
// (-fpatchable-function-entry=5); bench/compare/CMakeLists.txt. No tracer is linked: the traced
// runs are `hushtrace record --functions '*'` and `uftrace record -P .` of the NOP builds.
//
//   cmp_lm_* PIPE_ROUNDS CALLS FILES DIR
// prints {"pipe_us": round trip through two pipes between two threads (lat_pipe),
//         "call_ns": per small-function call, "create_per_s"/"delete_per_s": empty files in DIR,
//         "create_cpu_us"/"delete_cpu_us": process CPU per file operation}.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "cpu_time.h"

#define CMP_NI __attribute__((noinline, noipa))

// Named (not anonymous) so that the traced runs can select exactly these functions: `lm::*`.
namespace lm {

double NowS() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "cmp_lm: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

CMP_NI void OneByte(int in, int out) {
  char c = 0;
  if (::write(out, &c, 1) != 1) Die("write");
  if (::read(in, &c, 1) != 1) Die("read");
}

CMP_NI void Echo(int in, int out, long n) {
  char c;
  for (long i = 0; i < n; ++i) {
    if (::read(in, &c, 1) != 1) Die("read");
    if (::write(out, &c, 1) != 1) Die("write");
  }
}

CMP_NI double PipeLatencyUs(long n) {
  int ab[2], ba[2];
  if (::pipe(ab) != 0 || ::pipe(ba) != 0) Die("pipe");
  std::thread t(Echo, ab[0], ba[1], n);
  const double t0 = NowS();
  for (long i = 0; i < n; ++i) OneByte(ba[0], ab[1]);
  const double us = (NowS() - t0) * 1e6 / static_cast<double>(n);
  t.join();
  for (const int fd : {ab[0], ab[1], ba[0], ba[1]}) ::close(fd);
  return us;
}

CMP_NI long Add3(long x) { return x + 3; }
CMP_NI long MulAdd(long x, long y) { return x * y + 1; }

CMP_NI double CallNs(long n) {
  long s = 0;
  const double t0 = NowS();
  for (long i = 0; i < n; ++i) s = MulAdd(Add3(s), 3) & 0xffff;
  const double ns = (NowS() - t0) * 1e9 / static_cast<double>(2 * n);
  if (s == -1) std::puts("");  // keeps s live
  return ns;
}

CMP_NI void CreateOne(const std::string& path) {
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0) Die("open");
  ::close(fd);
}

CMP_NI void DeleteOne(const std::string& path) {
  if (::unlink(path.c_str()) != 0) Die("unlink");
}

struct FileResult {
  double create_per_s, delete_per_s, create_cpu_us, delete_cpu_us;
};

CMP_NI FileResult FileRates(long n, const std::string& dir) {
  FileResult r{};
  const auto nd = static_cast<double>(n);
  double t0 = NowS(), c0 = ProcessCpuSeconds();
  for (long i = 0; i < n; ++i) CreateOne(dir + "/f" + std::to_string(i));
  r.create_per_s = nd / (NowS() - t0);
  r.create_cpu_us = (ProcessCpuSeconds() - c0) * 1e6 / nd;
  t0 = NowS();
  c0 = ProcessCpuSeconds();
  for (long i = 0; i < n; ++i) DeleteOne(dir + "/f" + std::to_string(i));
  r.delete_per_s = nd / (NowS() - t0);
  r.delete_cpu_us = (ProcessCpuSeconds() - c0) * 1e6 / nd;
  return r;
}

}  // namespace lm

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s PIPE_ROUNDS CALLS FILES DIR\n", argv[0]);
    return 1;
  }
  using namespace lm;
  const double pipe_us = PipeLatencyUs(std::atol(argv[1]));
  const double call_ns = CallNs(std::atol(argv[2]));
  const FileResult f = FileRates(std::atol(argv[3]), argv[4]);
  std::printf(
      "{\"pipe_us\": %.3f, \"call_ns\": %.3f, \"create_per_s\": %.0f, \"delete_per_s\": %.0f, "
      "\"create_cpu_us\": %.3f, \"delete_cpu_us\": %.3f}\n",
      pipe_us, call_ns, f.create_per_s, f.delete_per_s, f.create_cpu_us, f.delete_cpu_us);
  return 0;
}
