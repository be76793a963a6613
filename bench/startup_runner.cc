// Measures process start-up: runs each variant (an executable plus environment) many times,
// interleaved round by round, and reports wall time from posix_spawn() to waitpid() return.
//
//   startup_runner --runs N [--warmup W] --scratch DIR --out FILE.json VARIANT...
//   VARIANT:  NAME|EXECUTABLE[|KEY=VALUE[,KEY=VALUE...]]
//
// In an environment value, {OUT} becomes a fresh path SCRATCH/NAME.RUN that does not exist yet
// (a trace directory for that run), and {OUT2} the same under --scratch2 DIR (a second file
// system: traces on ext4 and on tmpfs side by side in one run). Those directories are removed after each run except for the
// first, middle and last recorded runs, which are kept and listed in the JSON ("kept") so that
// the caller can check their traces. With --keep-traces they are all removed at the end instead:
// a file system that skips the inodes deleted in the last minute when it allocates one (ext4
// without a journal: recently_deleted()) makes every creation pay for the deletions before it,
// which a user's traces, kept, do not. HUSHTRACE_* variables are removed from the inherited
// environment. Each round runs every variant once, starting at a rotating position, after W
// unrecorded warm-up rounds. Statistics per variant: median, min, p10, p90, mean (microseconds),
// the median and minimum of the child's CPU time (user + system, all threads; unlike wall time it
// does not grow while the child waits for a CPU on a busy machine),
// and for every pair (variant, other variant) the median of the per-round differences.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

extern char** environ;

namespace {

struct Variant {
  std::string name;
  std::string exe;
  std::vector<std::string> env;  // KEY=VALUE, may contain {OUT}
  std::vector<double> us;        // per recorded round: wall time
  std::vector<double> cpu_us;    // per recorded round: the child's user + system CPU time
  std::vector<std::string> kept;
  int failures = 0;
};

double NowUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double TvUs(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) * 1e6 + static_cast<double>(tv.tv_usec);
}

// Runs one variant once; returns the wall time in microseconds or a negative value on failure,
// and the child's CPU time (all its threads, user + system) in *cpu_us.
std::string g_scratch2;  // --scratch2, for {OUT2}
bool g_keep_traces = false;  // --keep-traces
std::vector<std::string> g_remove_at_end;

double RunOnce(Variant& v, const std::string& scratch, int run, bool keep, double* cpu_us) {
  std::string out = scratch + "/" + v.name + "." + std::to_string(run);
  bool uses_out = false;
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "HUSHTRACE_", 10) == 0) continue;
    env_strings.emplace_back(*e);
  }
  for (const std::string& kv : v.env) {
    if (kv.find("{OUT2}") != std::string::npos) {
      uses_out = true;
      out = g_scratch2 + "/" + v.name + "." + std::to_string(run);
      env_strings.push_back(Replace(kv, "{OUT2}", out));
      continue;
    }
    if (kv.find("{OUT}") != std::string::npos) uses_out = true;
    env_strings.push_back(Replace(kv, "{OUT}", out));
  }
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = v.exe;
  char* argv[] = {exe.data(), nullptr};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);

  pid_t pid;
  const double t0 = NowUs();
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, envp.data());
  int status = 0;
  rusage ru = {};
  if (rc == 0) {
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
    }
  }
  const double t1 = NowUs();
  *cpu_us = TvUs(ru.ru_utime) + TvUs(ru.ru_stime);
  posix_spawn_file_actions_destroy(&actions);
  const bool ok = rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (uses_out) {
    if (keep && ok) {
      v.kept.push_back(out);
    } else if (g_keep_traces) {
      g_remove_at_end.push_back(out);
    } else {
      std::error_code ec;
      std::filesystem::remove_all(out, ec);
    }
  }
  return ok ? t1 - t0 : -1;
}

