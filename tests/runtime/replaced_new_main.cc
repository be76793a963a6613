// A program that replaces the global operator new and delete, as one with a pool or a guard
// allocator does, and uses the shared runtime's C++ API. What the runtime hands to the program
// (the Session that Session::Start returns, the error text it writes) is freed by the program's
// operators, so it must come from them; where the runtime carries its own C++ runtime
// (src/CMakeLists.txt, HUSH_PRIVATE_LIBSTDCXX), its allocations reach them through
// src/cxxrt/allocation.cc, as they reach them by interposition where it loads libstdc++.so.
// Each block carries a tag in front of it; a delete of a pointer without the tag aborts.
//
//   hush_replaced_new DIR    records into DIR; prints "replaced_new: ok" and exits 0
#include <hushtrace/hushtrace.h>
#include <hushtrace/session.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

HUSH_TRACEPOINT(replaced_new, tick, (std::int32_t, i))

namespace {

constexpr std::uint64_t kTag = 0x216e6577'68757368;  // "hushnew!"

struct alignas(16) Header {
  std::uint64_t tag;
  std::uint64_t size;
};

std::atomic<long> g_allocations{0};

void* Tagged(std::size_t n) {
  auto* h = static_cast<Header*>(std::malloc(sizeof(Header) + n));
  if (h == nullptr) throw std::bad_alloc();
  h->tag = kTag;
  h->size = n;
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return h + 1;
}

void Untag(void* p) {
  if (p == nullptr) return;
  Header* h = static_cast<Header*>(p) - 1;
  if (h->tag != kTag) {
    std::fputs("replaced_new: delete of a block this program's operator new did not return\n", stderr);
    std::abort();
  }
  h->tag = 0;
  std::free(h);
}

}  // namespace

void* operator new(std::size_t n) { return Tagged(n); }
void* operator new[](std::size_t n) { return Tagged(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return Tagged(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& tag) noexcept { return operator new(n, tag); }
void operator delete(void* p) noexcept { Untag(p); }
void operator delete[](void* p) noexcept { Untag(p); }
void operator delete(void* p, std::size_t) noexcept { Untag(p); }
void operator delete[](void* p, std::size_t) noexcept { Untag(p); }

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::string error;
  if (hush::Session::Start(hush::SessionOptions{}, &error) != nullptr || error.empty()) {
    std::fputs("replaced_new: a session without events started\n", stderr);
    return 1;
  }
  std::printf("replaced_new: refused: %s\n", error.c_str());  // text the runtime allocated
  hush::SessionOptions options;
  options.events = {"replaced_new:*"};
  options.output_dir = argv[1];
  const long before = g_allocations.load();
  std::unique_ptr<hush::Session> session = hush::Session::Start(options, &error);
  const long during = g_allocations.load() - before;
  if (!session) {
    std::fprintf(stderr, "replaced_new: %s\n", error.c_str());
    return 1;
  }
  for (std::int32_t i = 0; i < 100; ++i) HUSH_TRACE(replaced_new, tick, i);
  session->Stop();
  session.reset();  // the program's delete of the runtime's new
  std::printf("replaced_new: %ld blocks of Session::Start from this program's operator new\n", during);
  // The Session alone is one; the runtime's own strings and vectors are the others.
  if (during < 2) {
    std::fputs("replaced_new: the runtime did not allocate through the program's operator new\n", stderr);
    return 1;
  }
  std::puts("replaced_new: ok");
  return 0;
}
