// The client side of live control (src/control/protocol.h): connects to the control socket of a
// process, opening it first through inject.h when the process has never been controlled.
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_CONTROL_CLIENT_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_CONTROL_CLIENT_H_

#include <sys/types.h>

#include <string>

#include "control/protocol.h"

namespace hush::cli {

struct ControlReply {
  bool ok = false;
  std::string error;      // when !ok: the process's or the transport's message
  control::Fields fields;  // when ok
  std::string Get(const std::string& key) const;
};

// True if the socket of `pid` exists and a server answers there.
bool ControlListening(pid_t pid);

// How long SendControl waits for a reply: the request's deadline (protocol.h), plus a grace for
// one read just before it.
inline constexpr unsigned kReplyTimeoutMs = 30000;
inline constexpr unsigned kReplyGraceMs = 2000;

// Sends `verb` with `fields` to process `pid` and returns its reply. Opens the control channel
// (ptrace bootstrap) if it is not open yet. A stopped process is refused before anything is
// sent; the request carries a deadline, so a process stopped later never acts on it late.
ControlReply SendControl(pid_t pid, const std::string& verb, const control::Fields& fields);

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_CONTROL_CLIENT_H_
