/* SPDX-License-Identifier: BSD-2-Clause */
/* numbers.h - decimal integers parsed strictly: the one rule of every numeric
 * option, of the command line and of the converters alike. */
#ifndef SS_NUMBERS_H
#define SS_NUMBERS_H

#include <stdint.h>

/* Parse a decimal integer strictly: digits only (no sign, space or suffix),
 * no overflow, within [min, max]. @return 0, or -1 (and *out untouched). */
int ss__parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out);
/* As ss__parse_u64 with an optional leading '-', over the whole int64 range. */
int ss__parse_i64(const char *text, int64_t *out);

#endif
