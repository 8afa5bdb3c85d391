/* SPDX-License-Identifier: BSD-2-Clause */
/* rng.c - counter-based random numbers (see rng.h). */
#include "rng.h"

#include <math.h>

#define SS_RNG_GOLDEN 0x9E3779B97F4A7C15ull

/* SplitMix64 finalizer: a bijection on 64-bit integers with full avalanche. */
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t ss__rng_hash(uint64_t seed, uint64_t a, uint64_t b) {
    uint64_t h = mix64(seed + SS_RNG_GOLDEN);
    h = mix64(h ^ (a + 0x6A09E667F3BCC909ull));
    h = mix64(h ^ (b + 0xBB67AE8584CAA73Bull));
    return h;
}

void ss__rng_seed(ss_rng *r, uint64_t seed, uint64_t stream) {
    r->k0 = ss__rng_hash(seed, stream, 0x3C6EF372FE94F82Bull);
    r->k1 = ss__rng_hash(seed, stream, 0xA54FF53A5F1D36F1ull);
    r->ctr = 0;
}

uint64_t ss__rng_next(ss_rng *r) {
    uint64_t c = r->ctr++;
    return mix64(mix64((c * SS_RNG_GOLDEN) ^ r->k0) + r->k1);
}

uint64_t ss__rng_below(ss_rng *r, uint64_t n) {
    if (n <= 1) return 0;
    /* Lemire, "Fast random integer generation in an interval" (2019). */
    __extension__ typedef unsigned __int128 u128;
    u128 m = (u128)ss__rng_next(r) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t threshold = (0 - n) % n;
        while (low < threshold) {
            m = (u128)ss__rng_next(r) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double ss__rng_uniform(ss_rng *r) {
    return (double)(ss__rng_next(r) >> 11) * 0x1.0p-53;
}

double ss__rng_normal(ss_rng *r) {
    double u1 = 1.0 - ss__rng_uniform(r); /* (0, 1]: log is finite */
    double u2 = ss__rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

/* Round i of the keyed bijection on halves of h bits: the top h bits of
 * the finalizer of r XOR (key + i * G). Fixed: it defines every sampler
 * shuffle. */
static uint64_t feistel_round(uint64_t r, uint64_t key, uint64_t i, unsigned h) {
    return mix64(r ^ (key + i * SS_RNG_GOLDEN)) >> (64 - h);
}

/* Halves of h bits, 2h the smallest even number >= 2 of bits holding size;
 * 12 rounds on halves of 1-3 bits (sizes <= 64), where few rounds leave
 * positions measurably uneven, else 6. */
static unsigned feistel_shape(uint64_t size, unsigned *rounds) {
    unsigned bits = 64 - (unsigned)__builtin_clzll(size - 1); /* size >= 2: 2^bits >= size */
    unsigned h = bits <= 2 ? 1 : (bits + 1) / 2;
    *rounds = h >= 4 ? 6 : 12;
    return h;
}

uint64_t ss__rng_permute(uint64_t x, uint64_t size, uint64_t key) {
    if (size <= 1) return x;
    unsigned rounds, h = feistel_shape(size, &rounds);
    uint64_t mask = (1ull << h) - 1;
    do {
        uint64_t l = x >> h, r = x & mask;
        for (unsigned i = 0; i < rounds; i++) {
            uint64_t t = l ^ feistel_round(r, key, i, h);
            l = r;
            r = t;
        }
        x = l << h | r;
    } while (x >= size);
    return x;
}

uint64_t ss__rng_unpermute(uint64_t y, uint64_t size, uint64_t key) {
    if (size <= 1) return y;
    unsigned rounds, h = feistel_shape(size, &rounds);
    uint64_t mask = (1ull << h) - 1;
    do {
        uint64_t l = y >> h, r = y & mask;
        for (unsigned i = rounds; i-- > 0;) {
            uint64_t t = r ^ feistel_round(l, key, i, h);
            r = l;
            l = t;
        }
        y = l << h | r;
    } while (y >= size);
    return y;
}
