/* SPDX-License-Identifier: BSD-2-Clause */
/* test_window.c - the stateful window reader (truncated BPTT over long
 * signals): exact windows, tiling and carry properties against a naive
 * model, the state machine, modes, layouts, save/restore and determinism. */
#include "testutil.h"

#include <sys/mman.h>
#include <unistd.h>

#include <math.h>
#include <string.h>

#define C 3 /* channels */

static int16_t val(uint64_t ex, uint64_t t, unsigned c) {
    return (int16_t)((int64_t)((ex * 131 + t * 7 + c * 3) % 20000) - 10000);
}

/* A store of sequences "x" [L][C] i16, label "y" i32, per-sample "z" u8. */
static ss_store *make_store(const char *name, const uint64_t *lens, uint64_t n,
                            const int32_t *labels) {
    ss_field f[3] = {{"x", SS_I16, 1, 1, {C, 0, 0, 0}},
                     {"y", SS_I32, 0, 0, {0, 0, 0, 0}},
                     {"z", SS_U8, 1, 0, {0, 0, 0, 0}}};
    ss_schema schema = {3, f};
    ss_writer *w;
    const char *path = ss_test_path(name);
    CHECK_OK(ss_writer_create(&w, path, &schema, NULL));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t L = lens[i];
        int16_t *x = malloc((L ? L : 1) * C * sizeof *x);
        uint8_t *z = malloc(L ? L : 1);
        for (uint64_t t = 0; t < L; t++) {
            for (unsigned c = 0; c < C; c++) x[t * C + c] = val(i, t, c);
            z[t] = (uint8_t)(t * 5 + i);
        }
        int32_t y = labels ? labels[i] : (int32_t)(i % 3);
        ss_value v[3] = {{x, L}, {&y, 1}, {z, L}};
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

/* Check the collated data of every active row against the store. */
static void check_data(const ss_window_batch *b, int time_major) {
    const int16_t *d = b->data;
    CHECK(b->dtype == SS_I16);
    for (uint32_t r = 0; r < b->size; r++) {
        for (uint64_t t = 0; t < b->window; t++) {
            int real = b->mask[r] && t < b->length[r];
            uint8_t sm =
                time_major ? b->step_mask[t * b->size + r] : b->step_mask[r * b->window + t];
            CHECK_EQ_U64(sm, real);
            for (unsigned c = 0; c < C; c++) {
                uint64_t at = (time_major ? t * b->size + r : r * b->window + t) * C + c;
                int16_t want = real ? val(b->example[r], b->start[r] + t, c) : 0;
                CHECK_EQ_U64((uint16_t)d[at], (uint16_t)want);
            }
        }
    }
}

/* Starts handed out for a single sequence of length L (B = 1). */
static uint64_t starts_of(ss_store *s, uint64_t W, uint64_t O, uint64_t *starts,
                          uint64_t *too_short) {
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.window = W;
    o.overlap = O;
    o.state_size = 4;
    ss_window_reader *r;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    ss_window_info info;
    ss_window_reader_info(&info, r);
    *too_short = info.too_short;
    uint64_t n = 0;
    for (;;) {
        const ss_window_batch *b;
        if (CHECK_NEXT(ss_window_reader_next(&b, r))) break;
        CHECK_EQ_U64(b->size, 1);
        CHECK_EQ_U64(b->length[0], W);
        CHECK_EQ_U64(b->reset[0], n == 0);
        check_data(b, 0);
        starts[n++] = b->start[0];
        float st[1] = {0};
        CHECK_OK(ss_window_reader_register(r, b, st));
    }
    ss_window_reader_free(r);
    return n;
}

static void test_exact_windows(void) {
    uint64_t L10 = 10, L3 = 3, st[8], ts;
    ss_store *s = make_store("exact10.ss", &L10, 1, NULL);
    CHECK_EQ_U64(starts_of(s, 4, 0, st, &ts), 2);
    CHECK_EQ_U64(st[0], 0);
    CHECK_EQ_U64(st[1], 4);
    CHECK_EQ_U64(ts, 0);
    CHECK_EQ_U64(starts_of(s, 4, 1, st, &ts), 3);
    CHECK_EQ_U64(st[0], 0);
    CHECK_EQ_U64(st[1], 3);
    CHECK_EQ_U64(st[2], 6);
    /* O >= W is a clear error */
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    ss_window_reader *r = (ss_window_reader *)&o;
    o.window = 4;
    o.overlap = 4;
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    CHECK(r == NULL);
    CHECK(strstr(ss_error_message(), "overlap") != NULL);
    o.overlap = 7;
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    o.overlap = 0;
    o.window = 0;
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    o.window = 4;
    o.lanes = 0;
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    o.lanes = 1;
    o.field = 1; /* a fixed field */
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_ESCHEMA);
    ss_close(s);

    s = make_store("exact3.ss", &L3, 1, NULL);
    CHECK_EQ_U64(starts_of(s, 4, 0, st, &ts), 0);
    CHECK_EQ_U64(ts, 1); /* counted as too short, not silently lost */
    ss_close(s);
}

/* Naive model: the windows of one sequence of length L starting at s. */
static uint64_t naive_windows(uint64_t L, uint64_t s, uint64_t W, uint64_t O) {
    uint64_t n = 0;
    for (uint64_t st = s; st + W <= L; st += W - O) n++;
    return n;
}

static void fill_state(uint8_t *dst, uint64_t H, uint64_t ex, uint64_t k) {
    uint64_t z = ex * 1000003u + k * 7919u + 1;
    for (uint64_t i = 0; i < H; i++) dst[i] = (uint8_t)(ss_test_rand(&z) >> 17);
}

typedef struct seq_track {
    uint64_t next_k;  /* next expected window index */
    uint64_t start0;  /* s */
    uint64_t covered; /* conv outputs covered up to here */
    uint32_t lane;
    int done;
} seq_track;

