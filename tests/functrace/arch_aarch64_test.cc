// The aarch64 encodings of function tracing (src/patch/arch/aarch64.cc): the entry's `b stub`,
// the 24-byte stub, the classification of entries. Expected words were checked with
// `aarch64-linux-gnu-objdump -D -b binary -m aarch64 --adjust-vma=<address>` of the encoder's
// output (the disassembly is quoted next to each). The last tests run a stub.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>

#include "patch/arch/arch.h"

namespace arch = hush::patch::arch;

namespace {

std::uint32_t Word(const std::uint8_t* p) {
  std::uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

constexpr std::uint32_t kNop = 0xd503201f;

TEST(Aarch64Encoding, EntryIsTwoNopsAndOnlyTheFirstWordIsPatched) {
  EXPECT_EQ(arch::EntrySize(), 8u);
  EXPECT_EQ(arch::SiteSize(), 4u);
  EXPECT_EQ(arch::HeadSize(), 4u);
  EXPECT_TRUE(arch::OneStoreSites());
  EXPECT_EQ(arch::JumpReach(), std::uint64_t{1} << 27);
  EXPECT_EQ(arch::EntryStubSize(), 24u);
}

TEST(Aarch64Encoding, BranchToTheStub) {
  std::uint8_t out[4];
  // 5550402340: 153ffb36  b 0x5555401018
  ASSERT_TRUE(arch::EncodeJump(0x5550402340, 0x5555401018, out));
  EXPECT_EQ(Word(out), 0x153ffb36u);
  // 5555401018: 16c004ca  b 0x5550402340 (backwards)
  ASSERT_TRUE(arch::EncodeJump(0x5555401018, 0x5550402340, out));
  EXPECT_EQ(Word(out), 0x16c004cau);
  // imm26 words: [-2^27, 2^27 - 4] bytes.
  EXPECT_TRUE(arch::EncodeJump(0x10000000, 0x10000000 + (1 << 27) - 4, out));
  EXPECT_EQ(Word(out), 0x15ffffffu);
  EXPECT_FALSE(arch::EncodeJump(0x10000000, 0x10000000 + (1 << 27), out));
  EXPECT_TRUE(arch::EncodeJump(0x10000000, 0x10000000 - (1 << 27), out));
  EXPECT_EQ(Word(out), 0x16000000u);
  EXPECT_FALSE(arch::EncodeJump(0x10000000, 0x10000000 - (1 << 27) - 4, out));
  EXPECT_FALSE(arch::EncodeJump(0x10000000, 0x10000002, out));  // not a word boundary
}

TEST(Aarch64Encoding, StubLoadsTheBodyAndBranchesThroughTheSlot) {
  std::uint8_t out[24];
  // stub 0x5555401018, body 0x5550402348, slot 0x5555400008:
  //   5555401018: b0fd8010  adrp x16, 0x5550402000
  //   555540101c: 910d2210  add  x16, x16, #0x348
  //   5555401020: f0fffff1  adrp x17, 0x5555400000
  //   5555401024: f9400631  ldr  x17, [x17, #8]
  //   5555401028: d61f0220  br   x17
  //   555540102c: d4290e60  brk  #0x4873
  ASSERT_TRUE(arch::EncodeEntryStub(0x5555401018, 0x5550402348, 0x5555400008, out));
  const std::uint32_t expect[6] = {0xb0fd8010, 0x910d2210, 0xf0fffff1,
                                   0xf9400631, 0xd61f0220, 0xd4290e60};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(Word(out + 4 * i), expect[i]) << "instruction " << i;
  // adrp reaches +-4 GiB of pages; the slot must be 8-byte aligned (ldr's scaled offset).
  EXPECT_FALSE(arch::EncodeEntryStub(0x5555401018, 0x5555401018 + (std::uint64_t{1} << 32) + 0x10000,
                                     0x5555400008, out));
  EXPECT_FALSE(arch::EncodeEntryStub(0x5555401018, 0x5550402348, 0x5555400004, out));
  EXPECT_FALSE(arch::EncodeEntryStub(0x5555401016, 0x5550402348, 0x5555400008, out));
}

TEST(Aarch64Encoding, ClassifiesEntries) {
  std::uint8_t e[8];
  const auto set = [&e](std::uint32_t a, std::uint32_t b) {
    std::memcpy(e, &a, 4);
    std::memcpy(e + 4, &b, 4);
  };
  set(kNop, kNop);
  EXPECT_EQ(arch::ClassifyEntry(e), arch::EntryKind::kNop);
  set(0x153ffb36, kNop);  // b stub; nop: as this runtime patches it
  EXPECT_EQ(arch::ClassifyEntry(e), arch::EntryKind::kPatched);
  set(0xaa1e03e9, kNop);  // mov x9, x30; nop: another tool's (Linux-style) first step
  EXPECT_EQ(arch::ClassifyEntry(e), arch::EntryKind::kOther);
  set(kNop, 0x94000001);  // nop; bl: someone else's
  EXPECT_EQ(arch::ClassifyEntry(e), arch::EntryKind::kOther);
  set(0xa9bf7bfd, 0x910003fd);  // stp x29, x30, [sp, #-16]!; mov x29, sp: no patchable entry
  EXPECT_EQ(arch::ClassifyEntry(e), arch::EntryKind::kOther);
}

}  // namespace

// Stands in for the trampoline: returns what the stub left in x16 (the body it hands over).
extern "C" std::uintptr_t hush_test_return_x16();
asm(R"(
        .text
        .globl  hush_test_return_x16
        .type   hush_test_return_x16, %function
hush_test_return_x16:
        mov     x0, x16
        ret
        .size   hush_test_return_x16, .-hush_test_return_x16
)");

namespace {

// A stub written by EncodeEntryStub into an arena laid out as functrace's (the slot first),
// made executable, called: it must reach the slot's target with x16 = the body.
TEST(Aarch64Encoding, AStubRunsToTheSlotsTargetWithTheBodyInX16) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* mem = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  const auto arena = reinterpret_cast<std::uintptr_t>(mem);
  const auto target = reinterpret_cast<std::uintptr_t>(&hush_test_return_x16);
  std::memcpy(mem, &target, sizeof target);
  // Any address within adrp's reach: the stub only computes it, and the target returns it.
  const std::uintptr_t body = arena + 0x10000348;
  const std::uintptr_t stub = arena + 3 * arch::EntryStubSize();
  ASSERT_TRUE(arch::EncodeEntryStub(stub, body, arena, reinterpret_cast<std::uint8_t*>(stub)));
  ASSERT_EQ(::mprotect(mem, page, PROT_READ | PROT_EXEC), 0);
  __builtin___clear_cache(static_cast<char*>(mem), static_cast<char*>(mem) + page);
  const auto call = reinterpret_cast<std::uintptr_t (*)()>(stub);
  EXPECT_EQ(call(), body);
  ::munmap(mem, page);
}

}  // namespace
