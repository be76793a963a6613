// How each C++ field type of a tracepoint is checked, sized and encoded.
//
// FieldTraits<T> is selected by the type declared in HUSH_TRACEPOINT. It gives:
//   kCode               the type code stored in the metadata record (docs/format.md, table)
//   kFixedSize          encoded size when it does not depend on the value, else 0
//   Accepts<A>          whether an argument of type A may be passed for this field
//   Size(a), Write(p,a) encoded size of a value and its encoder (returns the end pointer)
// Encoders write unaligned little-endian bytes with memcpy (one mov each on x86-64).
#ifndef HUSHTRACE_INTERNAL_FIELD_TRAITS_H_
#define HUSHTRACE_INTERNAL_FIELD_TRAITS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace hush {

// Strings are recorded up to this many bytes, terminating NUL included.
inline constexpr std::size_t kMaxStringBytes = 1024;
// A string cut at kMaxStringBytes ends with this marker (docs/format.md).
inline constexpr std::string_view kTruncationMarker = "...[truncated]";
// Byte sequences are recorded up to this many bytes.
inline constexpr std::size_t kMaxBytesLength = 64 * 1024;

namespace internal {

template <typename T>
inline constexpr bool kDependentFalse = false;

template <typename T>
constexpr std::string_view IntegerCode() {
  constexpr bool s = std::is_signed_v<T>;
  switch (sizeof(T)) {
    case 1: return s ? "i8" : "u8";
    case 2: return s ? "i16" : "u16";
    case 4: return s ? "i32" : "u32";
    default: return s ? "i64" : "u64";
  }
}

template <typename T>
inline char* WriteRaw(char* p, const T& value) {
  std::memcpy(p, &value, sizeof(T));
  return p + sizeof(T);
}

template <typename T, typename = void>
struct FieldTraits {
  static_assert(kDependentFalse<T>,
                "hushtrace: unsupported field type in HUSH_TRACEPOINT. Use a fixed-width integer, bool, "
                "float, double, an enum, const char*, std::string_view or "
                "std::span<const std::byte>.");
};

template <typename T>
struct FieldTraits<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static constexpr std::string_view kCode = IntegerCode<T>();
  static constexpr std::size_t kFixedSize = sizeof(T);
  template <typename A>
  static constexpr bool Accepts =
      (std::is_integral_v<A> && !std::is_same_v<A, bool>) || std::is_enum_v<A>;
  template <typename A>
  static constexpr std::size_t Size(const A&) { return sizeof(T); }
  template <typename A>
  static char* Write(char* p, const A& a) { return WriteRaw(p, static_cast<T>(a)); }
};

template <typename T>
struct FieldTraits<T, std::enable_if_t<std::is_enum_v<T>>> {
  using Underlying = std::underlying_type_t<T>;
  static constexpr std::string_view kCode = IntegerCode<Underlying>();
  static constexpr std::size_t kFixedSize = sizeof(Underlying);
  template <typename A>
  static constexpr bool Accepts = std::is_same_v<A, T> || (std::is_integral_v<A> && !std::is_same_v<A, bool>);
  template <typename A>
  static constexpr std::size_t Size(const A&) { return sizeof(Underlying); }
  template <typename A>
  static char* Write(char* p, const A& a) { return WriteRaw(p, static_cast<Underlying>(a)); }
};

template <>
struct FieldTraits<bool> {
  static constexpr std::string_view kCode = "bool";
  static constexpr std::size_t kFixedSize = 1;
  template <typename A>
  static constexpr bool Accepts = std::is_same_v<A, bool>;
  static constexpr std::size_t Size(bool) { return 1; }
  static char* Write(char* p, bool a) {
    *p = a ? 1 : 0;
    return p + 1;
  }
};

