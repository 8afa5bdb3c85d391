/* SPDX-License-Identifier: BSD-2-Clause */
/* words.h - the words of `--tokens words`: maximal runs of bytes that are not
 * whitespace (' ', '\t', '\n', '\v', '\f', '\r'), found 64 bytes at a time.
 *
 * A byte loop that stops at each word's end mispredicts a branch per word
 * (with perf on 100 MB of words, most of the scanning time); a bit mask of
 * the whitespace of 64 bytes turns a word's start and end into counting
 * trailing zeros, and the loop branches per 64 bytes instead. */
#ifndef SS_WORDS_H
#define SS_WORDS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Whitespace as words are separated. */
static inline int ss_is_ws(uint8_t ch) {
    return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/* Bit i set: p[i] is whitespace (64 bytes readable at p). */
static inline uint64_t ss_ws_mask64(const uint8_t *p) {
#ifdef __SSE2__
    const __m128i sp = _mm_set1_epi8(' '), tab = _mm_set1_epi8('\t'), four = _mm_set1_epi8(4);
    uint64_t m = 0;
    for (int k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
        __m128i t = _mm_sub_epi8(v, tab); /* '\t'..'\r' -> 0..4 */
        __m128i ws = _mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(_mm_min_epu8(t, four), t));
        m |= (uint64_t)(uint32_t)_mm_movemask_epi8(ws) << (16 * k);
    }
    return m;
#else
    uint64_t m = 0;
    for (int i = 0; i < 64; i++) m |= (uint64_t)ss_is_ws(p[i]) << i;
    return m;
#endif
}

/* A scan of the words of d[a, e). */
typedef struct ss_wordscan {
    const uint8_t *d;
    size_t base; /* the chunk: d[base, base + 64) */
    size_t end;  /* e */
    size_t lim;  /* d[0, lim) may be read (lim >= e) */
    uint64_t ws; /* whitespace bits of the chunk; also set: bytes passed, bytes >= e */
} ss_wordscan;

/* The mask of the chunk at `base` (<= end). */
static inline uint64_t ss_wordscan_chunk(const ss_wordscan *s, size_t base) {
    uint64_t m;
    if (s->lim - base >= 64) {
        m = ss_ws_mask64(s->d + base);
    } else { /* the last bytes of the buffer: never read past it */
        uint8_t buf[64];
        memset(buf, ' ', sizeof buf);
        memcpy(buf, s->d + base, s->lim - base);
        m = ss_ws_mask64(buf);
    }
    if (s->end - base < 64) m |= ~0ull << (s->end - base);
    return m;
}

/* Start scanning d[a, e), where d[0, lim) may be read. */
static inline void ss_wordscan_init(ss_wordscan *s, const uint8_t *d, size_t a, size_t e,
                                    size_t lim) {
    s->d = d;
    s->base = a;
    s->end = e;
    s->lim = lim;
    s->ws = a < e ? ss_wordscan_chunk(s, a) : ~0ull;
}

/* The next word: its offset in d in *w and length in *len (>= 1).
 * @return 1, or 0 when there are no more words. */
static inline int ss_wordscan_next(ss_wordscan *s, size_t *w, size_t *len) {
    while (s->ws == ~0ull) {
        s->base += 64;
        if (s->base >= s->end) {
            s->base = s->end; /* stays at the end, whatever the calls that follow */
            return 0;
        }
        s->ws = ss_wordscan_chunk(s, s->base);
    }
    unsigned st = (unsigned)__builtin_ctzll(~s->ws);
    size_t start = s->base + st;
    uint64_t rest = s->ws & (~0ull << st); /* whitespace after the start */
    while (!rest) { /* the word goes on into the next chunk (bytes >= e are set) */
        s->base += 64;
        rest = s->ws = ss_wordscan_chunk(s, s->base);
    }
    unsigned t = (unsigned)__builtin_ctzll(rest);
    s->ws |= (1ull << t) - 1; /* passed */
    *w = start;
    *len = s->base + t - start;
    return 1;
}

#endif
