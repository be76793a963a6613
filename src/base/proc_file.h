// Small /proc files (comm, perf_event_paranoid, ...).
#ifndef HUSHTRACE_SRC_BASE_PROC_FILE_H_
#define HUSHTRACE_SRC_BASE_PROC_FILE_H_

#include <string>

namespace hush::base {

// The first line (at most 63 bytes) of a small file, without its newline; "" if unreadable.
std::string ReadProcLine(const std::string& path);

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_PROC_FILE_H_
