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

#include "commands.h"
#include "control_client.h"
#include "json_writer.h"
#include "base/parse.h"
#include "filter/filter.h"
#include "filter/trigger_spec.h"
#include "inject.h"

namespace hush::cli {
namespace {

constexpr char kStartUsage[] =
    "usage: hushtrace start PID [options]\n"
    "\n"
    "Starts a tracing session in the running process PID, which links libhushtrace.\n"
    "\n"
    "options:\n"
    "  -e, --events PATTERN     events to record (glob over 'provider:name'); repeat or separate\n"
    "                           with commas. Default: '*'\n"
    "  -o, --output DIR         trace directory, created 0700 by the process. Default:\n"
    "                           ./hushtrace-YYYYMMDD-HHMMSS-PID\n"
    "      --mode stream|flight default stream\n"
    "      --buffer-size SIZE   ring buffer per thread, 16k to 256M (256k, 4M...). Default: 1M\n"
    "      --filter EXPR        record only events whose fields satisfy EXPR, e.g.\n"
    "                           'bytes > 1000 && fd != 3' (==, !=, <, <=, >, >=, &&, ||, !, ())\n"
    "      --snapshot-on PATTERN  flight mode: write a snapshot to DIR/snapshots/ when an event\n"
    "                           matching PATTERN is emitted; 'app:req>50ms': when a span lasts\n"
    "                           longer; 'net:recv[bytes > 1000]': when its fields match\n"
    "      --snapshot-after DURATION  a triggered snapshot also holds DURATION after the trigger\n"
    "      --snapshot-keep N    keep the newest N snapshots in DIR/snapshots (0: all). Default: 16\n"
    "      --snapshot-interval MS at most one triggered snapshot per MS milliseconds. Default: "
    "1000\n";

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
  DIR* dir = ::opendir(from.c_str());
  if (dir == nullptr) {
    *error = "cannot read " + from + ": " + std::strerror(errno);
    return false;
  }
  bool ok = true;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "metadata" && name.rfind("stream_", 0) != 0) continue;
    // O_NONBLOCK and the type check: a FIFO planted in the trace directory must not hang us.
    const int in =
        ::open((from + "/" + name).c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (in >= 0 && (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode))) {
      *error = from + "/" + name + ": not a regular file";
      ::close(in);
      ok = false;
      break;
    }
    const int out = ::open((to + "/" + name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    char buf[1 << 16];
    ssize_t n = 0;
    while (in >= 0 && out >= 0 && (n = ::read(in, buf, sizeof buf)) > 0) {
      if (::write(out, buf, static_cast<std::size_t>(n)) != n) n = -1;
      if (n < 0) break;
    }
    if (in < 0 || out < 0 || n < 0) {
      *error = "cannot copy " + from + "/" + name + ": " + std::strerror(errno);
      ok = false;
    }
    if (in >= 0) ::close(in);
    if (out >= 0) ::close(out);
    if (!ok) break;
  }
  ::closedir(dir);
  return ok;
}

// Whether argv[first..] is exactly "--format json" or "--format=json" (ps, status).
bool IsJsonFormat(int argc, char** argv, int first) {
  if (argc == first + 1) return std::strcmp(argv[first], "--format=json") == 0;
  return argc == first + 2 && std::strcmp(argv[first], "--format") == 0 &&
         std::strcmp(argv[first + 1], "json") == 0;
}

// Shared by stop/snapshot/status: "hushtrace VERB PID".
bool ParsePidOnly(const char* command, int argc, char** argv, int first_extra, pid_t* pid, int* status) {
  if (argc >= 2 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    std::printf("usage: hushtrace %s PID%s\n", command,
                std::strcmp(command, "snapshot") == 0 ? " [-o DIR]"
                : std::strcmp(command, "status") == 0
                    ? " [--format json]\n\n--format json: one JSON object, the same keys (docs/cli.md)"
                    : "");
    *status = 0;
    return false;
  }
  if (argc < 2 || !ParsePid(argv[1], pid)) {
    *status = Bad(command, "expected a process id");
    return false;
  }
  if (argc > first_extra) {
    *status = Bad(command, std::string("unexpected argument '") + argv[first_extra] + "'");
    return false;
  }
  return true;
}

}  // namespace

