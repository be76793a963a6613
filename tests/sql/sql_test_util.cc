#include "sql/sql_test_util.h"

#include <gtest/gtest.h>
#include <hushtrace/hushtrace.h>
#include <hushtrace/session.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <regex>
#include <thread>

#include "hushtrace/reader.h"
#include "reader/reader_test_util.h"
#include "sql/clickhouse.h"

extern char** environ;

HUSH_TRACEPOINT(app, req, (std::uint32_t, id), (const char*, path), (double, ratio))
HUSH_TRACEPOINT(func, entry, (std::uint64_t, addr))
HUSH_TRACEPOINT(func, exit, (std::uint64_t, addr))
HUSH_TRACEPOINT(sched, switch_in, (std::uint32_t, tid), (std::uint32_t, cpu))
HUSH_TRACEPOINT(sched, switch_out, (std::uint32_t, tid), (std::uint8_t, preempted),
                (std::uint32_t, cpu))

namespace hush::sql::test {
namespace {

using reader::test::RunCommand;

std::uint32_t Gettid() { return static_cast<std::uint32_t>(::syscall(SYS_gettid)); }

// Some work whose duration varies with i, so percentiles differ from one another.
std::uint64_t Work(int i) {
  std::uint64_t x = static_cast<std::uint64_t>(i);
  for (int k = 0; k < (i % 7) * 40; ++k) x = x * 6364136223846793005u + 1442695040888963407u;
  return x;
}

void Request(int i, std::uint32_t tid) {
  HUSH_TRACE(sched, switch_in, tid, static_cast<std::uint32_t>(i % 2));
  {
    HUSH_SPAN(app, request);
    const std::string path = "/item/" + std::to_string(i) + (i % 5 == 0 ? "?q=\"x\"" : "");
    HUSH_TRACE(app, req, static_cast<std::uint32_t>(i), path.c_str(), i / 4.0);
    HUSH_COUNTER(app, depth, i % 9);
    {
      HUSH_SPAN(app, handle);
      const std::uint64_t outer = 0x401000 + static_cast<std::uint64_t>(i % 3) * 0x10;
      HUSH_TRACE(func, entry, outer);
      Work(i);
      HUSH_TRACE(func, entry, std::uint64_t{0x402000});
      Work(i + 3);
      HUSH_TRACE(func, exit, std::uint64_t{0x402000});
      HUSH_TRACE(func, exit, outer);
    }
  }
  HUSH_TRACE(sched, switch_out, tid, static_cast<std::uint8_t>(i % 2),
             static_cast<std::uint32_t>(i % 2));
}

constexpr int kMainRequests = 1500;
constexpr int kWorkerRequests = 600;

}  // namespace

const Recording& Recorded() {
  static const Recording* rec = [] {
    auto* r = new Recording;
    const std::string parent = reader::test::MakeTempDir("sql");
    r->dir = parent + "/trace";
    SessionOptions options;
    options.events = {"app:*", "sched:*", "func:*"};
    options.output_dir = r->dir;
    options.buffer_size = 8 << 20;
    auto session = Session::Start(options, &r->error);
    if (!session) return r;
    std::thread worker([] {
      ::pthread_setname_np(::pthread_self(), "sql-worker");
      const std::uint32_t tid = Gettid();
      for (int i = 0; i < kWorkerRequests; ++i) Request(i, tid);
    });
    const std::uint32_t tid = Gettid();
    for (int i = 0; i < kMainRequests; ++i) {
      Request(i, tid);
      if (i == kMainRequests / 2) HUSH_INSTANT(app, trigger);
    }
    worker.join();
    session->Stop();
    const SessionStats stats = session->Stats();
    if (stats.events_discarded != 0) r->error = "events were discarded while recording";
    std::atexit([] { reader::test::RemoveTree(Recorded().dir.substr(0, Recorded().dir.rfind('/'))); });
    return r;
  }();
  return *rec;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = reader::test::SplitLines(text);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (std::string& l : lines) std::replace(l.begin(), l.end(), '\t', '|');
  return lines;
}

BtView Babeltrace(const std::string& dir) {
  BtView view;
  const reader::test::CommandResult r = RunCommand({"/usr/bin/babeltrace2", dir});
  if (r.exit_code != 0) {
    ADD_FAILURE() << "babeltrace2 " << dir << " failed (" << r.exit_code << "): " << r.err;
    return view;
  }
  static const std::regex kLine(R"(^\[[^\]]*\] \([^)]*\) \S+ (\S+): \{[^}]*vtid = (\d+)[^}]*\}(.*)$)");
  static const std::regex kReq(R"(id = (\d+), path = \"((?:[^\"\\]|\\.)*)\")");
  for (const std::string& line : reader::test::SplitLines(r.out)) {
    std::smatch m;
    if (!std::regex_match(line, m, kLine)) continue;
    ++view.total;
    ++view.counts[m[1]];
    if (m[1] == "app:req") {
      const std::string rest = m[3];
      std::smatch f;
      if (std::regex_search(rest, f, kReq)) {
        std::string path = f[2];
        std::string unescaped;
        for (std::size_t i = 0; i < path.size(); ++i) {
          if (path[i] == '\\' && i + 1 < path.size()) ++i;
          unescaped += path[i];
        }
        view.req.push_back(std::string(m[2]) + "|" + std::string(f[1]) + "|" + unescaped);
      }
    }
  }
  return view;
}

void ExpectSameReq(std::vector<std::string> req, const BtView& bt) {
  std::vector<std::string> bt_req = bt.req;
  std::sort(req.begin(), req.end());
  std::sort(bt_req.begin(), bt_req.end());
  EXPECT_GT(bt_req.size(), 1000u);
  EXPECT_EQ(bt_req.size(), bt.counts.count("app:req") != 0 ? bt.counts.at("app:req") : 0);
  EXPECT_EQ(req, bt_req);
}

namespace {

struct Slice {
  std::uint32_t tid;
  std::string name;
  bool func;
  std::int64_t start, dur, self;
};

// Spans and function calls paired from the reader's events: one stack a thread, both kinds on
// it (the recorded trace nests properly).
std::vector<Slice> PairSlices(const reader::Trace& trace) {
  struct Open {
    Slice slice;
    std::int64_t children = 0;
  };
  std::map<std::uint32_t, std::vector<Open>> stacks;
  std::vector<Slice> out;
  reader::EventIterator it(trace);
  while (it.Next()) {
    const reader::Event& e = it.event();
    const std::int64_t ns = trace.ToEpochNs(e.timestamp());
    bool begin = false, end = false, func = false;
    std::string name = e.name();
    if (e.event_class().kind == reader::EventKind::kSpan) {
      const auto phase = e.GetInt64("phase");
      begin = phase == 0;
      end = phase == 1;
    } else if (e.name() == "func:entry" || e.name() == "func:exit") {
      func = true;
      begin = e.name() == "func:entry";
      end = !begin;
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%llx",
                    static_cast<unsigned long long>(e.GetUint64("addr").value_or(0)));
      name = buf;
    }
    std::vector<Open>& stack = stacks[e.tid()];
    if (begin) {
      stack.push_back(Open{Slice{e.tid(), name, func, ns, 0, 0}});
    } else if (end && !stack.empty()) {
      Open o = stack.back();
      stack.pop_back();
      o.slice.dur = ns - o.slice.start;
      o.slice.self = o.slice.dur - o.children;
      if (!stack.empty()) stack.back().children += o.slice.dur;
      out.push_back(o.slice);
    }
  }
  return out;
}

std::unique_ptr<reader::Trace> Open(const std::string& dir) {
  std::string error;
  auto trace = reader::Trace::Open(dir, &error);
  EXPECT_TRUE(trace) << error;
  return trace;
}

}  // namespace

