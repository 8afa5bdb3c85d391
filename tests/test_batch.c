/* SPDX-License-Identifier: BSD-2-Clause */
/* test_batch.c - fixed-size batching with remainder policies, token-budget
 * batching against a plain transcription of fairseq's batch_by_size_fast
 * (without a batch multiple, where it keeps its budget) and against a naive
 * longest-fitting-run reference (with one), the budget checked on every
 * batch; hand-written cases, skip/error on too-long examples, options of the
 * other mode refused, batch-order shuffles and padding statistics. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

/* Expect the batcher's batches (in current order) to be `want`: sizes in
 * `sizes`, indices concatenated in `idx`. */
static void check_batches(const ss_batcher *b, const size_t *sizes, size_t nb,
                          const uint64_t *idx) {
    CHECK_EQ_U64(ss_batcher_count(b), nb);
    size_t off = 0;
    for (size_t k = 0; k < nb; k++) {
        const uint64_t *p;
        size_t n;
        CHECK_OK(ss_batcher_get(&p, &n, b, k));
        CHECK_EQ_U64(n, sizes[k]);
        for (size_t j = 0; j < n; j++) CHECK_EQ_U64(p[j], idx[off + j]);
        off += n;
    }
}

static void test_fixed(void) {
    uint64_t order[10] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
    ss_batch_options o = SS_BATCH_OPTIONS_INIT;
    o.batch_size = 3;
    ss_batcher *b;
    CHECK_OK(ss_batcher_create(&b, order, NULL, 10, &o));
    size_t s1[4] = {3, 3, 3, 1};
    check_batches(b, s1, 4, order);
    ss_batcher_free(b);
    o.remainder = SS_REMAINDER_SKIP;
    CHECK_OK(ss_batcher_create(&b, order, NULL, 10, &o));
    check_batches(b, s1, 3, order);
    ss_batcher_free(b);
    o.remainder = SS_REMAINDER_DIVISIBLE;
    CHECK_RC(ss_batcher_create(&b, order, NULL, 10, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "divisible"));
    CHECK_OK(ss_batcher_create(&b, order, NULL, 9, &o));
    check_batches(b, s1, 3, order);
    const uint64_t *p;
    size_t n;
    CHECK_RC(ss_batcher_get(&p, &n, b, 3), SS_ERANGE);
    ss_batcher_free(b);
    o.batch_size = 0;
    CHECK_RC(ss_batcher_create(&b, order, NULL, 10, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "batch_size"));
    CHECK(b == NULL);
    o.batch_size = 4;
    o.remainder = (ss_remainder)9;
    CHECK_RC(ss_batcher_create(&b, order, NULL, 10, &o), SS_EINVAL);
    CHECK_RC(ss_batcher_create(&b, order, NULL, 10, NULL), SS_EINVAL);
    /* PAD: the last batch filled from the order's start (cyclically). */
    o.remainder = SS_REMAINDER_PAD;
    o.batch_size = 4;
    CHECK_OK(ss_batcher_create(&b, order, NULL, 10, &o));
    uint64_t padded[12] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 9, 8};
    size_t s4[3] = {4, 4, 4};
    check_batches(b, s4, 3, padded);
    ss_batcher_free(b);
    CHECK_OK(ss_batcher_create(&b, order, NULL, 3, &o));
    uint64_t cyc[4] = {9, 8, 7, 9};
    check_batches(b, s4, 1, cyc);
    ss_batcher_free(b);
    /* Options of the other mode are refused, not ignored. */
    o.remainder = SS_REMAINDER_INCLUDE;
    o.batch_size_multiple = 8;
    CHECK_RC(ss_batcher_create(&b, order, NULL, 10, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "token-budget"));
    o.batch_size_multiple = 0;
    o.skip_too_long = 1;
    CHECK_RC(ss_batcher_create(&b, order, NULL, 10, &o), SS_EINVAL);
    o.skip_too_long = 0;
    uint64_t ones[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    o.max_tokens = 4; /* with batch_size 4 */
    CHECK_RC(ss_batcher_create(&b, order, ones, 10, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "both batch_size"));
    o.batch_size = 0;
    o.remainder = SS_REMAINDER_SKIP;
    CHECK_RC(ss_batcher_create(&b, order, ones, 10, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "remainder"));
    o.max_tokens = 0;
    o.batch_size = 4;
    /* Empty order: no batches. */
    o.remainder = SS_REMAINDER_INCLUDE;
    CHECK_OK(ss_batcher_create(&b, NULL, NULL, 0, &o));
    CHECK_EQ_U64(ss_batcher_count(b), 0);
    ss_batcher_free(b);
}

