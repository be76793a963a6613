// host_costs: what the host charges for the operations a traced program adds to an untraced one.
//
// Every per-exec and per-thread figure of docs/benchmarks.md is mostly made of a handful of
// kernel operations: system calls, first touches of pages (the ring's, a new thread's stack),
// files created and removed in the trace directory, a thread started and joined. Their price
// differs several-fold between hosts (a VM whose guest page tables are shadowed by the
// hypervisor pays for every first touch of a page, even one already populated with
// MADV_POPULATE_WRITE, and that time is invisible to a sampling profiler inside the guest).
// This program prices each on the host it runs on, so that a figure from one host can be
// compared with another's.
//
//   host_costs [DIR]     DIR: where the file operations run (default: the current directory;
//                        give the trace file system: ext4 and tmpfs differ)
//
// Prints one JSON object; each figure is the median of 9 rounds.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace {

constexpr std::size_t kPage = 4096;
constexpr int kRounds = 9;

double NowNs() {
  timespec t;
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

[[noreturn]] void Die(const char* what) {
  std::perror(what);
  std::exit(1);
}

// Writes one byte per page: the first touch of each page through the mapping.
double TouchPages(char* p, std::size_t pages, char value) {
  const double t0 = NowNs();
  for (std::size_t i = 0; i < pages; ++i) {
    *static_cast<volatile char*>(p + i * kPage) = value;
  }
  return (NowNs() - t0) / static_cast<double>(pages);
}

struct FileMapping {
  int fd = -1;
  char* p = nullptr;
  std::size_t bytes = 0;
};

// A file in `dir` sized to `pages`, its first `written` pages written with zeros by write() (as
// a ring's header and first sub-buffer are, src/ring/ring_buffer.cc), mapped shared.
FileMapping MapFile(const std::string& dir, std::size_t pages, std::size_t written) {
  const std::string path = dir + "/.host_costs_map";
  FileMapping m;
  m.fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (m.fd < 0) Die(path.c_str());
  ::unlink(path.c_str());
  m.bytes = pages * kPage;
  if (::ftruncate(m.fd, static_cast<off_t>(m.bytes)) != 0) Die("ftruncate");
  std::vector<char> zeros(written * kPage);
  if (!zeros.empty() && ::write(m.fd, zeros.data(), zeros.size()) != static_cast<ssize_t>(zeros.size())) {
    Die("write");
  }
  void* p = ::mmap(nullptr, m.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd, 0);
  if (p == MAP_FAILED) Die("mmap");
  m.p = static_cast<char*>(p);
  return m;
}

void Unmap(FileMapping& m) {
  ::munmap(m.p, m.bytes);
  ::close(m.fd);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  constexpr std::size_t kPages = 256;  // a 1 MiB ring

  std::vector<double> syscall_ns, anon_ns, anon_again_ns, file_hole_ns, file_written_ns, populate_ns,
      after_populate_ns, create_us, unlink_us, thread_us;
  for (int round = 0; round < kRounds; ++round) {
    {
      constexpr int kCalls = 20000;
      const double t0 = NowNs();
      for (int i = 0; i < kCalls; ++i) ::syscall(SYS_getppid);
      syscall_ns.push_back((NowNs() - t0) / kCalls);
    }
    {
      void* p = ::mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) Die("mmap");
      anon_ns.push_back(TouchPages(static_cast<char*>(p), kPages, 1));
      anon_again_ns.push_back(TouchPages(static_cast<char*>(p), kPages, 2));
      ::munmap(p, kPages * kPage);
    }
    {
      FileMapping m = MapFile(dir, kPages, 0);
      file_hole_ns.push_back(TouchPages(m.p, kPages, 1));
      Unmap(m);
    }
    {
      FileMapping m = MapFile(dir, kPages, kPages);
      file_written_ns.push_back(TouchPages(m.p, kPages, 1));
      Unmap(m);
    }
    {
      FileMapping m = MapFile(dir, kPages, kPages);
      const double t0 = NowNs();
      if (::madvise(m.p, m.bytes, MADV_POPULATE_WRITE) != 0) Die("madvise(MADV_POPULATE_WRITE)");
      populate_ns.push_back((NowNs() - t0) / kPages);
      after_populate_ns.push_back(TouchPages(m.p, kPages, 1));
      Unmap(m);
    }
    {
      constexpr int kFiles = 32;
      std::vector<std::string> names;
      for (int i = 0; i < kFiles; ++i) names.push_back(dir + "/.host_costs_" + std::to_string(i));
      double t0 = NowNs();
      for (const std::string& n : names) {
        const int fd = ::open(n.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) Die(n.c_str());
        ::close(fd);
      }
      create_us.push_back((NowNs() - t0) / kFiles / 1e3);
      t0 = NowNs();
      for (const std::string& n : names) ::unlink(n.c_str());
      unlink_us.push_back((NowNs() - t0) / kFiles / 1e3);
    }
    {
      constexpr int kThreads = 16;
      const double t0 = NowNs();
      for (int i = 0; i < kThreads; ++i) std::thread([] {}).join();
      thread_us.push_back((NowNs() - t0) / kThreads / 1e3);
    }
  }
  std::printf(
      "{\"dir\": \"%s\", \"syscall_ns\": %.0f, \"anon_first_touch_ns_per_page\": %.0f, "
      "\"anon_second_touch_ns_per_page\": %.0f, \"file_hole_first_touch_ns_per_page\": %.0f, "
      "\"file_written_first_touch_ns_per_page\": %.0f, \"populate_write_ns_per_page\": %.0f, "
      "\"first_touch_after_populate_ns_per_page\": %.0f, \"create_file_us\": %.1f, "
      "\"unlink_file_us\": %.1f, \"thread_create_join_us\": %.1f}\n",
      dir.c_str(), Median(syscall_ns), Median(anon_ns), Median(anon_again_ns), Median(file_hole_ns),
      Median(file_written_ns), Median(populate_ns), Median(after_populate_ns), Median(create_us),
      Median(unlink_us), Median(thread_us));
  return 0;
}
