// Tests of the C API (include/hushtrace/hushtrace_c.h, src/capi/capi.cc).
//
//  * CProgram*: runs capi_program (tests/capi/capi_program.c, a C program) with a session from the
//    environment or from hush_c_session_start, and checks every recorded value through the output
//    of the babeltrace2 CLI.
//  * Metadata*: the HTP1 records built by the C macros equal the C++ ones for the same
//    declaration: byte for byte when both are expanded on the same line of this file, and field
//    by field (hush::registry::ParseMetaRecord) against a C translation unit (capi_meta_c.c).
//  * SameEventFromCAndCxx: one session records the same event emitted from C++, from the C
//    macros compiled as C++ and from C; the trace has one event type and identical payloads.
#include <gtest/gtest.h>
#include <hushtrace/hushtrace.h>
#include <hushtrace/hushtrace_c.h>
#include <hushtrace/session.h>
#include <stdlib.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "capi_meta_c.h"
#include "registry/meta_record.h"
#include "registry/registry.h"

namespace {

// ---- helpers ------------------------------------------------------------------------------------

std::string BinaryDir() {
  const char* dir = std::getenv("HUSH_BINARY_DIR");
  return dir != nullptr ? dir : "";
}

std::string ProgramPath() {
  const std::string dir = BinaryDir();
  if (!dir.empty()) {
    const std::string path = dir + "/tests/capi/capi_program";
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return HUSH_CAPI_PROGRAM;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

struct CommandResult {
  int status = -1;     // exit status, or -1
  std::string output;  // stdout and stderr
};

CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  FILE* f = ::popen((command + " 2>&1").c_str(), "r");
  if (f == nullptr) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
  const int st = ::pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// A fresh directory under the test temp dir, removed at the end unless the test failed.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "capi_test.XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    if (!path_.empty() && !::testing::Test::HasFailure()) RunCommand("rm -rf " + ShellQuote(path_));
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// One event as printed by `babeltrace2 DIR`:
//   [time] (+delta) host:proc:(pid) provider:name: { packet context }, { payload }
struct BtEvent {
  std::string name;
  std::string payload;  // inside the last braces, e.g. "x = 1, y = 2" ("" when empty)
};

std::vector<BtEvent> ReadTrace(const std::string& dir, std::string* raw) {
  // Bounded: babeltrace2 can take minutes on a corrupted trace.
  const CommandResult r =
      RunCommand("timeout 120 " + std::string(HUSH_BABELTRACE2) + " " + ShellQuote(dir));
  *raw = r.output;
  std::vector<BtEvent> events;
  if (r.status != 0) return events;
  std::size_t at = 0;
  while (at < r.output.size()) {
    std::size_t eol = r.output.find('\n', at);
    if (eol == std::string::npos) eol = r.output.size();
    const std::string line = r.output.substr(at, eol - at);
    at = eol + 1;
    // The event name follows ") " after the "(pid)" group; it ends with ": {".
    const std::size_t name_end = line.find(": { ");
    const std::size_t name_begin = line.rfind(") ", name_end);
    const std::size_t payload_begin = line.find(" }, { ", name_end);
    if (name_end == std::string::npos || name_begin == std::string::npos ||
        payload_begin == std::string::npos || line.size() < 2 ||
        line.substr(line.size() - 1) != "}") {
      continue;
    }
    BtEvent e;
    e.name = line.substr(name_begin + 2, name_end - name_begin - 2);
    std::string payload = line.substr(payload_begin + 6);  // after " }, { "
    payload.pop_back();                                    // "}"
    while (!payload.empty() && payload.back() == ' ') payload.pop_back();
    e.payload = payload;
    events.push_back(e);
  }
  return events;
}

std::vector<std::string> PayloadsOf(const std::vector<BtEvent>& events, const std::string& name) {
  std::vector<std::string> out;
  for (const BtEvent& e : events) {
    if (e.name == name) out.push_back(e.payload);
  }
  return out;
}

// ---- the C program ------------------------------------------------------------------------------

TEST(CapiTest, CProgramEnvironmentSessionRecordsEveryFieldType) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string trace = tmp.path() + "/trace";
  const CommandResult run =
      RunCommand(std::string("timeout 120 env -u HUSHTRACE_MODE -u HUSHTRACE_BUFFER_SIZE ") +
                 "HUSHTRACE_EVENTS='capi:*' HUSHTRACE_OUTPUT=" + ShellQuote(trace) + " " +
                 ShellQuote(ProgramPath()) + " env");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("capi_program: ok"), std::string::npos) << run.output;

  std::string raw;
  const std::vector<BtEvent> events = ReadTrace(trace, &raw);
  ASSERT_FALSE(events.empty()) << raw;

  EXPECT_EQ(
      PayloadsOf(events, "capi:all_types"),
      (std::vector<std::string>{
          "i8 = -8, i16 = -1600, i32 = -320000, i64 = -6400000000, u8 = 200, u16 = 60000, "
          "u32 = 4000000000, u64 = 18000000000000000000, flag = ( \"true\" : container = 1 ), "
          "f32 = 1.5, f64 = -2.25, text = \"hello\", blob_length = 4, "
          "blob = [ [0] = 1, [1] = 2, [2] = 3, [3] = 255 ]",
          "i8 = -128, i16 = -32768, i32 = -2147483648, i64 = -9223372036854775808, u8 = 255, "
          "u16 = 65535, u32 = 4294967295, u64 = 18446744073709551615, "
          "flag = ( \"false\" : container = 0 ), f32 = 0, f64 = 0, text = \"\", "
          "blob_length = 0, blob = [ ]"}))
      << raw;
  EXPECT_EQ(
      PayloadsOf(events, "capi:mixed"),
      (std::vector<std::string>{
          "first = \"first\", a = 513, b = 70000, data_length = 2, data = [ [0] = 1, [1] = 2 ], "
          "c = ( \"true\" : container = 1 ), last = \"last\"",
          // NULL string -> "(null)"; NULL bytes with a nonzero length -> empty.
          "first = \"(null)\", a = 1, b = 2, data_length = 0, data = [ ], "
          "c = ( \"false\" : container = 0 ), last = \"end\""}));
  EXPECT_EQ(PayloadsOf(events, "capi:fixed"),
            (std::vector<std::string>{"x = -42, y = 1099511627776"}));
  // Truncation exactly as field_traits.h: 1024 bytes with the NUL, the last 14 the marker.
  const std::string truncated = std::string(1024 - 1 - 14, 'x') + "...[truncated]";
  EXPECT_EQ(PayloadsOf(events, "capi:text"),
            (std::vector<std::string>{"seq = 1, s = \"" + truncated + "\"",
                                      "seq = 2, s = \"" + std::string(1023, 'y') + "\"",
                                      "seq = 3, s = \"quote\\\"and\\\\backslash\""}));
  EXPECT_EQ(PayloadsOf(events, "capi:nofields"), (std::vector<std::string>{""}));
  EXPECT_EQ(PayloadsOf(events, "capi:sixteen"),
            (std::vector<std::string>{"f1 = 1, f2 = 2, f3 = 3, f4 = 4, f5 = 5, f6 = 6, f7 = 7, "
                                      "f8 = 8, f9 = 9, f10 = 10, f11 = 11, f12 = 12, f13 = 13, "
                                      "f14 = 14, f15 = \"fifteen\", f16 = 16"}));
  EXPECT_EQ(PayloadsOf(events, "capi:instant"), (std::vector<std::string>{""}));
  EXPECT_EQ(PayloadsOf(events, "capi:counter"),
            (std::vector<std::string>{"value = 42.5", "value = 21"}));
  const std::string begin = "phase = ( \"begin\" : container = 0 )";
  const std::string end = "phase = ( \"end\" : container = 1 )";
  EXPECT_EQ(PayloadsOf(events, "capi:explicit_span"), (std::vector<std::string>{begin, end}));
  EXPECT_EQ(PayloadsOf(events, "capi:scoped_span"), (std::vector<std::string>{begin, end}));
  // Order on the main thread: begin, scoped begin, instant, scoped end, end.
  std::vector<std::string> order;
  for (const BtEvent& e : events) {
    if (e.name == "capi:explicit_span" || e.name == "capi:scoped_span" ||
        e.name == "capi:inside_scope") {
      order.push_back(e.name);
    }
  }
  EXPECT_EQ(order,
            (std::vector<std::string>{"capi:explicit_span", "capi:scoped_span", "capi:inside_scope",
                                      "capi:scoped_span", "capi:explicit_span"}));
  // Two threads x 100 events, each thread's sequence complete and in order.
  std::map<std::string, int> per_worker;
  for (const std::string& p : PayloadsOf(events, "capi:thread")) {
    const std::string worker = p.substr(0, p.find(','));
    const std::string expected = worker + ", i = " + std::to_string(per_worker[worker]);
    EXPECT_EQ(p, expected);
    ++per_worker[worker];
  }
  EXPECT_EQ(per_worker, (std::map<std::string, int>{{"worker = 0", 100}, {"worker = 1", 100}}));
  EXPECT_TRUE(PayloadsOf(events, "off:never").empty());

  // Kinds as the C++ macros declare them (model.emf.uri) in the trace metadata.
  const CommandResult meta = RunCommand("cat " + ShellQuote(trace + "/metadata"));
  for (const auto& [name, kind] :
       std::vector<std::pair<std::string, std::string>>{{"capi:all_types", "event"},
                                                        {"capi:nofields", "event"},
                                                        {"capi:instant", "instant"},
                                                        {"capi:counter", "counter"},
                                                        {"capi:explicit_span", "span"},
                                                        {"capi:scoped_span", "span"}}) {
    const std::size_t at = meta.output.find("name = \"" + name + "\";");
    ASSERT_NE(at, std::string::npos) << name;
    const std::size_t uri = meta.output.find("model.emf.uri = \"", at);
    ASSERT_NE(uri, std::string::npos) << name;
    EXPECT_EQ(meta.output.substr(uri + 17, kind.size() + 1), kind + "\"") << name;
  }
  // The explicit span's begin and end sites are one event.
  std::size_t count = 0;
  for (std::size_t at = 0;
       (at = meta.output.find("name = \"capi:explicit_span\";", at)) != std::string::npos; ++at) {
    ++count;
  }
  EXPECT_EQ(count, 1u);
}

// capi_program MODE TRACE, with no HUSHTRACE_* variable: the program starts the session itself.
void RunProgramSession(const std::string& mode, const std::string& trace) {
  const CommandResult run = RunCommand(
      "timeout 120 env -u HUSHTRACE_EVENTS -u HUSHTRACE_OUTPUT -u HUSHTRACE_MODE "
      "-u HUSHTRACE_BUFFER_SIZE " +
      ShellQuote(ProgramPath()) + " " + mode + " " + ShellQuote(trace));
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("capi_program: ok"), std::string::npos) << run.output;
}