int RunPs(int argc, char** argv) {
  const bool json = argc > 1 && IsJsonFormat(argc, argv, 1);
  if (argc > 1 && !json) {
    if (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
      std::printf("usage: hushtrace ps [--format json]\n\nLists the processes of this user (all "
                  "for root) that have the hushtrace runtime loaded; --format json prints a JSON\n"
                  "array of {\"pid\", \"user\", \"control\", \"command\"} (docs/cli.md).\n");
      return 0;
    }
    return Bad("ps", std::string("unexpected argument '") + argv[1] + "'");
  }
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) {
    std::fprintf(stderr, "hushtrace ps: cannot read /proc: %s\n", std::strerror(errno));
    return 1;
  }
  const uid_t me = ::geteuid();
  JsonWriter j;
  if (json) j.BeginArray();
  else std::printf("%8s %-12s %-9s %s\n", "PID", "USER", "CONTROL", "COMMAND");
  while (const dirent* e = ::readdir(proc)) {
    pid_t pid;
    if (!ParsePid(e->d_name, &pid) || pid == ::getpid()) continue;
    struct stat st;
    if (::stat(("/proc/" + std::string(e->d_name)).c_str(), &st) != 0) continue;
    if (me != 0 && st.st_uid != me) continue;
    std::string error;
    if (FindBootstrap(pid, &error) == 0) continue;
    char comm[64] = {};
    if (FILE* f = std::fopen(("/proc/" + std::string(e->d_name) + "/comm").c_str(), "r")) {
      if (std::fgets(comm, sizeof comm, f) == nullptr) comm[0] = '\0';
      std::fclose(f);
    }
    comm[std::strcspn(comm, "\n")] = '\0';
    const passwd* pw = ::getpwuid(st.st_uid);
    const std::string user = pw != nullptr ? pw->pw_name : std::to_string(st.st_uid);
    const bool open = ControlListening(pid);
    if (json) {
      j.BeginObject().Key("pid").Int(pid).Key("user").String(user);
      j.Key("control").String(open ? "open" : "-").Key("command").String(comm).EndObject();
    } else {
      std::printf("%8d %-12s %-9s %s\n", static_cast<int>(pid), user.c_str(), open ? "open" : "-",
                  comm);
    }
  }
  ::closedir(proc);
  if (json) std::fputs(j.EndArray().text().c_str(), stdout);
  return 0;
}

