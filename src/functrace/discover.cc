// Finding and patching function entries (functrace.h).
//
// Per module (dl_iterate_phdr), lazily, only when a session asks for functions:
//   1. entries: the in-memory array of section __patchable_function_entries
//      (-fpatchable-function-entry=N) or __mcount_loc (gcc -mrecord-mcount). Both are allocated
//      sections of absolute addresses, already relocated by the loader; their bounds come from
//      the section headers of the module's file (src/elf), which is also where .symtab is.
//   2. selection: the function symbol containing each entry, matched against the globs by its
//      mangled name, its demangled name, and its demangled name without the parameter list.
//   3. bytes: one 5-byte NOP (aarch64: two NOPs) -> patched. gcc's five one-byte NOPs -> patched
//      only while no other thread of the program exists (none can be between two of them then);
//      else refused and counted (docs/architecture.md, "Function tracing"). Anything else -> left
//      alone.
//   4. target: a per-function stub (x86-64: 16 bytes in an arena mapped within 2 GiB of the
//      module; aarch64: 24 bytes within 128 MiB, patch/arch/aarch64.cc) that loads the body's
//      address and jumps to the trampoline; the entry becomes a jump to it, so no return address
//      is pushed (docs/architecture.md, "Function tracing"). A function that
//      also matches a trigger's glob (Options::triggers) is marked: its stub jumps to the marked
//      trampoline instead (the arena's second pointer), and its marks join g_marks.
// All selected entries of all new modules go to src/patch in one batch.
#include <cxxabi.h>
#include <dirent.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/dir_stream.h"
#include "base/fork_gate.h"
#include "elf/elf_file.h"
#include "functrace/functrace.h"
#include "functrace/shadow.h"
#include "patch/arch/arch.h"
#include "patch/patch.h"
#include "registry/registry.h"

namespace hush::functrace {
namespace {

struct LoadedModule {
  std::string path;  // empty for the main program until SelectEntries has found its file
  bool main = false;  // the program itself (dl_iterate_phdr's first entry, which has no name)
  std::uintptr_t base = 0;
  std::string build_id;
  std::uintptr_t text_lo = 0, text_hi = 0;  // executable PT_LOAD range
};

struct Module {
  LoadedModule loaded;
  bool has_entries = false;
};

std::mutex g_mu;  // guards the State (constant-initialized: usable from any constructor)

// Allocated on first use and never destroyed: the session from the environment starts in a
// constructor that may run before this file's dynamic initializers, and stops in an atexit
// handler that may run after its destructors.
struct State {
  bool started = false;
  Options options;
  std::vector<Module> modules;            // every module scanned, in the order seen
  std::vector<patch::CodeSite> patched;   // entries currently patched (their jump bytes)
  std::vector<std::uintptr_t> stub_arenas;                    // never unmapped
  std::unordered_map<std::uintptr_t, std::uintptr_t> stub_of;  // entry -> its stub
  std::unordered_map<std::uintptr_t, std::uintptr_t> marked_stub_of;  // entry -> its marked stub
  std::vector<std::vector<std::string>> trigger_globs;  // Options::triggers' globs, one each
  std::vector<Mark> marks;       // of this session, as g_marks publishes them (sorted there)
  std::uint64_t marked = 0;      // patched entries that are marked
  std::uint64_t entries = 0, refused_split = 0, converted_split = 0;
  double last_batch_us = 0;
  bool last_batch_preempted = false;
};
State& St() {
  static State* const state = new State();
  return *state;
}

long InvoluntarySwitches() {
  rusage ru{};
  ::getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nivcsw;
}

// One batch, timed (Stats::last_batch_us, last_batch_preempted).
void TimedWriteCode(std::span<const patch::CodeSite> batch) {
  const long switches = InvoluntarySwitches();
  const auto t0 = std::chrono::steady_clock::now();
  patch::WriteCode(batch);
  St().last_batch_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  St().last_batch_preempted = InvoluntarySwitches() != switches;
}

std::string BuildIdOf(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const unsigned char* name = p + sizeof(ElfW(Nhdr));
      const unsigned char* desc = name + ((n->n_namesz + 3) & ~3u);
      const unsigned char* next = desc + ((n->n_descsz + 3) & ~3u);
      if (next > end) break;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static const char kHex[] = "0123456789abcdef";
        std::string out;
        for (std::uint32_t k = 0; k < n->n_descsz; ++k) {
          out += kHex[desc[k] >> 4];
          out += kHex[desc[k] & 15];
        }
        return out;
      }
      p = next;
    }
  }
  return "";
}

