// Finding the hushtrace runtime in another process and calling its control bootstrap there.
//
// A process that links libhushtrace has no control thread, socket or signal handler until the
// first `hushtrace start|stop|snapshot|status PID`: the CLI makes one of its threads call
// hushtrace_control_bootstrap() (src/control/server.h) through ptrace, then talks to the socket
// that call opened. See inject.cc for the protocol and why the call is made only at a point
// where the thread holds no lock of the C library.
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_INJECT_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_INJECT_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hush::cli {

// One file-backed mapping of a process, as /proc/PID/maps lists it.
struct Mapping {
  std::uint64_t start = 0, end = 0, offset = 0, inode = 0;
  std::uint32_t dev_major = 0, dev_minor = 0;
  std::string path;
  bool operator==(const Mapping&) const = default;
};

// The file-backed mappings of process `pid` in address order (empty when /proc refuses), asked
// of the kernel with PROCMAP_QUERY (Linux 6.11), else parsed from the text of /proc/PID/maps.
std::vector<Mapping> FileMappingsOf(pid_t pid);
// The file-backed mappings of a /proc/PID/maps text, "(deleted)" suffixes kept in the paths.
std::vector<Mapping> ParseMapsText(std::string_view text);

// The run-time address of hushtrace_control_bootstrap in process `pid` (from /proc/PID/maps and
// the ELF symbol tables of libhushtrace.so or of the executable, for a static link), or 0 with
// *error set when the process does not have the runtime loaded. *mapping (if given) gets the
// file's first mapping the address was computed from: while the process has that mapping, the
// address holds (same file, device and inode, same load address).
std::uint64_t FindBootstrap(pid_t pid, std::string* error, Mapping* mapping = nullptr);

// Calls the function at `fn` (no arguments, returns int) on a thread of `pid` that is blocked in
// a system call where the C library holds no lock, waiting up to `timeout_ms` for one. Restores
// the thread's registers and lets its system call resume. Returns false with *error on failure;
// *result gets the function's return value. `mapping` is FindBootstrap's: with the thread
// stopped, the address is confirmed by finding that mapping in the process again (an exec since
// would have replaced it), without reading the ELF file again.
bool CallInProcess(pid_t pid, std::uint64_t fn, const Mapping& mapping, int timeout_ms,
                   int* result, std::string* error);

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_INJECT_H_
