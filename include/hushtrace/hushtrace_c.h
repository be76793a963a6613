/* hushtrace C API: static tracepoints and session control for C (C11) and C++.
 *
 *   #include <hushtrace/hushtrace_c.h>
 *
 *   HUSH_C_TRACEPOINT(net, recv, HUSH_C_I32(fd), HUSH_C_U64(bytes), HUSH_C_STR(peer),
 *                     HUSH_C_BYTES(head))
 *
 *   void on_recv(int fd, uint64_t n, const char* peer, const void* buf, size_t len) {
 *     HUSH_C_TRACE(net, recv, fd, n, peer, buf, len);  // disabled: one relaxed load + one branch
 *     HUSH_C_SPAN_BEGIN(net, handle);                  // a slice: begin ...
 *     HUSH_C_COUNTER(net, queue_depth, depth);         // a numeric track (double)
 *     HUSH_C_INSTANT(net, accepted);                   // a point in time
 *     HUSH_C_SPAN_END(net, handle);                    // ... end
 *   }
 *
 * The events are the same as those of the C++ macros (hushtrace/hushtrace.h): same metadata
 * records (docs/format.md, section 5), same payload encoding, same names in traces and in
 * `hushtrace list`. See docs/c-api.md for the details and the cost model.
 *
 * Rules:
 *  - HUSH_C_TRACEPOINT defines the event at file scope (no trailing semicolon needed), once per
 *    translation unit that emits it (a header is the usual place). Up to 16 fields.
 *  - While an event is disabled, the arguments of HUSH_C_TRACE / HUSH_C_COUNTER are not evaluated.
 *  - Fields: HUSH_C_I8..HUSH_C_I64, HUSH_C_U8..HUSH_C_U64, HUSH_C_BOOL, HUSH_C_F32, HUSH_C_F64,
 *    HUSH_C_STR (const char*, NUL-terminated; NULL is recorded as "(null)"; at most 1024 bytes
 *    including the NUL, a longer string ends with "...[truncated]") and HUSH_C_BYTES (two
 *    arguments at the call site: const void* data, size_t length; at most 64 KiB are kept; a NULL
 *    pointer records an empty sequence).
 *  - The sites use static (internal-linkage) objects: use them in ordinary or `static inline`
 *    functions, not in C99 `inline` functions with external linkage.
 *  - A tracepoint with no fields, HUSH_C_TRACEPOINT(p, n) / HUSH_C_TRACE(p, n), passes nothing for
 *    the macros' "...": fine in C++ and without -pedantic; with -pedantic, ISO C modes warn (GCC
 *    accepts it in GNU modes such as -std=gnu11). Everything else is -pedantic clean.
 *  - Requires GCC or Clang (asm, __atomic builtins, section attributes) on an ELF platform.
 */
#ifndef HUSHTRACE_HUSHTRACE_C_H_
#define HUSHTRACE_HUSHTRACE_C_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#define HUSH_C_INTERNAL_NOEXCEPT noexcept
#else
#define HUSH_C_INTERNAL_NOEXCEPT
#endif

#define HUSH_C_API __attribute__((visibility("default")))

/* ---- Runtime interface used by the macros (implemented in libhushtrace) ---------------------- */

/* The runtime descriptor of one site; the same layout as hush::internal::Descriptor. `state` is
 * 0 while the event is disabled, else the session's event id + 1 (written by the runtime, read
 * here with a relaxed atomic load). */
struct hush_c_descriptor {
  uint32_t state;
  uint32_t reserved;
  const char* meta; /* the site's HTP1 metadata record */
};

/* One part of a payload given to hush_c_emitv(). */
#define HUSH_C_PIECE_RAW 0u   /* `size` bytes at `data`, copied as they are */
#define HUSH_C_PIECE_STR 1u   /* `data` is a const char* (NULL -> "(null)"); `size` is ignored */
#define HUSH_C_PIECE_BYTES 2u /* u32 length, then min(size, 64 KiB) bytes at `data` */
struct hush_c_piece {
  const void* data;
  size_t size;
  uint32_t kind;
};

/* Writes one event with session event id `id` and the payload bytes [payload, payload + size). */
HUSH_C_API void hush_c_emit(uint32_t id, const void* payload, size_t size) HUSH_C_INTERNAL_NOEXCEPT;
/* Writes one event whose payload is the concatenation of the encoded pieces (at most 64). */
HUSH_C_API void hush_c_emitv(uint32_t id, const struct hush_c_piece* pieces,
                             size_t count) HUSH_C_INTERNAL_NOEXCEPT;

/* ---- Session control ------------------------------------------------------------------------ */

/* Starts a tracing session in this process (one at a time, also counting one started from the
 * environment). events_csv: comma-separated globs over "provider:name" (e.g. "net:*,db:query").
 * output_dir: the trace directory (created 0700, must not exist or be empty); NULL or "" for
 * ./hushtrace-<date>-<pid>. mode: "stream" (default when NULL or "") or "flight". buffer_size:
 * per-thread ring size in bytes (>= 16 KiB), 0 for the default (1 MiB).
 * Returns 0, or -1 with a NUL-terminated message in error_buf (when error_len > 0). */
