// A minimal protobuf wire-format encoder writing into an OutputBuffer (no libprotobuf).
//
//   wire types: 0 varint (int32/64, uint32/64, bool, enum), 1 fixed64 (double), 2 length-delimited
//   (string, bytes, nested message). A tag is the varint (field << 3 | wire type).
//
// Nested messages are written in place: BeginNested() writes the tag and reserves two bytes for the
// length; EndNested() stores the length there as a two-byte varint (a non-minimal encoding when the
// length is below 128, e.g. 5 -> 0x85 0x00, which every protobuf parser accepts), or, for 16 KiB
// and more, moves the body to make room for a longer varint. No copy for the common case.
#ifndef HUSHTRACE_SRC_EXPORT_PROTO_ENCODER_H_
#define HUSHTRACE_SRC_EXPORT_PROTO_ENCODER_H_

#include <cstdint>
#include <cstring>
#include <string_view>

#include "export/output_buffer.h"

namespace hush::exporter::proto {

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

inline std::uint8_t* PutVarint(std::uint8_t* p, std::uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<std::uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<std::uint8_t>(v);
  return p;
}

inline std::size_t VarintSize(std::uint64_t v) {
  std::size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

class Encoder {
 public:
  explicit Encoder(OutputBuffer& out) : out_(out) {}

  void Varint(std::uint32_t field, std::uint64_t v) {
    std::uint8_t* p = out_.Ensure(20);
    p = PutVarint(p, field << 3 | kVarint);
    out_.Advance(static_cast<std::size_t>(PutVarint(p, v) - out_.Cursor()));
  }
  void Int(std::uint32_t field, std::int64_t v) { Varint(field, static_cast<std::uint64_t>(v)); }
  void Double(std::uint32_t field, double v) {
    std::uint8_t* p = out_.Ensure(16);
    p = PutVarint(p, field << 3 | kFixed64);
    std::memcpy(p, &v, 8);  // little-endian host (x86-64, AArch64 LE)
    out_.Advance(static_cast<std::size_t>(p + 8 - out_.Cursor()));
  }
  void Bytes(std::uint32_t field, const void* data, std::size_t n) {
    std::uint8_t* p = out_.Ensure(n + 20);
    p = PutVarint(p, field << 3 | kLengthDelimited);
    p = PutVarint(p, n);
    std::memcpy(p, data, n);
    out_.Advance(static_cast<std::size_t>(p + n - out_.Cursor()));
  }
  void String(std::uint32_t field, std::string_view s) { Bytes(field, s.data(), s.size()); }

  // Returns the position of the reserved length; pass it to EndNested().
  std::size_t BeginNested(std::uint32_t field) {
    std::uint8_t* p = out_.Ensure(16);
    p = PutVarint(p, field << 3 | kLengthDelimited);
    out_.Advance(static_cast<std::size_t>(p - out_.Cursor()) + 2);
    return out_.size() - 2;
  }
  void EndNested(std::size_t len_pos) {
    std::size_t len = out_.size() - len_pos - 2;
    if (len >= (1u << 14)) [[unlikely]] {
      const std::size_t need = VarintSize(len);
      out_.InsertGap(len_pos + 2, need - 2);
      PutVarint(out_.At(len_pos), len);
      return;
    }
    std::uint8_t* p = out_.At(len_pos);
    p[0] = static_cast<std::uint8_t>(len | 0x80);
    p[1] = static_cast<std::uint8_t>(len >> 7);
  }

 private:
  OutputBuffer& out_;
};

}  // namespace hush::exporter::proto

#endif  // HUSHTRACE_SRC_EXPORT_PROTO_ENCODER_H_
