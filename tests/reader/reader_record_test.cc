// (a) A trace recorded in-process with the public API, read back value by value and in order.
// (b) The same trace through the babeltrace2 CLI, compared event by event with the reader.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <span>
#include <thread>

#include <hushtrace/hushtrace.h>
#include <hushtrace/session.h>

#include "hushtrace/reader.h"
#include "reader/reader_test_util.h"

enum class Color : std::int16_t { kRed = -2, kBlue = 7 };

HUSH_TRACEPOINT(rt, ints, (std::uint32_t, seq), (std::int8_t, i8), (std::int16_t, i16),
                (std::int32_t, i32), (std::int64_t, i64), (std::uint8_t, u8), (std::uint16_t, u16),
                (std::uint32_t, u32), (std::uint64_t, u64))
HUSH_TRACEPOINT(rt, misc, (std::uint32_t, seq), (bool, flag), (Color, color), (float, f32), (double, f64))
HUSH_TRACEPOINT(rt, text, (std::uint32_t, seq), (const char*, cstr), (std::string_view, view),
                (std::string, str))
HUSH_TRACEPOINT(rt, blob, (std::uint32_t, seq), (std::span<const std::byte>, data))

namespace hush::reader::test {
namespace {

constexpr std::uint32_t kSteps = 300;      // alternating between two threads
constexpr std::uint32_t kOversized = 3;    // step whose blob exceeds a sub-buffer: discarded
constexpr std::size_t kBufferSize = 256 << 10;  // 8 sub-buffers of 32 KiB per thread

std::string Hex(std::span<const std::uint8_t> b) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (std::uint8_t c : b) {
    s += kHex[c >> 4];
    s += kHex[c & 15];
  }
  return s;
}
std::string FloatText(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}
std::string Alphabet(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<char>('a' + i % 26);
  return s;
}
std::int64_t WallNs() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

ExpectedField F(std::string name, FieldType type, std::string value) {
  return ExpectedField{std::move(name), type, std::move(value)};
}

std::vector<std::uint8_t> BlobFor(std::uint32_t k) {
  std::vector<std::uint8_t> b;
  if (k == kOversized) b.resize(70000, 0x5a);
  else if (k == 10) for (int i = 0; i < 20000; ++i) b.push_back(static_cast<std::uint8_t>(i * 13));
  else if (k % 4 == 1) b = {0, 1, 2, 0xff};
  else if (k % 4 == 2) for (int i = 0; i < 300; ++i) b.push_back(static_cast<std::uint8_t>(i * 7));
  else if (k % 4 == 3) for (std::uint32_t i = 0; i < 17; ++i) b.push_back(static_cast<std::uint8_t>(k + i));
  return b;
}

// One step of the scenario, emitted by the thread whose turn it is; appends what it emitted.
void EmitStep(std::uint32_t k, std::uint32_t tid, std::vector<ExpectedEvent>* out) {
  using FT = FieldType;
  const std::int8_t i8 = k % 4 < 2 ? std::numeric_limits<std::int8_t>::min() : std::numeric_limits<std::int8_t>::max();
  const auto i16 = static_cast<std::int16_t>(-static_cast<int>(k) * 100);
  const auto i32 = static_cast<std::int32_t>(k) * 100000 - 15000000;
  const std::int64_t i64 = k == 0 ? std::numeric_limits<std::int64_t>::min()
                           : k == 2 ? std::numeric_limits<std::int64_t>::max()
                                    : -static_cast<std::int64_t>(k) * 1000000000000LL;
  const auto u8 = static_cast<std::uint8_t>(255 - k);
  const auto u16 = static_cast<std::uint16_t>(65535 - k);
  const std::uint32_t u32 = 4000000000u + k;
  const std::uint64_t u64 = k == 1 ? std::numeric_limits<std::uint64_t>::max() : std::uint64_t{k} << 40;
  HUSH_TRACE(rt, ints, k, i8, i16, i32, i64, u8, u16, u32, u64);
  out->push_back({"rt:ints", tid,
                  {F("seq", FT::kUnsigned, std::to_string(k)), F("i8", FT::kSigned, std::to_string(i8)),
                   F("i16", FT::kSigned, std::to_string(i16)), F("i32", FT::kSigned, std::to_string(i32)),
                   F("i64", FT::kSigned, std::to_string(i64)), F("u8", FT::kUnsigned, std::to_string(u8)),
                   F("u16", FT::kUnsigned, std::to_string(u16)), F("u32", FT::kUnsigned, std::to_string(u32)),
                   F("u64", FT::kUnsigned, std::to_string(u64))}});

  const bool flag = k % 3 == 0;
  const Color color = k % 2 ? Color::kRed : Color::kBlue;
  const float f32 = static_cast<float>(k) / 3.0f;
  const double f64 = k == 4 ? -0.0 : k == 6 ? std::numeric_limits<double>::infinity() : k * 1e-3 - 0.1234567890123;
  HUSH_TRACE(rt, misc, k, flag, color, f32, f64);
  out->push_back({"rt:misc", tid,
                  {F("seq", FT::kUnsigned, std::to_string(k)), F("flag", FT::kBool, flag ? "true" : "false"),
                   F("color", FT::kSigned, std::to_string(static_cast<int>(color))),
                   F("f32", FT::kFloat, FloatText(f32)), F("f64", FT::kFloat, FloatText(f64))}});
  {
    HUSH_SPAN(rt, work);
    out->push_back({"rt:work", tid, {F("phase", FT::kEnum, "begin")}});
    const double depth = k * 0.5 - 10;
    HUSH_COUNTER(rt, depth, depth);
    out->push_back({"rt:depth", tid, {F("value", FT::kFloat, FloatText(depth))}});

    const char* cstr = k % 11 == 3 ? nullptr : "c-string";
    const std::string view_storage = k % 3 == 1 ? "view-" + std::to_string(k) : std::string("ab\0cd", 5);
    std::string str, str_expected;
    switch (k % 7) {
      case 0: str = str_expected = "hello"; break;
      case 1: break;
      case 2: str = str_expected = "q\" b\\ t\t n\n c\x01 d\x7f e\xc3\xa9 ' ? \x1b \r"; break;
      case 3: str = Alphabet(2000), str_expected = Alphabet(1009) + "...[truncated]"; break;
      case 4: str = str_expected = Alphabet(1023); break;
      case 5: str = Alphabet(1024), str_expected = Alphabet(1009) + "...[truncated]"; break;
      default: str = str_expected = "x"; break;
    }
    HUSH_TRACE(rt, text, k, cstr, std::string_view(view_storage), str);
    out->push_back({"rt:text", tid,
                    {F("seq", FT::kUnsigned, std::to_string(k)),
                     F("cstr", FT::kString, cstr ? cstr : "(null)"),
                     F("view", FT::kString, view_storage.substr(0, view_storage.find('\0'))),
                     F("str", FT::kString, str_expected)}});
    if (k % 5 == 0) {
      HUSH_INSTANT(rt, tick);
      out->push_back({"rt:tick", tid, {}});
    }
  }
  out->push_back({"rt:work", tid, {F("phase", FT::kEnum, "end")}});
  const std::vector<std::uint8_t> blob = BlobFor(k);
  HUSH_TRACE(rt, blob, k, std::as_bytes(std::span<const std::uint8_t>(blob)));
  if (k != kOversized) {
    out->push_back({"rt:blob", tid, {F("seq", FT::kUnsigned, std::to_string(k)), F("data", FT::kBytes, Hex(blob))}});
  }
}

RecordedTrace* Record() {
  auto* r = new RecordedTrace();
  const std::string parent = MakeTempDir("rec");
  r->dir = parent + "/trace";
  static std::string cleanup;
  cleanup = parent;
  if (std::getenv("HUSH_READER_TEST_KEEP") == nullptr) std::atexit([] { RemoveTree(cleanup); });
  SessionOptions options;
  options.events = {"rt:*"};
  options.output_dir = r->dir;
  options.buffer_size = kBufferSize;
  r->wall_ns_before = WallNs();
  auto session = Session::Start(options, &r->error);
  if (!session) return r;
  std::mutex mu;
  std::condition_variable cv;
  std::uint32_t turn = 0;
  auto worker = [&](int t) {
    ::pthread_setname_np(::pthread_self(), t == 0 ? "rt-worker-0" : "rt-worker-1");
    r->tids[t] = static_cast<std::uint32_t>(::syscall(SYS_gettid));
    for (;;) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return turn >= kSteps || turn % 2 == static_cast<std::uint32_t>(t); });
      if (turn >= kSteps) break;
      // Gaps of >= 2^24 cycles (or ns) force extended event headers.
      if (turn == 40 || turn == 41) std::this_thread::sleep_for(std::chrono::milliseconds(40));
      EmitStep(turn, r->tids[t], &r->events);
      ++turn;
      cv.notify_all();
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  session->Stop();
  r->wall_ns_after = WallNs();
  return r;
}