HUSH_C_API int hush_c_session_start(const char* events_csv, const char* output_dir,
                                    const char* mode, size_t buffer_size, char* error_buf,
                                    size_t error_len) HUSH_C_INTERNAL_NOEXCEPT;
/* Every option of a session, for hush_c_session_start_with(): the four of hush_c_session_start()
 * and the filter and snapshot triggers of hush::SessionOptions (hushtrace/session.h).
 *
 *   struct hush_c_session_options o;
 *   hush_c_session_options_init(&o);   (struct_size and the defaults)
 *   o.events_csv = "app:*";
 *   o.mode = "flight";
 *   o.snapshot_on_csv = "app:request>p99.9, app:error";
 *   if (hush_c_session_start_with(&o, error, sizeof error) != 0) ...
 *
 * struct_size is the size of the caller's struct: a later version adds fields at the end only,
 * and reads none beyond struct_size, so a program built against this header keeps working. */
struct hush_c_session_options {
  size_t struct_size;
  const char* events_csv;        /* comma-separated globs; required */
  const char* output_dir;        /* NULL or "": ./hushtrace-<date>-<pid> */
  const char* mode;              /* "stream" (NULL or "") or "flight" */
  size_t buffer_size;            /* per-thread ring, bytes (>= 16 KiB); 0: 1 MiB */
  const char* filter;            /* NULL or "": none; e.g. "bytes > 1000 && fd != 3" */
  /* Flight mode: trigger patterns, comma-separated, as `record --snapshot-on`: "db:error",
   * "app:request>50ms", "app:request>p99.9", "net:recv[bytes > 1000]". NULL or "": none. */
  const char* snapshot_on_csv;
  uint32_t snapshot_interval_ms; /* at most one snapshot per interval (default 1000) */
  uint32_t snapshot_keep;        /* the newest kept (default 16; 0: all) */
  uint64_t snapshot_after_ns;    /* a snapshot also holds this long after its trigger (0) */
  /* Stream mode: a thread whose ring is full waits up to this long for the consumer instead of
   * discarding the event (development runs; 0, the default, never waits). */
  uint64_t blocking_timeout_ns;
};
/* Sets o->struct_size and every option to its default (events_csv NULL: set it). */
HUSH_C_API void hush_c_session_options_init(struct hush_c_session_options* o) HUSH_C_INTERNAL_NOEXCEPT;
/* As hush_c_session_start(), with every option. Returns 0, or -1 with the message in error_buf
 * (a NULL `o`, a struct_size smaller than the first five fields, a pattern or filter that does
 * not parse or applies to no event: the message says which). */
HUSH_C_API int hush_c_session_start_with(const struct hush_c_session_options* o, char* error_buf,
                                         size_t error_len) HUSH_C_INTERNAL_NOEXCEPT;
/* Stops the session started by hush_c_session_start() or hush_c_session_start_with(): disables
 * the events and writes everything committed. No effect when there is none. */
HUSH_C_API void hush_c_session_stop(void) HUSH_C_INTERNAL_NOEXCEPT;
/* Writes what the rings hold now (flight mode) or what is committed so far (stream mode) of the
 * session started by hush_c_session_start(). Returns 0, or -1 (no such session, write error). */
HUSH_C_API int hush_c_session_snapshot(void) HUSH_C_INTERNAL_NOEXCEPT;

struct hush_c_session_stats {
  uint64_t events_written;
  uint64_t events_discarded;
  uint64_t events_overwritten;
  uint64_t events_lost_on_write;
  uint64_t bytes_written;
  uint32_t rings;
  uint32_t enabled_events;
};
/* Counters of the session started by hush_c_session_start() while it runs; after
 * hush_c_session_stop(), that session's final totals (every event written by then); zeros when
 * no session was ever started. Returns 0, or -1 when `out` is NULL. */
HUSH_C_API int hush_c_session_get_stats(struct hush_c_session_stats* out) HUSH_C_INTERNAL_NOEXCEPT;

/* In-process probes: the C form of hush::AddProbe / RemoveProbe / DetachProbe (hushtrace/probe.h, which
 * documents the payload encoding and the rules for callbacks). */
struct hush_c_probe_event {
  const char* name; /* "provider:name" */
  const void* payload; /* the encoded fields */
  size_t payload_size;
};
typedef void (*hush_c_probe_callback)(const struct hush_c_probe_event* event, void* data);
/* Attaches callback(event, data) to the events matching glob. Returns a handle, or 0 (NULL glob or
 * callback, no membarrier, out of memory). */
HUSH_C_API uint64_t hush_c_add_probe(const char* glob, hush_c_probe_callback callback,
                                     void* data) HUSH_C_INTERNAL_NOEXCEPT;
