// Architectures without a patcher: every batch fails with a warning. Tracepoint sites there are
// load-and-branch (enabled_check.h defines static keys on x86-64 only), so nothing is patched in
// practice; this stub keeps the runtime building.
#include "patch/arch/arch.h"

namespace hush::patch::arch {

const char* Unsupported() { return "no code patcher for this architecture"; }
bool ExpeditedMembarrierSynchronizes() { return false; }
bool OneStoreSites() { return false; }

std::size_t SiteSize() { return 0; }
std::size_t HeadSize() { return 0; }
const std::uint8_t* TrapOpcode() { return nullptr; }
void EncodeNop(std::uint8_t*) {}
bool EncodeJump(std::uintptr_t, std::uintptr_t, std::uint8_t*) { return false; }
std::size_t EntrySize() { return 0; }
std::uint64_t JumpReach() { return 0; }
EntryKind ClassifyEntry(const std::uint8_t*) { return EntryKind::kOther; }
std::size_t EntryStubSize() { return 0; }
bool EncodeEntryStub(std::uintptr_t, std::uintptr_t, std::uintptr_t, std::uint8_t*) { return false; }
void StoreCode(std::uintptr_t, const std::uint8_t*, std::size_t) {}
bool IsTrapInstruction(const siginfo_t*) { return false; }
std::uintptr_t TrapAddress(const void*) { return 0; }
void SetResumeAddress(void*, std::uintptr_t) {}

}  // namespace hush::patch::arch

// Function tracing has no trampoline here; functrace::Start() refuses before anything could
// reach these (SiteSize() == 0).
extern "C" void hush_ftrace_entry() { __builtin_trap(); }
extern "C" void hush_ftrace_return() { __builtin_trap(); }
extern "C" void hush_ftrace_entry_marked() { __builtin_trap(); }
extern "C" void hush_ftrace_return_marked() { __builtin_trap(); }