/* Run whole epochs and check every property against the naive model. */
static void property_run(uint64_t seed) {
    uint64_t rs = seed;
    uint64_t n = 5 + ss_test_rand(&rs) % 40;
    uint64_t W = 1 + ss_test_rand(&rs) % 12, O = ss_test_rand(&rs) % W;
    uint32_t B = 1 + (uint32_t)(ss_test_rand(&rs) % 7);
    uint64_t *lens = malloc(n * sizeof *lens);
    for (uint64_t i = 0; i < n; i++) lens[i] = ss_test_rand(&rs) % (5 * W + 3);
    char name[64];
    snprintf(name, sizeof name, "prop%llu.ss", (unsigned long long)seed);
    ss_store *s = make_store(name, lens, n, NULL);
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.window = W;
    o.overlap = O;
    o.lanes = B;
    o.state_size = 1 + ss_test_rand(&rs) % 9;
    o.mode = (seed & 1) ? SS_WINDOW_SEQUENTIAL_RANDOM_START : SS_WINDOW_SEQUENTIAL;
    o.shuffle = (seed >> 1) & 1;
    o.seed = seed * 77;
    o.flags = (seed & 4) ? SS_WINDOW_TIME_MAJOR : 0;
    /* a split: every other example, in reverse */
    uint64_t *split = malloc(n * sizeof *split), ns = 0;
    for (uint64_t i = n; i-- > 0;)
        if (i % 2 == 0 || (seed & 8)) split[ns++] = i;
    o.examples = split;
    o.n_examples = ns;
    ss_window_reader *r;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    uint64_t H = o.state_size;
    uint8_t *fin = malloc(B * H), *want = malloc(H);
    seq_track *tr = calloc(n, sizeof *tr);
    for (uint64_t epoch = 0; epoch < 2; epoch++) {
        memset(tr, 0, n * sizeof *tr);
        uint64_t expect_total = 0, too_short = 0, got = 0;
        for (uint64_t q = 0; q < ns; q++) too_short += lens[split[q]] < W;
        ss_window_info info;
        ss_window_reader_info(&info, r);
        CHECK_EQ_U64(info.too_short, too_short);
        CHECK_EQ_U64(info.epoch, epoch);
        for (;;) {
            const ss_window_batch *b;
            if (CHECK_NEXT(ss_window_reader_next(&b, r))) break;
            CHECK_EQ_U64(b->size, B);
            check_data(b, (seed & 4) != 0);
            for (uint32_t i = 0; i < b->size; i++) {
                if (!b->mask[i]) continue;
                uint64_t ex = b->example[i];
                for (uint32_t j = 0; j < i; j++) /* no batch holds two windows of one sequence */
                    CHECK(!b->mask[j] || b->example[j] != ex);
                seq_track *t = &tr[ex];
                CHECK(!t->done); /* DONE never comes back within an epoch */
                CHECK_EQ_U64(b->index[i], t->next_k);
                if (t->next_k == 0) {
                    uint64_t L = lens[ex];
                    uint64_t hi = L - W < W - O ? L - W : W - O;
                    if (o.mode == SS_WINDOW_SEQUENTIAL)
                        CHECK_EQ_U64(b->start[i], 0);
                    else
                        CHECK(b->start[i] <= hi);
                    t->start0 = b->start[i];
                    t->covered = b->start[i] + O;
                    t->lane = b->lane[i];
                    CHECK(b->reset[i]);
                    for (uint64_t h = 0; h < H; h++)
                        CHECK_EQ_U64(((uint8_t *)b->state)[i * H + h], 0);
                } else {
                    CHECK(!b->reset[i]);
                    CHECK_EQ_U64(b->lane[i], t->lane); /* a lane keeps its sequence */
                    fill_state(want, H, ex, t->next_k - 1);
                    CHECK(memcmp((uint8_t *)b->state + i * H, want, H) == 0);
                }
                /* conv outputs tile: this window's outputs start where the last ended */
                CHECK_EQ_U64(b->start[i] + O, t->covered);
                t->covered = b->start[i] + W;
                fill_state(fin + i * H, H, ex, t->next_k);
                t->next_k++;
                got++;
            }
            CHECK_OK(ss_window_reader_register(r, b, fin));
            for (uint32_t i = 0; i < b->size; i++) {
                if (!b->mask[i]) continue;
                uint64_t ex = b->example[i];
                uint64_t q = 0;
                while (split[q] != ex) q++;
                uint64_t nw = naive_windows(lens[ex], tr[ex].start0, W, O);
                if (tr[ex].next_k == nw) {
                    tr[ex].done = 1;
                    CHECK(ss_window_reader_seq_state(r, q) == SS_SEQ_DONE);
                } else {
                    CHECK(ss_window_reader_seq_state(r, q) == SS_SEQ_NORMAL);
                }
            }
        }
        /* every window of every sequence exactly once; the last window was full
         * and the next one would run past the end */
        for (uint64_t q = 0; q < ns; q++) {
            uint64_t ex = split[q], L = lens[ex];
            if (L < W) {
                CHECK_EQ_U64(tr[ex].next_k, 0);
                continue;
            }
            uint64_t nw = naive_windows(L, tr[ex].start0, W, O);
            CHECK_EQ_U64(tr[ex].next_k, nw);
            CHECK(tr[ex].done);
            CHECK(tr[ex].covered <= L);
            CHECK(tr[ex].covered + (W - O) > L);
            expect_total += nw;
        }
        CHECK_EQ_U64(got, expect_total);
    }
    free(tr);
    free(fin);
    free(want);
    free(split);
    free(lens);
    ss_window_reader_free(r);
    ss_close(s);
}

/* Record every batch of a run (example, start, reset, data, state) as bytes. */
typedef struct recorder {
    uint8_t *buf;
    size_t n, cap;
} recorder;

static void rec(recorder *rc, const void *p, size_t n) {
    if (rc->n + n > rc->cap) {
        rc->cap = (rc->n + n) * 2;
        rc->buf = realloc(rc->buf, rc->cap);
        CHECK(rc->buf != NULL);
    }
    memcpy(rc->buf + rc->n, p, n);
    rc->n += n;
}

static void record_batch(recorder *rc, const ss_window_batch *b, uint64_t H) {
    rec(rc, &b->size, sizeof b->size);
    rec(rc, &b->epoch, sizeof b->epoch);
    rec(rc, b->mask, b->size);
    rec(rc, b->reset, b->size);
    rec(rc, b->example, b->size * 8);
    rec(rc, b->start, b->size * 8);
    rec(rc, b->data, b->size * b->window * b->channels * ss_dtype_size(b->dtype));
    if (H) rec(rc, b->state, b->size * H);
}

