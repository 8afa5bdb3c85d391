/* SPDX-License-Identifier: BSD-2-Clause */
/* test_sampler.c - samplers: orders against naive models, sharding covers and
 * is disjoint, elastic determinism of global steps, resume equals
 * uninterrupted, replacement/weighted distributions, block shuffle, errors. */
#include "testutil.h"
#include "rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Drain one epoch of `s` into out (cap entries); returns the count. */
static uint64_t drain(ss_sampler *s, uint64_t *out, uint64_t cap) {
    uint64_t k = 0;
    size_t n;
    do {
        size_t want = (size_t)(cap - k < 7 ? cap - k : 7); /* odd chunk size on purpose */
        int rc = ss_sampler_next(out + k, want, &n, s);
        if (rc != SS_ITEROVER) CHECK_OK(rc);
        CHECK((rc == SS_ITEROVER) == (n == 0 && want > 0));
        k += n;
    } while (n && k < cap);
    return k;
}

/* The documented keyed bijection (spec/SDK_SECTIONS.md), written plainly:
 * a balanced Feistel network on the smallest even number of bits >= 2 that
 * holds n (6 rounds, 12 on halves of at most 3 bits), round i XORing the top
 * bits of the SplitMix64 finalizer of r ^ (key + i * golden), walked until
 * the value is below n. */
static uint64_t finalizer(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t naive_bijection(uint64_t x, uint64_t n, uint64_t key) {
    if (n < 2) return x;
    unsigned bits = 2;
    while ((1ull << bits) < n) bits += 2;
    uint64_t half = bits / 2, mask = (1ull << half) - 1, rounds = half <= 3 ? 12 : 6;
    do {
        uint64_t l = x >> half, r = x & mask;
        for (uint64_t i = 0; i < rounds; i++) {
            uint64_t f = finalizer(r ^ (key + i * 0x9E3779B97F4A7C15ull)) >> (64 - half);
            uint64_t nl = r, nr = l ^ f;
            l = nl;
            r = nr;
        }
        x = (l << half) | r;
    } while (x >= n);
    return x;
}

/* Shuffle a[0..n) as the samplers do with the decision's seed argument and
 * stream tag: position i takes a[perm(i)], perm keyed by H(seed_arg, tag, 0). */
static void naive_shuffle(uint64_t *a, uint64_t n, uint64_t seed_arg, uint64_t tag) {
    uint64_t *t = malloc((n ? n : 1) * sizeof *t), key = ss__rng_hash(seed_arg, tag, 0);
    for (uint64_t i = 0; i < n; i++) t[i] = a[naive_bijection(i, n, key)];
    memcpy(a, t, n * sizeof *t);
    free(t);
}

static void test_bijection(void) {
    /* A bijection of [0, n) for every size, its inverse, and the documented
     * construction; sizes around powers of 4 (where the walk is longest). */
    const uint64_t sizes[] = {1, 2, 3, 4, 5, 15, 16, 17, 63, 64, 65, 1000, 4097, 65537};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        uint64_t n = sizes[k], key = ss__rng_hash(7, k, 0);
        unsigned char *seen = calloc(n, 1);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t y = ss__rng_permute(i, n, key);
            CHECK(y < n);
            CHECK(!seen[y]);
            seen[y] = 1;
            CHECK_EQ_U64(y, naive_bijection(i, n, key));
            CHECK_EQ_U64(ss__rng_unpermute(y, n, key), i);
        }
        free(seen);
    }
    /* Large sizes: no table, any element alone. */
    uint64_t big = 1000000000000ull, key = 12345;
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t x = i * 999999937ull % big, y = ss__rng_permute(x, big, key);
        CHECK(y < big);
        CHECK_EQ_U64(y, naive_bijection(x, big, key));
        CHECK_EQ_U64(ss__rng_unpermute(y, big, key), x);
    }
    /* Shuffle quality for a small n: over 20,000 keys each element lands at
     * each position with frequency 1/n (chi-square over the 10 x 10 table;
     * 81 degrees of freedom, 99.9% quantile 126), and adjacent pairs are as
     * often ascending as descending. */
    enum { N = 10, KEYS = 20000 };
    static uint64_t count[N][N];
    uint64_t asc = 0;
    for (uint64_t k = 0; k < KEYS; k++) {
        uint64_t key2 = ss__rng_hash(99, k, 0);
        for (uint64_t i = 0; i < N; i++) count[i][ss__rng_permute(i, N, key2)]++;
        asc += ss__rng_permute(0, N, key2) < ss__rng_permute(1, N, key2);
    }
    double chi = 0, e = (double)KEYS / N;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) chi += ((double)count[i][j] - e) * ((double)count[i][j] - e) / e;
    CHECK(chi < 126);
    CHECK(asc > KEYS / 2 - 300 && asc < KEYS / 2 + 300); /* sd 71 */
}

/* A sampler's memory does not grow with the selection: one over 10^12
 * examples (its permutation alone would be 8 TB) is made at once and gives
 * rank 3 of 8 the documented positions; its state saves and restores at any
 * epoch and position without recomputing the epoch. */
