// The allocation functions of the shared runtime's private C++ runtime.
//
// libhushtrace.so carries the parts of libstdc++ it uses (src/CMakeLists.txt,
// HUSH_PRIVATE_LIBSTDCXX; their symbols stay inside: libhushtrace.map) rather than loading
// libstdc++.so into every traced program, C programs included. Its code then allocates through
// the operator new and delete defined here, which the static link binds before the archive's.
//
// Some objects cross the library's boundary: the Session that Session::Start returns in a
// unique_ptr (deleted by the program's delete), the error strings it assigns (freed by the
// program's std::string). A program may replace the global operator new and delete (a pool, a
// guard allocator), and the operators of its own libstdc++.so or of its replacement are then the
// only ones that may free what they allocated. So each function here forwards to the program's
// operator of the same name, looked up once in the global scope (dlsym RTLD_DEFAULT: the program,
// then the libraries it loaded, in the order the dynamic linker binds them, as the program's own
// calls are bound; this library's definitions are local and never found). A program without one
// (a C program) gets malloc and free, as libstdc++'s defaults do, with bad_alloc on failure. All
// functions are looked up together, on the first call of any: new and delete always pair.
//
// Left to the archive: the aligned (align_val_t) forms. Only the runtime's own objects use them
// (over-aligned types), allocated and freed inside the library.
#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace hush::cxxrt {
namespace {

struct ProgramOperators {
  void* (*new_one)(std::size_t) = nullptr;
  void* (*new_array)(std::size_t) = nullptr;
  void* (*new_one_nothrow)(std::size_t, const std::nothrow_t&) noexcept = nullptr;
  void* (*new_array_nothrow)(std::size_t, const std::nothrow_t&) noexcept = nullptr;
  void (*delete_one)(void*) noexcept = nullptr;
  void (*delete_array)(void*) noexcept = nullptr;
  void (*delete_one_sized)(void*, std::size_t) noexcept = nullptr;
  void (*delete_array_sized)(void*, std::size_t) noexcept = nullptr;
};

template <typename F>
void Find(F* out, const char* mangled) {
  *out = reinterpret_cast<F>(::dlsym(RTLD_DEFAULT, mangled));
}

ProgramOperators Lookup() {
  ProgramOperators p;
  Find(&p.new_one, "_Znwm");
  Find(&p.new_array, "_Znam");
  Find(&p.new_one_nothrow, "_ZnwmRKSt9nothrow_t");
  Find(&p.new_array_nothrow, "_ZnamRKSt9nothrow_t");
  Find(&p.delete_one, "_ZdlPv");
  Find(&p.delete_array, "_ZdaPv");
  Find(&p.delete_one_sized, "_ZdlPvm");
  Find(&p.delete_array_sized, "_ZdaPvm");
  // All or none: a program that has libstdc++ has every one of them. A partial set (a library
  // defining only some) would pair one side's new with the other side's delete.
  if (p.new_one == nullptr || p.new_array == nullptr || p.new_one_nothrow == nullptr ||
      p.new_array_nothrow == nullptr || p.delete_one == nullptr || p.delete_array == nullptr ||
      p.delete_one_sized == nullptr || p.delete_array_sized == nullptr) {
    return ProgramOperators{};
  }
  return p;
}

// The first call looks them up (dlsym allocates with malloc, never with these).
const ProgramOperators& Program() {
  static const ProgramOperators operators = Lookup();
  return operators;
}

void* Allocate(std::size_t n) {
  for (;;) {
    if (void* p = std::malloc(n != 0 ? n : 1)) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

}  // namespace
}  // namespace hush::cxxrt

using hush::cxxrt::Allocate;
using hush::cxxrt::Program;

void* operator new(std::size_t n) {
  return Program().new_one != nullptr ? Program().new_one(n) : Allocate(n);
}

void* operator new[](std::size_t n) {
  return Program().new_array != nullptr ? Program().new_array(n) : Allocate(n);
}

void* operator new(std::size_t n, const std::nothrow_t& tag) noexcept {
  if (Program().new_one_nothrow != nullptr) return Program().new_one_nothrow(n, tag);
  try {
    return Allocate(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

void* operator new[](std::size_t n, const std::nothrow_t& tag) noexcept {
  if (Program().new_array_nothrow != nullptr) return Program().new_array_nothrow(n, tag);
  try {
    return Allocate(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

void operator delete(void* p) noexcept {
  if (Program().delete_one != nullptr) return Program().delete_one(p);
  std::free(p);
}

void operator delete[](void* p) noexcept {
  if (Program().delete_array != nullptr) return Program().delete_array(p);
  std::free(p);
}

void operator delete(void* p, std::size_t n) noexcept {
  if (Program().delete_one_sized != nullptr) return Program().delete_one_sized(p, n);
  std::free(p);
}

void operator delete[](void* p, std::size_t n) noexcept {
  if (Program().delete_array_sized != nullptr) return Program().delete_array_sized(p, n);
  std::free(p);
}

void operator delete(void* p, const std::nothrow_t&) noexcept { operator delete(p); }

void operator delete[](void* p, const std::nothrow_t&) noexcept { operator delete[](p); }
