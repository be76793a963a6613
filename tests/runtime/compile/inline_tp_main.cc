// Run with HUSHTRACE_EVENTS=inl:* (inline_run.cmake counts the events).
#include <cstdio>

#include "inline_tp.h"

int main() {
  for (int i = 0; i < 3; ++i) {
    FromA();
    FromB();
  }
  std::puts("inline_tp: done");
  return 0;
}
