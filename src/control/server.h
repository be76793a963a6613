// The control server of a traced process: a thread serving the unix socket of protocol.h.
//
// Nothing of it exists until someone asks: it is started by Bootstrap(), which runs either
//   - injected by `hushtrace start|stop|snapshot|status PID` through ptrace, on a thread the CLI
//     stopped inside a blocking system call (tools/hushtrace/inject.cc: why that point is safe),
//   - or before main() when HUSHTRACE_CONTROL=1 (systems where ptrace is not allowed).
// Requests are served one at a time on that thread; only the process's user and root are served
// (SO_PEERCRED), others get an error reply.
#ifndef HUSHTRACE_SRC_CONTROL_SERVER_H_
#define HUSHTRACE_SRC_CONTROL_SERVER_H_

#include <string>
#include <string_view>

namespace hush::control {

// Creates the socket and starts the server thread, once per process (later calls return the
// first result). 0 on success, -errno on failure (-EPERM: the socket directory is not ours).
int Bootstrap();

// Handles one request and returns the reply (protocol.h). Exposed for tests.
std::string HandleRequest(std::string_view request);

}  // namespace hush::control

// The symbol the CLI calls by ptrace: no arguments, returns Bootstrap()'s result.
extern "C" int hushtrace_control_bootstrap(void);

#endif  // HUSHTRACE_SRC_CONTROL_SERVER_H_
