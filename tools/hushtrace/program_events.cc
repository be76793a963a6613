// See program_events.h.
#include "program_events.h"

#include <fnmatch.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <utility>

#include "elf/elf_file.h"
#include "export/symbolizer.h"
#include "filter/filter.h"
#include "filter/program.h"
#include "func_profile.h"
#include "record_functions.h"

namespace hush::cli {
namespace {

constexpr std::size_t kMaxModules = 512;  // a closure larger than this is not a real program

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string DirOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::vector<std::string> SplitPath(const std::string& list, const char* separators) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find_first_of(separators, start);
    if (end == std::string::npos) end = list.size();
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A search-path entry with $ORIGIN / ${ORIGIN} replaced by `origin`; "" for one the loader
// expands from its own state ($LIB, $PLATFORM).
std::string ExpandOrigin(std::string entry, const std::string& origin) {
  for (const char* token : {"${ORIGIN}", "$ORIGIN"}) {
    for (std::size_t at; (at = entry.find(token)) != std::string::npos;) {
      entry.replace(at, std::string(token).size(), origin);
    }
  }
  return entry.find('$') == std::string::npos ? entry : "";
}

// The directories of /etc/ld.so.conf, `include` globs followed (depth-limited).
void ReadLdSoConf(const std::string& file, int depth, std::vector<std::string>* dirs) {
  std::ifstream in(file);
  std::string line;
  while (depth < 4 && std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    const std::vector<std::string> words = SplitPath(line, " \t\r");
    if (words.empty()) continue;
    if (words[0] == "include") {
      for (std::size_t i = 1; i < words.size(); ++i) {
        std::string pattern = words[i];
        if (pattern[0] != '/') pattern = DirOf(file) + "/" + pattern;
        glob_t g = {};
        if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
          for (std::size_t k = 0; k < g.gl_pathc; ++k) ReadLdSoConf(g.gl_pathv[k], depth + 1, dirs);
        }
        ::globfree(&g);
      }
    } else if (words[0][0] == '/') {
      dirs->push_back(words[0]);
    }
  }
}

std::vector<std::string> SystemDirs(std::uint16_t machine) {
  std::vector<std::string> dirs;
  ReadLdSoConf("/etc/ld.so.conf", 0, &dirs);
  const char* triplet = machine == EM_X86_64    ? "x86_64-linux-gnu"
                        : machine == EM_AARCH64 ? "aarch64-linux-gnu"
                                                : nullptr;
  if (triplet != nullptr) {
    dirs.push_back(std::string("/lib/") + triplet);
    dirs.push_back(std::string("/usr/lib/") + triplet);
  }
  for (const char* d : {"/lib64", "/usr/lib64", "/lib", "/usr/lib"}) dirs.push_back(d);
  return dirs;
}

struct Module {
  std::string path;
  std::unique_ptr<elf::ElfFile> file;
  elf::ElfFile::Dependencies deps;
};

// Opens `path` if it is an ELF module for `machine`.
std::unique_ptr<elf::ElfFile> OpenFor(const std::string& path, std::uint16_t machine) {
  if (!IsFile(path)) return nullptr;
  std::string error;
  std::unique_ptr<elf::ElfFile> f = elf::ElfFile::Open(path, &error);
  if (f && f->header().e_machine != machine) f.reset();
  return f;
}

// The function symbols of `file` (mangled, as stored) that hold a patchable entry.
std::vector<std::string> TraceableFunctions(const elf::ElfFile& file) {
  std::vector<std::uint64_t> slots;
  for (const elf::ElfFile::Section& s : file.sections()) {
    if (s.name != "__patchable_function_entries" && s.name != "__mcount_loc") continue;
    for (std::uint64_t off = 0; off + 8 <= s.header.sh_size; off += 8) slots.push_back(s.header.sh_addr + off);
  }
  std::vector<elf::ElfFile::Symbol> syms;
  std::string error;
  if (slots.empty() || !file.FunctionSymbols(&syms, &error)) return {};
  std::set<std::string> names;
  for (const elf::ElfFile::Pointer& p : file.ResolvePointers(slots)) {
    if (!p.ok) continue;
    auto it = std::upper_bound(syms.begin(), syms.end(), p.value,
                               [](std::uint64_t v, const elf::ElfFile::Symbol& s) { return v < s.value; });
    // The symbols at the greatest value <= the entry (aliases share it) that contain it.
    while (it != syms.begin()) {
      --it;
      if (p.value < it->value + std::max<std::uint64_t>(it->size, 1)) names.insert(it->name);
      if (it == syms.begin() || (it - 1)->value != it->value) break;
    }
  }
  return {names.begin(), names.end()};
}

// As functrace's selection: the mangled name, the demangled one, or that without parameters.
bool FunctionMatches(const std::string& glob, const std::string& mangled) {
  return ::fnmatch(glob.c_str(), mangled.c_str(), 0) == 0 ||
         FunctionNameMatches(glob, exporter::Demangle(mangled));
}

}  // namespace

