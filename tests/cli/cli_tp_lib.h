// The shared library of the cli tests (cli_tplib): tracepoints of its own.
#ifndef HUSHTRACE_TESTS_CLI_CLI_TP_LIB_H_
#define HUSHTRACE_TESTS_CLI_CLI_TP_LIB_H_

int CliLibWork(int n);

#endif  // HUSHTRACE_TESTS_CLI_CLI_TP_LIB_H_