int RunStart(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    std::fputs(kStartUsage, stdout);
    return 0;
  }
  pid_t pid;
  if (argc < 2 || !ParsePid(argv[1], &pid)) return Bad("start", "expected a process id");
  control::Fields fields;
  std::string output, mode, buffer;
  bool have_event = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (arg == "-e" || arg == "--events") {
      if (!value(&v)) return Bad("start", arg + " needs a pattern");
      std::size_t begin = 0;
      for (;;) {
        const std::size_t comma = v.find(',', begin);
        const std::string one = v.substr(begin, comma - begin);
        if (!one.empty()) {
          fields.emplace_back("event", one);
          have_event = true;
        }
        if (comma == std::string::npos) break;
        begin = comma + 1;
      }
    } else if (arg == "-o" || arg == "--output") {
      if (!value(&output) || output.empty()) return Bad("start", arg + " needs a directory");
    } else if (arg == "--mode") {
      if (!value(&mode) || (mode != "stream" && mode != "flight")) {
        return Bad("start", "--mode must be 'stream' or 'flight'");
      }
    } else if (arg == "--buffer-size") {
      if (!value(&buffer)) return Bad("start", "--buffer-size needs a size");
    } else if (arg == "--filter") {
      if (!value(&v)) return Bad("start", "--filter needs an expression");
      std::string error;
      if (!filter::Parse(v, &error)) {
        std::fprintf(stderr, "hushtrace start: bad filter, %s\n%s\n", error.c_str(),
                     filter::Caret(v, std::stoul(error.substr(7))).c_str());
        return 2;
      }
      fields.emplace_back("filter", v);
    } else if (arg == "--snapshot-on") {
      if (!value(&v) || v.empty()) return Bad("start", "--snapshot-on needs a pattern");
      std::vector<filter::TriggerSpec> specs;  // refused here, before the process is touched
      std::string error;
      if (!filter::ParseTriggers(hush::base::SplitList(v), &specs, &error)) return Bad("start", error);
      for (const filter::TriggerSpec& spec : specs) fields.emplace_back("snapshot-on", spec.text);
    } else if (arg == "--snapshot-after") {
      std::uint64_t ns = 0;
      if (!value(&v) || !hush::base::ParseDurationWithUnit(v, &ns)) {
        return Bad("start", "--snapshot-after needs a duration (e.g. 5ms)");
      }
      fields.emplace_back("snapshot-after-ns", std::to_string(ns));
    } else if (arg == "--snapshot-keep") {
      if (!value(&v) || v.empty() || v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos) {
        return Bad("start", "--snapshot-keep needs a number of snapshots");
      }
      fields.emplace_back("snapshot-keep", v);
    } else if (arg == "--snapshot-interval") {
      if (!value(&v) || v.empty() || v.find_first_not_of("0123456789") != std::string::npos) {
        return Bad("start", "--snapshot-interval needs a number of milliseconds");
      }
      fields.emplace_back("snapshot-interval-ms", v);
    } else {
      return Bad("start", "unknown option '" + arg + "'");
    }
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
  fields.emplace_back("output", Absolute(output));
  if (!mode.empty()) fields.emplace_back("mode", mode);
  if (!buffer.empty()) fields.emplace_back("buffer-size", buffer);
  const ControlReply reply = SendControl(pid, "start", fields);
  if (const int status = Report("start", pid, reply); status != 0) return status;
  std::printf("tracing process %d into %s\n", static_cast<int>(pid), reply.Get("output").c_str());
  return 0;
}

int RunStop(int argc, char** argv) {
  pid_t pid;
  int status = 0;
  if (!ParsePidOnly("stop", argc, argv, 2, &pid, &status)) return status;
  const ControlReply reply = SendControl(pid, "stop", {});
  if ((status = Report("stop", pid, reply)) != 0) return status;
  std::printf("stopped; trace in %s", reply.Get("output").c_str());
  if (const std::string written = reply.Get("events-written"); !written.empty()) {
    std::printf(" (%s events written, %s discarded, %s lost on write)", written.c_str(),
                reply.Get("events-discarded").c_str(), reply.Get("events-lost-on-write").c_str());
  }
  std::printf("\n");
  return 0;
}

int RunSnapshot(int argc, char** argv) {
  pid_t pid;
  int status = 0;
  std::string copy_to;
  if (argc == 4 && (std::strcmp(argv[2], "-o") == 0 || std::strcmp(argv[2], "--output") == 0)) {
    copy_to = argv[3];
    argc = 2;
  }
  if (!ParsePidOnly("snapshot", argc, argv, 2, &pid, &status)) return status;
  const ControlReply reply = SendControl(pid, "snapshot", {});
  if ((status = Report("snapshot", pid, reply)) != 0) return status;
  std::string where = reply.Get("output");
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
  pid_t pid;
  int status = 0;
  const bool json = argc > 2 && IsJsonFormat(argc, argv, 2);
  if (!ParsePidOnly("status", json ? 2 : argc, argv, 2, &pid, &status)) return status;
  const ControlReply reply = SendControl(pid, "status", {});
  if ((status = Report("status", pid, reply)) != 0) return status;
  if (!json) {
    for (const auto& [key, value] : reply.fields) std::printf("%s: %s\n", key.c_str(), value.c_str());
    return 0;
  }
  // The same keys; values of decimal digits only as numbers, the others as strings.
  JsonWriter j;
  j.BeginObject();
  for (const auto& [key, value] : reply.fields) {
    j.Key(key);
    std::uint64_t n = 0;
    const auto r = std::from_chars(value.data(), value.data() + value.size(), n);
    if (!value.empty() && r.ec == std::errc() && r.ptr == value.data() + value.size()) j.Uint(n);
    else j.String(value);
  }
  std::fputs(j.EndObject().text().c_str(), stdout);
  return 0;
}

}  // namespace hush::cli