// The file mapped at `addr` (/proc/self/maps), else /proc/self/exe. /proc/self/exe is the
// dynamic loader itself when the program was started through it (`ld.so --preload LIB PROGRAM`,
// e.g. under valgrind). OpenMainProgram's fallback: reading /proc/self costs the process's exit
// the flush of the entries the lookup made.
std::string MainProgramPathFromProc(std::uintptr_t addr) {
  if (FILE* f = std::fopen("/proc/self/maps", "re")) {
    char line[4096 + 128];
    std::string found;
    while (found.empty() && std::fgets(line, sizeof line, f) != nullptr) {
      unsigned long lo = 0, hi = 0;
      int path_at = 0;
      if (std::sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &path_at) < 2 ||
          addr < lo || addr >= hi || line[path_at] != '/') {
        continue;
      }
      found = line + path_at;
      if (!found.empty() && found.back() == '\n') found.pop_back();
    }
    std::fclose(f);
    if (!found.empty()) return found;
  }
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::vector<LoadedModule> LoadedModules() {
  std::vector<LoadedModule> out;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* v = static_cast<std::vector<LoadedModule>*>(data);
        LoadedModule m;
        m.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (m.path.empty() && !v->empty()) return 0;  // vDSO and the like: no file
        m.main = v->empty();
        m.base = info->dlpi_addr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
          const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (m.text_lo == 0 || lo < m.text_lo) m.text_lo = lo;
          m.text_hi = std::max<std::uintptr_t>(m.text_hi, lo + ph.p_memsz);
        }
        // The shared runtime itself: built without patchable entries and never traced, so its
        // file is not read. (Linked statically, the runtime is part of the program, scanned.)
        const auto self = reinterpret_cast<std::uintptr_t>(&LoadedModules);
        if (!m.main && self >= m.text_lo && self < m.text_hi) return 0;
        m.build_id = BuildIdOf(info);
        v->push_back(std::move(m));
        return 0;
      },
      &out);
  return out;
}

// Whether `file` is the image mapped as `m`: the same build ID where the module has one, and its
// executable segments where `m` has them.
bool IsImageOf(const elf::ElfFile& file, const LoadedModule& m) {
  if (!m.build_id.empty() && file.BuildId() != m.build_id) return false;
  std::uintptr_t lo = 0, hi = 0;
  for (const Elf64_Phdr& ph : file.segments()) {
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
    const std::uintptr_t seg_lo = m.base + ph.p_vaddr;
    if (lo == 0 || seg_lo < lo) lo = seg_lo;
    hi = std::max<std::uintptr_t>(hi, seg_lo + ph.p_memsz);
  }
  return lo == m.text_lo && hi == m.text_hi;
}

// The main program's file, and its path in m->path. dl_iterate_phdr names every module but the
// program. AT_EXECFN is the path execve was given (glibc's ld.so sets it to the program's when it
// started the program itself), relative to the working directory of that moment; it is taken
// when the file there is the image mapped (IsImageOf), else the path comes from /proc/self/maps.
std::unique_ptr<elf::ElfFile> OpenMainProgram(LoadedModule* m, std::string* error) {
  const auto* execfn = reinterpret_cast<const char*>(::getauxval(AT_EXECFN));
  if (execfn != nullptr && execfn[0] != '\0') {
    char resolved[PATH_MAX];
    if (::realpath(execfn, resolved) != nullptr) {
      std::unique_ptr<elf::ElfFile> file = elf::ElfFile::Open(resolved, error);
      if (file && IsImageOf(*file, *m)) {
        m->path = resolved;
        return file;
      }
    }
  }
  m->path = MainProgramPathFromProc(m->text_lo);
  return elf::ElfFile::Open(m->path, error);
}

