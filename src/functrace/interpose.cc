// Wrappers that keep function tracing correct across stack unwinding and dlopen(). Built into the
// shared runtime only (libhushtrace.so, linked or LD_PRELOADed), which the dynamic linker searches
// before libgcc_s / libstdc++ / libc; the static runtime does not carry them (a program linked
// statically with the unwinder would get duplicate symbols): docs/architecture.md.
//
//   _Unwind_RaiseException, _Unwind_Resume_or_Rethrow, _Unwind_ForcedUnwind
//       before the unwinder walks the stack, every hijacked return address of this thread is put
//       back (the unwinder finds no unwind info at the return thunk and would call terminate)
//   __cxa_begin_catch
//       frames below the catcher are gone: their exits are emitted; the frames above it are
//       hijacked again unless another exception is still in flight (a catch inside a destructor
//       run by unwinding: those frames stay restored and get their exit when an outer traced
//       frame returns). Where the runtime carries its own C++ runtime (HUSH_PRIVATE_LIBSTDCXX:
//       src/cxxrt/allocation.cc), the runtime's own catches also land here (its calls bind to
//       this definition) and go to that private copy, renamed hush_private_cxa_begin_catch at
//       link time: a catcher's begin and end must be the same C++ runtime's, and the catcher's
//       __cxa_end_catch is the one its own code calls.
//   dlopen
//       a library loaded while functions are traced gets its selected entries patched
//   dlclose
//       a library that is really unloaded (not just dereferenced) is forgotten: its patched
//       entries leave the list that Stop() un-patches, and the same library loaded again is
//       patched again (it would otherwise count as already scanned when it lands at the same
//       address). Calling into a library while dlclose() unloads it is the program's own race;
//       return addresses into it on a shadow stack are used only if such a call returns.
//
// Each forwards to the next definition (RTLD_NEXT), found once. Costs nothing unless a session
// ever asked for functions, beyond one indirect call.
#include <dlfcn.h>
#include <link.h>
#include <unwind.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>

#include "functrace/functrace.h"
#include "functrace/shadow.h"

namespace hush::functrace {
namespace {

void* Next(const char* name, const char* fallback_lib) {
  void* f = ::dlsym(RTLD_NEXT, name);
  if (f == nullptr && fallback_lib != nullptr) {
    // We come after the defining library in the search order: our definition is then not the
    // one the program calls, but a direct call to ours must still work.
    if (void* h = ::dlopen(fallback_lib, RTLD_NOW | RTLD_NOLOAD)) f = ::dlsym(h, name);
  }
  if (f == nullptr) {
    std::fprintf(stderr, "hushtrace: cannot find %s\n", name);
    std::abort();
  }
  return f;
}

template <typename F>
F Resolve(std::atomic<void*>& cache, const char* name, const char* lib) {
  void* f = cache.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = Next(name, lib);
    cache.store(f, std::memory_order_release);  // idempotent: every thread finds the same
  }
  return reinterpret_cast<F>(f);
}

bool Active() { return g_settings.ever_started.load(std::memory_order_relaxed); }

std::atomic<void*> g_raise{nullptr}, g_rethrow{nullptr}, g_forced{nullptr}, g_catch{nullptr},
    g_dlopen{nullptr}, g_dlclose{nullptr}, g_uncaught{nullptr};

#if defined(HUSH_PRIVATE_LIBSTDCXX)
// Whether `code` is in this library: its own catch. Asked only in __cxa_begin_catch (dladdr
// takes the dynamic linker's lock, which a catch may).
bool InThisLibrary(const void* code) {
  static const void* const self_base = [] {
    Dl_info self{};
    return ::dladdr(reinterpret_cast<const void*>(&InThisLibrary), &self) != 0 ? self.dli_fbase : nullptr;
  }();
  Dl_info info{};
  return self_base != nullptr && ::dladdr(code, &info) != 0 && info.dli_fbase == self_base;
}
#endif

// Exceptions in flight on this thread, as the program's C++ runtime counts them (ours, when the
// runtime carries a private one, counts only its own).
int ProgramUncaughtExceptions() {
#if defined(HUSH_PRIVATE_LIBSTDCXX)
  return Resolve<int (*)() noexcept>(g_uncaught, "_ZSt19uncaught_exceptionsv", "libstdc++.so.6")();
#else
  return std::uncaught_exceptions();
#endif
}

}  // namespace
}  // namespace hush::functrace

