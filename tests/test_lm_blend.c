/* SPDX-License-Identifier: BSD-2-Clause */
/* test_lm_blend.c - LM samples of two stores blended with weights
 * (ss_lm_blend_get, seqstore/lm.h): each row's source is the one
 * Megatron's blend rule picks (argmax_j w_j (n + 1) - c_j, computed here
 * independently), its sample the source's next in order, its tokens those
 * ss_lm_get() gives for it; a state saved between calls resumes the same
 * rows in a fresh blend; a rank/worker split of the blend reads the global
 * rows once between them; indices of another L are refused. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

enum { L = 16, ROWS = 8, BATCHES = 6 };

static void write_docs(const char *path, uint64_t n, uint64_t *st, uint16_t base) {
    ss_field f[1] = {{"tokens", SS_U16, 1, 0, {0}}};
    ss_schema schema = {1, f};
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_FORCE;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &wo));
    uint16_t buf[64];
    for (uint64_t d = 0; d < n; d++) {
        uint64_t len = 1 + ss_test_rand(st) % 40;
        for (uint64_t k = 0; k < len; k++) buf[k] = (uint16_t)(base + ss_test_rand(st) % 100);
        ss_value v[1] = {{buf, len}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

static ss_blend *make_blend(const uint64_t *sizes, uint32_t ranks, uint32_t rank) {
    static const double weights[2] = {0.3, 0.7};
    ss_blend_options bo = SS_BLEND_OPTIONS_INIT;
    bo.nsources = 2, bo.weights = weights, bo.sizes = sizes, bo.shuffle = 0, bo.seed = 9;
    bo.world_size = ranks, bo.rank = rank;
    ss_blend *b;
    CHECK_OK(ss_blend_create(&b, &bo));
    return b;
}

int main(void) {
    const char *pa = ss_test_path("lm_blend_a.ss"), *pb = ss_test_path("lm_blend_b.ss");
    uint64_t st = 3;
    write_docs(pa, 120, &st, 1000);
    write_docs(pb, 200, &st, 2000);
    ss_store *sa, *sb;
    CHECK_OK(ss_open(&sa, pa, 0));
    CHECK_OK(ss_open(&sb, pb, 0));
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.seq_length = L, o.eod = 1, o.flags = SS_LM_APPEND_EOD | SS_LM_RESET_ATTENTION_MASK;
    o.num_epochs = 3, o.seed = 5;
    ss_lm *lm[2];
    CHECK_OK(ss_lm_create(&lm[0], sa, 0, &o));
    o.seed = 6;
    CHECK_OK(ss_lm_create(&lm[1], sb, 0, &o));
    uint64_t sizes[2];
    for (int j = 0; j < 2; j++) {
        ss_lm_info info;
        CHECK_OK(ss_lm_get_info(&info, lm[j]));
        sizes[j] = info.num_samples;
    }
    const ss_lm *const lms[2] = {lm[0], lm[1]};
    enum { N = ROWS * BATCHES };
    static int64_t tok[N * L], want[L];
    static int32_t cu[N * (L + 1)], want_cu[L + 1];
    uint32_t src[N];
    /* the rows, batch by batch, with a state saved after batch 2 */
    ss_blend *b = make_blend(sizes, 1, 0);
    unsigned char state[256];
    size_t len = 0;
    for (int k = 0; k < BATCHES; k++) {
        ss_lm_batch out = {tok + k * ROWS * L, NULL, NULL, NULL, NULL, cu + k * ROWS * (L + 1), NULL};
        CHECK_OK(ss_lm_blend_get(src + k * ROWS, &out, lms, 2, b, ROWS));
        if (k == 1) CHECK_OK(ss_blend_state_save(state, sizeof state, &len, b));
    }
    ss_blend_free(b);
    /* Megatron's rule, independently: source and in-order sample of each row */
    uint64_t c[2] = {0, 0};
    for (uint64_t n = 0; n < N; n++) {
        double s0 = 0.3 * (double)(n + 1) - (double)c[0], s1 = 0.7 * (double)(n + 1) - (double)c[1];
        uint32_t j = s1 > s0 ? 1 : 0;
        CHECK_EQ_U64(src[n], j);
        uint64_t i = c[j]++;
        ss_lm_batch one = {want, NULL, NULL, NULL, NULL, want_cu, NULL};
        CHECK_OK(ss_lm_get(&one, lm[j], &i, 1));
        CHECK(!memcmp(want, tok + n * L, sizeof want));
        CHECK(!memcmp(want_cu, cu + n * (L + 1), sizeof want_cu));
        for (int t = 0; t < L; t++) /* the stores' tokens differ: the row is its source's */
            CHECK(want[t] == 1 || (want[t] >= 1000 + 1000 * j && want[t] < 1100 + 1000 * j));
    }
    CHECK(c[0] > 0 && c[1] > c[0]);
    /* resumed in a fresh blend from the saved state: the same later rows */
    b = make_blend(sizes, 1, 0);
    CHECK_OK(ss_blend_state_load(b, state, len));
    static int64_t again[(N - 2 * ROWS) * L];
    uint32_t src2[N - 2 * ROWS];
    ss_lm_batch rest = {again, NULL, NULL, NULL, NULL, NULL, NULL};
    CHECK_OK(ss_lm_blend_get(src2, &rest, lms, 2, b, N - 2 * ROWS));
    CHECK(!memcmp(again, tok + 2 * ROWS * L, sizeof again));
    CHECK(!memcmp(src2, src + 2 * ROWS, sizeof src2));
    ss_blend_free(b);
    /* two ranks: rank r reads global rows r, r + 2, ... */
    for (uint32_t r = 0; r < 2; r++) {
        b = make_blend(sizes, 2, r);
        static int64_t part[(N / 2) * L];
        ss_lm_batch pb_ = {part, NULL, NULL, NULL, NULL, NULL, NULL};
        CHECK_OK(ss_lm_blend_get(NULL, &pb_, lms, 2, b, N / 2));
        for (uint64_t k = 0; k < N / 2; k++)
            CHECK(!memcmp(part + k * L, tok + (2 * k + r) * L, L * sizeof *part));
        ss_blend_free(b);
    }
    /* errors: indices of another L, a source beyond the indices given */
    ss_lm_options o2 = o;
    o2.seq_length = L + 1;
    ss_lm *other;
    CHECK_OK(ss_lm_create(&other, sb, 0, &o2));
    const ss_lm *const mixed[2] = {lm[0], other};
    b = make_blend(sizes, 1, 0);
    ss_lm_batch out = {tok, NULL, NULL, NULL, NULL, NULL, NULL};
    CHECK_RC(ss_lm_blend_get(NULL, &out, mixed, 2, b, 1), SS_EINVAL);
    CHECK_CONTAINS(ss_error_message(), "one length");
    CHECK_RC(ss_lm_blend_get(NULL, &out, lms, 1, b, 4), SS_EINVAL);
    CHECK_RC(ss_lm_blend_get(NULL, NULL, lms, 2, b, 1), SS_EINVAL);
    ss_blend_free(b);
    ss_lm_free(other);
    ss_lm_free(lm[0]);
    ss_lm_free(lm[1]);
    ss_close(sa);
    ss_close(sb);
    puts("ok");
    return 0;
}