bool Known(const LoadedModule& m) {
  for (const Module& k : St().modules) {
    if (k.loaded.base == m.base && k.loaded.main == m.main && (m.main || k.loaded.path == m.path)) {
      return true;
    }
  }
  return false;
}

// Program threads other than the caller (the runtime's own hush-* threads never run traced code).
// A library thread names itself as it starts: once none is starting, every one is named. One
// that starts after the wait and is seen unnamed counts as a program thread: the answer can only
// err towards "others exist", which refuses what would be unsafe with them.
bool OtherThreadsExist() {
  if (!base::WaitForLibraryThreadsStarted()) return true;
  base::DirStream tasks = base::DirStream::Open("/proc/self/task");
  if (!tasks) return true;
  int others = 0;
  const pid_t self = static_cast<pid_t>(::gettid());
  while (const char* name = tasks.Next()) {
    const pid_t tid = static_cast<pid_t>(std::atoi(name));
    if (tid == self) continue;
    char path[64], comm[32] = {};
    std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    if (FILE* f = std::fopen(path, "re")) {
      if (std::fgets(comm, sizeof comm, f) == nullptr) comm[0] = '\0';
      std::fclose(f);
    }
    if (std::strncmp(comm, "hush-", 5) != 0) ++others;
  }
  return others > 0;
}

// OtherThreadsExist, asked at most once per scan and only when an entry needs the answer (a
// split NOP): it lists /proc/self/task, whose entries the process's exit must then flush.
class ThreadCheck {
 public:
  bool SingleThreaded() {
    if (!checked_) {
      single_threaded_ = !OtherThreadsExist();
      checked_ = true;
    }
    return single_threaded_;
  }

 private:
  bool checked_ = false;
  bool single_threaded_ = true;
};

bool InCallRange(std::uintptr_t target, std::uintptr_t lo, std::uintptr_t hi) {
  const std::int64_t kReach = static_cast<std::int64_t>(patch::arch::JumpReach()) - 64;
  const auto dist = [](std::uintptr_t a, std::uintptr_t b) {
    return a > b ? static_cast<std::int64_t>(a - b) : static_cast<std::int64_t>(b - a);
  };
  return dist(target, lo) < kReach && dist(target, hi) < kReach;
}

