// The handlers behind the trampoline and the return thunk (shadow.h), on the traced thread.
// Everything here is on the hot path of a traced call except ShadowSlow and the unwind helpers.
#include "functrace/shadow.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "functrace/events.h"
#include "hushtrace/internal/thread_writer.h"

namespace hush::functrace {

Settings g_settings;
thread_local Shadow* t_shadow = nullptr;
std::atomic<const MarkTable*> g_marks{nullptr};
std::atomic<std::uint64_t> g_overflow{0};
std::atomic<std::uint64_t> g_unmatched{0};

namespace {

using internal::site_descriptor;
using EntrySpec = hush_tp_func_entry;
using ExitSpec = hush_tp_func_exit;
using CallSpec = hush_tp_func_call;

// x86-64: the patched entry is a 5-byte `jmp` to the function's stub; the body is entry + 5.
// (aarch64: the trampoline hands the entry over itself.)
[[maybe_unused]] constexpr std::uintptr_t kEntryCallSize = 5;

Shadow* const kDead = reinterpret_cast<Shadow*>(1);  // thread past its shadow stack's destructor

// The offsets x86_64_trampoline.S and aarch64_trampoline.S hard-code (their #defines).
using internal::ThreadWriter;
using internal::CommitWord;
static_assert(offsetof(ThreadWriter, pos) == 0 && offsetof(ThreadWriter, end) == 8 &&
              offsetof(ThreadWriter, nesting) == 24 &&
              offsetof(ThreadWriter, commit) == 32 && sizeof(std::atomic<char*>) == 8 &&
              sizeof(std::atomic<std::uint32_t>) == 4);
static_assert(offsetof(CommitWord, offset) == 0 && offsetof(CommitWord, timestamp) == 8);
static_assert(internal::kCompactHeaderSize == 4 && internal::kExtendedId == 255 &&
              internal::kCompactTimestampRange == 0x1000000 && internal::kCommitEventsShift == 32);
static_assert(offsetof(Shadow, top) == 0 && offsetof(Shadow, frames) == 8 &&
              offsetof(Frame, slot) == 0 && offsetof(Frame, ret) == 8 &&
              offsetof(Frame, site) == 16 && offsetof(Frame, ts) == 24 &&
              offsetof(Frame, restored) == 32);
#if defined(__aarch64__)
static_assert(offsetof(Frame, saved_x19) == 40 && sizeof(Frame) == 48);
#else
static_assert(sizeof(Frame) == 40);
#endif
static_assert(offsetof(Settings, max_depth) == 0 && offsetof(Settings, min_ticks) == 8);
pthread_key_t g_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

void FreeShadow(void* p) {
  // Thread exit: every traced frame has returned (or was unwound by pthread_exit, whose forced
  // unwind restored the slots first), so nothing refers to the frames any more.
  ::munmap(p, sizeof(Shadow));
  t_shadow = kDead;
}

[[gnu::cold, gnu::noinline]] Shadow* ShadowSlow() {
  if (t_shadow == kDead) return nullptr;
  ::pthread_once(&g_key_once, [] { ::pthread_key_create(&g_key, FreeShadow); });
  // MAP_NORESERVE: pages are touched only as deep as the thread's traced stack goes.
  void* p = ::mmap(nullptr, sizeof(Shadow), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    t_shadow = kDead;
    return nullptr;
  }
  t_shadow = static_cast<Shadow*>(p);
  ::pthread_setspecific(g_key, p);
  return t_shadow;
}

// One event of `N` u64 fields stamped `*ts`, read after the nesting guard (see emit.h: a signal
// handler's event then never carries an older timestamp than one already committed).
// The id is loaded inside the event, as in emit.h (EmitEvent): a stopping session's wait for the
// events in flight then covers the load, and no id of a stopped session reaches the next one.
template <typename Spec, int N>
inline void EmitWords(const std::uint64_t (&v)[N], std::uint64_t* ts_out) {
  internal::ThreadWriter& w = internal::tls_writer;
  const std::uint32_t nesting = internal::EnterEvent(w);
  const std::uint32_t state = site_descriptor<Spec>.state.load(std::memory_order_relaxed);
  if (state == 0) {
    if (ts_out) *ts_out = internal::ReadCycleCounter();
    internal::LeaveEvent(w, nesting);
    return;
  }
  const std::uint32_t id = state - 1;
  const std::uint64_t ts = internal::ReadCycleCounter();
  if (ts_out) *ts_out = ts;
  internal::CommitWord* commit;
  char* p = nesting == 0 ? internal::TryReserveFast(w, id, ts, 8 * N, &commit) : nullptr;
  if (p != nullptr) [[likely]] {
    std::memcpy(p, v, 8 * N);
    internal::CommitEvent(w, commit, p - internal::kCompactHeaderSize, p + 8 * N, ts);
  } else if (char* q = internal::ReserveSlow(w, id, ts, 8 * N)) {
    std::memcpy(q, v, 8 * N);
    if ((id & internal::kTriggerIdBit) != 0) {
      internal::CommitSlow(w, id, q, q + 8 * N);  // the snapshot trigger's rule
    } else {
      internal::Commit(w, q + 8 * N);
    }
  }
  internal::LeaveEvent(w, nesting);
}

template <bool kTimed>
inline std::uint64_t EmitExitImpl(const Frame& f, std::uint64_t min_ticks) {
  std::uint64_t ts = 0;
  if (min_ticks == 0) {
    const std::uint64_t v[1] = {f.site};
    EmitWords<ExitSpec>(v, kTimed ? &ts : nullptr);
    return ts;
  }
  // Dropped without a trace when short: the entry was never written.
  ts = internal::ReadCycleCounter();
  if (ts - f.ts < min_ticks) return ts;
  const std::uint64_t v[2] = {f.site, f.ts};
  EmitWords<CallSpec>(v, nullptr);
  return ts;
}

inline void EmitExit(const Frame& f, std::uint64_t min_ticks) { EmitExitImpl<false>(f, min_ticks); }

// The same, returning the exit's time (its event's timestamp, or the clock's when none is
// written): the exit of a marked function.
inline std::uint64_t EmitExitTimed(const Frame& f, std::uint64_t min_ticks) {
  return EmitExitImpl<true>(f, min_ticks);
}

// Pops frames [to, top) emitting their exits, innermost first. Returns frames[to].ret.
inline std::uintptr_t PopTo(Shadow* s, std::uint32_t to) {
  const std::uint64_t min_ticks = g_settings.min_ticks.load(std::memory_order_relaxed);
  for (std::uint32_t j = s->top; j-- > to;) EmitExit(s->frames[j], min_ticks);
  const std::uintptr_t ret = s->frames[to].ret;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // read the frame before releasing it
  s->top = to;
  return ret;
}

}  // namespace
}  // namespace hush::functrace

