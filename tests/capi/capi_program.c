/* A C program using every part of the C API. Run by capi_test (tests/capi/capi_test.cc):
 *
 *   capi_program env          emits everything; the session comes from HUSHTRACE_EVENTS/OUTPUT
 *   capi_program api DIR      drives a session with hush_c_session_* (stream mode) into DIR
 *   capi_program flight DIR   the same in flight mode, written by a snapshot
 *   capi_program triggers DIR hush_c_session_start_with: a filter and snapshot triggers
 *   capi_program limits DIR   a flight session that cannot start its thread (RLIMIT_AS) fails
 *                             with the reason and leaves no DIR; with the limit lifted it starts.
 *                             Prints "libstdcxx_loaded N": whether libstdc++.so is mapped in
 *                             this C program (the runtime may carry its own C++ runtime)
 *
 * Prints "capi_program: ok" on success, or what failed (exit status 1).
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "capi_tracepoints.h"

static int g_failures = 0;
static int g_evaluated = 0; /* side effects of arguments of disabled events */

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "capi_program: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                                          \
    }                                                                                        \
  } while (0)

static int Evaluated(void) {
  ++g_evaluated;
  return 7;
}

static void* Worker(void* arg) {
  const uint32_t worker = (uint32_t)(uintptr_t)arg;
  for (uint32_t i = 0; i < 100; ++i) HUSH_C_TRACE(capi, thread, worker, i);
  return NULL;
}

/* A span ended by the cleanup attribute, and the explicit begin/end pair. */
static void Spans(void) {
  HUSH_C_SPAN_BEGIN(capi, explicit_span);
  {
    HUSH_C_SPAN_SCOPE(capi, scoped_span);
    HUSH_C_INSTANT(capi, inside_scope);
  }
  HUSH_C_SPAN_END(capi, explicit_span);
}

static void EmitAll(void) {
  static const unsigned char kBlob[] = {1, 2, 3, 255};
  char long_text[2000];
  memset(long_text, 'x', sizeof long_text - 1);
  long_text[sizeof long_text - 1] = '\0';
  /* Exactly 1023 characters: the longest string kept whole. */
  char edge_text[1024];
  memset(edge_text, 'y', sizeof edge_text - 1);
  edge_text[sizeof edge_text - 1] = '\0';

  HUSH_C_TRACE(capi, all_types, -8, -1600, -320000, INT64_C(-6400000000), 200, 60000,
               UINT32_C(4000000000), UINT64_C(18000000000000000000), true, 1.5f, -2.25, "hello",
               kBlob, sizeof kBlob);
  HUSH_C_TRACE(capi, all_types, INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN, UINT8_MAX, UINT16_MAX,
               UINT32_MAX, UINT64_MAX, false, 0.0f, 0.0, "", (const void*)NULL, (size_t)0);
  HUSH_C_TRACE(capi, mixed, "first", 513, 70000, kBlob, 2, true, "last");
  HUSH_C_TRACE(capi, mixed, (const char*)NULL, 1, 2, (const void*)NULL, (size_t)5, false, "end");
  HUSH_C_TRACE(capi, fixed, -42, UINT64_C(1) << 40);
  HUSH_C_TRACE(capi, text, 1, long_text);
  HUSH_C_TRACE(capi, text, 2, edge_text);
  HUSH_C_TRACE(capi, text, 3, "quote\"and\\backslash");
  HUSH_C_TRACE(capi, nofields);
  HUSH_C_TRACE(capi, sixteen, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, "fifteen", 16);
  HUSH_C_INSTANT(capi, instant);
  HUSH_C_COUNTER(capi, counter, 42.5);
  HUSH_C_COUNTER(capi, counter, 3 * 7); /* an int expression, recorded as double */
  Spans();

  /* Disabled: the arguments are not evaluated. */
  HUSH_C_TRACE(off, never, Evaluated(), "never");
  HUSH_C_COUNTER(off, never_counter, Evaluated());
  CHECK(g_evaluated == 0);
  CHECK(!HUSH_C_ENABLED(off, never));
  CHECK(HUSH_C_ENABLED(capi, fixed));

  pthread_t threads[2];
  for (uintptr_t t = 0; t < 2; ++t) CHECK(pthread_create(&threads[t], NULL, Worker, (void*)t) == 0);
  for (int t = 0; t < 2; ++t) pthread_join(threads[t], NULL);
}