// `bytes` of fresh read-write memory within jump reach (arch::JumpReach) of all of [lo, hi), or 0.
std::uintptr_t MapNear(std::uintptr_t lo, std::uintptr_t hi, std::size_t bytes) {
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  constexpr std::uintptr_t kStep = std::uintptr_t{1} << 21;
  for (std::uintptr_t i = 1; i < 768; ++i) {
    for (int dir = 0; dir < 2; ++dir) {
      const std::uintptr_t lo_page = lo & ~(page - 1);
      if (dir == 0 && lo_page < i * kStep + bytes) continue;
      const std::uintptr_t hint =
          dir == 0 ? lo_page - i * kStep - bytes : ((hi + page - 1) & ~(page - 1)) + i * kStep;
      void* p = ::mmap(reinterpret_cast<void*>(hint), bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      if (p == MAP_FAILED) continue;
      const auto s = reinterpret_cast<std::uintptr_t>(p);
      if (!InCallRange(s, lo, hi) || !InCallRange(s + bytes, lo, hi)) {
        ::munmap(p, bytes);
        continue;
      }
      return s;
    }
  }
  return 0;
}

// Gives every entry of `entries` (all in [lo, hi)) its stub (patch/arch: EncodeEntryStub) in a
// new arena mapped near the module: the trampoline's address at offset 0, the marked
// trampoline's at 8, then the stubs (`marked`: stubs to the marked one). An arena is written
// once and made read+execute before any entry jumps to it (never changed again, never unmapped:
// a thread may be inside a stub long after its entry was restored).
bool MakeStubs(std::uintptr_t lo, std::uintptr_t hi, const std::vector<std::uintptr_t>& entries,
               bool marked) {
  const std::size_t stub_size = patch::arch::EntryStubSize();
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t bytes = (stub_size * (entries.size() + 1) + page - 1) & ~(page - 1);
  const std::uintptr_t arena = MapNear(lo, hi, bytes);
  if (arena == 0) return false;
  const std::uintptr_t trampolines[2] = {reinterpret_cast<std::uintptr_t>(&hush_ftrace_entry),
                                         reinterpret_cast<std::uintptr_t>(&hush_ftrace_entry_marked)};
  static_assert(sizeof trampolines <= 16);  // both before the first stub (EntryStubSize() >= 16)
  std::memcpy(reinterpret_cast<void*>(arena), trampolines, sizeof trampolines);
  const std::uintptr_t slot = arena + (marked ? sizeof(std::uintptr_t) : 0);
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> made;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::uintptr_t stub = arena + stub_size * (i + 1);
    const std::uintptr_t body = entries[i] + patch::arch::EntrySize();
    if (!patch::arch::EncodeEntryStub(stub, body, slot, reinterpret_cast<std::uint8_t*>(stub))) {
      ::munmap(reinterpret_cast<void*>(arena), bytes);
      return false;
    }
    made.emplace_back(entries[i], stub);
  }
  if (::mprotect(reinterpret_cast<void*>(arena), bytes, PROT_READ | PROT_EXEC) != 0) {
    ::munmap(reinterpret_cast<void*>(arena), bytes);
    return false;
  }
  // New code: to the point of unification (aarch64: DC CVAU, IC IVAU; nothing on x86-64). The
  // batch that makes entries jump here synchronizes every CPU after this (patch.cc).
  __builtin___clear_cache(reinterpret_cast<char*>(arena), reinterpret_cast<char*>(arena + bytes));
  St().stub_arenas.push_back(arena);
  (marked ? St().marked_stub_of : St().stub_of).insert(made.begin(), made.end());
  return true;
}

// The name a person reads: demangled when it is a C++ symbol, else as stored.
std::string Demangled(const std::string& mangled) {
  if (mangled.rfind("_Z", 0) != 0) return mangled;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && d != nullptr ? std::string(d.get()) : mangled;
}

