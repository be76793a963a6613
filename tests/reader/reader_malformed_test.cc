// (c) Malformed and edge-case inputs: errors name the file (and byte offset), never crash or hang;
// a truncated last packet yields the events before the damage plus a warning. Synthetic streams
// also pin the decoding rules of docs/format.md (timestamp reconstruction, merge order, counts).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <tuple>
#include <utility>

#include "hushtrace/reader.h"
#include "reader/reader_test_util.h"

namespace hush::reader::test {
namespace {

const std::string kEvents =
    "event { name = \"s:a\"; id = 0; stream_id = 0; loglevel = 13; model.emf.uri = \"event\";\n"
    "  fields := struct { uint32_t x; }; };\n"
    "event { name = \"s:str\"; id = 1; stream_id = 0; model.emf.uri = \"event\";\n"
    "  fields := struct { string { encoding = UTF8; } s; }; };\n"
    "event { name = \"s:seq\"; id = 2; stream_id = 0; model.emf.uri = \"event\";\n"
    "  fields := struct { uint32_t _b_length; uint8_t b[_b_length]; }; };\n"
    "event { name = \"s:outer\"; id = 3; stream_id = 0; model.emf.uri = \"span\";\n"
    "  fields := struct { enum : uint8_t { begin = 0, end = 1 } phase; }; };\n"
    "event { name = \"s:ctr\"; id = 4; stream_id = 0; model.emf.uri = \"counter\";\n"
    "  fields := struct { floating_point { exp_dig = 11; mant_dig = 53; align = 8; } value; }; };\n"
    "event { name = \"s:inner\"; id = 5; stream_id = 0; model.emf.uri = \"span\";\n"
    "  fields := struct { enum : uint8_t { begin = 0, end = 1 } phase; }; };\n"
    "event { name = \"s:big\"; id = 300; stream_id = 0; model.emf.uri = \"instant\";\n"
    "  fields := struct { }; };\n";

std::unique_ptr<Trace> OpenOrFail(const std::string& dir) {
  std::string error;
  auto t = Trace::Open(dir, &error);
  EXPECT_NE(t, nullptr) << error;
  return t;
}

struct Seen {
  std::string name;
  std::uint64_t ts;
  std::uint32_t stream;
};
// Reads every event; returns the iterator's error.
std::string ReadAll(const Trace& t, std::vector<Seen>* out) {
  EventIterator it(t);
  while (it.Next()) out->push_back({it.event().name(), it.event().timestamp(), it.event().stream()});
  return it.error();
}

std::string OpenError(const std::string& dir) {
  std::string error;
  auto t = Trace::Open(dir, &error);
  EXPECT_EQ(t, nullptr) << "opened although it should not";
  return error;
}

// A private copy of the recorded trace.
class RecordedCopy {
 public:
  RecordedCopy() : parent_(MakeTempDir("copy")), dir_(parent_ + "/trace") {
    const RecordedTrace& r = Recorded();
    if (r.error.empty()) CopyTree(r.dir, dir_);
  }
  ~RecordedCopy() { RemoveTree(parent_); }
  const std::string& dir() const { return dir_; }
  std::string stream(int n) const { return dir_ + "/stream_" + std::to_string(n); }

 private:
  std::string parent_, dir_;
};

// Sizes of the packets of a stream file, from their content_size.
std::vector<std::uint64_t> PacketSizes(const std::string& data) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t off = 0; off + 112 <= data.size();) {
    std::uint64_t bits;
    std::memcpy(&bits, data.data() + off + 48, 8);
    sizes.push_back(bits / 8);
    off += bits / 8;
  }
  return sizes;
}

TEST(ReaderMalformed, EmptyDirectoryNamesTheMetadataFile) {
  TempTrace t("", {});
  const std::string error = OpenError(t.dir());
  EXPECT_NE(error.find(t.dir() + "/metadata"), std::string::npos) << error;
}

TEST(ReaderMalformed, MissingMetadataWithStreams) {
  TempTrace t("", {PacketBuilder(10).Build()});
  const std::string error = OpenError(t.dir());
  EXPECT_NE(error.find(t.dir() + "/metadata"), std::string::npos) << error;
}

