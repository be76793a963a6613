// The traced program of the cli tests. Built as a PIE (cli_tp_pie, with the shared library
// cli_tplib), a non-PIE executable with the static runtime (cli_tp_nopie), and, when the
// toolchain can, with DT_RELR relocations (cli_tp_relr) and with lld (cli_tp_lld).
//
//   cli_tp_* exit N         emit every event, exit(N)
//   cli_tp_* kill           emit every event, then SIGKILL itself
//   cli_tp_* serve READY    emit events, create the file READY, then emit cliprog:tick every
//                           10 ms until SIGINT (handled: returns 0); SIGTERM is not handled
//   cli_tp_* env            print the HUSHTRACE_* variables, exit 0
//   cli_tp_* burst N        emit every event, then N cliprog:tick as fast as it can, exit 0
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli_tp_events.h"
#ifdef CLI_WITH_LIB
#include "cli_tp_lib.h"
#endif

namespace {

volatile sig_atomic_t g_stop = 0;
void OnSigint(int) { g_stop = 1; }

// The one cliprog:tick site outside EmitAll (the tests count sites), for serve and burst.
[[gnu::noinline]] void Tick() { HUSH_INSTANT(cliprog, tick); }

void EmitAll(int argc, char** argv) {
  HUSH_SPAN(cliprog, main_loop);
  HUSH_TRACE(cliprog, start, static_cast<std::int32_t>(argc), argv[0]);
  HUSH_TRACE(cliprog, values, std::int8_t{-8}, std::int16_t{-16}, std::int32_t{-32},
             std::int64_t{-64}, std::uint8_t{8}, std::uint16_t{16}, std::uint32_t{32},
             std::uint64_t{64}, true, 0.5f, 2.25, CliColor::kBlue);
  HUSH_TRACE(cliprog, text, std::string_view("view"), std::string("owned"));
  const std::array<std::byte, 3> bytes{std::byte{1}, std::byte{2}, std::byte{3}};
  HUSH_TRACE(cliprog, blob, std::span<const std::byte>(bytes));
  HUSH_TRACE(cliprog, empty);
  for (int i = 0; i < 3; ++i) HUSH_COUNTER(cliprog, iterations, static_cast<double>(i));
  HUSH_INSTANT(cliprog, tick);
  HUSH_INSTANT(cliprog, mixed);
  HUSH_COUNTER(cliprog, mixed, 1.0);
  CliSecondUnit(argc, argv[0]);
  CliInlineHelper();
#ifdef CLI_WITH_LIB
  CliLibWork(3);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "exit";
  if (mode == "env") {
    for (const char* name :
         {"HUSHTRACE_EVENTS", "HUSHTRACE_OUTPUT", "HUSHTRACE_MODE", "HUSHTRACE_BUFFER_SIZE"}) {
      const char* v = std::getenv(name);
      std::printf("%s=%s\n", name, v ? v : "(unset)");
    }
    return 0;
  }
  EmitAll(argc, argv);
  if (mode == "exit") return argc > 2 ? std::atoi(argv[2]) : 0;
  if (mode == "burst" && argc > 2) {
    for (long i = 0, n = std::atol(argv[2]); i < n; ++i) Tick();
    return 0;
  }
  if (mode == "touch" && argc > 2) {  // proof that the program ran: the file argv[2]
    const int fd = ::open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
    return 0;
  }
  if (mode == "kill") {
    std::fflush(nullptr);
    ::raise(SIGKILL);
    return 99;
  }
  if (mode == "serve" && argc > 2) {
    struct sigaction sa = {};
    sa.sa_handler = OnSigint;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, nullptr);
    const int fd = ::open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
    while (!g_stop) {
      Tick();
      ::usleep(10 * 1000);
    }
    return 0;
  }
  std::fprintf(stderr, "cli_tp: bad arguments\n");
  return 64;
}