static void test_huge_selection(void) {
    const uint64_t N = 1000000000000ull, b = 256, R = 8, r = 3;
    ss_selection *sel;
    CHECK_OK(ss_selection_all(&sel, N));
    for (int kind = 0; kind < 2; kind++) {
        ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
        o.kind = kind ? SS_SAMPLE_BLOCK_SHUFFLE : SS_SAMPLE_SHUFFLE;
        o.seed = 5;
        o.world_size = (uint32_t)R;
        o.rank = (uint32_t)r;
        o.batch_size = b;
        ss_sampler *s;
        CHECK_OK(ss_sampler_create(&s, sel, &o));
        CHECK_EQ_U64(ss_sampler_epoch_length(s), N / R); /* 2048 divides 10^12 */
        CHECK_OK(ss_sampler_set_epoch(s, 7));
        uint64_t got[256], again[256];
        size_t n;
        CHECK_OK(ss_sampler_next(got, b, &n, s)); /* global step 0 */
        CHECK_EQ_U64(n, b);
        uint64_t key = ss__rng_hash(ss__rng_hash(5, 7, 0), 0x73687566ull, 0);
        for (uint64_t j = 0; j < b; j++) {
            CHECK(got[j] < N);
            if (!kind) CHECK_EQ_U64(got[j], naive_bijection(r + R * j, N, key));
            for (uint64_t i = 0; i < j; i++) CHECK(got[i] != got[j]);
        }
        /* Far into the epoch: save, restore into a fresh sampler, compare. */
        CHECK_OK(ss_sampler_set_epoch(s, 1000000));
        for (int k = 0; k < 3; k++) CHECK_OK(ss_sampler_next(got, b, &n, s));
        unsigned char st[64];
        size_t len;
        CHECK_OK(ss_sampler_state_save(st, sizeof st, &len, s));
        CHECK_OK(ss_sampler_next(got, b, &n, s));
        ss_sampler *t;
        CHECK_OK(ss_sampler_create(&t, sel, &o));
        CHECK_OK(ss_sampler_state_load(t, st, len));
        CHECK_OK(ss_sampler_next(again, b, &n, t));
        CHECK(memcmp(got, again, sizeof got) == 0);
        ss_sampler_free(t);
        ss_sampler_free(s);
    }
    ss_selection_free(sel);
}

/* States of seqstore 0.3's samplers (version 1): the kinds whose order is
 * unchanged resume; SHUFFLE and BLOCK_SHUFFLE, whose orders changed, are
 * refused with the reason. */
static void test_version1_states(void) {
    ss_selection *sel;
    CHECK_OK(ss_selection_all(&sel, 100));
    const ss_sampler_kind kinds[] = {SS_SAMPLE_SEQUENTIAL, SS_SAMPLE_REPLACEMENT,
                                     SS_SAMPLE_SHUFFLE, SS_SAMPLE_BLOCK_SHUFFLE};
    for (int k = 0; k < 4; k++) {
        ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
        o.kind = kinds[k];
        o.seed = 3;
        ss_sampler *s;
        CHECK_OK(ss_sampler_create(&s, sel, &o));
        uint64_t got[8], again[8];
        size_t n;
        CHECK_OK(ss_sampler_next(got, 5, &n, s));
        unsigned char st[48];
        CHECK_OK(ss_sampler_state_save(st, sizeof st, NULL, s));
        CHECK_EQ_U64(st[8], 2); /* this version */
        st[8] = 1;              /* as 0.3 wrote it: the same fields and fingerprint */
        CHECK_OK(ss_sampler_next(got, 8, &n, s));
        ss_sampler *t;
        CHECK_OK(ss_sampler_create(&t, sel, &o));
        if (k < 2) {
            CHECK_OK(ss_sampler_state_load(t, st, sizeof st));
            CHECK_OK(ss_sampler_next(again, 8, &n, t));
            CHECK(memcmp(got, again, sizeof got) == 0);
        } else {
            CHECK_RC(ss_sampler_state_load(t, st, sizeof st), SS_EINVAL);
            CHECK(strstr(ss_error_message(), "seqstore 0.3") != NULL);
            CHECK(strstr(ss_error_message(), "cannot resume exactly") != NULL);
        }
        ss_sampler_free(t);
        ss_sampler_free(s);
    }
    ss_selection_free(sel);
}

static void test_sequential_and_golden(void) {
    ss_selection *sel;
    CHECK_OK(ss_selection_parse(&sel, "2:5,8:10", 12));
    ss_sampler *s;
    CHECK_OK(ss_sampler_create(&s, sel, NULL));
    uint64_t got[16];
    CHECK_EQ_U64(drain(s, got, 16), 5);
    uint64_t want[5] = {2, 3, 4, 8, 9};
    CHECK(memcmp(got, want, sizeof want) == 0);
    size_t n = 99;
    CHECK_RC(ss_sampler_next(got, 4, &n, s), SS_ITEROVER); /* end of epoch stays at end */
    CHECK_EQ_U64(n, 0);
    CHECK_RC(ss_sampler_next(got, 4, &n, s), SS_ITEROVER);
    CHECK_OK(ss_sampler_next(got, 0, &n, s)); /* nothing asked: not an end */
    CHECK_EQ_U64(n, 0);
    CHECK_OK(ss_sampler_set_epoch(s, 1));
    CHECK_EQ_U64(drain(s, got, 16), 5);
    ss_sampler_free(s);
    ss_selection_free(sel);

    /* Shuffle against the documented bijection on the documented stream;
     * and golden values so that a change of the RNG or of the bijection
     * (which would change every user's shuffles) cannot go unnoticed. */
    CHECK_OK(ss_selection_all(&sel, 10));
    ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
    o.kind = SS_SAMPLE_SHUFFLE;
    o.seed = 42;
    CHECK_OK(ss_sampler_create(&s, sel, &o));
    for (uint64_t epoch = 0; epoch < 3; epoch++) {
        CHECK_OK(ss_sampler_set_epoch(s, epoch));
        CHECK_EQ_U64(drain(s, got, 16), 10);
        uint64_t naive[10];
        for (int i = 0; i < 10; i++) naive[i] = (uint64_t)i;
        naive_shuffle(naive, 10, ss__rng_hash(42, epoch, 0), 0x73687566ull);
        CHECK(memcmp(got, naive, sizeof naive) == 0);
        if (epoch == 0) {
            const uint64_t golden[10] = {0, 6, 8, 1, 5, 7, 2, 3, 9, 4};
            CHECK(memcmp(got, golden, sizeof golden) == 0);
        }
    }
    ss_sampler_free(s);
    ss_selection_free(sel);
    /* The RNG itself: fixed outputs. */
    ss_rng r;
    ss__rng_seed(&r, 1, 2);
    CHECK_EQ_U64(ss__rng_next(&r), 7845269240308913525ull);
    CHECK_EQ_U64(ss__rng_hash(1, 2, 3), 11741251387263009449ull);
}

