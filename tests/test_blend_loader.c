/* SPDX-License-Identifier: BSD-2-Clause */
/* test_blend_loader.c - blended batches from several stores against a naive
 * loop (the greedy rule and Hugging Face's stopping rules written out here):
 * proportions over 100,000 samples, both exhaustion modes, the collated data,
 * exact resume mid-blend, ranks x workers partitioning the global stream,
 * per-source counts and epochs, schemas that do not match. */
#include "seqstore.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define K 3
static const uint64_t SIZE[K] = {50, 70, 30};
static const double WEIGHT[K] = {0.5, 0.3, 0.2};

/* Source j: example i has tok = (j*1000 + i) repeated i % 7 + 1 times and
 * label j*1000 + i; source 1 lists its fields in the other order. */
static ss_store *make_source(uint32_t j, ss_dtype tok_dtype) {
    char name[32];
    snprintf(name, sizeof name, "blend%u_%d.ss", j, (int)tok_dtype);
    const char *path = ss_test_path(name);
    ss_field tok = {"tok", tok_dtype, 1, 0, {0}}, label = {"label", SS_I32, 0, 0, {0}};
    ss_field f[2] = {j == 1 ? label : tok, j == 1 ? tok : label};
    ss_schema schema = {2, f};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, NULL));
    for (uint64_t i = 0; i < SIZE[j]; i++) {
        uint16_t t16[8];
        int32_t t32[8], lab = (int32_t)(j * 1000 + i);
        uint64_t n = i % 7 + 1;
        for (uint64_t t = 0; t < n; t++) t16[t] = (uint16_t)lab, t32[t] = lab;
        ss_value vt = {tok_dtype == SS_U16 ? (void *)t16 : (void *)t32, n}, vl = {&lab, 1};
        ss_value v[2] = {j == 1 ? vl : vt, j == 1 ? vt : vl};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    return s;
}

static ss_store *g_src[K];
static ss_collate_field g_fields[2];

static ss_blend_loader_options options(ss_blend_stop stop, uint64_t batch, int shuffle) {
    ss_blend_loader_options o = SS_BLEND_LOADER_OPTIONS_INIT;
    o.nsources = K;
    o.stores = (const ss_store *const *)g_src;
    o.weights = WEIGHT;
    o.seed = 77;
    o.shuffle = shuffle;
    o.stop = stop;
    o.batch_size = batch;
    o.fields = g_fields;
    o.nfields = 2;
    return o;
}

/* The naive global stream: sources and, without shuffle, indices (c mod
 * size); n samples, or until the stopping rule (checked before each). */
static uint64_t naive(uint32_t *src, uint64_t *idx, uint64_t cap, ss_blend_stop stop) {
    double w[K], sum = 0;
    uint64_t c[K] = {0}, n = 0;
    for (int j = 0; j < K; j++) sum += WEIGHT[j];
    for (int j = 0; j < K; j++) w[j] = WEIGHT[j] / sum;
    for (; n < cap; n++) {
        int done = 0;
        for (int j = 0; j < K; j++) done += c[j] >= SIZE[j];
        if (stop == SS_BLEND_FIRST_EXHAUSTED && done > 0) break;
        if (stop == SS_BLEND_ALL_EXHAUSTED && done == K) break;
        int best = 0;
        double be = -INFINITY;
        for (int j = 0; j < K; j++) {
            double e = w[j] * (double)(n + 1) - (double)c[j];
            if (e > be) be = e, best = j;
        }
        src[n] = (uint32_t)best;
        idx[n] = c[best]++ % SIZE[best];
    }
    return n;
}

