#include "cli_app.h"

#include "filter/filter.h"
#include "filter/program.h"

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hush::cli {
namespace {

// "usage: hushtrace CMD ...", the description, then CLI11's list of options and the footer.
class CommandFormatter : public CLI::Formatter {
 public:
  CommandFormatter(std::string usage, std::string description)
      : usage_(std::move(usage)), description_(std::move(description)) {
    label("Positionals", "arguments");
    label("OPTIONS", "options");
    column_width(30);  // option texts up to 26 characters keep their description on their line
  }
  std::string make_description(const CLI::App*) const override { return ""; }
  // An option and its description are at least two blanks apart (CLI11 2.1 leaves one when the
  // option's text ends one column before the description's); an option too long for that puts
  // its description on the next line, at the same column, as GNU tools do.
  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    const std::string name = "  " + make_option_name(opt, is_positional) + make_option_opts(opt);
    const std::string description = make_option_desc(opt);
    const std::size_t column = get_column_width();
    std::string out = name;
    if (!description.empty()) {
      out += name.size() + 2 > column ? "\n" + std::string(column, ' ') : std::string(column - name.size(), ' ');
      for (const char c : description) {
        out += c;
        if (c == '\n') out += std::string(column, ' ');
      }
    }
    return out + "\n";
  }
  std::string make_usage(const CLI::App*, std::string) const override {
    std::string out = "usage: hushtrace " + usage_ + "\n";
    if (!description_.empty()) out += "\n" + description_ + (description_.back() == '\n' ? "" : "\n");
    return out;
  }

 private:
  std::string usage_;
  std::string description_;
};

// The subcommand's name, for messages: "hushtrace dump".
std::string Prefix(const CLI::App& app) {
  return "hushtrace " + app.get_name();
}

}  // namespace

void DescribeCommand(CLI::App& app, const std::string& name, const std::string& usage,
                     const std::string& description, const std::string& footer) {
  app.name(name);
  app.formatter(std::make_shared<CommandFormatter>(usage, description));
  app.footer(footer);
  app.option_defaults()->group("options")->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_help_flag("-h,--help", "print this help");
  app.allow_extras();  // reported by ParseCommand in the common format
}

CLI::Option* AddList(CLI::App& app, const std::string& names, std::vector<std::string>& values,
                     const std::string& help) {
  return app.add_option(names, values, help)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

CLI::Option* AddPositionals(CLI::App& app, const std::string& name, std::vector<std::string>& values,
                            const std::string& help) {
  return app.add_option(name, values, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void StopAtFirstPositional(CLI::App& app) { app.prefix_command(); }

int BadArguments(const CLI::App& app, const std::string& message) {
  const std::string prefix = Prefix(app);
  std::string printable = message;  // arguments are untrusted: no terminal escapes
  for (char& c : printable) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n') c = '?';
    if (c == 0x7f) c = '?';
  }
  std::fprintf(stderr, "%s: %s\n(see '%s --help')\n", prefix.c_str(), printable.c_str(), prefix.c_str());
  return 2;
}

int ParseCommand(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i]);  // CLI11 takes them reversed
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ArgumentMismatch& e) {
    // "--mode: 1 required TEXT missing": an option at the end of the line without its value.
    const std::string what = e.what();
    const std::size_t colon = what.find(':');
    if (colon != std::string::npos && what.find("missing", colon) != std::string::npos) {
      return BadArguments(app, "option " + what.substr(0, colon) + " needs a value");
    }
    return BadArguments(app, what);
  } catch (const CLI::ParseError& e) {
    return BadArguments(app, e.what());
  }
  if (app.get_prefix_command()) {
    const std::vector<std::string> rest = app.remaining();
    if (!rest.empty() && rest[0] != "--" && rest[0].size() > 1 && rest[0][0] == '-') {
      return BadArguments(app, "unknown option '" + rest[0] + "'");
    }
    return -1;
  }
  // Unknown options first: they explain a positional too many ("ps -x 1").
  const std::vector<std::string> extras = app.remaining();
  for (const std::string& extra : extras) {
    if (extra == "--") break;  // CLI11 keeps the marker there; what follows it was positional
    if (extra.size() > 1 && extra[0] == '-') return BadArguments(app, "unknown option '" + extra + "'");
  }
  for (const std::string& extra : extras) {
    if (extra != "--") return BadArguments(app, "unexpected argument '" + extra + "'");
  }
  return -1;
}

namespace {

void PrintFilterError(const CLI::App& app, const std::string& expr, const filter::Error& error) {
  std::fprintf(stderr, "%s: bad filter, %s\n", Prefix(app).c_str(),
               filter::Describe(expr, error).c_str());
}

}  // namespace

std::unique_ptr<filter::Parsed> ParseFilterOption(const CLI::App& app, const std::string& expr) {
  filter::Error error;
  std::unique_ptr<filter::Parsed> parsed = filter::Parse(expr, &error);
  if (!parsed) PrintFilterError(app, expr, error);
  return parsed;
}

bool CheckRuntimeFilter(const CLI::App& app, const std::string& expr) {
  const std::unique_ptr<filter::Parsed> parsed = ParseFilterOption(app, expr);
  if (!parsed) return false;
  filter::Error error;
  if (filter::Program::Check(*parsed, &error)) return true;
  PrintFilterError(app, expr, error);
  return false;
}

std::vector<std::string> Remaining(const CLI::App& app) {
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest[0] == "--") rest.erase(rest.begin());
  return rest;
}

}  // namespace hush::cli