/* Run every (rank, worker) consumer for one epoch and return the global
 * steps: step k holds B store indices (sorted). steps_out[k*B ..]. */
static uint64_t run_consumers(const ss_selection *sel, ss_sampler_options o, uint64_t global_b,
                              uint64_t epoch, uint64_t *steps_out, uint64_t cap_steps) {
    uint64_t R = o.world_size, W = o.num_workers, b = global_b / R;
    o.batch_size = b;
    uint64_t nsteps = 0;
    uint64_t *filled = calloc(cap_steps, sizeof *filled);
    uint64_t *buf = malloc(b * sizeof *buf);
    for (uint32_t r = 0; r < R; r++) {
        uint64_t rank_batches = 0;
        for (uint32_t w = 0; w < W; w++) {
            o.rank = r;
            o.worker = w;
            ss_sampler *s;
            CHECK_OK(ss_sampler_create(&s, sel, &o));
            CHECK_OK(ss_sampler_set_epoch(s, epoch));
            nsteps = ss_sampler_steps_per_epoch(s);
            CHECK(nsteps <= cap_steps);
            CHECK_EQ_U64(ss_sampler_epoch_length(s) % b, 0);
            for (uint64_t kk = 0;; kk++) {
                size_t n;
                int rc = ss_sampler_next(buf, (size_t)b, &n, s);
                if (rc == SS_ITEROVER && n == 0) break;
                CHECK_OK(rc);
                CHECK_EQ_U64(n, b); /* whole batches only */
                uint64_t k = kk * W + w;
                CHECK(k < nsteps);
                for (uint64_t j = 0; j < b; j++) steps_out[k * global_b + filled[k]++] = buf[j];
                rank_batches++;
            }
            ss_sampler_free(s);
        }
        CHECK_EQ_U64(rank_batches, nsteps); /* every rank: the same number of batches */
    }
    for (uint64_t k = 0; k < nsteps; k++) {
        CHECK_EQ_U64(filled[k], global_b);
        qsort(steps_out + k * global_b, (size_t)global_b, sizeof(uint64_t), cmp_u64);
    }
    free(filled);
    free(buf);
    return nsteps;
}

/* The documented interleaving, by hand: N = 12, R = 2, b = 3, W = 2.
 * Step k = positions [6k, 6k+6); rank r takes 6k + r + 2j; worker k mod 2. */
static void test_interleave_hand(void) {
    ss_selection *sel;
    CHECK_OK(ss_selection_all(&sel, 12));
    const uint64_t want[2][2][3] = {{{0, 2, 4}, {6, 8, 10}}, {{1, 3, 5}, {7, 9, 11}}};
    for (uint32_t r = 0; r < 2; r++) {
        for (uint32_t w = 0; w < 2; w++) {
            ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
            o.world_size = 2;
            o.rank = r;
            o.num_workers = 2;
            o.worker = w;
            o.batch_size = 3;
            ss_sampler *s;
            CHECK_OK(ss_sampler_create(&s, sel, &o));
            CHECK_EQ_U64(ss_sampler_steps_per_epoch(s), 2);
            CHECK_EQ_U64(ss_sampler_epoch_length(s), 3);
            uint64_t got[8];
            CHECK_EQ_U64(drain(s, got, 8), 3);
            for (int j = 0; j < 3; j++) CHECK_EQ_U64(got[j], want[r][w][j]);
            ss_sampler_free(s);
        }
    }
    /* Padding: N = 12, R = 1, b = 5: 3 steps, positions 12..14 repeat 0..2. */
    ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
    o.batch_size = 5;
    ss_sampler *s;
    CHECK_OK(ss_sampler_create(&s, sel, &o));
    uint64_t got[16];
    CHECK_EQ_U64(drain(s, got, 16), 15);
    CHECK(got[12] == 0 && got[13] == 1 && got[14] == 2);
    ss_sampler_free(s);
    o.drop_last = 1;
    CHECK_OK(ss_sampler_create(&s, sel, &o));
    CHECK_EQ_U64(drain(s, got, 16), 10);
    ss_sampler_free(s);
    ss_selection_free(sel);
}

static void test_sharding_elastic(void) {
    uint64_t rng = 3;
    for (int round = 0; round < 40; round++) {
        uint64_t total = 1 + ss_test_rand(&rng) % 400;
        ss_selection *sel;
        char text[64];
        snprintf(text, sizeof text, "%llu:", (unsigned long long)(ss_test_rand(&rng) % total));
        CHECK_OK(ss_selection_parse(&sel, text, total));
        uint64_t N = ss_selection_count(sel);
        ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
        o.kind = round % 3 == 0   ? SS_SAMPLE_SEQUENTIAL
                 : round % 3 == 1 ? SS_SAMPLE_SHUFFLE
                                  : SS_SAMPLE_BLOCK_SHUFFLE;
        if (o.kind == SS_SAMPLE_BLOCK_SHUFFLE) { /* refused with other kinds */
            o.block_size = 5;
            o.window_blocks = 2;
        }
        o.seed = (uint64_t)round;
        o.drop_last = round % 2;
        const uint64_t GB = 12; /* global batch */
        uint64_t cap = N / GB + 2;
        uint64_t *ref = malloc(cap * GB * sizeof *ref), *alt = malloc(cap * GB * sizeof *alt);
        o.world_size = 1;
        o.num_workers = 1;
        uint64_t S = run_consumers(sel, o, GB, 1, ref, cap);
        CHECK_EQ_U64(S, o.drop_last ? N / GB : (N + GB - 1) / GB);
        /* Cover and disjoint: the steps hold each selected example once
         * (plus, when padding, repeats filling the last step). */
        uint64_t *all = malloc((S * GB + 1) * sizeof *all);
        memcpy(all, ref, S * GB * sizeof *all);
        qsort(all, (size_t)(S * GB), sizeof *all, cmp_u64);
        uint64_t distinct = 0;
        for (uint64_t i = 0; i < S * GB; i++) {
            CHECK(ss_selection_contains(sel, all[i]));
            distinct += i == 0 || all[i] != all[i - 1];
        }
        CHECK_EQ_U64(distinct, o.drop_last ? S * GB : N);
        free(all);
        /* Elastic: the same steps with other rank/worker layouts. */
        const uint32_t layouts[][2] = {{2, 1}, {2, 3}, {3, 2}, {4, 1}, {6, 5}, {12, 1}};
        for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
            o.world_size = layouts[l][0];
            o.num_workers = layouts[l][1];
            CHECK_EQ_U64(run_consumers(sel, o, GB, 1, alt, cap), S);
            CHECK(memcmp(ref, alt, S * GB * sizeof *ref) == 0);
        }
        free(ref);
        free(alt);
        ss_selection_free(sel);
    }
}