/* Every row's data is its example's (tok padded with -1, label). */
static void check_rows(const ss_blend_batch *b) {
    const ss_collated *tok = &b->data.fields[0], *lab = &b->data.fields[1];
    CHECK(b->data.nfields == 2 && tok->batch == b->rows);
    for (uint64_t r = 0; r < b->rows; r++) {
        int64_t want = (int64_t)(b->sources[r] * 1000 + b->indices[r]);
        CHECK(b->indices[r] < SIZE[b->sources[r]]);
        CHECK(((const int32_t *)lab->data)[r] == want);
        int64_t len = (int64_t)(b->indices[r] % 7 + 1);
        CHECK(tok->lengths[r] == len);
        const int64_t *row = (const int64_t *)tok->data + r * tok->steps;
        for (uint64_t t = 0; t < tok->steps; t++) CHECK(row[t] == ((int64_t)t < len ? want : -1));
    }
}

/* All rows of a loader from its position on: sources and indices. */
static uint64_t drain(ss_blend_loader *l, uint32_t *src, uint64_t *idx, uint64_t cap,
                      uint64_t max_batches) {
    const ss_blend_batch *b;
    uint64_t n = 0, nb = 0;
    int rc;
    while (nb < max_batches && (rc = ss_blend_loader_next(&b, l)) == 0) {
        check_rows(b);
        CHECK(n + b->rows <= cap);
        memcpy(src + n, b->sources, b->rows * sizeof *src);
        memcpy(idx + n, b->indices, b->rows * sizeof *idx);
        n += b->rows;
        nb++;
    }
    if (nb < max_batches) CHECK_RC(rc, SS_ITEROVER);
    return n;
}

#define CAP 100000
static uint32_t g_s1[CAP], g_s2[CAP];
static uint64_t g_i1[CAP], g_i2[CAP];

/* Infinite: every prefix n (per batch of 100) within one sample of w_j * n. */
static void test_proportions(void) {
    ss_blend_loader_options o = options(SS_BLEND_INFINITE, 100, 1);
    ss_blend_loader *l;
    CHECK_OK(ss_blend_loader_open(&l, &o));
    CHECK(ss_blend_loader_count(l) == UINT64_MAX);
    uint64_t c[K] = {0}, n = 0;
    for (int k = 0; k < 1000; k++) {
        const ss_blend_batch *b;
        CHECK_OK(ss_blend_loader_next(&b, l));
        check_rows(b);
        for (uint64_t r = 0; r < b->rows; r++) c[b->sources[r]]++;
        n += b->rows;
        for (int j = 0; j < K; j++) {
            CHECK(fabs((double)c[j] - WEIGHT[j] * (double)n) < 1.0);
            CHECK(ss_blend_loader_source_count(l, (uint32_t)j) == c[j]);
            CHECK(ss_blend_loader_source_epoch(l, (uint32_t)j) == c[j] / SIZE[j]);
        }
    }
    CHECK(n == 100000);
    uint64_t want = naive(g_s2, g_i2, CAP, SS_BLEND_INFINITE);
    CHECK(want == CAP);
    for (int j = 0; j < K; j++) {
        uint64_t cn = 0;
        for (uint64_t i = 0; i < CAP; i++) cn += g_s2[i] == (uint32_t)j;
        CHECK(cn == c[j]);
    }
    ss_blend_loader_free(l);
}

/* Both exhaustion modes against the naive stream, in order and shuffled (a
 * permutation of each source per source epoch). */