void CheckApiTrace(const std::string& mode) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string trace = tmp.path() + "/trace";
  RunProgramSession(mode, trace);
  if (::testing::Test::HasFatalFailure()) return;
  std::string raw;
  const std::vector<BtEvent> events = ReadTrace(trace, &raw);
  EXPECT_EQ(PayloadsOf(events, "capi:fixed"), (std::vector<std::string>{"x = 1, y = 2"})) << raw;
  EXPECT_EQ(PayloadsOf(events, "capi:text"),
            (std::vector<std::string>{"seq = 10, s = \"from the api session\""}));
  EXPECT_EQ(PayloadsOf(events, "capi:counter"), (std::vector<std::string>{"value = 0.25"}));
  EXPECT_TRUE(PayloadsOf(events, "capi:mixed").empty());
  EXPECT_EQ(events.size(), 3u) << raw;
}

// hush_c_session_start_with(): the filter keeps capi:fixed with x > 1, the field trigger x > 4
// writes one snapshot holding the event that fired it; the bad pattern and the short struct
// were refused (checked inside the program).
TEST(CapiTest, CProgramSessionWithFilterAndTriggers) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string trace = tmp.path() + "/t";
  ASSERT_NO_FATAL_FAILURE(RunProgramSession("triggers", trace));
  std::string raw;
  EXPECT_EQ(PayloadsOf(ReadTrace(trace, &raw), "capi:fixed"),
            (std::vector<std::string>{"x = 3, y = 4", "x = 5, y = 6"})) << raw;
  std::vector<std::string> snapshots;  // complete ones: not .NAME.partial
  if (DIR* d = ::opendir((trace + "/snapshots").c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') snapshots.push_back(trace + "/snapshots/" + e->d_name);
    }
    ::closedir(d);
  }
  ASSERT_EQ(snapshots.size(), 1u);
  const std::vector<BtEvent> in_snapshot = ReadTrace(snapshots[0], &raw);
  const std::vector<std::string> fixed = PayloadsOf(in_snapshot, "capi:fixed");
  ASSERT_FALSE(fixed.empty()) << raw;
  EXPECT_EQ(fixed.back(), "x = 5, y = 6") << raw;
}

