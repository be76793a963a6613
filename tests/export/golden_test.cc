// The golden trace: a test program records a fixed set of events (all field types, spans,
// instants, counters, two threads one after the other), then
//   * `hushtrace dump` of it, with times and tids normalized, must equal golden/dump.txt
//     (HUSH_UPDATE_GOLDEN=1 rewrites the file instead);
//   * babeltrace2 must print as many events as `hushtrace dump`, with the same names, times
//     (within babeltrace2's 2 ns rounding, docs/reader.md) and field values.
#include <gtest/gtest.h>
#include <hushtrace/hushtrace.h>
#include <hushtrace/session.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "reader/reader_test_util.h"

enum class Shade : std::int16_t { kDark = -2, kLight = 7 };

HUSH_TRACEPOINT(gold, ints, (std::uint32_t, seq), (std::int8_t, i8), (std::int16_t, i16),
                (std::int32_t, i32), (std::int64_t, i64), (std::uint8_t, u8), (std::uint16_t, u16),
                (std::uint32_t, u32), (std::uint64_t, u64))
HUSH_TRACEPOINT(gold, misc, (bool, flag), (Shade, shade), (float, f32), (double, f64))
HUSH_TRACEPOINT(gold, text, (const char*, s), (std::string_view, v))
HUSH_TRACEPOINT(gold, blob, (std::span<const std::byte>, data))