std::string Canonical(const Event& e, const ExpectedField& f) {
  const auto v = e.Find(f.name);
  if (!v) return "<no field>";
  if (v->type() != f.type) return std::string("<type ") + FieldTypeName(v->type()) + ">";
  switch (f.type) {
    case FieldType::kSigned: return std::to_string(e.GetInt64(f.name).value());
    case FieldType::kUnsigned: return std::to_string(e.GetUint64(f.name).value());
    case FieldType::kBool: return e.GetBool(f.name).value() ? "true" : "false";
    case FieldType::kEnum: return std::string(v->info().LabelFor(e.GetInt64(f.name).value()));
    case FieldType::kFloat: return FloatText(e.GetDouble(f.name).value());
    case FieldType::kString: return std::string(e.GetString(f.name).value());
    case FieldType::kBytes: return Hex(e.GetBytes(f.name).value());
  }
  return "?";
}

}  // namespace

const RecordedTrace& Recorded() {
  static RecordedTrace* r = Record();
  return *r;
}

namespace {

class RecordedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const RecordedTrace& r = Recorded();
    ASSERT_EQ(r.error, "");
    std::string error;
    trace_ = Trace::Open(r.dir, &error);
    ASSERT_NE(trace_, nullptr) << error;
  }
  std::unique_ptr<Trace> trace_;
};

