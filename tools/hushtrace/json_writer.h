// A small streaming JSON writer for the machine-readable output of the subcommands
// (`report`/`hist --format json`; schemas in docs/cli.md). Commas and nesting are tracked, so
// callers only say what comes next:
//
//   JsonWriter j;
//   j.BeginObject();
//   j.Key("events").Uint(12);
//   j.Key("rows").BeginArray();
//   j.BeginObject().Key("name").String("fib(int)").EndObject();
//   j.EndArray();
//   j.EndObject();
//   std::fputs(j.text().c_str(), stdout);
//
// Strings are escaped as JSON and made valid UTF-8 (exporter::JsonString); doubles that are not
// finite are written as null. Not validating: a key outside an object is the caller's bug.
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_JSON_WRITER_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_JSON_WRITER_H_

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "export/text_escape.h"

namespace hush::cli {

class JsonWriter {
 public:
  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  JsonWriter& Key(std::string_view key) {
    Separate();
    text_ += exporter::JsonString(key);
    text_ += ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& String(std::string_view s) {
    Separate();
    text_ += exporter::JsonString(s);
    return *this;
  }
  JsonWriter& Int(std::int64_t v) { return Number(v); }
  JsonWriter& Uint(std::uint64_t v) { return Number(v); }
  JsonWriter& Double(double v) {
    if (!std::isfinite(v)) return Null();
    return Number(v);
  }
  JsonWriter& Bool(bool v) {
    Separate();
    text_ += v ? "true" : "false";
    return *this;
  }
  JsonWriter& Null() {
    Separate();
    text_ += "null";
    return *this;
  }
  // The document, with a final newline once the outermost value is closed.
  const std::string& text() const { return text_; }

 private:
  template <typename T>
  JsonWriter& Number(T v) {
    Separate();
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip for doubles
    text_.append(buf, r.ptr);
    return *this;
  }
  JsonWriter& Open(char c) {
    Separate();
    text_ += c;
    first_ = true;
    ++depth_;
    return *this;
  }
  JsonWriter& Close(char c) {
    text_ += c;
    first_ = false;
    if (--depth_ == 0) text_ += '\n';
    return *this;
  }
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_ && depth_ > 0) text_ += ',';
    first_ = false;
  }

  std::string text_;
  int depth_ = 0;
  bool first_ = true, after_key_ = false;
};

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_JSON_WRITER_H_
