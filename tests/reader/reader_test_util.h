// Helpers of the reader tests: temporary directories, running the CLI, synthetic traces.
#ifndef HUSHTRACE_SRC_READER_READER_TEST_UTIL_H_
#define HUSHTRACE_SRC_READER_READER_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "hushtrace/reader.h"
#include "support/files.h"
#include "support/run.h"

namespace hush::reader::test {

// --- the trace recorded in-process by reader_record_test.cc ---

struct ExpectedField {
  std::string name;
  FieldType type;
  std::string value;  // canonical text: see Canonical() in reader_record_test.cc
};
struct ExpectedEvent {
  std::string name;
  std::uint32_t tid = 0;
  std::vector<ExpectedField> fields;  // visible fields, in order
};
struct RecordedTrace {
  std::string dir;
  std::uint32_t tids[2] = {0, 0};
  std::vector<ExpectedEvent> events;  // in emission order, which is also time order
  std::int64_t wall_ns_before = 0, wall_ns_after = 0;
  std::string error;  // non-empty: recording failed
};
// Records the trace on first use; removed at exit.
const RecordedTrace& Recorded();

// A fresh empty directory under $TMPDIR (or /tmp), removed with RemoveTree().
std::string MakeTempDir(const std::string& tag);
using testsupport::RemoveTree;
void CopyTree(const std::string& from, const std::string& to);
using testsupport::ReadFile;
void WriteFile(const std::string& path, std::string_view content);

struct CommandResult {
  int exit_code = -1;  // -1: did not exit normally
  std::string out, err;
};
CommandResult RunCommand(const std::vector<std::string>& argv);
// ${HUSH_BINARY_DIR}/tools/hushtrace/hushtrace, or "" when HUSH_BINARY_DIR is unset.
std::string HushtraceBinary();
std::vector<std::string> SplitLines(const std::string& text);

template <typename T>
std::string Le(T v) {
  std::string s(sizeof v, '\0');
  std::memcpy(s.data(), &v, sizeof v);
  return s;
}

// A temporary trace directory with the given metadata and stream_0, stream_1... files.
class TempTrace {
 public:
  TempTrace(const std::string& metadata, const std::vector<std::string>& streams);
  ~TempTrace();
  TempTrace(const TempTrace&) = delete;
  TempTrace& operator=(const TempTrace&) = delete;
  const std::string& dir() const { return dir_; }

 private:
  std::string parent_, dir_;
};

inline constexpr char kSynthUuid[] = "00112233-4455-6677-8899-aabbccddeeff";

// Metadata with the writer's exact layout (docs/format.md, section 2) and the given event blocks.
std::string SynthMetadata(const std::string& event_blocks, std::uint64_t freq = 1000000000,
                          std::int64_t offset_s = 1700000000, std::int64_t offset = 0);

// One packet of a stream file.
class PacketBuilder {
 public:
  explicit PacketBuilder(std::uint64_t ts_begin, std::uint32_t vtid = 4242,
                         std::string thread_name = "synth");
  PacketBuilder& Compact(std::uint8_t id, std::uint64_t ts, std::string_view payload = {});
  PacketBuilder& Extended(std::uint32_t id, std::uint64_t ts, std::string_view payload = {});
  PacketBuilder& Raw(std::string_view bytes);
  PacketBuilder& Seq(std::uint64_t seq);
  PacketBuilder& Lost(std::uint64_t discarded_total, std::uint64_t overwritten);
  // content_size = packet_size = header + events unless overridden (bits).
  PacketBuilder& Sizes(std::uint64_t content_bits, std::uint64_t packet_bits);
  std::string Build() const;

 private:
  std::uint64_t ts_begin_, ts_end_;
  std::uint32_t vtid_;
  std::string name_;
  std::uint64_t seq_ = 0, discarded_ = 0, overwritten_ = 0;
  std::uint64_t content_bits_ = 0, packet_bits_ = 0;
  std::string events_;
};

}  // namespace hush::reader::test

#endif  // HUSHTRACE_SRC_READER_READER_TEST_UTIL_H_
