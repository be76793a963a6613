// Live-control latencies against a process emitting at full speed (control_target spin):
//   - `start` to the first event recorded: the event's timestamp (converted to CLOCK_REALTIME by
//     the trace's clock calibration) minus CLOCK_REALTIME just before the request is sent;
//   - `start`, `stop` and `snapshot` request round trips (each returns once the work is done:
//     stop and snapshot have written every committed event when they reply);
//   - the first request to a never-controlled process, which includes the ptrace bootstrap.
//
//   control_bench --target PATH --runs N --scratch DIR --out FILE.json
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <hushtrace/reader.h>
#include <string>
#include <vector>

#include "control_client.h"

namespace {

double NowUs(clockid_t clock = CLOCK_MONOTONIC) {
  timespec ts;
  ::clock_gettime(clock, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

struct Series {
  const char* name;
  std::vector<double> us;
};

std::string Summary(Series& s) {
  if (s.us.empty()) return std::string("\"") + s.name + "\": null";
  std::sort(s.us.begin(), s.us.end());
  auto at = [&](double q) { return s.us[static_cast<std::size_t>(q * (s.us.size() - 1))]; };
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "\"%s\": {\"n\": %zu, \"median_us\": %.1f, \"min_us\": %.1f, \"p90_us\": %.1f, "
                "\"max_us\": %.1f}",
                s.name, s.us.size(), at(0.5), s.us.front(), at(0.9), s.us.back());
  return buf;
}

// Epoch time (ns, CLOCK_REALTIME) at which the first ctl:clock event of the trace was recorded:
// its own timestamp, not its mono_ns field, which the thread may have read before a preemption
// that straddled the previous session's stop. -1 if there is none.
double FirstEventNs(const std::string& dir) {
  std::string error;
  auto trace = hush::reader::Trace::Open(dir, &error);
  if (!trace) {
    std::fprintf(stderr, "control_bench: %s\n", error.c_str());
    return -1;
  }
  hush::reader::EventIterator it(*trace);
  while (it.Next()) {
    if (it.event().name() == "ctl:clock") return static_cast<double>(trace->ToEpochNs(it.event().timestamp()));
  }
  return -1;
}

// Time spent handling requests inside the process (wall, and CPU of the control thread): what
// is left of a round trip is the client, the socket and waiting for a CPU.
bool Request(pid_t pid, const char* verb, const hush::control::Fields& fields,
             std::vector<double>* wall = nullptr, std::vector<double>* cpu = nullptr) {
  const hush::cli::ControlReply r = hush::cli::SendControl(pid, verb, fields);
  if (!r.ok) std::fprintf(stderr, "control_bench: %s: %s\n", verb, r.error.c_str());
  if (r.ok && wall != nullptr) wall->push_back(std::atof(r.Get("server-wall-us").c_str()));
  if (r.ok && cpu != nullptr) cpu->push_back(std::atof(r.Get("server-cpu-us").c_str()));
  return r.ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string target, scratch, out;
  int runs = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--target") target = argv[i + 1];
    else if (a == "--runs") runs = std::atoi(argv[i + 1]);
    else if (a == "--scratch") scratch = argv[i + 1];
    else if (a == "--out") out = argv[i + 1];
  }
  if (target.empty() || scratch.empty() || out.empty() || runs < 1) {
    std::fprintf(stderr, "usage: control_bench --target PATH --runs N --scratch DIR --out FILE.json\n");
    return 2;
  }
  std::filesystem::create_directories(scratch);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(target.c_str(), target.c_str(), "spin", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::usleep(200000);  // let it reach its loop (and its sleeper thread its nanosleep)

  Series bootstrap{"first_request_with_bootstrap", {}}, first_event{"start_to_first_event", {}},
      start{"start_request", {}}, stop{"stop_request", {}}, snapshot{"snapshot_request", {}},
      start_wall{"start_in_process", {}}, start_cpu{"start_in_process_cpu", {}},
      stop_wall{"stop_in_process", {}}, stop_cpu{"stop_in_process_cpu", {}},
      snapshot_wall{"snapshot_in_process", {}}, snapshot_cpu{"snapshot_in_process_cpu", {}};
  bool ok = true;
  double t = NowUs();
  ok = ok && Request(pid, "status", {});
  bootstrap.us.push_back(NowUs() - t);
  for (int i = 0; ok && i < runs; ++i) {
    const std::string dir = scratch + "/stream." + std::to_string(i);
    const double sent_ns = NowUs(CLOCK_REALTIME) * 1e3;
    t = NowUs();
    ok = Request(pid, "start", {{"event", "ctl:clock"}, {"output", dir}, {"buffer-size", "256k"}},
                 &start_wall.us, &start_cpu.us);
    start.us.push_back(NowUs() - t);
    ::usleep(5000);
    const double s = NowUs();
    ok = ok && Request(pid, "stop", {}, &stop_wall.us, &stop_cpu.us);
    stop.us.push_back(NowUs() - s);
    const double first = FirstEventNs(dir);
    if (first > 0) first_event.us.push_back((first - sent_ns) / 1e3);
    if (i != 0) std::filesystem::remove_all(dir);
  }
  const std::string flight = scratch + "/flight";
  ok = ok && Request(pid, "start", {{"event", "ctl:clock"}, {"output", flight}, {"mode", "flight"},
                                    {"buffer-size", "256k"}});
  for (int i = 0; ok && i < runs; ++i) {
    ::usleep(5000);
    t = NowUs();
    ok = Request(pid, "snapshot", {}, &snapshot_wall.us, &snapshot_cpu.us);
    snapshot.us.push_back(NowUs() - t);
  }
  if (ok) Request(pid, "stop", {});
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  FILE* f = std::fopen(out.c_str(), "w");
  if (f == nullptr) return 1;
  std::fprintf(f, "{\"runs\": %d, \"events\": \"ctl:clock, 1 thread emitting at full speed, 256k rings\",\n", runs);
  for (Series* s : {&bootstrap, &first_event, &start, &stop, &snapshot, &start_wall, &start_cpu,
                    &stop_wall, &stop_cpu, &snapshot_wall, &snapshot_cpu}) {
    std::fprintf(f, " %s%s\n", Summary(*s).c_str(), s == &snapshot_cpu ? "" : ",");
  }
  std::fprintf(f, "}\n");
  std::fclose(f);
  return ok ? 0 : 1;
}
