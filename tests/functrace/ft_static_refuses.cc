// Linked with the static runtime, which has no function tracing (no unwinder wrappers):
// Session::Start with functions must fail with a clear error. Prints the error; exit 0 if it
// failed as expected.
#include <cstdio>
#include <string>

#include "hushtrace/session.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;  // argv[1]: the trace directory to use
  hush::SessionOptions o;
  o.functions = {"*"};
  o.output_dir = argv[1];
  std::string error;
  auto s = hush::Session::Start(o, &error);
  std::printf("%s\n", error.c_str());
  return s == nullptr ? 0 : 1;
}
