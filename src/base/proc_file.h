// Small /proc files (comm, perf_event_paranoid, ...).
#ifndef HUSHTRACE_SRC_BASE_PROC_FILE_H_
#define HUSHTRACE_SRC_BASE_PROC_FILE_H_

#include <string>

namespace hush::base {

// The first line (at most 63 bytes) of a small file, without its newline; "" if unreadable.
std::string ReadProcLine(const std::string& path);

// The process's name (the comm of its main thread, as /proc/self/comm gives it). On the main
// thread it comes from prctl(PR_GET_NAME) and touches no /proc file: a process whose /proc entries
// were instantiated makes its exit pay a walk of the /proc dentry cache under a spin lock, which
// the wait of its parent measures (0.5 ms and more per exec on this project's VMs; see
// library_thread.h). Elsewhere (an attach runs on the control thread) it reads /proc/self/comm.
std::string ProcessName();

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_PROC_FILE_H_