template <typename T>
struct FieldTraits<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "hushtrace: long double fields are not supported");
  static constexpr std::string_view kCode = sizeof(T) == 4 ? "f32" : "f64";
  static constexpr std::size_t kFixedSize = sizeof(T);
  template <typename A>
  static constexpr bool Accepts = std::is_arithmetic_v<A> && !std::is_same_v<A, bool>;
  template <typename A>
  static constexpr std::size_t Size(const A&) { return sizeof(T); }
  template <typename A>
  static char* Write(char* p, const A& a) { return WriteRaw(p, static_cast<T>(a)); }
};

// Strings: const char*, std::string_view and std::string fields all record a NUL-terminated copy.
struct StringField {
  static constexpr std::string_view kCode = "str";
  static constexpr std::size_t kFixedSize = 0;
  template <typename A>
  static constexpr bool Accepts =
      std::is_convertible_v<const A&, std::string_view> || std::is_same_v<std::decay_t<A>, char*> ||
      std::is_same_v<std::decay_t<A>, const char*>;

  static std::string_view View(std::string_view s) { return s.substr(0, s.find('\0')); }
  static std::string_view View(const char* s) { return s != nullptr ? std::string_view(s) : "(null)"; }

  template <typename A>
  static std::size_t Size(const A& a) {
    const std::size_t n = View(a).size();
    return n < kMaxStringBytes ? n + 1 : kMaxStringBytes;
  }
  template <typename A>
  static char* Write(char* p, const A& a) {
    const std::string_view s = View(a);
    if (s.size() < kMaxStringBytes) [[likely]] {
      if (!s.empty()) std::memcpy(p, s.data(), s.size());  // data() may be null when empty
      p[s.size()] = '\0';
      return p + s.size() + 1;
    }
    return WriteCut(p, s);
  }

  // Cut visibly: the recorded text ends with the marker, then the NUL. Out of line: rare, and
  // kept out of the sites that inline Write.
  [[gnu::cold, gnu::noinline]] static char* WriteCut(char* p, std::string_view s) {
    constexpr std::size_t kKept = kMaxStringBytes - 1 - kTruncationMarker.size();
    std::memcpy(p, s.data(), kKept);
    std::memcpy(p + kKept, kTruncationMarker.data(), kTruncationMarker.size());
    p[kMaxStringBytes - 1] = '\0';
    return p + kMaxStringBytes;
  }
};
template <>
struct FieldTraits<const char*> : StringField {};
template <>
struct FieldTraits<std::string_view> : StringField {};
template <>
struct FieldTraits<std::string> : StringField {};

template <>
struct FieldTraits<std::span<const std::byte>> {
  static constexpr std::string_view kCode = "bytes";
  static constexpr std::size_t kFixedSize = 0;
  template <typename A>
  static constexpr bool Accepts = std::is_convertible_v<const A&, std::span<const std::byte>>;
  static std::size_t Length(std::span<const std::byte> b) {
    return b.size() < kMaxBytesLength ? b.size() : kMaxBytesLength;
  }
  static std::size_t Size(std::span<const std::byte> b) { return 4 + Length(b); }
  static char* Write(char* p, std::span<const std::byte> b) {
    const auto n = static_cast<std::uint32_t>(Length(b));
    p = WriteRaw(p, n);
    if (n != 0) std::memcpy(p, b.data(), n);
    return p + n;
  }
};

// The begin/end marker of a span (HUSH_SPAN): one byte, 0 = begin, 1 = end.
struct SpanPhase {
  std::uint8_t value;
};
template <>
struct FieldTraits<SpanPhase> {
  static constexpr std::string_view kCode = "phase";
  static constexpr std::size_t kFixedSize = 1;
  template <typename A>
  static constexpr bool Accepts = std::is_same_v<A, SpanPhase>;
  static constexpr std::size_t Size(SpanPhase) { return 1; }
  static char* Write(char* p, SpanPhase a) {
    *p = static_cast<char>(a.value);
    return p + 1;
  }
};

}  // namespace internal
}  // namespace hush

#endif  // HUSHTRACE_INTERNAL_FIELD_TRAITS_H_