/* Resume: save after m indices, restore into a fresh sampler, compare with
 * an uninterrupted run over several epochs (infinite mode). */
static void test_resume(void) {
    ss_selection *sel;
    CHECK_OK(ss_selection_parse(&sel, "0:50,60:117", 200));
    ss_sampler_kind kinds[] = {SS_SAMPLE_SEQUENTIAL, SS_SAMPLE_SHUFFLE, SS_SAMPLE_REPLACEMENT,
                               SS_SAMPLE_WEIGHTED, SS_SAMPLE_BLOCK_SHUFFLE};
    double *w = malloc(ss_selection_count(sel) * sizeof *w);
    for (uint64_t i = 0; i < ss_selection_count(sel); i++) w[i] = (double)(i % 5);
    for (size_t kd = 0; kd < 5; kd++) {
        ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
        o.kind = kinds[kd];
        o.seed = 99;
        o.world_size = 3;
        o.rank = 1;
        o.num_workers = 2;
        o.worker = 1;
        o.batch_size = 4;
        o.infinite = 1;
        if (o.kind == SS_SAMPLE_WEIGHTED) o.weights = w; /* refused with other kinds */
        if (o.kind == SS_SAMPLE_BLOCK_SHUFFLE) o.block_size = 8;
        const uint64_t total = 200;
        uint64_t ref[200], got[200];
        ss_sampler *s;
        CHECK_OK(ss_sampler_create(&s, sel, &o));
        CHECK_OK(ss_sampler_set_epoch(s, 5));
        size_t n;
        CHECK_OK(ss_sampler_next(ref, total, &n, s));
        CHECK_EQ_U64(n, total); /* infinite: spans several epochs */
        CHECK(ss_sampler_epoch(s) > 5);
        ss_sampler_free(s);
        for (uint64_t m = 0; m < total; m += 13) {
            unsigned char blob[64];
            size_t len;
            CHECK_OK(ss_sampler_create(&s, sel, &o));
            CHECK_OK(ss_sampler_set_epoch(s, 5));
            CHECK_OK(ss_sampler_next(got, (size_t)m, &n, s));
            /* the size asked first, as the API says; a smaller buffer is SS_EBUFS */
            CHECK_EQ_U64(ss_sampler_state_size(s), 48);
            CHECK_RC(ss_sampler_state_save(blob, 47, &len, s), SS_EBUFS);
            CHECK_EQ_U64(len, 48); /* the size needed */
            CHECK_OK(ss_sampler_state_save(blob, sizeof blob, &len, s));
            CHECK_EQ_U64(len, ss_sampler_state_size(s));
            ss_sampler_free(s);
            CHECK_OK(ss_sampler_create(&s, sel, &o)); /* a "restarted job" at epoch 0 */
            CHECK_OK(ss_sampler_state_load(s, blob, len));
            CHECK_OK(ss_sampler_next(got + m, (size_t)(total - m), &n, s));
            CHECK_EQ_U64(n, total - m);
            CHECK(memcmp(got, ref, sizeof ref) == 0);
            /* A state does not load into a sampler with other options. */
            ss_sampler_options o2 = o;
            o2.seed = 100;
            ss_sampler *s2;
            CHECK_OK(ss_sampler_create(&s2, sel, &o2));
            CHECK_RC(ss_sampler_state_load(s2, blob, len), SS_EINVAL);
            o2 = o;
            o2.rank = 2;
            ss_sampler_free(s2);
            CHECK_OK(ss_sampler_create(&s2, sel, &o2));
            CHECK_RC(ss_sampler_state_load(s2, blob, len), SS_EINVAL);
            CHECK_RC(ss_sampler_state_load(s2, blob, len - 1), SS_EINVAL);
            ss_sampler_free(s2);
            ss_sampler_free(s);
        }
        unsigned char tiny[8];
        CHECK_OK(ss_sampler_create(&s, sel, &o));
        CHECK_RC(ss_sampler_state_save(tiny, sizeof tiny, NULL, s), SS_EBUFS);
        ss_sampler_free(s);
    }
    free(w);
    ss_selection_free(sel);
}

static void test_epochs_differ_same_seed_same(void) {
    ss_selection *sel;
    CHECK_OK(ss_selection_all(&sel, 1000));
    ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
    o.kind = SS_SAMPLE_SHUFFLE;
    o.seed = 5;
    ss_sampler *a, *b;
    CHECK_OK(ss_sampler_create(&a, sel, &o));
    CHECK_OK(ss_sampler_create(&b, sel, &o));
    uint64_t *x = malloc(1000 * sizeof *x), *y = malloc(1000 * sizeof *y);
    CHECK_EQ_U64(drain(a, x, 1000), 1000);
    CHECK_EQ_U64(drain(b, y, 1000), 1000);
    CHECK(memcmp(x, y, 1000 * sizeof *x) == 0);
    CHECK_OK(ss_sampler_set_epoch(b, 1));
    CHECK_EQ_U64(drain(b, y, 1000), 1000);
    CHECK(memcmp(x, y, 1000 * sizeof *x) != 0);
    qsort(y, 1000, sizeof *y, cmp_u64);
    for (uint64_t i = 0; i < 1000; i++) CHECK_EQ_U64(y[i], i);
    free(x);
    free(y);
    ss_sampler_free(a);
    ss_sampler_free(b);
    ss_selection_free(sel);
}

