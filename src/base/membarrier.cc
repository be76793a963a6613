#include "base/membarrier.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace hush::base {
namespace {

int Membarrier(int cmd) { return static_cast<int>(::syscall(SYS_membarrier, cmd, 0, 0)); }

// 0: not tried yet, 1: registered, -1: unavailable. Registration is per process, inherited by
// fork children; registering twice is harmless, so racing first callers need no lock.
std::atomic<int> g_state{0};

}  // namespace

bool PrivateExpeditedAvailable() {
  int state = g_state.load(std::memory_order_relaxed);
  if (state == 0) {
    const int cmds = Membarrier(MEMBARRIER_CMD_QUERY);
    const bool ok = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
                    Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
    state = ok ? 1 : -1;
    g_state.store(state, std::memory_order_relaxed);
  }
  return state == 1;
}

bool PrivateExpeditedBarrier() {
  return PrivateExpeditedAvailable() && Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
}

}  // namespace hush::base