extern "C" {
const std::atomic<std::uint32_t>* const hush_ft_entry_state =
    &hush::internal::site_descriptor<hush::functrace::EntrySpec>.state;
const std::atomic<std::uint32_t>* const hush_ft_exit_state =
    &hush::internal::site_descriptor<hush::functrace::ExitSpec>.state;
}

namespace hush::functrace {

void RegisterEvents() {
  HUSH_INTERNAL_REGISTER_DESCRIPTOR(site_descriptor<EntrySpec>);
  HUSH_INTERNAL_REGISTER_DESCRIPTOR(site_descriptor<ExitSpec>);
  HUSH_INTERNAL_REGISTER_DESCRIPTOR(site_descriptor<CallSpec>);
}

void EmitModule(const char* path, const char* build_id, std::uint64_t base) {
  HUSH_TRACE(func, module, path, build_id, base);
}

namespace {

// The return thunk of Frame::restored 1 and 2.
std::uintptr_t Thunk(std::uint32_t restored) {
  return restored == 2 ? reinterpret_cast<std::uintptr_t>(&hush_ftrace_return_marked)
                       : reinterpret_cast<std::uintptr_t>(&hush_ftrace_return);
}

}  // namespace

void RestoreForUnwind() {
#if defined(__aarch64__)
  // Nothing to put back: the unwinder goes through the trampoline by its unwind info, which
  // finds the real return address in the frame (aarch64_trampoline.S), so slots are never
  // rewritten and ResumeAfterCatch re-hijacks none.
#else
  Shadow* s = t_shadow;
  if (s == nullptr || s == kDead) return;
  for (std::uint32_t i = 0; i < s->top; ++i) {
    Frame& f = s->frames[i];
    if (f.restored != 0) continue;
    for (const std::uint32_t kind : {1u, 2u}) {
      if (*f.slot == Thunk(kind)) {
        *f.slot = f.ret;
        f.restored = kind;
      }
    }
  }
#endif
}

void ResumeAfterCatch(std::uintptr_t catcher_sp, bool rehijack) {
  Shadow* s = t_shadow;
  if (s == nullptr || s == kDead) return;
  // Frames whose slot is below the catcher's stack pointer were unwound.
  std::uint32_t to = s->top;
  while (to > 0 && reinterpret_cast<std::uintptr_t>(s->frames[to - 1].slot) < catcher_sp) --to;
  if (to < s->top) {
    g_unmatched.fetch_add(s->top - to, std::memory_order_relaxed);
    const std::uint64_t min_ticks = g_settings.min_ticks.load(std::memory_order_relaxed);
    for (std::uint32_t j = s->top; j-- > to;) EmitExit(s->frames[j], min_ticks);
    s->top = to;
  }
  if (!rehijack) return;
  for (std::uint32_t i = 0; i < s->top; ++i) {
    Frame& f = s->frames[i];
    if (f.restored != 0 && *f.slot == f.ret) {
      *f.slot = Thunk(f.restored);
      f.restored = 0;
    }
  }
}

}  // namespace hush::functrace