/* fairseq batch_by_size_vec, transcribed statement by statement. */
typedef struct naive_out {
    uint64_t items[4096];
    size_t sizes[4096];
    size_t nb, ni;
} naive_out;

static int naive_batch(const uint64_t *indices, const uint64_t *num_tokens, size_t n,
                       uint64_t max_tokens, uint64_t max_sentences, uint64_t bsz_mult,
                       naive_out *out) {
    uint64_t batch[4096];
    size_t blen = 0;
    uint64_t sample_lens[4096];
    uint64_t sample_len = 0;
    out->nb = out->ni = 0;
    for (size_t pos = 0; pos < n; pos++) {
        uint64_t idx = indices[pos];
        uint64_t nt = num_tokens[pos];
        sample_lens[blen] = nt; /* sample_lens.append(num_tokens) */
        if (nt > sample_len) sample_len = nt;
        if (sample_len > max_tokens) return -1; /* assert */
        uint64_t tokens = (blen + 1) * sample_len;
        int full = blen > 0 && ((max_sentences > 0 && blen == max_sentences) ||
                                (max_tokens > 0 && tokens > max_tokens));
        if (full) {
            size_t mod_len = blen;
            if (bsz_mult > 1) {
                size_t a = (size_t)(bsz_mult * (blen / bsz_mult)), c = (size_t)(blen % bsz_mult);
                mod_len = a > c ? a : c;
            }
            memcpy(out->items + out->ni, batch, mod_len * sizeof *batch);
            out->ni += mod_len;
            out->sizes[out->nb++] = mod_len;
            memmove(batch, batch + mod_len, (blen - mod_len) * sizeof *batch);
            memmove(sample_lens, sample_lens + mod_len, (blen + 1 - mod_len) * sizeof *batch);
            blen -= mod_len;
            sample_len = 0;
            for (size_t j = 0; j <= blen; j++)
                if (sample_lens[j] > sample_len) sample_len = sample_lens[j];
        }
        batch[blen++] = idx;
    }
    if (blen) {
        memcpy(out->items + out->ni, batch, blen * sizeof *batch);
        out->ni += blen;
        out->sizes[out->nb++] = blen;
    }
    return 0;
}

static void test_tokens_hand(void) {
    uint64_t order[5] = {10, 11, 12, 13, 14}, len[5] = {1, 2, 3, 4, 5};
    ss_batch_options o = SS_BATCH_OPTIONS_INIT;
    o.max_tokens = 6;
    ss_batcher *b;
    CHECK_OK(ss_batcher_create(&b, order, len, 5, &o));
    size_t s1[4] = {2, 1, 1, 1};
    check_batches(b, s1, 4, order);
    ss_batcher_free(b);

    /* max_sentences 5 with batch_size_multiple 2 over 12 unit lengths: the
     * fifth example moves on each time: 4, 4, 4. */
    uint64_t ord12[12], ones[12];
    for (int i = 0; i < 12; i++) ord12[i] = (uint64_t)i, ones[i] = 1;
    o.max_tokens = 100;
    o.max_sentences = 5;
    o.batch_size_multiple = 2;
    CHECK_OK(ss_batcher_create(&b, ord12, ones, 12, &o));
    size_t s2[3] = {4, 4, 4};
    check_batches(b, s2, 3, ord12);
    ss_batcher_free(b);

    /* Too long: a clear error naming the example, or skipped and counted. */
    uint64_t len2[5] = {1, 9, 3, 7, 2};
    o = (ss_batch_options)SS_BATCH_OPTIONS_INIT;
    o.max_tokens = 6;
    CHECK_RC(ss_batcher_create(&b, order, len2, 5, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "example 11") && strstr(ss_error_message(), "max_tokens"));
    o.skip_too_long = 1;
    CHECK_OK(ss_batcher_create(&b, order, len2, 5, &o));
    CHECK_EQ_U64(ss_batcher_skipped(b), 2);
    size_t s3[2] = {2, 1}; /* [10, 12]: 2*3 = 6 fits; adding 14 makes 3*3 > 6 */
    uint64_t want3[3] = {10, 12, 14};
    check_batches(b, s3, 2, want3);
    ss_batcher_free(b);
    o.skip_too_long = 0;
    CHECK_RC(ss_batcher_create(&b, order, NULL, 5, &o), SS_EINVAL); /* needs lengths */
}

