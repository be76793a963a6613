#include "reader/reader_test_util.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "emulated_exec.h"

extern char** environ;

namespace hush::reader::test {

std::string MakeTempDir(const std::string& tag) {
  const std::string dir = testsupport::MakeTempDir("reader_" + tag);
  if (dir.empty()) throw std::runtime_error("cannot make a temporary directory for " + tag);
  return dir;
}

void CopyTree(const std::string& from, const std::string& to) {
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive |
                                      std::filesystem::copy_options::overwrite_existing);
}

void WriteFile(const std::string& path, std::string_view content) {
  if (!testsupport::WriteFile(path, content)) throw std::runtime_error("cannot write " + path);
}

CommandResult RunCommand(const std::vector<std::string>& argv) {
  const testsupport::RunResult r = testsupport::Run(argv);
  return CommandResult{r.exited ? r.exit_code : -1, r.out, r.err};
}

std::string HushtraceBinary() {
  const char* b = std::getenv("HUSH_BINARY_DIR");
  return b != nullptr ? std::string(b) + "/tools/hushtrace/hushtrace" : std::string();
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

TempTrace::TempTrace(const std::string& metadata, const std::vector<std::string>& streams)
    : parent_(MakeTempDir("synth")), dir_(parent_ + "/trace") {
  std::filesystem::create_directory(dir_);
  if (!metadata.empty()) WriteFile(dir_ + "/metadata", metadata);
  for (std::size_t i = 0; i < streams.size(); ++i) WriteFile(dir_ + "/stream_" + std::to_string(i), streams[i]);
}

TempTrace::~TempTrace() { RemoveTree(parent_); }

std::string SynthMetadata(const std::string& event_blocks, std::uint64_t freq, std::int64_t offset_s,
                          std::int64_t offset) {
  std::string m = "/* CTF 1.8 */\n";
  for (int bits : {8, 16, 32, 64}) {
    const std::string b = std::to_string(bits);
    m += "typealias integer { size = " + b + "; align = 8; signed = false; } := uint" + b + "_t;\n";
    m += "typealias integer { size = " + b + "; align = 8; signed = true; } := int" + b + "_t;\n";
  }
  m += "trace {\n major = 1; minor = 8;\n uuid = \"" + std::string(kSynthUuid) +
       "\";\n byte_order = le;\n packet.header := struct {\n  uint32_t magic;\n  uint8_t uuid[16];\n"
       "  uint32_t stream_id;\n  uint64_t stream_instance_id;\n };\n};\n";
  m += "env {\n domain = \"ust\";\n tracer_name = \"hushtrace\";\n vpid = 777;\n procname = \"synth\";\n"
       " hostname = \"testhost\";\n hushtrace_mode = \"stream\";\n hushtrace_clock_source = \"monotonic\";\n};\n";
  m += "clock {\n name = \"hush_clock\";\n uuid = \"" + std::string(kSynthUuid) + "\";\n freq = " +
       std::to_string(freq) + ";\n precision = 1;\n offset_s = " + std::to_string(offset_s) +
       ";\n offset = " + std::to_string(offset) + ";\n absolute = FALSE;\n};\n";
  m += "typealias integer { size = 24; align = 8; signed = false; map = clock.hush_clock.value; } := uint24_clock_t;\n"
       "typealias integer { size = 64; align = 8; signed = false; map = clock.hush_clock.value; } := uint64_clock_t;\n";
  m += "stream {\n id = 0;\n event.header := struct {\n"
       "  enum : uint8_t { compact = 0 ... 254, extended = 255 } id;\n"
       "  variant <id> {\n   struct { uint24_clock_t timestamp; } compact;\n"
       "   struct { uint32_t id; uint64_clock_t timestamp; } extended;\n  } v;\n };\n"
       " packet.context := struct {\n  uint64_clock_t timestamp_begin;\n  uint64_clock_t timestamp_end;\n"
       "  uint64_t content_size;\n  uint64_t packet_size;\n  uint64_t packet_seq_num;\n"
       "  uint64_t events_discarded;\n  uint64_t events_overwritten;\n  uint32_t vpid;\n  uint32_t vtid;\n"
       "  integer { size = 8; align = 8; signed = false; encoding = UTF8; } thread_name[16];\n };\n};\n";
  return m + event_blocks;
}

PacketBuilder::PacketBuilder(std::uint64_t ts_begin, std::uint32_t vtid, std::string thread_name)
    : ts_begin_(ts_begin), ts_end_(ts_begin), vtid_(vtid), name_(std::move(thread_name)) {}

PacketBuilder& PacketBuilder::Compact(std::uint8_t id, std::uint64_t ts, std::string_view payload) {
  const std::uint32_t word = static_cast<std::uint32_t>(ts << 8) | id;
  events_ += Le(word);
  events_.append(payload);
  ts_end_ = std::max(ts_end_, ts);
  return *this;
}

PacketBuilder& PacketBuilder::Extended(std::uint32_t id, std::uint64_t ts, std::string_view payload) {
  events_ += '\xff';
  events_ += Le(id);
  events_ += Le(ts);
  events_.append(payload);
  ts_end_ = std::max(ts_end_, ts);
  return *this;
}

PacketBuilder& PacketBuilder::Raw(std::string_view bytes) {
  events_.append(bytes);
  return *this;
}
PacketBuilder& PacketBuilder::Seq(std::uint64_t seq) {
  seq_ = seq;
  return *this;
}
PacketBuilder& PacketBuilder::Lost(std::uint64_t discarded_total, std::uint64_t overwritten) {
  discarded_ = discarded_total;
  overwritten_ = overwritten;
  return *this;
}
PacketBuilder& PacketBuilder::Sizes(std::uint64_t content_bits, std::uint64_t packet_bits) {
  content_bits_ = content_bits;
  packet_bits_ = packet_bits;
  return *this;
}

std::string PacketBuilder::Build() const {
  const std::uint64_t total_bits = (112 + events_.size()) * 8;
  std::string p;
  p += Le(std::uint32_t{0xC1FC1FC1});
  const std::uint8_t uuid[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
  p.append(reinterpret_cast<const char*>(uuid), 16);
  p += Le(std::uint32_t{0});
  p += Le(std::uint64_t{0});
  p += Le(ts_begin_);
  p += Le(ts_end_);
  p += Le(content_bits_ != 0 ? content_bits_ : total_bits);
  p += Le(packet_bits_ != 0 ? packet_bits_ : total_bits);
  p += Le(seq_);
  p += Le(discarded_);
  p += Le(overwritten_);
  p += Le(std::uint32_t{777});
  p += Le(vtid_);
  std::string name = name_.substr(0, 16);
  name.resize(16, '\0');
  p += name;
  return p + events_;
}

}  // namespace hush::reader::test
