// The out-of-line slow path of event emission and the per-thread attach/detach.
//
// ReserveSlow runs on the emitting thread with its nesting guard held. It handles, in order:
// nested events (signal handler inside an event: dropped and counted), no session, first event of
// the thread or of a new session (attach to a ring), events too large for a packet (dropped and
// counted), a full packet (close it, open the next; a full ring in stream mode discards and
// counts), and the extended header (id >= 255 or a timestamp gap >= 2^24 cycles).
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "registry/probes.h"
#include "session/core.h"
#include "base/library_thread.h"
#include "session/writers.h"


namespace hush::session {



namespace {

thread_local std::uint32_t t_tid = 0;
thread_local char t_name[16] = {};
thread_local bool t_in_attach = false;

pthread_key_t g_exit_key;
std::once_flag g_exit_key_once;

void OnThreadExit(void*) {
  internal::ThreadWriter& w = internal::tls_writer;
  const std::uint32_t previous = internal::EnterEvent(w);  // no event of ours during detach
  Core* core = Core::Active();
  if (core != nullptr && w.ring != nullptr && w.generation == core->generation()) {
    auto* ring = static_cast<ring::Ring*>(w.ring);  // lives as long as the Core: we are in an event
    core->Detach(w);
    // Detach closed a packet. The consumer must run (it may not have started: a thread that never
    // filled a packet), but it need not run now: its periodic pass (core.cc, ConsumerLoop)
    // writes the packet, and waking it at every exit made it compete with the program's
    // remaining threads for the CPUs at their busiest (issue 19: 16 threads ending together).
    // It is woken when packets pile up (Ring::ConsumerBehind), as by a producer (ring/reserve.cc), so that
    // threads reusing the ring one after another, each leaving a packet, never make it discard.
    core->EnsureConsumer();
    if (ring->ConsumerBehind()) core->WakeConsumer();
  }
  w.end.store(nullptr, std::memory_order_relaxed);
  w.ring = nullptr;
  // The thread is done with every session: grace periods stop waiting for it (writers.h). Still
  // inside our guard, so a signal handler's event here is nested and never lists or attaches. A
  // later destructor's event lists the thread again and re-arms this hook.
  writers::UnregisterThisThread();
  internal::LeaveEvent(w, previous);
}

// Lists the thread for grace periods (writers.h) and arms OnThreadExit, which unlists it after
// its last event. One hook for both: a thread must stay listed until it has detached.
void ListThisThread(internal::ThreadWriter& w) {
  if (writers::ThisThreadListed()) [[likely]] return;
  std::call_once(g_exit_key_once, [] { ::pthread_key_create(&g_exit_key, OnThreadExit); });
  if (writers::RegisterThisThread()) ::pthread_setspecific(g_exit_key, &w);
}

ring::Ring* AttachThisThread(Core* core, internal::ThreadWriter& w) {
  if (t_in_attach) return nullptr;  // re-entered from a signal handler
  t_in_attach = true;
  if (t_tid == 0) {
    t_tid = static_cast<std::uint32_t>(::syscall(SYS_gettid));
  }
  ::prctl(PR_GET_NAME, t_name, 0, 0, 0);
  ring::Ring* r = core->Attach(w, /*fresh=*/false);
  // On failure the thread stays unattached for this session (ring == nullptr with the session's
  // generation): its events are dropped without retrying the attach on every one of them.
  w.ring = r;
  w.generation = core->generation();
  t_in_attach = false;
  return r;
}

}  // namespace

void ForgetThreadInChild() {
  t_tid = 0;
  writers::ForgetInChild();
}

}  // namespace hush::session