TEST(ReaderMalformed, MissingOrNonDirectoryPath) {
  TempTrace t(SynthMetadata(kEvents), {});
  std::string error = OpenError(t.dir() + "/nope");
  EXPECT_NE(error.find(t.dir() + "/nope"), std::string::npos) << error;
  error = OpenError(t.dir() + "/metadata");
  EXPECT_NE(error.find("not a directory"), std::string::npos) << error;
}

TEST(ReaderMalformed, GarbageMetadata) {
  std::string garbage;
  std::mt19937 rng(7);
  for (int i = 0; i < 4096; ++i) garbage += static_cast<char>(rng());
  for (const std::string& text : {garbage, std::string("/* CTF 1.8 */\n") + garbage,
                                  std::string("hello world\n"), std::string()}) {
    TempTrace t(text.empty() ? std::string(" ") : text, {});
    const std::string error = OpenError(t.dir());
    EXPECT_NE(error.find(t.dir() + "/metadata"), std::string::npos) << error;
    EXPECT_NE(error.find("byte "), std::string::npos) << error;
  }
}

TEST(ReaderMalformed, MetadataErrorsNameFileLineAndByte) {
  const std::string good = SynthMetadata(kEvents);
  struct Case {
    std::string from, to, message;
  };
  const std::vector<Case> cases = {
      {"fields := struct { uint32_t x; }; };", "fields := struct { uint32_t x }; };", "expected ';'"},
      {"uint32_t x;", "uint31_t x;", "unknown type 'uint31_t'"},
      {"name = \"s:a\";", "name = \"s:a;", "unterminated string"},
      {"id = 1;", "id = 0;", "duplicate event id 0"},
      {"uint8_t b[_b_length];", "uint8_t b[_c_length];", "is not an earlier integer field"},
      {"uint32_t x;", "struct { uint32_t y; } x;", "unsupported type"},
      {"byte_order = le;", "byte_order = be;", "byte_order"},
      {"uint64_t packet_seq_num;", "uint32_t packet_seq_num;", "packet.context"},
      {"uuid = \"00112233-4455", "uuid = \"zz112233-4455", "malformed uuid"},
      {"freq = 1000000000;", "freq = 0;", "freq must be > 0"},
      {"major = 1;", "major = 2;", "unsupported CTF major"},
      {"exp_dig = 11; mant_dig = 53;", "exp_dig = 15; mant_dig = 113;", "IEEE"},
      {"stream {", "streem {", "unexpected 'streem'"},
      {"integer { size = 8; align = 8;", "integer { size = 80; align = 8;", "size must be 1 to 64"},
  };
  for (const Case& c : cases) {
    std::string text = good;
    const std::size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    TempTrace t(text, {});
    const std::string error = OpenError(t.dir());
    EXPECT_NE(error.find(t.dir() + "/metadata: line "), std::string::npos) << error;
    EXPECT_NE(error.find("(byte "), std::string::npos) << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << "case '" << c.to << "': " << error;
  }
  // Deep nesting is refused, not a stack overflow.
  std::string deep = good + "typealias ";
  for (int i = 0; i < 100000; ++i) deep += "struct { ";
  TempTrace t(deep, {});
  EXPECT_NE(OpenError(t.dir()).find("nested too deeply"), std::string::npos);
  // Nesting that does not recurse in the parser (aliases of aliases, array dimensions) is bounded
  // too, at the same 32 levels: at the limit the metadata opens, one past it is refused.
  // Each makes metadata whose deepest type has `levels` levels.
  const std::function<std::string(int)> aliases = [&](int levels) {  // A0 is 2 levels
    std::string text = good + "typealias struct { integer { size = 8; align = 8; } x; } := A0;\n";
    for (int i = 1; i <= levels - 2; ++i) {
      text +=
          "typealias struct { A" + std::to_string(i - 1) + " x; } := A" + std::to_string(i) + ";\n";
    }
    return text;
  };
  const std::function<std::string(int)> dims = [&](int levels) {
    std::string text = good + "typedef integer { size = 8; align = 8; } D";
    for (int i = 1; i < levels; ++i) text += "[1]";
    return text + ";\n";
  };
  for (const auto& [what, make, many] :
       {std::tuple{"aliases", aliases, 5000}, std::tuple{"dims", dims, 100000}}) {
    SCOPED_TRACE(what);
    TempTrace at_limit(make(32), {});
    std::string error;
    EXPECT_NE(Trace::Open(at_limit.dir(), &error), nullptr) << error;
    TempTrace past(make(33), {});
    EXPECT_NE(OpenError(past.dir()).find("types nested too deeply (more than 32 levels)"),
              std::string::npos);
    TempTrace lots(make(many), {});
    EXPECT_NE(OpenError(lots.dir()).find("types nested too deeply"), std::string::npos);
  }
}