/* The documented rule, the naive way: from each start, the longest run that
 * fits (<= max_sentences, count * max <= max_tokens); if it does not reach
 * the end and holds >= m examples, cut it to a multiple of m. Lengths are
 * all <= max_tokens here. O(n^2). */
static void naive_runs(const uint64_t *order, const uint64_t *len, size_t n, uint64_t mt,
                       uint64_t ms, uint64_t m, naive_out *out) {
    out->nb = out->ni = 0;
    if (m < 1) m = 1;
    for (size_t start = 0; start < n;) {
        size_t run = 0;
        uint64_t mx = 0;
        while (start + run < n) {
            uint64_t l = len[start + run] > mx ? len[start + run] : mx;
            if ((ms && run + 1 > ms) || (run + 1) * l > mt) break;
            mx = l;
            run++;
        }
        if (start + run < n && run >= m) run = run / m * m;
        for (size_t j = 0; j < run; j++) out->items[out->ni++] = order[start + j];
        out->sizes[out->nb++] = run;
        start += run;
    }
}

static void test_tokens_property(void) {
    uint64_t rng = 2024;
    static naive_out want;
    uint64_t order[2000], len[2000];
    for (int round = 0; round < 500; round++) {
        size_t n = (size_t)(ss_test_rand(&rng) % 2000);
        uint64_t maxlen = 1 + ss_test_rand(&rng) % 200;
        for (size_t i = 0; i < n; i++) {
            order[i] = ss_test_rand(&rng) % 100000;
            len[i] = ss_test_rand(&rng) % (maxlen + 1);
        }
        ss_batch_options o = SS_BATCH_OPTIONS_INIT;
        o.max_tokens = maxlen + ss_test_rand(&rng) % 2000;
        o.max_sentences = ss_test_rand(&rng) % 3 ? ss_test_rand(&rng) % 64 : 0;
        o.batch_size_multiple = ss_test_rand(&rng) % 2 ? 1 + ss_test_rand(&rng) % 8 : 0;
        uint64_t m = o.batch_size_multiple > 1 ? o.batch_size_multiple : 1;
        if (m == 1) { /* fairseq's own batch_by_size_fast, where it keeps the budget */
            CHECK(naive_batch(order, len, n, o.max_tokens, o.max_sentences, 1, &want) == 0);
        } else {
            naive_runs(order, len, n, o.max_tokens, o.max_sentences, m, &want);
        }
        ss_batcher *b;
        CHECK_OK(ss_batcher_create(&b, order, len, n, &o));
        check_batches(b, want.sizes, want.nb, want.items);
        /* The promises, on every batch: the budget, max_sentences, and a
         * size that is a multiple of m or below m (the last one: any). */
        uint64_t nb = ss_batcher_count(b), at = 0;
        for (uint64_t k = 0; k < nb; k++) {
            const uint64_t *p;
            size_t c;
            CHECK_OK(ss_batcher_get(&p, &c, b, k));
            uint64_t mx = 0;
            for (size_t j = 0; j < c; j++, at++)
                if (len[at] > mx) mx = len[at];
            CHECK(c * mx <= o.max_tokens);
            CHECK(!o.max_sentences || c <= o.max_sentences);
            CHECK(k + 1 == nb || c % m == 0 || c < m);
        }
        ss_batcher_free(b);
    }
    /* The reported case: multiple 8, budget 2,048; lengths 300 then short
     * ones. Run 1: 6 x 300 fits (1,800), < 8 kept whole; then 100-long
     * examples: 20 fit, cut to 16; the 4 left and a 600-long one do not fit
     * together (5 x 600 > 2,048): the 4 close alone; 600 + two 100s fit,
     * a third does not (4 x 600); the last one is alone. */
    uint64_t ord[30], ln[30];
    for (int i = 0; i < 30; i++) ord[i] = (uint64_t)i, ln[i] = i < 6 ? 300 : 100;
    ln[26] = 600;
    ss_batch_options o = SS_BATCH_OPTIONS_INIT;
    o.max_tokens = 2048;
    o.batch_size_multiple = 8;
    ss_batcher *b;
    CHECK_OK(ss_batcher_create(&b, ord, ln, 30, &o));
    size_t sz[5] = {6, 16, 4, 3, 1};
    check_batches(b, sz, 5, ord);
    ss_batcher_free(b);
}