namespace hush::internal {

namespace {

char* ReserveRecorded(ThreadWriter& w, std::uint32_t id, std::uint64_t ts, std::size_t payload_size) {
  using session::Core;
  const bool nested = w.nesting.load(std::memory_order_relaxed) != 1;
  if (!nested) {
    // Before the session pointer is loaded: a stopped session waits for the events of listed
    // threads before it frees its memory (writers.h).
    session::ListThisThread(w);
  } else if (!session::writers::ThisThreadListed()) {
    // A signal handler's event inside an event of a thread not listed yet (perhaps inside
    // ListThisThread, holding its mutex): that thread never attached, so there is no ring to count
    // the discard in, and the session may not be looked at from an unlisted thread.
    return nullptr;
  }
  Core* core = Core::Active();
  auto* r = static_cast<ring::Ring*>(w.ring);
  const bool attached = core != nullptr && r != nullptr && w.generation == core->generation();
  if (nested) {
    if (attached) r->CountDiscarded(1);
    return nullptr;
  }
  if (core == nullptr) return nullptr;
  if (!core->use_tsc()) ts = clock::Now(false);
  if (!attached) {
    // The library's own threads never record: a traced function they call (function tracing of
    // a binary whose std::string code the runtime binds to) must not attach while the thread
    // holds the session mutex, as the consumer does when it writes.
    if (base::t_library_thread) return nullptr;
    if (r == nullptr && w.generation == core->generation()) {  // attach failed
      core->CountUnattached();
      return nullptr;
    }
    // An event that began before this session was published read its id from an earlier
    // session's state word: a thread descheduled inside an event for longer than that session's
    // bounded wait at Stop (Core::Unpublish). Recorded here, it would carry the old session's
    // id, which this session may give to another event (soak: a soak:seq payload read back as
    // soak:tick). It belongs to neither trace: dropped, not counted. `ts` is the cycle counter
    // read after the id; without it (use_tsc() false) the check cannot be made.
    if (core->use_tsc() && ts < core->published_at()) return nullptr;
    r = session::AttachThisThread(core, w);  // counts the event if the buffer cannot be made
    if (r == nullptr) return nullptr;
    // The ring may have carried another thread's packets until just now: stamp this first event
    // at attach time so that the stream's timestamps never go backwards.
    ts = std::max(clock::Now(core->use_tsc()), r->LastEndTimestamp());
  }
  id &= internal::kIdMask;
  return ring::Reserve(*core, *r, w, id, ts, payload_size, session::t_tid, session::t_name,
                       /*own_thread=*/true);
}

void CommitRecorded(ThreadWriter& w, std::uint32_t id, char* payload, char* end) {
  if ((id & kFilterIdBit) != 0) {
    // Pairs with the release store of the descriptor's state word (read relaxed by the caller):
    // the filter table that word points to is visible.
    std::atomic_thread_fence(std::memory_order_acquire);
    session::Core* core = session::Core::Active();
    if (core != nullptr &&
        !core->FilterAccepts(id & kIdMask, payload, static_cast<std::size_t>(end - payload))) {
      // Not committed: the space is reused, and the commit word still holds the last committed
      // event's timestamp, which the next compact header is relative to.
      return;
    }
  }
  Commit(w, end);
  if ((id & kTriggerIdBit) != 0) [[unlikely]] {
    // Acquire: as above, for the session's trigger rules (Core::BindTriggers). After the commit:
    // a snapshot the event fires holds the event itself.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (session::Core* core = session::Core::Active()) {
      core->OnTriggerEvent(w, id & kIdMask, payload, static_cast<std::size_t>(end - payload));
    }
  }
}

}  // namespace

// Probed events (kProbeIdBit, src/registry/probes.h): recorded under the id the probe list gives,
// else encoded into a per-thread scratch area, so that the probes always see the payload. A
// nested probed event is dropped like any nested event.
char* ReserveSlow(ThreadWriter& w, std::uint32_t id, std::uint64_t ts, std::size_t payload_size) {
  if (id == kDisabledId) return nullptr;  // disabled since the site's check: nothing to count
  if ((id & kProbeIdBit) == 0 || w.nesting.load(std::memory_order_relaxed) != 1) {
    return ReserveRecorded(w, id, ts, payload_size);
  }
  const std::int64_t recorded = registry::probes::BeginEvent(id);
  char* p = recorded >= 0 ? ReserveRecorded(w, static_cast<std::uint32_t>(recorded), ts, payload_size)
                          : nullptr;
  return p != nullptr ? p : registry::probes::Scratch(payload_size);
}

void DropNestedEvent(std::uint32_t id) {
  ThreadWriter& w = tls_writer;
  const std::uint32_t previous = EnterEvent(w);
  ReserveSlow(w, id, ReadCycleCounter(), 0);  // nested: counts the discard, reserves nothing
  LeaveEvent(w, previous);
}

void CommitSlow(ThreadWriter& w, std::uint32_t id, char* payload, char* end) {
  if ((id & kProbeIdBit) == 0) return CommitRecorded(w, id, payload, end);
  if (!registry::probes::IsScratch(payload)) CommitRecorded(w, registry::probes::RecordedId(), payload, end);
  registry::probes::RunProbes(id, payload, end);
}

}  // namespace hush::internal
