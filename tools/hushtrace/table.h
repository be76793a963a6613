// The tabular views of the subcommands (report's sections, hist's buckets, ps, status) as one
// value that both machine-readable formats render, so that `--format json` and `--format csv`
// cannot disagree on a number:
//
//   Table t({"name", "count", "total_ns"});
//   t.Row().Text("fib(int)").Uint(57313).Int(4041000);
//   t.WriteJson(j);        // [{"name":"fib(int)","count":57313,"total_ns":4041000}]
//   std::fputs(t.Csv().c_str(), stdout);
//                          // name,count,total_ns
//                          // fib(int),57313,4041000
//
// CSV is RFC 4180: a header row of the column names (the JSON keys), CRLF after every row, a
// field with a comma, a double quote, CR or LF quoted and its quotes doubled. Numbers are written
// as in the JSON (integers in full, doubles in their shortest round-trip form); a number that is
// not finite, null in JSON, is an empty field. Text is written as given (the JSON makes it valid
// UTF-8; the CSV keeps the bytes of the trace).
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_TABLE_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_TABLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json_writer.h"

namespace hush::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> columns) : columns_(std::move(columns)) {}

  // Adds a row; its cells follow, one per column in order.
  Table& Row() {
    rows_.emplace_back();
    return *this;
  }
  Table& Text(std::string_view v) { return Add({Kind::kText, std::string(v)}); }
  Table& Int(std::int64_t v) { return Add({Kind::kInt, {}, v}); }
  Table& Uint(std::uint64_t v) { return Add({Kind::kUint, {}, 0, v}); }
  Table& Double(double v) { return Add({Kind::kDouble, {}, 0, 0, v}); }

  const std::vector<std::string>& columns() const { return columns_; }
  std::size_t size() const { return rows_.size(); }

  // An array of objects, one per row, keyed by the column names.
  void WriteJson(JsonWriter& j) const;
  // Row `i` alone as such an object (a view of one record: `status`).
  void WriteJsonRow(JsonWriter& j, std::size_t i) const;
  // The header row and every row.
  std::string Csv() const;

 private:
  // A plain struct, not a std::variant: gcc 12 warns (maybe-uninitialized) on moving those.
  enum class Kind { kText, kInt, kUint, kDouble };
  struct Cell {
    Kind kind;
    std::string text;
    std::int64_t i = 0;
    std::uint64_t u = 0;
    double d = 0;
  };
  Table& Add(Cell c) {
    rows_.back().push_back(std::move(c));
    return *this;
  }
  std::vector<std::string> columns_;
  std::vector<std::vector<Cell>> rows_;
};

// `field` as one CSV field (RFC 4180): quoted when it holds a comma, a quote, CR or LF.
std::string CsvField(std::string_view field);

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_TABLE_H_
