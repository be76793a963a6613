// Subcommands of the hushtrace CLI. Each returns the process exit status:
// 0 success, 1 failure of the operation, 2 bad arguments (with a message on stderr), and for the
// commands that read traces 3, partial: a damaged stream was skipped (open_trace.h, kExitPartial).
// `record` returns the traced program's exit status.
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_COMMANDS_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_COMMANDS_H_

#include <span>

namespace CLI {
class App;
}

namespace hush::cli {

// RunX parses the command line of subcommand X (argv[0] is its name; argc counts it) and runs it.
// DescribeX declares X's options on `app` (cli_app.h), bound to storage of its own: for the help
// of `hushtrace`, the man page and the completion script, which only read the declarations.
int RunRecord(int argc, char** argv);  // cmd_record.cc
void DescribeRecord(CLI::App& app);
int RunList(int argc, char** argv);    // cmd_list.cc
void DescribeList(CLI::App& app);
int RunReport(int argc, char** argv);  // cmd_report.cc
void DescribeReport(CLI::App& app);
int RunDump(int argc, char** argv);    // cmd_dump.cc
void DescribeDump(CLI::App& app);
int RunRecover(int argc, char** argv); // cmd_recover.cc
void DescribeRecover(CLI::App& app);
int RunExport(int argc, char** argv);  // cmd_export.cc
void DescribeExport(CLI::App& app);
int RunHist(int argc, char** argv);    // cmd_hist.cc
void DescribeHist(CLI::App& app);
int RunShip(int argc, char** argv);    // cmd_ship.cc
void DescribeShip(CLI::App& app);
// Live control (cmd_control.cc).
int RunPs(int argc, char** argv);
void DescribePs(CLI::App& app);
int RunStart(int argc, char** argv);
void DescribeStart(CLI::App& app);
int RunStop(int argc, char** argv);
void DescribeStop(CLI::App& app);
int RunSnapshot(int argc, char** argv);
void DescribeSnapshot(CLI::App& app);
int RunStatus(int argc, char** argv);
void DescribeStatus(CLI::App& app);

// The subcommands, in the order `hushtrace --help` lists them (command_table.cc).
struct Command {
  const char* name;
  const char* summary;  // one line
  int (*run)(int argc, char** argv);
  void (*describe)(CLI::App& app);
};
std::span<const Command> AllCommands();

// `hushtrace completion bash|zsh`: prints the shell's completion script made from every
// subcommand's declared options (completion.cc). Hidden from the command list; the build installs
// its output.
int RunCompletion(int argc, char** argv);

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_COMMANDS_H_
