#include "table.h"

#include <charconv>
#include <cmath>

namespace hush::cli {

std::string CsvField(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

void Table::WriteJson(JsonWriter& j) const {
  j.BeginArray();
  for (std::size_t i = 0; i < rows_.size(); ++i) WriteJsonRow(j, i);
  j.EndArray();
}

void Table::WriteJsonRow(JsonWriter& j, std::size_t r) const {
  const std::vector<Cell>& row = rows_[r];
  j.BeginObject();
  for (std::size_t i = 0; i < row.size() && i < columns_.size(); ++i) {
    j.Key(columns_[i]);
    const Cell& c = row[i];
    switch (c.kind) {
      case Kind::kText:
        j.String(c.text);
        break;
      case Kind::kInt:
        j.Int(c.i);
        break;
      case Kind::kUint:
        j.Uint(c.u);
        break;
      case Kind::kDouble:
        j.Double(c.d);
        break;
    }
  }
  j.EndObject();
}

std::string Table::Csv() const {
  std::string out;
  for (std::size_t i = 0; i < columns_.size(); ++i) out += (i ? "," : "") + CsvField(columns_[i]);
  out += "\r\n";
  for (const std::vector<Cell>& row : rows_) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i) out += ',';
      const Cell& c = row[i];
      char buf[64];
      switch (c.kind) {
        case Kind::kText:
          out += CsvField(c.text);
          break;
        case Kind::kInt:
          out.append(buf, std::to_chars(buf, buf + sizeof buf, c.i).ptr);
          break;
        case Kind::kUint:
          out.append(buf, std::to_chars(buf, buf + sizeof buf, c.u).ptr);
          break;
        case Kind::kDouble:
          // Shortest round-trip, as in the JSON; not finite (null there): an empty field.
          if (std::isfinite(c.d)) out.append(buf, std::to_chars(buf, buf + sizeof buf, c.d).ptr);
          break;
      }
    }
    out += "\r\n";
  }
  return out;
}

}  // namespace hush::cli
