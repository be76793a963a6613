// `hushtrace export --format sqlite` on a trace recorded in-process: every count and a sample of
// field values against babeltrace2, the typed tables against what the reader says, and each
// query of docs/sql.md run through the sqlite3 CLI against answers computed from the reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "hushtrace/reader.h"
#include "reader/reader_test_util.h"
#include "sql/sql_test_util.h"
#include "sql/sqlite_sink.h"
#include "sql/tables.h"

namespace hush::sql::test {
namespace {

using reader::test::CommandResult;
using reader::test::RunCommand;

class SqliteExport : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(Recorded().error, "");
    ASSERT_FALSE(reader::test::HushtraceBinary().empty()) << "HUSH_BINARY_DIR is not set";
    tmp_ = reader::test::MakeTempDir("sqlite");
  }
  void TearDown() override { reader::test::RemoveTree(tmp_); }

  std::string Export(const std::string& dir, const std::string& name) {
    const std::string db = tmp_ + "/" + name;
    const CommandResult r = RunCommand(
        {reader::test::HushtraceBinary(), "export", dir, "--format", "sqlite", "-o", db});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return db;
  }
  std::vector<std::string> Sql(const std::string& db, const std::string& query) {
    const CommandResult r = RunCommand({"/usr/bin/sqlite3", "-batch", db, query});
    EXPECT_EQ(r.exit_code, 0) << query << "\n" << r.err;
    EXPECT_EQ(r.err, "") << query;
    return Lines(r.out);
  }
  std::string Scalar(const std::string& db, const std::string& query) {
    const std::vector<std::string> lines = Sql(db, query);
    return lines.size() == 1 ? lines[0] : "<" + std::to_string(lines.size()) + " lines>";
  }

  std::string tmp_;
};

TEST_F(SqliteExport, CountsAndValuesMatchBabeltrace) {
  const std::string db = Export(Recorded().dir, "trace.db");
  const BtView bt = Babeltrace(Recorded().dir);
  ASSERT_GT(bt.total, 10000u);
  std::vector<std::string> expected;
  for (const auto& [name, n] : bt.counts) expected.push_back(name + "|" + std::to_string(n));
  EXPECT_EQ(Sql(db, "SELECT provider || ':' || name, COUNT(*) FROM events GROUP BY 1 ORDER BY 1"),
            expected);
  EXPECT_EQ(Scalar(db, "SELECT events FROM processes"), std::to_string(bt.total));

  // Every app:req event: tid, id and path (quotes included) as babeltrace2 prints them.
  std::vector<std::string> req = Sql(
      db, "SELECT tid, json_extract(fields, '$.id'), json_extract(fields, '$.path') FROM events "
          "WHERE provider = 'app' AND name = 'req'");
  ExpectSameReq(req, bt);
  // Fields keep their JSON types: ratio is a number (id / 4).
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM events WHERE name = 'req' AND "
                       "json_extract(fields, '$.ratio') * 4 <> json_extract(fields, '$.id')"),
            "0");
  EXPECT_EQ(Scalar(db, "SELECT json_type(fields, '$.ratio') FROM events WHERE name = 'req' AND "
                       "json_extract(fields, '$.id') = 5 LIMIT 1"),
            "real");

  // Typed tables: one span row per begin, one counter row per sample, one sched slice per
  // switch_in; every span of a thread nests in its parent.
  const auto n = [&](const std::string& e) { return bt.counts.at(e); };
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM spans WHERE provider = 'app'"),
            std::to_string((n("app:request") + n("app:handle")) / 2));
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM spans WHERE provider = 'func'"),
            std::to_string(n("func:entry")));
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM counters WHERE name = 'app:depth'"),
            std::to_string(n("app:depth")));
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM sched_slices"), std::to_string(n("sched:switch_in")));
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM sched_slices WHERE preempted NOT IN (0, 1)"), "0");
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM spans c JOIN spans p ON c.parent_id = p.id AND "
                       "c.trace_id = p.trace_id WHERE c.depth <> p.depth + 1 OR c.tid <> p.tid OR "
                       "c.ts_ns < p.ts_ns OR c.ts_ns + c.dur_ns > p.ts_ns + p.dur_ns"),
            "0");
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM spans WHERE name = 'app:handle' AND depth <> 1"), "0");
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM spans WHERE self_ns < 0 OR self_ns > dur_ns"), "0");
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM threads WHERE name = 'sql-worker'"), "1");
  EXPECT_EQ(Scalar(db, "SELECT SUM(discarded + overwritten + lost_packets) FROM losses"), "0");
}

