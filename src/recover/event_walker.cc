#include "recover/event_walker.h"

#include <algorithm>
#include <cstring>

#include "format/packet.h"

namespace hush::recover {
namespace {

std::size_t AlignUp(std::size_t v, std::size_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

}  // namespace

EventWalker::EventWalker(const reader::Metadata& metadata) : small_(256, nullptr) {
  for (const reader::EventClass& ec : metadata.events) {
    if (ec.id < small_.size()) {
      small_[ec.id] = &ec;
    } else {
      large_[ec.id] = &ec;
    }
  }
}

const reader::EventClass* EventWalker::Find(std::uint32_t id) const {
  if (id < small_.size()) return small_[id];
  const auto it = large_.find(id);
  return it == large_.end() ? nullptr : it->second;
}

WalkResult EventWalker::Walk(const std::uint8_t* packet, std::size_t from, std::size_t to,
                             std::uint64_t begin_ts, std::size_t mark,
                             std::vector<Boundary>* boundaries) const {
  WalkResult r;
  r.end = from;
  r.last_ts = begin_ts;
  std::uint64_t prev_ts = begin_ts;
  std::vector<reader::FieldSlot> slots;
  const auto stop = [&](std::size_t at, const std::string& what) {
    r.error = "byte " + std::to_string(at) + " of the packet: " + what;
    if (boundaries != nullptr) boundaries->push_back(Boundary{r.end, r.last_ts, 0});
    return r;
  };
  std::size_t pos = from;
  if (mark == from) {
    r.mark_hit = true;
    r.mark_ts = begin_ts;
  }
  while (pos < to) {
    const std::size_t start = pos;
    format::EventHeader header;
    if (!format::DecodeEventHeader(packet + start, to - start, prev_ts, &header)) {
      const bool extended = to - start >= format::kCompactHeaderSize && packet[start] == format::kExtendedId;
      return stop(start, std::string(extended ? "extended " : "") + "event header cut by the packet's end");
    }
    const std::uint32_t id = header.id;
    const std::uint64_t ts = header.timestamp;
    std::size_t q = start + header.size;
    const reader::EventClass* ec = Find(id);
    if (ec == nullptr) return stop(start, "unknown event id " + std::to_string(id));
    q = AlignUp(q, ec->payload_align);
    slots.resize(ec->fields.size());
    for (std::size_t i = 0; i < ec->fields.size(); ++i) {
      const reader::FieldInfo& f = ec->fields[i];
      q = AlignUp(q, f.align);
      if (q > to) return stop(start, "field '" + f.name + "' of " + ec->name + " past the end");
      std::size_t size = f.size;
      std::size_t skip = 0;
      if (f.type == reader::FieldType::kString) {
        const void* nul = std::memchr(packet + q, 0, to - q);
        if (nul == nullptr) {
          return stop(start, "string field '" + f.name + "' of " + ec->name + " without its NUL");
        }
        size = static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - (packet + q));
        skip = 1;
      } else if (f.type == reader::FieldType::kBytes && f.length_field >= 0) {
        const std::size_t li = static_cast<std::size_t>(f.length_field);
        if (li >= i) return stop(start, "length of field '" + f.name + "' declared after it");
        const reader::FieldValue len(&ec->fields[li], packet + start + slots[li].offset,
                                     slots[li].size);
        const std::uint64_t n = ec->fields[li].type == reader::FieldType::kSigned
                                    ? static_cast<std::uint64_t>(std::max<std::int64_t>(0, len.AsInt64()))
                                    : len.AsUint64();
        if (n > to - q) {
          return stop(start, "field '" + f.name + "' of " + ec->name + " (" + std::to_string(n) +
                                 " bytes) past the end");
        }
        size = static_cast<std::size_t>(n);
      }
      if (size > to - q || skip > to - q - size) {
        return stop(start, "field '" + f.name + "' of " + ec->name + " past the end");
      }
      slots[i] = reader::FieldSlot{static_cast<std::uint32_t>(q - start),
                                   static_cast<std::uint32_t>(size)};
      q += size + skip;
    }
    if (start == mark) {
      r.mark_has_next = true;
      r.mark_next_ts = ts;
    }
    if (boundaries != nullptr) boundaries->push_back(Boundary{start, prev_ts, ts});
    prev_ts = ts;
    pos = q;
    r.end = pos;
    r.last_ts = ts;
    ++r.events;
    if (pos == mark) {
      r.mark_hit = true;
      r.mark_events = r.events;
      r.mark_ts = ts;
    }
  }
  if (boundaries != nullptr) boundaries->push_back(Boundary{pos, prev_ts, 0});
  return r;
}

}  // namespace hush::recover
