/* SPDX-License-Identifier: BSD-2-Clause */
/* test_lm_pack.c - packed LM samples (SS_LM_PACKED in seqstore/lm.h):
 * property tests over random length distributions (every token of every
 * document exactly once per epoch, split documents in order, no row beyond
 * L, cu_seqlens and segment ids consistent, labels the next token), the
 * rows against a plain first-fit-decreasing written here, the padding and
 * split counts against plain concatenation, the Megatron layout's cut
 * count against the samples' boundaries, errors. */
#include "testutil.h"
#include "lm_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define EOD 65535

/* A store of one u16 sequence field 'tokens'; document d's token k is
 * base[d] + k + 1, unique over the store. */
static const char *make_store(const char *name, const uint64_t *lens, uint64_t n) {
    const char *path = ss_test_path(name);
    ss_field f[1] = {{"tokens", SS_U16, 1, 0, {0}}};
    ss_schema schema = {1, f};
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_FORCE;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &wo));
    uint16_t buf[4096];
    uint64_t next = 1;
    for (uint64_t d = 0; d < n; d++) {
        CHECK(lens[d] <= 4096);
        for (uint64_t k = 0; k < lens[d]; k++) buf[k] = (uint16_t)next++;
        ss_value v[1] = {{buf, lens[d]}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK(next < EOD);
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    return path;
}

/* Plain first-fit decreasing of remainders rem[0..m) (lengths) into rows
 * of L, a linear scan: row of each remainder, in the sorted order. */
static uint64_t naive_ffd(uint64_t *row_of, const uint64_t *rem, uint64_t m, uint64_t L,
                          uint64_t *room) {
    uint64_t *ord = malloc((m ? m : 1) * sizeof *ord), rows = 0;
    CHECK(ord);
    for (uint64_t i = 0; i < m; i++) ord[i] = i;
    for (uint64_t i = 1; i < m; i++) /* insertion sort: longest first, stable */
        for (uint64_t j = i; j > 0 && rem[ord[j - 1]] < rem[ord[j]]; j--) {
            uint64_t t = ord[j];
            ord[j] = ord[j - 1], ord[j - 1] = t;
        }
    for (uint64_t i = 0; i < m; i++) {
        uint64_t r = 0;
        while (r < rows && room[r] < rem[ord[i]]) r++;
        if (r == rows) room[rows++] = L;
        room[r] -= rem[ord[i]];
        row_of[ord[i]] = r;
    }
    free(ord);
    return rows;
}

/* Check one index: coverage, order, row contents, FFD, counts. */
static void check_packed(ss_lm *lm, const uint64_t *lens, uint64_t n, uint64_t L, uint64_t W) {
    ss_lm_info info;
    CHECK_OK(ss_lm_get_info(&info, lm));
    CHECK(info.layout == SS_LM_PACKED);
    const uint64_t S = info.num_samples, E = info.num_epochs;
    uint64_t *base = malloc(n * sizeof *base);
    uint64_t *seen = calloc(n, sizeof *seen); /* tokens of each document seen this epoch */
    CHECK(base && seen);
    for (uint64_t d = 0, b = 0; d < n; d++) base[d] = b, b += lens[d];
    int64_t *tok = malloc(L * sizeof *tok), *lab = malloc(L * sizeof *lab),
            *pos = malloc(L * sizeof *pos);
    float *mask = malloc(L * sizeof *mask);
    int32_t *seg = malloc(L * sizeof *seg), *cu = malloc((L + 1) * sizeof *cu), ns;
    CHECK(tok && lab && pos && mask && seg && cu);
    ss_lm_batch out = {tok, lab, mask, pos, seg, cu, &ns};
    uint64_t padding = 0, split = 0, row = 0;
    uint64_t *row_of = malloc(W * sizeof *row_of), *room = malloc(W * sizeof *room);
    uint64_t *rem = malloc(W * sizeof *rem);
    CHECK(row_of && room && rem);
    for (uint64_t e = 0; e < E; e++) {
        memset(seen, 0, n * sizeof *seen);
        uint64_t first_row = row;
        for (uint64_t w0 = 0; w0 < n; w0 += W) {
            uint64_t m = n - w0 < W ? n - w0 : W, full = 0;
            for (uint64_t p = 0; p < m; p++) {
                uint64_t sz = lens[ss_lm_document(lm, e * n + w0 + p)] + 1;
                full += sz / L;
                rem[p] = sz % L;
                split += sz > L;
            }
            /* the window's rows: its full pieces, then the packed remainders */
            uint64_t rows = naive_ffd(row_of, rem, m, L, room);
            for (uint64_t r = 0; r < rows; r++) padding += room[r];
            uint64_t k = row + full;
            for (uint64_t p = 0; p < m; p++) {
                if (!rem[p]) continue;
                uint64_t d = ss_lm_document(lm, e * n + w0 + p), found = 0;
                for (uint64_t j = lm->row_first[k + row_of[p]];
                     j < lm->row_first[k + row_of[p] + 1]; j++)
                    found += lm->piece_doc[j] == d && lm->piece_len[j] == rem[p];
                CHECK(found == 1);
            }
            row += full + rows;
        }
        /* every row of the epoch, read through ss_lm_get: its pieces are
         * the documents' tokens, each document's in order exactly once */
        uint64_t *inv = malloc((row - first_row) * sizeof *inv);
        CHECK(inv);
        for (uint64_t i = first_row; i < row; i++) {
            uint64_t k, f, o;
            CHECK_OK(ss_lm_sample_position(&f, &o, &k, lm, i));
            CHECK(k >= first_row && k < row); /* shuffled within its epoch */
            inv[k - first_row] = i;
        }
        for (uint64_t k = first_row; k < row; k++) { /* in the unshuffled order */
            uint64_t i = inv[k - first_row], f, o, k2;
            CHECK_OK(ss_lm_sample_position(&f, &o, &k2, lm, i));
            CHECK(k2 == k);
            CHECK_OK(ss_lm_get(&out, lm, &i, 1));
            CHECK(cu[0] == 0 && ns >= 1 && cu[ns] == (int32_t)L);
            for (int32_t g = 0; g < ns; g++) {
                CHECK(cu[g] < cu[g + 1]);
                for (int32_t t = cu[g]; t < cu[g + 1]; t++)
                    CHECK(seg[t] == g && pos[t] == t - cu[g]);
            }
            for (uint64_t t = (uint64_t)ns + 1; t <= L; t++) CHECK(cu[t] == (int32_t)L);
            uint64_t np = lm->row_first[k + 1] - lm->row_first[k], used = 0;
            CHECK(np >= 1 && (np == (uint64_t)ns || np + 1 == (uint64_t)ns));
            for (int32_t g = 0; g < (int32_t)np; g++) {
                uint64_t j = lm->row_first[k] + (uint64_t)g, d = lm->piece_doc[j];
                uint64_t off = lm->piece_off[j], len = lm->piece_len[j];
                CHECK(cu[g + 1] - cu[g] == (int32_t)len);
                used += len;
                CHECK(f == lm->piece_doc[lm->row_first[k]]);
                CHECK(off == seen[d]); /* in order, nothing skipped or repeated */
                for (int32_t t = cu[g]; t < cu[g + 1]; t++) {
                    uint64_t at = off + (uint64_t)(t - cu[g]);
                    int64_t want = at < lens[d] ? (int64_t)(base[d] + at + 1) : EOD;
                    int64_t next = at + 1 < lens[d] ? (int64_t)(base[d] + at + 2) : EOD;
                    CHECK(tok[t] == want && lab[t] == next);
                    CHECK(mask[t] == (at == lens[d] ? 0.0f : 1.0f));
                }
                seen[d] = off + len;
            }
            CHECK(used <= L && (used == L) == (np == (uint64_t)ns));
            for (uint64_t t = used; t < L; t++) /* padding */
                CHECK(tok[t] == EOD && lab[t] == EOD && mask[t] == 0.0f);
        }
        free(inv);
        for (uint64_t d = 0; d < n; d++) CHECK_EQ_U64(seen[d], lens[d] + 1);
    }
    CHECK(row == S);
    CHECK_EQ_U64(info.padding_tokens, padding);
    CHECK_EQ_U64(info.split_documents, split);
    free(base), free(seen), free(tok), free(lab), free(pos), free(mask), free(seg), free(cu);
    free(row_of), free(room), free(rem);
}

/* Plain concatenation in the same order cut into rows of L: documents cut. */
static uint64_t concat_cuts(ss_lm *lm, const uint64_t *lens, uint64_t n, uint64_t L, uint64_t E) {
    uint64_t at = 0, cuts = 0;
    for (uint64_t k = 0; k < E * n; k++) {
        uint64_t m = lens[ss_lm_document(lm, k)] + 1;
        cuts += (at % L) + m > L;
        at += m;
    }
    return cuts;
}

static void test_random_lengths(void) {
    uint64_t st = 4242;
    enum { N = 300 };
    uint64_t lens[N];
    /* distributions: uniform short, a long tail, many empty, mostly long */
    for (int dist = 0; dist < 4; dist++) {
        for (uint64_t d = 0; d < N; d++) {
            uint64_t r = ss_test_rand(&st);
            lens[d] = dist == 0   ? r % 60
                      : dist == 1 ? (r % 10 == 0 ? 100 + r % 300 : r % 20)
                      : dist == 2 ? (r % 3 == 0 ? 0 : r % 40)
                                  : 50 + r % 150;
        }
        const char *path = make_store("lm_pack.ss", lens, N);
        ss_store *s;
        CHECK_OK(ss_open(&s, path, 0));
        const uint64_t Ls[3] = {64, 128, 17}, Ws[3] = {N, 32, 7};
        for (int c = 0; c < 3; c++) {
            ss_lm_options o = SS_LM_OPTIONS_INIT;
            o.layout = SS_LM_PACKED;
            o.flags = SS_LM_APPEND_EOD;
            o.eod = EOD;
            o.seq_length = Ls[c];
            o.pack_window = Ws[c];
            o.seed = 17 + (uint64_t)c;
            o.num_epochs = 1 + (uint64_t)c % 2;
            ss_lm *lm;
            CHECK_OK(ss_lm_create(&lm, s, 0, &o));
            check_packed(lm, lens, N, Ls[c], Ws[c]);
            ss_lm_info info;
            CHECK_OK(ss_lm_get_info(&info, lm));
            uint64_t cuts = concat_cuts(lm, lens, N, Ls[c], info.num_epochs);
            printf("dist %d L %" PRIu64 " W %" PRIu64 ": %" PRIu64 " rows, padding %.4f, "
                   "%" PRIu64 " split; concatenation cuts %" PRIu64 "\n",
                   dist, Ls[c], Ws[c], info.num_samples,
                   (double)info.padding_tokens / (double)(info.num_samples * Ls[c]),
                   info.split_documents, cuts);
            CHECK(info.split_documents <= cuts);
            /* no document longer than L: none split, where concatenation cuts many */
            if ((dist == 0 || dist == 2) && Ls[c] >= 64) CHECK(info.split_documents == 0 && cuts > 50);
            ss_lm_free(lm);
        }
        /* num_samples: the fewest epochs with that many rows */
        ss_lm_options o = SS_LM_OPTIONS_INIT;
        o.layout = SS_LM_PACKED, o.flags = SS_LM_APPEND_EOD, o.eod = EOD, o.seq_length = 64;
        ss_lm *one, *lm;
        CHECK_OK(ss_lm_create(&one, s, 0, &o));
        ss_lm_info i1, i3;
        CHECK_OK(ss_lm_get_info(&i1, one));
        o.num_samples = 2 * i1.num_samples + 1;
        CHECK_OK(ss_lm_create(&lm, s, 0, &o));
        CHECK_OK(ss_lm_get_info(&i3, lm));
        CHECK(i3.num_epochs == 3 && i3.num_samples >= o.num_samples);
        /* the first epoch is the one-epoch index, row for row */
        for (uint64_t i = 0; i < i1.num_samples; i++) {
            int64_t a[64], b[64];
            ss_lm_batch ba = {a, NULL, NULL, NULL, NULL, NULL, NULL};
            ss_lm_batch bb = {b, NULL, NULL, NULL, NULL, NULL, NULL};
            CHECK_OK(ss_lm_get(&ba, one, &i, 1));
            CHECK_OK(ss_lm_get(&bb, lm, &i, 1));
            CHECK(!memcmp(a, b, sizeof a));
        }
        ss_lm_free(one);
        ss_lm_free(lm);
        ss_close(s);
    }
}

/* The Megatron layout's split count: documents a sample boundary (global
 * token k * L, k = 1..S-1, of the concatenation) falls strictly inside,
 * not on their last token. */
static void test_megatron_cuts(void) {
    uint64_t st = 7, lens[200];
    for (int d = 0; d < 200; d++) lens[d] = ss_test_rand(&st) % 50;
    const char *path = make_store("lm_cuts.ss", lens, 200);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.flags = SS_LM_APPEND_EOD, o.eod = EOD, o.seq_length = 32, o.num_epochs = 2;
    ss_lm *lm;
    CHECK_OK(ss_lm_create(&lm, s, 0, &o));
    ss_lm_info info;
    CHECK_OK(ss_lm_get_info(&info, lm));
    uint64_t at = 0, cuts = 0;
    for (uint64_t k = 0; k < info.num_epochs * 200; k++) {
        uint64_t m = lens[ss_lm_document(lm, k)] + 1, cut = 0;
        for (uint64_t b = 1; b < info.num_samples; b++)
            cut |= b * 32 > at && b * 32 < at + m - 1;
        cuts += cut;
        at += m;
    }
    CHECK_EQ_U64(info.split_documents, cuts);
    CHECK(info.padding_tokens == 0 && info.layout == SS_LM_MEGATRON);
    ss_lm_free(lm);
    ss_close(s);
}

static void test_errors(void) {
    uint64_t lens[2] = {3, 4};
    const char *path = make_store("lm_pack_err.ss", lens, 2);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.flags = SS_LM_APPEND_EOD, o.eod = EOD, o.seq_length = 4;
    ss_lm *lm = (ss_lm *)1;
    o.layout = 7;
    CHECK_RC(ss_lm_create(&lm, s, 0, &o), SS_EINVAL);
    CHECK(lm == NULL);
    CHECK_CONTAINS(ss_error_message(), "layout 7");
    o.layout = SS_LM_MEGATRON, o.pack_window = 8;
    CHECK_RC(ss_lm_create(&lm, s, 0, &o), SS_EINVAL);
    CHECK_CONTAINS(ss_error_message(), "pack_window 8");
    o.layout = SS_LM_PACKED, o.pack_window = 1ull << 31;
    CHECK_RC(ss_lm_create(&lm, s, 0, &o), SS_EINVAL);
    o.pack_window = 1;
    CHECK_OK(ss_lm_create(&lm, s, 0, &o));
    /* 4 and 5 tokens (eod included), L 4: rows [4], [4], [1] */
    ss_lm_info info;
    CHECK_OK(ss_lm_get_info(&info, lm));
    CHECK_EQ_U64(info.num_samples, 3);
    CHECK_EQ_U64(info.padding_tokens, 3);
    CHECK_EQ_U64(info.split_documents, 1);
    uint64_t i = 3;
    int64_t t[4];
    ss_lm_batch b = {t, NULL, NULL, NULL, NULL, NULL, NULL};
    CHECK_RC(ss_lm_get(&b, lm, &i, 1), SS_ERANGE);
    ss_lm_free(lm);
    ss_close(s);
}

int main(void) {
    test_random_lengths();
    test_megatron_cuts();
    test_errors();
    puts("ok");
    return 0;
}
