/* SPDX-License-Identifier: BSD-2-Clause */
/* test_bucket.c - bucket indices: hand-written cases (one key, resolution 2;
 * two keys), random builds against a naive sort, stored and reopened
 * zero-copy, bucket-sorted orders and within-bucket batches, a stale index
 * after an append, and the `index` CLI. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* ss_bucket_save() of a fixed-width index of resolution `res`. */
static int save_res(const char *path, const char *name, const uint32_t *fields, size_t nkeys,
                    uint64_t res) {
    ss_bucket_options o = SS_BUCKET_OPTIONS_INIT;
    o.resolution = res;
    return ss_bucket_save(path, name, fields, nkeys, &o);
}

/* ss_bucket_create() of a fixed-width index of resolution `res` over the
 * store's lengths of `fields`. */
static int build_res(ss_bucket **out, const ss_store *s, const uint32_t *fields, size_t nkeys,
                     uint64_t res) {
    ss_bucket_options o = SS_BUCKET_OPTIONS_INIT;
    o.resolution = res;
    return ss_bucket_create(out, s, fields, nkeys, &o);
}

/* ss_bucket_create() of a fixed-width index over the caller's key arrays,
 * keyed without fields. */
static int build_keys(ss_bucket **out, const uint64_t *const *keys, size_t nkeys, uint64_t count,
                      uint64_t res) {
    ss_bucket_options o = SS_BUCKET_OPTIONS_INIT;
    o.resolution = res;
    o.keys = keys;
    o.count = count;
    return ss_bucket_create(out, NULL, NULL, nkeys, &o);
}