bool ReadProgramEvents(const std::string& program, const std::vector<std::string>& preload,
                       ProgramEvents* out) {
  *out = ProgramEvents();
  const std::string exe_path = FindInPath(program);
  std::string error;
  std::unique_ptr<elf::ElfFile> exe = elf::ElfFile::Open(exe_path, &error);
  if (!exe || (exe->type() != ET_EXEC && exe->type() != ET_DYN)) return false;
  const std::uint16_t machine = exe->header().e_machine;
  const char* ld_library_path = std::getenv("LD_LIBRARY_PATH");
  const std::vector<std::string> env_dirs =
      SplitPath(ld_library_path != nullptr ? ld_library_path : "", ":;");
  const std::vector<std::string> system_dirs = SystemDirs(machine);

  std::vector<Module> modules;
  std::set<std::string> seen;  // sonames and paths resolved or tried
  const auto add = [&](std::string path, std::unique_ptr<elf::ElfFile> file) {
    Module m{std::move(path), std::move(file), {}};
    std::string deps_error;
    if (!m.file->ReadDependencies(&m.deps, &deps_error)) m.deps = {};
    modules.push_back(std::move(m));
  };
  seen.insert(exe_path);
  add(exe_path, std::move(exe));
  for (const std::string& p : preload) {
    if (seen.insert(p).second) {
      if (std::unique_ptr<elf::ElfFile> f = OpenFor(p, machine)) add(p, std::move(f));
    }
  }
  // Breadth first, as the loader maps them.
  for (std::size_t i = 0; i < modules.size() && modules.size() < kMaxModules; ++i) {
    const elf::ElfFile::Dependencies deps = modules[i].deps;
    const std::string origin = DirOf(modules[i].path);
    for (const std::string& name : deps.needed) {
      if (!seen.insert(name).second) continue;
      std::vector<std::string> candidates;
      if (name.find('/') != std::string::npos) {
        candidates.push_back(name);
      } else {
        std::vector<std::string> dirs;
        if (deps.rpath) {
          for (const std::string& d : deps.search) dirs.push_back(ExpandOrigin(d, origin));
          if (i != 0 && modules[0].deps.rpath) {
            for (const std::string& d : modules[0].deps.search)
              dirs.push_back(ExpandOrigin(d, DirOf(modules[0].path)));
          }
        }
        dirs.insert(dirs.end(), env_dirs.begin(), env_dirs.end());
        if (!deps.rpath) {
          for (const std::string& d : deps.search) dirs.push_back(ExpandOrigin(d, origin));
        }
        dirs.insert(dirs.end(), system_dirs.begin(), system_dirs.end());
        for (const std::string& d : dirs) {
          if (!d.empty()) candidates.push_back(d + "/" + name);
        }
      }
      bool found = false;
      for (const std::string& c : candidates) {
        if (std::unique_ptr<elf::ElfFile> f = OpenFor(c, machine)) {
          if (seen.insert(c).second) add(c, std::move(f));
          found = true;
          break;
        }
      }
      if (!found) out->missing.push_back(name);
    }
  }
  for (Module& m : modules) {
    out->modules.push_back(m.path);
    elf::ModuleTracepoints tps;
    std::string tp_error;
    if (!elf::ReadTracepoints(*m.file, &tps, &tp_error)) continue;
    for (elf::Tracepoint& t : tps.tracepoints) out->events.push_back(std::move(t.meta));
  }
  return true;
}

