/* SPDX-License-Identifier: BSD-2-Clause */
/* numbers.c - decimal integers parsed strictly, for the options of the
 * command line and of the converters (see numbers.h). */
#include "numbers.h"

#include <errno.h>
#include <stdlib.h>

int ss__parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out) {
    /* digits only: strtoull alone would take "-5" (wrapped), " 7", "+7", "0x10" */
    if (!text || !*text) return -1;
    for (const char *p = text; *p; p++)
        if (*p < '0' || *p > '9') return -1;
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno || v < min || v > max) return -1;
    *out = (uint64_t)v;
    return 0;
}

int ss__parse_i64(const char *text, int64_t *out) {
    const char *digits = text && (*text == '-') ? text + 1 : text;
    uint64_t mag;
    if (ss__parse_u64(digits, 0, (uint64_t)INT64_MAX + 1, &mag)) return -1;
    if (digits == text && mag > (uint64_t)INT64_MAX) return -1;
    /* negate in unsigned arithmetic: -(2^63) has no positive counterpart */
    *out = digits == text ? (int64_t)mag : (int64_t)(0 - mag);
    return 0;
}