using hush::functrace::Shadow;
using hush::functrace::g_settings;

namespace hush::functrace {
namespace {

// Pushes the frame of a traced call of the function entered at `site`, whose return address
// `ret` is (x86-64) or is keyed as being (aarch64) at `slot`, and emits func:entry. nullptr:
// untraced (no shadow stack, or deeper than the limit).
inline Frame* PushFrame(std::uintptr_t site, std::uintptr_t* slot, std::uintptr_t ret) {
  Shadow* s = t_shadow;
  if (s == nullptr || s == kDead) [[unlikely]] {
    s = ShadowSlow();
    if (s == nullptr) return nullptr;
  }
  const std::uint32_t top = s->top;
  if (top >= g_settings.max_depth.load(std::memory_order_relaxed)) [[unlikely]] {
    if (top >= kCapacity) g_overflow.fetch_add(1, std::memory_order_relaxed);
    return nullptr;  // untraced, and so are the calls it makes (they are deeper still)
  }
  s->top = top + 1;  // reserve first: a signal handler pushes above this frame
  std::atomic_signal_fence(std::memory_order_seq_cst);
  Frame& f = s->frames[top];
  f.slot = slot;
  f.ret = ret;
  f.site = site;
  f.restored = 0;
  if (g_settings.min_ticks.load(std::memory_order_relaxed) == 0) {
    const std::uint64_t v[1] = {f.site};
    EmitWords<EntrySpec>(v, &f.ts);
  } else {
    f.ts = hush::internal::ReadCycleCounter();
  }
  return &f;
}

}  // namespace
}  // namespace hush::functrace

extern "C" [[gnu::visibility("hidden")]] int hush_ftrace_enter(std::uintptr_t body,
                                                               std::uintptr_t* slot) {
  using namespace hush::functrace;
  if (PushFrame(body - kEntryCallSize, slot, *slot) == nullptr) return 0;
  // The frame is whole before it is used: the trampoline's call then writes the thunk's address
  // into the slot.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return 1;
}