static void test_shuffle(void) {
    uint64_t order[100];
    for (int i = 0; i < 100; i++) order[i] = (uint64_t)i;
    ss_batch_options o = SS_BATCH_OPTIONS_INIT;
    o.batch_size = 7;
    ss_batcher *b;
    CHECK_OK(ss_batcher_create(&b, order, NULL, 100, &o));
    uint64_t nb = ss_batcher_count(b), first[15], again[15];
    CHECK_EQ_U64(nb, 15);
    for (int epoch = 0; epoch < 3; epoch++) {
        CHECK_OK(ss_batcher_shuffle(b, 1, 77, (uint64_t)epoch));
        unsigned seen[15] = {0};
        for (uint64_t k = 0; k < nb; k++) {
            const uint64_t *p;
            size_t n;
            CHECK_OK(ss_batcher_get(&p, &n, b, k));
            uint64_t q = p[0] / 7; /* batch q starts at 7q */
            seen[q]++;
            CHECK_EQ_U64(n, q == 14 ? 2 : 7);
            (epoch == 0 ? first : again)[k] = q;
        }
        for (int q = 0; q < 15; q++) CHECK_EQ_U64(seen[q], 1);
        if (epoch > 0) CHECK(memcmp(first, again, sizeof first) != 0);
    }
    CHECK_OK(ss_batcher_shuffle(b, 1, 77, 0));
    for (uint64_t k = 0; k < nb; k++) {
        const uint64_t *p;
        size_t n;
        CHECK_OK(ss_batcher_get(&p, &n, b, k));
        CHECK_EQ_U64(p[0] / 7, first[k]);
    }
    CHECK_OK(ss_batcher_shuffle(b, 0, 0, 0));
    for (uint64_t k = 0; k < nb; k++) {
        const uint64_t *p;
        size_t n;
        CHECK_OK(ss_batcher_get(&p, &n, b, k));
        CHECK_EQ_U64(p[0], 7 * k);
    }
    ss_batcher_free(b);
}

static void test_store_lengths(void) {
    const char *path = ss_test_path("b.ss");
    ss_field f[2] = {{"src", SS_U16, 1, 0, {0}}, {"tgt", SS_U16, 1, 0, {0}}};
    ss_schema sc = {2, f};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &sc, NULL));
    uint16_t buf[32] = {0};
    uint64_t src[6] = {3, 1, 4, 1, 5, 9}, tgt[6] = {2, 7, 1, 8, 2, 8};
    for (int i = 0; i < 6; i++) {
        ss_value v[2] = {{buf, src[i]}, {buf, tgt[i]}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    uint64_t idx[6] = {5, 4, 3, 2, 1, 0}, len[6];
    uint32_t both[2] = {0, 1}, bad = 2;
    CHECK_OK(ss_lengths_gather(len, s, both, 2, idx, 6));
    uint64_t want[6] = {9, 5, 8, 4, 7, 3};
    for (int i = 0; i < 6; i++) CHECK_EQ_U64(len[i], want[i]);
    CHECK_RC(ss_lengths_gather(len, s, &bad, 1, idx, 6), SS_ERANGE);
    idx[0] = 6;
    CHECK_RC(ss_lengths_gather(len, s, both, 2, idx, 6), SS_ERANGE);
    idx[0] = 5;
    /* Padding of batches {5,4,3} and {2,1,0} in src: real 23, padded 3*9 + 3*4. */
    ss_batch_options o = SS_BATCH_OPTIONS_INIT;
    o.batch_size = 3;
    ss_batcher *b;
    CHECK_OK(ss_batcher_create(&b, idx, NULL, 6, &o));
    uint64_t real, padded;
    CHECK_OK(ss_batcher_padding(&real, &padded, b, s, both, 1));
    CHECK_EQ_U64(real, 23);
    CHECK_EQ_U64(padded, 39);
    ss_batcher_free(b);
    ss_close(s);
}

int main(void) {
    test_fixed();
    test_tokens_hand();
    test_tokens_property();
    test_shuffle();
    test_store_lengths();
    printf("test_batch: ok\n");
    return 0;
}