TEST(ReaderMalformed, BadMagicInFirstAndLaterPackets) {
  RecordedCopy copy;
  std::string data = ReadFile(copy.stream(0));
  const std::vector<std::uint64_t> sizes = PacketSizes(data);
  ASSERT_GE(sizes.size(), 2u);
  std::string bad = data;
  bad[0] = 'X';
  WriteFile(copy.stream(0), bad);
  std::string error = OpenError(copy.dir());
  EXPECT_NE(error.find(copy.stream(0) + ": byte 0: bad packet magic"), std::string::npos) << error;

  bad = data;
  bad[sizes[0] + 2] ^= 0x55;
  WriteFile(copy.stream(0), bad);
  error = OpenError(copy.dir());
  EXPECT_NE(error.find(copy.stream(0) + ": byte " + std::to_string(sizes[0]) + ": bad packet magic"),
            std::string::npos) << error;
}

TEST(ReaderMalformed, TruncatedLastPacketKeepsTheEventsBeforeTheDamage) {
  RecordedCopy copy;
  auto full = OpenOrFail(copy.dir());
  ASSERT_NE(full, nullptr);
  std::vector<Seen> all;
  ASSERT_EQ(ReadAll(*full, &all), "");
  std::vector<Seen> want;
  for (const Seen& s : all) if (s.stream == 0) want.push_back(s);

  const std::string data = ReadFile(copy.stream(0));
  const std::vector<std::uint64_t> sizes = PacketSizes(data);
  ASSERT_GE(sizes.size(), 2u);
  // Cut in the middle of the last packet, then inside the last packet's header.
  const std::uint64_t last = data.size() - sizes.back();
  for (std::uint64_t cut : {last + sizes.back() / 2, last + 50, data.size() - 1}) {
    WriteFile(copy.stream(0), data.substr(0, cut));
    auto t = OpenOrFail(copy.dir());
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->warnings().size(), 1u);
    EXPECT_NE(t->warnings()[0].find(copy.stream(0) + ": byte " + std::to_string(last)), std::string::npos)
        << t->warnings()[0];
    EXPECT_TRUE(t->streams()[0].truncated);
    std::vector<Seen> got;
    EXPECT_EQ(ReadAll(*t, &got), "");
    std::vector<Seen> got0;
    for (const Seen& s : got) if (s.stream == 0) got0.push_back(s);
    EXPECT_LT(got0.size(), want.size());
    EXPECT_GT(got0.size(), 0u);
    for (std::size_t i = 0; i < got0.size(); ++i) {
      ASSERT_EQ(got0[i].name, want[i].name) << i;
      ASSERT_EQ(got0[i].ts, want[i].ts) << i;
    }
    if (cut == last + 50) {
      EXPECT_NE(t->warnings()[0].find("truncated packet header"), std::string::npos);
      EXPECT_EQ(t->streams()[0].packets, sizes.size() - 1);
    } else {
      EXPECT_EQ(t->streams()[0].packets, sizes.size());
    }
  }
}