static void test_exhaustion(void) {
    for (int stop = 1; stop <= 2; stop++)
        for (int shuffle = 0; shuffle <= 1; shuffle++) {
            uint64_t n = naive(g_s2, g_i2, CAP, (ss_blend_stop)stop);
            ss_blend_loader_options o = options((ss_blend_stop)stop, 7, shuffle);
            ss_blend_loader *l;
            CHECK_OK(ss_blend_loader_open(&l, &o));
            CHECK_EQ_U64(ss_blend_loader_count(l), n);
            CHECK_EQ_U64(drain(l, g_s1, g_i1, CAP, UINT64_MAX), n);
            CHECK(memcmp(g_s1, g_s2, n * sizeof *g_s1) == 0);
            if (!shuffle) CHECK(memcmp(g_i1, g_i2, n * sizeof *g_i1) == 0);
            uint64_t done = 0, c[K] = {0};
            for (int j = 0; j < K; j++) {
                done += ss_blend_loader_source_epoch(l, (uint32_t)j) >= 1;
                unsigned char seen[70] = {0};
                for (uint64_t i = 0; i < n; i++) {
                    if (g_s1[i] != (uint32_t)j) continue;
                    if (c[j] % SIZE[j] == 0) memset(seen, 0, sizeof seen);
                    CHECK(!seen[g_i1[i]]); /* once per source epoch */
                    seen[g_i1[i]] = 1;
                    c[j]++;
                }
                CHECK_EQ_U64(ss_blend_loader_source_count(l, (uint32_t)j), c[j]);
            }
            CHECK(stop == SS_BLEND_FIRST_EXHAUSTED ? done == 1 : done == K);
            if (stop == SS_BLEND_FIRST_EXHAUSTED) /* source 0 needs 100 samples, 2 needs 150 */
                CHECK(c[0] == SIZE[0] && c[1] < SIZE[1] && c[2] < SIZE[2]);
            const ss_blend_batch *b;
            CHECK_RC(ss_blend_loader_next(&b, l), SS_ITEROVER);
            CHECK(b == NULL);
            ss_blend_loader_free(l);
        }
}

/* A state saved mid-blend resumes exactly, in a new loader. */
static void test_resume(void) {
    ss_blend_loader_options o = options(SS_BLEND_ALL_EXHAUSTED, 5, 1);
    ss_blend_loader *l, *m;
    CHECK_OK(ss_blend_loader_open(&l, &o));
    uint64_t n = drain(l, g_s2, g_i2, CAP, UINT64_MAX);
    ss_blend_loader_free(l);
    CHECK_OK(ss_blend_loader_open(&l, &o));
    uint64_t k = drain(l, g_s1, g_i1, CAP, 4);
    CHECK(k == 20);
    unsigned char st[8 * (K + 6)];
    size_t len = 0;
    CHECK_RC(ss_blend_loader_state_save(st, 8, &len, l), SS_EBUFS);
    CHECK_OK(ss_blend_loader_state_save(st, sizeof st, &len, l));
    CHECK(len == sizeof st && len == ss_blend_loader_state_size(l));
    CHECK_OK(ss_blend_loader_open(&m, &o));
    CHECK_OK(ss_blend_loader_state_load(m, st, len));
    k += drain(m, g_s1 + k, g_i1 + k, CAP - k, UINT64_MAX);
    CHECK_EQ_U64(k, n);
    CHECK(memcmp(g_s1, g_s2, n * 4) == 0 && memcmp(g_i1, g_i2, n * 8) == 0);
    for (int j = 0; j < K; j++) { /* the resumed loader counts the samples before it too */
        uint64_t c = 0;
        for (uint64_t i = 0; i < n; i++) c += g_s2[i] == (uint32_t)j;
        CHECK_EQ_U64(ss_blend_loader_source_count(m, (uint32_t)j), c);
    }
    /* a state of other options is refused, the loader unchanged */
    ss_blend_loader_options p = options(SS_BLEND_FIRST_EXHAUSTED, 5, 1);
    ss_blend_loader *q;
    CHECK_OK(ss_blend_loader_open(&q, &p));
    CHECK_RC(ss_blend_loader_state_load(q, st, len), SS_EINVAL);
    CHECK_RC(ss_blend_loader_state_load(q, st, len - 8), SS_EINVAL);
    ss_blend_loader_free(q);
    ss_blend_loader_free(l);
    ss_blend_loader_free(m);
}

/* R x W consumers: consumer rank + R * worker gets global samples
 * n = me, me + RW, ... of the single-consumer stream, exactly. */
