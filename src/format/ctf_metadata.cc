#include "format/ctf_metadata.h"

#include <string_view>

#include "format/trace_uuid.h"

namespace hush::format {
namespace {

// Hex digits by hand rather than with snprintf: a traced program's session start would fault in
// three or four pages of libc's printf code for them (docs/benchmarks.md, "Per exec under a
// session"), pages a short program often touches for nothing else.
constexpr char kHexDigits[] = "0123456789abcdef";

void AppendHexByte(std::string& out, unsigned char c) {
  out += kHexDigits[c >> 4];
  out += kHexDigits[c & 0xf];
}

// TSDL string literals: escape quotes, backslashes and control characters.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      AppendHexByte(out, c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// TSDL identifiers: field names come from C++ identifiers, but be defensive.
std::string Identifier(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out = "_" + out;
  return out;
}

std::string FieldDeclaration(const registry::FieldInfo& f) {
  const std::string name = Identifier(f.name);
  const std::string& t = f.type;
  if (t == "str") return "\t\tstring { encoding = UTF8; } " + name + ";\n";
  if (t == "bytes") {
    return "\t\tuint32_t _" + name + "_length;\n\t\tuint8_t " + name + "[_" + name + "_length];\n";
  }
  if (t == "bool") return "\t\tenum : uint8_t { \"false\" = 0, \"true\" = 1 } " + name + ";\n";
  if (t == "phase") return "\t\tenum : uint8_t { begin = 0, end = 1 } " + name + ";\n";
  if (t == "f32") return "\t\tfloating_point { exp_dig = 8; mant_dig = 24; align = 8; } " + name + ";\n";
  if (t == "f64") return "\t\tfloating_point { exp_dig = 11; mant_dig = 53; align = 8; } " + name + ";\n";
  // Integers: i8..i64, u8..u64.
  const char* prefix = t[0] == 'i' ? "int" : "uint";
  return "\t\t" + std::string(prefix) + t.substr(1) + "_t " + name + ";\n";
}

}  // namespace

std::string UuidToString(const std::uint8_t u[16]) {
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';  // 8-4-4-4-12 digits
    AppendHexByte(out, u[i]);
  }
  return out;
}

// The start of the clock block, up to its UUID: written by BuildMetadata, found by
// ClockUuidOfMetadata.
constexpr char kClockBlockPrefix[] = "clock {\n\tname = \"hush_clock\";\n\tuuid = \"";
constexpr char kMetadataSignature[] = "/* CTF 1.8 */";

std::string BuildMetadata(const TraceInfo& info, const std::vector<const registry::Event*>& events) {
  std::string m;
  BuildMetadata(info, events, &m);
  return m;
}

