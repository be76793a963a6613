// Tracepoints of the static-key tests and a reader of a module's own `hush_jump` table
// (include/hushtrace/internal/enabled_check.h), shared by keys_test.cc and keys_module.cc.
#ifndef HUSHTRACE_TESTS_KEYS_KEYS_SITES_H_
#define HUSHTRACE_TESTS_KEYS_KEYS_SITES_H_

#include <hushtrace/hushtrace.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

HUSH_TRACEPOINT(keys, work, (std::int32_t, x), (std::int32_t, r))
HUSH_TRACEPOINT(keys, idle, (std::int32_t, x))  // never enabled
HUSH_TRACEPOINT(keys, late, (std::int32_t, x))  // also emitted by the dlopened module

namespace keystest {

inline constexpr bool kStaticKeys = HUSH_INTERNAL_STATIC_KEYS != 0;
// aarch64 sites are swapped in one store, without the trap steps (src/patch/arch/aarch64.cc).
#if defined(__aarch64__)
inline constexpr bool kOneStoreSites = kStaticKeys;
#else
inline constexpr bool kOneStoreSites = false;
#endif
inline constexpr std::uint8_t kNop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

// The function every test calls: its result is checkable, its sites cover every macro kind.
inline int Expected(int x) { return x * 3 + 1; }

struct SiteInfo {
  std::uintptr_t addr = 0;
  std::uintptr_t target = 0;
  const hush::internal::Descriptor* descriptor = nullptr;
  std::string event;  // "provider:name" from the descriptor's metadata record

#if defined(__aarch64__)
  // aarch64: one `nop` (d503201f), or `b imm26` (000101 in bits 31:26), words from the branch.
  std::uint32_t Insn() const {
    std::uint32_t insn;
    std::memcpy(&insn, reinterpret_cast<const void*>(addr), 4);
    return insn;
  }
  bool IsNop() const { return Insn() == 0xd503201fu; }
  bool IsJumpToTarget() const {
    const std::uint32_t insn = Insn();
    // Sign-extend imm26: shift it to the top of a 32-bit word, then arithmetic shift back.
    const std::int32_t words = static_cast<std::int32_t>(insn << 6) >> 6;
    return (insn & 0xfc000000u) == 0x14000000u &&
           addr + static_cast<std::intptr_t>(words) * 4 == target;
  }
#else
  bool IsNop() const { return std::memcmp(reinterpret_cast<const void*>(addr), kNop5, 5) == 0; }
  // A jmp rel32 to the site's enabled block.
  bool IsJumpToTarget() const {
    const auto* p = reinterpret_cast<const std::uint8_t*>(addr);
    std::int32_t rel;
    std::memcpy(&rel, p + 1, 4);
    return p[0] == 0xe9 && addr + 5 + static_cast<std::intptr_t>(rel) == target;
  }
#endif
};

// Decodes the entries in [start, stop): each field is an offset from its own address.
inline std::vector<SiteInfo> DecodeTable(const char* start, const char* stop) {
  std::vector<SiteInfo> out;
  if (start == nullptr || stop <= start) return out;
  auto resolve = [](const std::int32_t* f) {
    return reinterpret_cast<std::uintptr_t>(f) + static_cast<std::intptr_t>(*f);
  };
  for (auto* e = reinterpret_cast<const hush::internal::JumpEntry*>(start);
       e < reinterpret_cast<const hush::internal::JumpEntry*>(stop); ++e) {
    SiteInfo s;
    s.addr = resolve(&e->site);
    s.target = resolve(&e->target);
    s.descriptor = reinterpret_cast<const hush::internal::Descriptor*>(resolve(&e->descriptor));
    const char* strings = s.descriptor->meta + hush::internal::kMetaHeaderSize;
    s.event = std::string(strings) + ":" + (strings + std::strlen(strings) + 1);
    out.push_back(s);
  }
  return out;
}

}  // namespace keystest

#endif  // HUSHTRACE_TESTS_KEYS_KEYS_SITES_H_
