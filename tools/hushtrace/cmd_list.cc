// Placeholder until the command lands: refuses to run rather than pretending.
#include <cstdio>

#include "commands.h"

namespace hush::cli {

int RunList(int, char**) {
  std::fprintf(stderr, "hushtrace list: not implemented yet\n");
  return 1;
}

}  // namespace hush::cli
