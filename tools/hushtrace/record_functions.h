// `hushtrace record --functions`: the option parsing and the LD_PRELOAD decision (cmd_record.cc).
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_RECORD_FUNCTIONS_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_RECORD_FUNCTIONS_H_

#include <cstdint>
#include <string>

namespace hush::cli {

// "2us", "500ns", "1.5ms", "3s", or a plain number of nanoseconds. False on anything else.
bool ParseDurationNs(const std::string& text, std::uint64_t* ns);

// `name` as execvp() finds it: itself when it holds a '/', else the first executable file of that
// name in the directories of PATH; `name` unchanged when none is found. `exec_error` (optional):
// what execvp would fail with, 0 when the result is an executable regular file, else EACCES when a
// file of that name exists but is not one, else ENOENT (or stat's errno for a name with a '/').
std::string FindInPath(const std::string& name, int* exec_error = nullptr);

// The runtime to preload when PROGRAM does not link it: $HUSHTRACE_RUNTIME, else the installed
// library next to this executable (../lib...), else the one of the build tree. "" if none exists.
std::string RuntimeLibrary();

// Whether `program` (a name looked up in PATH when it has no '/') already carries the runtime:
// it needs libhushtrace.so (DT_NEEDED) or defines the runtime's start-up hook (static link).
// A program that cannot be read is assumed not to.
bool ProgramHasRuntime(const std::string& program);

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_RECORD_FUNCTIONS_H_