void BuildMetadata(const TraceInfo& info, const std::vector<const registry::Event*>& events, std::string* out) {
  const std::string uuid = UuidToString(info.uuid);
  std::string& m = *out;
  m.clear();
  if (m.capacity() < kMetadataReserve) m.reserve(kMetadataReserve);
  m += kMetadataSignature;
  m += "\n\n";
  for (int bits : {8, 16, 32, 64}) {
    const std::string b = std::to_string(bits);
    m += "typealias integer { size = " + b + "; align = 8; signed = false; } := uint" + b + "_t;\n";
    m += "typealias integer { size = " + b + "; align = 8; signed = true; } := int" + b + "_t;\n";
  }
  m += kTraceBlockPrefix + uuid + "\";\n\tbyte_order = le;\n";  // trace_uuid.h
  m += "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
       "\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t};\n};\n\n";
  m += "env {\n\tdomain = \"ust\";\n\ttracer_name = \"hushtrace\";\n\ttracer_major = 0;\n"
       "\ttracer_minor = 1;\n";
  m += "\tvpid = " + std::to_string(info.pid) + ";\n";
  m += "\tprocname = " + Quote(info.procname) + ";\n";
  m += "\thostname = " + Quote(info.hostname) + ";\n";
  m += "\thushtrace_mode = " + Quote(info.mode) + ";\n";
  m += "\thushtrace_clock_source = " + Quote(info.clock.use_tsc ? clock::CounterName() : "monotonic") + ";\n";
  m += "\thushtrace_clock_freq_source = " + Quote(info.clock.freq_source) + ";\n";
  if (info.buffer_size != 0) m += "\thushtrace_buffer_size = " + std::to_string(info.buffer_size) + ";\n";
  if (info.events_lost_on_write != 0) {
    m += "\thushtrace_events_lost_on_write = " + std::to_string(info.events_lost_on_write) + ";\n";
  }
  if (info.events_without_buffer != 0) {
    m +=
        "\thushtrace_events_without_buffer = " + std::to_string(info.events_without_buffer) + ";\n";
  }
  for (const auto& [key, value] : info.env_strings) m += "\t" + key + " = " + Quote(value) + ";\n";
  for (const auto& [key, value] : info.env_numbers) m += "\t" + key + " = " + std::to_string(value) + ";\n";
  m += "};\n\n";
  bool own_clock = true;
  for (std::uint8_t b : info.clock_uuid) own_clock = own_clock && b == 0;
  m += std::string(kClockBlockPrefix) +
       (own_clock ? uuid : UuidToString(info.clock_uuid)) + "\";\n";
  m += "\tdescription = " +
       Quote(info.clock.use_tsc ? clock::CounterDescription() : "CLOCK_MONOTONIC") + ";\n";
  m += "\tfreq = " + std::to_string(info.clock.freq_hz) + ";\n";
  m += "\tprecision = " + std::to_string(info.clock.use_tsc ? 100 : 1) + ";\n";
  m += "\toffset_s = " + std::to_string(info.clock.offset_s) + ";\n";
  m += "\toffset = " + std::to_string(info.clock.offset_cycles) + ";\n";
  m += "\tabsolute = FALSE;\n};\n\n";
  m += "typealias integer { size = 24; align = 8; signed = false; map = clock.hush_clock.value; } "
       ":= uint24_clock_t;\n";
  m += "typealias integer { size = 64; align = 8; signed = false; map = clock.hush_clock.value; } "
       ":= uint64_clock_t;\n\n";
  m += "stream {\n\tid = 0;\n\tevent.header := struct {\n"
       "\t\tenum : uint8_t { compact = 0 ... 254, extended = 255 } id;\n"
       "\t\tvariant <id> {\n\t\t\tstruct { uint24_clock_t timestamp; } compact;\n"
       "\t\t\tstruct { uint32_t id; uint64_clock_t timestamp; } extended;\n\t\t} v;\n\t};\n";
  m += "\tpacket.context := struct {\n\t\tuint64_clock_t timestamp_begin;\n"
       "\t\tuint64_clock_t timestamp_end;\n\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n"
       "\t\tuint64_t packet_seq_num;\n\t\tuint64_t events_discarded;\n"
       "\t\tuint64_t events_overwritten;\n\t\tuint32_t vpid;\n\t\tuint32_t vtid;\n"
       "\t\tinteger { size = 8; align = 8; signed = false; encoding = UTF8; } thread_name[16];\n"
       "\t};\n};\n\n";
  for (const registry::Event* e : events) {
    m += "event {\n\tname = " + Quote(e->meta.FullName()) + ";\n";
    m += "\tid = " + std::to_string(e->id) + ";\n\tstream_id = 0;\n\tloglevel = 13;\n";
    m += "\tmodel.emf.uri = " + Quote(registry::KindName(e->meta.kind)) + ";\n";
    m += "\tfields := struct {\n";
    for (const registry::FieldInfo& f : e->meta.fields) m += FieldDeclaration(f);
    m += "\t};\n};\n\n";
  }
}

std::string ClockUuidOfMetadata(const std::string& text) {
  if (text.rfind(kMetadataSignature, 0) != 0) return "";
  const std::size_t at = text.find(kClockBlockPrefix);
  const std::size_t from = at + sizeof kClockBlockPrefix - 1;
  if (at == std::string::npos || from + 36 > text.size()) return "";
  std::uint8_t check[16];
  const std::string uuid = text.substr(from, 36);
  return UuidFromString(uuid, check) ? uuid : "";
}

bool UuidFromString(const std::string& text, std::uint8_t out[16]) {
  if (text.size() != 36) return false;
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
    return -1;
  };
  std::size_t k = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i++] != '-') return false;
      continue;
    }
    const int hi = hex(text[i]), lo = hex(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[k++] = static_cast<std::uint8_t>(hi << 4 | lo);
    i += 2;
  }
  return k == 16;
}

}  // namespace hush::format