std::vector<std::string> ExpectSpanPercentiles(const std::string& dir, const std::string& host,
                                               bool quantile_floor) {
  auto trace = Open(dir);
  if (!trace) return {};
  std::map<std::string, std::vector<std::int64_t>> durations;
  for (const Slice& s : PairSlices(*trace))
    if (!s.func) durations[s.name].push_back(s.dur);
  std::vector<std::string> lines;
  for (auto& [name, d] : durations) {
    std::sort(d.begin(), d.end());
    const std::size_t n = d.size();
    auto at = [&](std::size_t percent) {
      std::size_t index = quantile_floor ? n * percent / 100 : (n * percent + 99) / 100 - 1;
      return d[std::min(index, n - 1)];
    };
    lines.push_back(host + "|" + name + "|" + std::to_string(n) + "|" + std::to_string(at(50)) +
                    "|" + std::to_string(at(99)));
  }
  return lines;
}

std::vector<std::string> ExpectTopSelfTime(const std::string& dir) {
  auto trace = Open(dir);
  if (!trace) return {};
  struct Sum {
    std::int64_t calls = 0, self = 0, total = 0;
  };
  std::map<std::string, Sum> sums;
  for (const Slice& s : PairSlices(*trace)) {
    if (!s.func) continue;
    Sum& sum = sums[s.name];
    ++sum.calls;
    sum.self += s.self;
    sum.total += s.dur;
  }
  std::vector<std::pair<std::string, Sum>> sorted(sums.begin(), sums.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.self != b.second.self ? a.second.self > b.second.self : a.first < b.first;
  });
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < sorted.size() && i < 20; ++i) {
    const auto& [name, s] = sorted[i];
    lines.push_back(name + "|" + std::to_string(s.calls) + "|" + std::to_string(s.self) + "|" +
                    std::to_string(s.total));
  }
  return lines;
}

