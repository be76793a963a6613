// Libraries the CLI loads when a command first needs them, not when it starts: libcurl (`ship`)
// and libsqlite3 (`export --format sqlite`). Linked, the dynamic loader would map and relocate
// them and run their constructors in every hushtrace command, `start` and `stop` included;
// loaded here, only the command that uses them pays (docs/architecture.md, "The CLI's start").
//
//   struct ZlibApi { decltype(&::zlibVersion) version = nullptr; std::string error; };
//   const ZlibApi& Zlib() {
//     static const ZlibApi api = [] {
//       ZlibApi a;
//       LoadedLibrary lib("libz.so.1", "zlib1g", &a.error);
//       lib.Resolve("zlibVersion", &a.version);
//       return a;      // a.error empty: every pointer is set
//     }();
//     return api;
//   }
//
// A library is opened once per process (the caller's function-local static) and never closed:
// its state (libcurl's connection cache, SQLite's configuration) lives as long as the process.
#ifndef HUSHTRACE_SRC_SQL_LOADED_LIBRARY_H_
#define HUSHTRACE_SRC_SQL_LOADED_LIBRARY_H_

#include <dlfcn.h>

#include <string>

namespace hush::sql {

class LoadedLibrary {
 public:
  // Opens `soname` with RTLD_NOW | RTLD_LOCAL (every symbol bound now, none made global). If it
  // cannot be: "cannot load SONAME (Debian package PACKAGE): why" in *error.
  LoadedLibrary(const char* soname, const char* package, std::string* error)
      : soname_(soname), error_(error), handle_(::dlopen(soname, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) {
      const char* why = ::dlerror();
      *error_ = std::string("cannot load ") + soname + " (Debian package " + package + "): " +
                (why != nullptr ? why : "dlopen failed");
    }
  }

  // *out = the library's function `name`; null if the library is not loaded or has no such
  // function, and then the first such name goes into *error (if it is still empty): callers
  // resolve every name, then check the error once.
  template <class F>
  void Resolve(const char* name, F* out) {
    *out = handle_ != nullptr ? reinterpret_cast<F>(::dlsym(handle_, name)) : nullptr;
    if (*out == nullptr && error_->empty()) *error_ = std::string(soname_) + " has no " + name;
  }

 private:
  const char* soname_;
  std::string* error_;
  void* handle_;  // never closed
};

}  // namespace hush::sql

#endif  // HUSHTRACE_SRC_SQL_LOADED_LIBRARY_H_
