// Pins the calling thread to one CPU (benchmarks that pin a ping-pong to one CPU).
#ifndef HUSHTRACE_BENCH_PIN_CPU_H_
#define HUSHTRACE_BENCH_PIN_CPU_H_

#include <pthread.h>
#include <sched.h>

namespace hushbench {

inline void PinThisThread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set);
}

}  // namespace hushbench

#endif  // HUSHTRACE_BENCH_PIN_CPU_H_