std::vector<std::string> ExpectBeforeTrigger(const std::string& dir) {
  auto trace = Open(dir);
  if (!trace) return {};
  std::int64_t trigger = -1;
  std::uint32_t tid = 0;
  {
    reader::EventIterator it(*trace);
    while (it.Next()) {
      if (it.event().name() == "app:trigger") {
        trigger = trace->ToEpochNs(it.event().timestamp());
        tid = it.event().tid();
        break;
      }
    }
  }
  EXPECT_GE(trigger, 0) << "no app:trigger in " << dir;
  std::vector<std::pair<std::int64_t, std::string>> rows;
  reader::EventIterator it(*trace);
  while (it.Next()) {
    const reader::Event& e = it.event();
    const std::int64_t ns = trace->ToEpochNs(e.timestamp());
    if (e.tid() != tid || ns < trigger - 10000000 || ns > trigger) continue;
    const std::size_t colon = e.name().find(':');
    rows.emplace_back(ns, e.name().substr(colon + 1) + "\x01" + e.name().substr(0, colon));
  }
  std::sort(rows.begin(), rows.end());
  std::vector<std::string> lines;
  for (const auto& [ns, key] : rows) {
    const std::size_t sep = key.find('\x01');
    // ts_ns|provider|name (the fields column is compared elsewhere)
    lines.push_back(std::to_string(ns) + "|" + key.substr(sep + 1) + "|" + key.substr(0, sep));
  }
  return lines;
}

std::vector<std::string> ExpectLossByHost(const std::vector<std::string>& dirs,
                                          const std::vector<std::string>& hosts) {
  struct Loss {
    std::uint64_t discarded = 0, overwritten = 0, lost_packets = 0;
    std::int64_t first = INT64_MAX, last = INT64_MIN;
  };
  std::map<std::string, Loss> by_host;
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    auto trace = Open(dirs[i]);
    if (!trace) return {};
    Loss& l = by_host[hosts[i]];
    for (const reader::StreamInfo& s : trace->streams()) {
      l.discarded += s.DiscardedOnly();
      l.overwritten += s.events_overwritten;
      l.lost_packets += s.lost_packets;
      l.first = std::min(l.first, trace->ToEpochNs(s.timestamp_begin));
      l.last = std::max(l.last, trace->ToEpochNs(s.timestamp_end));
    }
  }
  std::vector<std::string> lines;
  for (const auto& [host, l] : by_host)
    lines.push_back(host + "|" + std::to_string(l.discarded) + "|" +
                    std::to_string(l.overwritten) + "|" + std::to_string(l.lost_packets) + "|" +
                    std::to_string(l.first) + "|" + std::to_string(l.last));
  return lines;
}

namespace {

std::string DocsSql() {
  const char* src = std::getenv("HUSH_SOURCE_DIR");
  return reader::test::ReadFile(std::string(src != nullptr ? src : ".") + "/docs/sql.md");
}

// Each ```sql block: its "-- query: NAME (ENGINE)" lines and the SQL after them.
struct DocBlock {
  std::vector<std::pair<std::string, std::string>> names;  // (name, engine)
  std::string sql;
};
std::vector<DocBlock> DocBlocks() {
  std::vector<DocBlock> blocks;
  static const std::regex kName(R"(^-- query: (\w+) \((\w+)\)$)");
  bool in = false;
  for (const std::string& line : reader::test::SplitLines(DocsSql())) {
    if (!in && line == "```sql") {
      in = true;
      blocks.emplace_back();
    } else if (in && line == "```") {
      in = false;
    } else if (in) {
      std::smatch m;
      if (std::regex_match(line, m, kName))
        blocks.back().names.emplace_back(m[1], m[2]);
      else
        blocks.back().sql += line + "\n";
    }
  }
  return blocks;
}

}  // namespace

std::string DocQuery(const std::string& name, const std::string& engine) {
  for (const DocBlock& b : DocBlocks())
    for (const auto& [n, e] : b.names)
      if (n == name && e == engine) return b.sql;
  return "";
}

std::vector<std::string> DocQueryNames() {
  std::vector<std::string> names;
  for (const DocBlock& b : DocBlocks())
    for (const auto& [n, e] : b.names)
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  return names;
}