/* Detaches it; when it returns, the callback runs no more. Returns 0, or -1 for an unknown handle. */
HUSH_C_API int hush_c_remove_probe(uint64_t handle) HUSH_C_INTERNAL_NOEXCEPT;
/* Detaches it without waiting (hush::DetachProbe): the callback may still run until
 * hush_c_synchronize_probes() returns. Returns 0, or -1 for an unknown handle. */
HUSH_C_API int hush_c_detach_probe(uint64_t handle) HUSH_C_INTERNAL_NOEXCEPT;
/* Waits until no callback of a probe detached before the call runs (hush::SynchronizeProbes). */
HUSH_C_API void hush_c_synchronize_probes(void) HUSH_C_INTERNAL_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- Field types ---------------------------------------------------------------------------- */

#define HUSH_C_I8(name) (hush_c_tag_i8, name)
#define HUSH_C_I16(name) (hush_c_tag_i16, name)
#define HUSH_C_I32(name) (hush_c_tag_i32, name)
#define HUSH_C_I64(name) (hush_c_tag_i64, name)
#define HUSH_C_U8(name) (hush_c_tag_u8, name)
#define HUSH_C_U16(name) (hush_c_tag_u16, name)
#define HUSH_C_U32(name) (hush_c_tag_u32, name)
#define HUSH_C_U64(name) (hush_c_tag_u64, name)
#define HUSH_C_BOOL(name) (hush_c_tag_bool, name)
#define HUSH_C_F32(name) (hush_c_tag_f32, name)
#define HUSH_C_F64(name) (hush_c_tag_f64, name)
#define HUSH_C_STR(name) (hush_c_tag_str, name)
#define HUSH_C_BYTES(name) (hush_c_tag_bytes, name)

/* ---- Public macros -------------------------------------------------------------------------- */

/* Defines the event `provider:name` (kind "event") with the given fields. File scope. */
#define HUSH_C_TRACEPOINT(provider, name, ...)                                                     \
  HUSH_C_INTERNAL_TP(hush_c_meta_##provider##_##name, hush_c_desc_##provider##_##name,             \
                     hush_c_emit_##provider##_##name,                                             \
                     #provider "\0" #name "\0" __FILE__ HUSH_C_INTERNAL_FOR_EACH(                  \
                         HUSH_C_INTERNAL_F_META, HUSH_C_INTERNAL_NOTHING, __VA_ARGS__),           \
                     HUSH_C_INTERNAL_COUNT(__VA_ARGS__),                                          \
                     (HUSH_C_INTERNAL_PARAMS(__VA_ARGS__)),                                       \
                     (0 HUSH_C_INTERNAL_FOR_EACH(HUSH_C_INTERNAL_F_FIXED, HUSH_C_INTERNAL_NOTHING, \
                                                 __VA_ARGS__)),                                   \
                     (0 HUSH_C_INTERNAL_FOR_EACH(HUSH_C_INTERNAL_F_VAR, HUSH_C_INTERNAL_NOTHING,   \
                                                 __VA_ARGS__)),                                   \
                     HUSH_C_INTERNAL_FOR_EACH(HUSH_C_INTERNAL_F_PUT, HUSH_C_INTERNAL_NOTHING,      \
                                              __VA_ARGS__))

/* Emits `provider:name` (defined by HUSH_C_TRACEPOINT) if enabled, with one argument per field
 * (two for HUSH_C_BYTES: pointer, length). The arguments are evaluated only when enabled. */