TEST_F(RecordedTest, MetadataDescribesEveryEventClass) {
  const Metadata& md = trace_->metadata();
  EXPECT_EQ(md.uuid.size(), 36u);
  EXPECT_GT(md.clock.freq, 0u);
  EXPECT_EQ(trace_->pid(), static_cast<std::uint32_t>(::getpid()));
  EXPECT_FALSE(trace_->procname().empty());
  EXPECT_EQ(md.Env("tracer_name"), "hushtrace");
  struct Want { const char* name; EventKind kind; std::vector<std::pair<std::string, FieldType>> fields; };
  const std::vector<Want> wants = {
      {"rt:ints", EventKind::kEvent, {{"seq", FieldType::kUnsigned}, {"i8", FieldType::kSigned}, {"i16", FieldType::kSigned},
        {"i32", FieldType::kSigned}, {"i64", FieldType::kSigned}, {"u8", FieldType::kUnsigned},
        {"u16", FieldType::kUnsigned}, {"u32", FieldType::kUnsigned}, {"u64", FieldType::kUnsigned}}},
      {"rt:misc", EventKind::kEvent, {{"seq", FieldType::kUnsigned}, {"flag", FieldType::kBool},
        {"color", FieldType::kSigned}, {"f32", FieldType::kFloat}, {"f64", FieldType::kFloat}}},
      {"rt:text", EventKind::kEvent, {{"seq", FieldType::kUnsigned}, {"cstr", FieldType::kString},
        {"view", FieldType::kString}, {"str", FieldType::kString}}},
      {"rt:blob", EventKind::kEvent, {{"seq", FieldType::kUnsigned}, {"data_length", FieldType::kUnsigned},
        {"data", FieldType::kBytes}}},
      {"rt:work", EventKind::kSpan, {{"phase", FieldType::kEnum}}},
      {"rt:depth", EventKind::kCounter, {{"value", FieldType::kFloat}}},
      {"rt:tick", EventKind::kInstant, {}},
  };
  for (const Want& w : wants) {
    const EventClass* ec = nullptr;
    for (const EventClass& c : md.events) {
      if (c.name == w.name) ec = &c;
    }
    ASSERT_NE(ec, nullptr) << w.name;
    EXPECT_EQ(md.FindById(ec->id), ec);
    EXPECT_EQ(ec->kind, w.kind) << w.name;
    ASSERT_EQ(ec->fields.size(), w.fields.size()) << w.name;
    for (std::size_t i = 0; i < w.fields.size(); ++i) {
      EXPECT_EQ(ec->fields[i].name, w.fields[i].first) << w.name;
      EXPECT_EQ(ec->fields[i].type, w.fields[i].second) << w.name << "." << w.fields[i].first;
    }
  }
  for (const EventClass& c : md.events) {
    if (c.name == "rt:blob") {
      EXPECT_TRUE(c.fields[1].hidden);
      EXPECT_EQ(c.fields[2].length_field, 1);
    }
    if (c.name == "rt:misc") {
      EXPECT_EQ(c.fields[3].size, 4u);
      EXPECT_EQ(c.fields[4].size, 8u);
    }
  }
}