// A C program whose flight session cannot start its snapshot thread (an address space limit with
// no room for a stack): the thread's failure, an exception inside the runtime, is caught there;
// the start returns -1 with the reason and leaves no trace directory, and once the limit is
// lifted a session starts and records. Where the runtime carries its own C++ runtime
// (src/CMakeLists.txt, HUSH_PRIVATE_LIBSTDCXX), that exception is thrown and caught by it in a
// process that has no libstdc++.so at all.
TEST(CapiTest, CProgramSessionThatCannotStartItsThreadFailsCleanly) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string trace = tmp.path() + "/t";
  const CommandResult run = RunCommand("timeout 120 env -u HUSHTRACE_EVENTS -u HUSHTRACE_OUTPUT " +
                                       ShellQuote(ProgramPath()) + " limits " + ShellQuote(trace));
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("capi_program: ok"), std::string::npos) << run.output;
#if defined(HUSH_PRIVATE_LIBSTDCXX)
  EXPECT_NE(run.output.find("libstdcxx_loaded 0"), std::string::npos) << run.output;
#endif
  std::string raw;
  EXPECT_EQ(PayloadsOf(ReadTrace(trace, &raw), "capi:fixed"), (std::vector<std::string>{"x = 1, y = 2"})) << raw;
}

TEST(CapiTest, CProgramSessionControlStream) { CheckApiTrace("api"); }
TEST(CapiTest, CProgramSessionControlFlight) { CheckApiTrace("flight"); }

