/* SPDX-License-Identifier: BSD-2-Clause */
/* test_lm.c - LM samples (seqstore/lm.h): numpy's legacy MT19937 and shuffle
 * against known outputs, hand-computed masks, positions and segments, the
 * samples against the documents laid end to end in the document index's
 * order, Megatron's separate_final_epoch rule, a dataset against one store,
 * errors. Megatron-Core itself is the reference of tests/lm/megatron_samples.py
 * (test_lm_megatron). */
#include "testutil.h"
#include "lm_mt19937.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A store of one u16 sequence field 'tokens' (and a f32 field 'x'); with
 * eos >= 0 the attribute tokens.eos = [eos]. */
static const char *make_store(const char *name, const uint16_t *const *docs, const uint64_t *lens,
                              uint64_t n, int64_t eos) {
    const char *path = ss_test_path(name);
    ss_field f[2] = {{"tokens", SS_U16, 1, 0, {0}}, {"x", SS_F32, 1, 0, {0}}};
    ss_schema schema = {2, f};
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_FORCE;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &wo));
    float x = 1.0f;
    for (uint64_t d = 0; d < n; d++) {
        ss_value v[2] = {{docs[d], lens[d]}, {&x, 1}};
        CHECK_OK(ss_writer_append(w, v));
    }
    if (eos >= 0) {
        uint32_t e = (uint32_t)eos;
        CHECK_OK(ss_writer_set_attr(w, "tokens.eos", SS_U32, &e, 4));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    return path;
}

static void test_mt19937(void) {
    /* std::mt19937's default seed 5489: outputs 1..3 and 10000 (the C++
     * standard requires the 10000th to be 4123659995). */
    ss_mt19937 mt;
    ss__mt_seed(&mt, 5489);
    CHECK_EQ_U64(ss__mt_next32(&mt), 3499211612u);
    CHECK_EQ_U64(ss__mt_next32(&mt), 581869302u);
    CHECK_EQ_U64(ss__mt_next32(&mt), 3890346734u);
    for (int k = 4; k < 10000; k++) ss__mt_next32(&mt);
    CHECK_EQ_U64(ss__mt_next32(&mt), 4123659995u);
    /* numpy: rs = RandomState(1234); a = arange(10); rs.shuffle(a);
     * b = arange(7, dtype=uint32); rs.shuffle(b). */
    ss__mt_seed(&mt, 1234);
    int64_t a[10];
    uint32_t b[7];
    for (int k = 0; k < 10; k++) a[k] = k;
    for (int k = 0; k < 7; k++) b[k] = (uint32_t)k;
    ss__mt_shuffle_i64(&mt, a, 10);
    ss__mt_shuffle_u32(&mt, b, 7);
    const int64_t wa[10] = {7, 2, 9, 1, 0, 8, 4, 5, 6, 3};
    const uint32_t wb[7] = {6, 4, 0, 5, 3, 2, 1};
    CHECK(memcmp(a, wa, sizeof a) == 0);
    CHECK(memcmp(b, wb, sizeof b) == 0);
    /* numpy: RandomState(0).shuffle(arange(100000)): first 5 and last 3. */
    int64_t *big = malloc(100000 * sizeof *big);
    CHECK(big);
    for (int k = 0; k < 100000; k++) big[k] = k;
    ss__mt_seed(&mt, 0);
    ss__mt_shuffle_i64(&mt, big, 100000);
    const int64_t wf[5] = {3582, 60498, 53227, 21333, 3885}, wl[3] = {42613, 43567, 68268};
    CHECK(memcmp(big, wf, sizeof wf) == 0 && memcmp(big + 99997, wl, sizeof wl) == 0);
    free(big);
    /* Ranges beyond 2^32 draw two outputs, the high word first. Reference:
     * numpy's untyped shuffle path on a sequence of 2^40 + 7 elements,
     * seed 7: the first two swaps' j. */
    ss__mt_seed(&mt, 7);
    CHECK_EQ_U64(ss__mt_interval(&mt, (1ull << 40) + 6), 752595690692ull);
    CHECK_EQ_U64(ss__mt_interval(&mt, (1ull << 40) + 5), 108744157686ull);
    CHECK_EQ_U64(ss__mt_interval(&mt, 0), 0);
}

