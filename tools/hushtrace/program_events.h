// What `record` can know about PROGRAM's tracepoints before it starts it (issue 15: mistakes are
// said before the program runs, not after): the tracepoints of the executable and of every shared
// library the dynamic loader will map for it at start-up, read from the files as `list` reads them.
//
//   ProgramEvents events;
//   if (ReadProgramEvents("./server", {preloaded...}, &events)) ... events.events ...
//
// The libraries are the DT_NEEDED closure, each name resolved in the loader's order (ld.so(8)):
// DT_RPATH of the needing module and of the executable when the module has no DT_RUNPATH,
// LD_LIBRARY_PATH, DT_RUNPATH, the directories of /etc/ld.so.conf (its `include` globs
// followed), then the system directories. $ORIGIN is expanded; a path with $LIB or $PLATFORM is
// skipped. Not the loader's cache (/etc/ld.so.cache is a format of glibc's own): a library
// installed only in a directory the cache knows but ld.so.conf does not name is reported missing.
// Libraries opened later with dlopen() are not known here, so a pattern that matches nothing is a
// warning, never an error.
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_PROGRAM_EVENTS_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_PROGRAM_EVENTS_H_

#include <string>
#include <vector>

#include "elf/tracepoints.h"
#include "filter/trigger_spec.h"

namespace hush::cli {

struct ProgramEvents {
  std::vector<std::string> modules;  // the files read: the executable first
  std::vector<std::string> missing;  // DT_NEEDED names not found in any directory searched
  std::vector<registry::MetaRecord> events;  // every tracepoint of those modules
};

// False when `program` (a path, or a name looked up in PATH) is not an ELF file this build can
// read (a script, a missing file: nothing can be said before it runs).
bool ReadProgramEvents(const std::string& program, const std::vector<std::string>& preload,
                       ProgramEvents* out);

// The check `record` makes before starting PROGRAM, with its messages on stderr:
//   * -e patterns that match no tracepoint: a warning each (dlopen may still add one);
//   * a --filter (`filter`, when `has_filter`) that binds to none of the tracepoints the patterns
//     select, where some are selected: an error naming the first event and why it does not bind.
// Returns false for that error (record exits 2 without starting PROGRAM).
bool CheckProgramEvents(const ProgramEvents& events, const std::string& program,
                        const std::vector<std::string>& patterns, bool has_filter,
                        const std::string& filter);

// The check of the function triggers among `triggers` (`--snapshot-on 'func:NAME>D'`,
// filter/trigger_spec.h) against the traceable functions of `events.modules` (a function symbol
// holding an entry of __patchable_function_entries or __mcount_loc, names matched as
// `--functions` matches them: mangled, demangled, demangled without parameters):
//   * a trigger that matches no traceable function: a warning (dlopen may still bring one);
//   * one that matches some, none of which `functions` selects: an error naming one (a call
//     fires only if it is traced).
// Returns false for that error (record exits 2 without starting PROGRAM).
bool CheckFunctionTriggers(const ProgramEvents& events, const std::string& program,
                           const std::vector<std::string>& functions,
                           const std::vector<filter::TriggerSpec>& triggers);

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_PROGRAM_EVENTS_H_
