#include "reader/tsdl_lexer.h"

#include <cstdio>

namespace hush::reader::internal {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string LocateError(std::string_view text, const std::string& file, std::size_t offset,
                        const std::string& message) {
  if (offset > text.size()) offset = text.size();
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return file + ": line " + std::to_string(line) + ", column " + std::to_string(column) +
         " (byte " + std::to_string(offset) + "): " + message;
}

bool Tokenize(std::string_view text, const std::string& file, std::vector<Token>* out,
              std::string* error) {
  auto fail = [&](std::size_t at, const std::string& message) {
    *error = LocateError(text, file, at, message);
    return false;
  };
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      const std::size_t end = text.find("*/", i + 2);
      if (end == std::string_view::npos) return fail(i, "unterminated comment");
      i = end + 2;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    Token t;
    t.offset = i;
    if (IsIdentStart(c)) {
      t.kind = TokenKind::kIdent;
      while (i < n && IsIdentChar(text[i])) ++i;
      t.text.assign(text.substr(t.offset, i - t.offset));
    } else if (IsDigit(c)) {
      t.kind = TokenKind::kNumber;
      std::uint64_t v = 0;
      const bool hex = c == '0' && i + 1 < n && (text[i + 1] == 'x' || text[i + 1] == 'X');
      if (hex) {
        i += 2;
        if (i >= n || HexValue(text[i]) < 0) return fail(t.offset, "bad hexadecimal number");
        while (i < n && HexValue(text[i]) >= 0) {
          if (v >> 60) return fail(t.offset, "number out of range");
          v = v * 16 + static_cast<std::uint64_t>(HexValue(text[i++]));
        }
      } else {
        while (i < n && IsDigit(text[i])) {
          const std::uint64_t d = static_cast<std::uint64_t>(text[i++] - '0');
          if (v > (UINT64_MAX - d) / 10) return fail(t.offset, "number out of range");
          v = v * 10 + d;
        }
      }
      // Integer suffixes (u, l) are allowed by TSDL.
      while (i < n && (text[i] == 'u' || text[i] == 'U' || text[i] == 'l' || text[i] == 'L')) ++i;
      if (i < n && IsIdentChar(text[i])) return fail(i, "bad character in number");
      t.number = v;
    } else if (c == '"') {
      t.kind = TokenKind::kString;
      ++i;
      for (;;) {
        if (i >= n || text[i] == '\n') return fail(t.offset, "unterminated string literal");
        const char s = text[i++];
        if (s == '"') break;
        if (s != '\\') {
          t.text += s;
          continue;
        }
        if (i >= n) return fail(t.offset, "unterminated string literal");
        const char e = text[i++];
        switch (e) {
          case 'n': t.text += '\n'; break;
          case 't': t.text += '\t'; break;
          case 'r': t.text += '\r'; break;
          case '0': t.text += '\0'; break;
          case 'x': {
            const int hi = i < n ? HexValue(text[i]) : -1;
            const int lo = i + 1 < n ? HexValue(text[i + 1]) : -1;
            if (hi < 0 || lo < 0) return fail(i - 2, "bad \\x escape in string literal");
            t.text += static_cast<char>(hi * 16 + lo);
            i += 2;
            break;
          }
          default: t.text += e; break;  // \" \\ \' and anything else: the character itself
        }
      }
    } else {
      t.kind = TokenKind::kPunct;
      static constexpr std::string_view kMulti[] = {":=", "..."};
      static constexpr std::string_view kSingle = "{};=:[]<>,.()-+*";
      for (std::string_view m : kMulti) {
        if (text.substr(i, m.size()) == m) {
          t.text.assign(m);
          break;
        }
      }
      if (t.text.empty()) {
        if (kSingle.find(c) == std::string_view::npos) {
          char buf[48];
          std::snprintf(buf, sizeof buf, "unexpected character 0x%02x",
                        static_cast<unsigned>(static_cast<unsigned char>(c)));
          return fail(i, buf);
        }
        t.text.assign(1, c);
      }
      i += t.text.size();
    }
    out->push_back(std::move(t));
  }
  Token end;
  end.offset = n;
  out->push_back(std::move(end));
  return true;
}

}  // namespace hush::reader::internal
