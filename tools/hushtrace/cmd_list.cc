// hushtrace list [--json] BINARY...: the tracepoints compiled into executables and shared
// libraries, read from the files (src/elf). See docs/cli.md.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "cli_app.h"
#include "commands.h"
#include "elf/tracepoints.h"

namespace hush::cli {
namespace {

constexpr char kUsage[] = "list [--json] [--] BINARY...";
constexpr char kDescription[] =
    "Lists the tracepoints compiled into executables, shared libraries or object files, one per\n"
    "line, sorted by name:\n"
    "\n"
    "  provider:name  kind  (type field, ...)  file:line\n"
    "\n"
    "kind is event, span, instant or counter. Sites with the same name, kind and fields are one\n"
    "tracepoint (file:line is then the first of their locations; --json gives them all). With\n"
    "several binaries, each list is preceded by 'BINARY:'.";
constexpr char kFooter[] =
    "exit status: 0 if every binary was read completely and has tracepoints; 1 if a binary is not\n"
    "an ELF file, is malformed, has no hushtrace tracepoints or some of its tracepoints could not be\n"
    "read (a message says which); 2 for bad arguments.\n";

struct Args {
  std::vector<std::string> files;
  bool json = false;
};

// The grammar of `list`: one line per option.
// clang-format off
void Define(CLI::App& app, Args& a) {
  DescribeCommand(app, "list", kUsage, kDescription, kFooter);
  AddPositionals(app, "BINARY", a.files, "executables, shared libraries or object files")->type_name("");
  app.add_flag("--json", a.json, "print a JSON array with one object per binary: file, build_id, tracepoints\n(name, provider, event, kind, fields, file, line, locations, sites,\nstatic_key_sites: patched NOPs, two per span site, 0 in object files)");
}
// clang-format on

// Text from a binary is untrusted: no control characters (terminal escapes) reach the terminal.
std::string Printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? '?' : c;
  }
  return out;
}

// Length of the valid UTF-8 sequence at s[i], or 0.
std::size_t Utf8Length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t n;
  unsigned min;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  unsigned cp = c & (0x7f >> n);
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

std::string Json(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
    } else if (const std::size_t n = Utf8Length(s, i); n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\\ufffd";  // not UTF-8
      ++i;
    }
  }
  return out + "\"";
}

std::string FieldList(const registry::MetaRecord& meta) {
  std::string s = "(";
  for (std::size_t i = 0; i < meta.fields.size(); ++i) {
    if (i > 0) s += ", ";
    s += meta.fields[i].type + " " + meta.fields[i].name;
  }
  return Printable(s + ")");
}

void PrintText(const elf::ModuleTracepoints& m) {
  struct Row {
    std::string name, kind, fields, location;
  };
  std::vector<Row> rows;
  std::size_t w_name = 0, w_kind = 0, w_fields = 0;
  for (const elf::Tracepoint& tp : m.tracepoints) {
    Row r{Printable(tp.meta.FullName()), registry::KindName(tp.meta.kind), FieldList(tp.meta),
          Printable(tp.meta.file + ":" + std::to_string(tp.meta.line))};
    w_name = std::max(w_name, r.name.size());
    w_kind = std::max(w_kind, r.kind.size());
    w_fields = std::max(w_fields, r.fields.size());
    rows.push_back(std::move(r));
  }
  for (const Row& r : rows) {
    std::printf("%-*s  %-*s  %-*s  %s\n", static_cast<int>(w_name), r.name.c_str(),
                static_cast<int>(w_kind), r.kind.c_str(), static_cast<int>(w_fields),
                r.fields.c_str(), r.location.c_str());
  }
}

std::string ModuleJson(const elf::ModuleTracepoints& m) {
  std::string s = "  {\n    \"file\": " + Json(m.path) + ",\n    \"build_id\": " +
                  (m.build_id.empty() ? std::string("null") : Json(m.build_id)) +
                  ",\n    \"tracepoints\": [";
  for (std::size_t i = 0; i < m.tracepoints.size(); ++i) {
    const elf::Tracepoint& tp = m.tracepoints[i];
    s += i == 0 ? "\n" : ",\n";
    s += "      {\"name\": " + Json(tp.meta.FullName()) +
         ", \"provider\": " + Json(tp.meta.provider) + ", \"event\": " + Json(tp.meta.name) +
         ", \"kind\": " + Json(registry::KindName(tp.meta.kind)) + ", \"fields\": [";
    for (std::size_t f = 0; f < tp.meta.fields.size(); ++f) {
      if (f > 0) s += ", ";
      s += "{\"name\": " + Json(tp.meta.fields[f].name) +
           ", \"type\": " + Json(tp.meta.fields[f].type) + "}";
    }
    s += "], \"file\": " + Json(tp.meta.file) + ", \"line\": " + std::to_string(tp.meta.line) +
         ", \"locations\": [";
    for (std::size_t l = 0; l < tp.locations.size(); ++l) {
      if (l > 0) s += ", ";
      s += Json(tp.locations[l]);
    }
    s += "], \"sites\": " + std::to_string(tp.sites) +
         ", \"static_key_sites\": " + std::to_string(tp.jump_sites) + "}";
  }
  s += m.tracepoints.empty() ? "]\n  }" : "\n    ]\n  }";
  return s;
}

}  // namespace

void DescribeList(CLI::App& app) { DescribeWith(app, Define); }

int RunList(int argc, char** argv) {
  Args args;
  CLI::App app;
  Define(app, args);
  if (const int status = ParseCommand(app, argc, argv); status >= 0) return status;
  const bool json = args.json;
  const std::vector<std::string>& files = args.files;
  if (files.empty()) return BadArguments(app, "no binary given");

  int status = 0;
  std::vector<std::string> json_modules;
  bool first_text = true;
  for (const std::string& file : files) {
    elf::ModuleTracepoints m;
    std::string error;
    if (!elf::ReadTracepointsFromFile(file, &m, &error)) {
      std::fprintf(stderr, "hushtrace list: %s\n", Printable(error).c_str());
      status = 1;
      continue;
    }
    for (const std::string& w : m.warnings) {
      std::fprintf(stderr, "hushtrace list: warning: %s\n", Printable(w).c_str());
      status = 1;
    }
    if (m.tracepoints.empty()) {
      if (m.warnings.empty() || !m.has_section) {
        std::fprintf(stderr, "hushtrace list: no hushtrace tracepoints in %s\n",
                     Printable(file).c_str());
      } else {
        std::fprintf(stderr, "hushtrace list: no readable hushtrace tracepoint in %s\n",
                     Printable(file).c_str());
      }
      status = 1;
      continue;
    }
    if (json) {
      json_modules.push_back(ModuleJson(m));
      continue;
    }
    if (files.size() > 1) std::printf("%s%s:\n", first_text ? "" : "\n", Printable(file).c_str());
    first_text = false;
    PrintText(m);
  }
  if (json) {
    std::string out = "[";
    for (std::size_t i = 0; i < json_modules.size(); ++i)
      out += (i == 0 ? "\n" : ",\n") + json_modules[i];
    out += json_modules.empty() ? "]\n" : "\n]\n";
    std::fputs(out.c_str(), stdout);
  }
  if (std::fflush(stdout) != 0) {
    std::fprintf(stderr, "hushtrace list: writing the output failed: %s\n", std::strerror(errno));
    return 1;
  }
  return status;
}

}  // namespace hush::cli
