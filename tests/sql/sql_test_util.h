// Helpers of the SQL tests (sqlite_test.cc, clickhouse_test.cc): a trace recorded in-process,
// babeltrace2's view of it, what the documented queries must answer (computed from the reader,
// independently of src/sql), the queries of docs/sql.md, and a real clickhouse-server.
#ifndef HUSHTRACE_TESTS_SQL_SQL_TEST_UTIL_H_
#define HUSHTRACE_TESTS_SQL_SQL_TEST_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hush::sql::test {

// The trace: spans app:request > app:handle > function calls (func:entry/exit, three addresses,
// nested), a counter, app:req {id, path, ratio} events, sched switches, two threads, one
// app:trigger instant. Recorded on first use; removed at exit.
struct Recording {
  std::string dir;
  std::string error;  // non-empty: recording failed
};
const Recording& Recorded();

// babeltrace2 DIR: events per "provider:name", and the (tid, id, path) of each app:req event
// in order. Fails the calling test (ADD_FAILURE) when babeltrace2 cannot run.
struct BtView {
  std::map<std::string, std::uint64_t> counts;
  std::vector<std::string> req;  // "tid|id|path"
  std::uint64_t total = 0;
};
BtView Babeltrace(const std::string& dir);
// `req` ("tid|id|path" of each app:req row, any order) holds exactly the events of bt.req.
void ExpectSameReq(std::vector<std::string> req, const BtView& bt);

// Expected answers of the documented queries, as lines "a|b|c" (the sqlite3 CLI's default
// output; the ClickHouse side converts its TSV), computed from the reader.
// quantile_floor: ClickHouse's quantileExact rank floor(p * n) (0-based) instead of the nearest
// rank ceil(p * n) (1-based) of the SQLite query.
std::vector<std::string> ExpectSpanPercentiles(const std::string& dir, const std::string& host,
                                               bool quantile_floor);
std::vector<std::string> ExpectTopSelfTime(const std::string& dir);
std::vector<std::string> ExpectBeforeTrigger(const std::string& dir);
std::vector<std::string> ExpectLossByHost(const std::vector<std::string>& dirs,
                                          const std::vector<std::string>& hosts);

// The query NAME for ENGINE ("sqlite", "clickhouse") from docs/sql.md ("" when absent).
std::string DocQuery(const std::string& name, const std::string& engine);
// Every query name of docs/sql.md.
std::vector<std::string> DocQueryNames();

// A synthetic trace with known losses (two streams: discarded and overwritten events).
std::string WriteLossyTrace(const std::string& parent);

// A clickhouse-server on loopback with a temporary config, data directory and free ports.
class ClickHouseServer {
 public:
  ClickHouseServer();
  ~ClickHouseServer();  // kills the server, removes the directory
  ClickHouseServer(const ClickHouseServer&) = delete;
  ClickHouseServer& operator=(const ClickHouseServer&) = delete;

  // Starts it and waits until it answers; false + error (with the server log's tail) otherwise.
  bool Start(std::string* error);
  void Kill();  // SIGKILL, reaped
  // http://127.0.0.1:PORT/
  std::string url() const;
  // Runs a query (TabSeparated result) with `database` as the default one; "" + ADD_FAILURE on
  // error.
  std::string Query(const std::string& sql, const std::string& database = "default") const;
  // Extra <yandex> config (e.g. <remote_servers>); before Start().
  void set_extra_config(const std::string& xml) { extra_ = xml; }
  int http_port() const { return http_port_; }
  int tcp_port() const { return tcp_port_; }

 private:
  std::string dir_, extra_;
  int http_port_ = 0, tcp_port_ = 0;
  pid_t pid_ = -1;
};

// Lines of text without the trailing empty one; tabs turned into '|'.
std::vector<std::string> Lines(const std::string& text);

}  // namespace hush::sql::test

#endif  // HUSHTRACE_TESTS_SQL_SQL_TEST_UTIL_H_
