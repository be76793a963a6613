// `hushtrace export` on a trace recorded in-process: spans, instants, counters, events with
// hostile strings, scheduler events (sched:*) and function entries/exits (func:*), emitted with
// HUSH_TRACEPOINTs of the names and fields the scheduler and function tracers use.
//   * Perfetto: decoded by `protoc --decode` with perfetto_subset.proto (written from the public
//     schema), parsed from protoc's text output and checked field by field.
//   * Chrome JSON: parsed by Python's json module (check_chrome_json.py), nesting checked there,
//     the summary compared here.
#include <gtest/gtest.h>
#include <hushtrace/hushtrace.h>
#include <hushtrace/session.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "export/text_escape.h"
#include "export/timeline.h"
#include "hushtrace/reader.h"
#include "reader/reader_test_util.h"

HUSH_TRACEPOINT(ex, text, (std::uint32_t, seq), (const char*, s))
HUSH_TRACEPOINT(ex, blob, (std::span<const std::byte>, data))
HUSH_TRACEPOINT(sched, switch_in, (std::uint32_t, tid), (std::uint32_t, cpu))
HUSH_TRACEPOINT(sched, switch_out, (std::uint32_t, tid), (std::uint8_t, preempted),
                (std::uint32_t, cpu))
HUSH_TRACEPOINT(sched, thread_start, (std::uint32_t, tid))
HUSH_TRACEPOINT(sched, thread_exit, (std::uint32_t, tid))
HUSH_TRACEPOINT(sched, thread_name, (std::uint32_t, tid), (const char*, name))
HUSH_TRACEPOINT(func, entry, (std::uint64_t, addr))
HUSH_TRACEPOINT(func, exit, (std::uint64_t, addr))