static void make_store(const char *path, const uint64_t *src, const uint64_t *tgt, uint64_t n) {
    ss_field f[2] = {{"src", SS_U8, 1, 0, {0}}, {"tgt", SS_U8, 1, 0, {0}}};
    ss_schema sc = {2, f};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &sc, NULL));
    unsigned char buf[256] = {0};
    for (uint64_t i = 0; i < n; i++) {
        ss_value v[2] = {{buf, src[i]}, {buf, tgt[i]}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

static void check_index(const ss_bucket *b, const uint64_t *perm, uint64_t n,
                        const uint64_t *starts, uint64_t nb) {
    CHECK_EQ_U64(ss_bucket_size(b), n);
    CHECK_EQ_U64(ss_bucket_count(b), nb);
    for (uint64_t i = 0; i < n; i++) CHECK_EQ_U64(ss_bucket_permutation(b)[i], perm[i]);
    for (uint64_t q = 0; q <= nb; q++) CHECK_EQ_U64(ss_bucket_starts(b)[q], starts[q]);
}

static void test_hand(void) {
    /* lengths 5 3 8 1 4 4 2 7, resolution 2: sorted 1(3) 2(6) 3(1) 4(4) 4(5)
     * 5(0) 7(7) 8(2); len/2 = 0 1 1 2 2 2 3 4; inside a bucket in index
     * order: {3} {1 6} {0 4 5} {7} {2}. */
    uint64_t len[8] = {5, 3, 8, 1, 4, 4, 2, 7};
    const uint64_t *keys[1] = {len};
    ss_bucket *b;
    CHECK_OK(build_keys(&b, keys, 1, 8, 2));
    uint64_t perm_r2[8] = {3, 1, 6, 0, 4, 5, 7, 2}, starts[6] = {0, 1, 3, 6, 7, 8};
    check_index(b, perm_r2, 8, starts, 5);
    uint64_t perm[8] = {3, 6, 1, 4, 5, 0, 7, 2};
    ss_bucket_free(b);
    /* resolution 1: one bucket per distinct length */
    CHECK_OK(build_keys(&b, keys, 1, 8, 1));
    uint64_t starts1[8] = {0, 1, 2, 3, 5, 6, 7, 8};
    check_index(b, perm, 8, starts1, 7);
    ss_bucket_free(b);

    /* two keys, lexicographic: (src, tgt) = (2,3) (2,1) (1,5) (2,1) */
    uint64_t src[4] = {2, 2, 1, 2}, tgt[4] = {3, 1, 5, 1};
    const uint64_t *k2[2] = {src, tgt};
    CHECK_OK(build_keys(&b, k2, 2, 4, 1));
    uint64_t perm2[4] = {2, 1, 3, 0}, starts2[4] = {0, 1, 3, 4};
    check_index(b, perm2, 4, starts2, 3);
    ss_bucket_free(b);
    /* resolution 4 puts them all in bucket (0, q): tgt 5 is in [4, 8); the
     * second bucket in index order. */
    CHECK_OK(build_keys(&b, k2, 2, 4, 4));
    uint64_t starts4[3] = {0, 1, 4}, perm4[4] = {2, 0, 1, 3};
    check_index(b, perm4, 4, starts4, 2);
    ss_bucket_free(b);

    CHECK_RC(build_keys(&b, keys, 1, 8, 0), SS_EINVAL);
    CHECK_RC(build_keys(&b, keys, 0, 8, 1), SS_EINVAL);
    CHECK_RC(build_keys(&b, keys, 5, 8, 1), SS_EINVAL);
    CHECK(b == NULL);
}

/* Random builds: buckets in key order, boundaries exactly where some
 * floor(key / R) changes, index order inside a bucket. */
static void test_property(void) {
    uint64_t rng = 5;
    for (int round = 0; round < 100; round++) {
        uint64_t n = ss_test_rand(&rng) % 3000, R = 1 + ss_test_rand(&rng) % 9;
        size_t nk = 1 + (size_t)(ss_test_rand(&rng) % 3);
        uint64_t *l[3];
        for (size_t k = 0; k < nk; k++) {
            l[k] = malloc((n + 1) * sizeof *l[k]);
            for (uint64_t i = 0; i < n; i++) l[k][i] = ss_test_rand(&rng) % 60;
        }
        ss_bucket *b;
        CHECK_OK(build_keys(&b, (const uint64_t *const *)l, nk, n, R));
        const uint64_t *p = ss_bucket_permutation(b), *st = ss_bucket_starts(b);
        unsigned char *seen = calloc(n + 1, 1);
        uint64_t q = 0;
        for (uint64_t i = 0; i < n; i++) {
            CHECK(p[i] < n && !seen[p[i]]);
            seen[p[i]] = 1;
            if (i == 0) continue;
            int cmp = 0, bucket_change = 0;
            for (size_t k = 0; k < nk && !cmp; k++)
                cmp = l[k][p[i - 1]] < l[k][p[i]] ? -1 : l[k][p[i - 1]] > l[k][p[i]];
            for (size_t k = 0; k < nk; k++) bucket_change |= l[k][p[i - 1]] / R != l[k][p[i]] / R;
            CHECK(bucket_change ? cmp < 0 : p[i - 1] < p[i]);
            if (bucket_change) {
                q++;
                CHECK_EQ_U64(st[q], i);
            }
        }
        CHECK_EQ_U64(ss_bucket_count(b), n ? q + 1 : 0);
        ss_bucket_free(b);
        free(seen);
        for (size_t k = 0; k < nk; k++) free(l[k]);
    }
}

static void test_store(void) {
    const uint64_t n = 500;
    uint64_t src[500], tgt[500], rng = 9;
    for (uint64_t i = 0; i < n; i++) {
        src[i] = 1 + ss_test_rand(&rng) % 40;
        tgt[i] = 1 + ss_test_rand(&rng) % 40;
    }
    const char *path = ss_test_path("bucket.ss");
    make_store(path, src, tgt, n);
    uint32_t both[2] = {0, 1};
    CHECK_OK(save_res(path, "pair", both, 2, 4));
    CHECK_OK(save_res(path, "src", both, 1, 4));
    uint32_t bad = 7;
    CHECK_RC(save_res(path, "bad", &bad, 1, 4), SS_ERANGE);
    CHECK_RC(save_res(path, "bad name", both, 1, 4), SS_EINVAL);
    /* any index ss_bucket_create() builds can be saved: descending, estimated */
    ss_bucket_options dopt = SS_BUCKET_OPTIONS_INIT;
    dopt.max_buckets = 3;
    dopt.descending = 1;
    CHECK_OK(ss_bucket_save(path, "down", both, 1, &dopt));
    CHECK_RC(ss_bucket_save(path, "none", both, 1, NULL), SS_EINVAL);

    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_bucket *down, *down_mem;
    CHECK_OK(ss_bucket_open(&down, s, "down"));
    CHECK_OK(ss_bucket_create(&down_mem, s, both, 1, &dopt));
    CHECK(ss_bucket_descending(down) == 1);
    CHECK_EQ_U64(ss_bucket_count(down), ss_bucket_count(down_mem));
    CHECK_EQ_U64(ss_bucket_size(down), ss_bucket_size(down_mem));
    CHECK(memcmp(ss_bucket_permutation(down), ss_bucket_permutation(down_mem),
                 ss_bucket_size(down) * sizeof(uint64_t)) == 0);
    ss_bucket_free(down_mem);
    ss_bucket_free(down);
    ss_bucket *stored, *built;
    CHECK_OK(ss_bucket_open(&stored, s, "pair"));
    CHECK_OK(build_res(&built, s, both, 2, 4));
    check_index(stored, ss_bucket_permutation(built), n, ss_bucket_starts(built),
                ss_bucket_count(built));
    uint32_t fk[4];
    CHECK_EQ_U64(ss_bucket_keys(fk, stored), 2);
    CHECK(fk[0] == 0 && fk[1] == 1);
    CHECK_EQ_U64(ss_bucket_resolution(stored), 4);
    /* Zero-copy: the permutation is inside the attribute, in the map. */
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, "ss.bucket.pair"));
    CHECK((const void *)ss_bucket_permutation(stored) == (const char *)a.data + 64);
    ss_bucket *missing = (ss_bucket *)1;
    CHECK_RC(ss_bucket_open(&missing, s, "nope"), SS_ENOTFOUND);
    CHECK(missing == NULL);
    ss_bucket_free(built);

    /* Bucket-sorted order over a split: per bucket, the members in `sel`,
     * shuffled within the bucket, re-drawn per epoch. */
    ss_selection *sel;
    CHECK_OK(ss_selection_parse(&sel, "0:300,350:", n));
    uint64_t *o1 = malloc(n * sizeof *o1), *o2 = malloc(n * sizeof *o2);
    uint64_t *o0 = malloc(n * sizeof *o0), c0, c1, c2;
    CHECK_OK(ss_bucket_order(o0, &c0, stored, sel, 0, 0, 0));
    CHECK_OK(ss_bucket_order(o1, &c1, stored, sel, 1, 3, 0));
    CHECK_OK(ss_bucket_order(o2, &c2, stored, sel, 1, 3, 1));
    CHECK_EQ_U64(c0, 450);
    CHECK_EQ_U64(c1, 450);
    CHECK_EQ_U64(c2, 450);
    CHECK(memcmp(o1, o2, 450 * sizeof *o1) != 0);
    const uint64_t *p = ss_bucket_permutation(stored), *st = ss_bucket_starts(stored);
    uint64_t k = 0;
    for (uint64_t q = 0; q < ss_bucket_count(stored); q++) {
        uint64_t m = 0;
        for (uint64_t i = st[q]; i < st[q + 1]; i++) m += ss_selection_contains(sel, p[i]);
        /* segment [k, k+m) of each order holds this bucket's selected members */
        for (uint64_t j = k; j < k + m; j++) {
            int f1 = 0, f2 = 0;
            for (uint64_t i = st[q]; i < st[q + 1]; i++) {
                f1 |= p[i] == o1[j];
                f2 |= p[i] == o2[j];
            }
            CHECK(f1 && f2 && ss_selection_contains(sel, o1[j]));
        }
        k += m;
    }
    CHECK_EQ_U64(k, 450);
    /* unshuffled: buckets in order, store index order inside a bucket */
    uint64_t *bk_of = malloc(n * sizeof *bk_of);
    for (uint64_t q = 0; q < ss_bucket_count(stored); q++)
        for (uint64_t i = st[q]; i < st[q + 1]; i++) bk_of[p[i]] = q;
    for (uint64_t j = 1; j < c0; j++)
        CHECK(bk_of[o0[j - 1]] < bk_of[o0[j]] ||
              (bk_of[o0[j - 1]] == bk_of[o0[j]] && o0[j - 1] < o0[j]));
    free(bk_of);

    /* Within-bucket batches: one bucket per batch, every selected example once,
     * token budget respected, batch order shuffled per epoch. */
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    bo.max_tokens = 64;
    ss_batcher *bb, *bb2;
    CHECK_OK(ss_bucket_batches(&bb, stored, s, sel, &bo, 1, 8, 0));
    CHECK_OK(ss_bucket_batches(&bb2, stored, s, sel, &bo, 1, 8, 1));
    uint64_t *bucket_of = malloc(n * sizeof *bucket_of);
    for (uint64_t q = 0; q < ss_bucket_count(stored); q++)
        for (uint64_t i = st[q]; i < st[q + 1]; i++) bucket_of[p[i]] = q;
    unsigned char *seen = calloc(n, 1);
    uint64_t total = 0;
    int order_differs = 0;
    for (uint64_t bi = 0; bi < ss_batcher_count(bb); bi++) {
        const uint64_t *ix, *ix2;
        size_t m, m2;
        CHECK_OK(ss_batcher_get(&ix, &m, bb, bi));
        CHECK_OK(ss_batcher_get(&ix2, &m2, bb2, bi));
        order_differs |= m != m2 || ix[0] != ix2[0];
        uint64_t mx = 0;
        for (size_t j = 0; j < m; j++) {
            CHECK_EQ_U64(bucket_of[ix[j]], bucket_of[ix[0]]);
            CHECK(ss_selection_contains(sel, ix[j]) && !seen[ix[j]]);
            seen[ix[j]] = 1;
            uint64_t l = src[ix[j]] > tgt[ix[j]] ? src[ix[j]] : tgt[ix[j]];
            if (l > mx) mx = l;
        }
        CHECK(m * mx <= 64);
        total += m;
    }
    CHECK_EQ_U64(total, 450);
    CHECK(order_differs);
    ss_batcher_free(bb);
    ss_batcher_free(bb2);
    /* Fixed-size batches within buckets; max_tokens below the longest: error. */
    bo = (ss_batch_options)SS_BATCH_OPTIONS_INIT;
    bo.batch_size = 4;
    CHECK_OK(ss_bucket_batches(&bb, stored, s, NULL, &bo, 0, 0, 0));
    for (uint64_t bi = 0; bi < ss_batcher_count(bb); bi++) {
        const uint64_t *ix;
        size_t m;
        CHECK_OK(ss_batcher_get(&ix, &m, bb, bi));
        CHECK(m >= 1 && m <= 4);
        for (size_t j = 0; j < m; j++) CHECK_EQ_U64(bucket_of[ix[j]], bucket_of[ix[0]]);
    }
    ss_batcher_free(bb);
    bo = (ss_batch_options)SS_BATCH_OPTIONS_INIT;
    bo.max_tokens = 20;
    CHECK_RC(ss_bucket_batches(&bb, stored, s, NULL, &bo, 0, 0, 0), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "max_tokens"));
    bo.skip_too_long = 1;
    CHECK_OK(ss_bucket_batches(&bb, stored, s, NULL, &bo, 0, 0, 0));
    uint64_t too_long = 0;
    for (uint64_t i = 0; i < n; i++) too_long += src[i] > 20 || tgt[i] > 20;
    CHECK_EQ_U64(ss_batcher_skipped(bb), too_long);
    ss_batcher_free(bb);
    free(seen);
    free(bucket_of);
    free(o0);
    free(o1);
    free(o2);
    ss_selection_free(sel);
    ss_bucket_free(stored);
    ss_close(s);

    /* After an append the stored index is stale: a clear error. */
    ss_writer *w;
    CHECK_OK(ss_writer_open(&w, path, NULL, NULL));
    unsigned char buf[4] = {0};
    ss_value v[2] = {{buf, 1}, {buf, 1}};
    CHECK_OK(ss_writer_append(w, v));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_RC(ss_bucket_open(&stored, s, "pair"), SS_ESTATE);
    CHECK(strstr(ss_error_message(), "rebuild"));
    ss_close(s);
}

