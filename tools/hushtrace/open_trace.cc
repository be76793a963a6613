#include "open_trace.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/dir_stream.h"
#include "recover/recover.h"

namespace hush::cli {

std::unique_ptr<reader::Trace> OpenTraceRecovering(const std::string& dir, const char* command,
                                                   std::string* error) {
  if (recover::HasLeftovers(dir)) {
    recover::Report report;
    const bool ok = recover::Recover(dir, recover::Options{}, &report);
    if (report.writer_running) {
      std::fprintf(stderr, "%s: %s is still being written: reading what is on disk so far\n",
                   command, dir.c_str());
    } else if (!ok) {
      std::fprintf(stderr,
                   "%s: %s: its writer died and recovery failed (%s); reading what is on disk "
                   "('hushtrace recover %s' says more)\n",
                   command, dir.c_str(),
                   !report.error.empty() ? report.error.c_str() : "a ring could not be recovered",
                   dir.c_str());
    } else if (!report.clean && !report.rings.empty()) {
      std::fprintf(stderr,
                   "%s: %s: its writer died; recovered %llu events from %llu of %zu ring buffers "
                   "('hushtrace recover' explains what recovery does)\n",
                   command, dir.c_str(),
                   static_cast<unsigned long long>(report.Sum(&recover::RingReport::events_written)),
                   static_cast<unsigned long long>(report.RingsWith(recover::RingStatus::kRecovered)),
                   report.rings.size());
    }
    if (report.crash_marked) {
      std::fprintf(stderr, "%s: %s: %s\n", command, dir.c_str(), report.CrashText().c_str());
    }
  }
  return reader::Trace::Open(dir, error);
}

namespace {

// DIR/proc-*: the traces of programs exec'd under the session (docs/format.md, "Processes").
std::vector<std::string> ExecTraces(const std::string& dir) {
  std::vector<std::string> subs;
  base::DirStream list = base::DirStream::Open(dir.c_str());
  while (const char* name = list.Next()) {
    if (std::strncmp(name, "proc-", 5) != 0) continue;
    const std::string sub = dir + "/" + name;
    struct stat st;
    if (::lstat(sub.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) subs.push_back(sub);
  }
  std::sort(subs.begin(), subs.end());
  return subs;
}

}  // namespace

void CompleteRecordedTrace(const std::string& dir, const char* command) {
  std::vector<std::string> dirs = {dir};
  for (std::string& sub : ExecTraces(dir)) dirs.push_back(std::move(sub));
  for (const std::string& d : dirs) {
    // Every process left cleanly: nothing to recover, and Recover (which reads the metadata and
    // syncs the directory, ~2 ms of a record run on ext4) is not run.
    if (!recover::HasLeftovers(d)) continue;
    recover::Report report;
    const bool ok = recover::Recover(d, recover::Options{}, &report);
    const auto events = static_cast<unsigned long long>(
        report.Sum(&recover::RingReport::events_written));
    if (report.writer_running) {
      std::fprintf(stderr,
                   "%s: %s is still being written by a process that outlived the program; its "
                   "events reach the streams when it exits\n",
                   command, d.c_str());
    } else if (!ok) {
      std::fprintf(stderr, "%s: %s: events left in ring buffers could not be recovered (%s; "
                   "'hushtrace recover %s' says more)\n",
                   command, d.c_str(),
                   !report.error.empty() ? report.error.c_str() : "a ring could not be recovered",
                   d.c_str());
    } else if (events != 0) {
      std::fprintf(stderr,
                   "%s: %s: %llu events that processes left in their ring buffers (exec, _exit "
                   "or a crash) were written to the trace\n",
                   command, d.c_str(), events);
    }
    if (report.crash_marked) {
      std::fprintf(stderr, "%s: %s: %s\n", command, d.c_str(), report.CrashText().c_str());
    }
  }
}

std::vector<std::string> LossWarnings(const reader::Trace& trace) {
  std::vector<std::string> lines;
  for (const reader::StreamInfo& s : trace.streams()) {
    if (s.DiscardedOnly() != 0) {
      lines.push_back(s.path + ": " + std::to_string(s.DiscardedOnly()) +
                      " events lost (ring full, nested or oversized, or not written)");
    }
    if (s.lost_packets != 0) {
      lines.push_back(s.path + ": " + std::to_string(s.lost_packets) +
                      " packets missing (gaps in packet_seq_num)");
    }
  }
  return lines;
}

int ReportSkippedStreams(const reader::EventIterator& it, const char* command) {
  for (const std::string& damage : it.skipped()) {
    std::fprintf(stderr,
                 "%s: %s: the rest of this stream was skipped; the other streams were read\n",
                 command, damage.c_str());
  }
  return it.skipped().empty() ? 0 : kExitPartial;
}

}  // namespace hush::cli