std::string WriteLossyTrace(const std::string& parent) {
  using reader::test::Le;
  using reader::test::PacketBuilder;
  const std::string events =
      "event { name = \"s:a\"; id = 0; stream_id = 0; model.emf.uri = \"event\";\n"
      "  fields := struct { uint32_t x; }; };\n";
  const std::string dir = parent + "/lossy";
  ::mkdir(dir.c_str(), 0700);
  reader::test::WriteFile(dir + "/metadata", reader::test::SynthMetadata(events));
  // stream_0: 5 then 12 lost in total, 7 of them overwritten; stream_1: a gap in packet_seq_num.
  reader::test::WriteFile(
      dir + "/stream_0",
      PacketBuilder(10).Lost(5, 0).Compact(0, 11, Le(std::uint32_t{1})).Build() +
          PacketBuilder(20).Seq(1).Lost(12, 7).Compact(0, 21, Le(std::uint32_t{2})).Build());
  reader::test::WriteFile(
      dir + "/stream_1",
      PacketBuilder(30, 4343).Compact(0, 31, Le(std::uint32_t{3})).Build() +
          PacketBuilder(40, 4343).Seq(3).Lost(2, 0).Compact(0, 41, Le(std::uint32_t{4})).Build());
  return dir;
}

// --- clickhouse-server ---

namespace {

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

}  // namespace

ClickHouseServer::ClickHouseServer() : dir_(reader::test::MakeTempDir("clickhouse")) {
  http_port_ = FreePort();
  tcp_port_ = FreePort();
}

ClickHouseServer::~ClickHouseServer() {
  Kill();
  reader::test::RemoveTree(dir_);
}

std::string ClickHouseServer::url() const {
  return "http://127.0.0.1:" + std::to_string(http_port_) + "/";
}

bool ClickHouseServer::Start(std::string* error) {
  const std::string server = "/usr/sbin/clickhouse-server";
  if (::access(server.c_str(), X_OK) != 0) {
    *error = "clickhouse-server is not installed (" + server + "): scripts/setup.sh "
             "installs the Debian packages clickhouse-server and clickhouse-client";
    return false;
  }
  reader::test::WriteFile(
      dir_ + "/config.xml",
      "<?xml version=\"1.0\"?>\n<yandex>\n"
      " <logger><level>warning</level><log>" + dir_ + "/server.log</log><errorlog>" + dir_ +
          "/error.log</errorlog><console>0</console></logger>\n"
          " <http_port>" + std::to_string(http_port_) + "</http_port>\n"
          " <tcp_port>" + std::to_string(tcp_port_) + "</tcp_port>\n"
          " <listen_host>127.0.0.1</listen_host>\n"
          " <path>" + dir_ + "/data/</path>\n <tmp_path>" + dir_ + "/tmp/</tmp_path>\n"
          " <users_config>users.xml</users_config>\n <default_profile>default</default_profile>\n"
          " <default_database>default</default_database>\n"
          " <mark_cache_size>5368709120</mark_cache_size>\n" + extra_ + "</yandex>\n");
  reader::test::WriteFile(
      dir_ + "/users.xml",
      "<?xml version=\"1.0\"?>\n<yandex>\n <profiles><default></default></profiles>\n"
      " <users><default><password></password><networks><ip>127.0.0.1</ip></networks>"
      "<profile>default</profile><quota>default</quota></default></users>\n"
      " <quotas><default></default></quotas>\n</yandex>\n");
  const std::string config = "--config-file=" + dir_ + "/config.xml";
  std::vector<char*> argv = {const_cast<char*>(server.c_str()), const_cast<char*>(config.c_str()),
                             nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string out = dir_ + "/stdout";
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  const int rc = ::posix_spawn(&pid_, server.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    *error = "cannot start clickhouse-server: " + std::string(std::strerror(rc));
    return false;
  }
  ClickHouseUrl url;
  std::string parse_error;
  ParseClickHouseUrl(this->url(), &url, &parse_error);
  ClickHouseClient client(url, 5);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string result, query_error;
  while (std::chrono::steady_clock::now() < deadline) {
    if (client.Query("SELECT 1", &result, &query_error) && result == "1\n") return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  *error = "clickhouse-server on port " + std::to_string(http_port_) +
           " did not answer: " + query_error + "\n--- its output:\n" +
           reader::test::ReadFile(out) + "\n--- error log:\n" +
           reader::test::ReadFile(dir_ + "/error.log");
  Kill();
  return false;
}

void ClickHouseServer::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

std::string ClickHouseServer::Query(const std::string& sql, const std::string& database) const {
  ClickHouseUrl url;
  std::string error, result;
  ParseClickHouseUrl(this->url(), &url, &error);
  url.base += "?database=" + database;
  ClickHouseClient client(url, 60);
  if (!client.Query(sql, &result, &error)) {
    ADD_FAILURE() << "query failed: " << sql << "\n" << error;
    return "";
  }
  return result;
}

}  // namespace hush::sql::test
