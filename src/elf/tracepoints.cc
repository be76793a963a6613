#include "elf/tracepoints.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

#include "hushtrace/internal/descriptor.h"

namespace hush::elf {
namespace {

constexpr std::uint64_t kMaxDescSectionBytes = std::uint64_t{8} << 20;  // 1 Mi sites
constexpr std::size_t kMaxRecordBytes = 65535;                          // uint16 size field

std::string Hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

struct Range {
  std::uint64_t start = 0;
  std::uint64_t size = 0;
};

// Finds an array of the module's tracepoint sections: the section `name`, or else the bounds in
// the module's .note.hushtrace note of type `note_type`.
bool FindArray(const ElfFile& file, const char* name, std::uint32_t note_type, Range* range,
               std::vector<std::string>* warnings) {
  if (const ElfFile::Section* s = file.FindSection(name)) {
    range->start = s->addr;
    range->size = s->header.sh_type == SHT_NOBITS ? 0 : s->header.sh_size;
    return true;
  }
  if (file.type() == ET_REL) return false;  // an object's note is not linked yet
  bool found = false;
  file.ForEachNote(
      [&](const ElfFile::Note& n) {
        if (found || n.type != note_type || n.name != "hushtr" || n.desc_size != 16 ||
            n.desc_addr == 0) {
          return;
        }
        std::int64_t offsets[2];
        if (!file.Read(n.desc_offset, sizeof offsets, offsets)) return;
        // Self-relative: each offset is from its own address. Weak undefined bounds (a module
        // without sites) make both 0.
        const std::uint64_t start = n.desc_addr + static_cast<std::uint64_t>(offsets[0]);
        const std::uint64_t stop = n.desc_addr + 8 + static_cast<std::uint64_t>(offsets[1]);
        found = true;
        // Offset 0: an undefined weak bound (no such section) as aarch64 BFD ld resolves it (to
        // the place itself; x86-64 gives 0 - place, i.e. start == 0).
        if (offsets[0] != 0 && offsets[1] != 0 && start != 0 && stop > start) {
          range->start = start;
          range->size = stop - start;
        }
      },
      warnings);
  return found;
}

bool FindDescriptorArray(const ElfFile& file, Range* range, std::vector<std::string>* warnings) {
  return FindArray(file, "hush_desc", internal::kNoteType, range, warnings);
}

// Static-key sites per descriptor address: the hush_jump entries (docs/format.md, section 5),
// three self-relative int32 each {site, enabled block, descriptor}. Linked modules only (in an
// object file the offsets are not relocated yet). Problems are warnings; nothing is counted then.
std::map<std::uint64_t, std::size_t> CountJumpSites(const ElfFile& file,
                                                    std::vector<std::string>* warnings) {
  constexpr std::uint64_t kEntrySize = 12;
  std::map<std::uint64_t, std::size_t> counts;
  Range range;
  if (file.type() == ET_REL ||
      !FindArray(file, "hush_jump", internal::kJumpNoteType, &range, warnings) || range.size == 0) {
    return counts;
  }
  std::uint64_t offset = 0, avail = 0;
  if (range.size > kMaxDescSectionBytes / 8 * kEntrySize || range.size % kEntrySize != 0 ||
      !file.AddressToOffset(range.start, &offset, &avail) || avail < range.size) {
    warnings->push_back(file.Error("hush_jump (address " + Hex(range.start) + ", " +
                                   std::to_string(range.size) +
                                   " bytes) is not a readable array of 12-byte entries"));
    return counts;
  }
  std::vector<unsigned char> bytes(static_cast<std::size_t>(range.size));
  std::string read_error;
  if (!file.Read(offset, bytes.size(), bytes.data(), &read_error)) {
    warnings->push_back(read_error);
    return counts;
  }
  for (std::uint64_t at = 0; at < range.size; at += kEntrySize) {
    std::int32_t rel;
    std::memcpy(&rel, bytes.data() + at + 8, sizeof rel);
    // Wrapping arithmetic: a corrupt offset gives an address no descriptor has.
    ++counts[range.start + at + 8 + static_cast<std::uint64_t>(static_cast<std::int64_t>(rel))];
  }
  return counts;
}

}  // namespace

bool ReadTracepoints(const ElfFile& file, ModuleTracepoints* out, std::string* error) {
  out->path = file.name();
  out->elf_type = file.type();
  out->build_id = file.BuildId();
  Range range;
  out->has_section = FindDescriptorArray(file, &range, &out->warnings);
  if (!out->has_section || range.size == 0) return true;
  if (range.size > kMaxDescSectionBytes) {
    *error = file.Error("hush_desc is too large (" + std::to_string(range.size) + " bytes)");
    return false;
  }
  if (range.size % 8 != 0) {
    out->warnings.push_back(file.Error("hush_desc size " + std::to_string(range.size) +
                                       " is not a multiple of 8; the last bytes are ignored"));
  }
  out->slots = range.size / 8;
  std::uint64_t end;
  if (__builtin_add_overflow(range.start, range.size, &end)) {
    *error = file.Error("hush_desc address range overflows");
    return false;
  }
  std::uint64_t offset, avail;
  if (!file.AddressToOffset(range.start, &offset, &avail) || avail < range.size) {
    *error = file.Error("hush_desc (address " + Hex(range.start) + ", " +
                        std::to_string(range.size) + " bytes) is not in the file's loaded data");
    return false;
  }

  // 1. Slots -> descriptor addresses.
  std::vector<std::uint64_t> slots(out->slots);
  for (std::uint64_t i = 0; i < out->slots; ++i) slots[i] = range.start + 8 * i;
  const std::vector<ElfFile::Pointer> descs = file.ResolvePointers(slots, &out->warnings);
  std::vector<std::uint64_t> desc_addrs;
  for (std::uint64_t i = 0; i < out->slots; ++i) {
    if (!descs[i].ok) {
      out->warnings.push_back(file.Error("hush_desc entry " + std::to_string(i) + " (address " +
                                         Hex(slots[i]) + "): " + descs[i].error));
      continue;
    }
    // Null entries: sites in discarded COMDAT copies of inline functions. The runtime skips them.
    if (descs[i].value != 0) desc_addrs.push_back(descs[i].value);
  }
  std::sort(desc_addrs.begin(), desc_addrs.end());
  desc_addrs.erase(std::unique(desc_addrs.begin(), desc_addrs.end()), desc_addrs.end());

  // 2. Descriptors -> record addresses (Descriptor::meta, at offset 8).
  static_assert(offsetof(internal::Descriptor, meta) == 8);
  std::vector<std::uint64_t> meta_slots;
  for (std::uint64_t d : desc_addrs) {
    if (d > UINT64_MAX - 16) {
      out->warnings.push_back(file.Error("descriptor address " + Hex(d) + " is out of range"));
      continue;
    }
    meta_slots.push_back(d + offsetof(internal::Descriptor, meta));
  }
  const std::vector<ElfFile::Pointer> metas = file.ResolvePointers(meta_slots, &out->warnings);
  const std::map<std::uint64_t, std::size_t> jumps = CountJumpSites(file, &out->warnings);
  std::map<std::uint64_t, std::size_t> records;  // record address -> descriptors pointing at it
  std::map<std::uint64_t, std::size_t> record_jumps;  // record address -> static-key sites
  for (std::size_t i = 0; i < meta_slots.size(); ++i) {
    if (!metas[i].ok || metas[i].value == 0) {
      out->warnings.push_back(file.Error("descriptor at address " + Hex(meta_slots[i] - 8) + ": " +
                                         (metas[i].ok ? "null metadata pointer" : metas[i].error)));
      continue;
    }
    ++records[metas[i].value];
    if (auto j = jumps.find(meta_slots[i] - offsetof(internal::Descriptor, meta)); j != jumps.end())
      record_jumps[metas[i].value] += j->second;
  }

  // 3. Records -> tracepoints, merged by (name, kind, layout).
  using Key = std::tuple<std::string, std::uint8_t, std::string>;
  struct Merged {
    Tracepoint tp;
    std::vector<std::pair<std::string, std::uint32_t>> locations;
  };
  std::map<Key, Merged> merged;
  std::string buffer;
  for (const auto& [addr, count] : records) {
    std::uint64_t rec_offset, rec_avail;
    if (!file.AddressToOffset(addr, &rec_offset, &rec_avail)) {
      out->warnings.push_back(file.Error("tracepoint record address " + Hex(addr) +
                                         " is not in the file's loaded data"));
      continue;
    }
    char header[internal::kMetaHeaderSize];
    const std::size_t head =
        static_cast<std::size_t>(std::min<std::uint64_t>(rec_avail, sizeof header));
    std::string read_error;
    if (!file.Read(rec_offset, head, header, &read_error)) {
      out->warnings.push_back(read_error);
      continue;
    }
    // Read what the record says it needs (at most what its segment holds); the parser checks it.
    std::size_t want = head;
    if (head == sizeof header) {
      want = static_cast<unsigned char>(header[4]) |
             (static_cast<std::size_t>(static_cast<unsigned char>(header[5])) << 8);
      want = std::max<std::size_t>(want, head);
    }
    want = static_cast<std::size_t>(std::min<std::uint64_t>({want, rec_avail, kMaxRecordBytes}));
    buffer.assign(want, '\0');
    if (!file.Read(rec_offset, want, buffer.data(), &read_error)) {
      out->warnings.push_back(read_error);
      continue;
    }
    registry::MetaRecord meta;
    std::string parse_error;
    if (registry::ParseMetaRecord(buffer.data(), buffer.size(), &meta, &parse_error) == 0) {
      out->warnings.push_back(file.ErrorAt(
          rec_offset, "tracepoint record at address " + Hex(addr) + ": " + parse_error));
      continue;
    }
    Key key{meta.FullName(), meta.kind, meta.Signature()};
    Merged& m = merged[key];
    m.locations.emplace_back(meta.file, meta.line);
    if (m.tp.sites == 0) m.tp.meta = std::move(meta);
    m.tp.sites += count;
    if (auto j = record_jumps.find(addr); j != record_jumps.end()) m.tp.jump_sites += j->second;
  }
  for (auto& [key, m] : merged) {
    std::sort(m.locations.begin(), m.locations.end());
    m.locations.erase(std::unique(m.locations.begin(), m.locations.end()), m.locations.end());
    m.tp.meta.file = m.locations.front().first;
    m.tp.meta.line = m.locations.front().second;
    for (const auto& [f, line] : m.locations)
      m.tp.locations.push_back(f + ":" + std::to_string(line));
    out->tracepoints.push_back(std::move(m.tp));
  }
  return true;
}

bool ReadTracepointsFromFile(const std::string& path, ModuleTracepoints* out, std::string* error) {
  std::unique_ptr<ElfFile> file = ElfFile::Open(path, error);
  if (!file) return false;
  return ReadTracepoints(*file, out, error);
}

}  // namespace hush::elf
