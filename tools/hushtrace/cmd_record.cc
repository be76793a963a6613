// hushtrace record [options] [--] PROGRAM ARGS...: runs PROGRAM with a tracing session started by
// the hushtrace runtime it links, through the HUSHTRACE_* environment variables. See docs/cli.md.
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli_app.h"
#include "commands.h"
#include "filter/pattern_limits.h"
#include "filter/trigger_spec.h"
#include "format/numbered_name.h"
#include "hushtrace/reader.h"
#include "open_trace.h"
#include "program_events.h"
#include "record_functions.h"
#include "base/dir_stream.h"
#include "base/unique_fd.h"
#include "base/env.h"
#include "base/parse.h"

namespace hush::cli {
namespace {

constexpr char kUsage[] = "record [options] [--] PROGRAM [ARGS...]";
constexpr char kDescription[] =
    "Runs PROGRAM with a tracing session. The hushtrace runtime linked into PROGRAM starts the\n"
    "session from the environment (HUSHTRACE_EVENTS, HUSHTRACE_OUTPUT, HUSHTRACE_MODE,\n"
    "HUSHTRACE_BUFFER_SIZE, HUSHTRACE_SCHED, HUSHTRACE_FOLLOW, HUSHTRACE_FILTER and\n"
    "HUSHTRACE_SNAPSHOT_ON, set here), writes the trace when PROGRAM exits, and babeltrace2 reads it.";
constexpr char kFooter[] =
    "The first argument that is not an option starts the command line of PROGRAM (a PATH lookup\n"
    "is done when it has no '/'). SIGINT, SIGTERM, SIGHUP and SIGUSR2 sent to hushtrace are\n"
    "forwarded to PROGRAM (those sent by the terminal reach it directly).\n"
    "\n"
    "exit status: PROGRAM's exit status, or 128+N if a signal N killed it; 1 if the trace\n"
    "directory cannot be created; 2 for bad arguments or an output directory that is not empty;\n"
    "127 if PROGRAM cannot be run.\n";

constexpr std::size_t kMinBufferSize = hush::base::env::kMinBufferSize;
constexpr unsigned long long kMaxBufferSize = hush::base::env::kMaxBufferSize;  // the runtime refuses more

int BadArguments(const std::string& message) {
  std::fprintf(stderr, "hushtrace record: %s\n(see 'hushtrace record --help')\n", message.c_str());
  return 2;
}

// The size a text like "64k" stands for; false if it is not a size or is larger than
// kMaxBufferSize. The same parser as the traced program's (base/parse.h).
bool ParseBufferSize(const std::string& text, std::size_t* out) {
  std::uint64_t v = 0;
  if (!hush::base::ParseSize(text, kMaxBufferSize, &v)) return false;
  *out = static_cast<std::size_t>(v);
  return true;
}

std::string DefaultOutputName() {
  char stamp[32];
  const time_t now = ::time(nullptr);
  struct tm tm;
  ::localtime_r(&now, &tm);
  ::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return std::string("hushtrace-") + stamp;
}

bool IsEmptyDirectory(const std::string& path, bool* empty) {
  base::DirStream dir = base::DirStream::Open(path.c_str());
  if (!dir) return false;
  *empty = dir.Next() == nullptr;
  return true;
}

// Creates the trace directory (0700). The runtime accepts an existing empty directory that we
// own and refuses symbolic links; creating it here reports problems before PROGRAM runs.
// Returns 0, or the exit status after printing a message.
int CreateOutputDirectory(std::string* dir, bool is_default, bool* created) {
  *created = false;
  if (is_default) {
    const std::string base = DefaultOutputName();
    for (int n = 0; n < 1000; ++n) {
      const std::string name = n == 0 ? base : base + "-" + std::to_string(n);
      if (::mkdir(name.c_str(), 0700) == 0) {
        *dir = name;
        *created = true;
        return 0;
      }
      if (errno != EEXIST) {
        std::fprintf(stderr, "hushtrace record: cannot create the trace directory %s: %s\n",
                     name.c_str(), std::strerror(errno));
        return 1;
      }
    }
    std::fprintf(stderr, "hushtrace record: cannot find a free name for the trace directory\n");
    return 1;
  }
  if (::mkdir(dir->c_str(), 0700) == 0) {
    *created = true;
    return 0;
  }
  if (errno != EEXIST) {
    std::fprintf(stderr, "hushtrace record: cannot create the trace directory %s: %s\n",
                 dir->c_str(), std::strerror(errno));
    return 1;
  }
  struct stat st;
  bool empty = false;
  if (::lstat(dir->c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    return BadArguments(*dir + " is a symbolic link: give the directory it points to");
  }
  if (::lstat(dir->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return BadArguments(*dir + " exists and is not a directory");
  }
  if (st.st_uid != ::geteuid()) return BadArguments(*dir + " is not owned by this user");
  if (!IsEmptyDirectory(*dir, &empty)) {
    std::fprintf(stderr, "hushtrace record: cannot read %s: %s\n", dir->c_str(),
                 std::strerror(errno));
    return 1;
  }
  if (!empty) return BadArguments("the output directory " + *dir + " exists and is not empty");
  return 0;
}

std::string AbsolutePath(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  std::string cwd;
  if (char* c = ::getcwd(nullptr, 0)) {
    cwd = c;
    std::free(c);
  }
  if (cwd.empty()) return path;
  std::string rel = path;
  while (rel.size() > 2 && rel.compare(0, 2, "./") == 0) rel.erase(0, 2);
  return cwd == "/" ? "/" + rel : cwd + "/" + rel;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

int CountStreams(const std::string& dir) {
  base::DirStream list = base::DirStream::Open(dir.c_str());
  int n = 0;
  while (const char* name = list.Next()) {
    std::uint32_t index = 0;
    if (format::ParseNumberedName(name, format::kStreamPrefix, &index)) ++n;
  }
  return n;
}

// ---- signal forwarding ----

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR2};
volatile sig_atomic_t g_child = 0;

void Forward(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;
  // A signal the terminal sent (Ctrl-C, hangup) went to the whole foreground process group, the
  // child included: forwarding it would deliver it twice.
  const bool from_terminal = info != nullptr && info->si_code == SI_KERNEL;
  const pid_t child = g_child;
  if (child > 0 && !from_terminal) ::kill(child, sig);
  errno = saved_errno;
}

constexpr std::uint64_t kFunctionRingBytes = 16 << 20;  // "16M": a function session's default ring

struct Options {
  std::vector<std::string> patterns;
  bool patterns_implied = false;  // no -e: "*", or "func:*" with --functions
  std::string output;
  std::string mode = "stream";
  std::string buffer_size = "1M";
  std::string buffer_budget;  // HUSHTRACE_BUFFER_BUDGET; empty: the runtime's default
  bool sched = false;
  bool follow = true;
  std::vector<std::string> functions;
  std::string depth, min_duration_ns;
  std::string filter;                    // HUSHTRACE_FILTER; empty: none
  bool has_filter = false;
  std::vector<std::string> snapshot_on;  // HUSHTRACE_SNAPSHOT_ON
  std::vector<filter::TriggerSpec> triggers;  // snapshot_on parsed
  std::string snapshot_interval_ms;      // HUSHTRACE_SNAPSHOT_INTERVAL_MS
  std::string snapshot_after, snapshot_keep;  // HUSHTRACE_SNAPSHOT_AFTER, _KEEP
  std::string blocking;                       // HUSHTRACE_BLOCKING; empty: never waits
  bool mode_given = false;
  bool buffer_size_given = false;
  bool function_rings = false;  // buffer_size is the function-tracing default (said before the run)
  std::vector<std::string> program;  // PROGRAM and its arguments
};

// What the command line says, before checking (ParseOptions turns it into Options).
struct Args {
  std::vector<std::string> events, functions, snapshot_on;
  std::string filter, output, mode, buffer_size, buffer_budget, depth, min_duration, snapshot_interval;
  std::string snapshot_after, snapshot_keep, blocking;
  bool sched = false, no_follow = false, blocking_flag = false;
};

// The grammar of `record`: one line per option.
// clang-format off
void Define(CLI::App& app, Args& a) {
  DescribeCommand(app, "record", kUsage, kDescription, kFooter);
  StopAtFirstPositional(app);
  AddList(app, "-e,--events", a.events, "events to record: a glob over 'provider:name', e.g. 'net:*'.\nRepeat the option or separate patterns with commas. Default: '*'")->type_name("PATTERN");
  app.add_option("-o,--output", a.output, "the trace directory, created 0700; it must not exist or be empty.\nDefault: ./hushtrace-YYYYMMDD-HHMMSS")->type_name("DIR");
  app.add_option("--mode", a.mode, "stream (default): packets are written to disk while PROGRAM runs;\nflight: each thread's ring keeps only its latest events, written\nwhen PROGRAM exits or receives SIGUSR2")->type_name("stream|flight");
  app.add_option("--buffer-size", a.buffer_size, "ring buffer per thread: bytes or with a k, M or G suffix (256k, 4M),\nfrom 16k to 256M. Default: 1M; 16M with --functions in stream mode")->type_name("SIZE");
  app.add_option("--buffer-budget", a.buffer_budget, "the most ring memory of the session, all threads together; past\nhalf of it new threads get compact rings, past all of it their events\nare discarded and counted. Default: 64M, or 4 rings if more")->type_name("SIZE");
  app.add_option("--filter", a.filter, "record only events whose fields satisfy EXPR, e.g.\n'bytes > 1000 && fd != 3' (== != < <= > >= ~, && || ! ( ), \"strings\", $name;\nthe filter language: docs/cli.md, Filters). Checked here: an expression that does\nnot parse is refused")->type_name("EXPR");
  AddList(app, "--snapshot-on", a.snapshot_on, "write a separate snapshot trace to DIR/snapshots/ when an\nevent matching PATTERN is emitted (the event is recorded);\n'app:req>50ms': when a span of app:req lasts longer than 50 ms;\n'app:req>p99.9': longer than the running p99.9 of its durations;\n'net:recv[bytes > 1000]': when the event's fields match;\n'func:serve>5ms' (with --functions): when a traced call of serve\nreturns after lasting longer than 5 ms. Repeat or separate with\ncommas. Implies --mode flight")->type_name("PATTERN");
  app.add_flag("--blocking", a.blocking_flag, "stream mode: a thread whose ring is full waits (up to 1s) for the\nconsumer instead of discarding the event. For development runs\nthat must lose nothing; production never blocks");
  app.add_option("--blocking-timeout", a.blocking, "--blocking, waiting up to DURATION (200ms, 5s) per event")->type_name("DURATION");
  app.add_option("--snapshot-after", a.snapshot_after, "a snapshot also holds DURATION after its trigger (5ms)")->type_name("DURATION");
  app.add_option("--snapshot-keep", a.snapshot_keep, "keep the newest N snapshots (0: all). Default: 16")->type_name("N");
  app.add_option("--snapshot-interval", a.snapshot_interval, "at most one triggered snapshot per MS milliseconds. Default: 1000")->type_name("MS");
  app.add_flag("--sched", a.sched, "also record PROGRAM's scheduler events (sched:switch_in/out,\nthread_start/exit/name) from perf_event_open; if the kernel\nrefuses, PROGRAM says so once and the rest is recorded");
  app.add_flag("--no-follow", a.no_follow, "children of PROGRAM do not trace. Default: a forked child writes\nits own streams into the trace, and an exec'd program linked with\nthe runtime records into DIR/proc-PID (docs/format.md)");
  AddList(app, "--functions", a.functions, "trace the functions whose name matches GLOB (mangled or demangled,\ne.g. 'fib*', 'ns::*', '*'); repeat or separate with commas. Needs a\nPROGRAM built with patchable entries (clang or gcc\n-fpatchable-function-entry=5, or gcc -pg -mfentry -mnop-mcount\n-mrecord-mcount); one that does not link libhushtrace gets it\nthrough LD_PRELOAD. With --functions, -e defaults to func:*")->type_name("GLOB");
  app.add_option("--depth", a.depth, "trace calls at most N traced frames deep (default: no limit)")->type_name("N");
  app.add_option("--min-duration", a.min_duration, "keep only calls lasting at least D (500ns, 2us, 1ms): one func:call\nevent at their exit instead of func:entry + func:exit")->type_name("D");
}
// clang-format on

// Appends the patterns of `value` ("a, b") to `out`; false if it holds none.
bool AppendPatterns(const std::string& value, std::vector<std::string>* out) {
  const std::vector<std::string> split = hush::base::SplitList(value);
  out->insert(out->end(), split.begin(), split.end());
  return !split.empty();
}

// Returns -1 when the arguments are fine, else the exit status.
int ParseOptions(const CLI::App& app, const Args& a, Options* o) {
  for (const std::string& value : a.events) {
    if (!AppendPatterns(value, &o->patterns)) return BadArguments("empty event pattern '" + value + "'");
  }
  if (app.count("--filter")) {
    // Parsed here so that a typo is reported before PROGRAM runs (the runtime parses it again).
    if (!CheckRuntimeFilter(app, a.filter)) return 2;
    o->filter = a.filter;
    o->has_filter = true;
  }
  for (const std::string& value : a.snapshot_on) {
    if (!AppendPatterns(value, &o->snapshot_on)) {
      return BadArguments("empty --snapshot-on pattern '" + value + "'");
    }
  }
  if (!o->snapshot_on.empty()) {
    std::string error;  // refused here, before PROGRAM runs
    if (!filter::ParseTriggers(o->snapshot_on, &o->triggers, &error)) return BadArguments(error);
  }
  if (app.count("--snapshot-after")) {
    std::uint64_t ns = 0;
    if (!hush::base::ParseDurationWithUnit(a.snapshot_after, &ns)) {
      return BadArguments("bad --snapshot-after '" + a.snapshot_after + "': use a duration, e.g. 5ms");
    }
    o->snapshot_after = a.snapshot_after;
  }
  if (a.blocking_flag || app.count("--blocking-timeout")) {
    const std::string value = app.count("--blocking-timeout") ? a.blocking : "1s";
    std::uint64_t ns = 0;
    if (!hush::base::ParseDurationWithUnit(value, &ns) || ns == 0) {
      return BadArguments("bad --blocking-timeout '" + value + "': use a duration, e.g. 1s or 200ms");
    }
    o->blocking = value;
  }
  if (app.count("--snapshot-keep")) {
    const std::string& value = a.snapshot_keep;
    if (value.empty() || value.size() > 6 || value.find_first_not_of("0123456789") != std::string::npos) {
      return BadArguments("bad --snapshot-keep '" + value + "': use a number of snapshots");
    }
    o->snapshot_keep = value;
  }
  if (app.count("--snapshot-interval")) {
    const std::string& value = a.snapshot_interval;
    if (value.empty() || value.size() > 8 || value.find_first_not_of("0123456789") != std::string::npos) {
      return BadArguments("bad snapshot interval '" + value + "': use a number of milliseconds");
    }
    o->snapshot_interval_ms = value;
  }
  for (const std::string& value : a.functions) {
    if (!AppendPatterns(value, &o->functions)) return BadArguments("empty function pattern '" + value + "'");
  }
  if (app.count("--depth")) {
    const std::string& value = a.depth;
    if (value.empty() || value.size() > 9 ||
        value.find_first_not_of("0123456789") != std::string::npos || std::stoul(value) == 0) {
      return BadArguments("bad depth '" + value + "': use a number of frames from 1");
    }
    o->depth = value;
  }
  if (app.count("--min-duration")) {
    std::uint64_t ns = 0;
    if (!ParseDurationNs(a.min_duration, &ns)) {
      return BadArguments("bad duration '" + a.min_duration + "': use e.g. 500ns, 2us, 1ms");
    }
    o->min_duration_ns = std::to_string(ns);
  }
  if (app.count("--output")) {
    if (a.output.empty()) return BadArguments("empty output directory");
    o->output = a.output;
  }
  if (app.count("--mode")) {
    if (a.mode != "stream" && a.mode != "flight") {
      return BadArguments("bad mode '" + a.mode + "': use 'stream' or 'flight'");
    }
    o->mode = a.mode;
    o->mode_given = true;
  }
  if (app.count("--buffer-size")) {
    std::size_t size;
    if (!ParseBufferSize(a.buffer_size, &size) || size < kMinBufferSize) {
      return BadArguments("bad buffer size '" + a.buffer_size +
                          "': use a size from 16k to 256M (e.g. 256k, 4M)");
    }
    o->buffer_size = a.buffer_size;
    o->buffer_size_given = true;
  }
  if (app.count("--buffer-budget")) {
    std::uint64_t budget = 0;
    std::size_t size = 1 << 20;
    ParseBufferSize(o->buffer_size, &size);
    if (!hush::base::ParseSize(a.buffer_budget, hush::base::env::kMaxBufferBudget, &budget) ||
        budget < size + hush::base::env::kRingHeaderBytes) {
      return BadArguments("bad buffer budget '" + a.buffer_budget + "': use a size that holds one ring of " +
                          o->buffer_size + " (e.g. 64M, 1G)");
    }
    o->buffer_budget = a.buffer_budget;
  }
  o->sched = a.sched;
  o->follow = !a.no_follow;
  o->program = Remaining(app);
  if (o->program.empty()) return BadArguments("no program to run");
  if ((!o->depth.empty() || !o->min_duration_ns.empty()) && o->functions.empty()) {
    return BadArguments("--depth and --min-duration need --functions");
  }
  for (const filter::TriggerSpec& t : o->triggers) {
    if (!t.function.empty() && o->functions.empty()) {
      return BadArguments("--snapshot-on '" + t.text + "': a function trigger needs --functions");
    }
  }
  if (!o->snapshot_on.empty()) {
    if (o->mode_given && o->mode != "flight") return BadArguments("--snapshot-on needs --mode flight");
    o->mode = "flight";
  } else if (!o->snapshot_interval_ms.empty()) {
    return BadArguments("--snapshot-interval needs --snapshot-on");
  } else if (!o->snapshot_after.empty() || !o->snapshot_keep.empty()) {
    return BadArguments("--snapshot-after and --snapshot-keep need --snapshot-on");
  }
  if (!o->blocking.empty() && o->mode != "stream") {
    return BadArguments("--blocking applies to --mode stream (a flight recorder overwrites)");
  }
  // Function calls are the densest events there are: `record --functions '*'` of
  // bench/ftbench_nop5 27 (1.7 M calls in ~50 ms, trace on ext4, a loaded 2-CPU machine) lost
  // events in 6 of 6 runs with 1M rings, 5 of 6 with 4M and 0 of 6 with 16M: the writer is not
  // scheduled before a smaller ring goes round. So a stream-mode function session whose ring size
  // is not given gets 16M rings, said before the run (RunRecord); the sub-buffers are reserved as
  // they fill, so a thread that calls little uses little of it. Not where a given --buffer-budget
  // cannot hold such a ring, nor in flight mode, which overwrites by design.
  if (!o->functions.empty() && !o->buffer_size_given && o->mode == "stream") {
    std::uint64_t budget = 0;
    if (o->buffer_budget.empty() ||
        (hush::base::ParseSize(o->buffer_budget, hush::base::env::kMaxBufferBudget, &budget) &&
         budget >= kFunctionRingBytes + hush::base::env::kRingHeaderBytes)) {
      o->buffer_size = "16M";
      o->function_rings = true;
    }
  }
  if (o->patterns.empty()) {
    o->patterns.emplace_back(o->functions.empty() ? "*" : "func:*");
    o->patterns_implied = true;
  }
  std::string limit_error;
  if (!filter::CheckPatterns(o->patterns, "event", &limit_error) ||
      !filter::CheckPatterns(o->snapshot_on, "snapshot-on", &limit_error)) {
    return BadArguments(limit_error);
  }
  return -1;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// Sets `name` to `value` when `set`, else removes it (a value inherited from hushtrace's own
// environment must not reach PROGRAM behind the options' back).
bool SetOptionalEnvironment(const char* name, bool set, const std::string& value) {
  return (set ? ::setenv(name, value.c_str(), 1) : ::unsetenv(name)) == 0;
}

// HUSHTRACE_FUNCTIONS & co., and LD_PRELOAD of the runtime when PROGRAM does not carry it.
bool SetFunctionEnvironment(const Options& o, const char* program, bool has_runtime) {
  bool ok = ::setenv(hush::base::env::kFunctions, Join(o.functions).c_str(), 1) == 0;
  if (!o.depth.empty()) ok = ok && ::setenv(hush::base::env::kFunctionDepth, o.depth.c_str(), 1) == 0;
  if (!o.min_duration_ns.empty())
    ok = ok && ::setenv(hush::base::env::kMinDuration, o.min_duration_ns.c_str(), 1) == 0;
  if (ok && !has_runtime) {
    const std::string lib = RuntimeLibrary();
    if (lib.empty()) {
      std::fprintf(stderr,
                   "hushtrace record: %s does not link libhushtrace and the shared runtime was not "
                   "found to preload (set HUSHTRACE_RUNTIME to its path)\n",
                   program);
      return false;
    }
    const char* old = std::getenv("LD_PRELOAD");
    const std::string preload = old != nullptr && *old != '\0' ? lib + ":" + old : lib;
    ok = ::setenv("LD_PRELOAD", preload.c_str(), 1) == 0;
  }
  if (!ok) std::fprintf(stderr, "hushtrace record: cannot set the environment: %s\n", std::strerror(errno));
  return ok;
}

// Events a full ring discarded (stream mode), said at once rather than only by `report`: the
// usual cause is a ring too small for the thread's rate (whole-program function tracing of
// call-heavy code writes tens of millions of events per second) or the consumer thread kept off
// a CPU for a few ms. Packet headers only (Trace::Open reads no event). Flight mode's
// overwrites are the point of that mode and are not reported here. Events the stream files could
// not take (a full disk) are counted with the discarded ones on disk; the runtime records how many
// in the metadata (hushtrace_events_lost_on_write), and they are said apart: a larger ring does
// not help them.
std::uint64_t EnvCount(const reader::Trace& trace, std::string_view key) {
  const std::string_view v = trace.metadata().Env(key);
  std::uint64_t n = 0;
  for (char c : v) n = c >= '0' && c <= '9' ? n * 10 + static_cast<std::uint64_t>(c - '0') : n;
  return n;
}

void ReportDiscards(const std::string& dir, const std::string& buffer_size) {
  std::string error;
  const std::unique_ptr<reader::Trace> trace = reader::Trace::Open(dir, &error);
  if (!trace) return;  // `report` explains what is wrong with it
  std::uint64_t discarded = 0;
  for (const reader::StreamInfo& s : trace->streams()) discarded += s.DiscardedOnly();
  // On disk, a packet's events_discarded includes the events that failed to be written before it.
  const std::uint64_t not_written = EnvCount(*trace, "hushtrace_events_lost_on_write");
  if (not_written != 0) {
    std::fprintf(
        stderr,
        "hushtrace: %llu events could not be written to %s (see the runtime's message above: a "
        "full disk or a failing file system); the buffer size does not change that\n",
        static_cast<unsigned long long>(not_written), dir.c_str());
  }
  discarded -= std::min(discarded, not_written);
  if (discarded == 0) return;
  std::fprintf(stderr,
               "hushtrace: %llu events were discarded (a thread's ring was full, or an event "
               "was nested in a signal handler's or larger than a sub-buffer); a larger "
               "--buffer-size (now %s per thread), or --blocking in a development run, keeps "
               "those of a full ring ('hushtrace report %s' shows where)\n",
               static_cast<unsigned long long>(discarded), buffer_size.c_str(), dir.c_str());
}

// Bytes free for this user on the file system holding `path`; UINT64_MAX when unknown.
std::uint64_t FreeBytes(const std::string& path) {
  struct statvfs fs;
  if (::statvfs(path.c_str(), &fs) != 0) return UINT64_MAX;
  return static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
}

// Why no trace (or no event) was written, when a cause is visible from here: the directory was
// removed or replaced during the run, or its file system is full (below one ring of free space:
// no ring file could be created). "" otherwise.
std::string VisibleCause(const std::string& dir, const struct stat& created,
                         std::uint64_t ring_bytes) {
  struct stat now;
  if (::lstat(dir.c_str(), &now) != 0 || now.st_dev != created.st_dev ||
      now.st_ino != created.st_ino) {
    return dir + " was removed or replaced while the program ran";
  }
  const std::uint64_t free = FreeBytes(dir);
  if (free < ring_bytes) {
    return "the file system holding " + dir + " is full (" + std::to_string(free) +
           " bytes free, less than one ring buffer)";
  }
  return "";
}

}  // namespace

void DescribeRecord(CLI::App& app) { DescribeWith(app, Define); }

int RunRecord(int argc, char** argv) {
  Args args;
  CLI::App app;
  Define(app, args);
  if (const int status = ParseCommand(app, argc, argv); status >= 0) return status;
  Options opts;
  if (const int status = ParseOptions(app, args, &opts); status >= 0) return status;
  const char* program = opts.program[0].c_str();
  std::vector<char*> program_argv;
  for (std::string& word : opts.program) program_argv.push_back(word.data());
  program_argv.push_back(nullptr);

  std::string events;
  for (const std::string& p : opts.patterns) {
    if (!events.empty()) events += ',';
    events += p;
    // Event names are "provider:name": a pattern without ':' nor wildcard matches nothing.
    if (p.find_first_of(":*?[") == std::string::npos) {
      std::fprintf(stderr,
                   "hushtrace record: warning: pattern '%s' matches no event name "
                   "(names are 'provider:name'; did you mean '%s:*'?)\n",
                   p.c_str(), p.c_str());
    }
  }

  // Read once: whether PROGRAM carries the runtime decides what is preloaded.
  const bool has_runtime = !opts.functions.empty() && ProgramHasRuntime(program);
  // Nothing to check before the run when the only pattern is the implied "func:*" of a
  // functions-only record with no filter and no function trigger: the runtime defines those
  // events itself. The check reads every library PROGRAM links (~2-3 ms of each such run).
  bool function_triggers = false;
  for (const filter::TriggerSpec& t : opts.triggers) function_triggers = function_triggers || !t.function.empty();
  const bool check_events = !(opts.patterns_implied && !opts.functions.empty() && !opts.has_filter &&
                              !function_triggers);
  {
    // What can be known before PROGRAM runs is said now (program_events.h).
    std::vector<std::string> preload;  // LD_PRELOAD: separated by spaces or colons (ld.so(8))
    if (const char* env = std::getenv("LD_PRELOAD"); env != nullptr) {
      std::string word;
      for (const char* c = env;; ++c) {
        if (*c != '\0' && *c != ' ' && *c != ':') {
          word += *c;
          continue;
        }
        if (!word.empty()) preload.push_back(std::move(word));
        word.clear();
        if (*c == '\0') break;
      }
    }
    if (!opts.functions.empty() && !has_runtime) preload.push_back(RuntimeLibrary());
    ProgramEvents known;
    if (check_events && ReadProgramEvents(program, preload, &known) &&
        (!CheckProgramEvents(known, program, opts.patterns, opts.has_filter, opts.filter) ||
         !CheckFunctionTriggers(known, program, opts.functions, opts.triggers))) {
      return 2;
    }
  }

  std::string dir = opts.output;
  bool created = false;
  if (const int status = CreateOutputDirectory(&dir, opts.output.empty(), &created); status != 0) {
    return status;
  }
  const std::string abs_dir = AbsolutePath(dir);
  // Its identity, to tell at the end a directory removed (or replaced) during the run.
  struct stat dir_stat;
  const bool have_dir_stat = ::stat(abs_dir.c_str(), &dir_stat) == 0;
  auto remove_if_unused = [&] {
    if (!created) return;
    ::rmdir(abs_dir.c_str());
  };

  if (::setenv(hush::base::env::kEvents, events.c_str(), 1) != 0 ||
      ::setenv(hush::base::env::kOutput, abs_dir.c_str(), 1) != 0 ||
      ::setenv(hush::base::env::kMode, opts.mode.c_str(), 1) != 0 ||
      ::setenv(hush::base::env::kBufferSize, opts.buffer_size.c_str(), 1) != 0 ||
      !SetOptionalEnvironment(hush::base::env::kBufferBudget, !opts.buffer_budget.empty(), opts.buffer_budget) ||
      (opts.sched ? ::setenv(hush::base::env::kSched, "1", 1) : ::unsetenv(hush::base::env::kSched)) != 0 ||
      ::setenv(hush::base::env::kFollow, opts.follow ? "1" : "0", 1) != 0 ||
      !SetOptionalEnvironment(hush::base::env::kFilter, opts.has_filter, opts.filter) ||
      !SetOptionalEnvironment(hush::base::env::kSnapshotOn, !opts.snapshot_on.empty(), Join(opts.snapshot_on)) ||
      !SetOptionalEnvironment(hush::base::env::kSnapshotIntervalMs, !opts.snapshot_interval_ms.empty(),
                              opts.snapshot_interval_ms) ||
      !SetOptionalEnvironment(hush::base::env::kSnapshotAfter, !opts.snapshot_after.empty(), opts.snapshot_after) ||
      !SetOptionalEnvironment(hush::base::env::kSnapshotKeep, !opts.snapshot_keep.empty(), opts.snapshot_keep) ||
      !SetOptionalEnvironment(hush::base::env::kBlocking, !opts.blocking.empty(), opts.blocking)) {
    std::fprintf(stderr, "hushtrace record: cannot set the environment: %s\n",
                 std::strerror(errno));
    remove_if_unused();
    return 1;
  }

  if (!opts.functions.empty() && !SetFunctionEnvironment(opts, program, has_runtime)) {
    remove_if_unused();
    return 1;
  }
  if (opts.function_rings) {
    std::fprintf(stderr, "hushtrace: --functions: %s rings per thread (calls fill a smaller ring faster than it "
                         "is written out; --buffer-size to choose)\n",
                 opts.buffer_size.c_str());
  }

  // Found as execvp would, once, before anything starts: under qemu-user posix_spawn cannot report
  // an exec failure (its vfork is a fork), so what would fail is said here.
  int exec_error = 0;
  const std::string executable = FindInPath(program, &exec_error);
  if (exec_error != 0) {
    std::fprintf(stderr, "hushtrace record: cannot run '%s': %s\n", program, std::strerror(exec_error));
    remove_if_unused();
    return 127;
  }

  // Signals to forward are blocked until the child's pid is known, so none is lost. The child
  // gets back the original mask, and the original dispositions: a signal this process ignored
  // (nohup) is left ignored here, so the child inherits SIG_IGN across exec; the others are
  // handled here (Forward), which exec resets to SIG_DFL, what they were.
  sigset_t forwarded, old_mask;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  ::sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
  struct sigaction old_actions[std::size(kForwarded)];
  for (std::size_t k = 0; k < std::size(kForwarded); ++k) {
    ::sigaction(kForwarded[k], nullptr, &old_actions[k]);
    if (old_actions[k].sa_handler == SIG_IGN) continue;
    struct sigaction sa = {};
    sa.sa_sigaction = Forward;
    // No SA_RESTART: the waits below retry on EINTR themselves. Under ThreadSanitizer a handler
    // runs only when the thread next enters an intercepted call: a restarted waitid() would
    // never return to deliver it, and the child would not hear of the signal.
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(kForwarded[k], &sa, nullptr);
  }
  auto restore_signals = [&] {
    for (std::size_t k = 0; k < std::size(kForwarded); ++k)
      ::sigaction(kForwarded[k], &old_actions[k], nullptr);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  };

  // posix_spawn, not fork + exec: glibc's shares the address space until the exec (CLONE_VFORK),
  // where fork() copied the page tables of this process (tens of MB mapped: the ELF files just
  // read) and then paid a copy-on-write fault for every page either side wrote before the exec:
  // on a VM, milliseconds of every record run. An exec failure comes back as its return value.
  // One difference with fork + exec, glibc's (2.36): its posix_spawn leaves the two signals it
  // keeps for itself (32 and 33: thread cancellation, set*id) ignored in the child, and
  // posix_spawnattr_setsigdefault cannot name them. glibc and musl install their handlers for
  // those when a program first needs them (pthread_cancel, setuid in a threaded program): seen
  // only in /proc/PID/status (SigIgn), as under any posix_spawn-based launcher.
  posix_spawnattr_t attr;
  ::posix_spawnattr_init(&attr);
  ::posix_spawnattr_setsigmask(&attr, &old_mask);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::fflush(nullptr);
  pid_t pid = 0;
  const int spawn_error =
      ::posix_spawn(&pid, executable.c_str(), nullptr, &attr, program_argv.data(), environ);
  ::posix_spawnattr_destroy(&attr);
  if (spawn_error != 0) {
    restore_signals();
    std::fprintf(stderr, "hushtrace record: cannot run '%s': %s\n", program, std::strerror(spawn_error));
    remove_if_unused();
    return 127;
  }
  g_child = pid;
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);  // pending forwarded signals are delivered now

  // Wait without reaping first: until the child is reaped its pid cannot be reused, so a
  // forwarded signal never reaches another process.
  siginfo_t info;
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  g_child = 0;
  // Nobody to forward to any more: held, so no later call is cut short by EINTR.
  ::sigprocmask(SIG_BLOCK, &forwarded, nullptr);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) {
      std::fprintf(stderr, "hushtrace record: waitpid: %s\n", std::strerror(errno));
      return 1;
    }
  }