#define HUSH_C_TRACE(provider, name, ...)                                                      \
  do {                                                                                         \
    HUSH_C_INTERNAL_REGISTER(hush_c_desc_##provider##_##name);                                 \
    if (__builtin_expect(                                                                      \
            __atomic_load_n(&hush_c_desc_##provider##_##name.state, __ATOMIC_RELAXED) != 0u, 0)) \
      hush_c_emit_##provider##_##name(__VA_ARGS__);                                            \
  } while (0)

/* Nonzero while `provider:name` (defined by HUSH_C_TRACEPOINT) is enabled: guards expensive
 * argument preparation. Does not register a site by itself. */
#define HUSH_C_ENABLED(provider, name) \
  (__atomic_load_n(&hush_c_desc_##provider##_##name.state, __ATOMIC_RELAXED) != 0u)

/* Begin / end of a slice `provider:name` (kind "span", one field "phase": 0 begin, 1 end). Each
 * macro is its own site; both are emitted whenever the event is enabled, so a session that starts
 * or stops between them records only one of the two (see HUSH_C_SPAN_SCOPE). */
#define HUSH_C_SPAN_BEGIN(provider, name) HUSH_C_INTERNAL_PHASE_SITE(#provider, #name, 0)
#define HUSH_C_SPAN_END(provider, name) HUSH_C_INTERNAL_PHASE_SITE(#provider, #name, 1)

/* Like HUSH_SPAN in C++ (GCC/Clang cleanup attribute): begins the slice now and ends it when the
 * enclosing block exits; the end is emitted only if the begin was and the event is still
 * enabled. A declaration: at most one per line, not as the body of an if/for without braces. */
#define HUSH_C_SPAN_SCOPE(provider, name)                                                      \
  HUSH_C_INTERNAL_SITE_DEFS(HUSH_C_INTERNAL_CAT(hush_c_span_meta_, __LINE__),                  \
                            HUSH_C_INTERNAL_CAT(hush_c_span_desc_, __LINE__), 1, 1,            \
                            #provider "\0" #name "\0" __FILE__ "\0" "phase" "\0" "phase");     \
  HUSH_C_INTERNAL_REGISTER(HUSH_C_INTERNAL_CAT(hush_c_span_desc_, __LINE__));                  \
  __attribute__((cleanup(hush_c_internal_span_end), unused)) struct hush_c_internal_span_guard  \
      HUSH_C_INTERNAL_CAT(hush_c_span_guard_, __LINE__) =                                      \
          hush_c_internal_span_begin(&HUSH_C_INTERNAL_CAT(hush_c_span_desc_, __LINE__))

/* A point event `provider:name` with no fields (kind "instant"). */
#define HUSH_C_INSTANT(provider, name)                                                         \
  do {                                                                                         \
    HUSH_C_INTERNAL_SITE_DEFS(hush_c_meta, hush_c_desc, 2, 0,                                  \
                              #provider "\0" #name "\0" __FILE__);                             \
    HUSH_C_INTERNAL_REGISTER(hush_c_desc);                                                     \
    const uint32_t hush_c_state = __atomic_load_n(&hush_c_desc.state, __ATOMIC_RELAXED);      \
    if (__builtin_expect(hush_c_state != 0u, 0)) hush_c_emit(hush_c_state - 1u, NULL, 0);     \
  } while (0)

/* A sample `value` (converted to double; evaluated only when enabled) of the counter track
 * `provider:name` (kind "counter", one field "value" of type f64). */
#define HUSH_C_COUNTER(provider, name, value)                                                  \
  do {                                                                                         \
    HUSH_C_INTERNAL_SITE_DEFS(hush_c_meta, hush_c_desc, 3, 1,                                  \
                              #provider "\0" #name "\0" __FILE__ "\0" "value" "\0" "f64");     \
    HUSH_C_INTERNAL_REGISTER(hush_c_desc);                                                     \
    const uint32_t hush_c_state = __atomic_load_n(&hush_c_desc.state, __ATOMIC_RELAXED);      \
    if (__builtin_expect(hush_c_state != 0u, 0)) {                                             \
      const double hush_c_value = (double)(value);                                             \
      hush_c_emit(hush_c_state - 1u, &hush_c_value, sizeof hush_c_value);                      \
    }                                                                                          \
  } while (0)

/* ==== Implementation details (HUSH_C_INTERNAL_ / hush_c_internal_ prefix) ==================== */

#ifdef __cplusplus
#define HUSH_C_INTERNAL_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#define HUSH_C_INTERNAL_BOOL bool
#else
#define HUSH_C_INTERNAL_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#define HUSH_C_INTERNAL_BOOL _Bool
#endif

#define HUSH_C_INTERNAL_CAT_(a, b) a##b
#define HUSH_C_INTERNAL_CAT(a, b) HUSH_C_INTERNAL_CAT_(a, b)
#define HUSH_C_INTERNAL_NOTHING()
#define HUSH_C_INTERNAL_COMMA() ,

/* Appends the descriptor's address to section hush_desc (no instruction). Same directive as
 * HUSH_INTERNAL_REGISTER_DESCRIPTOR in hushtrace/internal/descriptor.h. */
#if defined(__aarch64__) && !defined(__clang__)
#define HUSH_C_INTERNAL_ASM_SYMBOL "S" /* aarch64 GCC: "i" is refused for a symbol in PIC */
#else
#define HUSH_C_INTERNAL_ASM_SYMBOL "i"
#endif
#define HUSH_C_INTERNAL_REGISTER(desc)                                                        \
  __asm__ __volatile__(".pushsection hush_desc,\"aw\"\n\t.balign 8\n\t.quad %c0\n\t.popsection" \
                       :                                                                      \
                       : HUSH_C_INTERNAL_ASM_SYMBOL(&(desc)))

/* The HTP1 metadata record (docs/format.md, section 5) of a site, built at compile time, and its
 * descriptor. `strings` is one string literal: provider\0name\0file[\0field\0code]...; its own
 * terminating NUL ends the last string. All members are bytes: no padding, little-endian by
 * construction. Placed in section hush_meta so `hushtrace list` can read it from the file. */
#define HUSH_C_INTERNAL_SITE_DEFS(meta_var, desc_var, kind, nfields, strings)                     \
  HUSH_C_INTERNAL_STATIC_ASSERT(12 + sizeof(strings) < 65536,                                    \
                                "hushtrace: tracepoint metadata larger than 64 KiB");            \
  __attribute__((section("hush_meta"), aligned(1), unused)) static const struct {                \
    char magic[4];                                                                               \
    unsigned char size[2];                                                                       \
    unsigned char kind_byte;                                                                     \
    unsigned char field_count;                                                                   \
    unsigned char line[4];                                                                       \
    char text[sizeof(strings)];                                                                  \
  } meta_var = {{'H', 'T', 'P', '1'},                                                            \
                {(unsigned char)((12 + sizeof(strings)) & 0xffu),                                \
                 (unsigned char)(((12 + sizeof(strings)) >> 8) & 0xffu)},                        \
                (unsigned char)(kind),                                                           \
                (unsigned char)(nfields),                                                        \
                {(unsigned char)((unsigned long)(__LINE__) & 0xffu),                             \
                 (unsigned char)(((unsigned long)(__LINE__) >> 8) & 0xffu),                      \
                 (unsigned char)(((unsigned long)(__LINE__) >> 16) & 0xffu),                     \
                 (unsigned char)(((unsigned long)(__LINE__) >> 24) & 0xffu)},                    \
                strings};                                                                        \
  __attribute__((unused)) static struct hush_c_descriptor desc_var = {0u, 0u, meta_var.magic}

/* One span phase (0 begin, 1 end) at its own site. */
#define HUSH_C_INTERNAL_PHASE_SITE(provider_str, name_str, phase)                              \
  do {                                                                                         \
    HUSH_C_INTERNAL_SITE_DEFS(hush_c_meta, hush_c_desc, 1, 1,                                  \
                              provider_str "\0" name_str "\0" __FILE__ "\0" "phase" "\0" "phase"); \
    HUSH_C_INTERNAL_REGISTER(hush_c_desc);                                                     \
    const uint32_t hush_c_state = __atomic_load_n(&hush_c_desc.state, __ATOMIC_RELAXED);      \
    if (__builtin_expect(hush_c_state != 0u, 0)) {                                             \
      const unsigned char hush_c_phase = (phase);                                              \
      hush_c_emit(hush_c_state - 1u, &hush_c_phase, 1);                                        \
    }                                                                                          \
  } while (0)

struct hush_c_internal_span_guard {
  struct hush_c_descriptor* desc;
  int began;
};

static inline struct hush_c_internal_span_guard hush_c_internal_span_begin(
    struct hush_c_descriptor* desc) {
  struct hush_c_internal_span_guard g;
  const uint32_t state = __atomic_load_n(&desc->state, __ATOMIC_RELAXED);
  g.desc = desc;
  g.began = 0;
  if (__builtin_expect(state != 0u, 0)) {
    const unsigned char phase = 0;
    g.began = 1;
    hush_c_emit(state - 1u, &phase, 1);
  }
  return g;
}

static inline void hush_c_internal_span_end(struct hush_c_internal_span_guard* g) {
  if (__builtin_expect(g->began != 0, 0)) {
    const uint32_t state = __atomic_load_n(&g->desc->state, __ATOMIC_RELAXED);
    if (state != 0u) {
      const unsigned char phase = 1;
      hush_c_emit(state - 1u, &phase, 1);
    }
  }
}

/* HUSH_C_TRACEPOINT's body: the record, the descriptor and a static inline emitter taking one
 * typed parameter per field. The emitter re-reads the state (the site read it a moment before):
 * that keeps the call free of a leading id argument, so a field-less call is just `f()`. Fixed
 * fields are copied into a stack buffer; strings and byte sequences go to hush_c_emitv() as
 * pieces, with the runs of fixed fields between them. */
#define HUSH_C_INTERNAL_TP(meta_var, desc_var, emit_fn, strings, nfields, params, fixed_size,  \
                           var_count, encoders)                                                  \
  HUSH_C_INTERNAL_SITE_DEFS(meta_var, desc_var, 0, nfields, strings);                          \
  __attribute__((unused)) static inline void emit_fn params {                                  \
    const uint32_t hush_c_state = __atomic_load_n(&desc_var.state, __ATOMIC_RELAXED);         \
    if (hush_c_state == 0u) return;                                                            \
    unsigned char hush_c_buf[fixed_size + 1];                                                  \
    struct hush_c_piece hush_c_pc[2 * var_count + 1];                                          \
    unsigned char* hush_c_p = hush_c_buf;                                                      \
    unsigned char* hush_c_run = hush_c_buf;                                                    \
    size_t hush_c_n = 0;                                                                       \
    encoders                                                                                   \
    if (var_count == 0) {                                                                      \
      hush_c_emit(hush_c_state - 1u, (fixed_size) != 0 ? (const void*)hush_c_buf : NULL,     \
                  (size_t)(hush_c_p - hush_c_buf));                                            \
    } else {                                                                                   \
      HUSH_C_INTERNAL_FLUSH_RUN();                                                             \
      hush_c_emitv(hush_c_state - 1u, hush_c_pc, hush_c_n);                                    \
    }                                                                                          \
  }

/* Ends the current run of fixed fields: it becomes a RAW piece. */
#define HUSH_C_INTERNAL_FLUSH_RUN()                                     \
  if (hush_c_p != hush_c_run) {                                         \
    hush_c_pc[hush_c_n].data = hush_c_run;                              \
    hush_c_pc[hush_c_n].size = (size_t)(hush_c_p - hush_c_run);         \
    hush_c_pc[hush_c_n].kind = HUSH_C_PIECE_RAW;                        \
    ++hush_c_n;                                                         \
  }

#define HUSH_C_INTERNAL_ADD_PIECE(piece_kind, ptr, len) \
  HUSH_C_INTERNAL_FLUSH_RUN()                           \
  hush_c_pc[hush_c_n].data = (ptr);                     \
  hush_c_pc[hush_c_n].size = (len);                     \
  hush_c_pc[hush_c_n].kind = (piece_kind);              \
  ++hush_c_n;                                           \
  hush_c_run = hush_c_p;

/* Per field `(tag, name)`: metadata text, parameter(s), fixed size, variable flag, encoder. */
#define HUSH_C_INTERNAL_F_META(f) HUSH_C_INTERNAL_F_META_ f
#define HUSH_C_INTERNAL_F_META_(tag, name) "\0" #name "\0" HUSH_C_INTERNAL_CODE_##tag
#define HUSH_C_INTERNAL_F_PARAM(f) HUSH_C_INTERNAL_F_PARAM_ f
#define HUSH_C_INTERNAL_F_PARAM_(tag, name) HUSH_C_INTERNAL_PARAM_##tag(name)
#define HUSH_C_INTERNAL_F_FIXED(f) HUSH_C_INTERNAL_F_FIXED_ f
#define HUSH_C_INTERNAL_F_FIXED_(tag, name) +HUSH_C_INTERNAL_FIXED_##tag
#define HUSH_C_INTERNAL_F_VAR(f) HUSH_C_INTERNAL_F_VAR_ f
#define HUSH_C_INTERNAL_F_VAR_(tag, name) +HUSH_C_INTERNAL_VAR_##tag
#define HUSH_C_INTERNAL_F_PUT(f) HUSH_C_INTERNAL_F_PUT_ f
#define HUSH_C_INTERNAL_F_PUT_(tag, name) HUSH_C_INTERNAL_PUT_##tag(name)

/* Type codes: the strings of the format's field table. */
#define HUSH_C_INTERNAL_CODE_hush_c_tag_i8 "i8"
#define HUSH_C_INTERNAL_CODE_hush_c_tag_i16 "i16"
#define HUSH_C_INTERNAL_CODE_hush_c_tag_i32 "i32"
#define HUSH_C_INTERNAL_CODE_hush_c_tag_i64 "i64"
#define HUSH_C_INTERNAL_CODE_hush_c_tag_u8 "u8"
#define HUSH_C_INTERNAL_CODE_hush_c_tag_u16 "u16"
#define HUSH_C_INTERNAL_CODE_hush_c_tag_u32 "u32"
#define HUSH_C_INTERNAL_CODE_hush_c_tag_u64 "u64"
#define HUSH_C_INTERNAL_CODE_hush_c_tag_bool "bool"
#define HUSH_C_INTERNAL_CODE_hush_c_tag_f32 "f32"
#define HUSH_C_INTERNAL_CODE_hush_c_tag_f64 "f64"
#define HUSH_C_INTERNAL_CODE_hush_c_tag_str "str"
#define HUSH_C_INTERNAL_CODE_hush_c_tag_bytes "bytes"

#define HUSH_C_INTERNAL_PARAM_hush_c_tag_i8(n) int8_t n
#define HUSH_C_INTERNAL_PARAM_hush_c_tag_i16(n) int16_t n
#define HUSH_C_INTERNAL_PARAM_hush_c_tag_i32(n) int32_t n
#define HUSH_C_INTERNAL_PARAM_hush_c_tag_i64(n) int64_t n
#define HUSH_C_INTERNAL_PARAM_hush_c_tag_u8(n) uint8_t n
#define HUSH_C_INTERNAL_PARAM_hush_c_tag_u16(n) uint16_t n
#define HUSH_C_INTERNAL_PARAM_hush_c_tag_u32(n) uint32_t n
#define HUSH_C_INTERNAL_PARAM_hush_c_tag_u64(n) uint64_t n
#define HUSH_C_INTERNAL_PARAM_hush_c_tag_bool(n) HUSH_C_INTERNAL_BOOL n
#define HUSH_C_INTERNAL_PARAM_hush_c_tag_f32(n) float n
#define HUSH_C_INTERNAL_PARAM_hush_c_tag_f64(n) double n
#define HUSH_C_INTERNAL_PARAM_hush_c_tag_str(n) const char* n
#define HUSH_C_INTERNAL_PARAM_hush_c_tag_bytes(n) const void* n, size_t hush_c_len_##n

#define HUSH_C_INTERNAL_FIXED_hush_c_tag_i8 1
#define HUSH_C_INTERNAL_FIXED_hush_c_tag_i16 2
#define HUSH_C_INTERNAL_FIXED_hush_c_tag_i32 4
#define HUSH_C_INTERNAL_FIXED_hush_c_tag_i64 8
#define HUSH_C_INTERNAL_FIXED_hush_c_tag_u8 1
#define HUSH_C_INTERNAL_FIXED_hush_c_tag_u16 2
#define HUSH_C_INTERNAL_FIXED_hush_c_tag_u32 4
#define HUSH_C_INTERNAL_FIXED_hush_c_tag_u64 8
#define HUSH_C_INTERNAL_FIXED_hush_c_tag_bool 1
#define HUSH_C_INTERNAL_FIXED_hush_c_tag_f32 4
#define HUSH_C_INTERNAL_FIXED_hush_c_tag_f64 8
#define HUSH_C_INTERNAL_FIXED_hush_c_tag_str 0
#define HUSH_C_INTERNAL_FIXED_hush_c_tag_bytes 0

#define HUSH_C_INTERNAL_VAR_hush_c_tag_i8 0
#define HUSH_C_INTERNAL_VAR_hush_c_tag_i16 0
#define HUSH_C_INTERNAL_VAR_hush_c_tag_i32 0
#define HUSH_C_INTERNAL_VAR_hush_c_tag_i64 0
#define HUSH_C_INTERNAL_VAR_hush_c_tag_u8 0
#define HUSH_C_INTERNAL_VAR_hush_c_tag_u16 0
#define HUSH_C_INTERNAL_VAR_hush_c_tag_u32 0
#define HUSH_C_INTERNAL_VAR_hush_c_tag_u64 0
#define HUSH_C_INTERNAL_VAR_hush_c_tag_bool 0
#define HUSH_C_INTERNAL_VAR_hush_c_tag_f32 0
#define HUSH_C_INTERNAL_VAR_hush_c_tag_f64 0
#define HUSH_C_INTERNAL_VAR_hush_c_tag_str 1
#define HUSH_C_INTERNAL_VAR_hush_c_tag_bytes 1

/* Encoders. Values are stored in host byte order, which is the format's little-endian on every
 * supported target (x86-64, aarch64), exactly as the C++ encoders do. */
#define HUSH_C_INTERNAL_PUT_RAW(n)           \
  memcpy(hush_c_p, &(n), sizeof(n));         \
  hush_c_p += sizeof(n);
#define HUSH_C_INTERNAL_PUT_hush_c_tag_i8(n) HUSH_C_INTERNAL_PUT_RAW(n)
#define HUSH_C_INTERNAL_PUT_hush_c_tag_i16(n) HUSH_C_INTERNAL_PUT_RAW(n)
#define HUSH_C_INTERNAL_PUT_hush_c_tag_i32(n) HUSH_C_INTERNAL_PUT_RAW(n)
#define HUSH_C_INTERNAL_PUT_hush_c_tag_i64(n) HUSH_C_INTERNAL_PUT_RAW(n)
#define HUSH_C_INTERNAL_PUT_hush_c_tag_u8(n) HUSH_C_INTERNAL_PUT_RAW(n)
#define HUSH_C_INTERNAL_PUT_hush_c_tag_u16(n) HUSH_C_INTERNAL_PUT_RAW(n)
#define HUSH_C_INTERNAL_PUT_hush_c_tag_u32(n) HUSH_C_INTERNAL_PUT_RAW(n)
#define HUSH_C_INTERNAL_PUT_hush_c_tag_u64(n) HUSH_C_INTERNAL_PUT_RAW(n)
#define HUSH_C_INTERNAL_PUT_hush_c_tag_bool(n) *hush_c_p++ = (unsigned char)((n) ? 1 : 0);
#define HUSH_C_INTERNAL_PUT_hush_c_tag_f32(n) HUSH_C_INTERNAL_PUT_RAW(n)
#define HUSH_C_INTERNAL_PUT_hush_c_tag_f64(n) HUSH_C_INTERNAL_PUT_RAW(n)
#define HUSH_C_INTERNAL_PUT_hush_c_tag_str(n) HUSH_C_INTERNAL_ADD_PIECE(HUSH_C_PIECE_STR, n, 0)
#define HUSH_C_INTERNAL_PUT_hush_c_tag_bytes(n) \
  HUSH_C_INTERNAL_ADD_PIECE(HUSH_C_PIECE_BYTES, n, hush_c_len_##n)

/* Parameter list of the emitter: `void` when there are no fields. */
#define HUSH_C_INTERNAL_PARAMS(...) \
  HUSH_C_INTERNAL_CAT(HUSH_C_INTERNAL_PARAMS_, HUSH_C_INTERNAL_IS_EMPTY(__VA_ARGS__))(__VA_ARGS__)
#define HUSH_C_INTERNAL_PARAMS_1(...) void
#define HUSH_C_INTERNAL_PARAMS_0(...) \
  HUSH_C_INTERNAL_FOR_EACH(HUSH_C_INTERNAL_F_PARAM, HUSH_C_INTERNAL_COMMA, __VA_ARGS__)

/* Argument counting that accepts an empty list without `, ##__VA_ARGS__` or __VA_OPT__ (neither
 * is ISO C11): IS_EMPTY is J. Gustedt's test, exact for lists of field macros. */
#define HUSH_C_INTERNAL_ARG_17(_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, \
                               _15, _16, _17, ...)                                              \
  _17
#define HUSH_C_INTERNAL_HAS_COMMA(...) \
  HUSH_C_INTERNAL_ARG_17(__VA_ARGS__, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0)
#define HUSH_C_INTERNAL_TRIGGER_PAREN(...) ,
#define HUSH_C_INTERNAL_IS_EMPTY(...)                                                       \
  HUSH_C_INTERNAL_IS_EMPTY_(HUSH_C_INTERNAL_HAS_COMMA(__VA_ARGS__),                         \
                            HUSH_C_INTERNAL_HAS_COMMA(HUSH_C_INTERNAL_TRIGGER_PAREN __VA_ARGS__), \
                            HUSH_C_INTERNAL_HAS_COMMA(__VA_ARGS__()),                       \
                            HUSH_C_INTERNAL_HAS_COMMA(HUSH_C_INTERNAL_TRIGGER_PAREN __VA_ARGS__()))
#define HUSH_C_INTERNAL_PASTE5(a, b, c, d, e) a##b##c##d##e
#define HUSH_C_INTERNAL_IS_EMPTY_(a, b, c, d) \
  HUSH_C_INTERNAL_HAS_COMMA(HUSH_C_INTERNAL_PASTE5(HUSH_C_INTERNAL_EMPTY_CASE_, a, b, c, d))
#define HUSH_C_INTERNAL_EMPTY_CASE_0001 ,

/* Number of fields, 0..16 (17 or more: an error naming hushtrace_c_too_many_fields). */
#define HUSH_C_INTERNAL_COUNT(...) \
  HUSH_C_INTERNAL_CAT(HUSH_C_INTERNAL_COUNT_, HUSH_C_INTERNAL_IS_EMPTY(__VA_ARGS__))(__VA_ARGS__)
#define HUSH_C_INTERNAL_COUNT_1(...) 0
#define HUSH_C_INTERNAL_COUNT_0(...)                                                       \
  HUSH_C_INTERNAL_ARG_17(__VA_ARGS__, hushtrace_c_too_many_fields, 16, 15, 14, 13, 12, 11, \
                         10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)

/* HUSH_C_INTERNAL_FOR_EACH(M, S, a, b, c) -> M(a) S() M(b) S() M(c); nothing for an empty list. */
#define HUSH_C_INTERNAL_FOR_EACH(M, S, ...) \
  HUSH_C_INTERNAL_CAT(HUSH_C_INTERNAL_FE_, HUSH_C_INTERNAL_COUNT(__VA_ARGS__))(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_0(M, S, ...)
#define HUSH_C_INTERNAL_FE_1(M, S, x) M(x)
#define HUSH_C_INTERNAL_FE_2(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_1(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_3(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_2(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_4(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_3(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_5(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_4(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_6(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_5(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_7(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_6(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_8(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_7(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_9(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_8(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_10(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_9(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_11(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_10(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_12(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_11(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_13(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_12(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_14(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_13(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_15(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_14(M, S, __VA_ARGS__)
#define HUSH_C_INTERNAL_FE_16(M, S, x, ...) M(x) S() HUSH_C_INTERNAL_FE_15(M, S, __VA_ARGS__)

/* The note that lets the runtime find this module's hush_desc section (docs/format.md, section
 * 5). C++ translation units get it from hushtrace/internal/descriptor.h (include guard: one copy
 * per TU even with both headers); C units emit the identical text, so the COMDAT group
 * hush_note_group merges all of them into one note per module. */
#ifdef __cplusplus
#include "hushtrace/internal/descriptor.h"
#else
__asm__(".weak __start_hush_desc\n\t.hidden __start_hush_desc\n\t"
        ".weak __stop_hush_desc\n\t.hidden __stop_hush_desc\n\t"
        ".pushsection .note.hushtrace,\"aG\",@note,hush_note_group,comdat\n\t"
        ".balign 4\n\t.long 7\n\t.long 16\n\t.long 0x48555348\n\t.asciz \"hushtr\"\n\t.balign 4\n\t"
        ".quad __start_hush_desc - .\n\t.quad __stop_hush_desc - .\n\t.popsection");
#endif

#endif /* HUSHTRACE_HUSHTRACE_C_H_ */
