// A growable byte buffer flushed to a FILE* in large writes; the exporters' output path.
//
// Writers append through a raw cursor: Ensure(n) guarantees n writable bytes at Cursor(),
// Advance(n) commits them. MaybeFlush() writes out once more than kFlushAt bytes are pending, so
// memory stays bounded by kFlushAt plus the largest single record. Single-threaded.
#ifndef HUSHTRACE_SRC_EXPORT_OUTPUT_BUFFER_H_
#define HUSHTRACE_SRC_EXPORT_OUTPUT_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>

namespace hush::exporter {

class OutputBuffer {
 public:
  static constexpr std::size_t kFlushAt = 1 << 20;

  explicit OutputBuffer(std::FILE* out) : out_(out) { Grow(kFlushAt + std::size_t{64} * 1024); }
  OutputBuffer(const OutputBuffer&) = delete;
  OutputBuffer& operator=(const OutputBuffer&) = delete;

  std::uint8_t* Ensure(std::size_t n) {
    if (capacity_ - size_ < n) [[unlikely]]
      Grow(size_ + n);
    return data_.get() + size_;
  }
  std::uint8_t* Cursor() { return data_.get() + size_; }
  std::uint8_t* At(std::size_t pos) { return data_.get() + pos; }
  void Advance(std::size_t n) { size_ += n; }
  std::size_t size() const { return size_; }
  void Append(const void* p, std::size_t n) {
    std::memcpy(Ensure(n), p, n);
    size_ += n;
  }
  void Append(std::string_view s) { Append(s.data(), s.size()); }
  void Put(char c) { *Ensure(1) = static_cast<std::uint8_t>(c), ++size_; }
  // Inserts `n` bytes at `pos`, moving what follows (for varint lengths that outgrew a
  // reservation).
  void InsertGap(std::size_t pos, std::size_t n) {
    Ensure(n);
    std::memmove(data_.get() + pos + n, data_.get() + pos, size_ - pos);
    size_ += n;
  }

  // Forgets the pending bytes (a buffer used without a FILE, e.g. one HTTP request body).
  void Clear() { size_ = 0; }
  const std::uint8_t* data() const { return data_.get(); }

  // Flushes when more than kFlushAt bytes are pending; false once a write has failed.
  bool MaybeFlush() { return size_ < kFlushAt ? ok_ : Flush(); }
  bool Flush() {
    if (size_ != 0 && ok_) ok_ = std::fwrite(data_.get(), 1, size_, out_) == size_;
    size_ = 0;
    return ok_;
  }

 private:
  void Grow(std::size_t need) {
    std::size_t cap = capacity_ == 0 ? need : capacity_ * 2;
    if (cap < need) cap = need;
    std::unique_ptr<std::uint8_t[]> bigger(new std::uint8_t[cap]);
    if (size_ != 0) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = cap;
  }

  std::FILE* out_;
  std::unique_ptr<std::uint8_t[]> data_;
  std::size_t size_ = 0, capacity_ = 0;
  bool ok_ = true;
};

}  // namespace hush::exporter

#endif  // HUSHTRACE_SRC_EXPORT_OUTPUT_BUFFER_H_
