// How the CLI reads another process's mappings (tools/hushtrace/inject.h): PROCMAP_QUERY where
// the kernel has it, the text of /proc/PID/maps otherwise. Both must give the same mappings: the
// first test checks the kernel's answers (and so this code's copy of its structure) against the
// text, field by field, in this process.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "inject.h"

namespace hush::cli {
namespace {

// By pid, as FileMappingsOf opens it: under qemu-user (the aarch64 tier) /proc/self may be the
// emulator's view and /proc/PID the host's, or both the emulator's.
std::string Proc(const char* what) { return "/proc/" + std::to_string(::getpid()) + "/" + what; }

std::string ReadMaps() {
  std::string text;
  const int fd = ::open(Proc("maps").c_str(), O_RDONLY | O_CLOEXEC);
  char buf[4096];
  for (ssize_t n; fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  if (fd >= 0) ::close(fd);
  return text;
}

TEST(MapsTest, QueriedMappingsAreTheTextsFileMappings) {
  const std::vector<Mapping> queried = FileMappingsOf(::getpid());
  const std::vector<Mapping> parsed = ParseMapsText(ReadMaps());
  ASSERT_FALSE(parsed.empty());
  ASSERT_EQ(queried.size(), parsed.size());
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    SCOPED_TRACE(parsed[i].path);
    EXPECT_EQ(queried[i].start, parsed[i].start);
    EXPECT_EQ(queried[i].end, parsed[i].end);
    EXPECT_EQ(queried[i].offset, parsed[i].offset);
    EXPECT_EQ(queried[i].inode, parsed[i].inode);
    EXPECT_EQ(queried[i].dev_major, parsed[i].dev_major);
    EXPECT_EQ(queried[i].dev_minor, parsed[i].dev_minor);
    EXPECT_EQ(queried[i].path, parsed[i].path);
  }
  // This test's own executable is among them, mapped from its start.
  char exe[4096];
  const ssize_t n = ::readlink(Proc("exe").c_str(), exe, sizeof exe - 1);
  ASSERT_GT(n, 0);
  const std::string self(exe, static_cast<std::size_t>(n));
  bool found = false;
  for (const Mapping& m : queried) found = found || (m.path == self && m.offset == 0);
  EXPECT_TRUE(found) << self;
}

TEST(MapsTest, TextKeepsFilesOnlyWithTheirWholePaths) {
  const std::vector<Mapping> m = ParseMapsText(
      "55d0c0a00000-55d0c0a02000 r--p 00000000 fe:01 1311 /usr/bin/prog name\n"
      "55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0          [heap]\n"
      "7f0000000000-7f0000010000 rw-p 00000000 00:00 0 \n"
      "7f0000010000-7f0000012000 r-xp 00002000 fe:01 42 /tmp/lib.so (deleted)\n"
      "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0          [stack]\n"
      "garbage\n"
      "7f0000020000-7f0000021000 r--p 0000a000 103:0f 7 /x");  // no final newline
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].path, "/usr/bin/prog name");
  EXPECT_EQ(m[0].start, 0x55d0c0a00000u);
  EXPECT_EQ(m[0].end, 0x55d0c0a02000u);
  EXPECT_EQ(m[0].dev_major, 0xfeu);
  EXPECT_EQ(m[0].dev_minor, 0x01u);
  EXPECT_EQ(m[0].inode, 1311u);
  EXPECT_EQ(m[1].path, "/tmp/lib.so (deleted)");
  EXPECT_EQ(m[1].offset, 0x2000u);
  EXPECT_EQ(m[2].path, "/x");
  EXPECT_EQ(m[2].dev_major, 0x103u);
  EXPECT_EQ(m[2].dev_minor, 0x0fu);
  EXPECT_EQ(m[2].offset, 0xa000u);
}

TEST(MapsTest, NoProcessNoMappings) {
  EXPECT_TRUE(FileMappingsOf(0x7ffffff0).empty());
}

}  // namespace
}  // namespace hush::cli
