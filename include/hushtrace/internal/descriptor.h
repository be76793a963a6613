// Tracepoint descriptors and their self-describing metadata records.
//
// Every HUSH_TRACE / HUSH_SPAN / HUSH_INSTANT / HUSH_COUNTER site refers to one Descriptor, an
// ordinary variable with internal linkage (one copy per translation unit; the registry merges copies
// by name). Each site also appends the descriptor's address to the ELF section `hush_desc` with an
// `asm` directive, and every module with such sites carries one `.note.hushtrace` note giving the
// bounds of its `hush_desc` section. The runtime finds all of them with dl_iterate_phdr when a
// session starts: nothing is registered, allocated or run at program start-up.
//
//   .note.hushtrace (one per module, COMDAT)       hush_desc (one slot per site)
//   +-------------------------------+              +------------+------------+----
//   | "hushtr" type 0x48555348      |  start - .   | &Descriptor| &Descriptor| ...
//   | int64 __start_hush_desc - .   |------------->+------------+------------+----
//   | int64 __stop_hush_desc  - .   |
//   +-------------------------------+       Descriptor{ state, meta -> "HTP1" record (.rodata) }
//   | "hushtr" type 0x4A555348      |  start - .   hush_jump (one JumpEntry per static-key site,
//   | int64 __start_hush_jump - .   |------------> see enabled_check.h)
//   | int64 __stop_hush_jump  - .   |
//   +-------------------------------+
//
// The jump note has a COMDAT group of its own (hush_jump_note_group): the C header
// (hushtrace_c.h) emits only the first note, and a module whose first object has no jump note
// (a C file, an object built with an older header) must not make the linker drop the C++ units'.
// The metadata record layout is documented in docs/format.md, section 5.
#ifndef HUSHTRACE_INTERNAL_DESCRIPTOR_H_
#define HUSHTRACE_INTERNAL_DESCRIPTOR_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hush::internal {

enum class EventKind : std::uint8_t { kEvent = 0, kSpan = 1, kInstant = 2, kCounter = 3 };

struct Descriptor {
  // 0 while disabled; otherwise the session's event id + 1 and flag bits. Written by the registry
  // (session thread) with release; read by emitting threads with a relaxed load. The fast path
  // needs only the id, carried in the same word. The release also publishes what a flag bit makes
  // the slow path read: the session's filter table (kFilterIdBit: CommitSlow issues an acquire
  // fence before reading it) and the event's probe list slot (kProbeIdBit: the list pointer itself
  // is loaded with acquire, src/registry/probes.h). The session (Core::active_) is published by
  // its own release store before any state word is set (docs/architecture.md, invariant 6).
  // An event that triggers a snapshot (SessionOptions::snapshot_on) has kTriggerIdBit set in its
  // id: such an id never fits the compact header, so the event always takes ReserveSlow, which
  // clears the bit, and CommitSlow, which checks the trigger's rule (a span's duration, a field
  // condition) once the event is committed. The fast path of other events does not change.
  std::atomic<std::uint32_t> state;
  std::uint32_t reserved;
  // Points to the HTP1 metadata record of this site; constant.
  const char* meta;
};
static_assert(sizeof(Descriptor) == 16);

inline constexpr std::uint32_t kTriggerIdBit = 0x80000000u;  // see Descriptor::state
// An event with a field filter (SessionOptions::filter) has this bit: it also takes ReserveSlow,
// and CommitSlow() commits it only if the filter accepts its payload.
inline constexpr std::uint32_t kFilterIdBit = 0x40000000u;
// An event with user probes (include/hushtrace/probe.h) has this bit; its id bits are then the
// index of its probe slot (src/registry/probes.h), not a session event id. It takes ReserveSlow,
// which looks up the slot's probe list (RCU-style, src/registry/grace.h), and CommitSlow, which
// records it if the list says so and calls the probes.
inline constexpr std::uint32_t kProbeIdBit = 0x20000000u;
inline constexpr std::uint32_t kIdMask = ~(kTriggerIdBit | kFilterIdBit | kProbeIdBit);
// Ids whose events must be committed by CommitSlow rather than Commit.
inline constexpr std::uint32_t kCommitSlowBits = kFilterIdBit | kProbeIdBit | kTriggerIdBit;
// `state - 1` of a state word read as 0 (the event was disabled after its site's check): the
// fast path computes the id without testing for it; the id never fits the compact header, and
// the slow path drops the event.
inline constexpr std::uint32_t kDisabledId = 0xFFFFFFFFu;
inline constexpr std::uint32_t kNoteType = 0x48555348;      // "HSUH" read as little-endian bytes
inline constexpr std::uint32_t kJumpNoteType = 0x4A555348;  // "HSUJ": bounds of hush_jump