/* Run `nb` batches (registering made-up states), recording them. */
static void run_batches(ss_window_reader *r, uint64_t nb, uint64_t H, recorder *rc) {
    uint8_t fin[16 * 64];
    for (uint64_t k = 0; k < nb; k++) {
        const ss_window_batch *b;
        if (CHECK_NEXT(ss_window_reader_next(&b, r))) { /* the end of an epoch */
            if (rc) rec(rc, "END", 3);
            continue;
        }
        if (rc) record_batch(rc, b, H);
        for (uint32_t i = 0; i < b->size; i++)
            fill_state(fin + i * H, H, b->example[i], b->start[i]);
        CHECK_OK(ss_window_reader_register(r, b, fin));
    }
}

static ss_window_options std_options(void) {
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.window = 7;
    o.overlap = 2;
    o.lanes = 5;
    o.state_size = 4;
    o.state_dtype = SS_F32;
    o.mode = SS_WINDOW_SEQUENTIAL_RANDOM_START;
    o.shuffle = 1;
    o.seed = 42;
    return o;
}

static void test_state_machine(ss_store *s) {
    ss_window_options o = std_options();
    ss_window_reader *r;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    const ss_window_batch *b, *b2;
    CHECK_OK(ss_window_reader_next(&b, r));
    CHECK(b->size == 5 && b->active == 5);
    for (uint32_t i = 0; i < b->size; i++)
        CHECK(ss_window_reader_seq_state(r, b->example[i]) == SS_SEQ_BLOCKED);
    /* next before registering: the documented error */
    CHECK_RC(ss_window_reader_next(&b2, r), SS_ESTATE);
    CHECK(b2 == NULL);
    CHECK(strstr(ss_error_message(), "register") != NULL);
    CHECK_RC(ss_window_reader_register(r, b, NULL), SS_EINVAL);
    float fin[5 * 4] = {0};
    CHECK_OK(ss_window_reader_register(r, b, fin));
    CHECK_RC(ss_window_reader_register(r, b, fin), SS_ESTATE);
    CHECK_OK(ss_window_reader_next(&b2, r));
    /* save with a pending batch is refused */
    uint8_t blob[4096];
    CHECK_RC(ss_window_reader_state_save(blob, sizeof blob, NULL, r, 0), SS_ESTATE);
    CHECK_OK(ss_window_reader_register(r, b2, fin));
    ss_window_reader_free(r);

    /* max_pending 2: other eligible sequences are served meanwhile, and the
     * carry stays exact under any registration order */
    o.max_pending = 2;
    o.lanes = 3;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    uint64_t H = 16, rs = 9;
    uint64_t *last_k = calloc(64, sizeof *last_k);
    uint8_t want[16], fin2[3 * 16];
    const ss_window_batch *pend[2] = {NULL, NULL};
    int npend = 0, epochs = 0;
    uint64_t got = 0;
    while (epochs < 2) {
        int rc = ss_window_reader_next(&b, r);
        if (rc == SS_ESTATE) { /* both pending, or nothing servable: register one */
            CHECK(npend > 0);
            int k = (int)(ss_test_rand(&rs) % (uint64_t)npend);
            const ss_window_batch *p = pend[k];
            for (uint32_t i = 0; i < p->size; i++)
                fill_state(fin2 + i * H, H, p->example[i], p->index[i]);
            CHECK_OK(ss_window_reader_register(r, p, fin2));
            pend[k] = pend[--npend];
            continue;
        }
        if (rc == SS_ITEROVER) {
            CHECK_EQ_U64(npend, 0);
            epochs++;
            memset(last_k, 0, 64 * sizeof *last_k);
            continue;
        }
        CHECK_OK(rc);
        for (uint32_t i = 0; i < b->size; i++) {
            if (!b->mask[i]) continue;
            got++;
            for (int k = 0; k < npend; k++) /* at most one window of a sequence in flight */
                for (uint32_t j = 0; j < pend[k]->size; j++)
                    CHECK(!pend[k]->mask[j] || pend[k]->example[j] != b->example[i]);
            CHECK_EQ_U64(b->index[i], last_k[b->example[i]]);
            if (b->index[i] > 0) {
                fill_state(want, H, b->example[i], b->index[i] - 1);
                CHECK(memcmp((uint8_t *)b->state + i * H, want, H) == 0);
            }
            last_k[b->example[i]]++;
        }
        pend[npend++] = b;
    }
    ss_window_info info;
    ss_window_reader_info(&info, r);
    CHECK(got > 0);
    free(last_k);
    ss_window_reader_free(r);
}

