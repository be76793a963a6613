// session::FileNumbers: the file numbers N of ring_<N> / stream_<N> handed out to every process of
// one trace directory (docs/format.md, "Processes").
//
// The root process and its fork() descendants write into one directory. Each new buffer needs a
// number no other process of the tree has used. Taking "the first N whose files can be created
// with O_EXCL" is correct but costs every child one failed attempt per number used before it, and
// an attempt is not cheap once an earlier child's ring file has been unlinked at its exit: the
// ring is created and sized before its stream_<N> is found taken (issue 17, item 5: 800
// children took 58 s). Here the numbers come from one counter in a MAP_SHARED anonymous page that
// the session's root maps at Start and every fork() child inherits, so a child's first number
// costs one atomic increment whatever the number of children before it.
//
// The counter is a hint, never trusted: the files are still created with O_EXCL (core.cc,
// Attach) and a number found taken is skipped. A descendant that scribbles on the page
// (it is writable by every process of the tree, which all run as the same user until one changes
// credentials) can make others skip numbers or retry, never share a file. std::atomic on a shared
// mapping is address-free for a lock-free type, which std::uint32_t is on every target here.
#ifndef HUSHTRACE_SRC_SESSION_FILE_NUMBERS_H_
#define HUSHTRACE_SRC_SESSION_FILE_NUMBERS_H_

#include <atomic>
#include <cstdint>

namespace hush::session {

class FileNumbers {
 public:
  FileNumbers() = default;
  ~FileNumbers();
  FileNumbers(FileNumbers&& other) noexcept;
  FileNumbers& operator=(FileNumbers&& other) noexcept;
  FileNumbers(const FileNumbers&) = delete;
  FileNumbers& operator=(const FileNumbers&) = delete;

  // Maps the shared page with the counter at 0. False (and errno) if the mapping failed: Take()
  // then hands out numbers from a counter of this process alone, as before this class.
  bool Map();
  // The next number to try; callable from several threads at once (Map and moves are not).
  // Relaxed: the number orders nothing; the files' O_EXCL decides.
  std::uint32_t Take() {
    if (shared_ != nullptr) return shared_->fetch_add(1, std::memory_order_relaxed);
    return local_.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  std::atomic<std::uint32_t>* shared_ = nullptr;  // in the MAP_SHARED page, or null
  std::atomic<std::uint32_t> local_{0};
  static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "shared between processes");
};

}  // namespace hush::session

#endif  // HUSHTRACE_SRC_SESSION_FILE_NUMBERS_H_
