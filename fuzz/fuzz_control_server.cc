// libFuzzer target: the control server's request handling (src/control/server.cc HandleRequest),
// past the message decoder: it parses start options, starts and stops sessions, snapshots, and
// writes trace directories.
//
// Input: up to 4 requests separated by "\n--8<--\n", handled in order (start, then snapshot,
// status, stop...), then a final stop so that every input begins with no session. Bounds:
//   - an absolute "output" value is replaced by a directory inside the scratch directory (the
//     target never writes elsewhere); a relative one is kept (it must be refused);
//   - after a request that started a session, 3 events are emitted, unless a buffer-size of the
//     request asks for more than 4 MiB (a ring is at most 256 MiB: not per input).
// Invariants: every reply begins with "ok\n" or "error " and is one line per field; an error
// reply leaves no session running that the request did not start; after the final stop no
// session is active.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include <hushtrace/hushtrace.h>
#include <hushtrace/session.h>

#include "control/protocol.h"
#include "control/server.h"
#include "fuzz_util.h"
#include "session/core.h"

HUSH_TRACEPOINT(fuzz, ping, (std::uint32_t, n), (std::string_view, text))

namespace {

// The request with absolute "output" values moved into the scratch directory; *small is false if
// a buffer-size value is above 4 MiB.
std::string Confine(std::string_view request, const std::string& scratch, bool* small) {
  std::string out;
  std::size_t k = 0;
  for (std::size_t begin = 0; begin < request.size();) {
    std::size_t end = request.find('\n', begin);
    if (end == std::string_view::npos) end = request.size();
    std::string_view line = request.substr(begin, end - begin);
    if (line.rfind("output /", 0) == 0) {
      out += "output " + scratch + "/trace" + std::to_string(k++ % 2);
    } else {
      if (line.rfind("buffer-size ", 0) == 0) {
        std::size_t bytes = 0;
        if (hush::ParseSize(std::string(line.substr(12)), &bytes) && bytes > (4u << 20)) *small = false;
      }
      out += line;
    }
    if (end < request.size()) out += '\n';
    begin = end + 1;
  }
  return out;
}

bool WellFormedReply(const std::string& reply) {
  if (reply.rfind("ok\n", 0) != 0 && reply.rfind("error ", 0) != 0) return false;
  return !reply.empty() && reply.back() == '\n';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& scratch = hush::fuzz::ScratchDir();
  std::error_code ec;
  std::filesystem::remove_all(scratch + "/trace0", ec);
  std::filesystem::remove_all(scratch + "/trace1", ec);
  for (std::string_view part : hush::fuzz::SplitParts(data, size, 4)) {
    bool small = true;
    const std::string request = Confine(part, scratch, &small);
    const bool active_before = hush::session::Core::Active() != nullptr;
    const std::string reply = hush::control::HandleRequest(request);
    if (!WellFormedReply(reply)) std::abort();
    const bool active_after = hush::session::Core::Active() != nullptr;
    if (reply.rfind("error ", 0) == 0 && active_after && !active_before) std::abort();
    if (active_after && !active_before && small) {
      for (std::uint32_t i = 0; i < 3; ++i) HUSH_TRACE(fuzz, ping, i, std::string_view("fuzz"));
    }
  }
  hush::control::HandleRequest("hushtrace-control 1 stop\n");
  if (hush::session::Core::Active() != nullptr) std::abort();
  return 0;
}