static void test_save_restore_and_threads(ss_store *s) {
    ss_window_options o = std_options();
    ss_window_reader *a, *b;
    CHECK_OK(ss_window_reader_open(&a, s, &o));
    run_batches(a, 13, 16, NULL);
    size_t n = ss_window_reader_state_size(a, SS_WINDOW_SAVE_STATES);
    uint8_t *blob = malloc(n);
    size_t need = 0;
    CHECK_RC(ss_window_reader_state_save(blob, n - 1, &need, a, SS_WINDOW_SAVE_STATES), SS_EBUFS);
    CHECK_EQ_U64(need, n);
    CHECK_OK(ss_window_reader_state_save(blob, n, NULL, a, SS_WINDOW_SAVE_STATES));
    recorder ra = {0}, rb = {0};
    run_batches(a, 60, 16, &ra);
    o.threads = 2;
    CHECK_OK(ss_window_reader_open(&b, s, &o));
    CHECK_RC(ss_window_reader_state_load(b, blob, n - 9), SS_EINVAL);
    CHECK_RC(ss_window_reader_state_load(b, "garbage!", 8), SS_EINVAL);
    CHECK_OK(ss_window_reader_state_load(b, blob, n));
    run_batches(b, 60, 16, &rb);
    CHECK_EQ_U64(ra.n, rb.n);
    CHECK(memcmp(ra.buf, rb.buf, ra.n) == 0);
    /* a sequence's windows that are not its own (a start past the stride,
     * a window count that does not follow from the start): refused */
    for (int word = 0; word < 2; word++) {
        uint8_t *bad = malloc(n);
        CHECK(bad != NULL);
        memcpy(bad, blob, n);
        size_t at = 8 * (3 + 12 + 9 + (size_t)o.lanes + 5 * 7 + (size_t)word); /* sequence 7 */
        bad[at + 1] ^= 0x10; /* + 4096 */
        CHECK_RC(ss_window_reader_state_load(b, bad, n), SS_EINVAL);
        CHECK(strstr(ss_error_message(), "inconsistent") != NULL);
        free(bad);
    }
    ss_window_reader_free(b);
    /* another seed is another split of options: refused */
    o.seed = 43;
    CHECK_OK(ss_window_reader_open(&b, s, &o));
    CHECK_RC(ss_window_reader_state_load(b, blob, n), SS_EINVAL);
    ss_window_reader_free(b);
    ss_window_reader_free(a);

    /* same seed, any thread count: same batches */
    recorder rt[3] = {{0}, {0}, {0}};
    double gain[C] = {0.5, -2, 0.125}, off[C] = {1, 0, -3};
    for (int k = 0; k < 3; k++) {
        o = std_options();
        o.threads = k + 1;
        o.out_dtype = SS_F32;
        o.gain = gain;
        o.offset = off;
        o.n_gain = o.n_offset = C;
        CHECK_OK(ss_window_reader_open(&a, s, &o));
        const ss_window_batch *b1;
        CHECK_OK(ss_window_reader_next(&b1, a)); /* physical = digital * gain + offset */
        CHECK(b1->dtype == SS_F32);
        for (uint32_t r = 0; r < b1->size; r++)
            for (uint64_t t = 0; t < b1->window; t++)
                for (unsigned c = 0; c < C; c++) {
                    float got = ((const float *)b1->data)[(r * b1->window + t) * C + c];
                    double want = val(b1->example[r], b1->start[r] + t, c) * gain[c] + off[c];
                    CHECK(fabs(got - want) <= 1e-3 * (1 + fabs(want)));
                }
        CHECK_RC(ss_window_reader_set_epoch(a, 0), SS_ESTATE); /* not registered: refused */
        ss_window_reader_free(a);
        CHECK_OK(ss_window_reader_open(&a, s, &o));
        run_batches(a, 50, 16, &rt[k]);
        ss_window_reader_free(a);
    }
    CHECK(rt[0].n == rt[1].n && rt[0].n == rt[2].n);
    CHECK(memcmp(rt[0].buf, rt[1].buf, rt[0].n) == 0);
    CHECK(memcmp(rt[0].buf, rt[2].buf, rt[0].n) == 0);
    /* and a different seed gives a different run */
    o.seed = 7;
    recorder rd = {0};
    CHECK_OK(ss_window_reader_open(&a, s, &o));
    run_batches(a, 50, 16, &rd);
    ss_window_reader_free(a);
    CHECK(rd.n != rt[0].n || memcmp(rd.buf, rt[0].buf, rd.n) != 0);
    free(ra.buf);
    free(rb.buf);
    free(rd.buf);
    for (int k = 0; k < 3; k++) free(rt[k].buf);
    free(blob);
}

static void test_random_start_reproducible(ss_store *s, const uint64_t *lens) {
    ss_window_options o = std_options();
    o.lanes = 1;
    o.shuffle = 0;
    uint64_t first[2][3][64];
    memset(first, 0, sizeof first);
    for (int run = 0; run < 2; run++) {
        ss_window_reader *r;
        CHECK_OK(ss_window_reader_open(&r, s, &o));
        for (int e = 0; e < 3; e++) {
            const ss_window_batch *b;
            for (;;) {
                if (CHECK_NEXT(ss_window_reader_next(&b, r))) break;
                if (b->index[0] == 0) {
                    uint64_t L = lens[b->example[0]];
                    uint64_t hi =
                        L - o.window < o.window - o.overlap ? L - o.window : o.window - o.overlap;
                    CHECK(b->start[0] <= hi);
                    first[run][e][b->example[0]] = b->start[0];
                }
                float f[4] = {0};
                CHECK_OK(ss_window_reader_register(r, b, f));
            }
        }
        ss_window_reader_free(r);
    }
    CHECK(memcmp(first[0], first[1], sizeof first[0]) == 0);
    CHECK(memcmp(first[0][0], first[0][1], sizeof first[0][0]) != 0); /* epochs differ */
    /* set_epoch reproduces an epoch */
    ss_window_reader *r;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    CHECK_OK(ss_window_reader_set_epoch(r, 2));
    const ss_window_batch *b;
    CHECK_OK(ss_window_reader_next(&b, r));
    CHECK_EQ_U64(b->epoch, 2);
    CHECK_EQ_U64(b->start[0], first[0][2][b->example[0]]);
    ss_window_reader_free(r);
}

static void test_random_mode(ss_store *s, const uint64_t *lens, uint64_t n) {
    ss_window_options o = std_options();
    o.mode = SS_WINDOW_RANDOM;
    o.lanes = 4;
    o.epoch_windows = 37;
    ss_window_reader *r;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    for (int e = 0; e < 2; e++) {
        uint64_t got = 0;
        const ss_window_batch *b;
        for (;;) {
            if (CHECK_NEXT(ss_window_reader_next(&b, r))) break; /* no registration needed */
            for (uint32_t i = 0; i < b->size; i++) {
                if (!b->mask[i]) continue;
                got++;
                CHECK(b->reset[i]);
                CHECK(b->example[i] < n);
                CHECK(b->start[i] + o.window <= lens[b->example[i]]);
                for (uint32_t j = 0; j < i; j++)
                    CHECK(!b->mask[j] || b->example[j] != b->example[i]);
                for (uint64_t h = 0; h < 16; h++)
                    CHECK_EQ_U64(((uint8_t *)b->state)[i * 16 + h], 0);
            }
            check_data(b, 0);
        }
        CHECK_EQ_U64(got, 37);
    }
    ss_window_reader_free(r);
}

