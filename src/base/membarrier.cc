#include "base/membarrier.h"

#include <linux/membarrier.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace hush::base {
namespace {

int Membarrier(int cmd) { return static_cast<int>(::syscall(SYS_membarrier, cmd, 0, 0)); }

// -1: not tried yet, else an Expedited. Racing first callers may both register, which is harmless.
constexpr int kUntried = -1;
std::atomic<int> g_state{kUntried};
std::atomic<int> g_sync_core_errno{0};
std::atomic<bool> g_refuse_sync_core{false};  // tests

int RegisterSyncCoreCommand() {
  if (g_refuse_sync_core.load(std::memory_order_relaxed)) {
    errno = EINVAL;  // what a kernel without SYNC_CORE answers
    return -1;
  }
  return Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE);
}

// No MEMBARRIER_CMD_QUERY first: the registration commands answer EINVAL where the kernel lacks
// them, which is all the query would have told, for one system call less at start-up.
Expedited Register() {
  if (RegisterSyncCoreCommand() == 0) return Expedited::kSyncCore;
  g_sync_core_errno.store(errno, std::memory_order_relaxed);
  if (Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0) return Expedited::kPlain;
  return Expedited::kUnavailable;
}

}  // namespace

Expedited RegisterExpedited(int* sync_core_errno) {
  int state = g_state.load(std::memory_order_acquire);
  if (state == kUntried) {
    state = static_cast<int>(Register());
    g_state.store(state, std::memory_order_release);
  }
  const auto e = static_cast<Expedited>(state);
  if (sync_core_errno != nullptr) {
    *sync_core_errno = e == Expedited::kSyncCore ? 0 : g_sync_core_errno.load(std::memory_order_relaxed);
  }
  return e;
}

void RegisterWhileSingleThreaded() {
  // __libc_single_threaded (glibc 2.32): true until the process first creates a thread, so true
  // here means one thread and a registration without a grace period.
  if (__libc_single_threaded != 0) RegisterExpedited();
}

bool PrivateExpeditedAvailable() { return RegisterExpedited() != Expedited::kUnavailable; }

bool PrivateExpeditedBarrier() {
  switch (RegisterExpedited()) {
    case Expedited::kSyncCore:
      return SyncCoreBarrier();
    case Expedited::kPlain:
      return Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
    case Expedited::kUnavailable:
      break;
  }
  return false;
}

bool SyncCoreBarrier() {
  if (RegisterExpedited() != Expedited::kSyncCore) {
    errno = EINVAL;
    return false;
  }
  if (Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) == 0) return true;
  // EPERM: not registered (a process that is not the registrant or its fork). Register, retry once.
  return errno == EPERM && RegisterSyncCoreCommand() == 0 &&
         Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) == 0;
}

void RefuseSyncCoreForTesting() {
  g_refuse_sync_core.store(true, std::memory_order_relaxed);
  g_state.store(kUntried, std::memory_order_release);
}

}  // namespace hush::base