  int status;
  if (WIFEXITED(wstatus)) {
    status = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    status = 128 + WTERMSIG(wstatus);
    std::fprintf(stderr, "hushtrace record: %s was killed by signal %d (%s)%s\n", program,
                 WTERMSIG(wstatus), ::strsignal(WTERMSIG(wstatus)),
                 WCOREDUMP(wstatus) ? ", core dumped" : "");
  } else {
    status = 1;
  }

  // Events of processes that left by exec, _exit or a crash are still in their rings.
  CompleteRecordedTrace(abs_dir, "hushtrace");
  std::size_t ring_bytes = 0;
  ParseBufferSize(opts.buffer_size, &ring_bytes);
  const std::string cause = have_dir_stat ? VisibleCause(abs_dir, dir_stat, ring_bytes) : "";
  if (Exists(abs_dir + "/metadata")) {
    std::fprintf(stderr, "hushtrace: trace written to %s\n", dir.c_str());
    ReportDiscards(abs_dir, opts.buffer_size);
    if (WIFSIGNALED(wstatus)) {
      std::fprintf(
          stderr, "hushtrace: the trace may be incomplete: %s could not write the events it held\n",
          program);
    } else if (CountStreams(abs_dir) == 0 && !cause.empty()) {
      std::fprintf(stderr, "hushtrace: no event was recorded: %s\n", cause.c_str());
    } else if (CountStreams(abs_dir) == 0) {
      std::fprintf(stderr,
                   "hushtrace: no event was recorded: check the -e patterns against "
                   "'hushtrace list %s' (and its libraries)\n",
                   program);
    }
  } else if (!cause.empty()) {
    std::fprintf(stderr, "hushtrace: warning: no trace was written to %s: %s\n", dir.c_str(),
                 cause.c_str());
    remove_if_unused();
  } else {
    std::fprintf(
        stderr,
        "hushtrace: warning: no trace was written to %s: %s did not start a tracing session "
        "(it does not link libhushtrace, or the session failed: see the messages above)\n",
        dir.c_str(), program);
    remove_if_unused();
  }
  return status;
}

}  // namespace hush::cli
