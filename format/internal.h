/* internal.h - declarations shared inside the library; not installed. */
#ifndef SS_INTERNAL_H
#define SS_INTERNAL_H

#include "seqstore.h"

#include <stdarg.h>

/* Set the calling thread's error message and return `code`, so that callers
 * can write `return ss__fail(SS_EINVAL, "field '%s': ...", name);`. */
int ss__fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the current message with context: "open 'a.ss': " + old message. */
int ss__context(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Map an LMDB return code to a seqstore code, recording `what` and LMDB's text. */
int ss__lmdb_fail(int rc, const char *what);

#endif
