/* SPDX-License-Identifier: BSD-2-Clause */
/* blend.c - several sources read in chosen proportions (Megatron's greedy
 * blending); see the blending section of sampler.h. */
#include "internal.h"
#include "layout.h" /* ss_le64, ss_put_le64 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ss_blend {
    uint32_t k;
    double *w;      /* normalised weights */
    uint64_t *size; /* per source */
    uint64_t *c;    /* per source: samples given */
    uint64_t n;     /* global samples selected so far */
    uint64_t seed;
    int shuffle;
    uint64_t consumers, me; /* R x W, this consumer's number rank + R x worker */
    uint64_t fingerprint;
};

static uint64_t mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A permutation of [0, size) for key: a 4-round Feistel network on the
 * smallest even number of bits that holds size, walked until the value
 * falls inside (fewer than 4 steps expected). */
static uint64_t permute(uint64_t x, uint64_t size, uint64_t key) {
    unsigned bits = 2;
    while (bits < 64 && (1ull << bits) < size) bits += 2;
    unsigned h = bits / 2;
    uint64_t mask = h >= 64 ? ~0ull : (1ull << h) - 1;
    do {
        uint64_t l = x >> h, r = x & mask;
        for (int round = 0; round < 4; round++) {
            uint64_t t = l ^ (mix(key ^ mix(r + (uint64_t)round)) & mask);
            l = r;
            r = t;
        }
        x = l << h | r;
    } while (x >= size);
    return x;
}

static uint64_t fingerprint(const ss_blend *b) {
    uint64_t f = mix(b->k ^ mix(b->seed) ^ (uint64_t)b->shuffle << 40 ^ b->consumers << 20 ^ b->me);
    for (uint32_t j = 0; j < b->k; j++) {
        uint64_t wbits;
        memcpy(&wbits, &b->w[j], 8);
        f = mix(f ^ wbits) ^ mix(b->size[j] + j);
    }
    return f;
}

int ss_blend_create(ss_blend **out, const ss_blend_options *o) {
    if (!out) return ss__fail(SS_EINVAL, "ss_blend_create: NULL argument");
    *out = NULL;
    if (!o || !o->weights || !o->sizes)
        return ss__fail(SS_EINVAL, "ss_blend_create: NULL argument");
    if (o->version != SS_BLEND_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "ss_blend_create: options version %u (this library: %d)",
                        o->version, SS_BLEND_OPTIONS_VERSION);
    if (o->nsources == 0 || o->nsources > 65536)
        return ss__fail(SS_EINVAL, "ss_blend_create: %u sources (1..65536)", o->nsources);
    uint32_t R = o->world_size ? o->world_size : 1, W = o->num_workers ? o->num_workers : 1;
    if (o->rank >= R || o->worker >= W)
        return ss__fail(SS_EINVAL, "ss_blend_create: rank %u of %u, worker %u of %u", o->rank, R,
                        o->worker, W);
    double sum = 0;
    for (uint32_t j = 0; j < o->nsources; j++) {
        if (!(o->weights[j] > 0) || !isfinite(o->weights[j]))
            return ss__fail(SS_EINVAL, "ss_blend_create: weight %u is %g (need > 0)", j,
                            o->weights[j]);
        if (o->sizes[j] == 0) return ss__fail(SS_EINVAL, "ss_blend_create: source %u is empty", j);
        sum += o->weights[j];
    }
    ss_blend *b = calloc(1, sizeof *b);
    if (b) {
        b->w = malloc(o->nsources * sizeof *b->w);
        b->size = malloc(o->nsources * sizeof *b->size);
        b->c = calloc(o->nsources, sizeof *b->c);
    }
    if (!b || !b->w || !b->size || !b->c) {
        ss_blend_free(b);
        return ss__fail(SS_ENOMEM, "ss_blend_create: out of memory");
    }
    b->k = o->nsources;
    for (uint32_t j = 0; j < b->k; j++) b->w[j] = o->weights[j] / sum, b->size[j] = o->sizes[j];
    b->seed = o->seed;
    b->shuffle = o->shuffle;
    b->consumers = (uint64_t)R * W;
    b->me = o->rank + (uint64_t)R * o->worker;
    b->fingerprint = fingerprint(b);
    *out = b;
    return 0;
}

