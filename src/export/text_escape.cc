// UTF-8 validation and JSON string escaping (see text_escape.h).
#include "export/text_escape.h"

#include <cstdint>

namespace hush::exporter {
namespace {

constexpr char kReplacement[] = "\xef\xbf\xbd";  // U+FFFD

bool IsContinuation(unsigned char c) { return (c & 0xc0) == 0x80; }

// Calls plain(begin, end) for runs of bytes that need no change and bad(i) for each invalid byte
// (each becomes one U+FFFD) or control/escaped character.
template <typename Sink>
void ForEachRun(std::string_view s, bool escape_json, Sink&& sink) {
  std::size_t run = 0, i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (escape_json && (c < 0x20 || c == '"' || c == '\\')) {
        sink.Plain(s.substr(run, i - run));
        sink.Escape(c);
        run = ++i;
      } else {
        ++i;
      }
      continue;
    }
    const std::size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      sink.Plain(s.substr(run, i - run));
      sink.Plain(std::string_view(kReplacement, 3));
      // Skip the maximal invalid subpart: the lead byte and the continuation bytes it allowed.
      ++i;
      run = i;
    } else {
      i += n;
    }
  }
  sink.Plain(s.substr(run));
}

}  // namespace

std::size_t Utf8SequenceLength(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0)
      lo = 0xa0;  // overlong
    else if (c == 0xed)
      hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0)
      lo = 0x90;  // overlong
    else if (c == 0xf4)
      hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;  // continuation byte, overlong 0xc0/0xc1, or 0xf5..0xff
  }
  if (i + n > s.size()) return 0;
  const auto c1 = static_cast<unsigned char>(s[i + 1]);
  if (c1 < lo || c1 > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (!IsContinuation(static_cast<unsigned char>(s[i + k]))) return 0;
  }
  return n;
}

bool IsValidUtf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ToValidUtf8(std::string_view s) {
  struct Sink {
    std::string out;
    void Plain(std::string_view p) { out.append(p); }
    void Escape(unsigned char) {}
  } sink;
  sink.out.reserve(s.size() + 8);
  ForEachRun(s, false, sink);
  return std::move(sink.out);
}

template <typename Out>
void JsonEscapeTo(Out& out, std::string_view s) {
  struct Sink {
    Out& out;
    void Plain(std::string_view p) { out.Append(p); }
    void Escape(unsigned char c) {
      static constexpr char kHex[] = "0123456789abcdef";
      switch (c) {
        case '"':
          out.Append("\\\"");
          break;
        case '\\':
          out.Append("\\\\");
          break;
        case '\n':
          out.Append("\\n");
          break;
        case '\t':
          out.Append("\\t");
          break;
        case '\r':
          out.Append("\\r");
          break;
        default: {
          const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
          out.Append(std::string_view(esc, 6));
        }
      }
    }
  } sink{out};
  out.Append("\"");
  ForEachRun(s, true, sink);
  out.Append("\"");
}

void AppendJsonString(OutputBuffer& out, std::string_view s) { JsonEscapeTo(out, s); }

std::string JsonString(std::string_view s) {
  struct StringOut {
    std::string text;
    void Append(std::string_view p) { text.append(p); }
  } out;
  JsonEscapeTo(out, s);
  return std::move(out.text);
}

}  // namespace hush::exporter
