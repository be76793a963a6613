// Progress of long operations (dump, export, report, hist) on stderr, when stderr is a terminal.
//
//   Progress progress(*trace, "export");
//   while (it.Next()) { progress.Tick(it.event().timestamp()); ... }
//   progress.Done();
//
// The fraction done is the event's time within the trace's time range (first packet begin to last
// packet end over all streams): the reader walks streams in time order, so time is the cheap
// measure of how far it got. Tick() looks at the clock once every 65536 events and redraws at
// most 4 times a second; when stderr is not a TTY (or HUSHTRACE_NO_PROGRESS is set) it does
// nothing; so does a command whose result goes to a terminal on stdout (dump). Done() erases
// the line. HUSHTRACE_PROGRESS_INTERVAL_MS changes the 250 ms between redraws (tests use 0).
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_PROGRESS_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_PROGRESS_H_

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "hushtrace/reader.h"

namespace hush::cli {

class Progress {
 public:
  // `stdout_is_output`: the command streams its result to stdout (dump), so a terminal there
  // would mix the progress line into the output: stay quiet then.
  Progress(const reader::Trace& trace, const char* what, bool stdout_is_output = false)
      : what_(what) {
    enabled_ = ::isatty(STDERR_FILENO) == 1 && std::getenv("HUSHTRACE_NO_PROGRESS") == nullptr &&
               !(stdout_is_output && ::isatty(STDOUT_FILENO) == 1);
    bool any = false;
    for (const reader::StreamInfo& s : trace.streams()) {
      if (s.packets == 0) continue;
      begin_ = any ? std::min(begin_, s.timestamp_begin) : s.timestamp_begin;
      end_ = any ? std::max(end_, s.timestamp_end) : s.timestamp_end;
      any = true;
    }
    if (const char* ms = std::getenv("HUSHTRACE_PROGRESS_INTERVAL_MS");
        ms != nullptr && *ms != '\0') {
      interval_ = std::chrono::milliseconds(std::strtol(ms, nullptr, 10));
    }
    start_ = last_ = std::chrono::steady_clock::now();
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { Done(); }

  void Tick(std::uint64_t timestamp) {
    if (++events_ & 0xffff || !enabled_) [[likely]]
      return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < interval_) return;
    last_ = now;
    const double frac = end_ > begin_ && timestamp > begin_
                            ? std::min(1.0, static_cast<double>(timestamp - begin_) /
                                                static_cast<double>(end_ - begin_))
                            : 0.0;
    const double secs = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\r\033[Khushtrace %s: %5.1f%%  %llu events  %.1f M events/s", what_,
                 frac * 100, static_cast<unsigned long long>(events_),
                 secs > 0 ? static_cast<double>(events_) / secs / 1e6 : 0.0);
    drawn_ = true;
  }
  void Done() {
    if (drawn_) std::fputs("\r\033[K", stderr);
    drawn_ = false;
  }

 private:
  const char* what_;
  bool enabled_ = false, drawn_ = false;
  std::uint64_t events_ = 0, begin_ = 0, end_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
  std::chrono::milliseconds interval_{250};
};

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_PROGRESS_H_
