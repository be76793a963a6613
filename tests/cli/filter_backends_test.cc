// Issue 15, one filter language with two back ends: the same texts, run by the runtime back end
// (src/filter/program.h) on payload bytes and by the read-side back end (tools/hushtrace/
// filter_expr.h, `dump --filter`) on reader::Event decoded from the same bytes, give the same
// answers.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "filter/filter.h"
#include "filter/program.h"
#include "filter_expr.h"
#include "hushtrace/reader.h"
#include "reader/reader_test_util.h"

namespace hush::cli {
namespace {

using reader::test::Le;

// One event kind with a field of every class; the names and type codes the runtime binds to,
// and the TSDL the writer declares them with (format/ctf_metadata.cc, FieldDeclaration).
const std::vector<std::string> kNames = {"fd", "bytes", "name", "ratio", "ok", "phase", "small", "f"};
const std::vector<std::string> kTypes = {"i32", "u64", "str", "f64", "bool", "phase", "i8", "f32"};
constexpr char kEventBlock[] =
    "event { name = \"net:io\"; id = 1; stream_id = 0; model.emf.uri = \"event\";\n"
    "  fields := struct {\n"
    "\t\tint32_t fd;\n"
    "\t\tuint64_t bytes;\n"
    "\t\tstring { encoding = UTF8; } name;\n"
    "\t\tfloating_point { exp_dig = 11; mant_dig = 53; align = 8; } ratio;\n"
    "\t\tenum : uint8_t { \"false\" = 0, \"true\" = 1 } ok;\n"
    "\t\tenum : uint8_t { begin = 0, end = 1 } phase;\n"
    "\t\tint8_t small;\n"
    "\t\tfloating_point { exp_dig = 8; mant_dig = 24; align = 8; } f;\n"
    "  }; };\n";

struct Row {
  std::int32_t fd;
  std::uint64_t bytes;
  std::string name;
  double ratio;
  bool ok;
  std::uint8_t phase;
  std::int8_t small;
  float f;
};

std::string Payload(const Row& r) {
  return Le(r.fd) + Le(r.bytes) + r.name + std::string(1, '\0') + Le(r.ratio) +
         Le(static_cast<std::uint8_t>(r.ok)) + Le(r.phase) + Le(r.small) + Le(r.f);
}

const std::vector<Row> kRows = {
    {3, 1500, "peer-1", 0.25, true, 0, -5, 1.5f},
    {4, 0, "", 0, false, 1, 0, 0},
    {-1, 18446744073709551615ull, "peer-10", -2.5, true, 1, 127, -0.1f},
    {1000000, 9007199254740993ull, "x[y]", 1e300, false, 0, -128, 3e38f},
    {7, 4096, "peer-7", 0.5, true, 2, 1, 0.5f},
};

const char* const kFilters[] = {
    // The runtime's grammar: numbers, fields, field to field, truthiness, precedence.
    "bytes > 1000 && fd != 3",
    "fd == 3 || bytes >= 1500 && ok",
    "!(fd == 3) && (bytes == 1500 || fd < -1)",
    "bytes && fd",
    "!ok || small",
    "fd < bytes",
    "bytes > fd && small < fd",
    "1 < fd",
    "(fd < 5) == ok",
    "0 == (fd > 5) || !(small >= 0)",
    "true && !false",
    "bytes == 18446744073709551615",
    "bytes == 9007199254740993",
    "bytes == 9007199254740992",
    "ratio < 0.5 && ratio > -3",
    "ratio == 1e300 || f == 0.5",
    "f < 0 || f > 1e38",
    "small == -128 || small == 127",
    // The dump grammar: hex, strings, globs, labels, $name.
    "bytes == 0x5dc || bytes > 0xffffffff",
    "fd >= -0x1",
    "name == \"peer-1\"",
    "name != \"\" && name < \"peer-2\"",
    "name == peer",
    "name ~ \"peer-*\"",
    "name ~ \"peer-?\"",
    "name ~ \"x\\\\[y]\"",
    "name ~ \"[!p]*\"",
    "phase == begin",
    "phase == end || phase == \"\"",
    "phase ~ \"e*\"",
    "phase == 1",
    "ok == true && ok == \"true\"",
    "ok == false",
    "ok ~ \"t*\"",
    "$name == \"net:io\" && fd > 3",
    "$name ~ \"net:*\"",
    "$name == \"net:other\" || name > \"p\"",
    "\"peer-7\" == name",
    "+1.5e+3 == bytes",
};

class FilterBackendsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reader::test::PacketBuilder p(0, 4242, "main");
    std::uint64_t ts = 1;
    for (const Row& r : kRows) p.Compact(1, ts++, Payload(r));
    trace_dir_ = std::make_unique<reader::test::TempTrace>(
        reader::test::SynthMetadata(kEventBlock), std::vector<std::string>{p.Build()});
    std::string error;
    trace_ = reader::Trace::Open(trace_dir_->dir(), &error);
    ASSERT_NE(trace_, nullptr) << error;
  }