static void test_forget_and_initial_state(ss_store *s) {
    ss_window_options o = std_options();
    float init[4] = {1.5f, -2, 3, 4};
    o.initial_state = init;
    o.flags = SS_WINDOW_FORGET_STATE;
    ss_window_reader *r;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    const ss_window_batch *b;
    for (int k = 0; k < 30; k++) {
        CHECK_OK(ss_window_reader_next(&b, r)); /* registration is optional */
        for (uint32_t i = 0; i < b->size; i++) {
            if (!b->mask[i]) continue;
            CHECK(b->reset[i]);
            CHECK(memcmp((float *)b->state + i * 4, init, sizeof init) == 0);
        }
    }
    ss_window_reader_free(r);
    /* with carry the initial state is handed out on reset only */
    o.flags = 0;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    CHECK_OK(ss_window_reader_next(&b, r));
    CHECK(memcmp(b->state, init, sizeof init) == 0);
    float fin[5 * 4];
    for (int i = 0; i < 20; i++) fin[i] = (float)i;
    CHECK_OK(ss_window_reader_register(r, b, fin));
    CHECK_OK(ss_window_reader_next(&b, r));
    for (uint32_t i = 0; i < b->size; i++)
        if (!b->reset[i]) CHECK(memcmp((float *)b->state + i * 4, fin + i * 4, 16) == 0);
    ss_window_reader_free(r);
}

/* Evaluation: PAD_TAIL covers every conv output exactly once. */
static void test_pad_tail(ss_store *s, const uint64_t *lens, uint64_t n) {
    for (uint64_t O = 0; O < 3; O++) {
        ss_window_options o = SS_WINDOW_OPTIONS_INIT;
        o.window = 6;
        o.overlap = O;
        o.lanes = 3;
        o.flags = SS_WINDOW_PAD_TAIL | (O == 1 ? SS_WINDOW_TIME_MAJOR : 0);
        ss_window_reader *r;
        CHECK_OK(ss_window_reader_open(&r, s, &o));
        uint8_t *seen = calloc(n * 200, 1);
        const ss_window_batch *b;
        for (;;) {
            if (CHECK_NEXT(ss_window_reader_next(&b, r))) break;
            check_data(b, O == 1);
            for (uint32_t i = 0; i < b->size; i++) {
                if (!b->mask[i]) continue;
                CHECK(b->length[i] > O); /* every window has a conv output */
                for (uint64_t t = b->start[i] + O; t < b->start[i] + b->length[i]; t++)
                    seen[b->example[i] * 200 + t]++;
            }
        }
        ss_window_info info;
        ss_window_reader_info(&info, r);
        uint64_t short_ = 0;
        for (uint64_t e = 0; e < n; e++) {
            if (lens[e] <= O) short_++;
            for (uint64_t t = 0; t < lens[e]; t++) CHECK_EQ_U64(seen[e * 200 + t], t >= O ? 1 : 0);
        }
        CHECK_EQ_U64(info.too_short, short_);
        free(seen);
        ss_window_reader_free(r);
    }
}

static void test_balanced_labels_targets(void) {
    uint64_t lens[12];
    int32_t labels[12];
    for (int i = 0; i < 12; i++) {
        lens[i] = 10 + (uint64_t)i * 3;
        labels[i] = i < 3 ? 7 : -1; /* 3 of class 7, 9 of class -1 */
    }
    ss_store *s = make_store("balanced.ss", lens, 12, labels);
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.window = 5;
    o.overlap = 1;
    o.lanes = 4;
    o.label_field = 1;
    o.shuffle = 1;
    o.seed = 5;
    o.flags = SS_WINDOW_BALANCED | SS_WINDOW_LABEL_PER_STEP;
    ss_window_reader *r;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    ss_window_info info;
    ss_window_reader_info(&info, r);
    CHECK_EQ_U64(info.classes, 2);
    const ss_window_batch *b;
    uint64_t batches = 0;
    int32_t *tg = malloc(4 * 4 * sizeof *tg);
    uint8_t *zt = malloc(4 * 4);
    for (int e = 0; e < 2; e++) {
        for (;;) {
            if (CHECK_NEXT(ss_window_reader_next(&b, r))) break;
            batches++;
            CHECK_EQ_U64(b->active, 4);
            int pos = 0;
            for (uint32_t i = 0; i < 4; i++) {
                int32_t lab;
                memcpy(&lab, (const uint8_t *)b->label + (i * 5) * 4, 4);
                CHECK_EQ_U64((uint32_t)lab, (uint32_t)labels[b->example[i]]);
                for (int t = 1; t < 5; t++) /* repeated per step */
                    CHECK(memcmp((const uint8_t *)b->label + (i * 5 + (uint64_t)t) * 4, &lab, 4) ==
                          0);
                pos += lab == 7;
            }
            CHECK_EQ_U64(pos, 2); /* every batch holds the same number of each label */
            /* conv-aligned targets: first O dropped */
            CHECK_OK(ss_window_reader_targets(tg, r, b, 1, SS_I32));
            CHECK_OK(ss_window_reader_targets(zt, r, b, 2, SS_U8));
            for (uint32_t i = 0; i < 4; i++)
                for (uint64_t t = 0; t < 4; t++) {
                    CHECK_EQ_U64((uint32_t)tg[i * 4 + t], (uint32_t)labels[b->example[i]]);
                    CHECK_EQ_U64(zt[i * 4 + t],
                                 (uint8_t)((b->start[i] + 1 + t) * 5 + b->example[i]));
                }
            CHECK_OK(ss_window_reader_register(r, b, NULL));
        }
    }
    CHECK(batches > 4);
    free(tg);
    free(zt);
    ss_window_reader_free(r);
    /* B not a multiple of the classes */
    o.lanes = 3;
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    ss_close(s);
}

static void test_shrink(ss_store *s) {
    ss_window_options o = std_options();
    o.flags = SS_WINDOW_SHRINK;
    ss_window_reader *r;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    const ss_window_batch *b;
    int shrunk = 0;
    float fin[5 * 4] = {0};
    for (;;) {
        if (CHECK_NEXT(ss_window_reader_next(&b, r))) break;
        CHECK_EQ_U64(b->size, b->active);
        shrunk |= b->size < 5;
        for (uint32_t i = 0; i < b->size; i++) CHECK(b->mask[i]);
        CHECK_OK(ss_window_reader_register(r, b, fin));
    }
    CHECK(shrunk);
    ss_window_reader_free(r);
}

/* Big enough batches to collate in parallel: both layouts, i16 and f32, the
 * same bytes for 1, 2 and 3 threads, and the time-major batch is the
 * transpose of the batch-major one. */
