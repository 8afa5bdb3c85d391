/* SPDX-License-Identifier: BSD-2-Clause */
/* lm_mt19937.c - numpy's legacy MT19937 and RandomState.shuffle (see lm_mt19937.h). */
#include "lm_mt19937.h"

#include <stdatomic.h>
#include <stddef.h>

#define MT_M 397
#define MATRIX_A 0x9908b0dfu
#define UPPER_MASK 0x80000000u
#define LOWER_MASK 0x7fffffffu

void ss__mt_seed(ss_mt19937 *mt, uint32_t seed) {
    for (int i = 0; i < SS_MT_N; i++) {
        mt->key[i] = seed;
        seed = 1812433253u * (seed ^ (seed >> 30)) + (uint32_t)i + 1u;
    }
    mt->pos = SS_MT_N;
}

void ss__mt_gen(ss_mt19937 *mt) {
    uint32_t *k = mt->key, y;
    int i;
    for (i = 0; i < SS_MT_N - MT_M; i++) {
        y = (k[i] & UPPER_MASK) | (k[i + 1] & LOWER_MASK);
        k[i] = k[i + MT_M] ^ (y >> 1) ^ (-(y & 1u) & MATRIX_A);
    }
    for (; i < SS_MT_N - 1; i++) {
        y = (k[i] & UPPER_MASK) | (k[i + 1] & LOWER_MASK);
        k[i] = k[i + (MT_M - SS_MT_N)] ^ (y >> 1) ^ (-(y & 1u) & MATRIX_A);
    }
    y = (k[SS_MT_N - 1] & UPPER_MASK) | (k[0] & LOWER_MASK);
    k[SS_MT_N - 1] = k[MT_M - 1] ^ (y >> 1) ^ (-(y & 1u) & MATRIX_A);
    mt->pos = 0;
}

uint32_t ss__mt_next32(ss_mt19937 *mt) { return ss__mt_next32_inline(mt); }

uint64_t ss__mt_interval(ss_mt19937 *mt, uint64_t max) { return ss__mt_interval_inline(mt, max); }

/* numpy's shuffle: for i = n-1 .. 1, swap x[i] with x[interval(i)]. The
 * draws do not depend on the array, so they are made SHUFFLE_AHEAD swaps
 * early (in the same order) and x[j] is prefetched: on an array beyond the
 * caches each swap would otherwise wait for a cache miss. */
#define SHUFFLE_AHEAD 32
/* Every FRONT_STEP swaps the shuffle publishes its front: x[i..n) is final
 * (later swaps touch only positions below i). */
#define FRONT_STEP 4096
#define SHUFFLE_BODY(type)                                                                         \
    if (n < 2) {                                                                                   \
        if (front) atomic_store_explicit(front, 0, memory_order_release);                         \
        return;                                                                                    \
    }                                                                                              \
    uint64_t ring[SHUFFLE_AHEAD];                                                                  \
    uint64_t ahead = n - 1 < SHUFFLE_AHEAD ? n - 1 : SHUFFLE_AHEAD;                                \
    for (uint64_t k = 0; k < ahead; k++) {                                                         \
        ring[k] = ss__mt_interval_inline(mt, n - 1 - k);                                                   \
        __builtin_prefetch(x + ring[k], 1);                                                        \
    }                                                                                              \
    for (uint64_t i = n - 1, slot = 0; i >= 1; i--, slot = (slot + 1) % SHUFFLE_AHEAD) {           \
        uint64_t j = ring[slot];                                                                   \
        if (i > SHUFFLE_AHEAD) {                                                                   \
            ring[slot] = ss__mt_interval_inline(mt, i - SHUFFLE_AHEAD);                                    \
            __builtin_prefetch(x + ring[slot], 1);                                                 \
        }                                                                                          \
        type t = x[i];                                                                             \
        x[i] = x[j];                                                                               \
        x[j] = t;                                                                                  \
        if (front && i % FRONT_STEP == 0) atomic_store_explicit(front, i, memory_order_release);  \
    }                                                                                              \
    if (front) atomic_store_explicit(front, 0, memory_order_release);

void ss__mt_shuffle_i64(ss_mt19937 *mt, int64_t *x, uint64_t n) {
    _Atomic uint64_t *front = NULL;
    SHUFFLE_BODY(int64_t)
}

void ss__mt_shuffle_u32(ss_mt19937 *mt, uint32_t *x, uint64_t n) {
    ss__mt_shuffle_u32_front(mt, x, n, NULL);
}

void ss__mt_shuffle_u32_front(ss_mt19937 *mt, uint32_t *x, uint64_t n, _Atomic uint64_t *front) {
    SHUFFLE_BODY(uint32_t)
}