TEST_F(SqliteExport, DocumentedQueriesAnswerRight) {
  const std::string db = Export(Recorded().dir, "trace.db");
  const std::string lossy = WriteLossyTrace(tmp_);
  const std::string lossy_db = Export(lossy, "lossy.db");
  const std::string host = Scalar(db, "SELECT host FROM processes");
  const std::vector<std::string> names = DocQueryNames();
  ASSERT_EQ(names.size(), 4u) << "docs/sql.md: a query was added or lost; test it here";
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::string query = DocQuery(name, "sqlite");
    ASSERT_FALSE(query.empty()) << "docs/sql.md has no sqlite version of " << name;
    if (name == "span_percentiles") {
      EXPECT_EQ(Sql(db, query), ExpectSpanPercentiles(Recorded().dir, host, false));
    } else if (name == "top_self_time") {
      const std::vector<std::string> got = Sql(db, query);
      EXPECT_EQ(got.size(), 4u);  // three outer functions and the inner one
      EXPECT_EQ(got, ExpectTopSelfTime(Recorded().dir));
    } else if (name == "before_trigger") {
      std::vector<std::string> got = Sql(db, query);
      for (std::string& line : got) line = line.substr(0, line.rfind('|'));  // without fields
      const std::vector<std::string> expected = ExpectBeforeTrigger(Recorded().dir);
      EXPECT_GT(expected.size(), 10u);
      EXPECT_EQ(got, expected);
    } else if (name == "loss_by_host") {
      const std::vector<std::string> expected = ExpectLossByHost({lossy}, {"testhost"});
      EXPECT_EQ(expected.size(), 1u);
      EXPECT_EQ(Sql(lossy_db, query), expected);
      EXPECT_EQ(Sql(lossy_db, "SELECT SUM(discarded), SUM(overwritten) FROM losses"),
                std::vector<std::string>{"7|7"});
    } else {
      ADD_FAILURE() << "no expected answer for " << name;
    }
  }
}

