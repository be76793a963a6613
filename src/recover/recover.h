// Crash recovery of a trace directory whose writer died without stopping its session (SIGKILL,
// SIGSEGV, abort(), _exit()...): docs/recovery.md.
//
// The ring files (DIR/.ring_N, src/ring/ring_layout.h; DIR/.ring/ring_N in traces written by
// earlier versions, read too) outlive the process in the page cache.
// For each of them, Recover() writes to stream_N what the consumer had not written yet, exactly
// as Ring::WriteNew would have (closed packets, then the committed part of the open packet),
// after cutting stream_N back to the last write the ring header recorded. No code of the dead
// process runs: recovery works the same after SIGKILL as after a clean abort.
#ifndef HUSHTRACE_SRC_RECOVER_RECOVER_H_
#define HUSHTRACE_SRC_RECOVER_RECOVER_H_

#include <cstdint>
#include <string>
#include <vector>

namespace hush::recover {

struct Options {
  bool keep_rings = false;  // leave the ring files in place (recovery can be run again: it is idempotent)
  bool dry_run = false;     // report what would be done, change nothing
  bool force = false;       // recover even if the writer process still maps its rings
};

enum class RingStatus {
  kRecovered,  // stream_N now holds everything the ring had committed
  kUpToDate,   // nothing was missing from stream_N
  kEmpty,      // the ring was never initialised (writer died while creating it)
  kFailed,     // not recovered (`error` says why); the ring file is kept
};

struct RingReport {
  std::string name;        // ".ring_N" (".ring/ring_N" in a trace of an earlier version)
  std::uint32_t index = 0; // N
  RingStatus status = RingStatus::kUpToDate;
  std::string error;                // kFailed: "FILE: byte OFFSET: what"
  std::vector<std::string> notes;   // warnings about damage found and repaired
  std::string mode;                 // "stream" | "flight"
  std::uint32_t last_tid = 0;       // vtid of the last packet (0 if none)

  std::uint64_t stream_bytes_before = 0;  // size of stream_N before recovery
  std::uint64_t torn_bytes = 0;           // bytes cut from the end of stream_N (torn/unrecorded write)
  std::uint64_t damaged_stream_bytes = 0; // bytes cut because stream_N was damaged before them
  bool progress_repaired = false;         // the header's write-out progress disagreed with stream_N
  std::uint64_t packets_written = 0;      // packets appended (the counters packet included)
  std::uint64_t bytes_written = 0;
  std::uint64_t events_written = 0;       // events in the appended packets (decoded one by one)
  bool counters_packet = false;           // an empty packet carries the final loss counters

  // Loss counters at the crash, from the ring header (cumulative over the session).
  std::uint64_t discarded = 0;
  std::uint64_t overwritten = 0;
  // Losses found by recovery.
  std::uint64_t partial_events = 0;        // 0 or 1: an event being written when the writer died
  bool partial_unknown = false;            // reused sub-buffer: an event in flight cannot be seen
  std::uint64_t damaged_events = 0;        // events in packets cut or dropped as inconsistent
  std::uint64_t damaged_packets = 0;       // ring packets cut or dropped as inconsistent
  bool damaged_events_unknown = false;     // some of those counts are unknown (open packet)
};

struct Report {
  std::string dir;
  bool clean = false;               // no ring file, no crash marker: stopped (or recovered)
  std::vector<std::string> notes;   // trace-level notes (leftover temporary files...)
  std::vector<RingReport> rings;    // ordered by N
  bool rings_removed = false;       // the ring files (and the crash marker) were removed
  std::string error;                // fatal: nothing (more) was done
  bool writer_running = false;      // refused: a writer still runs (TraceBeingWritten, or maps the rings)
  // DIR/.crashed, left by the crash handler (src/session/crash_handler.h) when the writer
  // died of a fatal signal while its session ran; absent after SIGKILL or _exit().
  bool crash_marked = false;
  int crash_signal = 0;
  std::uint32_t crash_tid = 0;
  std::uint32_t crash_pid = 0;
  // "the program died of SIGSEGV in thread N" ("" without a marker).
  std::string CrashText() const;

  std::uint64_t RingsWith(RingStatus s) const;
  std::uint64_t Sum(std::uint64_t RingReport::*field) const;
};

// Recovers `dir`. False on failure: `report->error` is set (nothing was changed: no metadata, the
// writer still runs, an I/O error...) or a ring could not be recovered (its RingReport::error).
bool Recover(const std::string& dir, const Options& options, Report* report);

// Whether DIR holds what a session leaves only when it did not stop: a ring file, a crash
// marker, a metadata rewrite cut short (.metadata.tmp), or an earlier version's .ring/. One
// listing of DIR; false if it cannot be read. A running session's trace has them too.
bool HasLeftovers(const std::string& dir);

// Whether a session may still write DIR: one of its processes holds the shared lock a session
// takes on its trace directory for as long as it runs (docs/format.md, section 1). Processes of
// a followed tree share it; it goes with the last of them, crash or not.
bool TraceBeingWritten(const std::string& dir);

}  // namespace hush::recover

#endif  // HUSHTRACE_SRC_RECOVER_RECOVER_H_