TEST_F(RecordedTest, EveryValueInEmissionOrder) {
  const RecordedTrace& r = Recorded();
  EventIterator it(*trace_);
  std::size_t n = 0;
  std::uint64_t last_ts = 0;
  while (it.Next()) {
    const Event& e = it.event();
    ASSERT_LT(n, r.events.size()) << "more events than emitted";
    const ExpectedEvent& want = r.events[n];
    ASSERT_EQ(e.name(), want.name) << "event #" << n;
    ASSERT_EQ(e.tid(), want.tid) << "event #" << n;
    EXPECT_EQ(e.thread_name(), e.tid() == r.tids[0] ? "rt-worker-0" : "rt-worker-1");
    EXPECT_GE(e.timestamp(), last_ts) << "event #" << n;
    last_ts = e.timestamp();
    std::vector<std::string> visible;
    for (std::size_t i = 0; i < e.field_count(); ++i) {
      if (!e.field(i).info().hidden) visible.push_back(e.field(i).info().name);
    }
    ASSERT_EQ(visible.size(), want.fields.size()) << want.name;
    for (std::size_t i = 0; i < want.fields.size(); ++i) {
      EXPECT_EQ(visible[i], want.fields[i].name);
      EXPECT_EQ(Canonical(e, want.fields[i]), want.fields[i].value)
          << "event #" << n << " " << want.name << "." << want.fields[i].name;
    }
    // Typed getters refuse incompatible types.
    if (want.name == "rt:text") {
      EXPECT_FALSE(e.GetInt64("str").has_value());
      EXPECT_FALSE(e.GetString("seq").has_value());
      EXPECT_FALSE(e.GetDouble("nope").has_value());
    }
    ++n;
  }
  EXPECT_EQ(it.error(), "");
  EXPECT_EQ(n, r.events.size());
  EXPECT_EQ(it.events_read(), n);
}

TEST_F(RecordedTest, StreamsThreadsLossesAndClock) {
  const RecordedTrace& r = Recorded();
  EXPECT_TRUE(trace_->warnings().empty());
  ASSERT_GE(trace_->streams().size(), 2u);
  // The oversized blob was discarded and counted in its thread's stream.
  EXPECT_EQ(trace_->events_discarded(), 1u);
  EXPECT_EQ(trace_->events_overwritten(), 0u);
  std::uint64_t packets = 0;
  for (const StreamInfo& s : trace_->streams()) {
    packets += s.packets;
    EXPECT_EQ(s.lost_packets, 0u);
    EXPECT_FALSE(s.truncated);
    EXPECT_LE(s.timestamp_begin, s.timestamp_end);
  }
  EXPECT_EQ(packets, trace_->packets());
  EXPECT_GT(packets, 4u) << "the scenario should span several packets per thread";
  std::size_t found = 0;
  for (const ThreadInfo& t : trace_->threads()) {
    for (int i = 0; i < 2; ++i) {
      if (t.tid != r.tids[i]) continue;
      EXPECT_EQ(t.name, i == 0 ? "rt-worker-0" : "rt-worker-1");
      ++found;
    }
  }
  EXPECT_EQ(found, 2u);
  // Timestamps convert to wall-clock time within the recording window (1 s of slack).
  EventIterator it(*trace_);
  ASSERT_TRUE(it.Next());
  const std::int64_t first = trace_->ToEpochNs(it.event().timestamp());
  EXPECT_GT(first, r.wall_ns_before - 1000000000);
  EXPECT_LT(first, r.wall_ns_after + 1000000000);
  // The two 40 ms sleeps are visible as gaps.
  std::uint64_t prev = it.event().timestamp();
  std::int64_t max_gap = 0;
  while (it.Next()) {
    max_gap = std::max(max_gap, trace_->CyclesToNs(static_cast<std::int64_t>(it.event().timestamp() - prev)));
    prev = it.event().timestamp();
  }
  EXPECT_GE(max_gap, 35000000);
  EXPECT_LT(max_gap, 5000000000);
}

// EventIterator(trace, streams): the events of those streams alone, in time order; each stream
// read alone and all of them together give every event once.
TEST_F(RecordedTest, IteratorOverSomeStreams) {
  std::size_t total = 0;
  for (const StreamInfo& s : trace_->streams()) {
    const std::uint32_t one[] = {s.index};
    EventIterator it(*trace_, one);
    std::uint64_t prev = 0;
    while (it.Next()) {
      EXPECT_EQ(it.event().stream(), s.index);
      EXPECT_GE(it.event().timestamp(), prev);
      prev = it.event().timestamp();
      ++total;
    }
    EXPECT_EQ(it.error(), "");
  }
  EXPECT_EQ(total, Recorded().events.size());
  std::vector<std::uint32_t> all;
  for (const StreamInfo& s : trace_->streams()) all.push_back(s.index);
  all.push_back(9999);  // unknown: ignored
  EventIterator it(*trace_, all);
  std::size_t n = 0;
  while (it.Next()) ++n;
  EXPECT_EQ(n, total);
  EventIterator none(*trace_, std::span<const std::uint32_t>());
  EXPECT_FALSE(none.Next());
}

}  // namespace
}  // namespace hush::reader::test
