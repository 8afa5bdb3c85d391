/* SPDX-License-Identifier: BSD-2-Clause */
/* test_pieces.c - the piece splitter (hand-written flag tables and a naive
 * reference) and the lane assembler (pieces of one example in consecutive
 * batches, same row; every piece once per epoch). */
#include "testutil.h"

#include <string.h>

#define S_ SS_PIECE_SPLIT
#define C_ SS_PIECE_CONT
#define N_ SS_PIECE_HAS_NEXT

/* Store with "x" (u16 sequence), "y" (i32 label), "w" (u8 sequence, same length as x). */
static ss_store *make_store(const char *name, const uint64_t *lens, uint64_t n, int mismatch) {
    ss_field f[3] = {{"x", SS_U16, 1, 0, {0, 0, 0, 0}},
                     {"y", SS_I32, 0, 0, {0, 0, 0, 0}},
                     {"w", SS_U8, 1, 0, {0, 0, 0, 0}}};
    ss_schema schema = {3, f};
    ss_writer *w;
    const char *path = ss_test_path(name);
    CHECK_OK(ss_writer_create(&w, path, &schema, NULL));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t L = lens[i];
        uint16_t *x = malloc((L + 1) * sizeof *x);
        uint8_t *z = malloc(L + 1);
        for (uint64_t t = 0; t <= L; t++) {
            x[t] = (uint16_t)(i * 100 + t);
            z[t] = (uint8_t)t;
        }
        int32_t y = (int32_t)i * 10;
        ss_value v[3] = {{x, L}, {&y, 1}, {z, L + (mismatch && i == n - 1)}};
        CHECK_OK(ss_writer_append(w, v));
        free(x);
        free(z);
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    return s;
}

typedef struct row {
    uint64_t ex, t0, t1;
    uint32_t flags;
} row;

static void check_table(const ss_splitter *sp, const row *want, uint64_t n) {
    CHECK_EQ_U64(ss_splitter_count(sp), n);
    const ss_piece *p = ss_splitter_pieces(sp);
    for (uint64_t i = 0; i < n; i++) {
        CHECK_EQ_U64(p[i].example, want[i].ex);
        CHECK_EQ_U64(p[i].t0, want[i].t0);
        CHECK_EQ_U64(p[i].t1, want[i].t1);
        CHECK_EQ_U64(p[i].flags, want[i].flags);
    }
}

