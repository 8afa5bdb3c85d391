/* SPDX-License-Identifier: BSD-2-Clause */
/* lm_mt19937.h - numpy's legacy random numbers, bit for bit; not installed.
 *
 * Megatron-Core shuffles its document and sample indices with
 * numpy.random.RandomState(seed).shuffle(). To give the same samples, the
 * LM sample index (lm.h) reproduces exactly what that call does:
 *  - RandomState(seed) with an integer seed < 2^32 seeds MT19937 with
 *    Matsumoto and Nishimura's init_genrand(seed) (numpy's mt19937_seed);
 *  - shuffle(x) of a 1-D array of n elements swaps, for i = n-1 down to 1,
 *    x[i] with x[j], j = random_interval(i): the smallest all-ones mask
 *    >= i, then draws masked with it until one is <= i; a draw is one 32-bit
 *    output when i <= 0xFFFFFFFF, else two, the first the high word.
 * The state carries over from one shuffle to the next, as numpy's does. */
#ifndef SS_LM_MT19937_H
#define SS_LM_MT19937_H

#include <stdatomic.h>
#include <stdint.h>

#define SS_MT_N 624

typedef struct ss_mt19937 {
    uint32_t key[SS_MT_N];
    int pos;
} ss_mt19937;

/* numpy.random.RandomState(seed) for 0 <= seed < 2^32. */
void ss__mt_seed(ss_mt19937 *mt, uint32_t seed);

/* Regenerate the whole state block (numpy's mt19937_gen). */
void ss__mt_gen(ss_mt19937 *mt);

/* The next tempered 32-bit output (numpy's mt19937_next32). Inline: the
 * shuffles draw one or more per element, and a call each was a fifth of
 * the document shuffle. */
static inline uint32_t ss__mt_next32_inline(ss_mt19937 *mt) {
    if (__builtin_expect(mt->pos == SS_MT_N, 0)) ss__mt_gen(mt);
    uint32_t y = mt->key[mt->pos++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
}

/* numpy's legacy random_interval(max): uniform in [0, max]. */
static inline uint64_t ss__mt_interval_inline(ss_mt19937 *mt, uint64_t max) {
    if (max == 0) return 0;
    uint64_t mask = max, v;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    if (max <= 0xffffffffu) {
        while ((v = (ss__mt_next32_inline(mt) & mask)) > max) {
        }
    } else {
        do {
            uint64_t hi = ss__mt_next32_inline(mt);
            v = ((hi << 32) | ss__mt_next32_inline(mt)) & mask;
        } while (v > max);
    }
    return v;
}

/* The same two out of line. */
uint32_t ss__mt_next32(ss_mt19937 *mt);
uint64_t ss__mt_interval(ss_mt19937 *mt, uint64_t max);

/* RandomState.shuffle() of n int64 elements in place. */
void ss__mt_shuffle_i64(ss_mt19937 *mt, int64_t *x, uint64_t n);

/* RandomState.shuffle() of n uint32 elements in place. */
void ss__mt_shuffle_u32(ss_mt19937 *mt, uint32_t *x, uint64_t n);

/* The same, storing into *front (release) from time to time the lowest
 * position from which x is final, and 0 at the end: what lets another
 * thread read the shuffled array behind it. */
void ss__mt_shuffle_u32_front(ss_mt19937 *mt, uint32_t *x, uint64_t n, _Atomic uint64_t *front);

#endif /* SS_LM_MT19937_H */
