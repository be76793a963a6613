// The traced child program of the process-level tests (process_test.cc), built twice: linked
// with the shared runtime (hush_child) and with the static one (hush_child_static). Sessions come
// from the environment (HUSHTRACE_*), as for any traced program.
//
//   hush_child emit N                 main thread emits child:seq 0..N-1, returns from main
//   hush_child threads T N            T threads emit N events each, joined, returns from main
//   hush_child exit-thread T N        T threads emit N events each and then keep emitting
//                                     (throttled) while another thread calls exit(0)
//   hush_child flight-wait N1 N2      emits N1 events, prints "ready", waits for a line on
//                                     stdin, emits N2 more, returns from main
//   hush_child fsize B N F            emits event 0 if F is "attached" (the thread's ring exists),
//                                     sets RLIMIT_FSIZE to B bytes, emits the rest of 0..N-1
//   hush_child aslimit N              limits its address space so that no ring can be mapped, emits N
//   hush_child aslimit_tight N        the same with 64 KiB to spare: not even the copy buffer
//   hush_child unwritable N1 N2       emits N1, waits for a line on stdin, emits N2 on two threads
//   hush_child session-emit DIR N     starts a stream session of child:* into DIR (hush::Session,
//                                     4 MiB rings), emits N on the main thread, stops it and
//                                     prints its final counts: discarded and lost on write
//
// child:seq carries (thread, seq) with seq counting from 0 per thread; child:last carries how
// many quota events were emitted before exit() was called.
#include <hushtrace/hushtrace.h>
#include <hushtrace/session.h>
#include <poll.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

HUSH_TRACEPOINT(child, seq, (std::uint32_t, thread), (std::uint64_t, seq))
HUSH_TRACEPOINT(child, last, (std::uint64_t, total))

namespace {

std::uint64_t Arg(char** argv, int i) { return std::strtoull(argv[i], nullptr, 10); }

int Emit(std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) HUSH_TRACE(child, seq, std::uint32_t{0}, i);
  std::printf("child: emitted %llu\n", static_cast<unsigned long long>(n));
  return 0;
}

int Threads(std::uint32_t t, std::uint64_t n) {
  std::vector<std::thread> threads;
  for (std::uint32_t k = 0; k < t; ++k) {
    threads.emplace_back([k, n] {
      for (std::uint64_t i = 0; i < n; ++i) HUSH_TRACE(child, seq, k, i);
    });
  }
  for (auto& th : threads) th.join();
  std::printf("child: emitted %llu\n", static_cast<unsigned long long>(t * n));
  return 0;
}

[[noreturn]] void ExitThread(std::uint32_t t, std::uint64_t n) {
  std::atomic<std::uint32_t> done{0};
  for (std::uint32_t k = 0; k < t; ++k) {
    std::thread([k, n, &done] {
      std::uint64_t i = 0;
      for (; i < n; ++i) HUSH_TRACE(child, seq, k, i);
      done.fetch_add(1);
      for (;; ++i) {  // keep emitting until the process is gone
        HUSH_TRACE(child, seq, k, i);
        ::usleep(200);
      }
    }).detach();
  }
  std::thread exiter([t, n, &done] {
    while (done.load() < t) ::usleep(1000);
    ::usleep(20000);  // the others are emitting their extra events now
    HUSH_TRACE(child, last, std::uint64_t{t} * n);
    std::printf("child: exiting from a thread\n");
    std::fflush(stdout);
    std::exit(0);
  });
  exiter.join();  // never returns
  std::abort();
}

// Waits for a line on stdin, waking up now and then: ThreadSanitizer delivers a signal (SIGUSR2)
// to a thread only when it passes through one of its interceptors.
bool WaitForLine() {
  pollfd in = {0, POLLIN, 0};
  while (::poll(&in, 1, 20) == 0) {
  }
  char line[64];
  return std::fgets(line, sizeof line, stdin) != nullptr;
}

int FlightWait(std::uint64_t n1, std::uint64_t n2) {
  std::uint64_t i = 0;
  for (; i < n1; ++i) HUSH_TRACE(child, seq, std::uint32_t{0}, i);
  std::printf("child: ready\n");
  std::fflush(stdout);
  if (!WaitForLine()) return 3;
  for (; i < n1 + n2; ++i) HUSH_TRACE(child, seq, std::uint32_t{0}, i);
  std::printf("child: done\n");
  return 0;
}