TEST_F(SqliteExport, BadArgumentsAndUnwritableFile) {
  CommandResult r = RunCommand({reader::test::HushtraceBinary(), "export", Recorded().dir,
                                "--format", "sqlite", "-o", "-"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("sqlite needs a FILE"), std::string::npos) << r.err;
  r = RunCommand({reader::test::HushtraceBinary(), "export", Recorded().dir, "--format", "sqlite",
                  "-o", tmp_ + "/no/such/dir/x.db"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r.err;
  // An existing file is replaced, not appended to.
  const std::string db = Export(Recorded().dir, "twice.db");
  Export(Recorded().dir, "twice.db");
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM processes"), "1");
}

// Writes `dir` into the file `db` through the sink, as host `host`; "" or the error.
std::string ExportThroughSink(const std::string& dir, const std::string& db,
                              const std::string& host) {
  std::string error;
  const std::unique_ptr<reader::Trace> trace = reader::Trace::Open(dir, &error);
  if (!trace) return error;
  const std::unique_ptr<SqliteSink> sink = SqliteSink::Create(db, &error);
  if (!sink) return error;
  TraceTables tables(*trace, *sink, {host});
  reader::EventIterator it(*trace);
  bool ok = true;
  while (ok && it.Next()) ok = tables.Add(it.event());
  if (!tables.Finish() || !ok) return "rows refused";
  return sink->Commit(&error) ? "" : error;
}

// `events` is a view over event_rows, sources and event_classes (sqlite_sink.h): a second trace
// written into the same file keeps the numbers the first one gave (its classes are found again,
// its host is a source of its own), and every row reads back through the view.
TEST_F(SqliteExport, TwoTracesInOneFileShareTheEventClasses) {
  const std::string db = tmp_ + "/two.db";
  ASSERT_EQ(ExportThroughSink(Recorded().dir, db, "host-a"), "");
  const std::string classes = Scalar(db, "SELECT COUNT(*) FROM event_classes");
  const std::string names = Scalar(db, "SELECT COUNT(*) FROM names");
  ASSERT_EQ(ExportThroughSink(Recorded().dir, db, "host-b"), "");
  const BtView bt = Babeltrace(Recorded().dir);
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM event_classes"), classes)
      << "the second trace's classes were numbered again";
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM names"), names)
      << "the second trace's span and counter names were numbered again";
  EXPECT_EQ(Sql(db, "SELECT host, COUNT(*) FROM events GROUP BY host ORDER BY host"),
            (std::vector<std::string>{"host-a|" + std::to_string(bt.total),
                                      "host-b|" + std::to_string(bt.total)}));
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM sources"), "2");
  // The views have the columns of schema.h, in its order.
  for (const TableId id : {TableId::kEvents, TableId::kSpans, TableId::kCounters}) {
    std::string columns;
    for (const Column& c : Table(id).columns) columns += (columns.empty() ? "" : ",") + std::string(c.name);
    EXPECT_EQ(Scalar(db, std::string("SELECT group_concat(name) FROM pragma_table_info('") +
                             Table(id).name + "')"),
              columns);
  }
  // Both traces' spans and counters read back through the views, per host.
  EXPECT_EQ(Sql(db, "SELECT host, COUNT(*) FROM spans GROUP BY host ORDER BY host").size(), 2u);
  EXPECT_EQ(Scalar(db, "SELECT COUNT(DISTINCT host) FROM counters"), "2");
  // A thread's time range is a range of event_rows' key, read through the view.
  const std::vector<std::string> plan = Sql(db, "EXPLAIN QUERY PLAN SELECT ts_ns FROM events WHERE tid = 1 AND ts_ns > 5");
  std::string joined;
  for (const std::string& line : plan) joined += line + "\n";
  EXPECT_NE(joined.find("SEARCH e USING PRIMARY KEY (tid=? AND ts_ns>?)"), std::string::npos)
      << joined;
  EXPECT_EQ(joined.find("SCAN e"), std::string::npos) << joined;
}

// The documented before-trigger query reads one range of event_rows for the thread's 10 ms (its
// subqueries, which find the trigger by name, scan): not the whole table.
TEST_F(SqliteExport, BeforeTriggerReadsARangeOfTheThread) {
  const std::string db = Export(Recorded().dir, "plan.db");
  const std::vector<std::string> plan =
      Sql(db, "EXPLAIN QUERY PLAN " + DocQuery("before_trigger", "sqlite"));
  std::vector<std::string> top;  // the outer query's steps: "|--X" or "`--X", not nested
  for (const std::string& line : plan)
    if (line.rfind("|--", 0) == 0 || line.rfind("`--", 0) == 0) top.push_back(line.substr(3));
  std::string joined;
  for (const std::string& line : plan) joined += line + "\n";
  EXPECT_NE(std::find(top.begin(), top.end(),
                      "SEARCH e USING PRIMARY KEY (tid=? AND ts_ns>? AND ts_ns<?)"),
            top.end())
      << joined;
  for (const std::string& step : top) EXPECT_EQ(step.rfind("SCAN", 0), std::string::npos) << joined;
}

// The spans of one name are found through names and spans_by_name, not by scanning span_rows.
TEST_F(SqliteExport, SpansOfOneNameUseTheIndex) {
  const std::string db = Export(Recorded().dir, "names.db");
  const std::string name = Scalar(db, "SELECT name FROM spans ORDER BY ts_ns LIMIT 1");
  const std::vector<std::string> plan =
      Sql(db, "EXPLAIN QUERY PLAN SELECT dur_ns FROM spans WHERE name = '" + name + "'");
  std::string joined;
  for (const std::string& line : plan) joined += line + "\n";
  EXPECT_NE(joined.find("USING INDEX spans_by_name (name=?)"), std::string::npos) << joined;
  EXPECT_EQ(joined.find("SCAN"), std::string::npos) << joined;
  EXPECT_EQ(Scalar(db, "SELECT COUNT(*) FROM spans WHERE name = '" + name + "'"),
            Scalar(db, "SELECT COUNT(*) FROM spans WHERE name || '' = '" + name + "'"));
}

// The export writes the events thread by thread (StreamsByThread, AddEventRow) and the timeline
// in time order: the same rows as TraceTables::Add() in time order gives.
TEST_F(SqliteExport, ThreadByThreadGivesTheRowsOfTimeOrder) {
  const std::string db = Export(Recorded().dir, "by_thread.db");
  const std::string host = Scalar(db, "SELECT host FROM processes");
  const std::string in_order = tmp_ + "/in_order.db";
  ASSERT_EQ(ExportThroughSink(Recorded().dir, in_order, host), "");
  for (const char* query :
       {"SELECT * FROM events ORDER BY tid, ts_ns, name, fields",
        "SELECT * FROM spans ORDER BY id", "SELECT * FROM counters ORDER BY ts_ns, name, value",
        "SELECT * FROM processes", "SELECT * FROM threads ORDER BY tid",
        "SELECT * FROM losses ORDER BY stream", "SELECT * FROM sched_slices ORDER BY tid, ts_ns"}) {
    SCOPED_TRACE(query);
    const std::vector<std::string> got = Sql(db, query);
    EXPECT_EQ(got, Sql(in_order, query));
    if (std::string(query).find("events") != std::string::npos) {
      EXPECT_GT(got.size(), 10000u);
    }
  }
  std::string error;
  const std::unique_ptr<reader::Trace> trace = reader::Trace::Open(Recorded().dir, &error);
  ASSERT_TRUE(trace) << error;
  std::vector<std::uint32_t> streams;
  for (const std::vector<std::uint32_t>& group : StreamsByThread(*trace))
    streams.insert(streams.end(), group.begin(), group.end());
  std::sort(streams.begin(), streams.end());
  std::vector<std::uint32_t> all;
  for (const reader::StreamInfo& s : trace->streams()) all.push_back(s.index);
  EXPECT_EQ(streams, all) << "every stream in one group";
}

TEST_F(SqliteExport, RefusesAFileWhoseEventsIsATable) {
  const std::string db = tmp_ + "/old.db";
  Sql(db, "CREATE TABLE events (trace_id TEXT)");
  const std::string error = ExportThroughSink(Recorded().dir, db, "h");
  EXPECT_NE(error.find("table `events` of an earlier hushtrace"), std::string::npos) << error;
  const std::string spans = tmp_ + "/spans.db";
  Sql(spans, "CREATE TABLE spans (trace_id TEXT)");
  EXPECT_NE(ExportThroughSink(Recorded().dir, spans, "h").find("table `spans` of an earlier"),
            std::string::npos);
  // event_rows of the layout before its key (a rowid table without seq): refused too.
  const std::string rowid = tmp_ + "/rowid.db";
  Sql(rowid, "CREATE TABLE event_rows (source INTEGER, pid INTEGER, tid INTEGER, ts_ns INTEGER, "
             "class INTEGER, fields TEXT)");
  EXPECT_NE(ExportThroughSink(Recorded().dir, rowid, "h").find("event_rows"), std::string::npos);
}

}  // namespace
}  // namespace hush::sql::test