// Globs against one symbol's names.
class Selector {
 public:
  explicit Selector(const std::vector<std::string>& globs) : globs_(globs) {
    for (const std::string& g : globs_) all_ = all_ || g == "*";
  }
  bool Matches(const std::string& mangled) const {
    if (all_) return true;
    if (AnyGlob(mangled)) return true;
    if (mangled.rfind("_Z", 0) != 0) return false;
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> d(
        abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
    if (status != 0 || d == nullptr) return false;
    const std::string full = d.get();
    if (AnyGlob(full)) return true;
    const std::size_t paren = full.find('(');
    return paren != std::string::npos && AnyGlob(full.substr(0, paren));
  }

 private:
  bool AnyGlob(const std::string& name) const {
    for (const std::string& g : globs_) {
      if (registry::GlobMatches(g, name)) return true;
    }
    return false;
  }
  const std::vector<std::string>& globs_;
  bool all_ = false;
};

// The triggers (indices into Options::triggers) whose globs match one symbol's names.
using TriggerHits = std::vector<std::uint32_t>;

// Adds the selected entries of module `m` to `out`, and the marks of those that a trigger's
// selector of `triggers` matches to St().marks. Returns whether it has entries at all.
bool SelectEntries(LoadedModule& m, const Selector& sel, const std::vector<Selector>& triggers,
                   ThreadCheck& threads, std::vector<patch::CodeSite>* out, std::string* warning) {
  std::string error;
  std::unique_ptr<elf::ElfFile> file =
      m.main ? OpenMainProgram(&m, &error) : elf::ElfFile::Open(m.path, &error);
  if (!file) return false;  // not a file we can read (e.g. deleted): nothing to trace there
  // (table address, entries); the tables need not be 8-byte aligned (gcc's __mcount_loc is not
  // always): entries are read with memcpy.
  std::vector<std::pair<const unsigned char*, std::size_t>> arrays;
  for (const elf::ElfFile::Section& s : file->sections()) {
    if ((s.name != "__patchable_function_entries" && s.name != "__mcount_loc") ||
        (s.header.sh_flags & SHF_ALLOC) == 0 || s.header.sh_size < 8) {
      continue;
    }
    arrays.emplace_back(reinterpret_cast<const unsigned char*>(m.base + s.header.sh_addr),
                        s.header.sh_size / 8);
  }
  if (arrays.empty()) return false;
  std::vector<elf::ElfFile::Symbol> syms;
  if (!file->FunctionSymbols(&syms, &error)) {
    *warning = error;
    return true;
  }
  std::vector<std::pair<std::uintptr_t, std::size_t>> selected_entries;  // (entry, its symbol)
  std::vector<std::uint8_t> verdict(syms.size(), 2);  // 2 unknown, 1 selected, 0 not
  for (const auto& [entries, count] : arrays) {
    for (std::size_t k = 0; k < count; ++k) {
      std::uint64_t entry;
      std::memcpy(&entry, entries + 8 * k, sizeof entry);
      const std::uintptr_t addr = static_cast<std::uintptr_t>(entry);
      if (addr < m.text_lo || addr + patch::arch::EntrySize() > m.text_hi) continue;
      ++St().entries;
      const std::uint64_t link = addr - m.base;
      auto it = std::upper_bound(
          syms.begin(), syms.end(), link,
          [](std::uint64_t v, const elf::ElfFile::Symbol& s) { return v < s.value; });
      bool selected = false;
      // The symbols at the greatest value <= link (aliases share it) that contain the entry.
      if (it == syms.begin()) continue;
      --it;
      for (const std::uint64_t value = it->value;; --it) {
        if (link < it->value + std::max<std::uint64_t>(it->size, 1)) {
          std::uint8_t& v = verdict[static_cast<std::size_t>(it - syms.begin())];
          if (v == 2) v = sel.Matches(it->name) ? 1 : 0;
          selected = v == 1;
        }
        if (selected || it == syms.begin() || (it - 1)->value != value) break;
      }
      if (!selected) continue;
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(addr);
      const patch::arch::EntryKind kind = patch::arch::ClassifyEntry(bytes);
      if (kind == patch::arch::EntryKind::kSplitNop) {
        if (!threads.SingleThreaded()) {
          ++St().refused_split;
          continue;
        }
        ++St().converted_split;
      } else if (kind != patch::arch::EntryKind::kNop) {
        continue;
      }
      selected_entries.emplace_back(addr, static_cast<std::size_t>(it - syms.begin()));
    }
  }
  // Marks: the triggers each selected entry's symbol matches (only when there are triggers).
  std::vector<TriggerHits> hits(selected_entries.size());
  if (!triggers.empty()) {
    std::unordered_map<std::size_t, TriggerHits> by_symbol;
    for (std::size_t i = 0; i < selected_entries.size(); ++i) {
      const std::size_t sym = selected_entries[i].second;
      auto [found, fresh] = by_symbol.try_emplace(sym);
      if (fresh) {
        for (std::uint32_t t = 0; t < triggers.size(); ++t) {
          if (triggers[t].Matches(syms[sym].name)) found->second.push_back(t);
        }
      }
      hits[i] = found->second;
    }
  }
  std::vector<std::uintptr_t> need, need_marked;
  for (std::size_t i = 0; i < selected_entries.size(); ++i) {
    const std::uintptr_t addr = selected_entries[i].first;
    if (hits[i].empty() ? St().stub_of.count(addr) == 0 : St().marked_stub_of.count(addr) == 0) {
      (hits[i].empty() ? need : need_marked).push_back(addr);
    }
  }
  if ((!need.empty() && !MakeStubs(m.text_lo, m.text_hi, need, false)) ||
      (!need_marked.empty() && !MakeStubs(m.text_lo, m.text_hi, need_marked, true))) {
    *warning = m.path + ": no memory for its entry stubs within jump reach of its code";
    return true;
  }
  const TriggerHooks& hooks = St().options.hooks;
  for (std::size_t i = 0; i < selected_entries.size(); ++i) {
    const std::uintptr_t addr = selected_entries[i].first;
    const bool marked = !hits[i].empty();
    patch::CodeSite site;
    site.addr = addr;
    site.resume = addr + patch::arch::EntrySize();
    const std::uintptr_t stub = (marked ? St().marked_stub_of : St().stub_of).at(addr);
    if (!patch::arch::EncodeJump(addr, stub, site.bytes)) continue;
    out->push_back(site);
    if (!marked) continue;
    ++St().marked;
    const std::string name = Demangled(syms[selected_entries[i].second].name);
    for (const std::uint32_t t : hits[i]) {
      void* state = hooks.make_state(hooks.context, St().options.triggers[t].spec, name.c_str(), addr);
      if (state != nullptr) St().marks.push_back({addr, hooks.generation, state});
    }
  }
  return true;
}

// Publishes St().marks as the table hush_ftrace_exit_marked reads (shadow.h, g_marks). The one
// it replaces is never freed.
void PublishMarks() {
  auto* table = new MarkTable();
  table->on_return = St().options.hooks.on_return;
  table->marks = St().marks;
  std::sort(table->marks.begin(), table->marks.end(),
            [](const Mark& a, const Mark& b) { return a.entry < b.entry; });
  g_marks.store(table, std::memory_order_release);
}

// Scans modules not seen yet, patches their selected entries in one batch, writes their map.
// g_mu held.
void ScanNew() {
  const std::vector<LoadedModule> loaded = LoadedModules();
  const Selector sel(St().options.globs);
  std::vector<Selector> triggers;
  for (std::size_t t = 0; t < St().options.triggers.size(); ++t) {
    triggers.emplace_back(St().trigger_globs[t]);
  }
  const std::size_t marks_before = St().marks.size();
  const std::uint64_t refused_before = St().refused_split;
  ThreadCheck threads;
  std::vector<patch::CodeSite> batch;
  std::vector<std::size_t> new_modules;
  for (const LoadedModule& m : loaded) {
    if (Known(m)) continue;
    std::string warning;
    Module mod;
    mod.loaded = m;
    mod.has_entries = SelectEntries(mod.loaded, sel, triggers, threads, &batch, &warning);
    if (!warning.empty()) std::fprintf(stderr, "hushtrace: function tracing: %s\n", warning.c_str());
    St().modules.push_back(std::move(mod));
    if (St().modules.back().has_entries) new_modules.push_back(St().modules.size() - 1);
  }
  if (St().refused_split != refused_before) {
    std::fprintf(stderr,
                 "hushtrace: %llu function entries are five one-byte NOPs (gcc "
                 "-fpatchable-function-entry) and other threads were running: they stay "
                 "untraced (start tracing at program start, or build with clang, or with gcc "
                 "-pg -mfentry -mnop-mcount -mrecord-mcount)\n",
                 static_cast<unsigned long long>(St().refused_split - refused_before));
  }
  // Before the entries jump to the marked stubs: a marked call finds its marks.
  if (St().marks.size() != marks_before) PublishMarks();
  if (!batch.empty()) {
    patch::PrepareCode(batch);  // not part of the batch's time: nothing is rewritten yet
    TimedWriteCode(batch);
    St().patched.insert(St().patched.end(), batch.begin(), batch.end());
  }
  for (std::size_t i : new_modules) {
    const LoadedModule& m = St().modules[i].loaded;
    EmitModule(m.path.c_str(), m.build_id.c_str(), m.base);
  }
}

}  // namespace

