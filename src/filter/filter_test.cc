// Unit tests of the filter language's parser (filter.h), binder (bind.h) and runtime back end
// (program.h).
#include "filter/filter.h"

#include <fnmatch.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "filter/bind.h"
#include "filter/program.h"

namespace hush::filter {
namespace {

std::string ParseError(const std::string& text) {
  Error error;
  EXPECT_EQ(Parse(text, &error), nullptr) << text;
  return error.Message();
}

std::string Expected(const std::string& where) {
  return "expected a number, a string, a field name, $name, $tid, $thread or '(' " + where;
}

TEST(FilterParseTest, ErrorsPointAtTheColumn) {
  EXPECT_EQ(ParseError("bytes > && fd != 3"), "column 9: " + Expected("instead of '&'"));
  EXPECT_EQ(ParseError("bytes >"), "column 8: " + Expected("at the end"));
  EXPECT_EQ(ParseError("(fd == 1"), "column 9: expected ')'");
  EXPECT_EQ(ParseError("fd == 1 bytes"), "column 9: unexpected 'b'");
  EXPECT_EQ(ParseError("fd == 1.2.3"), "column 7: malformed number '1.2.3'");
  EXPECT_EQ(ParseError("   "), "column 4: " + Expected("at the end"));
  EXPECT_EQ(ParseError("fd = 3"), "column 4: unexpected '='");
}

TEST(FilterParseTest, CaretUnderTheColumn) {
  EXPECT_EQ(Caret("bytes > && fd", 9), "  bytes > && fd\n          ^");
}

// The issue-17 inputs: 20,000 parentheses and 60,000 '!' used to overflow the parsing thread's
// stack. Each limit is accepted exactly at its value and refused one past it, with the column.
TEST(FilterParseTest, NestingIsBoundedAtTheLimit) {
  Error error;
  const auto nested = [](std::size_t n) {
    return std::string(n, '(') + "seq" + std::string(n, ')');
  };
  EXPECT_NE(Parse(nested(kMaxNesting), &error), nullptr) << error.Message();
  EXPECT_EQ(ParseError(nested(kMaxNesting + 1)),
            "column 65: expression nested too deeply (at most 64 levels of '(' and '!')");
  EXPECT_NE(Parse(std::string(kMaxNesting, '!') + "seq", &error), nullptr) << error.Message();
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
  EXPECT_NE(Parse(siblings, &error), nullptr) << error.Message();
}

TEST(FilterParseTest, SizeIsBoundedAtTheLimit) {
  Error error;
  std::string at_limit = "seq";
  while (at_limit.size() + 9 <= kMaxFilterBytes) at_limit += " || seq<1";
  at_limit += std::string(kMaxFilterBytes - at_limit.size(), ' ');
  ASSERT_EQ(at_limit.size(), kMaxFilterBytes);
  EXPECT_NE(Parse(at_limit, &error), nullptr) << error.Message();
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
  Error error;
  auto parsed = Parse(expr, &error);
  EXPECT_NE(parsed, nullptr) << expr << ": " << error.Message();
  if (!parsed) return false;
  auto program = Program::Bind(*parsed, "t:io", kNames, kTypes, &error);
  EXPECT_NE(program, nullptr) << expr << ": " << error.Message();
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
  Error error;
  auto parsed = Parse("ok", &error);
  auto program = Program::Bind(*parsed, "t:io", kNames, kTypes, &error);
  ASSERT_NE(program, nullptr);
  EXPECT_TRUE(program->Matches(p.data(), p.size()));
  EXPECT_FALSE(program->Matches(p.data(), p.size() - 1));
  EXPECT_FALSE(program->Matches(p.data(), 6));  // the string's NUL is missing
}

TEST(FilterBindTest, RefusesUnknownAndNonNumericFields) {
  Error error;
  auto parsed = Parse("size > 3", &error);
  ASSERT_NE(parsed, nullptr);
  EXPECT_EQ(Program::Bind(*parsed, "t:io", kNames, kTypes, &error), nullptr);
  EXPECT_EQ(error.Message(), "column 1: no field 'size'");
  parsed = Parse("name == 3", &error);
  EXPECT_EQ(Program::Bind(*parsed, "t:io", kNames, kTypes, &error), nullptr);
  EXPECT_EQ(error.Message(), "column 1: field 'name' is a string; '==' compares it with a number");
}

// Issue 15: the one language's additions the runtime evaluates on the payload: strings (== and
// glob on str fields, allocation-free), labels of bool and phase fields, $name (known at bind
// time), field-to-field comparisons in either order, hex and exponent numbers.
TEST(FilterEvalTest, StringsLabelsAndNamesOnThePayload) {
  const std::string p = Payload(4, 1500, "peer-7", 0.25, true);
  EXPECT_TRUE(Eval("name == \"peer-7\"", p));
  EXPECT_TRUE(Eval("\"peer-7\" == name", p));
  EXPECT_FALSE(Eval("name != \"peer-7\"", p));
  EXPECT_TRUE(Eval("name < \"peer-8\" && name > \"peer\"", p));
  EXPECT_TRUE(Eval("name ~ \"peer-[0-9]\" && name ~ \"p*\" && !(name ~ \"q*\")", p));
  EXPECT_TRUE(Eval("name == peer || fd == 4", p));  // a bare word beside a string is a string
  EXPECT_TRUE(Eval("ok == \"true\" && ok == true && ok ~ \"t*\"", p));
  EXPECT_TRUE(Eval("$name == \"t:io\" && $name ~ \"t:*\"", p));
  EXPECT_FALSE(Eval("$name == \"t:other\"", p));
  EXPECT_TRUE(Eval("fd < bytes && bytes > fd && 5 > fd && (fd < 5) == 1 && 0 == (fd > 5)", p));
  EXPECT_TRUE(Eval("bytes == 0x5dc && bytes < 1e6 && bytes >= 1.5e+3 && ratio == 25e-2", p));
  const std::string empty = Payload(0, 0, "", 0, false);
  EXPECT_TRUE(Eval("name == \"\" && ok == false && ok == \"false\"", empty));
}

TEST(FilterEvalTest, PhaseLabels) {
  const std::vector<std::string> names = {"phase", "n"};
  const std::vector<std::string> types = {"phase", "u8"};
  for (const auto& [value, expr, want] : std::vector<std::tuple<char, std::string, bool>>{
           {0, "phase == begin", true}, {1, "phase == end", true}, {1, "phase == \"begin\"", false},
           {1, "phase == 1", true}, {2, "phase == \"\"", true}, {0, "phase ~ \"b*\"", true}, {0, "phase ~ begin", true}}) {
    Error error;
    auto parsed = Parse(expr, &error);
    ASSERT_NE(parsed, nullptr) << error.Message();
    auto program = Program::Bind(*parsed, "t:span", names, types, &error);
    ASSERT_NE(program, nullptr) << error.Message();
    const char payload[2] = {value, 9};
    EXPECT_EQ(program->Matches(payload, 2), want) << expr << " on " << int{value};
  }
}

std::string BindError(const std::string& expr) {
  Error error;
  auto parsed = Parse(expr, &error);
  EXPECT_NE(parsed, nullptr) << error.Message();
  if (!parsed) return "";
  EXPECT_EQ(Program::Bind(*parsed, "t:io", kNames, kTypes, &error), nullptr) << expr;
  return error.Message();
}

// What the payload cannot answer is refused when the filter is bound, with the column of the
// construct; Check() refuses what no layout can answer, before the program runs.
TEST(FilterBindTest, RefusesWhatThePayloadDoesNotHoldAtTheColumn) {
  const std::string unknown = " is not known to the runtime filter, which reads the payload only "
                              "(dump --filter knows it)";
  EXPECT_EQ(BindError("fd > 0 && $tid > 1"), "column 11: $tid" + unknown);
  EXPECT_EQ(BindError("$thread == main"), "column 1: $thread" + unknown);
  EXPECT_EQ(BindError("fd == 1 || nosuch"), "column 12: no field 'nosuch'");
  EXPECT_EQ(BindError("fd == label"), "column 7: no field 'label'");
  EXPECT_EQ(BindError("name && fd"),
            "column 1: field 'name' is a string, not a condition (compare it: == != < <= > >= ~)");
  EXPECT_EQ(BindError("fd ~ \"1*\""), "column 4: '~' matches strings; field 'fd' is a number");
  EXPECT_EQ(BindError("\"x\" < bytes"), "column 7: field 'bytes' is a number; '<' compares it with a string");
  Error error;
  auto parsed = Parse("fd == 1 || $thread ~ \"w*\"", &error);
  ASSERT_NE(parsed, nullptr);
  EXPECT_FALSE(Program::Check(*parsed, &error));
  EXPECT_EQ(error.Message(), "column 12: $thread" + unknown);
  parsed = Parse("nosuch == 1 && $name == \"x\"", &error);
  EXPECT_TRUE(Program::Check(*parsed, &error)) << error.Message();
  // A bytes field.
  parsed = Parse("data == 1", &error);
  EXPECT_EQ(Program::Bind(*parsed, "t:b", {"data"}, {"bytes"}, &error), nullptr);
  EXPECT_EQ(error.Message(), "column 1: field 'data' holds bytes, which filters do not compare");
}

// Type errors every event would have are syntax errors of the one language, on both sides.
TEST(FilterParseTest, TypeErrorsThatHoldForEveryEvent) {
  EXPECT_EQ(ParseError("$tid == \"x\""), "column 6: '==' between a number and a string");
  EXPECT_EQ(ParseError("(fd < 1) != $name"), "column 10: '!=' between a number and a string");
  EXPECT_EQ(ParseError("x && $name"),
            "column 6: a string is not a condition (compare it: == != < <= > >= ~)");
  EXPECT_EQ(ParseError("!\"x\""),
            "column 2: a string is not a condition (compare it: == != < <= > >= ~)");
  EXPECT_EQ(ParseError("x ~ 3"), "column 5: '~' needs a pattern: a string (\"net:*\") or a bare word");
  EXPECT_EQ(ParseError("3 ~ \"x\""), "column 3: '~' matches strings, not numbers");
  EXPECT_EQ(ParseError("$foo == 1"), "column 1: unknown variable '$foo' ($name, $tid, $thread)");
  EXPECT_EQ(ParseError("x == \"open"), "column 6: unterminated string");
  EXPECT_EQ(ParseError("x == 1 y"), "column 8: unexpected 'y'");
  EXPECT_EQ(ParseError("a < b < c"), "column 7: unexpected '<'");
  EXPECT_EQ(ParseError("x == 12ab"), "column 6: malformed number '12ab'");
  EXPECT_EQ(ParseError("x == -"), "column 6: malformed number '-'");
}

TEST(FilterParseTest, ComparisonsAreBoundedAtTheLimit) {
  const auto chain = [](std::size_t n) {
    std::string text = "a";
    for (std::size_t i = 1; i < n; ++i) text += "||a";
    return text;
  };
  Error error;
  EXPECT_NE(Parse(chain(kMaxComparisons), &error), nullptr) << error.Message();
  EXPECT_EQ(ParseError(chain(kMaxComparisons + 1)),
            "column " + std::to_string(3 * kMaxComparisons + 1) + ": more than 1024 comparisons");
  // `a < 1` is one comparison, not three.
  std::string compares = "a<1";
  for (std::size_t i = 1; i < 300; ++i) compares += "||a<1";
  for (std::size_t i = 300; i < kMaxComparisons; ++i) compares += "||a";
  EXPECT_NE(Parse(compares, &error), nullptr) << error.Message();
  EXPECT_EQ(ParseError(compares + "||a"), "column " + std::to_string(compares.size() + 3) +
                                             ": more than 1024 comparisons");
}

// The deepest stack the limits allow stays within kMaxStack, and runs.
TEST(FilterEvalTest, DeepestStackWithinTheBound) {
  std::string text;
  for (std::size_t i = 0; i < kMaxNesting; ++i) text += "fd || fd && fd == (";
  text += "fd" + std::string(kMaxNesting, ')');
  ASSERT_LE(text.size(), kMaxFilterBytes);
  Error error;
  auto parsed = Parse(text, &error);
  ASSERT_NE(parsed, nullptr) << error.Message();
  EXPECT_GT(parsed->max_depth, 3 * kMaxNesting);
  EXPECT_LE(parsed->max_depth, kMaxStack);
  EXPECT_TRUE(Eval(text, Payload(4, 1, "x", 0, false)));
  EXPECT_FALSE(Eval(text, Payload(0, 1, "x", 0, false)));
}

// GlobMatch is fnmatch(pattern, text, 0) in the C locale.
TEST(FilterGlobTest, AgreesWithFnmatch) {
  const char* patterns[] = {"*", "", "a*", "*b", "a?c", "[abc]*", "[!a]*", "[^a]*", "[a-c]x",
                            "[]]", "[!]]", "a\\*", "\\[x", "[[:digit:]]*", "[[:alpha:]_]?",
                            "*a*b*c*", "[", "a[", "[a-]", "net:*", "*.so.[0-9]", "[\\]]"};
  const char* texts[] = {"", "a", "abc", "ab", "b", "]", "a*", "[x", "9lives", "_q", "aXbYc",
                         "cx", "-", "net:recv", "libc.so.6", "axbxcx", "ac", "a["};
  for (const char* p : patterns) {
    for (const char* t : texts) {
      EXPECT_EQ(GlobMatch(p, t), ::fnmatch(p, t, 0) == 0) << "'" << p << "' on '" << t << "'";
    }
  }
}

}  // namespace
}  // namespace hush::filter
