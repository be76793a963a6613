// The argument loop of the subcommands that read traces: options as "--name value" or
// "--name=value" (short options as "-x value"), anything else positional.
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_ARG_CURSOR_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_ARG_CURSOR_H_

#include <optional>
#include <string>

namespace hush::cli {

class ArgCursor {
 public:
  // argv[0] is the subcommand's name: the first Next() moves to argv[1].
  ArgCursor(int argc, char** argv) : argc_(argc), argv_(argv) {}

  // Moves to the next argument; false when there is none left.
  bool Next() {
    if (++index_ >= argc_) return false;
    arg_ = argv_[index_];
    inline_value_.reset();
    if (arg_.rfind("--", 0) == 0) {
      if (const std::size_t eq = arg_.find('='); eq != std::string::npos) {
        inline_value_ = arg_.substr(eq + 1);
        arg_.resize(eq);
      }
    }
    return true;
  }

  // The current option's name (without "=value"), or the positional argument.
  const std::string& arg() const { return arg_; }
  // Whether the current option was written "--name=value".
  bool has_inline_value() const { return inline_value_.has_value(); }

  // The current option's value: what follows '=', else the next argument (consumed). False when
  // there is none.
  bool TakeValue(std::string* out) {
    if (inline_value_) {
      *out = *inline_value_;
      return true;
    }
    if (index_ + 1 >= argc_) return false;
    *out = argv_[++index_];
    return true;
  }
  // The same, refusing an empty value too.
  bool TakeNonEmpty(std::string* out) { return TakeValue(out) && !out->empty(); }

  // For an argument no option of the subcommand matched: the trace directory if none was given
  // yet. False with *error set for an unknown option or a second directory.
  bool TakeTraceDir(std::string* dir, std::string* error) const {
    if (arg_.size() > 1 && arg_[0] == '-') {
      *error = "unknown option '" + std::string(argv_[index_]) + "'";
      return false;
    }
    if (!dir->empty()) {
      *error = "unexpected argument '" + arg_ + "' (one trace directory only)";
      return false;
    }
    *dir = arg_;
    return true;
  }

 private:
  int argc_;
  char** argv_;
  int index_ = 0;
  std::string arg_;
  std::optional<std::string> inline_value_;
};

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_ARG_CURSOR_H_