static void test_replacement_weighted(void) {
    ss_selection *sel;
    CHECK_OK(ss_selection_parse(&sel, "10:20", 30));
    ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
    o.kind = SS_SAMPLE_REPLACEMENT;
    o.num_samples = 100000;
    o.seed = 1;
    ss_sampler *s;
    CHECK_OK(ss_sampler_create(&s, sel, &o));
    CHECK_EQ_U64(ss_sampler_epoch_length(s), 100000);
    uint64_t *buf = malloc(100000 * sizeof *buf);
    CHECK_EQ_U64(drain(s, buf, 100000), 100000);
    uint64_t cnt[30] = {0};
    for (uint64_t i = 0; i < 100000; i++) {
        CHECK(buf[i] >= 10 && buf[i] < 20);
        cnt[buf[i]]++;
    }
    for (int i = 10; i < 20; i++) CHECK(cnt[i] > 9400 && cnt[i] < 10600);
    ss_sampler_free(s);

    double w[10] = {0, 1, 3, 0, 0, 0, 0, 0, 0, 6};
    o.kind = SS_SAMPLE_WEIGHTED;
    o.weights = w;
    CHECK_OK(ss_sampler_create(&s, sel, &o));
    CHECK_EQ_U64(drain(s, buf, 100000), 100000);
    memset(cnt, 0, sizeof cnt);
    for (uint64_t i = 0; i < 100000; i++) cnt[buf[i]]++;
    CHECK_EQ_U64(cnt[10] + cnt[13] + cnt[14] + cnt[15] + cnt[16] + cnt[17] + cnt[18], 0);
    CHECK(fabs((double)cnt[11] / 100000 - 0.1) < 0.01);
    CHECK(fabs((double)cnt[12] / 100000 - 0.3) < 0.01);
    CHECK(fabs((double)cnt[19] / 100000 - 0.6) < 0.01);
    ss_sampler_free(s);

    w[3] = -1;
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    w[3] = NAN;
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    double zero[10] = {0};
    o.weights = zero;
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    o.weights = NULL;
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    CHECK(s == NULL);
    free(buf);
    ss_selection_free(sel);
}

static void test_block_shuffle(void) {
    const uint64_t N = 1000, BS = 10, WB = 3;
    ss_selection *sel;
    CHECK_OK(ss_selection_all(&sel, N));
    ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
    o.kind = SS_SAMPLE_BLOCK_SHUFFLE;
    o.block_size = BS;
    o.window_blocks = WB;
    o.seed = 11;
    ss_sampler *s;
    CHECK_OK(ss_sampler_create(&s, sel, &o));
    uint64_t *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    CHECK_EQ_U64(drain(s, x, N), N);
    /* Locality: a window of WB*BS positions draws from at most WB blocks. */
    for (uint64_t w0 = 0; w0 < N; w0 += WB * BS) {
        uint64_t blocks[64], nb = 0;
        for (uint64_t p = w0; p < w0 + WB * BS && p < N; p++) {
            uint64_t blk = x[p] / BS, seen = 0;
            for (uint64_t q = 0; q < nb; q++) seen |= blocks[q] == blk;
            if (!seen) blocks[nb++] = blk;
        }
        CHECK(nb <= WB);
    }
    memcpy(y, x, N * sizeof *x);
    qsort(y, (size_t)N, sizeof *y, cmp_u64);
    for (uint64_t i = 0; i < N; i++) CHECK_EQ_U64(y[i], i); /* each exactly once */
    int moved_far = 0;
    for (uint64_t i = 0; i < N; i++) moved_far |= x[i] > i + 200 || x[i] + 200 < i;
    CHECK(moved_far);
    CHECK_OK(ss_sampler_set_epoch(s, 1));
    CHECK_EQ_U64(drain(s, y, N), N);
    CHECK(memcmp(x, y, N * sizeof *x) != 0);
    CHECK_OK(ss_sampler_set_epoch(s, 0));
    CHECK_EQ_U64(drain(s, y, N), N);
    CHECK(memcmp(x, y, N * sizeof *x) == 0);
    ss_sampler_free(s);
    /* Ragged sizes: permutation for any n and block size. */
    uint64_t rng = 17;
    for (int round = 0; round < 50; round++) {
        uint64_t n = ss_test_rand(&rng) % 300;
        ss_selection *sel2;
        CHECK_OK(ss_selection_all(&sel2, n));
        o.block_size = 1 + ss_test_rand(&rng) % 40;
        o.window_blocks = 1 + ss_test_rand(&rng) % 5;
        CHECK_OK(ss_sampler_create(&s, sel2, &o));
        CHECK_EQ_U64(drain(s, x, N), n);
        qsort(x, (size_t)n, sizeof *x, cmp_u64);
        for (uint64_t i = 0; i < n; i++) CHECK_EQ_U64(x[i], i);
        ss_sampler_free(s);
        ss_selection_free(sel2);
    }
    free(x);
    free(y);
    ss_selection_free(sel);
}

/* ---------------------------------------------- block shuffle, naive model */

/* Bytes of example i of the test store: field "tok" u16 x 3 per step, field
 * "label" u32 fixed, written by hand (not through ss_field_row_bytes). */
static uint64_t tok_len(uint64_t i) {
    return (i * 7919 + 13) % 41; /* 0..40 */
}

static uint64_t ex_bytes(uint64_t i) {
    return tok_len(i) * 2 * 3 + 4;
}