static void test_ranks_workers(void) {
    for (int stop = 0; stop <= 2; stop++) {
        ss_blend_loader_options o = options((ss_blend_stop)stop, 4, 1);
        ss_blend_loader *l;
        CHECK_OK(ss_blend_loader_open(&l, &o));
        uint64_t cap = stop ? CAP : 2400, n = drain(l, g_s2, g_i2, cap, stop ? UINT64_MAX : 600);
        ss_blend_loader_free(l);
        const uint32_t R = 2, W = 3;
        uint64_t got = 0;
        for (uint32_t r = 0; r < R; r++)
            for (uint32_t w = 0; w < W; w++) {
                o.world_size = R;
                o.rank = r;
                o.num_workers = W;
                o.worker = w;
                CHECK_OK(ss_blend_loader_open(&l, &o));
                uint64_t me = r + (uint64_t)R * w;
                uint64_t m = drain(l, g_s1, g_i1, CAP, stop ? UINT64_MAX : 100);
                for (uint64_t i = 0; i < m; i++) {
                    uint64_t g = me + (uint64_t)R * W * i;
                    CHECK(g < n && g_s1[i] == g_s2[g] && g_i1[i] == g_i2[g]);
                }
                got += m;
                ss_blend_loader_free(l);
            }
        if (stop) CHECK_EQ_U64(got, n); /* together: the whole stream, once */
    }
}

static void test_errors(void) {
    ss_store *bad = make_source(2, SS_I32); /* tok is i32 there */
    ss_store *srcs[K] = {g_src[0], g_src[1], bad};
    ss_blend_loader_options o = options(SS_BLEND_INFINITE, 4, 0);
    o.stores = (const ss_store *const *)srcs;
    ss_blend_loader *l;
    CHECK_RC(ss_blend_loader_open(&l, &o), SS_EINVAL);
    CHECK(l == NULL && strstr(ss_error_message(), "source 2 (of 3): field 'tok' is i32"));
    o = options(SS_BLEND_INFINITE, 0, 0);
    CHECK_RC(ss_blend_loader_open(&l, &o), SS_EINVAL);
    o = options((ss_blend_stop)7, 4, 0);
    CHECK_RC(ss_blend_loader_open(&l, &o), SS_EINVAL);
    double w0[K] = {1, 0, 1};
    o = options(SS_BLEND_INFINITE, 4, 0);
    o.weights = w0;
    CHECK_RC(ss_blend_loader_open(&l, &o), SS_EINVAL);
    /* a stream whose end would take ~1e12 steps to find is refused, not computed */
    double tiny[K] = {1, 1e-9, 1};
    o = options(SS_BLEND_ALL_EXHAUSTED, 4, 0);
    o.weights = tiny;
    CHECK_RC(ss_blend_loader_open(&l, &o), SS_EINVAL);
    CHECK(l == NULL && strstr(ss_error_message(), "all_exhausted"));
    o.stop = SS_BLEND_FIRST_EXHAUSTED; /* ends after ~100 samples: fine */
    CHECK_OK(ss_blend_loader_open(&l, &o));
    CHECK(ss_blend_loader_count(l) < 110);
    ss_blend_loader_free(l);
    /* drop_last drops a finite stream's smaller last batch */
    o = options(SS_BLEND_FIRST_EXHAUSTED, 7, 0);
    o.drop_last = 1;
    CHECK_OK(ss_blend_loader_open(&l, &o));
    uint64_t n = drain(l, g_s1, g_i1, CAP, UINT64_MAX);
    CHECK_EQ_U64(n, ss_blend_loader_count(l) / 7 * 7);
    ss_blend_loader_free(l);
    ss_close(bad);
}

int main(void) {
    for (uint32_t j = 0; j < K; j++) g_src[j] = make_source(j, SS_U16);
    ss_collate_field tok = SS_COLLATE_FIELD_INIT, lab = SS_COLLATE_FIELD_INIT;
    tok.field = 0; /* by index in source 0; source 1 has it at 1 */
    tok.dtype = SS_I64;
    tok.pad_value = -1;
    lab.field = 1;
    g_fields[0] = tok;
    g_fields[1] = lab;
    test_proportions();
    test_exhaustion();
    test_resume();
    test_ranks_workers();
    test_errors();
    for (uint32_t j = 0; j < K; j++) ss_close(g_src[j]);
    printf("test_blend_loader: ok\n");
    return 0;
}
