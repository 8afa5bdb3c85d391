/* SPDX-License-Identifier: BSD-2-Clause */
/* errmsg.c - an error message into a caller's buffer (see errmsg.h). */
#include "errmsg.h"

#include <stdarg.h>
#include <stdio.h>

int ss__errbuf(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}