int FileSizeLimit(std::uint64_t bytes, std::uint64_t n, const std::string& first) {
  std::uint64_t i = 0;
  if (first == "attached") HUSH_TRACE(child, seq, std::uint32_t{0}, i++);
  const rlimit limit = {bytes, bytes};
  if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) {
    std::perror("setrlimit");
    return 3;
  }
  for (; i < n; ++i) HUSH_TRACE(child, seq, std::uint32_t{0}, i);
  std::printf("child: emitted %llu\n", static_cast<unsigned long long>(n));
  return 0;
}

int SessionEmit(const char* dir, std::uint64_t n) {
  hush::SessionOptions options;
  options.events = {"child:*"};
  options.output_dir = dir;
  // 4 MiB: where a ring's blocks are all reserved at creation (qemu-user: ring_buffer.cc, Create),
  // the disk-full test's 8 MiB file system must still hold the ring and some stream.
  options.buffer_size = std::size_t{4} << 20;
  std::string error;
  std::unique_ptr<hush::Session> session = hush::Session::Start(options, &error);
  if (!session) {
    std::fprintf(stderr, "child: %s\n", error.c_str());
    return 3;
  }
  for (std::uint64_t i = 0; i < n; ++i) HUSH_TRACE(child, seq, std::uint32_t{0}, i);
  session->Stop();
  const hush::SessionStats stats = session->Stats();
  std::printf("child: emitted %llu, discarded %llu, lost on write %llu\n", static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(stats.events_discarded),
              static_cast<unsigned long long>(stats.events_lost_on_write));
  return 0;
}

// Address space limited to what the process maps now plus `headroom_kib`, before its first
// event: with 16 MiB the ring (HUSHTRACE_BUFFER_SIZE above that) cannot be mapped; with 64 KiB
// not even the session's copy buffer (one sub-buffer, mapped with the first ring).
int AddressSpaceLimit(std::uint64_t n, std::uint64_t headroom_kib) {
  std::uint64_t vm_kib = 0;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::strncmp(line, "VmSize:", 7) == 0) vm_kib = std::strtoull(line + 7, nullptr, 10);
    }
    std::fclose(f);
  }
  const rlimit limit = {(vm_kib + headroom_kib) << 10, RLIM_INFINITY};
  if (vm_kib == 0 || ::setrlimit(RLIMIT_AS, &limit) != 0) {
    std::perror("setrlimit");
    return 3;
  }
  return Emit(n);
}

// Emits N1 events, prints "child: ready", waits for a line on stdin (the test makes the trace
// directory unwritable meanwhile), then emits N2 more on this thread and N2 on a new thread.
int Unwritable(std::uint64_t n1, std::uint64_t n2) {
  std::uint64_t i = 0;
  for (; i < n1; ++i) HUSH_TRACE(child, seq, std::uint32_t{0}, i);
  std::printf("child: ready\n");
  std::fflush(stdout);
  if (!WaitForLine()) return 3;
  std::thread other([n2] {
    for (std::uint64_t k = 0; k < n2; ++k) HUSH_TRACE(child, seq, std::uint32_t{1}, k);
  });
  for (; i < n1 + n2; ++i) HUSH_TRACE(child, seq, std::uint32_t{0}, i);
  other.join();
  std::printf("child: done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "emit" && argc == 3) return Emit(Arg(argv, 2));
  if (mode == "threads" && argc == 4)
    return Threads(static_cast<std::uint32_t>(Arg(argv, 2)), Arg(argv, 3));
  if (mode == "exit-thread" && argc == 4)
    ExitThread(static_cast<std::uint32_t>(Arg(argv, 2)), Arg(argv, 3));
  if (mode == "flight-wait" && argc == 4) return FlightWait(Arg(argv, 2), Arg(argv, 3));
  if (mode == "aslimit" && argc == 3) return AddressSpaceLimit(Arg(argv, 2), 16u << 10);
  if (mode == "aslimit_tight" && argc == 3) return AddressSpaceLimit(Arg(argv, 2), 64);
  if (mode == "unwritable" && argc == 4) return Unwritable(Arg(argv, 2), Arg(argv, 3));
  if (mode == "session-emit" && argc == 4) return SessionEmit(argv[2], Arg(argv, 3));
  if (mode == "fsize" && argc == 5) return FileSizeLimit(Arg(argv, 2), Arg(argv, 3), argv[4]);
  std::fprintf(stderr,
               "usage: hush_child emit N | threads T N | exit-thread T N | flight-wait N1 N2 |"
               " fsize B N attached|fresh | aslimit N | aslimit_tight N | unwritable N1 N2 |"
               " session-emit DIR N\n");
  return 2;
}
