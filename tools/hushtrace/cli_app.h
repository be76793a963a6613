// The one command-line grammar of every subcommand, on CLI11 (Debian libcli11-dev).
//
// A subcommand declares its options on a CLI::App (one add_option line each) and calls
// ParseCommand(), which gives every subcommand the same rules:
//
//   option spelling      -e x   -ex   --events x   --events=x   (every option has a long form)
//   flags                --json, --absolute ...: no value ("--json=1" is accepted by CLI11)
//   positionals          anywhere among the options (DIR before or after them); after "--"
//                        everything is positional. `record` stops at PROGRAM: what follows it is
//                        PROGRAM's command line (StopAtFirstPositional)
//   repeated options     a list option takes one value per occurrence; a single-valued one keeps
//                        the last
//   -h, --help           the usage line, the description, every option, the footer; exit 0
//   errors               "hushtrace CMD: MESSAGE\n(see 'hushtrace CMD --help')" on stderr and exit
//                        status 2, before anything runs: an unknown option, an option without its
//                        value, a positional too many
//
// The same declarations make `hushtrace --help`, the man page (help2man) and the bash completion
// (`hushtrace completion bash`, completion.cc).
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_CLI_APP_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_CLI_APP_H_

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "filter/filter.h"

namespace hush::cli {

// Sets the help of `app` (a subcommand named `name`, e.g. "dump"): `usage` is the line after
// "usage: hushtrace ", `description` the text between it and the options, `footer` the text after
// them (exit status and the like). Single-valued options keep their last value.
void DescribeCommand(CLI::App& app, const std::string& name, const std::string& usage,
                     const std::string& description, const std::string& footer);

// Declares a list option: one value per occurrence ("-e a -e b"; "-e a b" is not two values).
CLI::Option* AddList(CLI::App& app, const std::string& names, std::vector<std::string>& values,
                     const std::string& help);

// The positional arguments: collected in `values` (declared as "ARGS" for the help).
CLI::Option* AddPositionals(CLI::App& app, const std::string& name, std::vector<std::string>& values,
                            const std::string& help);

// Makes `app` stop at its first positional argument: it and every argument after it are left for
// Remaining() (record's PROGRAM and its arguments).
void StopAtFirstPositional(CLI::App& app);

// Parses argv[1..argc) (argv[0] is the subcommand's name). Returns -1 to go on, else the exit
// status: 0 after printing the help, 2 after an error message.
int ParseCommand(CLI::App& app, int argc, char** argv);

// What StopAtFirstPositional left: PROGRAM and its arguments ("--" before them removed).
std::vector<std::string> Remaining(const CLI::App& app);

// For DescribeX (commands.h): declares a command's options on `app`, bound to storage that lives
// as long as the process (those apps are only read: help, man page, completion).
template <typename Args>
void DescribeWith(CLI::App& app, void (*define)(CLI::App&, Args&)) {
  static Args args;
  define(app, args);
}

// Parses a filter expression (src/filter/filter.h; every --filter). nullptr after printing
// "hushtrace CMD: bad filter, column N: what" and the expression with a caret under the column.
std::unique_ptr<filter::Parsed> ParseFilterOption(const CLI::App& app, const std::string& expr);
// Parses a runtime filter expression (record/start --filter) as the traced process will, and
// refuses what the runtime can never evaluate ($tid, $thread: filter::Program::Check), so that a
// typo is refused before anything runs. False after printing the error as ParseFilterOption.
bool CheckRuntimeFilter(const CLI::App& app, const std::string& expr);

// Prints "hushtrace CMD: message" and the pointer to --help; returns 2.
int BadArguments(const CLI::App& app, const std::string& message);

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_CLI_APP_H_