// `hushtrace list` (documented line format "provider:name  kind  (type field, ...)  file:line")
// reads the C sites from the file like the C++ ones.
std::vector<std::string> ListLinesFor(const std::string& output, const std::string& name) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < output.size()) {
    std::size_t eol = output.find('\n', at);
    if (eol == std::string::npos) eol = output.size();
    const std::string line = output.substr(at, eol - at);
    at = eol + 1;
    if (line.compare(0, name.size() + 1, name + " ") == 0) lines.push_back(line);
  }
  return lines;
}

TEST(CapiTest, CliListsCSites) {
#ifndef HUSH_CLI
  GTEST_SKIP() << "the hushtrace CLI is not built (HUSH_BUILD_TOOLS=OFF)";
#else
  const CommandResult list =
      RunCommand(std::string(HUSH_CLI) + " list " + ShellQuote(ProgramPath()));
  ASSERT_EQ(list.status, 0) << list.output;
  const std::vector<std::array<std::string, 3>> expected = {
      {"capi:all_types", "event",
       "(i8 i8, i16 i16, i32 i32, i64 i64, u8 u8, u16 u16, u32 u32, u64 u64, bool flag, f32 f32, "
       "f64 f64, str text, bytes blob)"},
      {"capi:nofields", "event", "()"},
      {"capi:explicit_span", "span", "(phase phase)"},
      {"capi:scoped_span", "span", "(phase phase)"},
      {"capi:instant", "instant", "()"},
      {"capi:counter", "counter", "(f64 value)"},
      {"off:never", "event", "(i32 x, str s)"}};
  for (const auto& [name, kind, signature] : expected) {
    const std::vector<std::string> lines = ListLinesFor(list.output, name);
    ASSERT_EQ(lines.size(), 1u) << name << "\n" << list.output;
    EXPECT_NE(lines[0].find(" " + kind + " "), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find(" " + signature + " "), std::string::npos) << lines[0];
  }
  // In this test binary, cmp:ev has C++ sites, C-macro sites compiled as C++ and C sites: one
  // tracepoint.
  char self[4096] = {};
  ASSERT_GT(::readlink("/proc/self/exe", self, sizeof self - 1), 0);
  const CommandResult self_list = RunCommand(std::string(HUSH_CLI) + " list " + ShellQuote(self));
  ASSERT_EQ(self_list.status, 0) << self_list.output;
  for (const char* name : {"cmp:ev", "cmp:empty", "cmp:sp", "cmp:inst", "cmp:ctr", "cmp:sv"}) {
    EXPECT_EQ(ListLinesFor(self_list.output, name).size(), 1u) << name << "\n" << self_list.output;
  }
#endif
}

}  // namespace

