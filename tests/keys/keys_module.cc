// A module dlopen()ed by keys_test after a session enabled keys:late: its sites must follow the
// event once the registry scans it.
#include "keys/keys_sites.h"

extern "C" const char __start_hush_jump[] __attribute__((weak, visibility("hidden")));
extern "C" const char __stop_hush_jump[] __attribute__((weak, visibility("hidden")));

extern "C" __attribute__((visibility("default"), noinline)) int keys_module_late(int x) {
  HUSH_TRACE(keys, late, x);
  return keystest::Expected(x);
}

// This module's own static-key sites.
extern "C" __attribute__((visibility("default"))) void keys_module_table(const char** start,
                                                                         const char** stop) {
  *start = __start_hush_jump;
  *stop = __stop_hush_jump;
}
