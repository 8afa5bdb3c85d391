/* SPDX-License-Identifier: BSD-2-Clause */
/* rerror.c - this layer's per-thread error message (format/ copies it into
 * the library's, ss_error_message()). */
#include "remote_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char ss_rmsg[1024];

int ss__rfail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ss_rmsg, sizeof ss_rmsg, fmt, ap);
    va_end(ap);
    return code;
}

int ss__rcontext(int code, const char *fmt, ...) {
    char prefix[512], old[sizeof ss_rmsg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, ss_rmsg, sizeof old);
    size_t n = strnlen(prefix, sizeof ss_rmsg - 3);
    memcpy(ss_rmsg, prefix, n);
    memcpy(ss_rmsg + n, ": ", 2);
    size_t m = strnlen(old, sizeof ss_rmsg - n - 3);
    memcpy(ss_rmsg + n + 2, old, m);
    ss_rmsg[n + 2 + m] = '\0';
    return code;
}

const char *ss__rmessage(void) {
    return ss_rmsg;
}