// ---- metadata: the same declaration through both APIs -------------------------------------------

// Each macro below expands the C++ and the C declaration (or sites) on one source line, so both
// get the same __FILE__ and __LINE__ and their records must be byte-identical.
// clang-format off
#define HUSH_CAPI_TEST_BOTH_EV                                                                     \
  HUSH_TRACEPOINT(cmp, ev, (std::int8_t, a), (std::int16_t, b), (std::int32_t, c),                 \
                  (std::int64_t, d), (std::uint8_t, e), (std::uint16_t, f), (std::uint32_t, g),    \
                  (std::uint64_t, h), (bool, i), (float, j), (double, k), (const char*, l),        \
                  (std::span<const std::byte>, m))                                                 \
  HUSH_C_TRACEPOINT(cmp, ev, HUSH_C_I8(a), HUSH_C_I16(b), HUSH_C_I32(c), HUSH_C_I64(d),            \
                    HUSH_C_U8(e), HUSH_C_U16(f), HUSH_C_U32(g), HUSH_C_U64(h), HUSH_C_BOOL(i),     \
                    HUSH_C_F32(j), HUSH_C_F64(k), HUSH_C_STR(l), HUSH_C_BYTES(m))
#define HUSH_CAPI_TEST_BOTH_EMPTY HUSH_TRACEPOINT(cmp, empty) HUSH_C_TRACEPOINT(cmp, empty)
// clang-format on
HUSH_CAPI_TEST_BOTH_EV
HUSH_CAPI_TEST_BOTH_EMPTY
// Only in C++: a string_view field has the same code ("str") as const char*.
HUSH_TRACEPOINT(cmp, sv, (std::string_view, s))
HUSH_C_TRACEPOINT(cmp, sv, HUSH_C_STR(s))

