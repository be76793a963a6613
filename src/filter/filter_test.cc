// Unit tests of the field-filter parser and evaluator (filter.h).
#include "filter/filter.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hush::filter {
namespace {

std::string ParseError(const std::string& text) {
  std::string error;
  EXPECT_EQ(Parse(text, &error), nullptr) << text;
  return error;
}

TEST(FilterParseTest, ErrorsPointAtTheColumn) {
  EXPECT_EQ(ParseError("bytes > && fd != 3"), "column 9: expected a number, a field name or '(' instead of '&'");
  EXPECT_EQ(ParseError("bytes >"), "column 8: expected a number, a field name or '(' at the end");
  EXPECT_EQ(ParseError("(fd == 1"), "column 9: expected ')'");
  EXPECT_EQ(ParseError("fd == 1 bytes"), "column 9: unexpected 'b'");
  EXPECT_EQ(ParseError("fd == 1.2.3"), "column 7: malformed number '1.2.3'");
  EXPECT_EQ(ParseError("   "), "column 4: expected a number, a field name or '(' at the end");
  EXPECT_EQ(ParseError("fd = 3"), "column 4: unexpected '='");
}

TEST(FilterParseTest, CaretUnderTheColumn) {
  EXPECT_EQ(Caret("bytes > && fd", 9), "  bytes > && fd\n          ^");
}

// The issue-17 inputs: 20,000 parentheses and 60,000 '!' used to overflow the parsing thread's
// stack. Each limit is accepted exactly at its value and refused one past it, with the column.
TEST(FilterParseTest, NestingIsBoundedAtTheLimit) {
  std::string error;
  const auto nested = [](std::size_t n) {
    return std::string(n, '(') + "seq" + std::string(n, ')');
  };
  EXPECT_NE(Parse(nested(kMaxNesting), &error), nullptr) << error;
  EXPECT_EQ(ParseError(nested(kMaxNesting + 1)),
            "column 65: expression nested too deeply (at most 64 levels of '(' and '!')");
  EXPECT_NE(Parse(std::string(kMaxNesting, '!') + "seq", &error), nullptr) << error;
  EXPECT_EQ(ParseError(std::string(kMaxNesting + 1, '!') + "seq"),
            "column 65: expression nested too deeply (at most 64 levels of '(' and '!')");
  EXPECT_EQ(ParseError(nested(2000)).rfind("column 65: expression nested too deeply", 0), 0u);
  EXPECT_EQ(ParseError(nested(20000)), "column 4097: filter longer than 4096 bytes");
  EXPECT_EQ(ParseError(std::string(4000, '!') + "seq")
                .rfind("column 65: expression nested too deeply", 0),
            0u);
  // Levels are counted on the way down only: siblings do not add up.
  std::string siblings = nested(kMaxNesting);
  for (int i = 0; i < 20; ++i) siblings += " && " + nested(kMaxNesting);
  EXPECT_NE(Parse(siblings, &error), nullptr) << error;
}

TEST(FilterParseTest, SizeIsBoundedAtTheLimit) {
  std::string error;
  std::string at_limit = "seq";
  while (at_limit.size() + 9 <= kMaxFilterBytes) at_limit += " || seq<1";
  at_limit += std::string(kMaxFilterBytes - at_limit.size(), ' ');
  ASSERT_EQ(at_limit.size(), kMaxFilterBytes);
  EXPECT_NE(Parse(at_limit, &error), nullptr) << error;
  EXPECT_EQ(ParseError(at_limit + " "), "column 4097: filter longer than 4096 bytes");
  EXPECT_EQ(ParseError(std::string(60000, '!')), "column 4097: filter longer than 4096 bytes");
}

TEST(FilterParseTest, CaretOfALongFilterIsAWindow) {
  const std::string text = std::string(100, 'a') + "#" + std::string(100, 'b');
  const std::string caret = Caret(text, 101);
  const std::size_t newline = caret.find('\n');
  ASSERT_NE(newline, std::string::npos);
  EXPECT_LT(newline, 90u);
  // The caret sits under the '#'.
  EXPECT_EQ(caret[caret.size() - 1], '^');
  EXPECT_EQ(caret[caret.size() - 1 - (newline + 1)], '#');
}

// Payload of (i32 fd, u64 bytes, str name, f64 ratio, bool ok).
std::string Payload(std::int32_t fd, std::uint64_t bytes, const char* name, double ratio, bool ok) {
  std::string p(reinterpret_cast<const char*>(&fd), 4);
  p.append(reinterpret_cast<const char*>(&bytes), 8);
  p.append(name, std::strlen(name) + 1);
  p.append(reinterpret_cast<const char*>(&ratio), 8);
  p.push_back(ok ? 1 : 0);
  return p;
}

const std::vector<std::string> kNames = {"fd", "bytes", "name", "ratio", "ok"};
const std::vector<std::string> kTypes = {"i32", "u64", "str", "f64", "bool"};

bool Eval(const std::string& expr, const std::string& payload) {
  std::string error;
  auto parsed = Parse(expr, &error);
  EXPECT_NE(parsed, nullptr) << error;
  if (!parsed) return false;
  auto program = Program::Bind(*parsed, kNames, kTypes, &error);
  EXPECT_NE(program, nullptr) << error;
  return program && program->Matches(payload.data(), payload.size());
}

TEST(FilterEvalTest, ComparesFieldsAfterVariableSizeOnes) {
  const std::string p = Payload(4, 1500, "peer", 0.25, true);
  EXPECT_TRUE(Eval("bytes > 1000 && fd != 3", p));
  EXPECT_FALSE(Eval("bytes > 1000 && fd != 4", p));
  EXPECT_TRUE(Eval("ratio < 0.5 && ok", p));  // after the string
  EXPECT_FALSE(Eval("!ok", p));
  EXPECT_TRUE(Eval("fd == 3 || bytes >= 1500", p));
  EXPECT_TRUE(Eval("!(fd == 3) && (bytes == 1500 || fd < -1)", p));
  EXPECT_TRUE(Eval("fd > -5", p));
  EXPECT_TRUE(Eval("fd <= 4 && fd >= 4 && true && !false", p));
}

TEST(FilterEvalTest, PrecedenceAndBindsTighterThanOr) {
  const std::string p = Payload(1, 0, "", 0, false);
  EXPECT_TRUE(Eval("fd == 1 || fd == 2 && bytes == 9", p));
  EXPECT_FALSE(Eval("(fd == 1 || fd == 2) && bytes == 9", p));
}

TEST(FilterEvalTest, ExactFor64BitIntegers) {
  const std::string p = Payload(0, 18446744073709551615ull, "x", 0, false);
  EXPECT_TRUE(Eval("bytes == 18446744073709551615", p));
  EXPECT_FALSE(Eval("bytes == 18446744073709551614", p));
  EXPECT_TRUE(Eval("bytes > 18446744073709551614", p));
}

TEST(FilterEvalTest, TruncatedPayloadDoesNotMatch) {
  const std::string p = Payload(4, 1500, "peer", 0.25, true);
  std::string error;
  auto parsed = Parse("ok", &error);
  auto program = Program::Bind(*parsed, kNames, kTypes, &error);
  ASSERT_NE(program, nullptr);
  EXPECT_TRUE(program->Matches(p.data(), p.size()));
  EXPECT_FALSE(program->Matches(p.data(), p.size() - 1));
  EXPECT_FALSE(program->Matches(p.data(), 6));  // the string's NUL is missing
}

TEST(FilterBindTest, RefusesUnknownAndNonNumericFields) {
  std::string error;
  auto parsed = Parse("size > 3", &error);
  ASSERT_NE(parsed, nullptr);
  EXPECT_EQ(Program::Bind(*parsed, kNames, kTypes, &error), nullptr);
  EXPECT_EQ(error, "no field 'size'");
  parsed = Parse("name == 3", &error);
  EXPECT_EQ(Program::Bind(*parsed, kNames, kTypes, &error), nullptr);
  EXPECT_EQ(error, "field 'name' is not a number (filters compare numeric fields)");
}

}  // namespace
}  // namespace hush::filter
