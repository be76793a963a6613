// The one command-line grammar of every subcommand (tools/hushtrace/cli_app.h): --help, the error
// format and exit status 2 for unknown options and missing values, the spellings of an option, and
// options on either side of the positional arguments.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_test_util.h"

namespace hush::clitest {
namespace {

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

RunResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), HushtraceCli());
  return RunCommand(args);
}

// The subcommands `hushtrace --help` lists.
std::vector<std::string> Commands() {
  const RunResult r = Cli({"--help"});
  std::vector<std::string> names;
  std::istringstream in(r.out);
  std::string line;
  bool on = false;
  while (std::getline(in, line)) {
    if (line == "commands:") {
      on = true;
    } else if (line.empty()) {
      on = false;
    } else if (on) {
      std::istringstream words(line);
      std::string name;
      words >> name;
      names.push_back(name);
    }
  }
  return names;
}

TEST(CliGrammar, EveryCommandHasHelpAndOneErrorFormat) {
  const std::vector<std::string> commands = Commands();
  ASSERT_EQ(commands.size(), 13u);
  for (const std::string& c : commands) {
    SCOPED_TRACE(c);
    // A command left out of this build (ship and the SQL export in the aarch64 cross build, which
    // has no libcurl or libsqlite3) says so and has no grammar to check.
    if (Contains(Cli({c, "-h"}).err, "not built into this hushtrace")) continue;
    for (const char* help : {"-h", "--help"}) {
      const RunResult h = Cli({c, help});
      EXPECT_EQ(h.status, 0) << h.err;
      EXPECT_EQ(h.out.rfind("usage: hushtrace " + c, 0), 0u) << h.out;
      EXPECT_TRUE(Contains(h.out, "-h,--help")) << h.out;
    }
    // The options' column: an option line's description starts at the same column, at least two
    // blanks after the option (or on the next line, for an option too long for that).
    for (const std::string& line : Lines(Cli({c, "--help"}).out)) {
      if (line.rfind("  -", 0) != 0) continue;
      const std::size_t gap = line.find("  ", 2);
      if (gap == std::string::npos) continue;  // the description is on the next line
      const std::size_t desc = line.find_first_not_of(' ', gap);
      EXPECT_EQ(desc, 30u) << "description column: '" << line << "'";
      EXPECT_GE(desc - gap, 2u) << line;
    }
    const std::string see = "(see 'hushtrace " + c + " --help')\n";
    RunResult r = Cli({c, "--no-such-option"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "hushtrace " + c + ": unknown option '--no-such-option'\n" + see);
    EXPECT_TRUE(r.out.empty()) << r.out;
    // Before anything runs: the option is refused even after a positional argument (`record`:
    // before its PROGRAM, after which every argument is PROGRAM's).
    r = c == "record" ? Cli({c, "--no-such-option=3", "1"}) : Cli({c, "1", "--no-such-option=3"});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(Contains(r.err, "unknown option '--no-such-option=3'")) << c << ": " << r.err;
  }
}

TEST(CliGrammar, MissingValues) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"dump", "DIR", "--since"}, "hushtrace dump: option --since needs a value\n"},
      {{"dump", "DIR", "-e"}, "hushtrace dump: option --event needs a value\n"},
      {{"report", "DIR", "--callers"}, "hushtrace report: option --callers needs a value\n"},
      {{"export", "DIR", "-o"}, "hushtrace export: option --output needs a value\n"},
      {{"hist", "DIR", "--width"}, "hushtrace hist: option --width needs a value\n"},
      {{"record", "--buffer-size"}, "hushtrace record: option --buffer-size needs a value\n"},
      {{"start", "1", "--filter"}, "hushtrace start: option --filter needs a value\n"},
      {{"snapshot", "1", "-o"}, "hushtrace snapshot: option --output needs a value\n"},
      {{"ship", "--to"}, "hushtrace ship: option --to needs a value\n"},
  };
  for (const auto& [args, message] : cases) {
    const RunResult r = Cli(args);
    if (Contains(r.err, "not built into this hushtrace")) continue;  // see above
    EXPECT_EQ(r.status, 2) << testing::PrintToString(args);
    EXPECT_EQ(r.err.rfind(message, 0), 0u) << testing::PrintToString(args) << ": " << r.err;
  }
}

// Parsed spellings reach the command: a trace directory that does not exist fails with 1 (the
// trace cannot be read), where a rejected command line would give 2.
TEST(CliGrammar, SpellingsAndOptionsAfterPositionals) {
  const std::string missing = "/nonexistent/hushtrace-trace";
  const std::vector<std::vector<std::string>> accepted = {
      {"dump", missing, "-e", "a:b"},
      {"dump", "-ea:b", missing},
      {"dump", "--events=a:*", missing, "--event", "b:c", "--since=1ms", "--absolute"},
      {"dump", "--format", "json", "--", missing},
      {"report", "--format=json", missing},
      {"report", missing, "--callees", "main"},
      {"hist", missing, "-e", "a:b", "--field=x", "--width=20"},
      {"export", missing, "-fchrome", "-o-"},
      {"export", "--output=-", "--format", "folded", missing},
  };
  for (const auto& args : accepted) {
    const RunResult r = Cli(args);
    EXPECT_EQ(r.status, 1) << testing::PrintToString(args) << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, "hushtrace-trace")) << testing::PrintToString(args) << ": " << r.err;
  }
  // `record` stops at PROGRAM: what follows it is PROGRAM's, options included.
  const std::string dir = MakeTempDir();
  const RunResult r = Cli({"record", "-o", dir + "/t", "--events=x:*", "sh", "-c", "exit 3", "-e"});
  EXPECT_EQ(r.status, 3) << r.err;
  RemoveTree(dir);
}

TEST(CliGrammar, VersionAndTopLevelHelp) {
  for (const char* v : {"-V", "--version"}) {
    const RunResult r = Cli({v});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out.rfind("hushtrace ", 0), 0u) << r.out;
  }
  const RunResult h = Cli({"--help"});
  EXPECT_TRUE(Contains(h.out, "-V, --version")) << h.out;
  const RunResult u = Cli({"frobnicate"});
  EXPECT_EQ(u.status, 2);
  EXPECT_TRUE(Contains(u.err, "unknown command 'frobnicate'")) << u.err;
}

}  // namespace
}  // namespace hush::clitest