void Usage() {
  std::fprintf(stderr,
               "usage: startup_runner --runs N [--warmup W] --scratch DIR [--scratch2 DIR] [--keep-traces] --out FILE.json "
               "'NAME|EXE[|K=V,K=V]'...\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 300;
  int warmup = 10;
  std::string scratch;
  std::string out_path;
  std::vector<Variant> variants;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--warmup" && i + 1 < argc) {
      warmup = std::atoi(argv[++i]);
    } else if (a == "--scratch" && i + 1 < argc) {
      scratch = argv[++i];
    } else if (a == "--scratch2" && i + 1 < argc) {
      g_scratch2 = argv[++i];
    } else if (a == "--keep-traces") {
      g_keep_traces = true;
    } else if (a == "--out" && i + 1 < argc) {
      out_path = argv[++i];
    } else if (!a.empty() && a[0] != '-') {
      const std::vector<std::string> parts = Split(a, '|');
      if (parts.size() < 2 || parts.size() > 3) Usage();
      Variant v;
      v.name = parts[0];
      v.exe = parts[1];
      if (parts.size() == 3 && !parts[2].empty()) v.env = Split(parts[2], ',');
      variants.push_back(v);
    } else {
      Usage();
    }
  }
  if (variants.empty() || scratch.empty() || out_path.empty() || runs < 3) Usage();
  std::filesystem::create_directories(scratch);
  if (!g_scratch2.empty()) std::filesystem::create_directories(g_scratch2);

  const std::size_t nv = variants.size();
  const int total = warmup + runs;
  for (int round = 0; round < total; ++round) {
    const int run = round - warmup;  // < 0 during warm-up
    const bool keep = run == 0 || run == runs / 2 || run == runs - 1;
    for (std::size_t k = 0; k < nv; ++k) {
      Variant& v = variants[(k + static_cast<std::size_t>(round)) % nv];
      double cpu = 0;
      const double us = RunOnce(v, scratch, round, run >= 0 && keep, &cpu);
      if (us < 0) {
        ++v.failures;
        std::fprintf(stderr, "startup_runner: %s failed (run %d)\n", v.name.c_str(), round);
        if (v.failures > 3) {
          std::fprintf(stderr, "startup_runner: %s keeps failing; giving up\n", v.name.c_str());
          return 1;
        }
      }
      if (run >= 0) {
        v.us.push_back(us);
        v.cpu_us.push_back(us < 0 ? -1 : cpu);
      }
    }
  }

  FILE* f = std::fopen(out_path.c_str(), "w");
  if (f == nullptr) {
    std::perror(out_path.c_str());
    return 1;
  }
  std::fprintf(f, "{\n  \"runs\": %d,\n  \"warmup\": %d,\n  \"variants\": [\n", runs, warmup);
  std::printf("%-22s %10s %10s %10s %10s %10s   (microseconds, %d interleaved runs each)\n",
              "variant", "median", "min", "p10", "p90", "cpu med", runs);
  for (std::size_t a = 0; a < nv; ++a) {
    Variant& v = variants[a];
    std::vector<double> good, good_cpu;
    for (double x : v.us) {
      if (x >= 0) good.push_back(x);
    }
    for (double x : v.cpu_us) {
      if (x >= 0) good_cpu.push_back(x);
    }
    double mean = 0;
    for (double x : good) mean += x;
    mean = good.empty() ? 0 : mean / static_cast<double>(good.size());
    std::printf("%-22s %10.1f %10.1f %10.1f %10.1f %10.1f\n", v.name.c_str(), Quantile(good, 0.5),
                Quantile(good, 0), Quantile(good, 0.1), Quantile(good, 0.9),
                Quantile(good_cpu, 0.5));
    std::fprintf(
        f,
        "    {\"name\": \"%s\", \"exe\": \"%s\", \"samples\": %zu, \"failures\": %d, "
        "\"median_us\": %.2f, \"min_us\": %.2f, \"p10_us\": %.2f, \"p90_us\": %.2f, "
        "\"mean_us\": %.2f, \"cpu_median_us\": %.2f, \"cpu_min_us\": %.2f,\n     \"env\": [",
        v.name.c_str(), v.exe.c_str(), good.size(), v.failures, Quantile(good, 0.5),
        Quantile(good, 0), Quantile(good, 0.1), Quantile(good, 0.9), mean, Quantile(good_cpu, 0.5),
        Quantile(good_cpu, 0));
    for (std::size_t i = 0; i < v.env.size(); ++i) {
      std::fprintf(f, "%s\"%s\"", i ? ", " : "", v.env[i].c_str());
    }
    std::fprintf(f, "],\n     \"kept\": [");
    for (std::size_t i = 0; i < v.kept.size(); ++i) {
      std::fprintf(f, "%s\"%s\"", i ? ", " : "", v.kept[i].c_str());
    }
    std::fprintf(f, "],\n     \"paired_median_diff_us\": {");
    bool first = true;
    for (std::size_t b = 0; b < nv; ++b) {
      if (b == a) continue;
      std::vector<double> d;
      for (std::size_t r = 0; r < v.us.size() && r < variants[b].us.size(); ++r) {
        if (v.us[r] >= 0 && variants[b].us[r] >= 0) d.push_back(v.us[r] - variants[b].us[r]);
      }
      std::fprintf(f, "%s\"%s\": %.2f", first ? "" : ", ", variants[b].name.c_str(),
                   Quantile(d, 0.5));
      first = false;
    }
    std::fprintf(f, "},\n     \"paired_cpu_median_diff_us\": {");
    first = true;
    for (std::size_t b = 0; b < nv; ++b) {
      if (b == a) continue;
      std::vector<double> d;
      for (std::size_t r = 0; r < v.cpu_us.size() && r < variants[b].cpu_us.size(); ++r) {
        if (v.cpu_us[r] >= 0 && variants[b].cpu_us[r] >= 0)
          d.push_back(v.cpu_us[r] - variants[b].cpu_us[r]);
      }
      std::fprintf(f, "%s\"%s\": %.2f", first ? "" : ", ", variants[b].name.c_str(),
                   Quantile(d, 0.5));
      first = false;
    }
    std::fprintf(f, "}}%s\n", a + 1 < nv ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
  for (const std::string& dir : g_remove_at_end) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return 0;
}