static void test_parallel_layouts(void) {
    uint64_t lens[12];
    for (int i = 0; i < 12; i++) lens[i] = 2500 + (uint64_t)i * 97;
    ss_store *s = make_store("big.ss", lens, 12, NULL);
    double gain[C] = {0.25, 3, -1}, off[C] = {0.5, -7, 2};
    uint8_t *first[2] = {NULL, NULL};
    size_t bytes = 6 * 500 * C * 4;
    for (int layout = 0; layout < 2; layout++)
        for (int f32 = 0; f32 < 2; f32++)
            for (int th = 1; th <= 3; th++) {
                ss_window_options o = SS_WINDOW_OPTIONS_INIT;
                o.window = 500;
                o.overlap = 100;
                o.lanes = 6;
                o.mode = SS_WINDOW_SEQUENTIAL_RANDOM_START;
                o.shuffle = 1;
                o.seed = 3;
                o.threads = th;
                o.flags = layout ? SS_WINDOW_TIME_MAJOR : 0;
                if (f32) {
                    o.out_dtype = SS_F32;
                    o.gain = gain;
                    o.offset = off;
                    o.n_gain = o.n_offset = C;
                }
                ss_window_reader *r;
                CHECK_OK(ss_window_reader_open(&r, s, &o));
                const ss_window_batch *b;
                for (int k = 0; k < 9; k++) CHECK_OK(ss_window_reader_next(&b, r));
                CHECK(b->size == 6);
                if (!f32) {
                    check_data(b, layout);
                } else if (th == 1 && !first[layout]) {
                    first[layout] = malloc(bytes);
                    memcpy(first[layout], b->data, bytes);
                } else {
                    CHECK(memcmp(first[layout], b->data, bytes) == 0);
                }
                ss_window_reader_free(r);
            }
    const float *bm = (const float *)first[0], *tm = (const float *)first[1];
    for (uint64_t row = 0; row < 6; row++)
        for (uint64_t t = 0; t < 500; t++)
            for (unsigned c = 0; c < C; c++)
                CHECK(bm[(row * 500 + t) * C + c] == tm[(t * 6 + row) * C + c]);
    free(first[0]);
    free(first[1]);
    ss_close(s);
}

/* ------------------------------------------------ drop last, redraw */

/* SS_WINDOW_DROP_LAST (the NAS reader's EpochDone): sequences of 3, 1 and 3
 * windows (W 4, O 0), B 2, lane-keeps-sequence: (s0 w0, s1 w0) (s0 w1, s2
 * w0) (s0 w2, s2 w1) then (-, s2 w2). Without the flag the fourth batch
 * has one window; with it the epoch ends there, and epoch 1 starts over. */
static void test_drop_last(void) {
    uint64_t lens[3] = {12, 4, 12};
    ss_store *s = make_store("drop.ss", lens, 3, NULL);
    for (int drop = 0; drop < 2; drop++) {
        ss_window_options o = SS_WINDOW_OPTIONS_INIT;
        o.window = 4;
        o.lanes = 2;
        o.flags = drop ? SS_WINDOW_DROP_LAST : 0;
        ss_window_reader *r;
        CHECK_OK(ss_window_reader_open(&r, s, &o));
        const uint64_t want_ex[4][2] = {{0, 1}, {0, 2}, {0, 2}, {UINT64_MAX, 2}};
        const uint64_t want_k[4][2] = {{0, 0}, {1, 0}, {2, 1}, {0, 2}};
        const ss_window_batch *b;
        for (int k = 0; k < (drop ? 3 : 4); k++) {
            CHECK_OK(ss_window_reader_next(&b, r));
            CHECK_EQ_U64(b->size, 2);
            CHECK_EQ_U64(b->active, k == 3 ? 1 : 2);
            for (uint32_t row = 0; row < 2; row++) {
                if (want_ex[k][row] == UINT64_MAX) {
                    CHECK_EQ_U64(b->mask[row], 0);
                    continue;
                }
                CHECK_EQ_U64(b->example[row], want_ex[k][row]);
                CHECK_EQ_U64(b->index[row], want_k[k][row]);
            }
            check_data(b, 0);
        }
        CHECK_RC(ss_window_reader_next(&b, r), SS_ITEROVER); /* the end of epoch 0 */
        CHECK(b == NULL);
        CHECK_OK(ss_window_reader_next(&b, r));
        CHECK(b->epoch == 1 && b->example[0] == 0 && b->index[0] == 0 && b->example[1] == 1);
        ss_window_reader_free(r);
    }
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.window = 4;
    o.flags = SS_WINDOW_DROP_LAST;
    o.max_pending = 2;
    ss_window_reader *r;
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    o.max_pending = 0;
    o.flags = 1u << 12;
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "unknown flags"));
    ss_close(s);
}

/* SS_WINDOW_REDRAW: every window of every eligible sequence exactly once
 * per epoch, in order within its sequence, with its carried state (the
 * registered final state of window k is handed out with window k + 1),
 * distinct sequences within a batch, and lanes that change sequence before
 * it is done; the epoch ends only when no window is left. Deterministic per
 * (seed, epoch). Two sequences in two lanes: every batch holds both until
 * the shorter is done. */
