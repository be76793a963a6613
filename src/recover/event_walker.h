// Walks the events of a packet held in memory (a ring sub-buffer), using the event layouts of the
// trace's metadata, to find event boundaries, count events and stop at the first one that is not
// consistent. Same decoding rules as the reader (docs/format.md, section 3; src/reader), but over
// a byte range of one sub-buffer instead of a stream file.
#ifndef HUSHTRACE_SRC_RECOVER_EVENT_WALKER_H_
#define HUSHTRACE_SRC_RECOVER_EVENT_WALKER_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "hushtrace/reader.h"

namespace hush::recover {

struct WalkResult {
  std::size_t end = 0;          // end of the last complete, consistent event (== `to` if all were)
  std::uint64_t events = 0;     // complete events in [from, end)
  std::uint64_t last_ts = 0;    // timestamp of the last of them (`begin_ts` when none)
  std::string error;            // why the walk stopped before `to` (empty when it did not)
  // With a `mark` offset: whether an event boundary fell exactly on it, the events before it,
  // the timestamp of the last of them (`begin_ts` when none) and of the event starting there.
  bool mark_hit = false;
  std::uint64_t mark_events = 0;
  std::uint64_t mark_ts = 0;
  bool mark_has_next = false;
  std::uint64_t mark_next_ts = 0;
};

// An event boundary met by a walk: its offset in the packet, the timestamp of the event before it
// (the packet's timestamp_begin for the first) and of the event starting there (0 at the end).
struct Boundary {
  std::size_t offset = 0;
  std::uint64_t ts_before = 0;
  std::uint64_t ts_at = 0;
};

class EventWalker {
 public:
  explicit EventWalker(const reader::Metadata& metadata);

  // Decodes the events in bytes [from, to) of `packet` (a packet that starts at `packet`: field
  // alignment is relative to it). `begin_ts` is the previous timestamp of the stream (the
  // packet's timestamp_begin), from which compact timestamps are rebuilt. `mark` (optional): an
  // offset to check for an event boundary (see WalkResult).
  WalkResult Walk(const std::uint8_t* packet, std::size_t from, std::size_t to,
                  std::uint64_t begin_ts, std::size_t mark = SIZE_MAX,
                  std::vector<Boundary>* boundaries = nullptr) const;

  const reader::EventClass* Find(std::uint32_t id) const;

 private:
  std::vector<const reader::EventClass*> small_;  // ids < 256
  std::unordered_map<std::uint32_t, const reader::EventClass*> large_;
};

}  // namespace hush::recover

#endif  // HUSHTRACE_SRC_RECOVER_EVENT_WALKER_H_
