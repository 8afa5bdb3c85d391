/* SPDX-License-Identifier: BSD-2-Clause */
/* utf8.c - strict UTF-8 decoding (see utf8.h). */
#include "utf8.h"

#include <string.h>

/* Length (2..4) of the valid multi-byte sequence at s[0] (>= 0x80), its
 * code point in *cp; 0 if the sequence is invalid. */
static inline size_t ss_utf8_multi(const uint8_t *s, size_t n, uint32_t *cp) {
    uint32_t c = s[0];
    size_t len;
    uint32_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        c &= 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0; /* no overlong forms */
        if (c == 0xED) hi = 0x9F; /* no surrogates */
        c &= 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90; /* no overlong forms */
        if (c == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
        c &= 0x07;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t j = 1; j < len; j++) {
        if (j > 1 && (s[j] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (s[j] & 0x3F);
    }
    *cp = c;
    return len;
}

int ss__utf8_decode(uint32_t *out, size_t *nout, size_t *bad, const uint8_t *s, size_t n) {
    size_t i = 0, k = 0;
    while (i < n) {
        /* ASCII fast path: 8 bytes at a time */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull) break;
            for (int j = 0; j < 8; j++) out[k++] = s[i + (size_t)j];
            i += 8;
        }
        if (i >= n) break;
        if (s[i] < 0x80) {
            out[k++] = s[i++];
            continue;
        }
        size_t len = ss_utf8_multi(s + i, n - i, &out[k]);
        if (!len) {
            *nout = k;
            *bad = i;
            return -1;
        }
        k++;
        i += len;
    }
    *nout = k;
    return 0;
}

size_t ss__utf8_seq(const uint8_t *s, size_t n) {
    uint32_t cp;
    if (n == 0) return 0;
    return s[0] < 0x80 ? 1 : ss_utf8_multi(s, n, &cp);
}

int ss__utf8_valid(const uint8_t *s, size_t n) {
    for (size_t i = 0, len; i < n; i += len)
        if ((len = ss__utf8_seq(s + i, n - i)) == 0) return 0;
    return 1;
}

size_t ss__utf8_encode(char out[4], uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp > 0x10FFFF) return 0;
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