bool Start(const Options& options, std::string* error) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (St().started) {
    *error = "function tracing is already active";
    return false;
  }
  if (patch::arch::EntryStubSize() == 0 || patch::arch::Unsupported() != nullptr) {
    *error = "function tracing is not supported on this architecture";
    return false;
  }
  // Without the unwinder wrappers an exception thrown through a traced frame would terminate
  // the program: warn when another library's definitions come first in lookup order.
  if (std::string why; !UnwindWrappersActive(&why)) {
    std::fprintf(stderr,
                 "hushtrace: warning: %s: a C++ exception thrown through a traced function will "
                 "terminate the program\n",
                 why.c_str());
  }
  RegisterEvents();
  St().options = options;
  St().trigger_globs.clear();
  for (const FunctionTrigger& t : options.triggers) St().trigger_globs.push_back({t.glob});
  if (options.hooks.make_state == nullptr) St().options.triggers.clear();
  St().marks.clear();  // the last session's: its states are gone with it
  St().marked = 0;
  if (g_marks.load(std::memory_order_relaxed) != nullptr) PublishMarks();
  g_settings.max_depth.store(options.depth == 0 ? kCapacity : std::min(options.depth, kCapacity),
                             std::memory_order_relaxed);
  g_settings.min_ticks.store(options.min_duration_ticks, std::memory_order_relaxed);
  g_settings.ever_started.store(true, std::memory_order_relaxed);
  St().entries = 0;
  St().modules.clear();  // a new session writes its own module map
  St().started = true;
  ScanNew();
  return true;
}

