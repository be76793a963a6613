// The tables behind `--format json` and `--format csv` (tools/hushtrace/table.h): RFC 4180 quoting,
// and the same numbers in both formats.
#include "table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace hush::cli {
namespace {

TEST(CsvField, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(CsvField("plain text"), "plain text");
  EXPECT_EQ(CsvField(""), "");
  EXPECT_EQ(CsvField("fib(int, int)"), "\"fib(int, int)\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField("cr\rhere"), "\"cr\rhere\"");
}

TEST(Table, CsvHasAHeaderAndCrlfRows) {
  Table t({"name", "count", "total_ns", "avg"});
  t.Row().Text("a,b").Uint(std::numeric_limits<std::uint64_t>::max()).Int(-5).Double(0.1);
  t.Row().Text("q\"").Uint(0).Int(0).Double(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(t.Csv(),
            "name,count,total_ns,avg\r\n"
            "\"a,b\",18446744073709551615,-5,0.1\r\n"
            "\"q\"\"\",0,0,\r\n");
  JsonWriter j;
  t.WriteJson(j);
  EXPECT_EQ(j.text(),
            "[{\"name\":\"a,b\",\"count\":18446744073709551615,\"total_ns\":-5,\"avg\":0.1},"
            "{\"name\":\"q\\\"\",\"count\":0,\"total_ns\":0,\"avg\":null}]\n");
}

TEST(Table, EmptyTableIsItsHeader) {
  const Table t({"lower", "upper", "count"});
  EXPECT_EQ(t.Csv(), "lower,upper,count\r\n");
  JsonWriter j;
  t.WriteJson(j);
  EXPECT_EQ(j.text(), "[]\n");
}

TEST(Table, OneRowAsAnObject) {
  Table t({"session", "events"});
  t.Row().Text("on").Uint(12);
  JsonWriter j;
  t.WriteJsonRow(j, 0);
  EXPECT_EQ(j.text(), "{\"session\":\"on\",\"events\":12}\n");
}

}  // namespace
}  // namespace hush::cli
