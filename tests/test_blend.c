/* SPDX-License-Identifier: BSD-2-Clause */
/* test_blend.c - ss_blend: after every n of 100,000 samples each source has
 * given within one sample of w_j * n (against a naive recount); each source
 * epoch is a permutation; deterministic for a seed; a state saved mid-blend
 * resumes exactly; R x W consumers partition the global stream; bad options
 * refused. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { K = 4, TOTAL = 100000 };
static const double W_RAW[K] = {5, 1, 3, 0.5}; /* normalised by the blend */
static const uint64_t SIZES[K] = {977, 50, 3001, 7};

static ss_blend *make(uint32_t R, uint32_t rank, uint32_t Wk, uint32_t worker, uint64_t seed) {
    ss_blend_options o = SS_BLEND_OPTIONS_INIT;
    o.nsources = K, o.weights = W_RAW, o.sizes = SIZES, o.seed = seed;
    o.world_size = R, o.rank = rank, o.num_workers = Wk, o.worker = worker;
    ss_blend *b;
    CHECK_OK(ss_blend_create(&b, &o));
    return b;
}

int main(void) {
    static uint32_t src[TOTAL];
    static uint64_t idx[TOTAL];
    double wsum = 0;
    for (int j = 0; j < K; j++) wsum += W_RAW[j];
    /* proportions within one sample at every n; epochs are permutations */
    ss_blend *b = make(1, 0, 1, 0, 99);
    uint64_t count[K] = {0};
    static unsigned char seen[K][3001];
    for (uint64_t n = 0; n < TOTAL; n++) {
        CHECK_OK(ss_blend_next(&src[n], &idx[n], b));
        uint32_t j = src[n];
        CHECK(j < K && idx[n] < SIZES[j]);
        if (count[j] % SIZES[j] == 0) memset(seen[j], 0, sizeof seen[j]); /* a new epoch */
        CHECK(!seen[j][idx[n]]); /* every example once per epoch */
        seen[j][idx[n]] = 1;
        count[j]++;
        for (int s = 0; s < K; s++)
            CHECK(fabs((double)count[s] - W_RAW[s] / wsum * (double)(n + 1)) <= 1.0);
    }
    for (int j = 0; j < K; j++) {
        CHECK_EQ_U64(ss_blend_source_count(b, (uint32_t)j), count[j]);
        CHECK_EQ_U64(ss_blend_source_epoch(b, (uint32_t)j), count[j] / SIZES[j]);
    }
    CHECK_EQ_U64(ss_blend_position(b), TOTAL);
    /* the two epochs of source 3 (size 7) differ: shuffled per epoch */
    CHECK(ss_blend_source_epoch(b, 3) > 2);
    ss_blend_free(b);

    /* the same seed gives the same stream; another seed another order */
    b = make(1, 0, 1, 0, 99);
    ss_blend *o = make(1, 0, 1, 0, 100);
    int differs = 0;
    for (uint64_t n = 0; n < 5000; n++) {
        uint32_t j, j2;
        uint64_t i, i2;
        CHECK_OK(ss_blend_next(&j, &i, b));
        CHECK_OK(ss_blend_next(&j2, &i2, o));
        CHECK(j == src[n] && i == idx[n] && j2 == j); /* sources follow the weights only */
        differs |= i2 != i;
    }
    CHECK(differs);
    ss_blend_free(o);

    /* save mid-blend, resume in a fresh blend: the same continuation */
    unsigned char state[256];
    size_t len;
    CHECK_RC(ss_blend_state_save(state, 8, &len, b), SS_EBUFS);
    CHECK_EQ_U64(len, ss_blend_state_size(b));
    CHECK_EQ_U64(ss_blend_state_size(NULL), 0);
    CHECK_EQ_U64(len, 8 * (K + 3));
    CHECK_OK(ss_blend_state_save(state, sizeof state, &len, b));
    ss_blend *r = make(1, 0, 1, 0, 99);
    CHECK_OK(ss_blend_state_load(r, state, len));
    for (uint64_t n = 5000; n < 20000; n++) {
        uint32_t j;
        uint64_t i;
        CHECK_OK(ss_blend_next(&j, &i, r));
        CHECK(j == src[n] && i == idx[n]);
    }
    ss_blend *other = make(1, 0, 1, 0, 7); /* other options: refused, unchanged */
    CHECK_RC(ss_blend_state_load(other, state, len), SS_EINVAL);
    CHECK_CONTAINS(ss_error_message(), "other options");
    CHECK_RC(ss_blend_state_load(r, state, len - 8), SS_EINVAL);
    state[24] ^= 1; /* c_0 no longer adds up (the fingerprint still matches) */
    CHECK_RC(ss_blend_state_load(b, state, len), SS_EINVAL);
    ss_blend_free(other);
    ss_blend_free(r);
    ss_blend_free(b);

    /* R x W consumers: consumer (rank, worker) reads global samples
     * n = rank + R * worker (mod R * W), in order */
    const uint32_t conf[3][2] = {{2, 1}, {1, 3}, {2, 2}};
    for (int c = 0; c < 3; c++) {
        uint32_t R = conf[c][0], Wk = conf[c][1];
        for (uint32_t rank = 0; rank < R; rank++)
            for (uint32_t w = 0; w < Wk; w++) {
                ss_blend *x = make(R, rank, Wk, w, 99);
                for (uint64_t n = rank + (uint64_t)R * w; n < 30000; n += (uint64_t)R * Wk) {
                    uint32_t j;
                    uint64_t i;
                    CHECK_OK(ss_blend_next(&j, &i, x));
                    CHECK(j == src[n] && i == idx[n]);
                }
                ss_blend_free(x);
            }
    }

    /* bad options */
    ss_blend_options bad = SS_BLEND_OPTIONS_INIT;
    double w0[2] = {1, 0};
    uint64_t s0[2] = {3, 3};
    bad.nsources = 2, bad.weights = w0, bad.sizes = s0;
    CHECK_RC(ss_blend_create(&b, &bad), SS_EINVAL);
    CHECK_CONTAINS(ss_error_message(), "weight 1 is 0");
    w0[1] = 1, s0[0] = 0;
    CHECK_RC(ss_blend_create(&b, &bad), SS_EINVAL);
    CHECK_CONTAINS(ss_error_message(), "source 0 is empty");
    s0[0] = 3, bad.world_size = 2, bad.rank = 2;
    CHECK_RC(ss_blend_create(&b, &bad), SS_EINVAL);
    CHECK(b == NULL);
    puts("ok");
    return 0;
}
