// ring_reserve_cost: what reserving a ring's first sub-buffer costs a thread, by the ways the
// runtime has done it (src/ring/ring_buffer.h, "First sub-buffer"), for a thread that uses a
// little of it and for one that uses most of it.
//
// Each round creates a ring-shaped file the way Ring::Create does (O_EXCL, ftruncate to a 4 KiB
// header and 8 sub-buffers of 128 KiB, zeros written, mapped MAP_SHARED with MADV_RANDOM), then
// writes one byte in each page of sub-buffer 0 up to TOUCH KiB, as a producer filling its
// first packet does, and reserves what it needs on the way:
//
//   zeros    the header and all of sub-buffer 0 written with zeros at creation (before 77f4fd8)
//   steps    the header and 16 KiB written; then MADV_POPULATE_WRITE 32 KiB at a time (77f4fd8)
//   rest     the header and 16 KiB written; then the rest of the sub-buffer in one
//            MADV_POPULATE_WRITE when the first 16 KiB are used up (24e0d4d, the runtime's way)
//
// Timed from the file's creation to the last touch; the file is unmapped and removed after each
// round, outside the time.
//
//   ring_reserve_cost DIR [TOUCH_KIB...]   DIR: the trace file system (ext4 and tmpfs differ);
//                                          TOUCH_KIB default: 4 96
//
// Prints one line per (mode, TOUCH): the median and the 25th percentile of 200 rounds, in us.
// On ext4 the file creation itself dominates and depends on the file system's recent deletions
// (docs/benchmarks.md, "Per exec under a session"): compare modes within one run.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace {

constexpr std::size_t kHeader = 4096;
constexpr std::size_t kSubbuf = 128 * 1024;
constexpr std::size_t kRingBytes = kHeader + 8 * kSubbuf;
constexpr std::size_t kFirst = 16 * 1024;
constexpr std::size_t kStep = 32 * 1024;
constexpr int kRounds = 200;

double NowUs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

bool WriteZeros(int fd, std::size_t len) {
  static char zeros[16384];
  iovec iov[64];
  int n = 0;
  for (std::size_t done = 0; done < len; done += iov[n++].iov_len) {
    iov[n] = {zeros, std::min(len - done, sizeof zeros)};
  }
  return writev(fd, iov, n) == static_cast<ssize_t>(len);
}

enum class Mode { kZeros, kSteps, kRest };

// One round; -1 on a failed system call.
double Round(const std::string& path, Mode mode, std::size_t touch) {
  const double t0 = NowUs();
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, kRingBytes) != 0 ||
      !WriteZeros(fd, kHeader + (mode == Mode::kZeros ? kSubbuf : kFirst))) {
    return -1;
  }
  auto* map = static_cast<char*>(mmap(nullptr, kRingBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  close(fd);
  if (map == MAP_FAILED) return -1;
  madvise(map, kRingBytes, MADV_RANDOM);
  char* const data = map + kHeader;
  std::size_t reserved = mode == Mode::kZeros ? kSubbuf : kFirst;
  for (std::size_t off = 0; off < touch; off += 4096) {
    if (off >= reserved) {
      const std::size_t want = mode == Mode::kSteps ? std::min(kSubbuf, reserved + kStep) : kSubbuf;
      if (madvise(data + reserved, want - reserved, MADV_POPULATE_WRITE) != 0) return -1;
      reserved = want;
    }
    data[off] = 1;
  }
  const double t1 = NowUs();
  munmap(map, kRingBytes);
  unlink(path.c_str());
  return t1 - t0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ring_reserve_cost DIR [TOUCH_KIB...]\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<std::size_t> touches;
  for (int i = 2; i < argc; ++i) touches.push_back(std::strtoul(argv[i], nullptr, 10) * 1024);
  if (touches.empty()) touches = {4 * 1024, 96 * 1024};
  const struct {
    Mode mode;
    const char* name;
  } kModes[] = {{Mode::kZeros, "zeros"}, {Mode::kSteps, "steps"}, {Mode::kRest, "rest"}};
  for (const std::size_t touch : touches) {
    if (touch > kSubbuf) {
      std::fprintf(stderr, "ring_reserve_cost: TOUCH_KIB is at most %zu\n", kSubbuf / 1024);
      return 2;
    }
    for (const auto& m : kModes) {
      std::vector<double> us;
      for (int r = 0; r < kRounds; ++r) {
        const double t = Round(dir + "/ring_reserve_cost." + std::to_string(getpid()), m.mode, touch);
        if (t < 0) {
          std::perror("ring_reserve_cost");
          return 1;
        }
        us.push_back(t);
      }
      std::sort(us.begin(), us.end());
      std::printf("%-5s touch %3zu KiB: median %7.1f us, p25 %7.1f us (%d rounds, %s)\n", m.name,
                  touch / 1024, us[us.size() / 2], us[us.size() / 4], kRounds, dir.c_str());
    }
  }
  return 0;
}
