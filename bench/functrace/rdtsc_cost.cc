// The clock floor of a traced call: ns per rdtsc on this machine right now (bench/functrace/run.sh
// prints it next to the traced figures; a traced call reads the counter twice, entry and exit).
#include <time.h>

#include <cstdint>
#include <cstdio>

#include "hushtrace/internal/cycle_clock.h"

int main() {
  constexpr int kReads = 2000000;
  timespec a, b;
  std::uint64_t sum = 0;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < kReads; ++i) sum += hush::internal::ReadCycleCounter();
  clock_gettime(CLOCK_MONOTONIC, &b);
  const double ns = static_cast<double>(b.tv_sec - a.tv_sec) * 1e9 + static_cast<double>(b.tv_nsec - a.tv_nsec);
  std::printf("ns_per_rdtsc %.2f (%u)\n", ns / kReads, static_cast<unsigned>(sum & 1));
  return 0;
}