namespace hush::exporter {
namespace {

using reader::test::CommandResult;
using reader::test::RunCommand;

constexpr int kIters = 12;
constexpr int kWorkerIters = 5;
constexpr std::uint32_t kGhost = 3999999;  // a thread known only from scheduler events

// Strings the program writes, and what a valid-UTF-8 output must hold instead.
struct HostileString {
  const char* in;
  const char* out;
};
constexpr HostileString kStrings[] = {
    {"plain", "plain"},
    {"q\"uote", "q\"uote"},
    {"back\\slash", "back\\slash"},
    {"ctl\x01\x1f\n\t\r", "ctl\x01\x1f\n\t\r"},
    {"del\x7f", "del\x7f"},
    {"caf\xc3\xa9", "caf\xc3\xa9"},
    {"bad\xff\xfe", "bad\xef\xbf\xbd\xef\xbf\xbd"},
    {"trunc\xc3", "trunc\xef\xbf\xbd"},
    {"overlong\xc0\xaf", "overlong\xef\xbf\xbd\xef\xbf\xbd"},
    {"surrogate\xed\xa0\x80", "surrogate\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
    {"emoji\xf0\x9f\x98\x80", "emoji\xf0\x9f\x98\x80"},
    {"big\xf4\x90\x80\x80", "big\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
};
constexpr int kStringCount = sizeof kStrings / sizeof kStrings[0];
constexpr char kMainName[] = "main \"q\"\\";

// A byte field whose hex text (20,000 characters) makes every enclosing protobuf message longer
// than 16 KiB: the encoder's path that widens a reserved length.
constexpr std::size_t kBlobSize = 10000;
std::vector<std::byte> Blob() {
  std::vector<std::byte> b(kBlobSize);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>(i * 7 + 3);
  return b;
}
std::string BlobHex() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (const std::byte b : Blob()) {
    s += kHex[static_cast<unsigned>(b) >> 4];
    s += kHex[static_cast<unsigned>(b) & 15];
  }
  return s;
}

std::uint32_t Gettid() { return static_cast<std::uint32_t>(::syscall(SYS_gettid)); }
std::uint64_t FuncAddr(int i) { return 0x401000 + static_cast<std::uint64_t>(i % 3) * 0x10; }

struct Recording {
  std::string parent, dir;
  std::uint32_t main_tid = 0, worker_tid = 0;
  std::uint32_t pid = 0;
  std::string error;
};

const Recording& Recorded() {
  static const Recording* rec = [] {
    auto* r = new Recording;
    r->parent = reader::test::MakeTempDir("export");
    r->dir = r->parent + "/trace";
    r->pid = static_cast<std::uint32_t>(::getpid());
    SessionOptions options;
    options.events = {"ex:*", "sched:*", "func:*"};
    options.output_dir = r->dir;
    auto session = Session::Start(options, &r->error);
    if (!session) return r;
    r->main_tid = Gettid();
    HUSH_TRACE(sched, thread_name, r->main_tid, kMainName);
    for (int i = 0; i < kIters; ++i) {
      HUSH_TRACE(sched, switch_in, r->main_tid, static_cast<std::uint32_t>(i % 2));
      {
        HUSH_SPAN(ex, outer);
        HUSH_COUNTER(ex, depth, i * 1.5);
        {
          HUSH_SPAN(ex, inner);
          HUSH_INSTANT(ex, mark);
          HUSH_TRACE(func, entry, FuncAddr(i));
          HUSH_TRACE(func, entry, std::uint64_t{0xabc});
          HUSH_TRACE(func, exit, std::uint64_t{0xabc});
          HUSH_TRACE(func, exit, FuncAddr(i));
        }
      }
      HUSH_TRACE(ex, text, static_cast<std::uint32_t>(i), kStrings[i % kStringCount].in);
      HUSH_TRACE(sched, switch_out, r->main_tid, static_cast<std::uint8_t>(i % 2),
                 static_cast<std::uint32_t>(i % 2));
    }
    const std::vector<std::byte> blob = Blob();
    HUSH_TRACE(ex, blob, std::span<const std::byte>(blob));
    HUSH_TRACE(func, exit, std::uint64_t{0xdead});  // no entry: dropped
    HUSH_TRACE(sched, thread_start, kGhost);
    HUSH_TRACE(sched, thread_name, kGhost, "ghost");
    HUSH_TRACE(sched, switch_in, kGhost, std::uint32_t{1});
    HUSH_TRACE(sched, switch_out, kGhost, std::uint8_t{0}, std::uint32_t{1});
    HUSH_TRACE(sched, switch_out, kGhost, std::uint8_t{0},
               std::uint32_t{1});  // no switch_in: dropped
    HUSH_TRACE(sched, thread_exit, kGhost);
    std::thread worker([r] {
      ::pthread_setname_np(::pthread_self(), "exp-worker");
      r->worker_tid = Gettid();
      for (int i = 0; i < kWorkerIters; ++i) {
        HUSH_SPAN(ex, outer);
        HUSH_SPAN(ex, inner);
      }
      HUSH_SPAN(ex, outer);
      HUSH_INSTANT(ex, mark);
    });
    worker.join();
    HUSH_INSTANT(ex, mark);
    session->Stop();
    return r;
  }();
  return *rec;
}

// --- a parser for protoc's text format ---

struct Node {
  std::multimap<std::string, std::string> values;  // scalar fields, unescaped
  std::multimap<std::string, std::unique_ptr<Node>> children;
  std::vector<std::pair<std::string, const Node*>> order;  // children in order
  std::string Get(const std::string& key) const {
    auto it = values.find(key);
    return it == values.end() ? "" : it->second;
  }
  bool Has(const std::string& key) const {
    return values.count(key) != 0 || children.count(key) != 0;
  }
  const Node* Child(const std::string& key) const {
    auto it = children.find(key);
    return it == children.end() ? nullptr : it->second.get();
  }
  std::vector<const Node*> All(const std::string& key) const {
    std::vector<const Node*> v;
    for (const auto& [k, n] : order) {
      if (k == key) v.push_back(n);
    }
    return v;
  }
};

// C escapes of protoc's text output: \n \t \r \" \' \\ \NNN (octal) \xHH.
std::string Unescape(const std::string& q) {
  std::string s;
  for (std::size_t i = 1; i + 1 < q.size(); ++i) {
    if (q[i] != '\\') {
      s += q[i];
      continue;
    }
    const char c = q[++i];
    if (c >= '0' && c <= '7') {
      int v = 0;
      for (int k = 0; k < 3 && i < q.size() - 1 && q[i] >= '0' && q[i] <= '7'; ++k, ++i)
        v = v * 8 + (q[i] - '0');
      --i;
      s += static_cast<char>(v);
    } else if (c == 'x') {
      s += static_cast<char>(std::stoi(q.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      s += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
    }
  }
  return s;
}

std::unique_ptr<Node> ParseText(const std::string& text) {
  auto root = std::make_unique<Node>();
  std::vector<Node*> stack{root.get()};
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t b = line.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    line = line.substr(b);
    if (line == "}") {
      stack.pop_back();
      continue;
    }
    if (line.size() > 2 && line.compare(line.size() - 2, 2, " {") == 0) {
      const std::string key = line.substr(0, line.size() - 2);
      auto node = std::make_unique<Node>();
      Node* raw = node.get();
      stack.back()->order.emplace_back(key, raw);
      stack.back()->children.emplace(key, std::move(node));
      stack.push_back(raw);
      continue;
    }
    const std::size_t colon = line.find(": ");
    std::string value = line.substr(colon + 2);
    if (!value.empty() && value[0] == '"') value = Unescape(value);
    stack.back()->values.emplace(line.substr(0, colon), value);
  }
  return root;
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = reader::test::HushtraceBinary();
    if (bin_.empty()) GTEST_SKIP() << "HUSH_BINARY_DIR is not set (run through ctest)";
    const Recording& r = Recorded();
    ASSERT_EQ(r.error, "");
    ASSERT_NE(r.worker_tid, 0u);
  }
  CommandResult Export(const std::string& format, const std::string& out) {
    return RunCommand({bin_, "export", Recorded().dir, "--format", format, "-o", out});
  }
  std::string bin_;
};

std::uint64_t ThreadUuid(std::uint32_t tid) { return std::uint64_t{tid} << 3 | 1; }

TEST_F(ExportTest, PerfettoDecodesFieldByField) {
  const Recording& r = Recorded();
  const std::string out = r.parent + "/trace.pftrace";
  const CommandResult res = Export("perfetto", out);
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const std::string proto_dir = std::string(std::getenv("HUSH_SOURCE_DIR")) + "/tests/export";
  const CommandResult dec =
      RunCommand({"/bin/sh", "-c",
                  "protoc --proto_path='" + proto_dir +
                      "' --decode=perfetto.protos.Trace perfetto_subset.proto < '" + out + "'"});
  ASSERT_EQ(dec.exit_code, 0)
      << "protoc (Debian package protobuf-compiler, scripts/setup.sh) failed: " << dec.err;
  ASSERT_EQ(dec.err, "");
  const auto root = ParseText(dec.out);
  const auto packets = root->All("packet");
  ASSERT_GT(packets.size(), 10u);

  // Packet 1: the process, and the start of the sequence's incremental state.
  const Node* first = packets[0];
  EXPECT_EQ(first->Get("trusted_packet_sequence_id"), "1");
  EXPECT_EQ(first->Get("sequence_flags"), "1");
  const Node* proc = first->Child("track_descriptor");
  ASSERT_NE(proc, nullptr);
  const std::string proc_uuid = proc->Get("uuid");
  ASSERT_NE(proc->Child("process"), nullptr);
  EXPECT_EQ(proc->Child("process")->Get("pid"), std::to_string(r.pid));
  EXPECT_FALSE(proc->Child("process")->Get("process_name").empty());

  // Then the threads of the trace, before any event.
  std::map<std::string, std::vector<std::string>> thread_names;  // uuid -> names in order
  std::map<std::string, std::string> track_parent, track_name, counter_tracks;
  std::size_t i = 1;
  for (; i < packets.size() && packets[i]->Child("track_descriptor") != nullptr &&
         packets[i]->Child("track_descriptor")->Child("thread") != nullptr;
       ++i) {
    const Node* td = packets[i]->Child("track_descriptor");
    EXPECT_EQ(td->Get("parent_uuid"), proc_uuid);
    EXPECT_EQ(td->Child("thread")->Get("pid"), std::to_string(r.pid));
    EXPECT_EQ(td->Get("uuid"), std::to_string(ThreadUuid(static_cast<std::uint32_t>(
                                   std::stoul(td->Child("thread")->Get("tid"))))));
    thread_names[td->Get("uuid")].push_back(td->Child("thread")->Get("thread_name"));
  }
  EXPECT_EQ(thread_names.count(std::to_string(ThreadUuid(r.main_tid))), 1u);
  ASSERT_EQ(thread_names.count(std::to_string(ThreadUuid(r.worker_tid))), 1u);
  EXPECT_EQ(thread_names[std::to_string(ThreadUuid(r.worker_tid))].back(), "exp-worker");

  // Events: interned names defined before use, slices nested per track, values as recorded.
  std::map<std::string, std::string> names, categories, arg_names;  // iid -> text
  std::map<std::string, std::vector<std::string>> stacks, begun;    // track uuid -> names
  std::map<std::string, int> types;
  std::vector<std::string> counter_values, texts, cpus, preempted, text_times, blobs;
  std::uint64_t last_ts = 0;
  for (; i < packets.size(); ++i) {
    const Node* p = packets[i];
    EXPECT_EQ(p->Get("trusted_packet_sequence_id"), "1");
    if (const Node* td = p->Child("track_descriptor")) {
      EXPECT_FALSE(p->Has("track_event"));
      if (const Node* th = td->Child("thread")) {
        thread_names[td->Get("uuid")].push_back(th->Get("thread_name"));
      } else {
        track_parent[td->Get("uuid")] = td->Get("parent_uuid");
        track_name[td->Get("uuid")] = td->Get("name");
        if (td->Child("counter") != nullptr) counter_tracks[td->Get("uuid")] = td->Get("name");
      }
      continue;
    }
    const Node* te = p->Child("track_event");
    ASSERT_NE(te, nullptr) << "packet " << i;
    EXPECT_EQ(p->Get("sequence_flags"), "2");
    const std::uint64_t ts = std::stoull(p->Get("timestamp"));
    EXPECT_GE(ts, last_ts);
    last_ts = ts;
    if (const Node* in = p->Child("interned_data")) {
      for (const Node* n : in->All("event_names"))
        EXPECT_TRUE(names.emplace(n->Get("iid"), n->Get("name")).second);
      for (const Node* n : in->All("event_categories"))
        EXPECT_TRUE(categories.emplace(n->Get("iid"), n->Get("name")).second);
      for (const Node* n : in->All("debug_annotation_names"))
        EXPECT_TRUE(arg_names.emplace(n->Get("iid"), n->Get("name")).second);
    }
    const std::string type = te->Get("type");
    ++types[type];
    const std::string track = te->Get("track_uuid");
    std::map<std::string, std::string> args;
    for (const Node* a : te->All("debug_annotations")) {
      ASSERT_EQ(arg_names.count(a->Get("name_iid")), 1u)
          << "annotation name used before it was interned";
      for (const auto& [k, v] : a->values) {
        if (k != "name_iid") args[arg_names[a->Get("name_iid")]] = v;
      }
    }
    if (type == "TYPE_SLICE_BEGIN" || type == "TYPE_INSTANT") {
      ASSERT_EQ(names.count(te->Get("name_iid")), 1u) << "name used before it was interned";
      ASSERT_EQ(categories.count(te->Get("category_iids")), 1u);
    }
    const std::string name = names[te->Get("name_iid")];
    if (type == "TYPE_SLICE_BEGIN") {
      stacks[track].push_back(name);
      begun[track].push_back(name);
      if (name == "running") cpus.push_back(args["cpu"]);
    } else if (type == "TYPE_SLICE_END") {
      ASSERT_FALSE(stacks[track].empty()) << "SLICE_END without a begin on track " << track;
      if (stacks[track].back() == "running" && args.count("preempted"))
        preempted.push_back(args["preempted"]);
      stacks[track].pop_back();
    } else if (type == "TYPE_COUNTER") {
      ASSERT_EQ(counter_tracks.count(track), 1u) << "counter track not declared before use";
      counter_values.push_back(te->Get("double_counter_value"));
    } else if (type == "TYPE_INSTANT" && name == "ex:text") {
      EXPECT_EQ(categories[te->Get("category_iids")], "ex");
      texts.push_back(args["s"]);
      text_times.push_back(p->Get("timestamp"));
    } else if (type == "TYPE_INSTANT" && name == "ex:blob") {
      blobs.push_back(args["data"]);
    } else if (type == "TYPE_INSTANT" && name == "thread_start") {
      EXPECT_EQ(track, std::to_string(ThreadUuid(kGhost)));
      EXPECT_EQ(args["tid"], std::to_string(kGhost));
    }
  }
  for (const auto& [track, stack] : stacks)
    EXPECT_TRUE(stack.empty()) << "unclosed slices on " << track;

  // Thread names: the main thread renamed by sched:thread_name; the ghost declared, then named.
  EXPECT_EQ(thread_names[std::to_string(ThreadUuid(r.main_tid))].back(), kMainName);
  ASSERT_EQ(thread_names[std::to_string(ThreadUuid(kGhost))].size(), 2u);
  EXPECT_EQ(thread_names[std::to_string(ThreadUuid(kGhost))][0], "");
  EXPECT_EQ(thread_names[std::to_string(ThreadUuid(kGhost))][1], "ghost");

  // Slices of the main thread: spans and function calls, one stack.
  std::vector<std::string> want_main;
  for (int k = 0; k < kIters; ++k) {
    std::ostringstream hex;
    hex << "0x" << std::hex << FuncAddr(k);
    want_main.insert(want_main.end(), {"ex:outer", "ex:inner", hex.str(), "0xabc"});
  }
  EXPECT_EQ(begun[std::to_string(ThreadUuid(r.main_tid))], want_main);
  std::vector<std::string> want_worker;
  for (int k = 0; k < kWorkerIters; ++k)
    want_worker.insert(want_worker.end(), {"ex:outer", "ex:inner"});
  want_worker.push_back("ex:outer");
  EXPECT_EQ(begun[std::to_string(ThreadUuid(r.worker_tid))], want_worker);

  // Scheduler tracks: "running" children of the thread tracks.
  const std::string main_sched = std::to_string(std::uint64_t{r.main_tid} << 3 | 2);
  EXPECT_EQ(track_parent[main_sched], std::to_string(ThreadUuid(r.main_tid)));
  EXPECT_EQ(track_name[main_sched], "running");
  EXPECT_EQ(begun[main_sched], std::vector<std::string>(kIters, "running"));
  EXPECT_EQ(begun[std::to_string(std::uint64_t{kGhost} << 3 | 2)],
            std::vector<std::string>{"running"});
  ASSERT_EQ(cpus.size(), static_cast<std::size_t>(kIters + 1));
  ASSERT_EQ(preempted.size(), static_cast<std::size_t>(kIters + 1));
  for (int k = 0; k < kIters; ++k) {
    EXPECT_EQ(cpus[static_cast<std::size_t>(k)], std::to_string(k % 2));
    EXPECT_EQ(preempted[static_cast<std::size_t>(k)], k % 2 ? "true" : "false");
  }

  // Counters, event arguments, counts.
  ASSERT_EQ(counter_tracks.size(), 1u);
  EXPECT_EQ(counter_tracks.begin()->second, "ex:depth");
  ASSERT_EQ(counter_values.size(), static_cast<std::size_t>(kIters));
  for (int k = 0; k < kIters; ++k) {
    std::ostringstream v;
    v << k * 1.5;
    EXPECT_EQ(counter_values[static_cast<std::size_t>(k)], v.str());
  }
  ASSERT_EQ(texts.size(), static_cast<std::size_t>(kIters));
  for (int k = 0; k < kIters; ++k)
    EXPECT_EQ(texts[static_cast<std::size_t>(k)], kStrings[k % kStringCount].out) << k;
  // Timestamps: ns since the epoch, the same as `hushtrace dump --absolute` prints.
  const CommandResult dump = RunCommand({bin_, "dump", "--absolute", "-e", "ex:text", r.dir});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  const std::vector<std::string> dump_lines = reader::test::SplitLines(dump.out);
  ASSERT_EQ(dump_lines.size(), text_times.size());
  for (std::size_t k = 0; k < dump_lines.size(); ++k) {
    const std::string& l = dump_lines[k];
    EXPECT_EQ(l.substr(1, l.find('.') - 1) + l.substr(l.find('.') + 1, 9), text_times[k]) << l;
  }
  const int main_slices = kIters * 4, worker_slices = kWorkerIters * 2 + 1,
            sched_slices = kIters + 1;
  EXPECT_EQ(types["TYPE_SLICE_BEGIN"], main_slices + worker_slices + sched_slices);
  EXPECT_EQ(types["TYPE_SLICE_END"], main_slices + worker_slices + sched_slices);
  ASSERT_EQ(blobs.size(), 1u);
  EXPECT_EQ(blobs[0], BlobHex());
  // mark: kIters + worker + main's last; ex:text: kIters; ex:blob; thread_start, thread_exit.
  EXPECT_EQ(types["TYPE_INSTANT"], kIters + 2 + kIters + 1 + 2);
  EXPECT_EQ(types["TYPE_COUNTER"], kIters);
  EXPECT_NE(res.err.find("2 slice ends without a begin were dropped"), std::string::npos)
      << res.err;
}

TEST_F(ExportTest, ChromeJsonParsesAndNests) {
  const Recording& r = Recorded();
  const std::string out = r.parent + "/trace.json";
  const CommandResult res = Export("chrome", out);
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const std::string script =
      std::string(std::getenv("HUSH_SOURCE_DIR")) + "/tests/export/check_chrome_json.py";
  const CommandResult chk = RunCommand({"/usr/bin/env", "python3", script, out});
  ASSERT_EQ(chk.exit_code, 0) << chk.err;
  const std::vector<std::string> lines = reader::test::SplitLines(chk.out);
  auto has = [&](const std::string& l) {
    return std::find(lines.begin(), lines.end(), l) != lines.end();
  };
  auto with_prefix = [&](const std::string& prefix) {
    std::vector<std::string> v;
    for (const std::string& l : lines) {
      if (l.rfind(prefix, 0) == 0) v.push_back(l.substr(prefix.size()));
    }
    return v;
  };
  const std::string pid = std::to_string(r.pid), sched_pid = std::to_string(r.pid | 0x40000000);
  const std::string main_t = pid + " " + std::to_string(r.main_tid),
                    worker_t = pid + " " + std::to_string(r.worker_tid);
  EXPECT_TRUE(has("thread " + main_t + " " + kMainName)) << chk.out;
  EXPECT_TRUE(has("thread " + worker_t + " exp-worker")) << chk.out;
  EXPECT_TRUE(has("thread " + pid + " " + std::to_string(kGhost) + " ghost")) << chk.out;
  EXPECT_TRUE(has("thread " + sched_pid + " " + std::to_string(kGhost) + " ghost running"))
      << chk.out;

  std::string want_main;
  for (int k = 0; k < kIters; ++k) {
    std::ostringstream hex;
    hex << "0x" << std::hex << FuncAddr(k);
    want_main += std::string(k ? "," : "") + "ex:outer,ex:inner," + hex.str() + ",0xabc";
  }
  EXPECT_TRUE(has("slices " + main_t + " " + want_main)) << chk.out;
  std::string want_sched;
  for (int k = 0; k < kIters; ++k) want_sched += std::string(k ? "," : "") + "running";
  EXPECT_TRUE(has("slices " + sched_pid + " " + std::to_string(r.main_tid) + " " + want_sched))
      << chk.out;

  std::string want_counter;
  for (int k = 0; k < kIters; ++k) {
    std::ostringstream v;
    v << k * 1.5;
    std::string s = v.str();
    if (s.find('.') == std::string::npos)
      s = std::to_string(k * 3 / 2);  // python prints ints as ints
    want_counter += std::string(k ? "," : "") + s;
  }
  EXPECT_TRUE(has("counter " + pid + " ex:depth " + want_counter)) << chk.out;

  const std::vector<std::string> strings = with_prefix("string " + main_t + " ex:text s ");
  ASSERT_EQ(strings.size(), static_cast<std::size_t>(kIters));
  for (int k = 0; k < kIters; ++k) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (const char c : std::string(kStrings[k % kStringCount].out)) {
      hex += kHex[static_cast<unsigned char>(c) >> 4];
      hex += kHex[static_cast<unsigned char>(c) & 15];
    }
    EXPECT_EQ(strings[static_cast<std::size_t>(k)], hex) << k;
  }
  const int slices = kIters * 4 + kWorkerIters * 2 + 1 + kIters + 1;
  EXPECT_TRUE(has("phase B " + std::to_string(slices))) << chk.out;
  EXPECT_TRUE(has("phase E " + std::to_string(slices))) << chk.out;
  EXPECT_TRUE(has("phase C " + std::to_string(kIters))) << chk.out;
  EXPECT_TRUE(has("phase i " + std::to_string(kIters + 2 + kIters + 1 + 2))) << chk.out;
  const std::string blob_hex = "<" + BlobHex() + ">";
  std::string blob_utf8_hex;
  for (const char c : blob_hex) {
    static constexpr char kHex[] = "0123456789abcdef";
    blob_utf8_hex += kHex[static_cast<unsigned char>(c) >> 4];
    blob_utf8_hex += kHex[static_cast<unsigned char>(c) & 15];
  }
  EXPECT_EQ(with_prefix("string " + main_t + " ex:blob data "),
            std::vector<std::string>{blob_utf8_hex});
  EXPECT_EQ(with_prefix("end_args " + sched_pid + " " + std::to_string(r.main_tid) + " ").size(),
            static_cast<std::size_t>(kIters));
}

TEST_F(ExportTest, BadArgumentsAndMissingTrace) {
  EXPECT_EQ(RunCommand({bin_, "export", Recorded().dir, "-o", "/dev/null"}).exit_code, 2);
  EXPECT_EQ(
      RunCommand({bin_, "export", Recorded().dir, "--format", "svg", "-o", "/dev/null"}).exit_code,
      2);
  EXPECT_EQ(RunCommand({bin_, "export", Recorded().dir, "--format", "chrome"}).exit_code, 2);
  const CommandResult missing =
      RunCommand({bin_, "export", "/nonexistent/trace", "--format", "chrome", "-o", "/dev/null"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/trace"), std::string::npos) << missing.err;
  const CommandResult unwritable = RunCommand(
      {bin_, "export", Recorded().dir, "--format", "perfetto", "-o", "/nonexistent/dir/out"});
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_NE(unwritable.err.find("cannot create"), std::string::npos) << unwritable.err;
}

// A trace whose writer died mid-packet: the complete events are exported, the file is valid and
// every slice is closed; the reader's warning is passed on.
TEST_F(ExportTest, TruncatedTraceStillGivesValidFiles) {
  const Recording& r = Recorded();
  const std::string copy = r.parent + "/truncated";
  reader::test::CopyTree(r.dir, copy);
  const std::string stream = copy + "/stream_0";
  const std::string bytes = reader::test::ReadFile(stream);
  ASSERT_GT(bytes.size(), 400u);
  reader::test::WriteFile(stream, std::string_view(bytes).substr(0, bytes.size() - 300));
  const CommandResult chrome =
      RunCommand({bin_, "export", copy, "--format", "chrome", "-o", copy + ".json"});
  ASSERT_EQ(chrome.exit_code, 0) << chrome.err;
  EXPECT_NE(chrome.err.find("warning: "), std::string::npos) << chrome.err;
  EXPECT_NE(chrome.err.find("truncated"), std::string::npos) << chrome.err;
  const std::string script =
      std::string(std::getenv("HUSH_SOURCE_DIR")) + "/tests/export/check_chrome_json.py";
  const CommandResult chk = RunCommand({"/usr/bin/env", "python3", script, copy + ".json"});
  EXPECT_EQ(chk.exit_code, 0) << chk.err;
  const CommandResult pf =
      RunCommand({bin_, "export", copy, "--format", "perfetto", "-o", copy + ".pftrace"});
  ASSERT_EQ(pf.exit_code, 0) << pf.err;
  const std::string proto_dir = std::string(std::getenv("HUSH_SOURCE_DIR")) + "/tests/export";
  const CommandResult dec =
      RunCommand({"/bin/sh", "-c",
                  "protoc --proto_path='" + proto_dir +
                      "' --decode=perfetto.protos.Trace perfetto_subset.proto < '" + copy +
                      ".pftrace' > /dev/null"});
  EXPECT_EQ(dec.exit_code, 0) << dec.err;
}

TEST(EpochNsConverterTest, MatchesTheReaderOnEveryEventAndOnJumps) {
  const Recording& r = Recorded();
  ASSERT_EQ(r.error, "");
  std::string error;
  auto trace = reader::Trace::Open(r.dir, &error);
  ASSERT_NE(trace, nullptr) << error;
  EpochNsConverter clock(*trace);
  reader::EventIterator it(*trace);
  int n = 0;
  while (it.Next()) {
    ASSERT_EQ(clock.Convert(it.event().timestamp()), trace->ToEpochNs(it.event().timestamp()));
    ++n;
  }
  EXPECT_GT(n, 100);
  for (const std::uint64_t c :
       {std::uint64_t{1000}, std::uint64_t{5}, std::uint64_t{1} << 40, (std::uint64_t{1} << 40) + 1,
        (std::uint64_t{1} << 40) + 2596000001, std::uint64_t{0}, std::uint64_t{7}}) {
    EXPECT_EQ(clock.Convert(c), trace->ToEpochNs(c)) << c;
  }
}

TEST(TextEscapeTest, JsonEscapesAndRepairsUtf8) {
  EXPECT_EQ(JsonString("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(JsonString("\xff"), "\"\xef\xbf\xbd\"");
  EXPECT_EQ(JsonString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xf0\x9f\x98"));
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));
  EXPECT_FALSE(IsValidUtf8("\xc1\xbf"));
  for (const HostileString& h : kStrings) EXPECT_EQ(ToValidUtf8(h.in), h.out) << h.in;
}

}  // namespace
}  // namespace hush::exporter

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  hush::reader::test::RemoveTree(hush::exporter::Recorded().parent);
  return rc;
}