TEST(ReaderMalformed, PacketSizesOutOfRange) {
  struct Case {
    std::uint64_t content_bits, packet_bits;
    const char* message;
  };
  const std::uint64_t real = (112 + 8) * 8;
  for (const Case& c : {Case{real, std::uint64_t{1} << 40, "packet_size"}, Case{real, 100 * 8, "packet_size"},
                        Case{real + 64, real, "content_size"}, Case{50 * 8, real, "content_size"},
                        Case{real, real + 3, "packet_size"}}) {
    TempTrace t(SynthMetadata(kEvents), {PacketBuilder(10).Compact(0, 11, Le(std::uint32_t{1})).Compact(0, 12, Le(std::uint32_t{2}))
                                             .Sizes(c.content_bits, c.packet_bits).Build()});
    const std::string error = OpenError(t.dir());
    EXPECT_NE(error.find(t.dir() + "/stream_0: byte "), std::string::npos) << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
}

TEST(ReaderMalformed, UuidMismatchAndEmptyStream) {
  std::string p = PacketBuilder(10).Compact(0, 11, Le(std::uint32_t{1})).Build();
  p[5] ^= 1;
  TempTrace bad(SynthMetadata(kEvents), {p});
  EXPECT_NE(OpenError(bad.dir()).find("stream_0: byte 4: packet uuid"), std::string::npos);
  TempTrace empty(SynthMetadata(kEvents), {""});
  auto t = OpenOrFail(empty.dir());
  ASSERT_NE(t, nullptr);
  std::vector<Seen> got;
  EXPECT_EQ(ReadAll(*t, &got), "");
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(t->streams().size(), 1u);
}

// Decoding errors stop the iteration with a message naming the file and byte offset.
TEST(ReaderMalformed, DecodingErrorsNameFileAndOffset) {
  struct Case {
    std::string packet;
    std::string message;
  };
  const std::vector<Case> cases = {
      {PacketBuilder(10).Compact(0, 11, Le(std::uint32_t{1})).Compact(9, 12).Build(),
       "byte 120: unknown event id 9"},
      {PacketBuilder(10).Extended(77777, 12).Build(), "byte 112: unknown event id 77777"},
      {PacketBuilder(10).Compact(1, 11, "ok").Raw(std::string("\0", 1)).Compact(1, 12, "abc").Build(),
       "byte 123: string field 's' of event s:str has no terminating NUL"},
      {PacketBuilder(10).Compact(2, 11, Le(std::uint32_t{1000}) + "abc").Build(), "field 'b' of event s:seq"},
      {PacketBuilder(10).Compact(0, 11, Le(std::uint32_t{1})).Raw("\x01\x02").Build(),
       "byte 120: event header runs past"},
      {PacketBuilder(10).Compact(0, 11, "\x01\x02").Build(), "field 'x' of event s:a"},
  };
  for (const Case& c : cases) {
    TempTrace t(SynthMetadata(kEvents), {c.packet});
    auto trace = OpenOrFail(t.dir());
    ASSERT_NE(trace, nullptr);
    std::vector<Seen> got;
    const std::string error = ReadAll(*trace, &got);
    EXPECT_NE(error.find(t.dir() + "/stream_0: byte "), std::string::npos) << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
}

TEST(ReaderDecode, CompactTimestampsExtendedHeadersAndLargeIds) {
  const std::uint64_t begin = 0x12FFFFF0;
  const std::string packet = PacketBuilder(begin)
                                 .Compact(0, 0x12FFFFF8, Le(std::uint32_t{1}))   // same high bits
                                 .Compact(0, 0x13000005, Le(std::uint32_t{2}))   // low bits wrap: +2^24
                                 .Compact(0, 0x13000005, Le(std::uint32_t{3}))   // equal timestamp
                                 .Extended(300, 0x5500000000, "")                // id >= 255
                                 .Compact(0, 0x5500FFFFFF, Le(std::uint32_t{4}))  // relative to extended
                                 .Extended(0, 0x5600000001, Le(std::uint32_t{5}))
                                 .Compact(2, 0x5600000002, Le(std::uint32_t{3}) + "\x01\x02\x03")
                                 .Compact(2, 0x5600000003, Le(std::uint32_t{0}))
                                 .Build();
  TempTrace t(SynthMetadata(kEvents), {packet});
  auto trace = OpenOrFail(t.dir());
  ASSERT_NE(trace, nullptr);
  EventIterator it(*trace);
  const std::vector<std::pair<std::string, std::uint64_t>> want = {
      {"s:a", 0x12FFFFF8}, {"s:a", 0x13000005}, {"s:a", 0x13000005}, {"s:big", 0x5500000000},
      {"s:a", 0x5500FFFFFF}, {"s:a", 0x5600000001}, {"s:seq", 0x5600000002}, {"s:seq", 0x5600000003}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(it.Next()) << i << ": " << it.error();
    EXPECT_EQ(it.event().name(), want[i].first) << i;
    EXPECT_EQ(it.event().timestamp(), want[i].second) << i;
    EXPECT_EQ(it.event().tid(), 4242u);
    EXPECT_EQ(it.event().thread_name(), "synth");
    if (want[i].first == "s:a") {
      EXPECT_EQ(it.event().GetUint64("x"), i < 3 ? i + 1 : i);
    }
    if (i == 6) {
      const auto b = it.event().GetBytes("b");
      ASSERT_TRUE(b.has_value());
      EXPECT_EQ(std::vector<std::uint8_t>(b->begin(), b->end()), (std::vector<std::uint8_t>{1, 2, 3}));
      EXPECT_EQ(it.event().GetUint64("b_length"), 3u);
    }
    if (i == 7) {
      EXPECT_EQ(it.event().GetBytes("b")->size(), 0u);
    }
  }
  EXPECT_FALSE(it.Next());
  EXPECT_EQ(it.error(), "");
}

TEST(ReaderDecode, MergeOrdersStreamsByTimestampThenStream) {
  auto stream = [](std::uint32_t tid, std::vector<std::uint64_t> ts, std::uint32_t base) {
    PacketBuilder p(ts[0], tid);
    for (std::size_t i = 0; i < ts.size(); ++i) p.Compact(0, ts[i], Le(static_cast<std::uint32_t>(base + i)));
    return p.Build();
  };
  // Two packets in stream_0 to cross a packet boundary.
  const std::string s0 = stream(1, {10, 30}, 0) + PacketBuilder(50, 1).Seq(1).Compact(0, 50, Le(std::uint32_t{2})).Build();
  TempTrace t(SynthMetadata(kEvents), {s0, stream(2, {20, 30, 40}, 100), ""});
  auto trace = OpenOrFail(t.dir());
  ASSERT_NE(trace, nullptr);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> got;  // (ts, x)
  EventIterator it(*trace);
  while (it.Next()) got.emplace_back(it.event().timestamp(), *it.event().GetUint64("x"));
  EXPECT_EQ(it.error(), "");
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> want = {
      {10, 0}, {20, 100}, {30, 1}, {30, 101}, {40, 102}, {50, 2}};
  EXPECT_EQ(got, want);
  ASSERT_EQ(trace->threads().size(), 2u);
  EXPECT_EQ(trace->threads()[0].tid, 1u);
  EXPECT_EQ(trace->threads()[0].packets, 2u);
}

TEST(ReaderDecode, LostEventsAndPacketsFromPacketContexts) {
  const std::string s0 = PacketBuilder(10).Lost(5, 0).Compact(0, 11, Le(std::uint32_t{1})).Build() +
                         PacketBuilder(20).Seq(2).Lost(12, 7).Compact(0, 21, Le(std::uint32_t{2})).Build();
  TempTrace t(SynthMetadata(kEvents), {s0, PacketBuilder(30).Compact(0, 31, Le(std::uint32_t{3})).Build()});
  auto trace = OpenOrFail(t.dir());
  ASSERT_NE(trace, nullptr);
  ASSERT_EQ(trace->streams().size(), 2u);
  const StreamInfo& s = trace->streams()[0];
  EXPECT_EQ(s.packets, 2u);
  EXPECT_EQ(s.lost_packets, 1u);
  EXPECT_EQ(s.events_discarded, 12u);
  EXPECT_EQ(s.events_overwritten, 7u);
  EXPECT_EQ(s.DiscardedOnly(), 5u);
  EXPECT_EQ(s.timestamp_begin, 10u);
  EXPECT_EQ(s.timestamp_end, 21u);
  EXPECT_EQ(trace->events_discarded(), 12u);
  EXPECT_EQ(trace->packets(), 3u);
  EXPECT_EQ(trace->pid(), 777u);
  EXPECT_EQ(trace->procname(), "synth");
  EXPECT_EQ(trace->hostname(), "testhost");
}

TEST(ReaderDecode, ClockConversionIsExact) {
  TempTrace t(SynthMetadata(kEvents, 3, 10, 1), {});
  auto trace = OpenOrFail(t.dir());
  ASSERT_NE(trace, nullptr);
  EXPECT_EQ(trace->ToEpochNs(1), 10000000000LL + 666666666);  // (1 + 1) * 1e9 / 3, rounded down
  EXPECT_EQ(trace->ToEpochNs(2), 11000000000LL);
  EXPECT_EQ(trace->CyclesToNs(3), 1000000000);
  // Large TSC values: no overflow (128-bit intermediate).
  TempTrace tsc(SynthMetadata(kEvents, 2596152090, 1700000000, 1781172692), {});
  auto t2 = OpenOrFail(tsc.dir());
  ASSERT_NE(t2, nullptr);
  const std::uint64_t cycles = 123456789012345678ull;
  const __int128 want = static_cast<__int128>(1700000000) * 1000000000 +
                        (static_cast<__int128>(cycles) + 1781172692) * 1000000000 / 2596152090;
  EXPECT_EQ(t2->ToEpochNs(cycles), static_cast<std::int64_t>(want));
}

// Random damage to a real trace: every outcome is fine except a crash, a hang or a sanitizer report.
TEST(ReaderMalformed, RandomDamageNeverCrashes) {
  RecordedCopy copy;
  const std::string data = ReadFile(copy.stream(0));
  const std::string metadata = ReadFile(copy.dir() + "/metadata");
  ASSERT_FALSE(data.empty());
  std::mt19937_64 rng(12345);
  int errors = 0, ok = 0;
  for (int round = 0; round < 300; ++round) {
    std::string d = data, m = metadata;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      // Bias toward packet headers and the first events, where damage matters most.
      const std::size_t at = rng() % 2 ? rng() % std::min<std::size_t>(d.size(), 400) : rng() % d.size();
      d[at] = static_cast<char>(rng());
    }
    if (round % 3 == 0) d.resize(rng() % d.size());
    if (round % 10 == 0) m[rng() % m.size()] = static_cast<char>(rng());
    WriteFile(copy.stream(0), d);
    WriteFile(copy.dir() + "/metadata", m);
    std::string error;
    auto t = Trace::Open(copy.dir(), &error);
    if (!t) {
      EXPECT_FALSE(error.empty());
      ++errors;
      continue;
    }
    std::vector<Seen> got;
    const std::string e = ReadAll(*t, &got);
    if (!e.empty()) {
      EXPECT_NE(e.find("byte "), std::string::npos) << e;
      ++errors;
    } else {
      ++ok;
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace hush::reader::test

namespace hush::reader::test {
namespace {

// Found by fuzz_trace: a float field read as an integer was a float-to-int conversion out of
// range (undefined behaviour) for NaN, infinities and huge values.
TEST(FieldValueConversion, FloatsOutOfIntegerRangeSaturateAndNaNGivesZero) {
  FieldInfo info;
  info.type = FieldType::kFloat;
  info.size = 8;
  const auto as = [&info](double d) {
    std::uint8_t bytes[8];
    std::memcpy(bytes, &d, sizeof d);
    const FieldValue v(&info, bytes, 8);
    return std::pair<std::int64_t, std::uint64_t>(v.AsInt64(), v.AsUint64());
  };
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(as(kNaN), std::make_pair(std::int64_t{0}, std::uint64_t{0}));
  EXPECT_EQ(as(-kNaN), std::make_pair(std::int64_t{0}, std::uint64_t{0}));
  EXPECT_EQ(as(kInf), std::make_pair(std::numeric_limits<std::int64_t>::max(),
                                     std::numeric_limits<std::uint64_t>::max()));
  EXPECT_EQ(as(-kInf), std::make_pair(std::numeric_limits<std::int64_t>::min(), std::uint64_t{0}));
  EXPECT_EQ(as(1e300), as(kInf));
  EXPECT_EQ(as(-2.75), std::make_pair(std::int64_t{-2}, std::uint64_t{0}));
  EXPECT_EQ(as(3.5), std::make_pair(std::int64_t{3}, std::uint64_t{3}));
}

}  // namespace
}  // namespace hush::reader::test