// One entry of section hush_jump (enabled_check.h). Each field is the offset of what it names
// from the address of the field itself.
struct JumpEntry {
  std::int32_t site;        // the 5-byte NOP / JMP
  std::int32_t target;      // the enabled block (where the JMP goes)
  std::int32_t descriptor;  // the site's Descriptor
};
static_assert(sizeof(JumpEntry) == 12);
inline constexpr std::size_t kMetaHeaderSize = 12;

// What a tracepoint declares: kind, source line and the strings
// provider, name, file, then (field name, type code) for each field.
template <std::size_t N>
struct TracepointSpec {
  EventKind kind;
  std::uint32_t line;
  std::array<std::string_view, N> strings;
};

template <typename Spec>
constexpr std::size_t MetaRecordSize() {
  std::size_t n = kMetaHeaderSize;
  for (std::string_view s : Spec::Get().strings) n += s.size() + 1;
  return n;
}

template <typename Spec>
constexpr std::array<char, MetaRecordSize<Spec>()> BuildMetaRecord() {
  constexpr auto spec = Spec::Get();
  constexpr std::size_t kSize = MetaRecordSize<Spec>();
  static_assert(kSize < 65536, "hushtrace: tracepoint metadata larger than 64 KiB");
  static_assert((spec.strings.size() - 3) % 2 == 0 && (spec.strings.size() - 3) / 2 < 256);
  std::array<char, kSize> out{};
  out[0] = 'H';
  out[1] = 'T';
  out[2] = 'P';
  out[3] = '1';
  out[4] = static_cast<char>(kSize & 0xff);
  out[5] = static_cast<char>(kSize >> 8);
  out[6] = static_cast<char>(spec.kind);
  out[7] = static_cast<char>((spec.strings.size() - 3) / 2);
  for (int i = 0; i < 4; ++i) out[8 + i] = static_cast<char>((spec.line >> (8 * i)) & 0xff);
  std::size_t at = kMetaHeaderSize;
  for (std::string_view s : spec.strings) {
    for (char c : s) out[at++] = c;
    out[at++] = '\0';
  }
  return out;
}

template <typename Spec>
inline constexpr auto kMetaRecord = BuildMetaRecord<Spec>();

// One descriptor per Spec and translation unit. `static` gives internal linkage even when the
// site is inside an inline function or template, which lets the registering `asm` use the address
// as an immediate in position-independent code.
template <typename Spec>
static Descriptor site_descriptor{{0}, 0, kMetaRecord<Spec>.data()};

}  // namespace hush::internal

// The asm constraint for a symbol's address used as an assembler constant: "i" on x86-64;
// aarch64 GCC refuses "i" for a symbol in position-independent code ("impossible constraint")
// and has "S" (a symbolic address) for it.
#if defined(__aarch64__) && !defined(__clang__)
#define HUSH_INTERNAL_ASM_SYMBOL "S"
#else
#define HUSH_INTERNAL_ASM_SYMBOL "i"
#endif

// Records the descriptor's address in section hush_desc. Emits no instruction.
#define HUSH_INTERNAL_REGISTER_DESCRIPTOR(desc)                                         \
  asm volatile(".pushsection hush_desc,\"aw\"\n\t.balign 8\n\t.quad %c0\n\t.popsection" \
               :                                                                        \
               : HUSH_INTERNAL_ASM_SYMBOL(&(desc)))

// The note that lets the runtime find this module's hush_desc section. One per module: the
// COMDAT group makes the linker keep a single copy. The bounds are weak and hidden: a module that
// includes the header but has no site links fine and its note points at an empty range.
asm(".weak __start_hush_desc\n\t.hidden __start_hush_desc\n\t"
    ".weak __stop_hush_desc\n\t.hidden __stop_hush_desc\n\t"
    ".pushsection .note.hushtrace,\"aG\",@note,hush_note_group,comdat\n\t"
    ".balign 4\n\t.long 7\n\t.long 16\n\t.long 0x48555348\n\t.asciz \"hushtr\"\n\t.balign 4\n\t"
    ".quad __start_hush_desc - .\n\t.quad __stop_hush_desc - .\n\t.popsection");

// The note with the bounds of this module's hush_jump section (static-key sites), the same shape
// under another type and COMDAT group (see the banner). A module without static-key sites (C
// only, HUSH_NO_STATIC_KEYS) links fine: the weak bounds make it point at an empty range.
asm(".weak __start_hush_jump\n\t.hidden __start_hush_jump\n\t"
    ".weak __stop_hush_jump\n\t.hidden __stop_hush_jump\n\t"
    ".pushsection .note.hushtrace,\"aG\",@note,hush_jump_note_group,comdat\n\t"
    ".balign 4\n\t.long 7\n\t.long 16\n\t.long 0x4A555348\n\t.asciz \"hushtr\"\n\t.balign 4\n\t"
    ".quad __start_hush_jump - .\n\t.quad __stop_hush_jump - .\n\t.popsection");

#endif  // HUSHTRACE_INTERNAL_DESCRIPTOR_H_
