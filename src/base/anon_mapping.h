// base::AnonMapping: the owner of a private anonymous mapping (mmap / munmap), for buffers that
// must not live on the program's heap.
//
//   base::AnonMapping buf = base::AnonMapping::Create(128 * 1024);
//   if (!buf) return base::ErrnoMessage("cannot map the copy buffer");
//   std::memcpy(buf.data(), src, n);         // pages are allocated as they are first written
//
// Why not `new char[n]`: a large block from malloc moves the top of the program's heap past it,
// so every small allocation made after it lands on a page no one has touched yet, and each such
// page costs a fault (11-16 us in docs/benchmarks.md, "The host's prices"; 1.5-2.2 us on the same
// VM kind on 2026-12-07). A mapping of its own costs one mmap and no page until used; the pages
// it does not use are never allocated.
// munmap is called once, by the destructor or reset(), and its result ignored (it fails only for
// arguments this class never passes).
#ifndef HUSHTRACE_SRC_BASE_ANON_MAPPING_H_
#define HUSHTRACE_SRC_BASE_ANON_MAPPING_H_

#include <sys/mman.h>

#include <cstddef>
#include <utility>

namespace hush::base {

class AnonMapping {
 public:
  AnonMapping() = default;
  // `size` bytes, readable and writable, zero-filled on first touch; empty (false) with errno
  // set when the kernel refuses.
  static AnonMapping Create(std::size_t size) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? AnonMapping() : AnonMapping(static_cast<char*>(p), size);
  }
  ~AnonMapping() { reset(); }
  AnonMapping(AnonMapping&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  AnonMapping& operator=(AnonMapping&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  AnonMapping(const AnonMapping&) = delete;
  AnonMapping& operator=(const AnonMapping&) = delete;

  char* data() const { return data_; }
  std::size_t size() const { return size_; }
  explicit operator bool() const { return data_ != nullptr; }
  void reset() {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
  }

 private:
  AnonMapping(char* data, std::size_t size) : data_(data), size_(size) {}
  char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace hush::base

#endif  // HUSHTRACE_SRC_BASE_ANON_MAPPING_H_