/* One document 1 2 0 3 0 0 4 5 6 with eod 0: one sample, no shuffle draws. */
static void test_masks(void) {
    static const uint16_t doc[9] = {1, 2, 0, 3, 0, 0, 4, 5, 6};
    const uint16_t *docs[1] = {doc};
    uint64_t lens[1] = {9};
    const char *path = make_store("lm_masks.ss", docs, lens, 1, 0);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    struct {
        uint64_t L;
        unsigned flags;
        float loss[8];
        int64_t pos[8];
        int32_t seg[8], cu[9], nseg;
    } cases[] = {
        {8, SS_LM_RESET_POSITION_IDS | SS_LM_RESET_ATTENTION_MASK | SS_LM_EOD_MASK_LOSS,
         {1, 1, 0, 1, 0, 0, 1, 1}, {0, 1, 2, 0, 1, 0, 0, 1}, {0, 0, 0, 1, 1, 2, 3, 3},
         {0, 3, 5, 6, 8, 8, 8, 8, 8}, 4},
        {8, 0, {1, 1, 1, 1, 1, 1, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7}, {0}, {0, 8, 8, 8, 8, 8, 8, 8, 8},
         1},
        {8, SS_LM_RESET_POSITION_IDS, {1, 1, 1, 1, 1, 1, 1, 1}, {0, 1, 2, 0, 1, 0, 0, 1}, {0},
         {0, 8, 8, 8, 8, 8, 8, 8, 8}, 1},
        /* an eod in the last input position starts no segment */
        {5, SS_LM_RESET_ATTENTION_MASK | SS_LM_EOD_MASK_LOSS, {1, 1, 0, 1, 0}, {0, 1, 2, 3, 4},
         {0, 0, 0, 1, 1}, {0, 3, 5, 5, 5, 5}, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ss_lm_options o = SS_LM_OPTIONS_INIT;
        o.seq_length = cases[c].L;
        o.flags = cases[c].flags;
        o.seed = 99;
        ss_lm *lm;
        CHECK_OK(ss_lm_create(&lm, s, 0, &o));
        ss_lm_info info;
        CHECK_OK(ss_lm_get_info(&info, lm));
        CHECK_EQ_U64(info.num_samples, 1);
        CHECK_EQ_U64(info.eod, 0); /* from tokens.eos */
        uint64_t L = cases[c].L, i = 0;
        int64_t tok[8], lab[8], pos[8];
        float loss[8];
        int32_t seg[8], cu[9], nseg;
        ss_lm_batch b = {tok, lab, loss, pos, seg, cu, &nseg};
        CHECK_OK(ss_lm_get(&b, lm, &i, 1));
        for (uint64_t t = 0; t < L; t++) {
            CHECK_EQ_U64(tok[t], doc[t]);
            CHECK_EQ_U64(lab[t], doc[t + 1]);
            CHECK(loss[t] == cases[c].loss[t]);
            CHECK_EQ_U64(pos[t], cases[c].pos[t]);
            CHECK_EQ_U64(seg[t], cases[c].seg[t]);
        }
        CHECK(memcmp(cu, cases[c].cu, (L + 1) * sizeof *cu) == 0);
        CHECK_EQ_U64(nseg, cases[c].nseg);
        i = 1;
        CHECK_RC(ss_lm_get(&b, lm, &i, 1), SS_ERANGE);
        CHECK_CONTAINS(ss_error_message(), "sample 1");
        ss_lm_free(lm);
    }
    ss_close(s);
}

/* Documents 7 8 | 9 with eod 0 appended, seed 42: numpy's
 * RandomState(42).shuffle(arange(2)) gives [1, 0], so the stream is
 * 9 0 7 8 0 and L = 2 has (5 - 1) / 2 = 2 samples: 9 0 7 and 7 8 0. */
static void test_append_eod(void) {
    static const uint16_t d0[2] = {7, 8}, d1[1] = {9};
    const uint16_t *docs[2] = {d0, d1};
    uint64_t lens[2] = {2, 1};
    const char *path = make_store("lm_append.ss", docs, lens, 2, -1);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.seq_length = 2;
    o.seed = 42;
    ss_lm *lm;
    CHECK_RC(ss_lm_create(&lm, s, 0, &o), SS_EINVAL); /* no tokens.eos: eod required */
    CHECK_CONTAINS(ss_error_message(), "tokens.eos");
    CHECK(lm == NULL);
    o.eod = 0;
    o.flags = SS_LM_APPEND_EOD;
    CHECK_OK(ss_lm_create(&lm, s, 0, &o));
    CHECK_EQ_U64(ss_lm_document(lm, 0), 1);
    CHECK_EQ_U64(ss_lm_document(lm, 1), 0);
    CHECK_EQ_U64(ss_lm_document(lm, 2), UINT64_MAX);
    ss_lm_info info;
    CHECK_OK(ss_lm_get_info(&info, lm));
    CHECK_EQ_U64(info.num_samples, 2);
    CHECK_EQ_U64(info.tokens_per_epoch, 5);
    int64_t tok[4], lab[4];
    ss_lm_batch b = {tok, lab, NULL, NULL, NULL, NULL, NULL};
    uint64_t first[2], off[2], k[2], idx[2] = {0, 1};
    CHECK_OK(ss_lm_get(&b, lm, idx, 2));
    for (int r = 0; r < 2; r++)
        CHECK_OK(ss_lm_sample_position(&first[r], &off[r], &k[r], lm, idx[r]));
    CHECK((k[0] == 0 && k[1] == 1) || (k[0] == 1 && k[1] == 0));
    static const int64_t want[2][3] = {{9, 0, 7}, {7, 8, 0}};
    for (int r = 0; r < 2; r++) {
        CHECK(tok[2 * r] == want[k[r]][0] && tok[2 * r + 1] == want[k[r]][1]);
        CHECK(lab[2 * r] == want[k[r]][1] && lab[2 * r + 1] == want[k[r]][2]);
    }
    /* sample 1 (unshuffled) starts in position 1 of the document index
     * (document 0) at offset 0 */
    int which = k[0] == 1 ? 0 : 1;
    CHECK_EQ_U64(first[which], 1);
    CHECK_EQ_U64(off[which], 0);
    ss_lm_free(lm);
    ss_close(s);
}

/* Many documents: unshuffled sample k is tokens [k L, k L + L] of the
 * documents laid end to end in the document index's order; the shuffle is
 * a permutation; the separate_final_epoch rule on both sides. */
static void test_stream_and_epochs(void) {
    enum { N = 37 };
    uint16_t *store_docs[N];
    uint64_t lens[N], T = 0;
    uint64_t st = 12345;
    for (int d = 0; d < N; d++) {
        lens[d] = ss_test_rand(&st) % 6; /* empty documents too */
        store_docs[d] = malloc((lens[d] + 1) * sizeof(uint16_t));
        CHECK(store_docs[d]);
        for (uint64_t t = 0; t < lens[d]; t++) store_docs[d][t] = (uint16_t)(1 + d * 10 + t);
        T += lens[d] + 1;
    }
    const char *path = make_store("lm_stream.ss", (const uint16_t *const *)store_docs, lens, N, -1);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    const uint64_t L = 7, per = (T - 1) / L;
    /* E = 3 with a last epoch of from_final samples: separate iff
     * from_final < (int)(0.8 * per). */
    uint64_t sans = (2 * T - 1) / L;
    uint64_t asks[5] = {0, sans + per / 2, sans + per - 1, 5 * per, 0};
    int want_sep[5] = {0, 1, 0, 0, 0};
    for (int a = 0; a < 5; a++) {
        ss_lm_options o = SS_LM_OPTIONS_INIT;
        o.seq_length = L;
        o.seed = 2024 + (uint64_t)a;
        o.num_samples = asks[a];
        o.eod = 0;
        o.flags = SS_LM_APPEND_EOD;
        o.num_epochs = a == 4 ? 3 : 0; /* as num_samples (3 T - 1) / L */
        ss_lm *lm;
        CHECK_OK(ss_lm_create(&lm, s, 0, &o));
        ss_lm_info info;
        CHECK_OK(ss_lm_get_info(&info, lm));
        if (a == 1 || a == 2 || a == 4) CHECK_EQ_U64(info.num_epochs, 3);
        if (a == 4) CHECK_EQ_U64(info.num_samples, (3 * T - 1) / L);
        CHECK_EQ_U64(info.separate_final_epoch, want_sep[a]);
        uint64_t E = info.num_epochs, S = info.num_samples;
        if (a == 0) {
            /* numpy: rs = RandomState(2024); d = arange(37); rs.shuffle(d);
             * sh = arange(16); rs.shuffle(sh) (T = 119, S = 16): first 8 of each */
            static const uint64_t wd[8] = {13, 33, 31, 12, 21, 30, 25, 36};
            static const uint64_t ws[8] = {12, 11, 15, 3, 9, 6, 5, 13};
            CHECK_EQ_U64(T, 119);
            CHECK_EQ_U64(S, 16);
            for (uint64_t q = 0; q < 8; q++) {
                uint64_t first, off, k;
                CHECK_OK(ss_lm_sample_position(&first, &off, &k, lm, q));
                CHECK_EQ_U64(ss_lm_document(lm, q), wd[q]);
                CHECK_EQ_U64(k, ws[q]);
            }
        }
        CHECK(S >= asks[a]);
        CHECK_EQ_U64(S, (E * T - 1) / L);
        /* the stream in document-index order */
        int64_t *flat = malloc(E * T * sizeof *flat);
        uint64_t *count = calloc(N, sizeof *count), p = 0;
        CHECK(flat && count);
        for (uint64_t q = 0; q < E * N; q++) {
            uint64_t d = ss_lm_document(lm, q);
            CHECK(d < N);
            count[d]++;
            if (info.separate_final_epoch && q >= (E - 1) * N) CHECK_EQ_U64(count[d], E);
            for (uint64_t t = 0; t < lens[d]; t++) flat[p++] = store_docs[d][t];
            flat[p++] = 0;
        }
        for (int d = 0; d < N; d++) CHECK_EQ_U64(count[d], E);
        int64_t *tok = malloc(S * L * sizeof *tok), *lab = malloc(S * L * sizeof *lab);
        uint64_t *idx = malloc(S * sizeof *idx);
        char *seen = calloc(S, 1);
        CHECK(tok && lab && idx && seen);
        for (uint64_t i = 0; i < S; i++) idx[i] = i;
        ss_lm_batch b = {tok, lab, NULL, NULL, NULL, NULL, NULL};
        CHECK_OK(ss_lm_get(&b, lm, idx, S));
        for (uint64_t i = 0; i < S; i++) {
            uint64_t first, off, k;
            CHECK_OK(ss_lm_sample_position(&first, &off, &k, lm, i));
            CHECK(k < S && !seen[k]);
            seen[k] = 1;
            for (uint64_t t = 0; t < L; t++) {
                CHECK_EQ_U64(tok[i * L + t], flat[k * L + t]);
                CHECK_EQ_U64(lab[i * L + t], flat[k * L + t + 1]);
            }
        }
        free(flat), free(count), free(tok), free(lab), free(idx), free(seen);
        ss_lm_free(lm);
    }
    for (int d = 0; d < N; d++) free(store_docs[d]);
    ss_close(s);
}

/* The samples of a dataset (3 shards) equal those of one store holding the
 * same documents. */
static void test_dataset(void) {
    const char *text = ss_test_keep_path("lm_docs.txt");
    FILE *f = fopen(text, "w");
    CHECK(f);
    uint64_t st = 99;
    for (int d = 0; d < 60; d++) {
        for (uint64_t w = 0, n = ss_test_rand(&st) % 9; w < n; w++)
            fprintf(f, "w%d%s", (int)(ss_test_rand(&st) % 23), w + 1 < n ? " " : "\n");
        fputs("%\n", f);
    }
    CHECK(fclose(f) == 0);
    const char *single = ss_test_keep_path("lm_single.ss"), *dir = ss_test_keep_path("lm_ds");
    char err[4096];
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL,
                           "convert text %s --doc-sep %% --tokens words --eos -o %s --force", text,
                           single),
               0, err);
    mkdir(dir, 0755);
    for (int k = 0; k < 3; k++)
        CHECK_EXIT(ss_test_cli(err, sizeof err, NULL,
                               "convert text %s --doc-sep %% --tokens words --eos -o %s/p%d.ss "
                               "--force --shard %d/3",
                               text, dir, k, k),
                   0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", dir), 0, err);
    ss_store *a, *b;
    CHECK_OK(ss_open(&a, single, 0));
    CHECK_OK(ss_open(&b, dir, 0));
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.seq_length = 5;
    o.seed = 31337;
    o.num_samples = 200;
    o.flags = SS_LM_RESET_POSITION_IDS | SS_LM_RESET_ATTENTION_MASK | SS_LM_EOD_MASK_LOSS;
    ss_lm *la, *lb;
    CHECK_OK(ss_lm_create(&la, a, ss_test_field(a, "tokens"), &o));
    CHECK_OK(ss_lm_create(&lb, b, ss_test_field(b, "tokens"), &o));
    ss_lm_info ia, ib;
    CHECK_OK(ss_lm_get_info(&ia, la));
    CHECK_OK(ss_lm_get_info(&ib, lb));
    CHECK(ia.num_samples == ib.num_samples && ia.num_epochs == ib.num_epochs &&
          ia.tokens_per_epoch == ib.tokens_per_epoch && ia.documents == ib.documents &&
          ia.eod == ib.eod && ia.separate_final_epoch == ib.separate_final_epoch);
    CHECK(ia.num_epochs > 1);
    for (uint64_t i = 0; i < ia.num_samples; i++) {
        int64_t t[2][5], l[2][5], p[2][5];
        float m[2][5];
        int32_t g[2][5], cu[2][6], ns[2];
        ss_lm_batch ba = {t[0], l[0], m[0], p[0], g[0], cu[0], &ns[0]};
        ss_lm_batch bb = {t[1], l[1], m[1], p[1], g[1], cu[1], &ns[1]};
        CHECK_OK(ss_lm_get(&ba, la, &i, 1));
        CHECK_OK(ss_lm_get(&bb, lb, &i, 1));
        CHECK(!memcmp(t[0], t[1], sizeof t[0]) && !memcmp(l[0], l[1], sizeof l[0]) &&
              !memcmp(m[0], m[1], sizeof m[0]) && !memcmp(p[0], p[1], sizeof p[0]) &&
              !memcmp(g[0], g[1], sizeof g[0]) && !memcmp(cu[0], cu[1], sizeof cu[0]) &&
              ns[0] == ns[1]);
    }
    ss_lm_free(la);
    ss_lm_free(lb);
    ss_close(a);
    ss_close(b);
}

