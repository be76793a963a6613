// `hushtrace ship` into a real clickhouse-server (Debian's 18.16) that the test starts on
// loopback with a temporary config, data directory and free ports:
//   * every count and a sample of field values against babeltrace2; shipping twice adds nothing;
//   * the ClickHouse queries of docs/sql.md against answers computed from the reader;
//   * the server killed mid-ship and restarted: nothing lost, nothing doubled;
//   * the agent (--watch) killed mid-ship and restarted: the same; SIGTERM stops it between two
//     chunks; its size bound drops the oldest traces and says so;
//   * two servers as the two shards of a cluster, two agents with different host names shipping
//     at once: the Distributed tables see both;
//   * the agent picks up each triggered snapshot of a flight recorder as it completes, while the
//     session still runs, and ships each once (a trace of its own in the tables).
// Where the server cannot start, the tests fail and say why (no silent skip).
#include <gtest/gtest.h>
#include <hushtrace/hushtrace.h>
#include <hushtrace/session.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/files.h"
#include "reader/reader_test_util.h"
#include "sql/sql_test_util.h"

extern char** environ;

namespace hush::sql::test {
namespace {

using reader::test::CommandResult;
using reader::test::RunCommand;

const char* const kTables[] = {"processes", "threads",      "events", "spans",
                               "counters",  "sched_slices", "losses"};

// A child process (the shipper), stderr to a file; killed (SIGKILL) if still running at the end.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& log) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0600);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Child() { Kill(SIGKILL); }
  bool Running() {
    if (pid_ <= 0) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    return pid_ > 0;
  }
  void Kill(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    Wait();
  }
  int Wait() {
    if (pid_ > 0) {
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      pid_ = -1;
    }
    return exit_code_;
  }

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

// Polls `done` every 50 ms for up to `seconds`.
template <typename F>
bool WaitFor(F done, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

class ClickHouseShip : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ClickHouseServer;
    start_error_ = new std::string;
    if (!server_->Start(start_error_)) started_ = false;
  }
  static void TearDownTestSuite() {
    delete server_;
    delete start_error_;
  }
  void SetUp() override {
    ASSERT_TRUE(started_) << "clickhouse-server did not start: " << *start_error_;
    ASSERT_EQ(Recorded().error, "");
    ASSERT_FALSE(reader::test::HushtraceBinary().empty()) << "HUSH_BINARY_DIR is not set";
    tmp_ = reader::test::MakeTempDir("chship");
  }
  void TearDown() override { reader::test::RemoveTree(tmp_); }

  static std::string To(const std::string& db) { return server_->url() + db; }
  CommandResult Ship(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {reader::test::HushtraceBinary(), "ship"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv);
  }
  std::vector<std::string> Q(const std::string& sql, const std::string& db) {
    return Lines(server_->Query(sql, db));
  }
  // Rows of each table for `host`, and whether any (trace_id, seq) is there twice.
  std::map<std::string, std::string> Counts(const std::string& db, const std::string& host) {
    std::map<std::string, std::string> counts;
    for (const char* t : kTables) {
      const std::vector<std::string> r =
          Q(std::string("SELECT count(), count() - uniqExact(trace_id, seq) FROM ") + t +
                " WHERE host = '" + host + "'",
            db);
      counts[t] = r.empty() ? "" : r[0];
    }
    return counts;
  }

  // Waits (30 s at most) until the first events of `host` are in `db`.
  bool WaitForRows(const std::string& db, const std::string& host) {
    return WaitFor(
        [&] {
          // The shipper may not have created the table yet.
          if (Q("SELECT count() FROM system.tables WHERE database = '" + db +
                    "' AND name = 'events'",
                "default") != std::vector<std::string>{"1"})
            return false;
          const std::vector<std::string> n =
              Q("SELECT count() FROM events WHERE host = '" + host + "'", db);
          return !n.empty() && n[0] != "0";
        },
        30);
  }

