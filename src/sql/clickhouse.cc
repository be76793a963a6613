#include "sql/clickhouse.h"

#include <curl/curl.h>
#include <zlib.h>

#include <cctype>
#include <cstring>
#include <mutex>

#include "sql/loaded_library.h"

namespace hush::sql {

std::string ClickHouseCreateTable(const TableDef& table, const std::string& db) {
  std::string sql = "CREATE TABLE IF NOT EXISTS " + db + "." + table.name + " (";
  for (const Column& c : table.columns) {
    sql += c.name;
    switch (c.type) {
      case ColumnType::kInt64: sql += " Int64, "; break;
      case ColumnType::kUInt32: sql += " UInt32, "; break;
      case ColumnType::kFloat64: sql += " Float64, "; break;
      case ColumnType::kString: sql += " String, "; break;
    }
  }
  sql += "seq UInt64) ENGINE = ReplacingMergeTree ORDER BY (";
  sql += table.clickhouse_order;
  return sql + ", trace_id, seq)";
}

std::string ClickHouseQuote(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

RowBinarySink::RowBinarySink(std::uint64_t chunk_rows, ChunkFn on_chunk)
    : chunk_rows_(chunk_rows == 0 ? 1 : chunk_rows), on_chunk_(std::move(on_chunk)) {
  for (auto& b : buf_) b = std::make_unique<exporter::OutputBuffer>(nullptr);
}

bool RowBinarySink::Row(TableId table, std::span<const Value> values) {
  if (!ok_) return false;
  const auto t = static_cast<std::size_t>(table);
  exporter::OutputBuffer& out = *buf_[t];
  const TableDef& def = Table(table);
  for (std::size_t i = 0; i < values.size(); ++i) {
    switch (def.columns[i].type) {
      case ColumnType::kInt64: {
        const std::int64_t v = values[i].i;  // x86-64 and aarch64 are little-endian, as RowBinary
        out.Append(&v, 8);
        break;
      }
      case ColumnType::kUInt32: {
        const auto v = static_cast<std::uint32_t>(values[i].i);
        out.Append(&v, 4);
        break;
      }
      case ColumnType::kFloat64: out.Append(&values[i].d, 8); break;
      case ColumnType::kString: {
        std::uint8_t* p = out.Ensure(10 + values[i].s.size());
        std::size_t n = values[i].s.size(), len = 0;
        do {
          p[len++] = static_cast<std::uint8_t>((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
          n >>= 7;
        } while (n != 0);
        std::memcpy(p + len, values[i].s.data(), values[i].s.size());
        out.Advance(len + values[i].s.size());
        break;
      }
    }
  }
  const std::uint64_t seq = seq_[t]++;
  out.Append(&seq, 8);
  if (++pending_[t] == chunk_rows_) return Emit(t);
  return true;
}

bool RowBinarySink::Emit(std::size_t t) {
  if (pending_[t] == 0 || !ok_) return ok_;
  Chunk chunk;
  chunk.table = static_cast<TableId>(t);
  chunk.first_seq = seq_[t] - pending_[t];
  chunk.number = chunk.first_seq / chunk_rows_;
  chunk.rows = pending_[t];
  chunk.data = std::span<const std::uint8_t>(buf_[t]->data(), buf_[t]->size());
  ok_ = on_chunk_(chunk);
  buf_[t]->Clear();
  pending_[t] = 0;
  return ok_;
}

bool RowBinarySink::Flush() {
  for (std::size_t t = 0; t < kTableCount; ++t)
    if (!Emit(t)) return false;
  return ok_;
}

bool ParseClickHouseUrl(std::string_view url, ClickHouseUrl* out, std::string* error) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    *error = "'" + std::string(url) + "' is not an http:// URL (http://HOST:8123/DB)";
    return false;
  }
  const std::string_view rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  const std::string_view host = rest.substr(0, slash);
  std::string_view db = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  if (!db.empty() && db.back() == '/') db.remove_suffix(1);
  if (host.empty() || host.find_first_of("?#@ ") != std::string_view::npos) {
    *error = "'" + std::string(url) + "': bad host (http://HOST:8123/DB)";
    return false;
  }
  for (const char c : db) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) {
      *error = "'" + std::string(url) + "': the database name may hold letters, digits and _";
      return false;
    }
  }
  out->base = "http://" + std::string(host) + "/";
  out->database = db.empty() ? "default" : std::string(db);
  return true;
}

namespace {

std::size_t CollectBody(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// gzip (RFC 1952) of `data` into *out, with zlib's deflate (windowBits 15 + 16: gzip wrapper).
bool Gzip(std::span<const std::uint8_t> data, std::string* out) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  out->resize(deflateBound(&z, data.size()) + 32);
  z.next_in = const_cast<Bytef*>(data.data());
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(out->size());
  const int rc = deflate(&z, Z_FINISH);
  out->resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END;
}

}  // namespace

