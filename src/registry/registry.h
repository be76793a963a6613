// Registry of the tracepoints of every loaded module, built on demand (never at start-up).
//
// Scan() walks the loaded modules with dl_iterate_phdr, finds each module's `.note.hushtrace`
// note in its PT_NOTE segments (memory only, no file I/O) and from it the module's `hush_desc`
// array of descriptor addresses (include/hushtrace/internal/descriptor.h). Descriptors with the
// same name and field layout form one event; each gets one CTF event id when enabled.
//
// Threading: all calls are made with the session mutex held. Emitting threads only read
// Descriptor::state (relaxed); Enable/DisableAll write it.
#ifndef HUSHTRACE_SRC_REGISTRY_REGISTRY_H_
#define HUSHTRACE_SRC_REGISTRY_REGISTRY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "hushtrace/internal/descriptor.h"
#include "registry/meta_record.h"

namespace hush::registry {

struct Event {
  MetaRecord meta;
  std::vector<internal::Descriptor*> descriptors;
  std::int64_t id = -1;  // CTF event id once enabled in this session
  bool enabled = false;
};

class Registry {
 public:
  // Finds descriptors of modules not seen before. Returns the number of new descriptors.
  std::size_t Scan();
  std::vector<Event>& events() { return events_; }
  // Enables every event whose "provider:name" matches one of the globs; assigns ids to events
  // never enabled before in this session. Returns how many events were newly enabled.
  std::size_t Enable(const std::vector<std::string>& globs);
  void DisableAll();
  // Forgets ids (a new session numbers from 0).
  void ResetIds();
  std::vector<const Event*> EventsWithIds() const;

 private:
  void Add(internal::Descriptor* d);

  std::vector<Event> events_;
  std::vector<internal::Descriptor*> seen_;
  std::uint32_t next_id_ = 0;
};

bool GlobMatches(const std::string& pattern, const std::string& name);

}  // namespace hush::registry

#endif  // HUSHTRACE_SRC_REGISTRY_REGISTRY_H_
