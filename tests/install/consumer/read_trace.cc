// Reads a trace directory with the installed reader (hushtrace::reader) and prints one line per
// event name: "NAME COUNT", as a user's analysis program would.
#include <hushtrace/reader.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: read_trace DIR\n");
    return 2;
  }
  std::string error;
  const std::unique_ptr<hush::reader::Trace> trace = hush::reader::Trace::Open(argv[1], &error);
  if (!trace) {
    std::fprintf(stderr, "read_trace: %s\n", error.c_str());
    return 1;
  }
  std::map<std::string, long> counts;
  hush::reader::EventIterator it(*trace);
  while (it.Next()) ++counts[it.event().name()];
  if (!it.error().empty()) {
    std::fprintf(stderr, "read_trace: %s\n", it.error().c_str());
    return 1;
  }
  for (const auto& [name, n] : counts) std::printf("%s %ld\n", name.c_str(), n);
  return 0;
}
