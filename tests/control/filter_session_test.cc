// Field filters in a session (SessionOptions::filter): only matching events reach the trace.
#include <hushtrace/hushtrace.h>
#include <hushtrace/reader.h>
#include <hushtrace/session.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_test_util.h"

HUSH_TRACEPOINT(flt, io, (std::int32_t, fd), (std::uint64_t, bytes))
HUSH_TRACEPOINT(flt, other, (std::int32_t, x))

namespace {

hush::SessionOptions Options(const std::string& dir, const std::string& filter) {
  hush::SessionOptions o;
  o.events = {"flt:*"};
  o.filter = filter;
  o.output_dir = dir;
  return o;
}

TEST(FilterSessionTest, OnlyMatchingEventsAreRecorded) {
  const std::string root = hush::clitest::MakeTempDir();
  const hush::SessionOptions o = Options(root + "/t", "bytes > 1000 && fd != 3");
  std::string error;
  auto session = hush::Session::Start(o, &error);
  ASSERT_TRUE(session) << error;
  std::vector<std::pair<int, std::uint64_t>> expected;
  for (int i = 0; i < 200; ++i) {
    const std::int32_t fd = i % 5;
    const std::uint64_t bytes = static_cast<std::uint64_t>(i) * 50;
    HUSH_TRACE(flt, io, fd, bytes);
    HUSH_TRACE(flt, other, i);  // has no field 'bytes': never recorded
    if (bytes > 1000 && fd != 3) expected.emplace_back(fd, bytes);
  }
  const hush::SessionStats stats = session->Stats();
  EXPECT_EQ(stats.events_filtered_out, 400u - expected.size());
  session->Stop();
  auto trace = hush::reader::Trace::Open(o.output_dir, &error);
  ASSERT_TRUE(trace) << error;
  hush::reader::EventIterator it(*trace);
  std::vector<std::pair<int, std::uint64_t>> seen;
  while (it.Next()) {
    ASSERT_EQ(it.event().name(), "flt:io");
    seen.emplace_back(static_cast<int>(*it.event().GetInt64("fd")), *it.event().GetUint64("bytes"));
  }
  EXPECT_EQ(it.error(), "");
  EXPECT_EQ(seen, expected);
  hush::clitest::RemoveTree(root);
}

TEST(FilterSessionTest, SyntaxErrorNamesTheColumn) {
  const std::string root = hush::clitest::MakeTempDir();
  hush::SessionOptions o = Options(root + "/t", "bytes > && fd");
  std::string error;
  EXPECT_FALSE(hush::Session::Start(o, &error));
  EXPECT_EQ(error, "bad filter, column 9: expected a number, a string, a field name, $name, $tid, "
                   "$thread or '(' instead of '&'\n"
                   "  bytes > && fd\n          ^");
  o.filter = "size > 3";
  o.output_dir = root + "/u";
  EXPECT_FALSE(hush::Session::Start(o, &error));
  EXPECT_NE(error.find("applies to no enabled event"), std::string::npos) << error;
  // Nothing was left enabled by the refused sessions.
  HUSH_TRACE(flt, io, 1, 2u);
  hush::clitest::RemoveTree(root);
}

// Issue 17: a buffer size above the largest ring was cut to it without a word; every way in
// (the API, HUSHTRACE_BUFFER_SIZE, the control socket) now goes through this refusal.
TEST(FilterSessionTest, BufferSizeAboveTheLargestRingIsRefused) {
  const std::string root = hush::clitest::MakeTempDir();
  hush::SessionOptions o = Options(root + "/t", "");
  o.buffer_size = std::size_t{256} << 20;  // at the limit: starts (no thread records, no ring)
  std::string error;
  auto session = hush::Session::Start(o, &error);
  ASSERT_TRUE(session) << error;
  session->Stop();
  session.reset();
  o.output_dir = root + "/u";
  o.buffer_size = (std::size_t{256} << 20) + 1;
  EXPECT_FALSE(hush::Session::Start(o, &error));
  EXPECT_EQ(error, "buffer size 268435457 is above the largest ring, 256M (256 sub-buffers of 1M)");
  o.buffer_size = std::size_t{16} << 30;
  EXPECT_FALSE(hush::Session::Start(o, &error));
  EXPECT_EQ(error,
            "buffer size 17179869184 is above the largest ring, 256M (256 sub-buffers of 1M)");
  hush::clitest::RemoveTree(root);
}

}  // namespace
