// hushtrace ps | start PID | stop PID | snapshot PID | status PID: live control of running
// programs that link libhushtrace. See docs/cli.md and docs/architecture.md ("Live control").
#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "base/dir_stream.h"
#include "base/parse.h"
#include "base/unique_fd.h"
#include "cli_app.h"
#include "commands.h"
#include "control_client.h"
#include "filter/pattern_limits.h"
#include "filter/trigger_spec.h"
#include "format/numbered_name.h"
#include "inject.h"
#include "json_writer.h"
#include "table.h"

namespace hush::cli {
namespace {

constexpr char kExitStatus[] =
    "exit status: 0 ok, 1 the process did not answer or refused, 2 bad arguments\n";

// The grammar of the live-control commands: one line per option.
struct ControlArgs {
  std::string pid, output, mode, buffer_size, buffer_budget, filter, snapshot_interval, format;
  std::string snapshot_after, snapshot_keep;
  std::vector<std::string> events, snapshot_on;
};

void AddPid(CLI::App& app, ControlArgs& a) {
  app.add_option("PID", a.pid, "the process, which links libhushtrace")->type_name("");
}

void AddFormat(CLI::App& app, ControlArgs& a) {
  app.add_option("--format", a.format,
                 "text (default); json: the same keys; csv: a header row of them,\nthen the values "
                 "(docs/cli.md)")
      ->type_name("text|json|csv");
}

// clang-format off
void DefinePs(CLI::App& app, ControlArgs& a) {
  DescribeCommand(app, "ps", "ps [--format text|json|csv]",
                  "Lists the processes of this user (all for root) that have the hushtrace runtime loaded.",
                  "--format json prints a JSON array of {\"pid\", \"user\", \"control\", \"command\"}, "
                  "--format csv\nthose columns (docs/cli.md).\n");
  AddFormat(app, a);
}

void DefineStart(CLI::App& app, ControlArgs& a) {
  DescribeCommand(app, "start", "start PID [options]",
                  "Starts a tracing session in the running process PID, which links libhushtrace.", kExitStatus);
  AddPid(app, a);
  AddList(app, "-e,--events", a.events, "events to record (glob over 'provider:name'); repeat or separate\nwith commas. Default: '*'")->type_name("PATTERN");
  app.add_option("-o,--output", a.output, "trace directory, created 0700 by the process. Default:\n./hushtrace-YYYYMMDD-HHMMSS-PID")->type_name("DIR");
  app.add_option("--mode", a.mode, "default stream")->type_name("stream|flight");
  app.add_option("--buffer-size", a.buffer_size, "ring buffer per thread, 16k to 256M (256k, 4M...). Default: 1M")->type_name("SIZE");
  app.add_option("--buffer-budget", a.buffer_budget, "the most ring memory of the session, all threads together\n(record --buffer-budget). Default: 64M, or 4 rings if more")->type_name("SIZE");
  app.add_option("--filter", a.filter, "record only events whose fields satisfy EXPR, e.g.\n'bytes > 1000 && fd != 3' (== != < <= > >= ~, && || ! ( ), \"strings\", $name;\nthe filter language: docs/cli.md, Filters)")->type_name("EXPR");
  AddList(app, "--snapshot-on", a.snapshot_on, "flight mode: write a snapshot to DIR/snapshots/ when an event\nmatching PATTERN is emitted; 'app:req>50ms': when a span lasts\nlonger; 'net:recv[bytes > 1000]': when its fields match")->type_name("PATTERN");
  app.add_option("--snapshot-after", a.snapshot_after, "a triggered snapshot also holds DURATION after the trigger")->type_name("DURATION");
  app.add_option("--snapshot-keep", a.snapshot_keep, "keep the newest N snapshots in DIR/snapshots (0: all). Default: 16")->type_name("N");
  app.add_option("--snapshot-interval", a.snapshot_interval, "at most one triggered snapshot per MS milliseconds. Default: 1000")->type_name("MS");
}

void DefineStop(CLI::App& app, ControlArgs& a) {
  DescribeCommand(app, "stop", "stop PID", "Stops the tracing session of the process PID and writes its trace.", kExitStatus);
  AddPid(app, a);
}

void DefineSnapshot(CLI::App& app, ControlArgs& a) {
  DescribeCommand(app, "snapshot", "snapshot PID [-o DIR]", "Writes the flight recorder of the process PID now.", kExitStatus);
  AddPid(app, a);
  app.add_option("-o,--output", a.output, "copy the snapshot's trace files into the new directory DIR")->type_name("DIR");
}

void DefineStatus(CLI::App& app, ControlArgs& a) {
  DescribeCommand(app, "status", "status PID [--format text|json|csv]", "Shows the session of the process PID: events, buffers, losses.", kExitStatus);
  AddPid(app, a);
  AddFormat(app, a);
}
// clang-format on

int Bad(const char* command, const std::string& message) {
  std::fprintf(stderr, "hushtrace %s: %s\n(see 'hushtrace %s --help')\n", command, message.c_str(),
               command);
  return 2;
}

bool ParsePid(const char* text, pid_t* pid) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v <= 0 || v > INT_MAX) return false;
  *pid = static_cast<pid_t>(v);
  return true;
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

int Report(const char* command, pid_t pid, const ControlReply& reply) {
  if (!reply.ok) {
    std::fprintf(stderr, "hushtrace %s: process %d: %s\n", command, static_cast<int>(pid),
                 reply.error.c_str());
    return 1;
  }
  return 0;
}

// Copies the trace files (metadata, stream_*) of `from` into the new 0700 directory `to`.
bool CopyTrace(const std::string& from, const std::string& to, std::string* error) {
  if (::mkdir(to.c_str(), 0700) != 0) {
    *error = "cannot create " + to + ": " + std::strerror(errno);
    return false;
  }
  base::DirStream dir = base::DirStream::Open(from.c_str());
  if (!dir) {
    *error = "cannot read " + from + ": " + std::strerror(errno);
    return false;
  }
  while (const char* entry = dir.Next()) {
    const std::string name = entry;
    std::uint32_t index = 0;
    if (name != "metadata" && !format::ParseNumberedName(name, format::kStreamPrefix, &index)) continue;
    // O_NONBLOCK and the type check: a FIFO planted in the trace directory must not hang us.
    const base::UniqueFd in(
        ::open((from + "/" + name).c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (in && (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode))) {
      *error = from + "/" + name + ": not a regular file";
      return false;
    }
    const base::UniqueFd out(
        ::open((to + "/" + name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    char buf[1 << 16];
    ssize_t n = 0;
    while (in && out && (n = ::read(in.get(), buf, sizeof buf)) > 0) {
      if (::write(out.get(), buf, static_cast<std::size_t>(n)) != n) n = -1;
      if (n < 0) break;
    }
    if (!in || !out || n < 0) {
      *error = "cannot copy " + from + "/" + name + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

// A control command's parsed command line.
struct ControlLine {
  ControlArgs args;
  CLI::App app;
  pid_t pid = 0;
  std::string format;  // "" (text), "json" or "csv"

  // Parses argv with the options `define` declares; -1 to go on, else the exit status.
  int Parse(void (*define)(CLI::App&, ControlArgs&), int argc, char** argv) {
    define(app, args);
    if (const int status = ParseCommand(app, argc, argv); status >= 0) return status;
    if (app.get_option_no_throw("PID") != nullptr && !ParsePid(args.pid.c_str(), &pid)) {
      return BadArguments(app, "expected a process id");
    }
    const CLI::Option* given = app.get_option_no_throw("--format");
    if (given != nullptr && given->count() != 0 && args.format != "text" && args.format != "json" &&
        args.format != "csv") {
      return BadArguments(app, "--format needs text, json or csv");
    }
    format = args.format == "text" ? "" : args.format;
    return -1;
  }
};

}  // namespace

int RunPs(int argc, char** argv) {
  ControlLine line;
  if (const int s = line.Parse(DefinePs, argc, argv); s >= 0) return s;
  const bool text = line.format.empty();
  base::DirStream proc = base::DirStream::Open("/proc");
  if (!proc) {
    std::fprintf(stderr, "hushtrace ps: cannot read /proc: %s\n", std::strerror(errno));
    return 1;
  }
  const uid_t me = ::geteuid();
  Table table({"pid", "user", "control", "command"});
  if (text) std::printf("%8s %-12s %-9s %s\n", "PID", "USER", "CONTROL", "COMMAND");
  while (const char* name = proc.Next()) {
    pid_t pid;
    if (!ParsePid(name, &pid) || pid == ::getpid()) continue;
    struct stat st;
    if (::stat(("/proc/" + std::string(name)).c_str(), &st) != 0) continue;
    if (me != 0 && st.st_uid != me) continue;
    std::string error;
    if (FindBootstrap(pid, &error) == 0) continue;
    char comm[64] = {};
    if (FILE* f = std::fopen(("/proc/" + std::string(name) + "/comm").c_str(), "r")) {
      if (std::fgets(comm, sizeof comm, f) == nullptr) comm[0] = '\0';
      std::fclose(f);
    }
    comm[std::strcspn(comm, "\n")] = '\0';
    const passwd* pw = ::getpwuid(st.st_uid);
    const std::string user = pw != nullptr ? pw->pw_name : std::to_string(st.st_uid);
    const bool open = ControlListening(pid);
    if (text) {
      std::printf("%8d %-12s %-9s %s\n", static_cast<int>(pid), user.c_str(), open ? "open" : "-",
                  comm);
    } else {
      table.Row().Int(pid).Text(user).Text(open ? "open" : "-").Text(comm);
    }
  }
  if (line.format == "csv") std::fputs(table.Csv().c_str(), stdout);
  if (line.format == "json") {
    JsonWriter j;
    table.WriteJson(j);
    std::fputs(j.text().c_str(), stdout);
  }
  return 0;
}

int RunStart(int argc, char** argv) {
  ControlLine line;
  if (const int s = line.Parse(DefineStart, argc, argv); s >= 0) return s;
  const ControlArgs& args = line.args;
  const CLI::App& app = line.app;
  const pid_t pid = line.pid;
  control::Fields fields;
  std::string output = args.output, mode = args.mode, buffer = args.buffer_size;
  bool have_event = false;
  for (const std::string& v : args.events) {
    for (const std::string& one : hush::base::SplitList(v)) {
      fields.emplace_back("event", one);
      have_event = true;
    }
  }
  if (app.count("--output") && output.empty()) return Bad("start", "--output needs a directory");
  if (app.count("--mode") && mode != "stream" && mode != "flight") {
    return Bad("start", "--mode must be 'stream' or 'flight'");
  }
  if (app.count("--filter")) {
    if (!CheckRuntimeFilter(app, args.filter)) return 2;
    fields.emplace_back("filter", args.filter);
  }
  for (const std::string& v : args.snapshot_on) {
    if (v.empty()) return Bad("start", "--snapshot-on needs a pattern");
    std::vector<filter::TriggerSpec> specs;  // refused here, before the process is touched
    std::string error;
    if (!filter::ParseTriggers(hush::base::SplitList(v), &specs, &error)) return Bad("start", error);
    for (const filter::TriggerSpec& spec : specs) fields.emplace_back("snapshot-on", spec.text);
  }
  if (app.count("--snapshot-after")) {
    std::uint64_t ns = 0;
    if (!hush::base::ParseDurationWithUnit(args.snapshot_after, &ns)) {
      return Bad("start", "--snapshot-after needs a duration (e.g. 5ms)");
    }
    fields.emplace_back("snapshot-after-ns", std::to_string(ns));
  }
  if (app.count("--snapshot-keep")) {
    const std::string& v = args.snapshot_keep;
    if (v.empty() || v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos) {
      return Bad("start", "--snapshot-keep needs a number of snapshots");
    }
    fields.emplace_back("snapshot-keep", v);
  }
  std::vector<std::string> events;
  for (const auto& [key, value] : fields) {
    if (key == "event") events.push_back(value);
  }
  // The limits the process would refuse them with, said before asking it.
  if (std::string error; !filter::CheckPatterns(events, "event", &error) ||
                         !filter::CheckPatterns(args.snapshot_on, "snapshot-on", &error)) {
    return Bad("start", error);
  }
  if (app.count("--snapshot-interval")) {
    const std::string& v = args.snapshot_interval;
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) {
      return Bad("start", "--snapshot-interval needs a number of milliseconds");
    }
    fields.emplace_back("snapshot-interval-ms", v);
  }
  if (!have_event) fields.emplace_back("event", "*");
  if (output.empty()) {
    char stamp[32];
    const time_t now = ::time(nullptr);
    struct tm tm;
    ::localtime_r(&now, &tm);
    ::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    output = std::string("hushtrace-") + stamp + "-" + std::to_string(pid);
  }
  fields.emplace_back(control::key::kOutput, Absolute(output));
  if (!mode.empty()) fields.emplace_back("mode", mode);
  if (!buffer.empty()) fields.emplace_back("buffer-size", buffer);
  if (!args.buffer_budget.empty()) fields.emplace_back("buffer-budget", args.buffer_budget);
  const ControlReply reply = SendControl(pid, "start", fields);
  if (const int status = Report("start", pid, reply); status != 0) return status;
  if (const std::string warning = reply.Get(control::key::kWarning); !warning.empty()) {
    std::fprintf(stderr, "hushtrace start: warning: %s\n", warning.c_str());
  }
  std::printf("tracing process %d into %s\n", static_cast<int>(pid), reply.Get(control::key::kOutput).c_str());
  return 0;
}

int RunStop(int argc, char** argv) {
  ControlLine line;
  int status = line.Parse(DefineStop, argc, argv);
  if (status >= 0) return status;
  const pid_t pid = line.pid;
  const ControlReply reply = SendControl(pid, "stop", {});
  if ((status = Report("stop", pid, reply)) != 0) return status;
  std::printf("stopped; trace in %s", reply.Get(control::key::kOutput).c_str());
  if (const std::string written = reply.Get(control::key::kEventsWritten); !written.empty()) {
    std::printf(" (%s events written, %s discarded, %s lost on write)", written.c_str(),
                reply.Get(control::key::kEventsDiscarded).c_str(), reply.Get(control::key::kEventsLostOnWrite).c_str());
  }
  std::printf("\n");
  return 0;
}

int RunSnapshot(int argc, char** argv) {
  ControlLine line;
  int status = line.Parse(DefineSnapshot, argc, argv);
  if (status >= 0) return status;
  const pid_t pid = line.pid;
  if (line.app.count("--output") && line.args.output.empty()) {
    return Bad("snapshot", "--output needs a directory");
  }
  const std::string& copy_to = line.args.output;
  const ControlReply reply = SendControl(pid, "snapshot", {});
  if ((status = Report("snapshot", pid, reply)) != 0) return status;
  std::string where = reply.Get(control::key::kOutput);
  if (!copy_to.empty()) {
    std::string error;
    if (!CopyTrace(where, copy_to, &error)) {
      std::fprintf(stderr, "hushtrace snapshot: %s\n", error.c_str());
      return 1;
    }
    where = copy_to;
  }
  std::printf("snapshot written to %s\n", where.c_str());
  return 0;
}

int RunStatus(int argc, char** argv) {
  ControlLine line;
  int status = line.Parse(DefineStatus, argc, argv);
  if (status >= 0) return status;
  const pid_t pid = line.pid;
  const ControlReply reply = SendControl(pid, "status", {});
  if ((status = Report("status", pid, reply)) != 0) return status;
  if (line.format.empty()) {
    for (const auto& [key, value] : reply.fields) std::printf("%s: %s\n", key.c_str(), value.c_str());
    return 0;
  }
  // The same keys as columns of one row; values of decimal digits only as numbers, the others as
  // strings.
  std::vector<std::string> keys;
  for (const auto& field : reply.fields) keys.push_back(field.first);
  Table table(std::move(keys));
  table.Row();
  for (const auto& [key, value] : reply.fields) {
    std::uint64_t n = 0;
    const auto r = std::from_chars(value.data(), value.data() + value.size(), n);
    if (!value.empty() && r.ec == std::errc() && r.ptr == value.data() + value.size())
      table.Uint(n);
    else
      table.Text(value);
  }
  if (line.format == "csv") {
    std::fputs(table.Csv().c_str(), stdout);
    return 0;
  }
  JsonWriter j;
  table.WriteJsonRow(j, 0);
  std::fputs(j.text().c_str(), stdout);
  return 0;
}

void DescribePs(CLI::App& app) { DescribeWith(app, DefinePs); }
void DescribeStart(CLI::App& app) { DescribeWith(app, DefineStart); }
void DescribeStop(CLI::App& app) { DescribeWith(app, DefineStop); }
void DescribeSnapshot(CLI::App& app) { DescribeWith(app, DefineSnapshot); }
void DescribeStatus(CLI::App& app) { DescribeWith(app, DefineStatus); }

}  // namespace hush::cli