static const char *make_block_store(uint64_t n) {
    const char *path = ss_test_path("blocks.ss");
    ss_field f[2] = {{"tok", SS_U16, 1, 1, {3}}, {"label", SS_U32, 0, 0, {0}}};
    ss_schema sc = {2, f};
    ss_writer *w;
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_FORCE;
    CHECK_OK(ss_writer_create(&w, path, &sc, &wo));
    static uint16_t tok[41 * 3];
    for (uint64_t i = 0; i < n; i++) {
        uint32_t label = (uint32_t)i;
        ss_value v[2] = {{tok, tok_len(i)}, {&label, 1}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    return path;
}


/* The documented block shuffle, written plainly: `flat` holds the store
 * indices of the grouped order (ng groups, group g = flat[gb[g] .. gb[g+1]),
 * non-empty); blocks of bs examples, or greedily of <= bb bytes when bb > 0;
 * per group the block order is shuffled ("blks", H(seed, epoch, g)); windows
 * of M blocks inside a group, numbered over the epoch, are shuffled ("wind",
 * H(seed, epoch, w)). Also returns the block number of each store index. */
static void naive_block_order(uint64_t *out, const uint64_t *flat, const uint64_t *gb, uint64_t ng,
                              uint64_t bs, uint64_t bb, uint64_t M, uint64_t seed, uint64_t epoch,
                              uint64_t *block_of, uint64_t *nblocks) {
    uint64_t n = gb[ng];
    uint64_t *bstart = malloc((n + 1) * sizeof *bstart),
             *gfirst = malloc((ng + 1) * sizeof *gfirst);
    uint64_t nb = 0;
    for (uint64_t g = 0; g < ng; g++) {
        gfirst[g] = nb;
        uint64_t p = gb[g];
        while (p < gb[g + 1]) {
            bstart[nb++] = p;
            if (bb) {
                uint64_t acc = 0, first = p;
                while (p < gb[g + 1] && (p == first || acc + ex_bytes(flat[p]) <= bb))
                    acc += ex_bytes(flat[p++]);
            } else {
                p = p + bs < gb[g + 1] ? p + bs : gb[g + 1];
            }
        }
    }
    gfirst[ng] = nb;
    bstart[nb] = n;
    for (uint64_t b = 0; b < nb; b++)
        for (uint64_t p = bstart[b]; p < bstart[b + 1]; p++) block_of[flat[p]] = b;
    *nblocks = nb;
    uint64_t *ids = malloc((nb + 1) * sizeof *ids), *tmp = malloc((n + 1) * sizeof *tmp);
    uint64_t k = 0, w = 0;
    for (uint64_t g = 0; g < ng; g++) {
        uint64_t m = gfirst[g + 1] - gfirst[g];
        for (uint64_t i = 0; i < m; i++) ids[i] = gfirst[g] + i;
        naive_shuffle(ids, m, ss__rng_hash(seed, epoch, g), 0x626c6b73ull);
        for (uint64_t i = 0; i < m; i += M, w++) {
            uint64_t t = 0;
            for (uint64_t j = i; j < i + M && j < m; j++)
                for (uint64_t p = bstart[ids[j]]; p < bstart[ids[j] + 1]; p++) tmp[t++] = flat[p];
            naive_shuffle(tmp, t, ss__rng_hash(seed, epoch, w), 0x77696e64ull);
            memcpy(out + k, tmp, t * sizeof *tmp);
            k += t;
        }
    }
    CHECK_EQ_U64(k, n);
    free(bstart);
    free(gfirst);
    free(ids);
    free(tmp);
}

/* Check the documented properties of a block-shuffled order directly: each
 * selected example once; the examples of a block are in one window, and a
 * window (a run of consecutive positions between window boundaries) holds at
 * most M blocks. Windows are recovered from the order: a new window starts
 * where the set of blocks seen so far is complete and a new block begins. */
static void check_block_props(const uint64_t *order, uint64_t n, const uint64_t *block_of,
                              uint64_t nblocks, const uint64_t *bsize, uint64_t M) {
    uint64_t *left = malloc((nblocks + 1) * sizeof *left);
    memcpy(left, bsize, nblocks * sizeof *left);
    uint64_t open = 0, in_window = 0;
    for (uint64_t p = 0; p < n; p++) {
        uint64_t b = block_of[order[p]];
        CHECK(left[b] > 0);        /* each example once */
        if (left[b] == bsize[b]) { /* first example of block b */
            if (open == 0) in_window = 0;
            in_window++;
            open++;
            CHECK(in_window <= M);
        }
        if (--left[b] == 0) open--;
    }
    for (uint64_t b = 0; b < nblocks; b++) CHECK_EQ_U64(left[b], 0);
    free(left);
}

static void test_block_bytes_and_buckets(void) {
    const uint64_t N = 600;
    const char *path = make_block_store(N);
    ss_store *st;
    CHECK_OK(ss_open(&st, path, 0));
    ss_selection *sel;
    CHECK_OK(ss_selection_parse(&sel, "3:250,260:261,300:597", N));
    uint64_t ns = ss_selection_count(sel);
    uint32_t key = 0;
    ss_bucket *bk;
    ss_bucket_options bo = SS_BUCKET_OPTIONS_INIT;
    bo.resolution = 8;
    CHECK_OK(ss_bucket_create(&bk, st, &key, 1, &bo));
    uint64_t *flat = malloc(ns * sizeof *flat), *gb = malloc((N + 2) * sizeof *gb);
    uint64_t *want = malloc(ns * sizeof *want), *got = malloc((ns + 8) * sizeof *got);
    uint64_t *block_of = malloc(N * sizeof *block_of), *bsize = malloc((N + 1) * sizeof *bsize);
    for (int mode = 0; mode < 4; mode++) { /* bit 0: bytes; bit 1: buckets */
        /* The grouped order, by hand. */
        uint64_t ng = 0, k = 0;
        if (mode & 2) {
            const uint64_t *bp = ss_bucket_permutation(bk), *bs = ss_bucket_starts(bk);
            for (uint64_t q = 0; q < ss_bucket_count(bk); q++) {
                uint64_t first = k;
                for (uint64_t i = bs[q]; i < bs[q + 1]; i++)
                    if (ss_selection_contains(sel, bp[i])) flat[k++] = bp[i];
                qsort(flat + first, (size_t)(k - first), sizeof *flat, cmp_u64);
                if (k > first) gb[ng++] = first;
            }
        } else {
            for (uint64_t i = 0; i < ns; i++) CHECK_OK(ss_selection_index(&flat[k++], sel, i));
            gb[ng++] = 0;
        }
        gb[ng] = k;
        CHECK_EQ_U64(k, ns);
        for (int round = 0; round < 6; round++) {
            ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
            o.kind = SS_SAMPLE_BLOCK_SHUFFLE;
            o.seed = 1000 + (uint64_t)round;
            o.block_size = 1 + (uint64_t)round * 7;
            o.window_blocks = 1 + (uint64_t)round % 4;
            o.block_bytes = mode & 1 ? 100 + (uint64_t)round * 300 : 0;
            o.store = st;
            o.bucket = mode & 2 ? bk : NULL;
            uint64_t epoch = (uint64_t)round % 3, nblocks;
            naive_block_order(want, flat, gb, ng, o.block_size, o.block_bytes, o.window_blocks,
                              o.seed, epoch, block_of, &nblocks);
            ss_sampler *s;
            CHECK_OK(ss_sampler_create(&s, sel, &o));
            CHECK_OK(ss_sampler_set_epoch(s, epoch));
            CHECK_EQ_U64(drain(s, got, ns + 8), ns);
            CHECK(memcmp(got, want, ns * sizeof *got) == 0);
            ss_sampler_free(s);
            /* Properties, checked on the order itself. */
            memset(bsize, 0, (nblocks + 1) * sizeof *bsize);
            for (uint64_t i = 0; i < ns; i++) bsize[block_of[flat[i]]]++;
            check_block_props(got, ns, block_of, nblocks, bsize, o.window_blocks);
            /* Blocks by bytes: within the budget unless a single example,
             * and maximal (the next example of the group would not fit). */
            for (uint64_t g = 0, p = 0; (mode & 1) && g < ng; g++) {
                for (p = gb[g]; p < gb[g + 1];) {
                    uint64_t b = block_of[flat[p]], acc = 0, m = 0;
                    for (; p < gb[g + 1] && block_of[flat[p]] == b; p++, m++)
                        acc += ex_bytes(flat[p]);
                    CHECK(acc <= o.block_bytes || m == 1);
                    if (p < gb[g + 1]) CHECK(acc + ex_bytes(flat[p]) > o.block_bytes);
                }
            }
            /* Buckets ascending: the bucket of consecutive positions never
             * decreases; blocks stay inside buckets. */
            if (mode & 2) {
                for (uint64_t p = 1; p < ns; p++) {
                    uint64_t a = tok_len(got[p - 1]) / 8, c = tok_len(got[p]) / 8;
                    CHECK(a <= c);
                }
            }
        }
    }
    /* Elastic determinism and resume with bytes + buckets. */
    ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
    o.kind = SS_SAMPLE_BLOCK_SHUFFLE;
    o.seed = 3;
    o.block_bytes = 700;
    o.window_blocks = 3;
    o.store = st;
    o.bucket = bk;
    const uint64_t GB = 12, cap = ns / GB + 2;
    uint64_t *ref = malloc(cap * GB * sizeof *ref), *alt = malloc(cap * GB * sizeof *alt);
    uint64_t S = run_consumers(sel, o, GB, 2, ref, cap);
    const uint32_t layouts[][2] = {{2, 1}, {3, 2}, {4, 3}};
    for (size_t l = 0; l < 3; l++) {
        o.world_size = layouts[l][0];
        o.num_workers = layouts[l][1];
        CHECK_EQ_U64(run_consumers(sel, o, GB, 2, alt, cap), S);
        CHECK(memcmp(ref, alt, S * GB * sizeof *ref) == 0);
    }
    free(ref);
    free(alt);
    o.world_size = 2;
    o.rank = 1;
    o.num_workers = 1;
    o.worker = 0;
    o.batch_size = 5;
    o.infinite = 1;
    uint64_t total = 3 * ns, *r1 = malloc(total * sizeof *r1), *r2 = malloc(total * sizeof *r2);
    ss_sampler *s;
    size_t n;
    CHECK_OK(ss_sampler_create(&s, sel, &o));
    CHECK_OK(ss_sampler_next(r1, (size_t)total, &n, s));
    ss_sampler_free(s);
    for (uint64_t m = 0; m < total; m += 97) {
        unsigned char blob[64];
        size_t len;
        CHECK_OK(ss_sampler_create(&s, sel, &o));
        CHECK_OK(ss_sampler_next(r2, (size_t)m, &n, s));
        CHECK_OK(ss_sampler_state_save(blob, sizeof blob, &len, s));
        ss_sampler_free(s);
        CHECK_OK(ss_sampler_create(&s, sel, &o));
        CHECK_OK(ss_sampler_state_load(s, blob, len));
        CHECK_OK(ss_sampler_next(r2 + m, (size_t)(total - m), &n, s));
        CHECK(memcmp(r1, r2, total * sizeof *r1) == 0);
        ss_sampler_free(s);
        /* Not into a sampler whose blocks are cut differently. */
        ss_sampler_options o2 = o;
        o2.block_bytes = 701;
        CHECK_OK(ss_sampler_create(&s, sel, &o2));
        CHECK_RC(ss_sampler_state_load(s, blob, len), SS_EINVAL);
        ss_sampler_free(s);
        o2 = o;
        o2.bucket = NULL;
        CHECK_OK(ss_sampler_create(&s, sel, &o2));
        CHECK_RC(ss_sampler_state_load(s, blob, len), SS_EINVAL);
        ss_sampler_free(s);
    }
    free(r1);
    free(r2);
    /* Errors: bytes without a store; a store or index of another size. */
    o = (ss_sampler_options)SS_SAMPLER_OPTIONS_INIT;
    o.kind = SS_SAMPLE_BLOCK_SHUFFLE;
    o.block_bytes = 10;
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "store"));
    ss_selection *other;
    CHECK_OK(ss_selection_all(&other, N + 1));
    o.store = st;
    CHECK_RC(ss_sampler_create(&s, other, &o), SS_EINVAL);
    o.block_bytes = 0;
    o.bucket = bk;
    CHECK_RC(ss_sampler_create(&s, other, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "bucket"));
    ss_selection_free(other);
    /* Version 1 options (the struct ending at window_blocks) still work and
     * give the same order as version 2 without the new fields. */
    ss_sampler_options v1 = SS_SAMPLER_OPTIONS_INIT;
    v1.version = 1;
    v1.kind = SS_SAMPLE_BLOCK_SHUFFLE;
    v1.block_size = 9;
    v1.store = (const ss_store *)8; /* beyond a v1 struct: must be ignored */
    v1.bucket = (const ss_bucket *)8;
    ss_sampler_options v2 = v1;
    v2.version = SS_SAMPLER_OPTIONS_VERSION;
    v2.store = NULL;
    v2.bucket = NULL;
    CHECK_OK(ss_sampler_create(&s, sel, &v1));
    CHECK_EQ_U64(drain(s, got, ns + 8), ns);
    ss_sampler_free(s);
    CHECK_OK(ss_sampler_create(&s, sel, &v2));
    CHECK_EQ_U64(drain(s, want, ns + 8), ns);
    ss_sampler_free(s);
    CHECK(memcmp(got, want, ns * sizeof *got) == 0);
    free(flat);
    free(gb);
    free(want);
    free(got);
    free(block_of);
    free(bsize);
    ss_bucket_free(bk);
    ss_selection_free(sel);
    ss_close(st);
}

