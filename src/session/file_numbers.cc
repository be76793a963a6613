#include "session/file_numbers.h"

#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <utility>

namespace hush::session {

namespace {
std::size_t PageSize() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }
}  // namespace

FileNumbers::~FileNumbers() {
  if (shared_ != nullptr) ::munmap(shared_, PageSize());
}

FileNumbers::FileNumbers(FileNumbers&& other) noexcept
    : shared_(std::exchange(other.shared_, nullptr)), local_(other.local_.load(std::memory_order_relaxed)) {}

FileNumbers& FileNumbers::operator=(FileNumbers&& other) noexcept {
  if (this != &other) {
    if (shared_ != nullptr) ::munmap(shared_, PageSize());
    shared_ = std::exchange(other.shared_, nullptr);
    local_.store(other.local_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  return *this;
}

bool FileNumbers::Map() {
  // MAP_SHARED | MAP_ANONYMOUS: inherited by fork() children as the same page (no MADV_DONTFORK
  // here, unlike the rings), gone at exec.
  void* page = ::mmap(nullptr, PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return false;
  if (shared_ != nullptr) ::munmap(shared_, PageSize());
  shared_ = new (page) std::atomic<std::uint32_t>(local_.load(std::memory_order_relaxed));
  return true;
}

}  // namespace hush::session
