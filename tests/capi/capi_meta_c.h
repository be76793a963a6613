/* The C half of capi_test: declarations shared by capi_meta_c.c (compiled as C) and
 * capi_test.cc. */
#ifndef HUSHTRACE_TESTS_CAPI_CAPI_META_C_H_
#define HUSHTRACE_TESTS_CAPI_CAPI_META_C_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The HTP1 record of cmp:ev as built by HUSH_C_TRACEPOINT in a C translation unit. */
const void* capi_c_record_ev(size_t* size);
/* The record of the field-less cmp:empty. */
const void* capi_c_record_empty(size_t* size);
/* Emits cmp:ev with the values of capi_test's kEv*, then cmp:empty, a cmp:sp span, cmp:inst and
 * cmp:ctr = 2.5, all from C. */
void capi_c_emit_all(void);

#ifdef __cplusplus
}
#endif

#endif /* HUSHTRACE_TESTS_CAPI_CAPI_META_C_H_ */