static void test_errors_and_lengths(void) {
    ss_selection *sel;
    CHECK_OK(ss_selection_all(&sel, 10));
    ss_sampler *s = (ss_sampler *)1;
    ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
    o.world_size = 2;
    o.rank = 2;
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    CHECK(s == NULL);
    CHECK(strstr(ss_error_message(), "rank"));
    o.rank = 0;
    o.num_workers = 2;
    o.worker = 5;
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    o.worker = 0;
    o.kind = (ss_sampler_kind)77;
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    o.kind = SS_SAMPLE_SEQUENTIAL;
    o.version = 99;
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    /* Fields a kind does not use are refused, never silently ignored. */
    double w10[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    o = (ss_sampler_options)SS_SAMPLER_OPTIONS_INIT;
    o.num_samples = 5; /* SEQUENTIAL draws no samples */
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "num_samples"));
    o = (ss_sampler_options)SS_SAMPLER_OPTIONS_INIT;
    o.kind = SS_SAMPLE_SHUFFLE;
    o.weights = w10;
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "weights"));
    o = (ss_sampler_options)SS_SAMPLER_OPTIONS_INIT;
    o.kind = SS_SAMPLE_SHUFFLE;
    o.block_size = 4;
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "block_size"));
    o.block_size = 0;
    o.window_blocks = 2;
    CHECK_RC(ss_sampler_create(&s, sel, &o), SS_EINVAL);
    o.window_blocks = 0;
    o.kind = SS_SAMPLE_WEIGHTED; /* the same fields with their kind are accepted */
    o.weights = w10;
    o.num_samples = 5;
    CHECK_OK(ss_sampler_create(&s, sel, &o));
    ss_sampler_free(s);
    o = (ss_sampler_options)SS_SAMPLER_OPTIONS_INIT;
    o.kind = SS_SAMPLE_BLOCK_SHUFFLE;
    o.block_size = 4;
    o.window_blocks = 2;
    CHECK_OK(ss_sampler_create(&s, sel, &o));
    ss_sampler_free(s);
    /* Infinite sampler over an empty selection returns nothing, never spins. */
    ss_selection *empty;
    CHECK_OK(ss_selection_parse(&empty, "", 10));
    o = (ss_sampler_options)SS_SAMPLER_OPTIONS_INIT;
    o.infinite = 1;
    CHECK_OK(ss_sampler_create(&s, empty, &o));
    uint64_t buf[4];
    size_t n = 9;
    CHECK_RC(ss_sampler_next(buf, 4, &n, s), SS_ITEROVER);
    CHECK_EQ_U64(n, 0);
    ss_sampler_free(s);
    ss_selection_free(empty);
    ss_selection_free(sel);

    /* Weights from lengths. */
    const char *path = ss_test_path("w.ss");
    ss_field f = {"tokens", SS_U8, 1, 0, {0}};
    ss_schema sc = {1, &f};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &sc, NULL));
    unsigned char data[16] = {0};
    for (uint64_t i = 0; i < 8; i++) {
        ss_value v = {data, i};
        CHECK_OK(ss_writer_append(w, &v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *st;
    CHECK_OK(ss_open(&st, path, 0));
    CHECK_OK(ss_selection_parse(&sel, "1:3,6:", 8));
    double wt[4];
    CHECK_OK(ss_weights_from_length(wt, st, sel, 0, 2.0));
    CHECK(wt[0] == 1 && wt[1] == 4 && wt[2] == 36 && wt[3] == 49);
    CHECK_RC(ss_weights_from_length(wt, st, sel, 1, 1.0), SS_ERANGE);
    ss_selection_free(sel);
    ss_close(st);
}

int main(void) {
    test_bijection();
    test_huge_selection();
    test_version1_states();
    test_sequential_and_golden();
    test_interleave_hand();
    test_sharding_elastic();
    test_resume();
    test_epochs_differ_same_seed_same();
    test_replacement_weighted();
    test_block_shuffle();
    test_block_bytes_and_buckets();
    test_errors_and_lengths();
    printf("test_sampler: ok\n");
    return 0;
}