#if defined(__aarch64__)
extern "C" [[gnu::visibility("hidden")]] std::uintptr_t hush_ftrace_enter_a64(std::uintptr_t site,
                                                                              std::uintptr_t sp,
                                                                              std::uintptr_t ret,
                                                                              std::uintptr_t x19) {
  using namespace hush::functrace;
  // The key the return thunk's stack pointer (sp again when the body returns) will match:
  // FrameOfReturn looks for sp - 8, where x86-64 keeps the return address.
  Frame* f = PushFrame(site, reinterpret_cast<std::uintptr_t*>(sp - sizeof(std::uintptr_t)), ret);
  if (f == nullptr) return 0;
  f->saved_x19 = x19;
  // The frame is whole before the trampoline points x19 at it.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return reinterpret_cast<std::uintptr_t>(f);
}
#endif

namespace hush::functrace {
namespace {

// The frame of the return at `sp` (the thunk's stack pointer): frames[index - 1], the frames
// above it (left by longjmp or unwinding) counted. Aborts when there is none.
std::uint32_t FrameOfReturn(Shadow* s, std::uintptr_t sp) {
  auto* const slot = reinterpret_cast<std::uintptr_t*>(sp - sizeof(std::uintptr_t));
  std::uint32_t i = (s == nullptr || s == kDead) ? 0 : s->top;
  // Usually the top frame; frames above the match were left by longjmp or unwinding.
  while (i > 0 && s->frames[i - 1].slot != slot) --i;
  if (i == 0) [[unlikely]] {
    static const char kMsg[] =
        "hushtrace: function tracing lost a return address (shadow stack mismatch); aborting\n";
    [[maybe_unused]] ssize_t n = ::write(2, kMsg, sizeof kMsg - 1);
    std::abort();
  }
  if (i != s->top) g_unmatched.fetch_add(s->top - i, std::memory_order_relaxed);
  return i;
}

// The marks of the function entered at `entry`, each handed the call's times; inside an event
// (functrace.h, TriggerHooks::on_return), not nested in another.
[[gnu::noinline]] void RunMarks(std::uintptr_t entry, std::uint64_t entry_ts, std::uint64_t exit_ts) {
  // Acquire: pairs with the release that published the table (discover.cc); its marks are whole.
  const MarkTable* table = g_marks.load(std::memory_order_acquire);
  if (table == nullptr || table->on_return == nullptr) return;
  const auto& marks = table->marks;
  auto it = std::lower_bound(marks.begin(), marks.end(), entry,
                             [](const Mark& m, std::uintptr_t e) { return m.entry < e; });
  if (it == marks.end() || it->entry != entry) return;  // marked by a table since replaced
  internal::ThreadWriter& w = internal::tls_writer;
  const std::uint32_t nesting = internal::EnterEvent(w);
  if (nesting == 0) {
    for (; it != marks.end() && it->entry == entry; ++it) {
      table->on_return(it->generation, it->state, entry_ts, exit_ts);
    }
  }
  internal::LeaveEvent(w, nesting);
}

}  // namespace
}  // namespace hush::functrace

extern "C" [[gnu::visibility("hidden")]] std::uintptr_t hush_ftrace_exit(std::uintptr_t sp) {
  using namespace hush::functrace;
  Shadow* s = t_shadow;
  return PopTo(s, FrameOfReturn(s, sp) - 1);
}

extern "C" [[gnu::visibility("hidden")]] std::uintptr_t hush_ftrace_exit_marked(std::uintptr_t sp) {
  using namespace hush::functrace;
  Shadow* s = t_shadow;
  const std::uint32_t i = FrameOfReturn(s, sp);
  // Frames left above it end first, as PopTo does (their marks are not run: their returns were
  // skipped, so their durations are not calls').
  const std::uint64_t min_ticks = g_settings.min_ticks.load(std::memory_order_relaxed);
  for (std::uint32_t j = s->top; j-- > i;) EmitExit(s->frames[j], min_ticks);
  const Frame& f = s->frames[i - 1];
  const std::uint64_t exit_ts = EmitExitTimed(f, min_ticks);
  const std::uintptr_t ret = f.ret, entry = f.site;
  const std::uint64_t entry_ts = f.ts;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // read the frame before releasing it
  s->top = i - 1;
  RunMarks(entry, entry_ts, exit_ts);
  return ret;
}