namespace hush::reader::test {
namespace {

struct Golden {
  std::string parent, dir, error;
};

void EmitFixedEvents(std::uint32_t base) {
  HUSH_TRACE(gold, ints, base, std::int8_t{-128}, std::int16_t{32767},
             std::int32_t{-2147483647 - 1}, std::int64_t{INT64_MIN}, std::uint8_t{255},
             std::uint16_t{65535}, std::uint32_t{4294967295u}, std::uint64_t{UINT64_MAX});
  HUSH_TRACE(gold, ints, base + 1, std::int8_t{0}, std::int16_t{-1}, std::int32_t{123456},
             std::int64_t{-42}, std::uint8_t{0}, std::uint16_t{1}, std::uint32_t{0},
             std::uint64_t{1} << 40);
}

const Golden& GoldenRecording() {
  static const Golden* g = [] {
    auto* r = new Golden;
    r->parent = MakeTempDir("golden");
    r->dir = r->parent + "/trace";
    SessionOptions options;
    options.events = {"gold:*"};
    options.output_dir = r->dir;
    auto session = Session::Start(options, &r->error);
    if (!session) return r;
    EmitFixedEvents(0);
    HUSH_TRACE(gold, misc, true, Shade::kLight, 1.5f, -0.1234567890123);
    HUSH_TRACE(gold, misc, false, Shade::kDark, -0.0f, 1e300);
    HUSH_TRACE(gold, text, "plain words", std::string_view("view"));
    HUSH_TRACE(gold, text, "tab\tquote\"back\\ caf\xc3\xa9 \x01", std::string_view(""));
    const std::byte bytes[] = {std::byte{0}, std::byte{1}, std::byte{0xfe}, std::byte{0xff}};
    HUSH_TRACE(gold, blob, std::span<const std::byte>(bytes));
    HUSH_TRACE(gold, blob, std::span<const std::byte>());
    {
      HUSH_SPAN(gold, outer);
      HUSH_COUNTER(gold, level, 2.5);
      {
        HUSH_SPAN(gold, inner);
        HUSH_INSTANT(gold, tick);
      }
      HUSH_COUNTER(gold, level, -1);
    }
    std::thread([] {
      EmitFixedEvents(100);
      HUSH_INSTANT(gold, tick);
    }).join();
    HUSH_INSTANT(gold, tick);
    session->Stop();
    return r;
  }();
  return *g;
}

// "[  0.000123456] tid 1234 rest" -> "[T] tid <n> rest", n numbering tids by first appearance.
std::string Normalize(const std::string& dump) {
  std::map<std::string, int> tids;
  std::string out;
  for (const std::string& line : SplitLines(dump)) {
    const std::size_t close = line.find("] tid ");
    const std::size_t space = line.find(' ', close + 6);
    if (line.empty() || line[0] != '[' || close == std::string::npos ||
        space == std::string::npos) {
      out += "MALFORMED: " + line + "\n";
      continue;
    }
    const std::string tid = line.substr(close + 6, space - close - 6);
    const int n = tids.emplace(tid, static_cast<int>(tids.size()) + 1).first->second;
    out += "[T] tid <" + std::to_string(n) + ">" + line.substr(space) + "\n";
  }
  return out;
}

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path != nullptr ? path : "/usr/bin";
  for (std::size_t start = 0; start <= p.size();) {
    std::size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    const std::string candidate = p.substr(start, end - start) + "/" + name;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// Splits "a = 1, s = \"x, y\", e = ( \"l\" : container = 0 ), q = [ [0] = 1 ]" at top level.
std::map<std::string, std::string> BtFields(const std::string& payload) {
  std::map<std::string, std::string> f;
  std::size_t i = 0;
  while (i < payload.size()) {
    const std::size_t eq = payload.find(" = ", i);
    if (eq == std::string::npos) break;
    const std::string name = payload.substr(i, eq - i);
    std::size_t j = eq + 3;
    const std::size_t start = j;
    int depth = 0;
    bool quoted = false;
    for (; j < payload.size(); ++j) {
      const char c = payload[j];
      if (quoted) {
        if (c == '\\')
          ++j;
        else if (c == '"')
          quoted = false;
      } else if (c == '"') {
        quoted = true;
      } else if (c == '(' || c == '[') {
        ++depth;
      } else if (c == ')' || c == ']') {
        --depth;
      } else if (c == ',' && depth == 0) {
        break;
      }
    }
    std::string value = payload.substr(start, j - start);
    if (value.rfind("( \"", 0) == 0) value = value.substr(3, value.find('"', 3) - 3);  // enum label
    f[name] = value;
    i = j + 2;
  }
  return f;
}

// Splits "a=1 s=\"x y\" b=<00ff>" (a dump line's fields).
std::map<std::string, std::string> DumpFields(const std::string& fields) {
  std::map<std::string, std::string> f;
  std::size_t i = 0;
  while (i < fields.size()) {
    const std::size_t eq = fields.find('=', i);
    if (eq == std::string::npos) break;
    std::size_t j = eq + 1;
    if (j < fields.size() && fields[j] == '"') {
      for (++j; j < fields.size() && fields[j] != '"'; ++j) {
        if (fields[j] == '\\') ++j;
      }
      ++j;
    } else {
      j = fields.find(' ', j);
      if (j == std::string::npos) j = fields.size();
    }
    f[fields.substr(i, eq - i)] = fields.substr(eq + 1, j - eq - 1);
    i = j + 1;
  }
  return f;
}

class GoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = HushtraceBinary();
    if (bin_.empty()) GTEST_SKIP() << "HUSH_BINARY_DIR is not set (run through ctest)";
    ASSERT_EQ(GoldenRecording().error, "");
  }
  std::string bin_;
};

TEST_F(GoldenTest, DumpMatchesGoldenFile) {
  const CommandResult res = RunCommand({bin_, "dump", GoldenRecording().dir});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_EQ(res.err, "");
  const std::string got = Normalize(res.out);
  const std::string path =
      std::string(std::getenv("HUSH_SOURCE_DIR")) + "/tests/export/golden/dump.txt";
  if (const char* update = std::getenv("HUSH_UPDATE_GOLDEN");
      update != nullptr && std::string(update) == "1") {
    WriteFile(path, got);
    GTEST_SKIP() << "rewrote " << path;
  }
  EXPECT_EQ(got, ReadFile(path)) << "(HUSH_UPDATE_GOLDEN=1 rewrites " << path
                                 << " after a deliberate change)";
}

TEST_F(GoldenTest, BabeltraceAgreesWithDump) {
  const std::string bt = FindOnPath("babeltrace2");
  ASSERT_FALSE(bt.empty()) << "babeltrace2 is not installed (scripts/setup.sh installs it)";
  const CommandResult dump = RunCommand({bin_, "dump", "--absolute", GoldenRecording().dir});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  const CommandResult ref = RunCommand({bt, "--clock-seconds", GoldenRecording().dir});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const std::vector<std::string> d = SplitLines(dump.out), b = SplitLines(ref.out);
  ASSERT_EQ(d.size(), b.size()) << dump.out << "\n---\n" << ref.out;
  ASSERT_GE(d.size(), 15u);
  int compared = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    // dump: "[SEC.NSEC] tid T NAME fields"; babeltrace2: "[SEC.NSEC] (+delta) HOST:PROC:(PID) NAME:
    // { ctx }, { payload }"
    const auto ns = [](const std::string& l) {
      return std::stoll(l.substr(1, l.find('.') - 1)) * 1000000000 +
             std::stoll(l.substr(l.find('.') + 1, 9));
    };
    EXPECT_LE(std::llabs(ns(d[i]) - ns(b[i])), 2) << d[i] << "\n" << b[i];
    const std::size_t name_at = d[i].find(' ', d[i].find("] tid ") + 6) + 1;
    const std::size_t name_end = d[i].find(' ', name_at);
    const std::string name = d[i].substr(
        name_at, name_end == std::string::npos ? std::string::npos : name_end - name_at);
    ASSERT_NE(b[i].find(" " + name + ": { "), std::string::npos) << d[i] << "\n" << b[i];
    const std::size_t vtid = b[i].find("vtid = ");
    ASSERT_NE(vtid, std::string::npos);
    EXPECT_EQ(d[i].substr(d[i].find("] tid ") + 6, name_at - 1 - (d[i].find("] tid ") + 6)),
              b[i].substr(vtid + 7, b[i].find(',', vtid) - vtid - 7));
    const std::size_t payload_at = b[i].find(" }, { ");
    ASSERT_NE(payload_at, std::string::npos) << b[i];
    std::string payload = b[i].substr(payload_at + 6);
    payload = payload == "}" ? "" : payload.substr(0, payload.size() - 2);
    const auto bf = BtFields(payload);
    const auto df = DumpFields(name_end == std::string::npos ? "" : d[i].substr(name_end + 1));
    for (const auto& [field, value] : df) {
      ASSERT_EQ(bf.count(field), 1u) << field << " missing in: " << b[i];
      const std::string& other = bf.at(field);
      if (value.front() == '<') {  // bytes: babeltrace2 prints "[ [0] = 0, [1] = 1, ... ]"
        std::string hex = "<";
        for (std::size_t at = other.find("] = "); at != std::string::npos;
             at = other.find("] = ", at + 1)) {
          char buf[4];
          std::snprintf(buf, sizeof buf, "%02x", std::stoi(other.substr(at + 4)));
          hex += buf;
        }
        EXPECT_EQ(value, hex + ">") << d[i] << "\n" << b[i];
      } else if (value.front() == '"') {
        if (value.find('\\') == std::string::npos) {
          EXPECT_EQ(value, other) << field;
        }
      } else if (std::isalpha(static_cast<unsigned char>(value.front())) ||
                 value.find_first_not_of("-0123456789") == std::string::npos) {  // labels, integers
        EXPECT_EQ(value, other) << field << "\n" << d[i] << "\n" << b[i];
      } else {  // floating point: babeltrace2 prints 6 significant digits ("%g")
        ASSERT_NO_THROW((void)std::stod(value)) << value;
        ASSERT_NO_THROW((void)std::stod(other)) << other << "\n" << b[i];
        const double x = std::stod(value), y = std::stod(other);
        EXPECT_NEAR(x, y, std::fabs(x) * 1e-5) << field << "\n" << d[i] << "\n" << b[i];
      }
      ++compared;
    }
    EXPECT_EQ(bf.size(), df.size() + (name == "gold:blob" ? 1u : 0u))
        << b[i];  // + the hidden length
  }
  EXPECT_GE(compared, 40);
}

}  // namespace
}  // namespace hush::reader::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  hush::reader::test::RemoveTree(hush::reader::test::GoldenRecording().parent);
  return rc;
}
