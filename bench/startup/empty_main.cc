// An empty C++ program: the start-up baselines. Built twice: startup_plain (nothing else linked)
// and startup_emptylib (linked with an empty shared library, the cost of loading one more .so).
#ifdef HUSHBENCH_LINK_EMPTY
extern "C" int hushbench_empty_fn(void);
#endif

int main() {
#ifdef HUSHBENCH_LINK_EMPTY
  return hushbench_empty_fn();
#else
  return 0;
#endif
}