  // The reader's answers, one per row, in order.
  std::vector<bool> ReaderAnswers(FilterExpr* expr) {
    std::vector<bool> out;
    reader::EventIterator it(*trace_);
    while (it.Next()) out.push_back(expr->Matches(it.event()));
    EXPECT_EQ(it.error(), "");
    return out;
  }

  std::unique_ptr<reader::test::TempTrace> trace_dir_;
  std::unique_ptr<reader::Trace> trace_;
};

TEST_F(FilterBackendsTest, RuntimeAndReaderAgree) {
  std::size_t matched = 0, refused = 0;
  for (const char* text : kFilters) {
    filter::Error error;
    std::unique_ptr<filter::Parsed> parsed = filter::Parse(text, &error);
    ASSERT_NE(parsed, nullptr) << text << ": " << error.Message();
    auto program = filter::Program::Bind(*parsed, "net:io", kNames, kTypes, &error);
    ASSERT_NE(program, nullptr) << text << ": " << error.Message();
    FilterExpr expr(std::move(parsed));
    const std::vector<bool> reader_answers = ReaderAnswers(&expr);
    ASSERT_EQ(reader_answers.size(), kRows.size());
    for (std::size_t i = 0; i < kRows.size(); ++i) {
      const std::string payload = Payload(kRows[i]);
      const bool runtime = program->Matches(payload.data(), payload.size());
      EXPECT_EQ(runtime, reader_answers[i]) << "'" << text << "' on row " << i;
      (runtime ? matched : refused) += 1;
    }
  }
  // Neither side agrees by answering always the same.
  EXPECT_GT(matched, kRows.size() * 5);
  EXPECT_GT(refused, kRows.size() * 5);
}

// A few answers pinned, so that agreeing is also being right.
TEST_F(FilterBackendsTest, KnownAnswers) {
  const std::pair<const char*, std::vector<bool>> known[] = {
      {"bytes == 9007199254740993", {false, false, false, true, false}},  // not 2^53 as a double
      {"name ~ \"peer-?\"", {true, false, false, false, true}},
      {"phase == end || phase == \"\"", {false, true, true, false, true}},
      {"fd < bytes", {true, false, true, true, true}},
      {"(fd < 5) == ok", {true, false, true, true, false}},
  };
  for (const auto& [text, want] : known) {
    filter::Error error;
    auto expr = FilterExpr::Parse(text, &error);
    ASSERT_NE(expr, nullptr) << error.Message();
    EXPECT_EQ(ReaderAnswers(expr.get()), want) << text;
  }
}

// What only the reader can answer, and what the runtime refuses instead of answering.
TEST_F(FilterBackendsTest, ReaderOnlyConstructs) {
  for (const auto& [text, want] : std::vector<std::pair<std::string, std::vector<bool>>>{
           {"$tid == 4242 && $thread == main && fd == 3", {true, false, false, false, false}},
           {"nosuch == 1", {false, false, false, false, false}},
           {"!(nosuch == 1) && fd == 4", {false, true, false, false, false}},
           {"name > 3 || nosuch", {false, false, false, false, false}},
       }) {
    filter::Error error;
    auto parsed = filter::Parse(text, &error);
    ASSERT_NE(parsed, nullptr) << error.Message();
    EXPECT_EQ(filter::Program::Bind(*parsed, "net:io", kNames, kTypes, &error), nullptr) << text;
    EXPECT_EQ(error.Message().rfind("column ", 0), 0u) << error.Message();
    FilterExpr expr(std::move(parsed));
    EXPECT_EQ(ReaderAnswers(&expr), want) << text;
  }
}

}  // namespace
}  // namespace hush::cli