namespace {

// libcurl is loaded by the first client, not linked (loaded_library.h): linked, it made every
// hushtrace command (start, stop, dump...) load 28 more libraries (TLS, Kerberos, LDAP, IDN...)
// and run their constructors, most of the CLI's own start-up: `perf stat -r 30 hushtrace
// --version`, docs/benchmarks.md "Attach from the command line". Only `ship` pays for it now.
struct CurlApi {
  decltype(&::curl_global_init) global_init = nullptr;
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_reset) easy_reset = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
  std::string error;  // why libcurl is not usable; empty once loaded and initialized
};

// Loaded once per process and never unloaded (its connection cache and TLS state live on).
const CurlApi& Curl() {
  static const CurlApi api = [] {
    CurlApi a;
    LoadedLibrary lib("libcurl.so.4", "libcurl4", &a.error);
    lib.Resolve("curl_global_init", &a.global_init);
    lib.Resolve("curl_easy_init", &a.easy_init);
    lib.Resolve("curl_easy_cleanup", &a.easy_cleanup);
    lib.Resolve("curl_easy_reset", &a.easy_reset);
    lib.Resolve("curl_easy_setopt", &a.easy_setopt);
    lib.Resolve("curl_easy_perform", &a.easy_perform);
    lib.Resolve("curl_easy_getinfo", &a.easy_getinfo);
    lib.Resolve("curl_easy_strerror", &a.easy_strerror);
    lib.Resolve("curl_slist_append", &a.slist_append);
    lib.Resolve("curl_slist_free_all", &a.slist_free_all);
    if (a.error.empty() && a.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) a.error = "curl_global_init failed";
    return a;
  }();
  return api;
}

}  // namespace

ClickHouseClient::ClickHouseClient(const ClickHouseUrl& url, long timeout_s)
    : url_(url), timeout_s_(timeout_s) {
  curl_ = Curl().error.empty() ? Curl().easy_init() : nullptr;
}

ClickHouseClient::~ClickHouseClient() {
  if (curl_ != nullptr) Curl().easy_cleanup(static_cast<CURL*>(curl_));
}

bool ClickHouseClient::Post(const std::string& url, const void* body, std::size_t size, bool gzip,
                            std::string* result, std::string* error) {
  CURL* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) {
    *error = Curl().error.empty() ? std::string("curl_easy_init failed") : Curl().error;
    retryable_ = false;
    return false;
  }
  const CurlApi& api = Curl();
  result->clear();
  api.easy_reset(curl);  // keeps the connection cache
  curl_slist* headers = nullptr;
  headers = api.slist_append(headers, "Content-Type: application/octet-stream");
  if (gzip) headers = api.slist_append(headers, "Content-Encoding: gzip");
  api.easy_setopt(curl, CURLOPT_URL, url.c_str());
  api.easy_setopt(curl, CURLOPT_POST, 1L);
  api.easy_setopt(curl, CURLOPT_POSTFIELDS, body);
  api.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(size));
  api.easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, CollectBody);
  api.easy_setopt(curl, CURLOPT_WRITEDATA, result);
  api.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
  api.easy_setopt(curl, CURLOPT_TIMEOUT, timeout_s_);
  api.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = api.easy_perform(curl);
  api.slist_free_all(headers);
  bytes_sent_ += size;
  retryable_ = true;
  if (rc != CURLE_OK) {
    *error = url_.base + ": " + api.easy_strerror(rc);
    return false;
  }
  long status = 0;
  api.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) {
    retryable_ = status == 502 || status == 503 || status == 504;
    std::string message = *result;
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    *error = url_.base + ": HTTP " + std::to_string(status) + ": " + message;
    return false;
  }
  return true;
}

bool ClickHouseClient::Query(const std::string& sql, std::string* result, std::string* error) {
  return Post(url_.base, sql.data(), sql.size(), false, result, error);
}

bool ClickHouseClient::Insert(TableId table, std::span<const std::uint8_t> rows,
                              std::string* error) {
  if (!Gzip(rows, &gz_)) {
    *error = "gzip compression failed";
    return false;
  }
  // "INSERT INTO db.table FORMAT RowBinary", URL-encoded (names are [A-Za-z0-9_]).
  const std::string url = url_.base + "?query=INSERT%20INTO%20" + url_.database + "." +
                          Table(table).name + "%20FORMAT%20RowBinary";
  std::string result;
  return Post(url, gz_.data(), gz_.size(), true, &result, error);
}

}  // namespace hush::sql