static void test_redraw(ss_store *s, const uint64_t *lens, uint64_t n) {
    ss_window_options o = std_options();
    o.flags = SS_WINDOW_REDRAW;
    o.mode = SS_WINDOW_SEQUENTIAL;
    uint64_t H = 16, hashes[2] = {0, 0};
    for (int run = 0; run < 2; run++) {
        ss_window_reader *r;
        CHECK_OK(ss_window_reader_open(&r, s, &o));
        uint64_t next_k[40] = {0}, switches = 0, prev_seq[8];
        for (int i = 0; i < 8; i++) prev_seq[i] = UINT64_MAX;
        uint8_t st[5 * 16];
        uint64_t h = 1469598103934665603ull, windows = 0;
        const ss_window_batch *b;
        for (;;) {
            if (CHECK_NEXT(ss_window_reader_next(&b, r))) break;
            CHECK_EQ_U64(b->size, 5);
            for (uint32_t row = 0; row < b->size; row++) {
                if (!b->mask[row]) continue;
                uint64_t ex = b->example[row], k = b->index[row];
                for (uint32_t o2 = 0; o2 < row; o2++) CHECK(!b->mask[o2] || b->example[o2] != ex);
                CHECK_EQ_U64(k, next_k[ex]);
                next_k[ex]++;
                CHECK_EQ_U64(b->reset[row], k == 0);
                if (k > 0) {
                    uint8_t want[16];
                    fill_state(want, H, ex, k - 1);
                    CHECK(memcmp((const uint8_t *)b->state + row * H, want, H) == 0);
                }
                fill_state(st + row * H, H, ex, k);
                if (prev_seq[row] != UINT64_MAX && prev_seq[row] != ex &&
                    next_k[prev_seq[row]] < naive_windows(lens[prev_seq[row]], 0, 7, 2))
                    switches++;
                prev_seq[row] = ex;
                h = (h ^ (ex * 1000 + k)) * 1099511628211ull;
                windows++;
            }
            check_data(b, 0);
            CHECK_OK(ss_window_reader_register(r, b, st));
        }
        uint64_t total = 0;
        for (uint64_t i = 0; i < n; i++) {
            CHECK_EQ_U64(next_k[i], naive_windows(lens[i], 0, 7, 2));
            total += next_k[i];
        }
        CHECK_EQ_U64(windows, total);
        CHECK(switches > 0);
        hashes[run] = h;
        ss_window_reader_free(r);
    }
    CHECK_EQ_U64(hashes[0], hashes[1]);
    /* two sequences of 3 and 2 windows in two lanes */
    uint64_t two[2] = {7 + 2 * 5, 7 + 5};
    ss_store *s2 = make_store("redraw2.ss", two, 2, NULL);
    o.lanes = 2;
    o.state_size = 0;
    ss_window_reader *r;
    CHECK_OK(ss_window_reader_open(&r, s2, &o));
    const ss_window_batch *b;
    for (uint64_t k = 0; k < 3; k++) {
        CHECK_OK(ss_window_reader_next(&b, r));
        CHECK_EQ_U64(b->active, k < 2 ? 2 : 1);
        uint64_t seen = 0;
        for (uint32_t row = 0; row < 2; row++)
            if (b->mask[row]) {
                CHECK_EQ_U64(b->index[row], k);
                seen |= 1u << b->example[row];
            }
        CHECK_EQ_U64(seen, k < 2 ? 3 : 1);
    }
    CHECK_RC(ss_window_reader_next(&b, r), SS_ITEROVER);
    ss_window_reader_free(r);
    o.mode = SS_WINDOW_RANDOM;
    CHECK_RC(ss_window_reader_open(&r, s2, &o), SS_EINVAL);
    ss_close(s2);
}

/* gain and offset come with their counts (version 3): a count other than the
 * field's C channels is refused naming the field, before the collation reads
 * C values from an array of fewer (which version 2 could not tell, and did:
 * a 2-value gain at the end of a page read past it). */
static void test_gain_count(ss_store *s) {
    long pg = sysconf(_SC_PAGESIZE);
    unsigned char *map =
        mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED);
    CHECK(mprotect(map + pg, (size_t)pg, PROT_NONE) == 0);
    double *two = (double *)(void *)(map + pg - 2 * sizeof(double)); /* 2 values, then a hole */
    two[0] = 2;
    two[1] = 3;
    ss_window_options o = std_options();
    o.out_dtype = SS_F32;
    ss_window_reader *r = NULL;
    for (int k = 0; k < 2; k++) {
        o.gain = k ? NULL : two;
        o.offset = k ? two : NULL;
        o.n_gain = o.n_offset = 2;
        CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
        CHECK(r == NULL && strstr(ss_error_message(), k ? "offset has 2 values" : "gain has 2") &&
              strstr(ss_error_message(), "'x' has 3 channels"));
        o.n_gain = o.n_offset = 0; /* a count is required with version 3 */
        CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    }
    double three[C] = {1, 2, 3};
    o.gain = three;
    o.offset = NULL;
    o.n_gain = C;
    o.n_offset = 7; /* ignored without offset */
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    ss_window_reader_free(r);
    munmap(map, 2 * (size_t)pg);
}

/* ------------------------------------------------------------- prefetch */

/* One step of a run: a batch (everything it holds, the sequence states and
 * windows out seen after it and after registering it) or the end marker. */
typedef struct steps {
    recorder rc;
    size_t off[400];
} steps;

static void record_states(recorder *rc, const ss_window_reader *r) {
    ss_window_info info;
    CHECK_OK(ss_window_reader_info(&info, r));
    rec(rc, &info.epoch, sizeof info.epoch);
    rec(rc, &info.windows_out, sizeof info.windows_out);
    for (uint64_t q = 0; q < info.sequences; q++) {
        uint8_t st = (uint8_t)ss_window_reader_seq_state(r, q);
        rec(rc, &st, 1);
    }
}

/* `n` steps of r from step `from`, registering made-up final states (every
 * other batch left unregistered when no state is carried: the next call
 * releases it). */
static void run_steps(ss_window_reader *r, const ss_window_options *o, uint64_t H, uint64_t from,
                      uint64_t n, steps *out) {
    uint8_t fin[16 * 64];
    int carry = o->mode != SS_WINDOW_RANDOM && !(o->flags & SS_WINDOW_FORGET_STATE) && H > 0;
    for (uint64_t k = from; k < from + n; k++) {
        if (out) out->off[k] = out->rc.n;
        const ss_window_batch *b;
        int rc = ss_window_reader_next(&b, r);
        if (rc == SS_ITEROVER) {
            if (out) rec(&out->rc, "END", 3);
            if (out) record_states(&out->rc, r);
            continue;
        }
        CHECK_OK(rc);
        if (out) {
            recorder *x = &out->rc;
            record_batch(x, b, H);
            rec(x, &b->active, sizeof b->active);
            rec(x, &b->id, sizeof b->id);
            rec(x, b->lane, b->size * sizeof *b->lane);
            rec(x, b->length, b->size * 8);
            rec(x, b->index, b->size * 8);
            rec(x, b->step_mask, b->size * b->window);
            if (b->label) rec(x, b->label, b->size * b->label_row_bytes);
            record_states(x, r);
        }
        for (uint32_t i = 0; i < b->size; i++)
            fill_state(fin + i * H, H, b->example[i], b->start[i] * 31 + b->index[i]);
        if (carry || k % 2) CHECK_OK(ss_window_reader_register(r, b, fin));
        if (out) record_states(&out->rc, r);
    }
    if (out) out->off[from + n] = out->rc.n;
}