static void test_tables(void) {
    uint64_t lens[4] = {5, 3, 1, 7};
    ss_store *s = make_store("t5317.ss", lens, 4, 0);
    ss_split_options o = SS_SPLIT_OPTIONS_INIT;
    o.max_len = 3;
    ss_splitter *sp;
    CHECK_OK(ss_splitter_open(&sp, s, &o));
    /* 3,2 | 3 | 1 | 3,3,1 */
    row want[] = {{0, 0, 3, S_ | N_}, {0, 3, 5, S_ | C_},      {1, 0, 3, 0},      {2, 0, 1, 0},
                  {3, 0, 3, S_ | N_}, {3, 3, 6, S_ | C_ | N_}, {3, 6, 7, S_ | C_}};
    check_table(sp, want, 7);
    /* views: chosen fields sliced, the label whole with every piece */
    const ss_piece *p = ss_splitter_pieces(sp);
    ss_view v;
    CHECK_OK(ss_splitter_view(&v, sp, &p[5], 0));
    CHECK_EQ_U64(v.length, 3);
    CHECK_EQ_U64(((const uint16_t *)v.data)[0], 303);
    CHECK_OK(ss_splitter_view(&v, sp, &p[5], 2));
    CHECK_EQ_U64(((const uint8_t *)v.data)[2], 5);
    CHECK_OK(ss_splitter_view(&v, sp, &p[5], 1));
    CHECK_EQ_U64(*(const int32_t *)v.data, 30);
    CHECK_RC(ss_splitter_view(&v, sp, &p[5], 9), SS_ERANGE);
    ss_splitter_free(sp);

    /* min_len 2 drops the short pieces; flags describe the kept ones */
    o.min_len = 2;
    CHECK_OK(ss_splitter_open(&sp, s, &o));
    row want2[] = {{0, 0, 3, S_ | N_},
                   {0, 3, 5, S_ | C_},
                   {1, 0, 3, 0},
                   {3, 0, 3, S_ | N_},
                   {3, 3, 6, S_ | C_}};
    check_table(sp, want2, 5);
    CHECK_EQ_U64(ss_splitter_dropped_examples(sp), 1);
    ss_splitter_free(sp);

    /* only field 0 chosen: field 2 travels whole */
    uint32_t fields[1] = {0};
    o.min_len = 1;
    o.fields = fields;
    o.nfields = 1;
    uint64_t ex[2] = {3, 1};
    o.examples = ex;
    o.n_examples = 2;
    CHECK_OK(ss_splitter_open(&sp, s, &o));
    row want3[] = {{3, 0, 3, S_ | N_}, {3, 3, 6, S_ | C_ | N_}, {3, 6, 7, S_ | C_}, {1, 0, 3, 0}};
    check_table(sp, want3, 4);
    CHECK_OK(ss_splitter_view(&v, sp, &ss_splitter_pieces(sp)[1], 2));
    CHECK_EQ_U64(v.length, 7);
    ss_splitter_free(sp);

    /* errors */
    o = (ss_split_options)SS_SPLIT_OPTIONS_INIT;
    CHECK_RC(ss_splitter_open(&sp, s, &o), SS_EINVAL); /* max_len 0 */
    CHECK(sp == NULL);
    o.max_len = 2;
    o.min_len = 3;
    CHECK_RC(ss_splitter_open(&sp, s, &o), SS_EINVAL);
    o.min_len = 1;
    const unsigned bad_versions[2] = {0, SS_SPLIT_OPTIONS_VERSION + 1};
    for (int k = 0; k < 2; k++) {
        o.version = bad_versions[k]; /* unknown versions are refused, naming it */
        CHECK_RC(ss_splitter_open(&sp, s, &o), SS_EINVAL);
        CHECK(sp == NULL && strstr(ss_error_message(), "options version"));
    }
    o.version = SS_SPLIT_OPTIONS_VERSION;
    fields[0] = 1; /* a fixed field */
    o.fields = fields;
    o.nfields = 1;
    CHECK_RC(ss_splitter_open(&sp, s, &o), SS_EINVAL);
    ex[0] = 4;
    o.fields = NULL;
    o.examples = ex;
    o.n_examples = 1;
    CHECK_RC(ss_splitter_open(&sp, s, &o), SS_ERANGE);
    ss_close(s);

    s = make_store("mismatch.ss", lens, 4, 1);
    o = (ss_split_options)SS_SPLIT_OPTIONS_INIT;
    o.max_len = 2;
    CHECK_RC(ss_splitter_open(&sp, s, &o), SS_EINPUT);
    CHECK(strstr(ss_error_message(), "example 3") != NULL);
    ss_close(s);
}

/* Naive reference: walk every example's time steps one by one. */
static void test_against_naive(void) {
    uint64_t z = 11;
    for (int round = 0; round < 30; round++) {
        uint64_t n = 1 + ss_test_rand(&z) % 25, lens[25];
        for (uint64_t i = 0; i < n; i++) lens[i] = ss_test_rand(&z) % 30;
        char name[32];
        snprintf(name, sizeof name, "naive%d.ss", round);
        ss_store *s = make_store(name, lens, n, 0);
        ss_split_options o = SS_SPLIT_OPTIONS_INIT;
        o.max_len = 1 + ss_test_rand(&z) % 9;
        o.min_len = ss_test_rand(&z) % (o.max_len + 1);
        ss_splitter *sp;
        CHECK_OK(ss_splitter_open(&sp, s, &o));
        row want[25 * 31];
        uint64_t nw = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t first = nw, t0 = 0;
            do { /* cut at every max_len-th step */
                uint64_t t1 = t0;
                while (t1 < lens[i] && t1 - t0 < o.max_len) t1++;
                if (t1 - t0 >= o.min_len)
                    want[nw++] = (row){i, t0, t1, lens[i] > o.max_len ? (uint32_t)S_ : 0u};
                t0 = t1;
            } while (t0 < lens[i]);
            for (uint64_t k = first; k < nw; k++) {
                if (k > first) want[k].flags |= C_;
                if (k + 1 < nw) want[k].flags |= N_;
            }
        }
        check_table(sp, want, nw);
        ss_splitter_free(sp);
        ss_close(s);
    }
}

