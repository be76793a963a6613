// membarrier(2) MEMBARRIER_CMD_PRIVATE_EXPEDITED, the process-wide barrier the runtime builds its
// grace periods on (registry probe lists: src/registry/grace.h; session teardown:
// src/session/writers.h). Code patching uses the SYNC_CORE flavour, which src/patch owns.
//
// Registration is lazy (first use), never at start-up: a program that never traces never makes
// the system call. Both functions are thread-safe. On kernels or emulators without the command
// (Linux < 4.14, some qemu-user versions) they return false and their callers fall back: the probe
// lists are not freed, a stopped session's memory is kept.
#ifndef HUSHTRACE_SRC_BASE_MEMBARRIER_H_
#define HUSHTRACE_SRC_BASE_MEMBARRIER_H_

namespace hush::base {

// MEMBARRIER_CMD_PRIVATE_EXPEDITED: every running thread of this process has executed a full
// memory barrier when it returns true; a thread not running passes one at its next context switch.
bool PrivateExpeditedBarrier();
// Whether PrivateExpeditedBarrier() can work here (registers on first call).
bool PrivateExpeditedAvailable();

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_MEMBARRIER_H_
