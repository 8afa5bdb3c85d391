/* SPDX-License-Identifier: BSD-2-Clause */
/* utf8.h - strict UTF-8 decoding (RFC 3629) for the text converters and the CLI. */
#ifndef SS_UTF8_H
#define SS_UTF8_H

#include <stddef.h>
#include <stdint.h>

/** Decode [s, s + n) into Unicode code points.
 *  Rejects what RFC 3629 forbids: stray continuation bytes, truncated
 *  sequences, overlong forms, surrogates (U+D800..U+DFFF) and values above
 *  U+10FFFF.
 *  @param[out] out   at least n entries; receives the code points.
 *  @param[out] nout  number of code points written.
 *  @param[out] bad   on failure, the offset of the first byte of the invalid
 *                    sequence.
 *  @return 0, or -1 for invalid UTF-8. */
int ss__utf8_decode(uint32_t *out, size_t *nout, size_t *bad, const uint8_t *s, size_t n);

/** Encode code point `cp` (<= U+10FFFF, not a surrogate) into `out`.
 *  @return the number of bytes (1..4), or 0 for an invalid code point. */
size_t ss__utf8_encode(char out[4], uint32_t cp);

/** Length (1..4) of the valid UTF-8 sequence starting at s[0], or 0 if the
 *  bytes there are not valid UTF-8 (or n is 0). */
size_t ss__utf8_seq(const uint8_t *s, size_t n);

/** 1 if [s, s + n) is entirely valid UTF-8 (as ss__utf8_decode accepts), else 0. */
int ss__utf8_valid(const uint8_t *s, size_t n);

#endif