static void test_lanes(void) {
    uint64_t z = 5, n = 30, lens[30];
    for (uint64_t i = 0; i < n; i++) lens[i] = 1 + ss_test_rand(&z) % 40;
    ss_store *s = make_store("lanes.ss", lens, n, 0);
    ss_split_options so = SS_SPLIT_OPTIONS_INIT;
    so.max_len = 6;
    ss_splitter *sp;
    CHECK_OK(ss_splitter_open(&sp, s, &so));
    uint64_t np = ss_splitter_count(sp);
    for (int variant = 0; variant < 4; variant++) {
        ss_lanes_options lo = SS_LANES_OPTIONS_INIT;
        lo.lanes = 4;
        lo.shuffle = variant & 1;
        lo.seed = 99;
        lo.flags = (variant & 2) ? SS_LANES_SHRINK : 0;
        ss_lanes *la;
        CHECK_OK(ss_lanes_open(&la, sp, &lo));
        uint64_t first_order[2][30];
        for (int e = 0; e < 2; e++) {
            uint64_t seen[30] = {0}, got = 0, nfirst = 0;
            uint64_t last_ex[4], last_t1[4];
            for (int b = 0; b < 4; b++) last_ex[b] = UINT64_MAX, last_t1[b] = 0;
            const ss_lane_batch *bt;
            for (;;) {
                if (CHECK_NEXT(ss_lanes_next(&bt, la))) break;
                CHECK_EQ_U64(bt->epoch, (uint64_t)e);
                if (variant & 2)
                    CHECK_EQ_U64(bt->size, bt->active);
                else
                    CHECK_EQ_U64(bt->size, 4);
                for (uint32_t r = 0; r < bt->size; r++) {
                    uint32_t lane = bt->lane[r];
                    if (!bt->mask[r]) {
                        last_ex[lane] = UINT64_MAX;
                        continue;
                    }
                    const ss_piece *p = &bt->pieces[r];
                    got++;
                    seen[p->example] += p->t1 - p->t0;
                    if (p->flags & SS_PIECE_CONT) { /* same lane, the very next piece */
                        CHECK_EQ_U64(last_ex[lane], p->example);
                        CHECK_EQ_U64(last_t1[lane], p->t0);
                    } else {
                        CHECK(last_ex[lane] == UINT64_MAX || last_t1[lane] == lens[last_ex[lane]]);
                        first_order[e][nfirst++] = p->example;
                    }
                    last_ex[lane] = p->example;
                    last_t1[lane] = p->t1;
                }
            }
            CHECK_EQ_U64(got, np); /* every piece once per epoch */
            for (uint64_t i = 0; i < n; i++) CHECK_EQ_U64(seen[i], lens[i]);
        }
        if (lo.shuffle) CHECK(memcmp(first_order[0], first_order[1], sizeof first_order[0]) != 0);
        ss_lanes_free(la);
    }
    ss_lanes_options lo = SS_LANES_OPTIONS_INIT;
    lo.lanes = 0;
    ss_lanes *la;
    CHECK_RC(ss_lanes_open(&la, sp, &lo), SS_EINVAL);
    lo.lanes = 1;
    lo.version = SS_LANES_OPTIONS_VERSION + 1;
    CHECK_RC(ss_lanes_open(&la, sp, &lo), SS_EINVAL);
    CHECK(la == NULL && strstr(ss_error_message(), "options version"));
    ss_splitter_free(sp);
    ss_close(s);
}

int main(void) {
    test_tables();
    test_against_naive();
    test_lanes();
    printf("test_pieces: ok\n");
    return 0;
}