void Rescan() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (St().started) ScanNew();
}

void ForgetModule(std::uintptr_t base, const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<Module>& modules = St().modules;
  for (auto it = modules.begin(); it != modules.end(); ++it) {
    if (it->loaded.base != base || it->loaded.path != path) continue;
    const std::uintptr_t lo = it->loaded.text_lo, hi = it->loaded.text_hi;
    std::erase_if(St().patched,
                  [&](const patch::CodeSite& s) { return s.addr >= lo && s.addr < hi; });
    const std::size_t marks = St().marks.size();
    std::erase_if(St().marks, [&](const Mark& k) { return k.entry >= lo && k.entry < hi; });
    if (St().marks.size() != marks) PublishMarks();
    modules.erase(it);
    return;
  }
}

void Stop() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!St().started) return;
  St().started = false;
  // Only entries of modules still loaded: a dlclose()d module's pages may hold other code now.
  const std::vector<LoadedModule> loaded = LoadedModules();
  std::vector<patch::CodeSite> batch;
  for (const patch::CodeSite& s : St().patched) {
    const bool present = std::any_of(loaded.begin(), loaded.end(), [&](const LoadedModule& m) {
      return s.addr >= m.text_lo && s.addr < m.text_hi;
    });
    if (!present ||
        std::memcmp(reinterpret_cast<const void*>(s.addr), s.bytes, patch::arch::SiteSize()) != 0) {
      continue;
    }
    patch::CodeSite nop = s;
    patch::arch::EncodeNop(nop.bytes);
    batch.push_back(nop);
  }
  TimedWriteCode(batch);
  St().patched.clear();
  St().marked = 0;
  if (std::uint64_t n = g_overflow.load(std::memory_order_relaxed)) {
    std::fprintf(stderr,
                 "hushtrace: %llu calls deeper than the shadow stack (%u frames) were not traced\n",
                 static_cast<unsigned long long>(n), kCapacity);
  }
}

Stats GetStats() {
  std::lock_guard<std::mutex> lock(g_mu);
  Stats s;
  for (const Module& m : St().modules) s.modules += m.has_entries ? 1 : 0;
  s.entries = St().entries;
  s.patched = St().patched.size();
  s.marked = St().marked;
  s.refused_split = St().refused_split;
  s.converted_split = St().converted_split;
  s.overflow = g_overflow.load(std::memory_order_relaxed);
  s.unmatched_returns = g_unmatched.load(std::memory_order_relaxed);
  s.last_batch_us = St().last_batch_us;
  s.last_batch_preempted = St().last_batch_preempted;
  return s;
}

}  // namespace hush::functrace