namespace {

constexpr std::int8_t kEvA = -5;
constexpr std::int16_t kEvB = -300;
constexpr std::int32_t kEvC = -70000;
constexpr std::int64_t kEvD = -5000000000;
constexpr std::uint8_t kEvE = 250;
constexpr std::uint16_t kEvF = 65000;
constexpr std::uint32_t kEvG = 3000000000u;
constexpr std::uint64_t kEvH = 10000000000000000000u;
constexpr float kEvJ = 0.5f;
constexpr double kEvK = 1.0 / 3.0;
const std::array<std::byte, 4> kEvBytes = {std::byte{0xde}, std::byte{0xad}, std::byte{0xbe},
                                           std::byte{0xef}};

// The sites of both APIs, one line each (same __LINE__ for the C++ and the C site).
#define HUSH_CAPI_TEST_SPAN_SITES \
  {                               \
    HUSH_SPAN(cmp, sp);           \
    HUSH_C_SPAN_SCOPE(cmp, sp);   \
    HUSH_C_SPAN_BEGIN(cmp, sp);   \
    HUSH_C_SPAN_END(cmp, sp);     \
  }
#define HUSH_CAPI_TEST_INSTANT_SITES \
  HUSH_INSTANT(cmp, inst);           \
  HUSH_C_INSTANT(cmp, inst)
#define HUSH_CAPI_TEST_COUNTER_SITES \
  HUSH_COUNTER(cmp, ctr, 2.5);       \
  HUSH_C_COUNTER(cmp, ctr, 2.5)

// Emits every cmp event once from C++ and once from the C macros (compiled here as C++).
void EmitFromCxx() {
  HUSH_TRACE(cmp, ev, kEvA, kEvB, kEvC, kEvD, kEvE, kEvF, kEvG, kEvH, true, kEvJ, kEvK, "same",
             std::span<const std::byte>(kEvBytes));
  HUSH_C_TRACE(cmp, ev, kEvA, kEvB, kEvC, kEvD, kEvE, kEvF, kEvG, kEvH, true, kEvJ, kEvK, "same",
               kEvBytes.data(), kEvBytes.size());
  HUSH_TRACE(cmp, empty);
  HUSH_C_TRACE(cmp, empty);
  HUSH_TRACE(cmp, sv, std::string_view("view"));
  HUSH_C_TRACE(cmp, sv, "view");
  HUSH_CAPI_TEST_SPAN_SITES
  HUSH_CAPI_TEST_INSTANT_SITES;
  HUSH_CAPI_TEST_COUNTER_SITES;
}

std::string_view RecordBytes(const void* record) {
  const auto* p = static_cast<const unsigned char*>(record);
  return std::string_view(static_cast<const char*>(record), p[4] | (p[5] << 8));
}

hush::registry::MetaRecord Parse(const void* record) {
  hush::registry::MetaRecord m;
  std::string error;
  const std::string_view bytes = RecordBytes(record);
  EXPECT_EQ(hush::registry::ParseMetaRecord(bytes.data(), bytes.size(), &m, &error), bytes.size())
      << error;
  return m;
}

// Everything but the source location.
void ExpectSameDeclaration(const hush::registry::MetaRecord& a,
                           const hush::registry::MetaRecord& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.provider, b.provider);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.Signature(), b.Signature());
  ASSERT_EQ(a.fields.size(), b.fields.size());
  for (std::size_t i = 0; i < a.fields.size(); ++i) {
    EXPECT_EQ(a.fields[i].name, b.fields[i].name);
    EXPECT_EQ(a.fields[i].type, b.fields[i].type);
  }
}

TEST(CapiTest, MetadataSameLineIsByteIdentical) {
  const auto& cxx = hush::internal::kMetaRecord<hush_tp_cmp_ev>;
  static_assert(sizeof(hush_c_meta_cmp_ev) == std::tuple_size_v<std::decay_t<decltype(cxx)>>);
  EXPECT_EQ(RecordBytes(&hush_c_meta_cmp_ev), std::string_view(cxx.data(), cxx.size()));
  const hush::registry::MetaRecord m = Parse(&hush_c_meta_cmp_ev);
  EXPECT_EQ(m.kind, 0);
  EXPECT_EQ(m.FullName(), "cmp:ev");
  EXPECT_EQ(m.file, __FILE__);
  EXPECT_EQ(m.Signature(),
            "i8 a, i16 b, i32 c, i64 d, u8 e, u16 f, u32 g, u64 h, bool i, f32 j, f64 k, str l, "
            "bytes m");

  const auto& cxx_empty = hush::internal::kMetaRecord<hush_tp_cmp_empty>;
  EXPECT_EQ(RecordBytes(&hush_c_meta_cmp_empty),
            std::string_view(cxx_empty.data(), cxx_empty.size()));
}

