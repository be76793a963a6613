/* An empty shared library: what loading one more shared object costs at start-up. */
int hushbench_empty_fn(void) { return 0; }
