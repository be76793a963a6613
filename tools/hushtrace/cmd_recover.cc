// hushtrace recover DIR: makes a trace whose writer died readable again (docs/recovery.md).
//
// The work is done by the hush_recover library (src/recover). When the CLI is built without it
// (HUSH_HAVE_RECOVER comes with the library's link interface), the command refuses to run.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli_app.h"
#include "commands.h"

#ifdef HUSH_HAVE_RECOVER
#include "format/numbered_name.h"
#include "recover/recover.h"
#endif

namespace hush::cli {

#ifndef HUSH_HAVE_RECOVER

int RunRecover(int, char**) {
  std::fprintf(stderr, "hushtrace recover: not built into this hushtrace (library hush_recover missing)\n");
  return 1;
}

#else

namespace {

constexpr char kUsage[] = "recover DIR [options]";
constexpr char kDescription[] =
    "Makes the trace in DIR readable again after its writer died without stopping its session\n"
    "(SIGKILL, SIGSEGV, abort(), _exit(), ...). For each ring buffer left in DIR (.ring_N), or in\n"
    "/dev/shm/hushtrace-UID/rings-UUID-DEV-INO for a DIR on a disk file system, it writes to stream_N\n"
    "what the ring committed and the writer had not written yet: it cuts a write torn by\n"
    "the crash, closes the packet left open, drops the event being written at the crash, then\n"
    "removes the ring file. No daemon and no crash handler are needed; the trace needs its metadata.";
constexpr char kFooter[] =
    "Events are counted by decoding every appended event with the metadata. Lost events: discarded\n"
    "(full ring, nested, too large) and overwritten (flight mode) are the writer's counters at the\n"
    "crash; a partial event is one being written when the writer died.\n"
    "\n"
    "exit status: 0 recovered (or nothing to recover), 1 failure (details on stderr), 2 bad arguments\n";

struct Args {
  std::string dir;
  bool keep_rings = false, dry_run = false, force = false, quiet = false;
};

// The grammar of `recover`: one line per option.
// clang-format off
void Define(CLI::App& app, Args& a) {
  DescribeCommand(app, "recover", kUsage, kDescription, kFooter);
  app.add_option("DIR", a.dir, "the trace directory")->type_name("");
  app.add_flag("--keep-rings", a.keep_rings, "keep the ring files (running recover again gives the same trace)");
  app.add_flag("-n,--dry-run", a.dry_run, "report what would be done, change nothing");
  app.add_flag("--force", a.force, "recover even if the writer process still maps its rings");
  app.add_flag("-q,--quiet", a.quiet, "print only warnings and errors");
}
// clang-format on

const char* StatusText(recover::RingStatus s) {
  switch (s) {
    case recover::RingStatus::kRecovered: return "recovered";
    case recover::RingStatus::kUpToDate: return "up to date";
    case recover::RingStatus::kEmpty: return "empty (never used)";
    case recover::RingStatus::kFailed: return "FAILED";
  }
  return "?";
}

std::string Plural(std::uint64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

void PrintRing(const recover::RingReport& r, bool dry) {
  std::string line = r.name;
  if (!r.mode.empty()) {
    line += " (" + r.mode;
    if (r.last_tid != 0) line += ", tid " + std::to_string(r.last_tid);
    line += ")";
  }
  line += ": ";
  line += r.status == recover::RingStatus::kRecovered && dry ? "would be recovered" : StatusText(r.status);
  if (r.status == recover::RingStatus::kRecovered) {
    line += ": " + Plural(r.events_written, "event") + " in " + Plural(r.packets_written, "packet") + " (" +
            std::to_string(r.bytes_written) + " bytes) appended to " + format::StreamName(r.index);
    if (r.counters_packet) line += " (the last one only carries the loss counters)";
    if (r.torn_bytes != 0) line += "; " + std::to_string(r.torn_bytes) + " torn bytes cut";
  }
  std::printf("%s\n", line.c_str());
  if (r.status == recover::RingStatus::kRecovered || r.status == recover::RingStatus::kUpToDate) {
    std::string lost = "  lost events: " + std::to_string(r.discarded) + " discarded, " +
                       std::to_string(r.overwritten) + " overwritten";
    if (r.damaged_events != 0 || r.damaged_events_unknown) {
      lost += ", " + std::to_string(r.damaged_events) + (r.damaged_events_unknown ? "+" : "") +
              " in damaged packets";
    }
    if (r.partial_events != 0) {
      lost += ", 1 partial event dropped (being written when the writer died)";
    } else if (r.partial_unknown) {
      lost += "; an event being written at the crash, if any, was dropped";
    }
    std::printf("%s\n", lost.c_str());
  }
}

}  // namespace

void DescribeRecover(CLI::App& app) { DescribeWith(app, Define); }

int RunRecover(int argc, char** argv) {
  Args args;
  CLI::App app;
  Define(app, args);
  if (const int status = ParseCommand(app, argc, argv); status >= 0) return status;
  if (args.dir.empty()) return BadArguments(app, "missing trace directory");
  recover::Options options;
  options.keep_rings = args.keep_rings;
  options.dry_run = args.dry_run;
  options.force = args.force;
  const bool quiet = args.quiet;
  const char* dir = args.dir.c_str();

  recover::Report report;
  const bool ok = recover::Recover(dir, options, &report);
  for (const std::string& n : report.notes) std::fprintf(stderr, "hushtrace recover: warning: %s\n", n.c_str());
  if (!report.error.empty()) {
    std::fprintf(stderr, "hushtrace recover: %s\n", report.error.c_str());
    return 1;
  }
  if (report.crash_marked && !quiet) std::printf("%s: %s\n", dir, report.CrashText().c_str());
  if (report.clean) {
    if (!quiet) std::printf("%s: no ring buffers left: the trace was closed cleanly (or already recovered); nothing to do\n", dir);
    return 0;
  }
  for (const recover::RingReport& r : report.rings) {
    for (const std::string& n : r.notes) {
      std::fprintf(stderr, "hushtrace recover: warning: %s: %s\n", r.name.c_str(), n.c_str());
    }
    if (r.status == recover::RingStatus::kFailed) {
      std::fprintf(stderr, "hushtrace recover: %s not recovered: %s\n", r.name.c_str(), r.error.c_str());
    }
  }
  if (!quiet) {
    if (options.dry_run) std::printf("dry run: nothing was changed\n");
    for (const recover::RingReport& r : report.rings) PrintRing(r, options.dry_run);
    using R = recover::RingReport;
    std::printf(
        "%s: %llu of %zu ring%s recovered, %llu up to date, %llu failed: %s in %s appended; "
        "lost events: %llu discarded, %llu overwritten, %llu partial, %llu%s in damaged packets\n",
        dir, static_cast<unsigned long long>(report.RingsWith(recover::RingStatus::kRecovered)),
        report.rings.size(), report.rings.size() == 1 ? "" : "s",
        static_cast<unsigned long long>(report.RingsWith(recover::RingStatus::kUpToDate) +
                                        report.RingsWith(recover::RingStatus::kEmpty)),
        static_cast<unsigned long long>(report.RingsWith(recover::RingStatus::kFailed)),
        Plural(report.Sum(&R::events_written), "event").c_str(),
        Plural(report.Sum(&R::packets_written), "packet").c_str(),
        static_cast<unsigned long long>(report.Sum(&R::discarded)),
        static_cast<unsigned long long>(report.Sum(&R::overwritten)),
        static_cast<unsigned long long>(report.Sum(&R::partial_events)),
        static_cast<unsigned long long>(report.Sum(&R::damaged_events)),
        [&] {
          for (const R& r : report.rings) {
            if (r.damaged_events_unknown) return "+";
          }
          return "";
        }());
    if (report.rings_removed) {
      std::printf("removed the ring files of %s\n", dir);
    } else if (options.keep_rings) {
      std::printf("kept the ring files of %s (--keep-rings)\n", dir);
    } else if (!options.dry_run && !ok) {
      std::printf("kept the ring files of %s that were not recovered\n", dir);
    }
  }
  return ok ? 0 : 1;
}

#endif  // HUSH_HAVE_RECOVER

}  // namespace hush::cli
