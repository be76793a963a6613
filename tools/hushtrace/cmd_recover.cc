// Placeholder until the command lands: refuses to run rather than pretending.
#include <cstdio>

#include "commands.h"

namespace hush::cli {

int RunRecover(int, char**) {
  std::fprintf(stderr, "hushtrace recover: not implemented yet\n");
  return 1;
}

}  // namespace hush::cli
