#include "open_trace.h"

#include <sys/stat.h>

#include <cstdio>

#include "recover/recover.h"

namespace hush::cli {

std::unique_ptr<reader::Trace> OpenTraceRecovering(const std::string& dir, const char* command,
                                                   std::string* error) {
  struct stat st;
  if (::lstat((dir + "/.ring").c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
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
    } else if (!report.clean && !report.rings.empty()) {  // an empty .ring/ is removed silently
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