using namespace hush::functrace;

extern "C" {

_Unwind_Reason_Code _Unwind_RaiseException(_Unwind_Exception* e) {
  auto real = Resolve<_Unwind_Reason_Code (*)(_Unwind_Exception*)>(g_raise, "_Unwind_RaiseException",
                                                                    "libgcc_s.so.1");
  if (Active()) RestoreForUnwind();
  return real(e);
}

_Unwind_Reason_Code _Unwind_Resume_or_Rethrow(_Unwind_Exception* e) {
  auto real = Resolve<_Unwind_Reason_Code (*)(_Unwind_Exception*)>(
      g_rethrow, "_Unwind_Resume_or_Rethrow", "libgcc_s.so.1");
  if (Active()) RestoreForUnwind();
  return real(e);
}

_Unwind_Reason_Code _Unwind_ForcedUnwind(_Unwind_Exception* e, _Unwind_Stop_Fn stop, void* arg) {
  auto real = Resolve<_Unwind_Reason_Code (*)(_Unwind_Exception*, _Unwind_Stop_Fn, void*)>(
      g_forced, "_Unwind_ForcedUnwind", "libgcc_s.so.1");
  if (Active()) RestoreForUnwind();
  return real(e, stop, arg);
}

#if defined(HUSH_PRIVATE_LIBSTDCXX)
void* hush_private_cxa_begin_catch(void* exception) noexcept;  // the archive's (src/CMakeLists.txt)
#endif

void* __cxa_begin_catch(void* exception) noexcept {
  void* r = nullptr;
  int in_flight = 0;  // other exceptions still in flight, by the catcher's C++ runtime
#if defined(HUSH_PRIVATE_LIBSTDCXX)
  if (InThisLibrary(__builtin_return_address(0))) {
    r = hush_private_cxa_begin_catch(exception);
    in_flight = std::uncaught_exceptions();  // the private runtime's own count
  } else
#endif
  {
    auto real = Resolve<void* (*)(void*) noexcept>(g_catch, "__cxa_begin_catch", "libstdc++.so.6");
    r = real(exception);
    in_flight = ProgramUncaughtExceptions();
  }
  if (Active()) {
#if defined(__aarch64__)
    // The catcher's stack pointer: our canonical frame address (its sp at the call).
    const auto catcher_sp = reinterpret_cast<std::uintptr_t>(__builtin_dwarf_cfa());
#else
    // The catcher's stack pointer: our caller's, just above our return address.
    const auto catcher_sp = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) +
                            2 * sizeof(void*);
#endif
    ResumeAfterCatch(catcher_sp, in_flight == 0);
  }
  return r;
}

void* dlopen(const char* file, int mode) {
  auto real = Resolve<void* (*)(const char*, int)>(g_dlopen, "dlopen", nullptr);
  void* h = real(file, mode);
  if (h != nullptr && Active()) Rescan();
  return h;
}

int dlclose(void* handle) {
  auto real = Resolve<int (*)(void*)>(g_dlclose, "dlclose", nullptr);
  if (!Active()) return real(handle);
  // Which module, asked before it may be gone.
  link_map* map = nullptr;
  std::string path;
  std::uintptr_t base = 0;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
    path = map->l_name;
    base = map->l_addr;
  }
  const int rc = real(handle);
  if (rc != 0 || path.empty()) return rc;
  auto real_open = Resolve<void* (*)(const char*, int)>(g_dlopen, "dlopen", nullptr);
  if (void* still = real_open(path.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
    real(still);  // other references keep it loaded; RTLD_NOLOAD took one more
  } else {
    ForgetModule(base, path);
  }
  return rc;
}

}  // extern "C"

namespace hush::functrace {

bool UnwindWrappersActive(std::string* why) {
  // The program's calls go to the first definition in lookup order; ours must be it.
  for (const auto& [name, ours] :
       {std::pair<const char*, void*>{"_Unwind_RaiseException",
                                      reinterpret_cast<void*>(&_Unwind_RaiseException)},
        std::pair<const char*, void*>{"__cxa_begin_catch", reinterpret_cast<void*>(&__cxa_begin_catch)}}) {
    void* first = ::dlsym(RTLD_DEFAULT, name);
    if (first != nullptr && first != ours) {
      *why = std::string(name) + " resolves to another library before libhushtrace";
      return false;
    }
  }
  return true;
}

}  // namespace hush::functrace