static int RunEnv(void) {
  EmitAll();
  return 0;
}

static int RunApi(const char* dir, const char* mode) {
  char error[256];
  struct hush_c_session_stats stats;

  /* Error paths. */
  memset(error, 'z', sizeof error);
  CHECK(hush_c_session_start("", dir, NULL, 0, error, sizeof error) == -1);
  CHECK(strcmp(error, "no events requested") == 0);
  CHECK(hush_c_session_start(NULL, dir, NULL, 0, error, sizeof error) == -1);
  CHECK(hush_c_session_start("capi:*", dir, "bogus", 0, error, sizeof error) == -1);
  CHECK(strstr(error, "bogus") != NULL);
  CHECK(hush_c_session_start("capi:*", dir, NULL, 1024, error, sizeof error) == -1);
  CHECK(strstr(error, "16k") != NULL);
  char tiny[4];
  CHECK(hush_c_session_start("capi:*", dir, "bogus", 0, tiny, sizeof tiny) == -1);
  CHECK(strlen(tiny) == 3); /* cut and terminated */
  CHECK(hush_c_session_start("capi:*", dir, "bogus", 0, NULL, 0) == -1);
  CHECK(hush_c_session_snapshot() == -1); /* no session yet */
  CHECK(hush_c_session_get_stats(NULL) == -1);
  CHECK(hush_c_session_get_stats(&stats) == 0 && stats.enabled_events == 0);
  hush_c_session_stop(); /* no session: no effect */
  CHECK(!HUSH_C_ENABLED(capi, fixed));

  /* A real session: two globs with spaces, "off:*" is not requested. */
  if (hush_c_session_start(" capi:fixed , capi:text,capi:c* ", dir, mode, 64 * 1024, error,
                           sizeof error) != 0) {
    fprintf(stderr, "capi_program: hush_c_session_start: %s\n", error);
    return 1;
  }
  CHECK(error[0] == '\0');
  CHECK(hush_c_session_start("capi:*", NULL, NULL, 0, error, sizeof error) ==
        -1); /* one at a time */
  CHECK(HUSH_C_ENABLED(capi, fixed));
  CHECK(!HUSH_C_ENABLED(capi, mixed));
  HUSH_C_TRACE(capi, fixed, 1, 2);
  HUSH_C_TRACE(capi, text, 10, "from the api session");
  HUSH_C_COUNTER(capi, counter, 0.25);
  HUSH_C_TRACE(capi, mixed, "not enabled", (uint16_t)Evaluated(), 0, NULL, 0, false, "");
  CHECK(g_evaluated == 0);
  CHECK(hush_c_session_snapshot() == 0);
  CHECK(hush_c_session_get_stats(&stats) == 0);
  CHECK(stats.enabled_events == 3); /* capi:fixed, capi:text, capi:counter */
  CHECK(stats.rings >= 1);
  hush_c_session_stop();
  CHECK(!HUSH_C_ENABLED(capi, fixed));
  CHECK(hush_c_session_snapshot() == -1);
  /* The stopped session's final totals: the three events above, all written now. */
  CHECK(hush_c_session_get_stats(&stats) == 0);
  CHECK(stats.events_written == 3 && stats.enabled_events == 0 && stats.rings >= 1);
  hush_c_session_stop();           /* idempotent */
  HUSH_C_TRACE(capi, fixed, 3, 4); /* after the session: not recorded */
  return 0;
}

/* hush_c_session_start_with(): flight mode, the filter x > 1 on capi:fixed, a field trigger that
 * fires once (x = 5) and an adaptive duration trigger that cannot fire yet (fewer spans than its
 * warm-up). capi_test checks the trace and the one snapshot. */