static void test_errors(void) {
    static const uint16_t d0[1] = {5};
    const uint16_t *docs[1] = {d0};
    uint64_t lens[1] = {1};
    const char *path = make_store("lm_errors.ss", docs, lens, 1, 0);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_lm *lm = (ss_lm *)1;
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.seq_length = 4;
    CHECK_RC(ss_lm_create(&lm, s, 0, &o), SS_EINVAL); /* 1 token per epoch */
    CHECK(lm == NULL);
    CHECK_CONTAINS(ss_error_message(), "fewer than 2");
    o.flags = SS_LM_APPEND_EOD;
    CHECK_RC(ss_lm_create(&lm, s, 0, &o), SS_EINVAL); /* append needs an explicit eod */
    o.flags = 0;
    o.seed = 1ull << 32;
    CHECK_RC(ss_lm_create(&lm, s, 0, &o), SS_EINVAL);
    CHECK_CONTAINS(ss_error_message(), "seed");
    o.seed = 0;
    o.seq_length = 1;
    CHECK_RC(ss_lm_create(&lm, s, 0, &o), SS_EINVAL);
    CHECK_CONTAINS(ss_error_message(), "seq_length 1");
    o.seq_length = 4;
    o.version = 99;
    CHECK_RC(ss_lm_create(&lm, s, 0, &o), SS_EINVAL);
    CHECK_CONTAINS(ss_error_message(), "version 99");
    o.version = SS_LM_OPTIONS_VERSION;
    o.flags = 1u << 20;
    CHECK_RC(ss_lm_create(&lm, s, 0, &o), SS_EINVAL);
    o.flags = 0;
    o.num_samples = 5;
    o.num_epochs = 2;
    CHECK_RC(ss_lm_create(&lm, s, 0, &o), SS_EINVAL);
    CHECK_CONTAINS(ss_error_message(), "give one");
    o.num_samples = o.num_epochs = 0;
    o.flags = 0;
    CHECK_RC(ss_lm_create(&lm, s, 1, &o), SS_EINVAL); /* f32 field */
    CHECK_CONTAINS(ss_error_message(), "'x'");
    CHECK_RC(ss_lm_create(&lm, s, 7, &o), SS_ERANGE);
    CHECK_RC(ss_lm_create(&lm, s, 0, NULL), SS_EINVAL);
    CHECK_RC(ss_lm_create(NULL, s, 0, &o), SS_EINVAL);
    CHECK_RC(ss_lm_get_info(NULL, NULL), SS_EINVAL);
    CHECK_RC(ss_lm_get(NULL, NULL, NULL, 0), SS_EINVAL);
    ss_lm_free(NULL);
    ss_close(s);
}

int main(void) {
    test_mt19937();
    test_masks();
    test_append_eod();
    test_stream_and_epochs();
    test_dataset();
    test_errors();
    puts("ok");
    return 0;
}
