// The schema (schema.h) in ClickHouse: DDL, RowBinary chunks, and an HTTP client (libcurl).
//
// Tables: the columns of schema.h plus `seq UInt64`, the row's number within its trace and table
// (from 0, in the order TraceTables writes them: reading a trace is deterministic, so a row keeps
// its seq however often the trace is shipped). Engine (docs/sql.md, "ClickHouse"):
//
//   ENGINE = ReplacingMergeTree ORDER BY (<query key of schema.h>, trace_id, seq)
//
// The sorting key starts with what the documented queries filter and group by, and ends with the
// row's identity (trace_id, seq), so two copies of one row have equal keys and ReplacingMergeTree
// keeps one of them when it merges parts. That is the backstop; the shipper avoids sending
// copies in the first place: before a trace it asks the server which of its chunks are in
// (ClickHouse writes one INSERT of under max_insert_block_size rows as one part: all or nothing),
// and after a failed insert it asks again before resending. (18.16, the Debian version, has
// insert-block deduplication only for Replicated tables, which need ZooKeeper.)
//
// RowBinary (little-endian fixed-size integers and floats, strings as LEB128 length + bytes) is
// ClickHouse's simplest binary insert format; bodies are sent gzip-compressed (Content-Encoding:
// gzip, which 18.16 accepts on inserts).
#ifndef HUSHTRACE_SRC_SQL_CLICKHOUSE_H_
#define HUSHTRACE_SRC_SQL_CLICKHOUSE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "export/output_buffer.h"
#include "sql/schema.h"
#include "sql/tables.h"

namespace hush::sql {

// CREATE TABLE IF NOT EXISTS db.<table> (...) ENGINE = ReplacingMergeTree ORDER BY (...).
std::string ClickHouseCreateTable(const TableDef& table, const std::string& db);
// A ClickHouse string literal: 'text' with \ and ' escaped.
std::string ClickHouseQuote(std::string_view text);

// One chunk of RowBinary rows of one table: rows seq first_seq .. first_seq + rows - 1.
struct Chunk {
  TableId table;
  std::uint64_t number;     // first_seq / chunk_rows
  std::uint64_t first_seq;
  std::uint64_t rows;
  std::span<const std::uint8_t> data;
};

// Encodes rows in RowBinary, per table, and hands out a Chunk every `chunk_rows` rows of a table
// (and the partial last chunks at Flush()). The callback returns false to stop (a failed insert).
class RowBinarySink final : public RowSink {
 public:
  using ChunkFn = std::function<bool(const Chunk&)>;
  RowBinarySink(std::uint64_t chunk_rows, ChunkFn on_chunk);

  bool Row(TableId table, std::span<const Value> values) override;
  bool Flush();
  std::uint64_t rows(TableId table) const { return seq_[static_cast<std::size_t>(table)]; }

 private:
  bool Emit(std::size_t table);

  std::uint64_t chunk_rows_;
  ChunkFn on_chunk_;
  std::array<std::unique_ptr<exporter::OutputBuffer>, kTableCount> buf_;
  std::array<std::uint64_t, kTableCount> seq_{}, pending_{};
  bool ok_ = true;
};

// http://HOST[:PORT][/DB], the --to of `hushtrace ship`.
struct ClickHouseUrl {
  std::string base;      // http://HOST:PORT/
  std::string database;  // "default" when the URL has no path
};
// False + error for anything else (other schemes, a database name other than [A-Za-z0-9_]+).
bool ParseClickHouseUrl(std::string_view url, ClickHouseUrl* out, std::string* error);

// One keep-alive connection to a ClickHouse HTTP interface (libcurl easy handle).
class ClickHouseClient {
 public:
  explicit ClickHouseClient(const ClickHouseUrl& url, long timeout_s = 60);
  ~ClickHouseClient();
  ClickHouseClient(const ClickHouseClient&) = delete;
  ClickHouseClient& operator=(const ClickHouseClient&) = delete;

  // Runs `sql` (POST body); the result text in *result. False + error (the server's message, or
  // the transport error) otherwise.
  bool Query(const std::string& sql, std::string* result, std::string* error);
  // INSERT INTO database.table FORMAT RowBinary with `rows` as the gzip-compressed body.
  bool Insert(TableId table, std::span<const std::uint8_t> rows, std::string* error);
  // Whether the last failure may pass on retry: a transport error (no answer, connection
  // refused, timeout) or HTTP 502/503/504; not an error the server answered (a bad query).
  bool retryable() const { return retryable_; }
  const ClickHouseUrl& url() const { return url_; }
  std::uint64_t bytes_sent() const { return bytes_sent_; }  // request bodies, as on the wire

 private:
  bool Post(const std::string& url, const void* body, std::size_t size, bool gzip,
            std::string* result, std::string* error);

  ClickHouseUrl url_;
  long timeout_s_;
  void* curl_;  // CURL*
  std::string gz_;
  std::uint64_t bytes_sent_ = 0;
  bool retryable_ = false;
};

}  // namespace hush::sql

#endif  // HUSHTRACE_SRC_SQL_CLICKHOUSE_H_