TEST(CapiTest, MetadataOfCTranslationUnitMatchesCxx) {
  std::size_t size = 0;
  const void* c_ev = capi_c_record_ev(&size);
  EXPECT_EQ(size, RecordBytes(c_ev).size());
  const hush::registry::MetaRecord c = Parse(c_ev);
  const hush::registry::MetaRecord cxx = Parse(hush::internal::kMetaRecord<hush_tp_cmp_ev>.data());
  ExpectSameDeclaration(c, cxx);
  EXPECT_NE(c.file.find("capi_meta_c.c"), std::string::npos) << c.file;
  EXPECT_GT(c.line, 0u);

  const void* c_empty = capi_c_record_empty(&size);
  EXPECT_EQ(size, RecordBytes(c_empty).size());
  ExpectSameDeclaration(Parse(c_empty),
                        Parse(hush::internal::kMetaRecord<hush_tp_cmp_empty>.data()));
  EXPECT_EQ(Parse(c_empty).fields.size(), 0u);
}

// The runtime registry finds the C sites (compiled as C and as C++) through the module's note
// and merges them with the C++ sites of the same event; sites on one line have identical records.
TEST(CapiTest, RegistryMergesCAndCxxSites) {
  hush::registry::Registry registry;
  registry.Scan();
  const std::map<std::string, std::pair<std::uint8_t, std::string>> expected = {
      {"cmp:ev",
       {0,
        "i8 a, i16 b, i32 c, i64 d, u8 e, u16 f, u32 g, u64 h, bool i, f32 j, f64 k, "
        "str l, bytes m"}},
      {"cmp:empty", {0, ""}},
      {"cmp:sv", {0, "str s"}},
      {"cmp:sp", {1, "phase phase"}},
      {"cmp:inst", {2, ""}},
      {"cmp:ctr", {3, "f64 value"}}};
  std::map<std::string, int> events_per_name;
  for (const hush::registry::Event& e : registry.events()) {
    const auto it = expected.find(e.meta.FullName());
    if (it == expected.end()) continue;
    ++events_per_name[e.meta.FullName()];
    EXPECT_EQ(e.meta.kind, it->second.first) << e.meta.FullName();
    EXPECT_EQ(e.meta.Signature(), it->second.second) << e.meta.FullName();
    // Sites: from this file (C++ macros and C macros) and, except cmp:sv, from capi_meta_c.c.
    std::map<std::string, std::vector<std::string_view>> records_by_location;
    bool from_c_file = false;
    for (const hush::internal::Descriptor* d : e.descriptors) {
      const hush::registry::MetaRecord m = Parse(d->meta);
      if (m.file.find("capi_meta_c.c") != std::string::npos) from_c_file = true;
      records_by_location[m.file + ":" + std::to_string(m.line)].push_back(RecordBytes(d->meta));
    }
    EXPECT_EQ(from_c_file, e.meta.FullName() != "cmp:sv") << e.meta.FullName();
    bool shared_line = false;
    for (const auto& [location, records] : records_by_location) {
      if (location.find("capi_test.cc") == std::string::npos) continue;
      if (records.size() >= 2) shared_line = true;
      for (std::string_view r : records) EXPECT_EQ(r, records.front()) << location;
    }
    // cmp:sv's C++ and C declarations are on different lines on purpose.
    if (e.meta.FullName() != "cmp:sv") {
      EXPECT_TRUE(shared_line) << e.meta.FullName() << ": no line with a C++ and a C site";
    }
  }
  for (const auto& [name, unused] : expected) {
    EXPECT_EQ(events_per_name[name], 1) << name << " should be exactly one event";
  }
}

