// hushtrace: record, list, report and dump traces. `hushtrace help` lists the subcommands; each
// parses its own command line (cli_app.h), this file only picks it.
#include <cstdio>
#include <cstring>

#include "commands.h"

namespace {

void Usage(FILE* out) {
  std::fprintf(out, "usage: hushtrace <command> [options]\n\ncommands:\n");
  for (const hush::cli::Command& c : hush::cli::AllCommands()) std::fprintf(out, "  %-9s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\noptions:\n"
               "  -h, --help     print this help\n"
               "  -V, --version  print the version\n"
               "\n'hushtrace <command> --help' describes a command and lists all its options;\n"
               "'hushtrace -V' (--version) prints the version.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  const char* name = argv[1];
  if (std::strcmp(name, "help") == 0 || std::strcmp(name, "--help") == 0 || std::strcmp(name, "-h") == 0) {
    Usage(stdout);
    return 0;
  }
  if (std::strcmp(name, "--version") == 0 || std::strcmp(name, "-V") == 0) {
    std::printf("hushtrace 0.1.0\n");
    return 0;
  }
  if (std::strcmp(name, "completion") == 0) return hush::cli::RunCompletion(argc - 1, argv + 1);
  for (const hush::cli::Command& c : hush::cli::AllCommands()) {
    if (std::strcmp(name, c.name) == 0) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "hushtrace: unknown command '%s'\n\n", name);
  Usage(stderr);
  return 2;
}
