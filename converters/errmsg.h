/* SPDX-License-Identifier: BSD-2-Clause */
/* errmsg.h - an error message into a caller's buffer, for the parsers that
 * report through (char *err, size_t errlen) rather than an ss_conv. */
#ifndef SS_ERRMSG_H
#define SS_ERRMSG_H

#include <stddef.h>

/* Format the message into err[0, errlen) (cut to fit, always terminated when
 * errlen > 0). @return -1, for `return ss__errbuf(...)` and `rc = ss__errbuf(...)`. */
int ss__errbuf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
