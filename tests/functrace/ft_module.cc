// A library built with patchable entries, dlopen()ed by ft_prog after tracing started.
#define NI __attribute__((noinline, noipa))
extern "C" NI long ft_mod_square(long x) { return x * x; }
extern "C" NI long ft_mod_sum(int n) { return n == 0 ? 0 : n + ft_mod_sum(n - 1); }