static int RunTriggers(const char* dir) {
  char error[512];
  struct hush_c_session_options o;
  hush_c_session_options_init(&o);
  CHECK(o.struct_size == sizeof o);
  CHECK(o.snapshot_interval_ms == 1000 && o.snapshot_keep == 16 && o.snapshot_after_ns == 0);
  CHECK(o.events_csv == NULL && o.filter == NULL && o.snapshot_on_csv == NULL);
  CHECK(hush_c_session_start_with(NULL, error, sizeof error) == -1);
  o.events_csv = "capi:fixed,capi:explicit_span";
  o.output_dir = dir;
  o.mode = "flight";
  o.snapshot_on_csv = "capi:explicit_span>10"; /* no unit */
  CHECK(hush_c_session_start_with(&o, error, sizeof error) == -1);
  CHECK(strstr(error, "is not a duration") != NULL);
  o.struct_size = sizeof(size_t); /* not even events_csv */
  CHECK(hush_c_session_start_with(&o, error, sizeof error) == -1);
  CHECK(strstr(error, "struct_size") != NULL);
  o.struct_size = sizeof o;

  o.filter = "x > 1";
  o.snapshot_on_csv = "capi:fixed[x > 4], capi:explicit_span>p99";
  o.snapshot_interval_ms = 0;
  o.snapshot_keep = 0;
  if (hush_c_session_start_with(&o, error, sizeof error) != 0) {
    fprintf(stderr, "capi_program: hush_c_session_start_with: %s\n", error);
    return 1;
  }
  for (int i = 0; i < 10; ++i) Spans();
  HUSH_C_TRACE(capi, fixed, 1, 2); /* filtered out */
  HUSH_C_TRACE(capi, fixed, 3, 4);
  HUSH_C_TRACE(capi, fixed, 5, 6); /* fires */
  CHECK(hush_c_session_snapshot() == 0);
  hush_c_session_stop(); /* completes the triggered snapshot */
  return 0;
}

static int FindLibstdcxx(struct dl_phdr_info* info, size_t size, void* found) {
  (void)size;
  if (info->dlpi_name != NULL && strstr(info->dlpi_name, "libstdc++") != NULL) *(int*)found = 1;
  return 0;
}

/* The address space this process maps now (VmSize), in bytes; -1 if unknown. */
static long MappedBytes(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "VmSize: %ld", &kib) == 1) break;
  }
  fclose(f);
  return kib < 0 ? -1 : kib * 1024;
}

static int RunLimits(const char* dir) {
  int loaded = 0;
  dl_iterate_phdr(FindLibstdcxx, &loaded);
  printf("libstdcxx_loaded %d\n", loaded);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  /* A sanitizer's runtime reserves and maps memory of its own at any time: no limit to test. */
  puts("limits: skipped under a sanitizer");
#else
  struct rlimit before;
  CHECK(getrlimit(RLIMIT_AS, &before) == 0);
  const long mapped = MappedBytes();
  CHECK(mapped > 0);
  /* Room for the session's own allocations, none for a thread's stack (8 MiB by default). */
  struct rlimit tight = before;
  tight.rlim_cur = (rlim_t)mapped + (2u << 20);
  CHECK(setrlimit(RLIMIT_AS, &tight) == 0);
  char error[256] = "";
  const int rc = hush_c_session_start("capi:*", dir, "flight", 0, error, sizeof error);
  CHECK(setrlimit(RLIMIT_AS, &before) == 0);
  CHECK(rc == -1);
  printf("limits: refused: %s\n", error);
  CHECK(strstr(error, "snapshot thread") != NULL);
  struct stat st;
  CHECK(stat(dir, &st) != 0); /* nothing left: the failed start removed what it made */
#endif
  CHECK(hush_c_session_start("capi:*", dir, "flight", 0, NULL, 0) == 0);
  HUSH_C_TRACE(capi, fixed, 1, 2);
  CHECK(hush_c_session_snapshot() == 0);
  hush_c_session_stop();
  return 0;
}

int main(int argc, char** argv) {
  int rc = 1;
  if (argc == 2 && strcmp(argv[1], "env") == 0) {
    rc = RunEnv();
  } else if (argc == 3 && strcmp(argv[1], "api") == 0) {
    rc = RunApi(argv[2], "stream");
  } else if (argc == 3 && strcmp(argv[1], "flight") == 0) {
    rc = RunApi(argv[2], "flight");
  } else if (argc == 3 && strcmp(argv[1], "triggers") == 0) {
    rc = RunTriggers(argv[2]);
  } else if (argc == 3 && strcmp(argv[1], "limits") == 0) {
    rc = RunLimits(argv[2]);
  } else {
    fprintf(stderr, "usage: %s env | api DIR | flight DIR | triggers DIR | limits DIR\n", argv[0]);
    return 2;
  }
  if (rc != 0 || g_failures != 0) return 1;
  printf("capi_program: ok\n");
  return 0;
}
