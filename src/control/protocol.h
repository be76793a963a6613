// The live-control protocol between `hushtrace start|stop|snapshot|status PID` and the control
// server of a traced process (src/control/server.cc). Header-only: the CLI is not linked with
// the runtime.
//
// Transport: a SOCK_SEQPACKET unix socket at /dev/shm/hushtrace-<uid>/<pid>.sock, or the same
// under /tmp where the process cannot make the first directory its own (SocketPath; directory
// 0700, socket 0600, both owned by the traced user). One connection carries one request and one reply,
// each a single packet of at most kMaxMessage bytes of printable ASCII, lines ended by '\n':
//
//   request                          reply
//   +----------------------------+   +-------------------------------+
//   | hushtrace-control 1 <verb> |   | ok            | error <text>  |
//   | <key> <value>              |   | <key> <value>                 |
//   | ...                        |   | ...                           |
//   +----------------------------+   +-------------------------------+
//
// Verbs and keys: start (event <glob> repeated, output <absolute dir>, mode stream|flight,
// buffer-size <bytes>, buffer-budget <bytes>, filter <expression>, snapshot-on <pattern> repeated (the syntax of
// src/filter/trigger_spec.h), snapshot-interval-ms <n>, snapshot-after-ns <n>, snapshot-keep <n>),
// stop, snapshot,
// status. Anything else is refused with an error reply and
// changes nothing.
//
// Any request may end with `deadline-ms <n>`: CLOCK_MONOTONIC milliseconds (the machine's, so
// client and process must share a time namespace) after which the process refuses it unread
// ("error VERB: the request expired ..."). The CLI sets it to the time it stops waiting, so a
// request to a stopped process either takes effect while the CLI waits or never. A request whose
// client hung up before it is handled is dropped, and a `start` whose reply cannot be delivered
// (the client was killed while waiting) is stopped again.
#ifndef HUSHTRACE_SRC_CONTROL_PROTOCOL_H_
#define HUSHTRACE_SRC_CONTROL_PROTOCOL_H_

#include <sys/types.h>

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/user_directory.h"

namespace hush::control {

inline constexpr std::string_view kRequestMagic = "hushtrace-control 1 ";
inline constexpr std::size_t kMaxMessage = 64 * 1024;

using Fields = std::vector<std::pair<std::string, std::string>>;

// Reply keys both sides name: the output directory (start, stop, status) and the session's
// statistics (status, and stop's final totals), one per hush::SessionStats counter.
namespace key {
inline constexpr char kOutput[] = "output";
inline constexpr char kWarning[] = "warning";  // start: something the user should know (the CLI prints it)
inline constexpr char kBuffers[] = "buffers";
inline constexpr char kEventsWritten[] = "events-written";
inline constexpr char kEventsDiscarded[] = "events-discarded";
inline constexpr char kEventsOverwritten[] = "events-overwritten";
inline constexpr char kEventsLostOnWrite[] = "events-lost-on-write";
inline constexpr char kBytesWritten[] = "bytes-written";
inline constexpr char kEventsFilteredOut[] = "events-filtered-out";
inline constexpr char kSnapshotsTriggered[] = "snapshots-triggered";
inline constexpr char kTriggersSuppressed[] = "triggers-suppressed";
}  // namespace key

// Where a process's control socket is: in its user's 0700 directory hushtrace-<uid> under the
// first of these bases whose directory the process can make its own (server.cc, CreateSocket).
// /dev/shm first: tmpfs on Linux, where binding the socket creates an inode in memory; /tmp may
// be a disk file system, and on a journal-less ext4 the bind took 55 us to 0.7 ms of every first
// attach (docs/benchmarks.md, "Attach from the command line"). /tmp where /dev/shm is missing,
// read-only, or holds a hushtrace-<uid> that is not the user's. The client tries them in the
// same order and checks that the server is the process (SO_PEERCRED) whichever answers.
inline constexpr const char* kSocketBases[] = {base::kMemoryBase, "/tmp"};
inline constexpr int kSocketBaseCount = static_cast<int>(std::size(kSocketBases));
inline std::string SocketDirectory(uid_t uid, int base = 0) {
  return base::UserDirectory(kSocketBases[base], uid);
}
inline std::string SocketPath(uid_t uid, pid_t pid, int base = 0) {
  return SocketDirectory(uid, base) + "/" + std::to_string(pid) + ".sock";
}

// "first\nkey value\n...": values must not hold '\n' (the encoder replaces it with ' ').
inline std::string EncodeMessage(const std::string& first, const Fields& fields) {
  std::string out = first + "\n";
  for (const auto& [key, value] : fields) {
    std::string v = value;
    for (char& c : v) {
      if (c == '\n') c = ' ';
    }
    out += key + " " + v + "\n";
  }
  return out;
}

// Splits a message into its first line and key/value lines. Refuses (with the line number) bytes
// outside printable ASCII, a missing final '\n', empty lines and keys that are not [a-z-]+.
inline bool DecodeMessage(std::string_view text, std::string* first, Fields* fields,
                          std::string* error) {
  fields->clear();
  if (text.empty() || text.size() > kMaxMessage) {
    *error = "empty or oversized message";
    return false;
  }
  if (text.back() != '\n') {
    *error = "message does not end with a newline";
    return false;
  }
  std::size_t line_no = 0;
  for (std::size_t begin = 0; begin < text.size();) {
    const std::size_t end = text.find('\n', begin);
    const std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    ++line_no;
    for (char c : line) {
      if (c < 0x20 || c > 0x7e) {
        *error = "line " + std::to_string(line_no) + ": byte outside printable ASCII";
        return false;
      }
    }
    if (line.empty()) {
      *error = "line " + std::to_string(line_no) + ": empty line";
      return false;
    }
    if (line_no == 1) {
      *first = std::string(line);
      continue;
    }
    const std::size_t space = line.find(' ');
    const std::string_view key = line.substr(0, space);
    bool key_ok = !key.empty();
    for (char c : key) key_ok = key_ok && ((c >= 'a' && c <= 'z') || c == '-');
    if (!key_ok || space == std::string_view::npos) {
      *error = "line " + std::to_string(line_no) + ": expected '<key> <value>'";
      return false;
    }
    fields->emplace_back(std::string(key), std::string(line.substr(space + 1)));
  }
  return true;
}

}  // namespace hush::control

#endif  // HUSHTRACE_SRC_CONTROL_PROTOCOL_H_
