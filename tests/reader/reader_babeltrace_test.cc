// (b) The recorded trace through the babeltrace2 CLI: same events, same order, same values and
// timestamps (within babeltrace's rounding) as the reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "hushtrace/reader.h"
#include "reader/reader_test_util.h"

namespace hush::reader::test {
namespace {

std::string FindBabeltrace() {
  if (::access("/usr/bin/babeltrace2", X_OK) == 0) return "/usr/bin/babeltrace2";
  const char* path = std::getenv("PATH");
  std::string p = path != nullptr ? path : "";
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    const std::string candidate = p.substr(start, end - start) + "/babeltrace2";
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// The escaping of babeltrace2's text.pretty sink (print_escape_string).
std::string BtString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; continue;
      case '\'': out += "\\'"; continue;
      case '"': out += "\\\""; continue;
      case '?': out += "\\?"; continue;
      default: break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
      continue;
    }
    switch (c) {
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\x1b': out += "\\e"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\v': out += "\\v"; break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", u);
        out += buf;
      }
    }
  }
  return out + "\"";
}

// Stands for the value of an empty string field: babeltrace2 2.0.4 sometimes prints a stale value
// (the content of a recycled field) for an empty string, so any string literal is accepted there.
// The reader's value of these fields is checked against what was emitted by RecordedTest.
constexpr char kAnyString = '\x01';

// The payload of an event as babeltrace2 prints it: "a = 1, s = \"x\", ...".
std::string BtPayload(const Event& e) {
  std::string out;
  for (std::size_t i = 0; i < e.field_count(); ++i) {
    const FieldValue v = e.field(i);
    if (!out.empty()) out += ", ";
    out += v.info().name + " = ";
    char buf[64];
    switch (v.type()) {
      case FieldType::kSigned: out += std::to_string(v.AsInt64()); break;
      case FieldType::kUnsigned: out += std::to_string(v.AsUint64()); break;
      case FieldType::kBool:
      case FieldType::kEnum:
        out += "( \"" + std::string(v.info().LabelFor(v.AsInt64())) + "\" : container = " +
               std::to_string(v.AsInt64()) + " )";
        break;
      case FieldType::kFloat:
        std::snprintf(buf, sizeof buf, "%g", v.AsDouble());
        out += buf;
        break;
      case FieldType::kString:
        if (v.AsString().empty()) out += kAnyString;
        else out += BtString(v.AsString());
        break;
      case FieldType::kBytes: {
        out += "[ ";
        std::size_t j = 0;
        for (std::uint8_t b : v.AsBytes()) {
          out += (j != 0 ? ", [" : "[") + std::to_string(j) + "] = " + std::to_string(b);
          ++j;
        }
        out += j != 0 ? " ]" : "]";
        break;
      }
    }
  }
  return out;
}

// Whether babeltrace2's payload matches `want` (a BtPayload()); counts the stale strings seen.
bool PayloadMatches(std::string_view got, std::string_view want, int* stale) {
  std::size_t g = 0;
  for (std::size_t w = 0; w < want.size(); ++w) {
    if (want[w] != kAnyString) {
      if (g >= got.size() || got[g++] != want[w]) return false;
      continue;
    }
    if (g >= got.size() || got[g++] != '"') return false;
    const std::size_t start = g;
    while (g < got.size() && got[g] != '"') g += got[g] == '\\' ? 2 : 1;
    if (g >= got.size()) return false;
    if (g++ != start) ++*stale;
  }
  return g == got.size();
}

struct BtLine {
  std::int64_t ns = 0;
  std::string name;
  std::uint32_t vtid = 0;
  std::string payload;
};