void ss_blend_free(ss_blend *b) {
    if (!b) return;
    free(b->w);
    free(b->size);
    free(b->c);
    free(b);
}

/* Select global sample n's source (the greedy rule) and count it. */
static uint32_t select_next(ss_blend *b) {
    uint32_t best = 0;
    double best_err = -INFINITY, n1 = (double)(b->n + 1);
    for (uint32_t j = 0; j < b->k; j++) {
        double err = b->w[j] * n1 - (double)b->c[j];
        if (err > best_err) best_err = err, best = j;
    }
    b->n++;
    return best;
}

int ss_blend_next(uint32_t *source, uint64_t *index, ss_blend *b) {
    if (!source || !index || !b) return ss__fail(SS_EINVAL, "ss_blend_next: NULL argument");
    /* global sample n goes to consumer (n mod R) + R x ((n / R) mod W) =
     * n mod (R x W) in this numbering: skip the others' samples */
    while (b->n % b->consumers != b->me) b->c[select_next(b)]++;
    uint32_t j = select_next(b);
    uint64_t c = b->c[j]++, e = c / b->size[j], p = c % b->size[j];
    *source = j;
    *index = b->shuffle ? permute(p, b->size[j], mix(b->seed ^ mix(j) ^ mix(e + 0x51ed))) : p;
    return 0;
}

uint64_t ss_blend_source_count(const ss_blend *b, uint32_t source) {
    return b && source < b->k ? b->c[source] : 0;
}

uint64_t ss_blend_source_epoch(const ss_blend *b, uint32_t source) {
    return b && source < b->k ? b->c[source] / b->size[source] : 0;
}

uint64_t ss_blend_position(const ss_blend *b) {
    return b ? b->n : 0;
}

size_t ss_blend_state_size(const ss_blend *b) {
    return b ? 8 * ((size_t)b->k + 3) : 0;
}

int ss_blend_state_save(void *buf, size_t cap, size_t *len, const ss_blend *b) {
    if (len) *len = 0;
    if (!b || (!buf && cap)) return ss__fail(SS_EINVAL, "ss_blend_state_save: NULL argument");
    size_t need = 8 * ((size_t)b->k + 3);
    if (len) *len = need;
    if (cap < need) return ss__fail(SS_EBUFS, "ss_blend_state_save: needs %zu bytes", need);
    unsigned char *p = buf;
    ss_put_le64(p, b->fingerprint);
    ss_put_le64(p + 8, b->k);
    ss_put_le64(p + 16, b->n);
    for (uint32_t j = 0; j < b->k; j++) ss_put_le64(p + 24 + 8 * (size_t)j, b->c[j]);
    return 0;
}

int ss_blend_state_load(ss_blend *b, const void *buf, size_t len) {
    if (!b || !buf) return ss__fail(SS_EINVAL, "ss_blend_state_load: NULL argument");
    const unsigned char *p = buf;
    if (len != 8 * ((size_t)b->k + 3) || ss_le64(p + 8) != b->k)
        return ss__fail(SS_EINVAL, "ss_blend_state_load: %zu bytes, not a state of %u sources", len,
                        b->k);
    if (ss_le64(p) != b->fingerprint)
        return ss__fail(SS_EINVAL, "ss_blend_state_load: saved with other options");
    uint64_t sum = 0, n = ss_le64(p + 16);
    for (uint32_t j = 0; j < b->k; j++) sum += ss_le64(p + 24 + 8 * (size_t)j);
    if (sum != n)
        return ss__fail(SS_EINVAL, "ss_blend_state_load: the counts do not add up to the position");
    b->n = n;
    for (uint32_t j = 0; j < b->k; j++) b->c[j] = ss_le64(p + 24 + 8 * (size_t)j);
    return 0;
}