bool CheckProgramEvents(const ProgramEvents& events, const std::string& program,
                        const std::vector<std::string>& patterns, bool has_filter,
                        const std::string& filter_text) {
  if (events.events.empty()) {
    // Not even libhushtrace's own tracepoints (sched:*, func:*): PROGRAM is a launcher (env,
    // a shell, a wrapper) or does not link the runtime; its child is checked when it starts.
    std::fprintf(stderr,
                 "hushtrace record: note: %s and the %zu libraries it links have no hushtrace "
                 "tracepoint; the patterns are checked when a traced program starts\n",
                 program.c_str(), events.modules.size() - 1);
    return true;
  }
  std::vector<const registry::MetaRecord*> selected;
  std::set<const registry::MetaRecord*> in_selected;
  for (const std::string& pattern : patterns) {
    bool any = false;
    for (const registry::MetaRecord& e : events.events) {
      if (::fnmatch(pattern.c_str(), e.FullName().c_str(), 0) != 0) continue;
      any = true;
      if (in_selected.insert(&e).second) selected.push_back(&e);
    }
    if (!any) {
      std::fprintf(stderr,
                   "hushtrace record: warning: -e '%s' matches no tracepoint of %s or of the %zu "
                   "libraries it links (those it loads with dlopen may add some; 'hushtrace list "
                   "%s' shows them)\n",
                   pattern.c_str(), program.c_str(), events.modules.size() - 1, program.c_str());
    }
  }
  if (!has_filter || selected.empty()) return true;
  filter::Error error;
  const std::unique_ptr<filter::Parsed> parsed = filter::Parse(filter_text, &error);
  if (!parsed) return true;  // a syntax error was refused before (CheckRuntimeFilter)
  std::string first_why;
  filter::Error first_error;
  for (const registry::MetaRecord* e : selected) {
    std::vector<std::string> names, types;
    for (const registry::FieldInfo& f : e->fields) {
      names.push_back(f.name);
      types.push_back(f.type);
    }
    filter::Error why;
    if (filter::Program::Bind(*parsed, e->FullName(), names, types, &why)) return true;
    if (first_why.empty()) first_why = e->FullName() + ": " + why.Message(), first_error = why;
  }
  std::fprintf(stderr,
               "hushtrace record: --filter '%s' applies to none of the %zu tracepoints the event "
               "patterns select in %s and its libraries (%s); %s was not started\n%s\n",
               filter_text.c_str(), selected.size(), program.c_str(), first_why.c_str(),
               program.c_str(), filter::Caret(filter_text, first_error.column).c_str());
  return false;
}

bool CheckFunctionTriggers(const ProgramEvents& events, const std::string& program,
                           const std::vector<std::string>& functions,
                           const std::vector<filter::TriggerSpec>& triggers) {
  std::vector<const filter::TriggerSpec*> checked;
  for (const filter::TriggerSpec& t : triggers) {
    if (!t.function.empty()) checked.push_back(&t);
  }
  if (checked.empty()) return true;
  std::vector<std::pair<std::string, std::string>> traceable;  // (module, mangled name)
  for (const std::string& path : events.modules) {
    std::string error;
    const std::unique_ptr<elf::ElfFile> file = elf::ElfFile::Open(path, &error);
    if (!file) continue;
    for (std::string& name : TraceableFunctions(*file)) traceable.emplace_back(path, std::move(name));
  }
  for (const filter::TriggerSpec* t : checked) {
    const std::pair<std::string, std::string>* matched = nullptr;
    bool traced = false;
    for (const auto& f : traceable) {
      if (!FunctionMatches(t->function, f.second)) continue;
      if (matched == nullptr) matched = &f;
      for (const std::string& g : functions) traced = traced || FunctionMatches(g, f.second);
      if (traced) break;
    }
    if (matched == nullptr) {
      std::fprintf(stderr,
                   "hushtrace record: warning: --snapshot-on '%s' matches no traceable function "
                   "of %s or of the %zu libraries it links (built with patchable entries; those "
                   "it loads with dlopen may add some)\n",
                   t->text.c_str(), program.c_str(), events.modules.size() - 1);
    } else if (!traced) {
      std::fprintf(stderr,
                   "hushtrace record: --snapshot-on '%s' matches %s in %s, which --functions does "
                   "not trace (a trigger fires on traced calls: add it to --functions); %s was "
                   "not started\n",
                   t->text.c_str(), exporter::Demangle(matched->second).c_str(),
                   matched->first.c_str(), program.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace hush::cli