// "[SEC.NSEC] HOST:PROC:(PID) NAME: { CONTEXT }, { PAYLOAD }"
bool ParseBtLine(const std::string& line, BtLine* out) {
  if (line.size() < 24 || line[0] != '[') return false;
  const std::size_t dot = line.find('.'), close = line.find(']');
  if (dot == std::string::npos || close == std::string::npos || close != dot + 10) return false;
  out->ns = std::stoll(line.substr(1, dot - 1)) * 1000000000 + std::stoll(line.substr(dot + 1, 9));
  const std::size_t name_start = line.find(' ', close + 2);
  const std::size_t ctx = line.find(": { ", name_start);
  if (name_start == std::string::npos || ctx == std::string::npos) return false;
  out->name = line.substr(name_start + 1, ctx - name_start - 1);
  const std::size_t vtid = line.find("vtid = ", ctx);
  const std::size_t ctx_end = line.find(" }, { ", ctx);
  if (vtid == std::string::npos || ctx_end == std::string::npos) return false;
  out->vtid = static_cast<std::uint32_t>(std::stoul(line.substr(vtid + 7)));
  std::string payload = line.substr(ctx_end + 6);
  if (payload == "}") payload.clear();  // "{ }"
  else if (payload.size() >= 2 && payload.compare(payload.size() - 2, 2, " }") == 0) payload.resize(payload.size() - 2);
  else return false;
  out->payload = payload;
  return true;
}

TEST(ReaderBabeltrace, SameEventsValuesAndTimestamps) {
  const std::string bt = FindBabeltrace();
  if (bt.empty()) GTEST_SKIP() << "babeltrace2 is not installed";
  const RecordedTrace& r = Recorded();
  ASSERT_EQ(r.error, "");
  const CommandResult res = RunCommand({bt, "--clock-seconds", "--no-delta", r.dir});
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const std::vector<std::string> lines = SplitLines(res.out);

  std::string error;
  auto trace = Trace::Open(r.dir, &error);
  ASSERT_NE(trace, nullptr) << error;
  EventIterator it(*trace);
  std::size_t n = 0;
  int stale = 0;
  while (it.Next()) {
    ASSERT_LT(n, lines.size()) << "babeltrace2 printed fewer events than the reader read";
    BtLine b;
    ASSERT_TRUE(ParseBtLine(lines[n], &b)) << "unparsed babeltrace2 line: " << lines[n].substr(0, 300);
    const Event& e = it.event();
    EXPECT_EQ(b.name, e.name()) << "event #" << n;
    EXPECT_EQ(b.vtid, e.tid()) << "event #" << n;
    // babeltrace2 converts the clock offset and the value to ns separately (in double), each
    // rounded down; the reader computes the exact sum: they may differ by a nanosecond or two,
    // plus the double's own rounding of the value in ns, which matters only for large counter
    // values (qemu-user's CNTVCT_EL0 counts from the epoch: ~1.8e18 ns, a 256 ns ulp).
    const double value_ns = static_cast<double>(e.timestamp()) * 1e9 /
                            static_cast<double>(trace->metadata().clock.freq);
    const double ulp = std::nextafter(value_ns, HUGE_VAL) - value_ns;
    const std::int64_t tolerance = 2 + static_cast<std::int64_t>(2 * ulp);
    const std::int64_t diff = b.ns - trace->ToEpochNs(e.timestamp());
    EXPECT_LE(diff < 0 ? -diff : diff, tolerance) << "event #" << n;
    EXPECT_TRUE(PayloadMatches(b.payload, BtPayload(e), &stale))
        << "event #" << n << " " << e.name() << "\n babeltrace2: " << b.payload.substr(0, 2000)
        << "\n reader:      " << BtPayload(e).substr(0, 2000);
    ++n;
  }
  EXPECT_EQ(it.error(), "");
  EXPECT_EQ(n, lines.size()) << "babeltrace2 printed more events than the reader read";
  EXPECT_EQ(n, r.events.size());
  if (stale != 0) std::printf("note: babeltrace2 printed %d stale values for empty strings\n", stale);
}

}  // namespace
}  // namespace hush::reader::test
