// libFuzzer target: argument parsing of the subcommands of the hushtrace CLI that read or convert
// traces (dump, report, list, recover, export, hist). Input: NUL-separated arguments; the first
// byte picks the subcommand. `record` is left out: it runs programs. Arguments holding '/' or ".." are skipped so that no path can leave the
// scratch directory the target runs in. Invariant: the exit status is 0, 1, 2 or 3 (commands.h).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "commands.h"
#include "fuzz_util.h"

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int, char**);
};

constexpr Subcommand kSubcommands[] = {
    {"dump", hush::cli::RunDump},
    {"report", hush::cli::RunReport},
    {"list", hush::cli::RunList},
    {"recover", hush::cli::RunRecover},
    {"export", hush::cli::RunExport},
    {"hist", hush::cli::RunHist},
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (::chdir(hush::fuzz::ScratchDir().c_str()) != 0) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Subcommand& sub = kSubcommands[data[0] % std::size(kSubcommands)];
  std::vector<std::string> args = {sub.name};
  std::string current;
  for (std::size_t i = 1; i < size && args.size() < 16; ++i) {
    if (data[i] != '\0') {
      current.push_back(static_cast<char>(data[i]));
      continue;
    }
    args.push_back(current);
    current.clear();
  }
  if (!current.empty()) args.push_back(current);
  for (const std::string& a : args) {
    if (a.find('/') != std::string::npos || a.find("..") != std::string::npos) return 0;
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int status = sub.run(static_cast<int>(args.size()), argv.data());
  std::fflush(stdout);
  // 0 ok, 1 failed, 2 bad arguments, 3 partial (a reading command skipped a damaged stream).
  if (status < 0 || status > 3) std::abort();
  return 0;
}