/* With prefetch the reader hands out the same batches, sequence states and
 * counts as without, in every mode; a position saved by either resumes in
 * either, at the start of an epoch, inside it and right after its end. */
static void test_prefetch(ss_store *s) {
    enum { NCONF = 7, STEPS = 120 };
    for (int conf = 0; conf < NCONF; conf++) {
        ss_window_options o = std_options();
        uint64_t H = 16;
        switch (conf) {
        case 1: o.mode = SS_WINDOW_SEQUENTIAL; o.flags = SS_WINDOW_PAD_TAIL | SS_WINDOW_SHRINK;
                o.state_size = 0; H = 0; break;
        case 2: o.flags = SS_WINDOW_REDRAW; break;
        case 3: o.mode = SS_WINDOW_RANDOM; o.epoch_windows = 31; H = 0; o.state_size = 0; break;
        case 4: o.flags = SS_WINDOW_DROP_LAST | SS_WINDOW_FORGET_STATE; break;
        case 5: o.flags = SS_WINDOW_TIME_MAJOR | SS_WINDOW_LABEL_PER_STEP; o.label_field = 1;
                o.threads = 2; break;
        case 6: o.flags = SS_WINDOW_BALANCED; o.label_field = 1; o.lanes = 6; break;
        default: break;
        }
        steps ref = {0}, got = {0};
        ss_window_reader *a, *b;
        CHECK_OK(ss_window_reader_open(&a, s, &o));
        run_steps(a, &o, H, 0, STEPS, &ref);
        ss_window_reader_free(a);
        o.prefetch = 1;
        CHECK_OK(ss_window_reader_open(&a, s, &o));
        run_steps(a, &o, H, 0, STEPS, &got);
        ss_window_reader_free(a);
        CHECK_EQ_U64(got.rc.n, ref.rc.n);
        CHECK(memcmp(got.rc.buf, ref.rc.buf, ref.rc.n) == 0);
        int ends = 0;
        for (uint64_t k = 0; k < STEPS; k++) ends += memcmp(ref.rc.buf + ref.off[k], "END", 3) == 0;
        CHECK(ends >= 2); /* the runs cross epochs */
        /* save after step k (k = 0 .. every step near an epoch's end) */
        for (uint64_t k = 0; k < STEPS - 20; k += 1 + (k % 5 == 4 ? 6 : 0)) {
            for (int mix = 0; mix < 4; mix++) {
                ss_window_options oa = o, ob = o;
                oa.prefetch = (uint32_t)(mix & 1);
                ob.prefetch = (uint32_t)(mix >> 1);
                CHECK_OK(ss_window_reader_open(&a, s, &oa));
                run_steps(a, &oa, H, 0, k, NULL);
                size_t n = ss_window_reader_state_size(a, SS_WINDOW_SAVE_STATES), len = 0;
                uint8_t *blob = malloc(n);
                CHECK(blob != NULL);
                CHECK_OK(ss_window_reader_state_save(blob, n, &len, a, SS_WINDOW_SAVE_STATES));
                CHECK_EQ_U64(len, n);
                CHECK_OK(ss_window_reader_open(&b, s, &ob));
                CHECK_OK(ss_window_reader_state_load(b, blob, len));
                steps tail = {0};
                run_steps(b, &ob, H, k, 20, &tail);
                size_t want = ref.off[k + 20] - ref.off[k];
                CHECK_EQ_U64(tail.rc.n, want);
                CHECK(memcmp(tail.rc.buf, ref.rc.buf + ref.off[k], want) == 0);
                /* the reader that saved goes on as if nothing happened */
                steps same = {0};
                run_steps(a, &oa, H, k, 20, &same);
                CHECK(same.rc.n == want && memcmp(same.rc.buf, tail.rc.buf, want) == 0);
                ss_window_reader_free(a);
                ss_window_reader_free(b);
                free(blob);
                free(tail.rc.buf);
                free(same.rc.buf);
            }
        }
        free(ref.rc.buf);
        free(got.rc.buf);
    }
    /* refused: more than one batch ahead, or with max_pending > 1 */
    ss_window_options o = std_options();
    ss_window_reader *r;
    o.prefetch = 2;
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "prefetch") != NULL);
    o.prefetch = 1;
    o.max_pending = 2;
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "max_pending") != NULL);
    /* strict mode stays strict: the next batch before registering is refused,
     * and set_epoch drops the batch planned ahead */
    o.max_pending = 0;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    const ss_window_batch *b1, *b2;
    CHECK_OK(ss_window_reader_next(&b1, r));
    CHECK_RC(ss_window_reader_next(&b2, r), SS_ESTATE);
    float fin[5 * 4] = {0};
    CHECK_OK(ss_window_reader_register(r, b1, fin));
    CHECK_OK(ss_window_reader_set_epoch(r, 3));
    CHECK_OK(ss_window_reader_next(&b2, r));
    CHECK_EQ_U64(b2->epoch, 3);
    for (uint32_t i = 0; i < b2->size; i++) CHECK_EQ_U64(b2->index[i], 0);
    ss_window_reader_free(r);
}

int main(void) {
    test_exact_windows();
    for (uint64_t seed = 1; seed <= 32; seed++) property_run(seed);

    uint64_t n = 40, lens[40], z = 3;
    for (uint64_t i = 0; i < n; i++) lens[i] = 7 + ss_test_rand(&z) % 60;
    lens[3] = 2; /* too short */
    lens[8] = 0;
    ss_store *s = make_store("main.ss", lens, n, NULL);
    test_gain_count(s);
    test_state_machine(s);
    test_save_restore_and_threads(s);
    test_random_start_reproducible(s, lens);
    test_random_mode(s, lens, n);
    test_forget_and_initial_state(s);
    test_pad_tail(s, lens, n);
    test_shrink(s);
    test_redraw(s, lens, n);
    test_prefetch(s);
    ss_close(s);
    test_drop_last();
    test_balanced_labels_targets();
    test_parallel_layouts();
    printf("test_window: ok\n");
    return 0;
}