// One session, the same events from C++, from the C macros in C++ and from C: one event type per
// name in the trace, identical payloads.
TEST(CapiTest, SameEventFromCAndCxx) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string trace = tmp.path() + "/trace";
  char error[256] = "unset";
  ASSERT_EQ(hush_c_session_start("cmp:*", trace.c_str(), "stream", 0, error, sizeof error), 0)
      << error;
  EmitFromCxx();
  capi_c_emit_all();
  struct hush_c_session_stats stats;
  ASSERT_EQ(hush_c_session_get_stats(&stats), 0);
  EXPECT_EQ(stats.enabled_events, 6u);
  hush_c_session_stop();

  std::string raw;
  const std::vector<BtEvent> events = ReadTrace(trace, &raw);
  const std::string ev =
      "a = -5, b = -300, c = -70000, d = -5000000000, e = 250, f = 65000, g = 3000000000, "
      "h = 10000000000000000000, i = ( \"true\" : container = 1 ), j = 0.5, k = 0.333333333333333, "
      "l = \"same\", m_length = 4, m = [ [0] = 222, [1] = 173, [2] = 190, [3] = 239 ]";
  const std::vector<std::string> evs = PayloadsOf(events, "cmp:ev");
  ASSERT_EQ(evs.size(), 3u) << raw;
  // babeltrace2 prints doubles with its own precision; all three must at least agree.
  EXPECT_EQ(evs[0], evs[1]);
  EXPECT_EQ(evs[0], evs[2]);
  EXPECT_EQ(evs[0].substr(0, evs[0].find(", k = ")), ev.substr(0, ev.find(", k = ")));
  EXPECT_EQ(evs[0].substr(evs[0].find(", l = ")), ev.substr(ev.find(", l = ")));
  EXPECT_EQ(PayloadsOf(events, "cmp:empty"), (std::vector<std::string>{"", "", ""}));
  EXPECT_EQ(PayloadsOf(events, "cmp:sv"),
            (std::vector<std::string>{"s = \"view\"", "s = \"view\""}));
  const std::string begin = "phase = ( \"begin\" : container = 0 )";
  const std::string end = "phase = ( \"end\" : container = 1 )";
  // C++: HUSH_SPAN (begin; end at scope exit), C: SCOPE (same), BEGIN, END; then C: BEGIN, END.
  EXPECT_EQ(PayloadsOf(events, "cmp:sp"),
            (std::vector<std::string>{begin, begin, begin, end, end, end, begin, end}));
  EXPECT_EQ(PayloadsOf(events, "cmp:inst"), (std::vector<std::string>{"", "", ""}));
  EXPECT_EQ(PayloadsOf(events, "cmp:ctr"),
            (std::vector<std::string>{"value = 2.5", "value = 2.5", "value = 2.5"}));

  // One declaration per event in the trace metadata.
  const CommandResult meta = RunCommand("cat " + ShellQuote(trace + "/metadata"));
  for (const char* name : {"cmp:ev", "cmp:empty", "cmp:sv", "cmp:sp", "cmp:inst", "cmp:ctr"}) {
    std::size_t count = 0;
    const std::string needle = std::string("name = \"") + name + "\";";
    for (std::size_t at = 0; (at = meta.output.find(needle, at)) != std::string::npos; ++at)
      ++count;
    EXPECT_EQ(count, 1u) << name;
  }
}

// Without a session the emitters return at once, whatever the pieces (NULL string, NULL bytes
// with a length, an id needing the extended header).
TEST(CapiTest, EmitWithoutSessionIsHarmless) {
  const hush_c_piece pieces[] = {{nullptr, 0, HUSH_C_PIECE_STR},
                                 {nullptr, 12, HUSH_C_PIECE_BYTES},
                                 {"abc", 3, HUSH_C_PIECE_RAW}};
  hush_c_emitv(0, pieces, 3);
  hush_c_emit(0, nullptr, 0);
  hush_c_emit(300, "xyz", 3);
  EXPECT_EQ(hush_c_session_snapshot(), -1);
}

}  // namespace
