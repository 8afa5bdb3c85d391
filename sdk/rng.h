/* SPDX-License-Identifier: BSD-2-Clause */
/* rng.h - the library's deterministic, counter-based random numbers; not installed.
 *
 * Every random decision in seqstore (shuffles, sampling, augmentation) is a
 * pure function of (seed, stream, position): the same seed gives the same
 * numbers on any machine, with any thread count, and a stream can be
 * restarted at any position by saving three integers. There is no global
 * state.
 *
 * Construction: a stream is keyed by two 64-bit keys derived from
 * (seed, stream) with ss__rng_hash(); output number c of the stream is
 * mix(mix(c * G ^ k0) + k1), where mix is the SplitMix64 / MurmurHash3
 * 64-bit finalizer and G the golden-ratio constant 0x9E3779B97F4A7C15. The
 * constants and this construction are fixed: changing them changes every
 * shuffle a user has ever reproduced. */
#ifndef SS_RNG_H
#define SS_RNG_H

#include <stdint.h>

/* A random stream. Plain data: copy it to fork a stream, store its fields to
 * resume it. */
typedef struct ss_rng {
    uint64_t k0;  /* first key */
    uint64_t k1;  /* second key */
    uint64_t ctr; /* number of 64-bit outputs drawn so far */
} ss_rng;

/* A well-mixed 64-bit hash of (seed, a, b): derive independent seeds, e.g.
 * ss__rng_hash(seed, epoch, rank). Pure; not cryptographic. */
uint64_t ss__rng_hash(uint64_t seed, uint64_t a, uint64_t b);

/* Start stream `stream` of `seed` at position 0. Different (seed, stream)
 * pairs give independent-looking streams. */
void ss__rng_seed(ss_rng *r, uint64_t seed, uint64_t stream);

/* The next uniformly distributed 64-bit number. */
uint64_t ss__rng_next(ss_rng *r);

/* A uniform integer in [0, n), without modulo bias (Lemire's method with
 * rejection). Returns 0 when n is 0 or 1. The number of outputs consumed
 * varies (almost always 1). */
uint64_t ss__rng_below(ss_rng *r, uint64_t n);

/* A uniform double in [0, 1) with 53 random bits. */
double ss__rng_uniform(ss_rng *r);

/* A standard normal (mean 0, variance 1) by the Box-Muller transform; uses
 * two outputs per call (no cached spare, so the state stays three integers). */
double ss__rng_normal(ss_rng *r);

/* A keyed bijection of [0, size): element x of the permutation of [0, size)
 * that `key` selects, computed alone, without materialising the others. A
 * balanced Feistel network on the smallest even number of bits 2h >= 2 with
 * 2^(2h) >= size: round i maps the halves (l, r) to (r, l XOR F_i(r)),
 * F_i(r) the top h bits of mix(r XOR (key + i * G)), mix the SplitMix64
 * finalizer; 6 rounds, or 12 when h <= 3 (size <= 64); applied again while
 * the value is >= size ("cycle walking": fewer than 4 applications on
 * average, since 2^(2h) < 4 size). Shuffles of any size thus cost O(1)
 * memory and O(1) time per element. Not every permutation of a size is
 * reachable (nor equally likely); the positions and pairs it gives are
 * uniform to the tests' chi-square (tests/test_sampler.c). x must be < size;
 * size 0 or 1 returns x. */
uint64_t ss__rng_permute(uint64_t x, uint64_t size, uint64_t key);

/* The inverse: ss__rng_unpermute(ss__rng_permute(x, size, key), size, key) == x. */
uint64_t ss__rng_unpermute(uint64_t y, uint64_t size, uint64_t key);

#endif /* SS_RNG_H */
