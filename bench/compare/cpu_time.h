// Process CPU time for the comparison workloads (workloads.cc, lmbench.cc).
#ifndef HUSHTRACE_BENCH_COMPARE_CPU_TIME_H_
#define HUSHTRACE_BENCH_COMPARE_CPU_TIME_H_

#include <sys/resource.h>

// User + system CPU seconds of the whole process so far: all its threads (a tracer's consumer
// thread included), not other processes (lttng-consumerd, uftrace's recorder).
inline double ProcessCpuSeconds() {
  rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

#endif  // HUSHTRACE_BENCH_COMPARE_CPU_TIME_H_