static int run(const char *cmd) {
    int st = system(cmd);
    CHECK(st != -1 && WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void test_cli(void) {
    uint64_t src[6] = {5, 3, 8, 1, 4, 4}, tgt[6] = {1, 1, 1, 1, 1, 1};
    const char *path = ss_test_path("cli.ss"), *out = ss_test_path("cli.out");
    make_store(path, src, tgt, 6);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s index --help > %s", SS_CLI, out);
    CHECK_EQ_U64(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s index %s --resolution 2 2> %s", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s index %s --by src --resolution 0 2> %s", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s index %s --by nope --resolution 2 2> %s", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 1);
    snprintf(cmd, sizeof cmd, "grep -q \"^seqstore index: .*'nope'\" %s", out);
    CHECK_EQ_U64(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s index %s --by src --resolution 2 > %s", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s index %s --by src,tgt --resolution 1 --name st > %s", SS_CLI,
             path, out);
    CHECK_EQ_U64(run(cmd), 0);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_bucket *b;
    CHECK_OK(ss_bucket_open(&b, s, "src"));
    uint64_t perm[6] = {3, 1, 0, 4, 5, 2}, starts[5] = {0, 1, 2, 5, 6}; /* index order inside */
    check_index(b, perm, 6, starts, 4);
    ss_bucket_free(b);
    CHECK_OK(ss_bucket_open(&b, s, "st"));
    CHECK_EQ_U64(ss_bucket_keys(NULL, b), 2);
    ss_bucket_free(b);
    ss_close(s);
}

/* Block-shuffled bucket order: a hand case and random properties against a
 * plain model (bucket of each example, rank inside its bucket). */
static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_block_order(void) {
    /* lengths 5 3 8 1 4 4 2 7 5 5, resolution 4: buckets {3,6,1} (len 0..3),
     * {0,4,5,7,8,9} (4..7), {2} (8..11). */
    uint64_t len[10] = {5, 3, 8, 1, 4, 4, 2, 7, 5, 5};
    const uint64_t *keys[1] = {len};
    ss_bucket *b;
    CHECK_OK(build_keys(&b, keys, 1, 10, 4));
    CHECK_EQ_U64(ss_bucket_count(b), 3);
    uint64_t out[10], n;
    /* block_size = 100: one block per bucket, one window: each bucket's
     * segment is a shuffle of its members, buckets ascending. */
    CHECK_OK(ss_bucket_block_order(out, &n, b, NULL, 100, 1, 7, 0));
    CHECK_EQ_U64(n, 10);
    qsort(out, 3, sizeof *out, cmp_u64);
    qsort(out + 3, 6, sizeof *out, cmp_u64);
    const uint64_t want[10] = {1, 3, 6, 0, 4, 5, 7, 8, 9, 2};
    for (int i = 0; i < 10; i++) CHECK_EQ_U64(out[i], want[i]);
    /* block_size = 1, window 1: blocks of one example, no window shuffle:
     * still a permutation of each bucket. */
    ss_selection *sel;
    CHECK_OK(ss_selection_parse(&sel, "0:5,8", 10));
    CHECK_OK(ss_bucket_block_order(out, &n, b, sel, 1, 1, 7, 3));
    CHECK_EQ_U64(n, 6);
    qsort(out, 2, sizeof *out, cmp_u64); /* bucket 0: 1, 3 */
    qsort(out + 2, 3, sizeof *out, cmp_u64);
    const uint64_t want2[6] = {1, 3, 0, 4, 8, 2};
    for (int i = 0; i < 6; i++) CHECK_EQ_U64(out[i], want2[i]);
    ss_selection_free(sel);
    CHECK_OK(ss_selection_all(&sel, 11));
    CHECK_RC(ss_bucket_block_order(out, &n, b, sel, 1, 1, 7, 3), SS_EINVAL);
    ss_selection_free(sel);
    ss_bucket_free(b);

    uint64_t rng = 77;
    for (int round = 0; round < 60; round++) {
        uint64_t N = 1 + ss_test_rand(&rng) % 2000, R = 1 + ss_test_rand(&rng) % 20;
        uint64_t bs = 1 + ss_test_rand(&rng) % 30, seed = ss_test_rand(&rng);
        uint64_t *l = malloc(N * sizeof *l), *o1 = malloc(N * sizeof *o1);
        uint64_t *o2 = malloc(N * sizeof *o2), *rank = malloc(N * sizeof *rank);
        uint64_t *first = malloc(N * sizeof *first), *last = malloc(N * sizeof *last);
        uint64_t *cnt = calloc(N, sizeof *cnt);
        for (uint64_t i = 0; i < N; i++) l[i] = ss_test_rand(&rng) % 100;
        const uint64_t *k1[1] = {l};
        CHECK_OK(build_keys(&b, k1, 1, N, R));
        char text[64];
        uint64_t a = ss_test_rand(&rng) % N, c = a + ss_test_rand(&rng) % (N - a + 1);
        snprintf(text, sizeof text, "%llu:%llu", (unsigned long long)a, (unsigned long long)c);
        CHECK_OK(ss_selection_parse(&sel, text, N));
        CHECK_OK(ss_bucket_block_order(o1, &n, b, sel, bs, 1, seed, 2));
        CHECK_EQ_U64(n, c - a);
        /* Rank of each selected example among the selected members of its
         * bucket (index order): block = rank / bs. */
        for (uint64_t i = a; i < c; i++) {
            rank[i] = 0;
            for (uint64_t j = a; j < i; j++) rank[i] += l[j] / R == l[i] / R;
        }
        /* Buckets ascending; each example once; the positions of each
         * (bucket, block) form one contiguous run of the right size. */
        for (uint64_t i = 0; i < N; i++) first[i] = last[i] = UINT64_MAX;
        uint64_t *seen = calloc(N, sizeof *seen);
        for (uint64_t p = 0; p < n; p++) {
            uint64_t x = o1[p];
            CHECK(x >= a && x < c && !seen[x]);
            seen[x] = 1;
            if (p) CHECK(l[o1[p - 1]] / R <= l[x] / R);
            /* key of (bucket, block): the smallest member of the block */
            uint64_t blk = rank[x] / bs, key = UINT64_MAX;
            for (uint64_t j = a; j < c && key == UINT64_MAX; j++)
                if (l[j] / R == l[x] / R && rank[j] / bs == blk) key = j;
            if (first[key] == UINT64_MAX) first[key] = p;
            CHECK(last[key] == UINT64_MAX || last[key] == p - 1);
            last[key] = p;
            cnt[key]++;
        }
        for (uint64_t i = 0; i < N; i++)
            if (first[i] != UINT64_MAX) CHECK_EQ_U64(last[i] - first[i] + 1, cnt[i]);
        /* Deterministic per (seed, epoch); the same as the sampler. */
        CHECK_OK(ss_bucket_block_order(o2, &n, b, sel, bs, 1, seed, 2));
        CHECK(memcmp(o1, o2, n * sizeof *o1) == 0);
        ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
        so.kind = SS_SAMPLE_BLOCK_SHUFFLE;
        so.seed = seed;
        so.block_size = bs;
        so.window_blocks = 1;
        so.bucket = b;
        ss_sampler *s;
        CHECK_OK(ss_sampler_create(&s, sel, &so));
        CHECK_OK(ss_sampler_set_epoch(s, 2));
        size_t got;
        CHECK_RC(ss_sampler_next(o2, (size_t)N, &got, s), n ? 0 : SS_ITEROVER);
        CHECK_EQ_U64(got, n);
        CHECK(memcmp(o1, o2, n * sizeof *o1) == 0);
        ss_sampler_free(s);
        free(seen);
        free(l);
        free(o1);
        free(o2);
        free(rank);
        free(first);
        free(last);
        free(cnt);
        ss_selection_free(sel);
        ss_bucket_free(b);
    }
}

/* ------------------------------------------------ torchnet, keys, mass */

/* A store of one u8 sequence field "s" holding the given strings. */
static ss_store *strings_store(const char *name, const char *const *str, int n) {
    ss_field f[1] = {{"s", SS_U8, 1, 0, {0}}};
    ss_schema sc = {1, f};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, ss_test_path(name), &sc, NULL));
    for (int i = 0; i < n; i++) {
        ss_value v = {str[i], strlen(str[i])};
        CHECK_OK(ss_writer_append(w, &v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, ss_test_path(name), 0));
    return s;
}

static void check_order(const ss_bucket *b, const uint64_t *want, uint64_t n) {
    uint64_t got[128], m;
    CHECK_OK(ss_bucket_order(got, &m, b, NULL, 0, 0, 0));
    CHECK_EQ_U64(m, n);
    for (uint64_t i = 0; i < n; i++) CHECK_EQ_U64(got[i], want[i]);
}

static uint64_t neg_key(void *user, size_t key, uint64_t i) {
    (void)key;
    return ((const uint64_t *)user)[i];
}

/* torchnet's test_bucketsorteddataset.lua: BucketSorted_Simple (resolution
 * 1: a b c aa bb cc aaaa bbbb cccc foobar), the issue's {"aa","a","b"} at
 * resolution 3 (stays aa, a, b), resolution 3 over the Simple data (bucket
 * 0 in index order), and BucketSorted_NegativeLength (keys 1..100 sorted
 * descending: 100 .. 1) from a key array and from a callback. */
static void test_torchnet(void) {
    const char *data[10] = {"a", "b", "c", "foobar", "aa", "bb", "aaaa", "bbbb", "cccc", "cc"};
    ss_store *s = strings_store("tn.ss", data, 10);
    uint32_t f0 = 0;
    ss_bucket *b;
    CHECK_OK(build_res(&b, s, &f0, 1, 1));
    uint64_t simple[10] = {0, 1, 2, 4, 5, 9, 6, 7, 8, 3};
    check_order(b, simple, 10);
    ss_bucket_free(b);
    ss_bucket_options o = SS_BUCKET_OPTIONS_INIT;
    o.resolution = 3;
    CHECK_OK(ss_bucket_create(&b, s, &f0, 1, &o));
    uint64_t r3[10] = {0, 1, 2, 4, 5, 9, 6, 7, 8, 3};
    check_order(b, r3, 10);
    CHECK_EQ_U64(ss_bucket_count(b), 3);
    ss_bucket_free(b);
    ss_close(s);
    const char *three[3] = {"aa", "a", "b"};
    s = strings_store("tn3.ss", three, 3);
    CHECK_OK(build_res(&b, s, &f0, 1, 3));
    uint64_t stable[3] = {0, 1, 2};
    check_order(b, stable, 3);
    ss_bucket_free(b);
    ss_close(s);

    uint64_t val[100], desc[100];
    for (int i = 0; i < 100; i++) val[i] = (uint64_t)i + 1, desc[i] = 99 - (uint64_t)i;
    const uint64_t *keys[1] = {val};
    o = (ss_bucket_options)SS_BUCKET_OPTIONS_INIT;
    o.resolution = 1;
    o.descending = 1;
    o.keys = keys;
    o.count = 100;
    CHECK_OK(ss_bucket_create(&b, NULL, NULL, 1, &o));
    CHECK(ss_bucket_descending(b) && ss_bucket_keys(NULL, b) == 0);
    check_order(b, desc, 100);
    ss_bucket_free(b);
    o.keys = NULL;
    o.key_fn = neg_key;
    o.key_user = val;
    CHECK_OK(ss_bucket_create(&b, NULL, NULL, 1, &o));
    check_order(b, desc, 100);
    /* no token budget without length fields */
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    bo.max_tokens = 100;
    ss_batcher *bt;
    CHECK_RC(ss_bucket_batches(&bt, b, NULL, NULL, &bo, 0, 0, 0), SS_EINVAL);
    ss_bucket_free(b);
    o.keys = keys; /* both */
    CHECK_RC(ss_bucket_create(&b, NULL, NULL, 1, &o), SS_EINVAL);
    o.key_fn = NULL;
    o.max_buckets = 4; /* and resolution */
    CHECK_RC(ss_bucket_create(&b, NULL, NULL, 1, &o), SS_EINVAL);
    o.resolution = 0;
    o.keys = NULL;
    CHECK_RC(ss_bucket_create(&b, NULL, NULL, 1, &o), SS_EINVAL); /* no store, no keys */
    CHECK(b == NULL);
}

/* Padding cost of buckets of sorted values: sum of (count * max - sum). */
static uint64_t cost_of(const uint64_t *v, uint64_t n, const uint64_t *starts, uint64_t nb) {
    uint64_t c = 0;
    for (uint64_t q = 0; q < nb; q++) {
        uint64_t mx = 0, sm = 0;
        for (uint64_t i = starts[q]; i < starts[q + 1]; i++) {
            if (v[i] > mx) mx = v[i];
            sm += v[i];
        }
        c += (starts[q + 1] - starts[q]) * mx - sm;
    }
    (void)n;
    return c;
}

/* Estimated boundaries against brute force: every set of at most M - 1 cuts
 * between distinct values of a small key set; the index's buckets must cost
 * exactly the minimum, cut only between different keys, and list their
 * examples in index order. */
static void test_estimated(void) {
    uint64_t rng = 12;
    for (int round = 0; round < 300; round++) {
        uint64_t n = 1 + ss_test_rand(&rng) % 60, M = 1 + ss_test_rand(&rng) % 5;
        uint64_t k[64], sorted[64], runs[64], nr = 0;
        for (uint64_t i = 0; i < n; i++) {
            k[i] = ss_test_rand(&rng) % 12;
            if (ss_test_rand(&rng) % 8 == 0) k[i] += ss_test_rand(&rng) % 100;
        }
        uint64_t m = 0;
        for (uint64_t v = 0; v < 112; v++)
            for (uint64_t i = 0; i < n; i++)
                if (k[i] == v) sorted[m++] = v;
        for (uint64_t i = 0; i < n; i++)
            if (i == 0 || sorted[i] != sorted[i - 1]) runs[nr++] = i; /* possible cuts */
        uint64_t best = UINT64_MAX;
        for (uint64_t mask = 0; mask < (1ull << (nr - 1)); mask++) { /* cut before runs[j+1] */
            uint64_t st[64], nb = 0;
            st[nb++] = 0;
            for (uint64_t j = 0; j + 1 < nr; j++)
                if (mask >> j & 1) st[nb++] = runs[j + 1];
            if (nb > M) continue;
            st[nb] = n;
            uint64_t c = cost_of(sorted, n, st, nb);
            if (c < best) best = c;
        }
        const uint64_t *keys[1] = {k};
        ss_bucket_options o = SS_BUCKET_OPTIONS_INIT;
        o.max_buckets = M;
        o.keys = keys;
        o.count = n;
        ss_bucket *b;
        CHECK_OK(ss_bucket_create(&b, NULL, NULL, 1, &o));
        CHECK_EQ_U64(ss_bucket_resolution(b), 0);
        uint64_t nb = ss_bucket_count(b);
        const uint64_t *st = ss_bucket_starts(b), *p = ss_bucket_permutation(b);
        CHECK(nb >= 1 && nb <= M);
        for (uint64_t q = 1; q < nb; q++) CHECK(sorted[st[q]] != sorted[st[q] - 1]);
        CHECK_EQ_U64(cost_of(sorted, n, st, nb), best);
        for (uint64_t q = 0; q < nb; q++)
            for (uint64_t i = st[q]; i < st[q + 1]; i++) {
                CHECK(k[p[i]] >= sorted[st[q]] && k[p[i]] <= sorted[st[q + 1] - 1]);
                CHECK(i == st[q] || p[i - 1] < p[i]); /* index order inside */
            }
        ss_bucket_free(b);
    }
}

/* A stored descending index with estimated boundaries reopens with the same arrays. */
static void test_store_v2(void) {
    const char *data[6] = {"aaaa", "a", "aa", "aaaaaa", "aaa", "a"};
    ss_store *s = strings_store("v2.ss", data, 6);
    uint32_t f0 = 0;
    ss_bucket_options o = SS_BUCKET_OPTIONS_INIT;
    o.max_buckets = 2;
    o.descending = 1;
    ss_bucket *b;
    CHECK_OK(ss_bucket_create(&b, s, &f0, 1, &o));
    ss_close(s);
    ss_writer *w;
    CHECK_OK(ss_writer_open(&w, ss_test_path("v2.ss"), NULL, NULL));
    CHECK_OK(ss_bucket_set(w, "m", b));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    CHECK_OK(ss_open(&s, ss_test_path("v2.ss"), 0));
    ss_bucket *r;
    CHECK_OK(ss_bucket_open(&r, s, "m"));
    CHECK(ss_bucket_descending(r) && ss_bucket_resolution(r) == 0);
    /* lengths 6 4 3 2 1 1 (examples 3 0 4 2 1 5) in two buckets: {6 4} {3 2
     * 1 1} and {6 4 3} {2 1 1} both pad 7, the least; the later cut is kept
     * -> {0 3 4} {1 2 5} */
    uint64_t want[6] = {0, 3, 4, 1, 2, 5};
    check_order(r, want, 6);
    check_index(r, ss_bucket_permutation(b), 6, ss_bucket_starts(b), 2);
    ss_bucket_free(r);
    ss_bucket_free(b);
    ss_close(s);
}

/* The stored descending order, ties included, against an independent
 * construction from spec/SDK_SECTIONS.md: an insertion sort by the length
 * tuple descending and the index ascending, a bucket starting where
 * floor(L_k / R) changes for some key between neighbours, then each bucket
 * by index (insertion sort again). Stored with ss_bucket_set() and read back
 * through ss_bucket_open(), for one and two keys and R = 1, 3. */
static int tuple_before(const uint64_t *a, const uint64_t *b, size_t nkeys) {
    for (size_t k = 0; k < nkeys; k++)
        if (a[k] != b[k]) return a[k] > b[k]; /* descending */
    return 0;
}

static void test_descending_ties(void) {
    enum { N = 300 };
    static uint64_t src[N], tgt[N];
    uint64_t rng = 77;
    for (int i = 0; i < N; i++) { /* few distinct lengths: many ties */
        src[i] = ss_test_rand(&rng) % 12;
        tgt[i] = ss_test_rand(&rng) % 5;
    }
    const char *path = ss_test_path("desc.ss");
    make_store(path, src, tgt, N);
    for (int round = 0; round < 4; round++) {
        size_t nkeys = round % 2 ? 2 : 1;
        uint64_t R = round < 2 ? 1 : 3;
        uint32_t fields[2] = {0, 1};
        ss_store *s;
        CHECK_OK(ss_open(&s, path, 0));
        ss_bucket_options o = SS_BUCKET_OPTIONS_INIT;
        o.resolution = R;
        o.descending = 1;
        ss_bucket *b;
        CHECK_OK(ss_bucket_create(&b, s, fields, nkeys, &o));
        ss_close(s);
        ss_writer *w;
        CHECK_OK(ss_writer_open(&w, path, NULL, NULL));
        CHECK_OK(ss_bucket_set(w, "desc", b));
        CHECK_OK(ss_writer_finish(w));
        ss_writer_free(w);
        ss_bucket_free(b);

        uint64_t key[N][2], want[N], starts[N + 1], nb = 0;
        for (int i = 0; i < N; i++) key[i][0] = src[i], key[i][1] = tgt[i];
        for (int i = 0; i < N; i++) { /* stable: a tie keeps the smaller index first */
            int j = i;
            for (; j > 0 && tuple_before(key[i], key[want[j - 1]], nkeys); j--)
                want[j] = want[j - 1];
            want[j] = (uint64_t)i;
        }
        for (int i = 0; i < N; i++) {
            int cut = i == 0;
            for (size_t k = 0; k < nkeys && !cut; k++)
                cut = key[want[i]][k] / R != key[want[i - 1]][k] / R;
            if (cut) starts[nb++] = (uint64_t)i;
        }
        starts[nb] = N;
        for (uint64_t q = 0; q < nb; q++) /* each bucket in index order */
            for (uint64_t i = starts[q] + 1; i < starts[q + 1]; i++)
                for (uint64_t j = i; j > starts[q] && want[j - 1] > want[j]; j--) {
                    uint64_t t = want[j];
                    want[j] = want[j - 1], want[j - 1] = t;
                }

        CHECK_OK(ss_open(&s, path, 0));
        ss_bucket *r;
        CHECK_OK(ss_bucket_open(&r, s, "desc"));
        CHECK(ss_bucket_descending(r));
        CHECK_EQ_U64(ss_bucket_resolution(r), R);
        CHECK_EQ_U64(ss_bucket_keys(NULL, r), nkeys);
        check_index(r, want, N, starts, nb);
        uint64_t got[N], m; /* the unshuffled bucket order is the permutation */
        CHECK_OK(ss_bucket_order(got, &m, r, NULL, 0, 0, 0));
        CHECK_EQ_U64(m, N);
        CHECK(memcmp(got, want, sizeof got) == 0);
        ss_bucket_free(r);
        ss_close(s);
    }
}

/* A split, a bucket index and the stored lengths whose checksums fail are
 * SS_ECORRUPT naming the store and the attribute, never "no such split". */
static void test_damaged_sections(void) {
    uint64_t len[6] = {3, 1, 4, 1, 5, 9};
    const char *path = ss_test_path("dmg.ss");
    make_store(path, len, len, 6);
    uint32_t f0 = 0;
    ss_selection *sel;
    CHECK_OK(ss_selection_parse(&sel, "1:4", 6));
    CHECK_OK(ss_split_save(path, "x", sel));
    ss_selection_free(sel);
    CHECK_OK(save_res(path, "x", &f0, 1, 2));
    ss_test_flip_attr(path, "ss.split.x", 3);
    ss_test_flip_attr(path, "ss.bucket.x", 64);
    ss_test_flip_attr(path, "ss.lengths.src", 2);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    char want[700];
    snprintf(want, sizeof want, "%s: attribute 'ss.split.x': checksum mismatch", path);
    CHECK_RC(ss_split_load(&sel, s, "x"), SS_ECORRUPT);
    CHECK(sel == NULL && strstr(ss_error_message(), want));
    ss_bucket *b;
    snprintf(want, sizeof want, "%s: attribute 'ss.bucket.x': checksum mismatch", path);
    CHECK_RC(ss_bucket_open(&b, s, "x"), SS_ECORRUPT);
    CHECK(b == NULL && strstr(ss_error_message(), want));
    const void *data;
    ss_dtype dt;
    uint64_t n;
    snprintf(want, sizeof want, "%s: attribute 'ss.lengths.src': checksum mismatch", path);
    CHECK_RC(ss_lengths_view(&data, &dt, &n, s, 0), SS_ECORRUPT);
    CHECK(strstr(ss_error_message(), want));
    CHECK_OK(ss_lengths_view(&data, &dt, &n, s, 1)); /* tgt's: untouched */
    uint64_t problems = 0;
    CHECK_RC(ss_verify(&problems, s, NULL, NULL), SS_ECORRUPT);
    CHECK(problems >= 3);
    ss_close(s);
}

int main(void) {
    test_torchnet();
    test_estimated();
    test_store_v2();
    test_descending_ties();
    test_damaged_sections();
    test_hand();
    test_property();
    test_store();
    test_cli();
    test_block_order();
    printf("test_bucket: ok\n");
    return 0;
}