  static ClickHouseServer* server_;
  static std::string* start_error_;
  static bool started_;
  std::string tmp_;
};
ClickHouseServer* ClickHouseShip::server_ = nullptr;
std::string* ClickHouseShip::start_error_ = nullptr;
bool ClickHouseShip::started_ = true;

TEST_F(ClickHouseShip, CountsAndValuesMatchBabeltraceAndShippingTwiceAddsNothing) {
  CommandResult r = Ship({Recorded().dir, "--to", To("fleet1"), "--host", "alpha",
                          "--chunk-rows", "4096"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("0 already there"), std::string::npos) << r.err;
  const BtView bt = Babeltrace(Recorded().dir);
  ASSERT_GT(bt.total, 10000u);
  std::vector<std::string> expected;
  for (const auto& [name, n] : bt.counts) expected.push_back(name + "|" + std::to_string(n));
  EXPECT_EQ(Q("SELECT concat(provider, ':', name) AS n, count() FROM events GROUP BY n ORDER BY n",
              "fleet1"),
            expected);
  EXPECT_EQ(Q("SELECT events, host FROM processes", "fleet1"),
            std::vector<std::string>{std::to_string(bt.total) + "|alpha"});
  std::vector<std::string> req =
      Q("SELECT tid, visitParamExtractUInt(fields, 'id') AS id, visitParamExtractString(fields, "
        "'path') AS p FROM events WHERE provider = 'app' AND name = 'req' ORDER BY tid, id, p",
        "fleet1");
  ExpectSameReq(req, bt);
  EXPECT_EQ(Q("SELECT count() FROM spans WHERE provider = 'func'", "fleet1"),
            std::vector<std::string>{std::to_string(bt.counts.at("func:entry"))});
  EXPECT_EQ(Q("SELECT count() FROM sched_slices", "fleet1"),
            std::vector<std::string>{std::to_string(bt.counts.at("sched:switch_in"))});

  const std::map<std::string, std::string> before = Counts("fleet1", "alpha");
  for (const auto& [table, c] : before) EXPECT_EQ(c.substr(c.find('|')), "|0") << table;
  r = Ship({Recorded().dir, "--to", To("fleet1"), "--host", "alpha", "--chunk-rows", "4096"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("0 chunks sent"), std::string::npos) << r.err;
  EXPECT_EQ(Counts("fleet1", "alpha"), before);
}

TEST_F(ClickHouseShip, DocumentedQueriesAnswerRight) {
  const std::string lossy = WriteLossyTrace(tmp_);
  for (const auto& [dir, host] : {std::pair{Recorded().dir, std::string("alpha")},
                                  std::pair{lossy, std::string("beta")}}) {
    const CommandResult r = Ship({dir, "--to", To("fleet2"), "--host", host});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::vector<std::string> names = DocQueryNames();
  ASSERT_EQ(names.size(), 4u) << "docs/sql.md: a query was added or lost; test it here";
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::string query = DocQuery(name, "clickhouse");
    ASSERT_FALSE(query.empty()) << "docs/sql.md has no clickhouse version of " << name;
    std::vector<std::string> got = Q(query, "fleet2");
    if (name == "span_percentiles") {
      EXPECT_EQ(got, ExpectSpanPercentiles(Recorded().dir, "alpha", true));
    } else if (name == "top_self_time") {
      EXPECT_EQ(got.size(), 4u);
      EXPECT_EQ(got, ExpectTopSelfTime(Recorded().dir));
    } else if (name == "before_trigger") {
      for (std::string& line : got) line = line.substr(0, line.rfind('|'));
      const std::vector<std::string> expected = ExpectBeforeTrigger(Recorded().dir);
      EXPECT_GT(expected.size(), 10u);
      EXPECT_EQ(got, expected);
    } else if (name == "loss_by_host") {
      EXPECT_EQ(got, ExpectLossByHost({Recorded().dir, lossy}, {"alpha", "beta"}));
    } else {
      ADD_FAILURE() << "no expected answer for " << name;
    }
  }
}

TEST_F(ClickHouseShip, ServerKilledMidShipLosesAndDoublesNothing) {
  // The reference: the same trace shipped undisturbed.
  ASSERT_EQ(Ship({Recorded().dir, "--to", To("fleet3"), "--host", "ref"}).exit_code, 0);
  const std::map<std::string, std::string> expected = Counts("fleet3", "ref");
  const std::string log = tmp_ + "/ship.log";
  // Small chunks, paced (about 4 s for the trace), and retries that outlast a restart.
  Child ship({reader::test::HushtraceBinary(), "ship", Recorded().dir, "--to", To("fleet3"),
              "--host", "crash", "--chunk-rows", "500", "--rows-per-s", "15000", "--retries",
              "12"},
             log);
  ASSERT_TRUE(WaitForRows("fleet3", "crash"));
  ASSERT_TRUE(ship.Running()) << "the ship finished before the kill:\n"
                              << reader::test::ReadFile(log);
  server_->Kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  std::string error;
  ASSERT_TRUE(server_->Start(&error)) << error;
  EXPECT_EQ(ship.Wait(), 0) << reader::test::ReadFile(log);
  const std::string text = reader::test::ReadFile(log);
  EXPECT_NE(text.find("retrying"), std::string::npos) << text;
  EXPECT_EQ(Counts("fleet3", "crash"), expected) << text;
}

std::string StateOf(const std::string& watch) {
  return reader::test::ReadFile(watch + "/.hushtrace-ship-state");
}

TEST_F(ClickHouseShip, AgentKilledMidShipAndRestartedLosesAndDoublesNothing) {
  ASSERT_EQ(Ship({Recorded().dir, "--to", To("fleet4"), "--host", "ref"}).exit_code, 0);
  const std::map<std::string, std::string> expected = Counts("fleet4", "ref");
  const std::string watch = tmp_ + "/watch";
  ::mkdir(watch.c_str(), 0700);
  reader::test::CopyTree(Recorded().dir, watch + "/t1");
  const std::string log = tmp_ + "/agent.log";
  const std::vector<std::string> agent = {reader::test::HushtraceBinary(), "ship", "--watch",
                                          watch, "--to", To("fleet4"), "--host", "agent",
                                          "--interval", "1", "--chunk-rows", "500"};
  {
    std::vector<std::string> paced = agent;
    paced.insert(paced.end(), {"--rows-per-s", "15000"});
    Child first(paced, log);
    ASSERT_TRUE(WaitForRows("fleet4", "agent"));
    ASSERT_TRUE(first.Running()) << reader::test::ReadFile(log);
    first.Kill(SIGKILL);
  }
  EXPECT_EQ(StateOf(watch), "");  // killed before it finished t1
  Child second(agent, log);
  ASSERT_TRUE(WaitFor([&] { return StateOf(watch) == "shipped t1\n"; }, 60))
      << reader::test::ReadFile(log);
  second.Kill(SIGTERM);
  EXPECT_EQ(Counts("fleet4", "agent"), expected) << reader::test::ReadFile(log);
  EXPECT_NE(reader::test::ReadFile(log).find("already there"), std::string::npos);
}

TEST_F(ClickHouseShip, AgentStopsBetweenChunksOnSigterm) {
  const std::string watch = tmp_ + "/watch";
  ::mkdir(watch.c_str(), 0700);
  reader::test::CopyTree(Recorded().dir, watch + "/t1");
  const std::string log = tmp_ + "/agent.log";
  Child agent({reader::test::HushtraceBinary(), "ship", "--watch", watch, "--to", To("fleet7"),
               "--host", "stopper", "--chunk-rows", "500", "--rows-per-s", "5000"},
              log);
  ASSERT_TRUE(WaitForRows("fleet7", "stopper"));
  ASSERT_TRUE(agent.Running());
  const auto start = std::chrono::steady_clock::now();
  agent.Kill(SIGTERM);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(agent.Wait(), 0);
  const std::string text = reader::test::ReadFile(log);
  EXPECT_NE(text.find("stopped by a signal"), std::string::npos) << text;
  EXPECT_EQ(StateOf(watch), "");  // not finished: the next run ships the rest
}

TEST_F(ClickHouseShip, AgentSizeBoundDropsTheOldestAndSaysSo) {
  const std::string watch = tmp_ + "/watch";
  ::mkdir(watch.c_str(), 0700);
  std::uint64_t size = 0;
  for (const char* name : {"old", "mid", "new"}) {
    const std::string dir = watch + "/" + name;
    reader::test::CopyTree(Recorded().dir, dir);
    size = 0;
    for (const char* f : {"metadata", "stream_0", "stream_1"}) {
      struct stat st;
      if (::stat((dir + "/" + f).c_str(), &st) == 0) size += static_cast<std::uint64_t>(st.st_size);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // distinct mtimes
    reader::test::WriteFile(dir + "/metadata", reader::test::ReadFile(dir + "/metadata"));
  }
  const CommandResult r =
      Ship({"--watch", watch, "--to", To("fleet5"), "--once", "--max-bytes",
            std::to_string(size + size / 2)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("dropping the oldest, old"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dropping the oldest, mid"), std::string::npos) << r.err;
  EXPECT_NE(::access((watch + "/old").c_str(), F_OK), 0);
  EXPECT_NE(::access((watch + "/mid").c_str(), F_OK), 0);
  EXPECT_EQ(StateOf(watch), "shipped new\n");
  EXPECT_EQ(Q("SELECT count() FROM processes", "fleet5"), std::vector<std::string>{"1"});
}

// Two servers, the two shards of the cluster "fleet"; two agents with different host names,
// each shipping into its own server at the same time: the Distributed tables of either server
// see both hosts.
TEST_F(ClickHouseShip, TwoShardClusterFleetQuerySeesBothHosts) {
  ClickHouseServer second;
  const std::string cluster = [&] {
    std::string xml = " <remote_servers><fleet>\n";
    for (const int port : {server_->tcp_port(), second.tcp_port()})
      xml += "  <shard><replica><host>127.0.0.1</host><port>" + std::to_string(port) +
             "</port></replica></shard>\n";
    return xml + " </fleet></remote_servers>\n";
  }();
  second.set_extra_config(cluster);
  std::string error;
  ASSERT_TRUE(second.Start(&error)) << error;
  server_->Kill();  // the suite's server, restarted with the cluster in its config
  server_->set_extra_config(cluster);
  ASSERT_TRUE(server_->Start(&error)) << error;

  std::vector<std::unique_ptr<Child>> agents;
  const std::vector<std::pair<std::string, std::string>> hosts = {
      {"east", server_->url() + "fleet6"}, {"west", second.url() + "fleet6"}};
  for (const auto& [host, url] : hosts) {
    const std::string watch = tmp_ + "/" + host;
    ::mkdir(watch.c_str(), 0700);
    reader::test::CopyTree(Recorded().dir, watch + "/t");
    agents.push_back(std::make_unique<Child>(
        std::vector<std::string>{reader::test::HushtraceBinary(), "ship", "--watch", watch,
                                 "--to", url, "--host", host, "--cluster", "fleet", "--once"},
        tmp_ + "/" + host + ".log"));
  }
  for (std::size_t i = 0; i < agents.size(); ++i)
    EXPECT_EQ(agents[i]->Wait(), 0) << reader::test::ReadFile(tmp_ + "/" + hosts[i].first + ".log");
  const std::string events = Q("SELECT count() FROM events", "fleet6")[0];
  const std::vector<std::string> expected = {"east|1|" + events, "west|1|" + events};
  // Each server holds its own host; the fleet query over the Distributed tables sees both.
  EXPECT_EQ(Lines(second.Query("SELECT host FROM processes", "fleet6")),
            std::vector<std::string>{"west"});
  for (const ClickHouseServer* s : {static_cast<const ClickHouseServer*>(server_),
                                    static_cast<const ClickHouseServer*>(&second)})
    EXPECT_EQ(Lines(s->Query("SELECT host, uniqExact(trace_id), count() FROM events_all "
                             "GROUP BY host ORDER BY host",
                             "fleet6")),
              expected);
  EXPECT_EQ(Q("SELECT host, count() FROM spans_all WHERE provider = 'func' GROUP BY host "
              "ORDER BY host",
              "fleet6")
                .size(),
            2u);
}

// The shipped names of the state file (`shipped NAME` lines).
std::set<std::string> ShippedNames(const std::string& watch) {
  std::set<std::string> names;
  for (const std::string& line : reader::test::SplitLines(StateOf(watch))) {
    if (line.rfind("shipped ", 0) == 0) names.insert(line.substr(8));
  }
  return names;
}

std::size_t SnapshotsIn(const std::set<std::string>& names) {
  std::size_t n = 0;
  for (const std::string& name : names) n += name.rfind("rec/snapshots/", 0) == 0 ? 1 : 0;
  return n;
}

// A flight recorder (a session of this process) under the watched directory: each span of
// chship:slow longer than 5 ms triggers a snapshot, DIR/rec/snapshots/<UTC>-<n>. The agent ships
// each one while the session still runs (the next slow span waits for it), then the recorder's
// own trace once the session stopped; each is a trace of its own in the tables, and a second
// agent run ships nothing again.
TEST_F(ClickHouseShip, AgentShipsEachSnapshotAsItCompletes) {
  const std::string watch = tmp_ + "/watch";
  ::mkdir(watch.c_str(), 0700);
  const std::string log = tmp_ + "/agent.log";
  Child agent({reader::test::HushtraceBinary(), "ship", "--watch", watch, "--to", To("fleet8"),
               "--host", "snap", "--interval", "1"},
              log);
  SessionOptions options;
  options.events = {"chship:*"};
  options.mode = Mode::kFlight;
  options.buffer_size = 1 << 20;
  options.output_dir = watch + "/rec";
  options.snapshot_on = {"chship:slow>5ms"};
  options.snapshot_interval_ms = 1;
  std::string error;
  std::unique_ptr<Session> session = Session::Start(options, &error);
  ASSERT_TRUE(session) << error;
  for (std::size_t round = 1; round <= 3; ++round) {
    for (int i = 0; i < 200; ++i) HUSH_SPAN(chship, slow);
    {
      HUSH_SPAN(chship, slow);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(WaitFor([&] { return SnapshotsIn(ShippedNames(watch)) == round; }, 30))
        << "round " << round << ": " << StateOf(watch) << reader::test::ReadFile(log);
    EXPECT_EQ(::access(hush::testsupport::RingPath(watch + "/rec", 0).c_str(), F_OK), 0);  // the session still runs
  }
  session->Stop();
  EXPECT_EQ(session->Stats().snapshots_triggered, 3u);
  session.reset();
  EXPECT_TRUE(WaitFor([&] { return ShippedNames(watch).count("rec") == 1; }, 30))
      << StateOf(watch) << reader::test::ReadFile(log);
  agent.Kill(SIGTERM);
  EXPECT_EQ(ShippedNames(watch).size(), 4u) << StateOf(watch);

  // Four traces: the recorder's and its three snapshots, each with its slow span, once.
  EXPECT_EQ(Q("SELECT count(), uniqExact(trace_id), countIf(trace_id LIKE '%/snapshot/%') FROM "
              "processes WHERE host = 'snap'",
              "fleet8"),
            std::vector<std::string>{"4|4|3"});
  EXPECT_EQ(Q("SELECT count() FROM (SELECT trace_id FROM spans WHERE host = 'snap' AND "
              "trace_id LIKE '%/snapshot/%' AND name = 'chship:slow' AND dur_ns >= 20000000 "
              "GROUP BY trace_id)",
              "fleet8"),
            std::vector<std::string>{"3"});
  const std::map<std::string, std::string> before = Counts("fleet8", "snap");
  for (const auto& [table, c] : before) EXPECT_EQ(c.substr(c.find('|')), "|0") << table;
  // Again: everything is in the state file, nothing is sent.
  const CommandResult again = Ship({"--watch", watch, "--to", To("fleet8"), "--host", "snap", "--once"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err.find("chunks sent"), std::string::npos) << again.err;
  EXPECT_EQ(Counts("fleet8", "snap"), before);
  // The recorder's own directory watched: its snapshots are DIR/snapshots/NAME.
  const CommandResult direct =
      Ship({"--watch", watch + "/rec", "--to", To("fleet9"), "--host", "rec", "--once"});
  EXPECT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(Q("SELECT count() FROM processes WHERE trace_id LIKE '%/snapshot/%'", "fleet9"),
            std::vector<std::string>{"3"});
}

// A session that has recorded nothing yet has no ring file, only its metadata: the agent must
// still take its trace for one being written (the session's lock on the directory, docs/format.md
// section 1) and ship it only once the session has stopped, with the event it recorded meanwhile.
TEST_F(ClickHouseShip, AgentWaitsForASessionThatHasRecordedNothingYet) {
  const std::string watch = tmp_ + "/watch";
  ::mkdir(watch.c_str(), 0700);
  SessionOptions options;
  options.events = {"chship:*"};
  options.output_dir = watch + "/live";
  std::string error;
  std::unique_ptr<Session> session = Session::Start(options, &error);
  ASSERT_TRUE(session) << error;
  ASSERT_EQ(::access((watch + "/live/metadata").c_str(), F_OK), 0);
  ASSERT_NE(::access(hush::testsupport::RingPath(watch + "/live", 0).c_str(), F_OK), 0) << "no event yet: no ring";
  const CommandResult early = Ship({"--watch", watch, "--to", To("fleet10"), "--host", "live", "--once"});
  EXPECT_EQ(early.exit_code, 0) << early.err;
  EXPECT_EQ(StateOf(watch), "") << "shipped while its session runs";
  { HUSH_SPAN(chship, slow); }
  session->Stop();
  const CommandResult done = Ship({"--watch", watch, "--to", To("fleet10"), "--host", "live", "--once"});
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(StateOf(watch), "shipped live\n");
  EXPECT_EQ(Q("SELECT count() FROM spans WHERE host = 'live' AND name = 'chship:slow'", "fleet10"),
            std::vector<std::string>{"1"});
}

TEST_F(ClickHouseShip, BadArgumentsFailBeforeAnythingRuns) {
  const std::string bin = reader::test::HushtraceBinary();
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {Recorded().dir},
           {Recorded().dir, "--to", "ftp://x/db"},
           {Recorded().dir, "--to", To("bad-name")},
           {tmp_, "--to", To("db")},
           {Recorded().dir, "--to", To("db"), "--chunk-rows", "0"},
           {"--watch", tmp_ + "/nope", "--to", To("db")},
           {Recorded().dir, "--to", To("db"), "--once"},
           {Recorded().dir, "--to", To("db"), "--cluster", "a-b"}}) {
    const CommandResult r = Ship(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << "\n" << r.err;
  }
  // A database that does not exist yet is created on first use.
  const CommandResult r = Ship({Recorded().dir, "--to", server_->url() + "new_db"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Q("SELECT count() FROM processes", "new_db"), std::vector<std::string>{"1"});
  // An error the server answers (not a transport failure) is reported at once, not retried.
  const CommandResult denied =
      Ship({Recorded().dir, "--to", server_->url() + "system", "--retries", "20"});
  EXPECT_EQ(denied.exit_code, 1) << denied.err;
  EXPECT_EQ(denied.err.find("retrying"), std::string::npos) << denied.err;
}

}  // namespace
}  // namespace hush::sql::test
