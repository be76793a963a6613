// Files and directories for tests: one implementation for every test suite (runtime, CLI,
// recovery, reader, control, SQL), so that none keeps its own copy.
//
// All calls are best effort and report failure by their result ("" / false / empty); none throws
// or aborts, so a test states what it expected with its own assertion.
#ifndef HUSHTRACE_TESTS_SUPPORT_FILES_H_
#define HUSHTRACE_TESTS_SUPPORT_FILES_H_

#include <string>
#include <string_view>
#include <vector>

namespace hush::testsupport {

// A fresh empty directory `$TMPDIR/hush_<tag>.XXXXXX` (TMPDIR unset: /tmp), as a canonical path
// (the CLI makes relative outputs absolute from getcwd(), which returns canonical paths). "" when
// it cannot be made.
std::string MakeTempDir(const std::string& tag);
// Removes `path` and, for a directory, everything under it, without following symbolic links.
void RemoveTree(const std::string& path);
// Paths a test makes outside its temporary directory (another user's /dev/shm/hushtrace-<uid>, ring
// directories on /dev/shm), removed with RemoveTree when it is made, in case an earlier run left
// them, and again when it goes, however the test ends: left behind, they would trip a later test.
class ScopedRemoval {
 public:
  explicit ScopedRemoval(std::vector<std::string> paths);
  ~ScopedRemoval();
  ScopedRemoval(const ScopedRemoval&) = delete;
  ScopedRemoval& operator=(const ScopedRemoval&) = delete;

 private:
  std::vector<std::string> paths_;
};
// True if `path` names anything, a dangling symbolic link included (lstat).
bool Exists(const std::string& path);
// The whole file; "" if it cannot be opened.
std::string ReadFile(const std::string& path);
// Creates or truncates `path` (0600) and writes `content` whole; false on any failure.
bool WriteFile(const std::string& path, std::string_view content);
// The names in directory `dir` (not recursive), without "." and ".."; empty if unreadable.
std::vector<std::string> ListDir(const std::string& dir);
// Where the ring files of trace directory `dir` are (format/ring_location.h): the trace's ring
// directory on /dev/shm while it exists (a trace on a disk file system), else `dir` itself.
std::string RingDirectory(const std::string& dir);
// The path of ring file N of trace directory `dir`, in RingDirectory(dir).
std::string RingPath(const std::string& dir, unsigned n);
// The names of the ring files a session left of trace directory `dir` (".ring_<N>",
// docs/format.md), in `dir` and in its ring directory, sorted.
std::vector<std::string> RingFiles(const std::string& dir);

}  // namespace hush::testsupport

#endif  // HUSHTRACE_TESTS_SUPPORT_FILES_H_
