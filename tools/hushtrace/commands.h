// Subcommands of the hushtrace CLI. Each returns the process exit status:
// 0 success, 1 failure of the operation, 2 bad arguments (with a message on stderr), and for the
// commands that read traces 3, partial: a damaged stream was skipped (open_trace.h, kExitPartial).
// `record` returns the traced program's exit status.
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_COMMANDS_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_COMMANDS_H_

namespace hush::cli {

// argv[0] is the subcommand name; argc counts it.
int RunRecord(int argc, char** argv);  // cmd_record.cc
int RunList(int argc, char** argv);    // cmd_list.cc
int RunReport(int argc, char** argv);  // cmd_report.cc
int RunDump(int argc, char** argv);    // cmd_dump.cc
int RunRecover(int argc, char** argv); // cmd_recover.cc
int RunExport(int argc, char** argv);  // cmd_export.cc
int RunHist(int argc, char** argv);    // cmd_hist.cc
int RunShip(int argc, char** argv);    // cmd_ship.cc
// Live control (cmd_control.cc).
int RunPs(int argc, char** argv);
int RunStart(int argc, char** argv);
int RunStop(int argc, char** argv);
int RunSnapshot(int argc, char** argv);
int RunStatus(int argc, char** argv);

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_COMMANDS_H_
