// The traced program of the recovery tests: it dies without stopping its session.
//
//   recover_victim THREADS EVENTS CRASH [AFTER_MS [PACE]]
//
// The session comes from the environment (HUSHTRACE_EVENTS, HUSHTRACE_OUTPUT, HUSHTRACE_MODE,
// HUSHTRACE_BUFFER_SIZE), as for any traced program. THREADS threads each emit recover:seq events
// (thread index, per-thread sequence number from 0, and a string of 0 to 12 bytes so that event
// sizes vary). EVENTS is the number of events per thread (0: no limit). PACE: each thread sleeps
// 50 us every PACE events (0: never), which lets the consumer thread keep up.
//
// CRASH says how the process ends, once every thread has emitted its EVENTS events (threads then
// block) or, with AFTER_MS > 0, after that many milliseconds while the threads keep emitting:
//   sigkill        raise(SIGKILL)
//   segv           a write through a null pointer (sanitizers' checks disabled for it)
//   abort          abort()
//   exit           _exit(3) (no atexit handler, so the session is not stopped)
//   segv-in-event  the main thread emits recover:blob with a byte span pointing to unmapped
//                  memory: SIGSEGV in the middle of writing the event (a partial event)
//   wait           never ends by itself: the test kills it (SIGKILL at a random moment)
//   return         joins the threads and returns from main: a clean stop at exit
//   fork-wait      no threads: the main thread emits EVENTS events and forks; the child emits
//                  EVENTS events (into rings of its own under HUSHTRACE_FOLLOW=1), prints
//                  "child PID" and waits (the test kills it; SIGALRM ends it after 30 s); the
//                  parent then prints "parent returns" and returns from main (a clean stop)
// "ready" is printed (and flushed) once every thread has emitted its first event.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <hushtrace/hushtrace.h>

HUSH_TRACEPOINT(recover, seq, (std::uint32_t, thread), (std::uint64_t, seq), (std::string_view, pad))
HUSH_TRACEPOINT(recover, blob, (std::span<const std::byte>, data))

namespace {

std::atomic<std::uint32_t> g_started{0};
std::atomic<std::uint32_t> g_done{0};

void Emitter(std::uint32_t thread, std::uint64_t events, std::uint64_t pace) {
  static constexpr char kPad[] = "abcdefghijkl";
  for (std::uint64_t i = 0; events == 0 || i < events; ++i) {
    HUSH_TRACE(recover, seq, thread, i, std::string_view(kPad, (i * 7 + thread) % 13));
    if (i == 0) g_started.fetch_add(1);
    if (pace != 0 && i % pace == pace - 1) ::usleep(50);
  }
  g_done.fetch_add(1);
  for (;;) ::pause();
}

[[gnu::no_sanitize("address", "undefined")]] [[gnu::noinline]] void NullWrite() {
  volatile std::uintptr_t address = 0;
  *reinterpret_cast<volatile int*>(address) = 1;
}

[[noreturn]] void Crash(const std::string& how) {
  if (how == "sigkill") {
    ::raise(SIGKILL);
  } else if (how == "segv") {
    NullWrite();
  } else if (how == "abort") {
    std::abort();
  } else if (how == "exit") {
    ::_exit(3);
  } else if (how == "segv-in-event") {
    // A span whose bytes are unmapped: the event header and length are written, then copying the
    // bytes faults.
    const long page = ::sysconf(_SC_PAGESIZE);
    void* p = ::mmap(nullptr, static_cast<std::size_t>(page), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) ::_exit(70);
    HUSH_TRACE(recover, blob, std::span<const std::byte>(static_cast<const std::byte*>(p), 100));
    ::_exit(71);  // not reached
  }
  std::fprintf(stderr, "recover_victim: unknown crash '%s'\n", how.c_str());
  ::_exit(64);
}

// Crash "fork-wait" (see the top of this file).
int ForkWait(std::uint64_t events) {
  for (std::uint64_t i = 0; i < events; ++i) {
    HUSH_TRACE(recover, seq, std::uint32_t{0}, i, std::string_view("p"));
  }
  int ready[2];
  if (::pipe(ready) != 0) return 70;
  std::fflush(stdout);  // not printed twice
  const pid_t pid = ::fork();
  if (pid < 0) return 70;
  if (pid == 0) {
    ::close(ready[0]);
    for (std::uint64_t i = 0; i < events; ++i) {
      HUSH_TRACE(recover, seq, std::uint32_t{1}, i, std::string_view("c"));
    }
    ::alarm(30);  // never outlives a test that failed before killing it by much
    std::printf("child %d\n", static_cast<int>(::getpid()));
    std::fflush(stdout);
    ::close(ready[1]);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char byte;
  while (::read(ready[0], &byte, 1) < 0 && errno == EINTR) {
  }
  std::printf("parent returns\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: recover_victim THREADS EVENTS CRASH [AFTER_MS [PACE]]\n");
    return 64;
  }
  const auto threads = static_cast<std::uint32_t>(std::strtoul(argv[1], nullptr, 10));
  const std::uint64_t events = std::strtoull(argv[2], nullptr, 10);
  const std::string crash = argv[3];
  const std::uint64_t after_ms = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0;
  const std::uint64_t pace = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 0;

  if (crash == "fork-wait") return ForkWait(events);
  if (crash == "return") {
    std::vector<std::thread> ts;
    for (std::uint32_t k = 0; k < threads; ++k) {
      ts.emplace_back([k, events] {
        for (std::uint64_t i = 0; i < events; ++i) HUSH_TRACE(recover, seq, k, i, std::string_view("r"));
      });
    }
    for (auto& t : ts) t.join();
    std::printf("done\n");
    return 0;
  }

  for (std::uint32_t k = 0; k < threads; ++k) std::thread(Emitter, k, events, pace).detach();
  while (g_started.load() < threads) ::usleep(100);
  std::printf("ready\n");
  std::fflush(stdout);
  if (crash == "wait") {
    for (;;) ::pause();
  }
  if (after_ms > 0) {
    ::usleep(static_cast<useconds_t>(after_ms * 1000));
  } else {
    while (g_done.load() < threads) ::usleep(200);
  }
  Crash(crash);
}
