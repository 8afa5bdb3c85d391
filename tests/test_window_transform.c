/* SPDX-License-Identifier: BSD-2-Clause */
/* test_window_transform.c - transforms in the window reader: every batch
 * against the same transforms applied in a plain loop here (the documented
 * seeding: hash(hash(seed, epoch, sequence), start, 0) per window, hash(seed,
 * epoch, position) per batch); the same batches for 1/2/4 threads and after
 * save/restore; a failing transform surfaces with the sequence id and its
 * message and stops the reader until set_epoch; bad declarations at open. */
#include "testutil.h"
#include "rng.h"

#include <omp.h>
#include <string.h>

#define C 3 /* channels */

static int16_t val(uint64_t ex, uint64_t t, unsigned c) {
    return (int16_t)((int64_t)((ex * 131 + t * 7 + c * 3) % 20000) - 10000);
}

/* Sequences "x" [L][C] i16 (values val()), label "y" i32. */
static ss_store *make_store(const char *name, const uint64_t *lens, uint64_t n) {
    ss_field f[2] = {{"x", SS_I16, 1, 1, {C, 0, 0, 0}}, {"y", SS_I32, 0, 0, {0, 0, 0, 0}}};
    ss_schema schema = {2, f};
    ss_writer *w;
    const char *path = ss_test_path(name);
    CHECK_OK(ss_writer_create(&w, path, &schema, NULL));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t L = lens[i];
        int16_t *x = malloc((L ? L : 1) * C * sizeof *x);
        CHECK(x);
        for (uint64_t t = 0; t < L; t++)
            for (unsigned c = 0; c < C; c++) x[t * C + c] = val(i, t, c);
        int32_t y = (int32_t)(i % 4);
        ss_value v[2] = {{x, L}, {&y, 1}};
        CHECK_OK(ss_writer_append(w, v));
        free(x);
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    return s;
}

/* ------------------------------------------------------------- transforms */

/* A: i16 in place, x += below(5) per element (row-major). */
static int tf_jitter(void *user, ss_example *ex, ss_rng *rng) {
    (void)user;
    ss_example_field *e = &ex->fields[0];
    if (e->dtype != SS_I16 || e->row_elements != C) return ss_transform_error(ex, "jitter: bad");
    int16_t *d = e->data;
    for (uint64_t i = 0; i < e->length * C; i++) d[i] = (int16_t)(d[i] + ss_random_below(rng, 5));
    return 0;
}

/* B: declares f32: y = x * 0.5 + normal. */
static int tf_tofloat(void *user, ss_example *ex, ss_rng *rng) {
    (void)user;
    ss_example_field *e = &ex->fields[0];
    if (!e->out || e->out_dtype != SS_F32) return ss_transform_error(ex, "tofloat: no out");
    const int16_t *in = e->data;
    float *out = e->out;
    for (uint64_t i = 0; i < e->length * C; i++)
        out[i] = (float)(in[i] * 0.5 + ss_random_normal(rng));
    return 0;
}

/* Per batch: checks the view, adds one uniform per batch to the real steps
 * of the signal and one below(100) to each row's label. */
static int tf_batch(void *user, ss_loader_batch *b, ss_rng *rng) {
    uint64_t W = *(const uint64_t *)user;
    if (b->data.nfields != 2) return SS_EINVAL;
    ss_collated *x = (ss_collated *)&b->data.fields[0], *y = (ss_collated *)&b->data.fields[1];
    if (x->dtype != SS_F32 || x->steps != W || x->batch != b->rows || x->ndim != 3 ||
        x->shape[0] != b->rows || x->shape[1] != W || x->shape[2] != C ||
        x->layout != SS_LAYOUT_BATCH_MAJOR || !x->mask || strcmp(x->name, "x") != 0)
        return SS_EINVAL;
    if (y->dtype != SS_I32 || y->sequence || y->ndim != 1 || y->shape[0] != b->rows)
        return SS_EINVAL;
    float u = (float)ss_random_uniform(rng);
    float *d = x->data;
    const uint8_t *m = x->mask;
    for (uint64_t r = 0; r < b->rows; r++) {
        for (uint64_t t = 0; t < W; t++) {
            if (((int64_t)t < x->lengths[r]) != (m[r * W + t] != 0)) return SS_EINVAL;
            if (m[r * W + t])
                for (unsigned c = 0; c < C; c++) d[(r * W + t) * C + c] += u;
        }
        ((int32_t *)y->data)[r] += (int32_t)ss_random_below(rng, 100);
    }
    return 0;
}

/* Fails on sequence `*user` in epoch 0. */
static int tf_fail(void *user, ss_example *ex, ss_rng *rng) {
    (void)rng;
    if (ex->epoch == 0 && ex->index == *(const uint64_t *)user)
        return ss_transform_error(ex, "sensor %llu saturated", (unsigned long long)ex->index);
    return 0;
}

/* Drops the last step: not allowed. */
static int tf_shorten(void *user, ss_example *ex, ss_rng *rng) {
    (void)user;
    (void)rng;
    if (ex->fields[0].length > 0) ex->fields[0].length--;
    return 0;
}

static ss_transform mk_example(const char *name, ss_example_fn fn, void *user) {
    ss_transform t = SS_TRANSFORM_INIT;
    t.name = name;
    t.example = fn;
    t.user = user;
    return t;
}

static uint64_t g_W = 16;

/* jitter, tofloat, batch (positions 0, 1, 2) */
static ss_pipeline *make_pipeline(void) {
    ss_pipeline *p;
    CHECK_OK(ss_pipeline_create(&p));
    ss_transform a = mk_example("jitter", tf_jitter, NULL);
    CHECK_OK(ss_pipeline_add(p, &a));
    ss_transform b = mk_example("tofloat", tf_tofloat, NULL);
    b.field = 0; /* x */
    b.dtype = SS_F32;
    CHECK_OK(ss_pipeline_add(p, &b));
    ss_transform c = SS_TRANSFORM_INIT;
    c.name = "batch";
    c.batch = tf_batch;
    c.user = &g_W;
    CHECK_OK(ss_pipeline_add(p, &c));
    return p;
}

static ss_window_options options(const ss_pipeline *p) {
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.window = g_W;
    o.overlap = 4;
    o.lanes = 6;
    o.state_size = 2;
    o.state_dtype = SS_F32;
    o.mode = SS_WINDOW_SEQUENTIAL_RANDOM_START;
    o.shuffle = 1;
    o.seed = 99;
    o.label_field = 1;
    o.flags = SS_WINDOW_PAD_TAIL;
    o.transforms = p;
    return o;
}

/* ----------------------------------------------------------- naive model */

/* The expected batch: the transforms applied here, in a plain loop, to the
 * stored values (val()), seeded as documented. */
static void check_batch(const ss_window_batch *b, uint64_t seed, uint64_t position) {
    uint64_t W = b->window;
    CHECK(b->dtype == SS_F32);
    float *want = calloc(b->size * W * C, sizeof *want);
    int32_t *want_lab = calloc(b->size, sizeof *want_lab);
    CHECK(want && want_lab);
    for (uint32_t r = 0; r < b->size; r++) {
        if (!b->mask[r]) continue;
        uint64_t ex = b->example[r], st = b->start[r], len = b->length[r];
        int16_t *raw = malloc(len * C * sizeof *raw);
        CHECK(raw);
        for (uint64_t t = 0; t < len; t++)
            for (unsigned c = 0; c < C; c++) raw[t * C + c] = val(ex, st + t, c);
        ss_example_field f;
        memset(&f, 0, sizeof f);
        f.name = "x";
        f.sequence = 1;
        f.dtype = SS_I16;
        f.row_elements = C;
        f.data = raw;
        f.length = f.capacity = len;
        ss_example e;
        memset(&e, 0, sizeof e);
        e.index = ex;
        e.epoch = b->epoch;
        e.nfields = 1;
        e.fields = &f;
        uint64_t key = ss__rng_hash(ss__rng_hash(seed, b->epoch, ex), st, 0);
        ss_rng rng;
        ss__rng_seed(&rng, key, SS_TRANSFORM_STREAM + 0);
        CHECK_OK(tf_jitter(NULL, &e, &rng));
        ss__rng_seed(&rng, key, SS_TRANSFORM_STREAM + 1);
        f.out = want + (uint64_t)r * W * C;
        f.out_dtype = SS_F32;
        CHECK_OK(tf_tofloat(NULL, &e, &rng));
        free(raw);
        want_lab[r] = (int32_t)(ex % 4);
    }
    /* the batch transform, written out plainly */
    ss_rng rng;
    ss__rng_seed(&rng, ss__rng_hash(seed, b->epoch, position), SS_BATCH_TRANSFORM_STREAM + 2);
    float u = (float)ss_random_uniform(&rng);
    for (uint32_t r = 0; r < b->size; r++) {
        uint64_t len = b->mask[r] ? b->length[r] : 0;
        for (uint64_t t = 0; t < len; t++)
            for (unsigned c = 0; c < C; c++) want[(r * W + t) * C + c] += u;
        want_lab[r] += (int32_t)ss_random_below(&rng, 100);
    }
    CHECK(memcmp(want, b->data, b->size * W * C * sizeof *want) == 0);
    CHECK(memcmp(want_lab, b->label, b->size * sizeof *want_lab) == 0);
    free(want);
    free(want_lab);
}

/* A growing byte record of batches. */
typedef struct recorder {
    uint8_t *buf;
    size_t n, cap;
} recorder;

static void rec(recorder *rc, const void *p, size_t n) {
    if (rc->n + n > rc->cap) {
        rc->cap = (rc->n + n) * 2;
        rc->buf = realloc(rc->buf, rc->cap);
        CHECK(rc->buf);
    }
    memcpy(rc->buf + rc->n, p, n);
    rc->n += n;
}

/* Run `nb` calls of next (registering states), checking every batch against
 * the naive model and recording it. `pos` tracks the position in the epoch. */
static void run(ss_window_reader *r, uint64_t nb, uint64_t seed, recorder *rc, uint64_t *pos) {
    float fin[64 * 2];
    for (uint64_t k = 0; k < nb; k++) {
        const ss_window_batch *b;
        if (CHECK_NEXT(ss_window_reader_next(&b, r))) {
            *pos = 0;
            rec(rc, "END", 3);
            continue;
        }
        check_batch(b, seed, (*pos)++);
        rec(rc, b->example, b->size * sizeof *b->example);
        rec(rc, b->start, b->size * sizeof *b->start);
        rec(rc, b->data, b->size * b->window * C * sizeof(float));
        rec(rc, b->label, b->size * sizeof(int32_t));
        for (uint32_t i = 0; i < b->size; i++) fin[2 * i] = fin[2 * i + 1] = (float)b->start[i];
        CHECK_OK(ss_window_reader_register(r, b, fin));
    }
}

static void test_naive_threads_restore(ss_store *s) {
    ss_pipeline *p = make_pipeline();
    /* threads 1, 2, 4, and 2 with the next batch collated ahead: the same */
    recorder rt[4] = {{0}, {0}, {0}, {0}};
    int threads[4] = {1, 2, 4, 2};
    for (int k = 0; k < 4; k++) {
        ss_window_options o = options(p);
        o.threads = threads[k];
        o.prefetch = k == 3;
        ss_window_reader *r;
        CHECK_OK(ss_window_reader_open(&r, s, &o));
        uint64_t pos = 0;
        run(r, 150, o.seed, &rt[k], &pos); /* several epochs */
        ss_window_reader_free(r);
    }
    CHECK(rt[0].n == rt[1].n && rt[0].n == rt[2].n && rt[0].n == rt[3].n);
    CHECK(memcmp(rt[0].buf, rt[1].buf, rt[0].n) == 0);
    CHECK(memcmp(rt[0].buf, rt[2].buf, rt[0].n) == 0);
    CHECK(memcmp(rt[0].buf, rt[3].buf, rt[0].n) == 0);

    /* save after 37 batches, restore into a fresh reader: the same rest */
    ss_window_options o = options(p);
    o.threads = 2;
    ss_window_reader *a, *b;
    CHECK_OK(ss_window_reader_open(&a, s, &o));
    recorder skip = {0}, ra = {0}, rb = {0};
    uint64_t pos = 0;
    run(a, 37, o.seed, &skip, &pos);
    size_t n = ss_window_reader_state_size(a, SS_WINDOW_SAVE_STATES);
    uint8_t *blob = malloc(n);
    CHECK(blob);
    CHECK_OK(ss_window_reader_state_save(blob, n, NULL, a, SS_WINDOW_SAVE_STATES));
    uint64_t pos_b = pos;
    run(a, 60, o.seed, &ra, &pos);
    o.threads = 4;
    CHECK_OK(ss_window_reader_open(&b, s, &o));
    CHECK_OK(ss_window_reader_state_load(b, blob, n));
    run(b, 60, o.seed, &rb, &pos_b);
    CHECK_EQ_U64(ra.n, rb.n);
    CHECK(memcmp(ra.buf, rb.buf, ra.n) == 0);
    ss_window_reader_free(b);
    /* a reader without the transforms refuses the position */
    o.transforms = NULL;
    CHECK_OK(ss_window_reader_open(&b, s, &o));
    CHECK_RC(ss_window_reader_state_load(b, blob, n), SS_EINVAL);
    ss_window_reader_free(b);
    ss_window_reader_free(a);

    /* a different seed gives different augmentations */
    o = options(p);
    o.seed = 100;
    recorder rd = {0};
    CHECK_OK(ss_window_reader_open(&a, s, &o));
    pos = 0;
    run(a, 20, o.seed, &rd, &pos);
    ss_window_reader_free(a);
    CHECK(memcmp(rd.buf, rt[0].buf, rd.n < rt[0].n ? rd.n : rt[0].n) != 0);

    free(blob);
    free(skip.buf);
    free(ra.buf);
    free(rb.buf);
    free(rd.buf);
    for (int k = 0; k < 4; k++) free(rt[k].buf);
    ss_pipeline_free(p);
}

/* Time-major, RANDOM mode, no per-batch transform: still the naive values
 * (the signal only). */
static void test_time_major_random(ss_store *s) {
    ss_pipeline *p;
    CHECK_OK(ss_pipeline_create(&p));
    ss_transform a = mk_example("jitter", tf_jitter, NULL);
    CHECK_OK(ss_pipeline_add(p, &a));
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.window = 9;
    o.lanes = 4;
    o.mode = SS_WINDOW_RANDOM;
    o.seed = 5;
    o.flags = SS_WINDOW_TIME_MAJOR;
    o.transforms = p;
    o.threads = 3;
    ss_window_reader *r;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    for (int k = 0; k < 30; k++) {
        const ss_window_batch *b;
        CHECK_OK(ss_window_reader_next(&b, r));
        CHECK(b->dtype == SS_I16);
        for (uint32_t row = 0; row < b->size; row++) {
            if (!b->mask[row]) continue;
            ss_rng rng;
            ss__rng_seed(&rng,
                         ss__rng_hash(ss__rng_hash(5, b->epoch, b->example[row]), b->start[row], 0),
                         SS_TRANSFORM_STREAM);
            for (uint64_t t = 0; t < b->length[row]; t++)
                for (unsigned c = 0; c < C; c++) {
                    int16_t want = (int16_t)(val(b->example[row], b->start[row] + t, c) +
                                             ss__rng_below(&rng, 5));
                    CHECK_EQ_U64((uint16_t)((const int16_t *)b->data)[(t * b->size + row) * C + c],
                                 (uint16_t)want);
                }
        }
        CHECK_OK(ss_window_reader_register(r, b, NULL));
    }
    ss_window_reader_free(r);
    ss_pipeline_free(p);
}

/* Records the largest OpenMP team a per-window transform ran in. */
static int tf_team(void *user, ss_example *ex, ss_rng *rng) {
    (void)ex;
    (void)rng;
    int n = omp_get_num_threads(), *most = user;
#pragma omp critical
    if (n > *most) *most = n;
    return 0;
}

/* threads = 0 is one thread (the header's rule), even when OpenMP would give
 * more; threads = 2 asks for a team of 2. */
static void test_thread_default(ss_store *s) {
    omp_set_num_threads(4);
    for (int threads = 0; threads <= 2; threads += 2) {
        int most = 0;
        ss_pipeline *p;
        CHECK_OK(ss_pipeline_create(&p));
        ss_transform t = mk_example("team", tf_team, &most);
        CHECK_OK(ss_pipeline_add(p, &t));
        ss_window_options o = options(p);
        o.threads = threads;
        ss_window_reader *r;
        CHECK_OK(ss_window_reader_open(&r, s, &o));
        const ss_window_batch *b;
        CHECK_OK(ss_window_reader_next(&b, r));
        CHECK(b->size == 6);
        CHECK_EQ_U64(most, threads ? 2 : 1);
        ss_window_reader_free(r);
        ss_pipeline_free(p);
    }
    ss_window_options o = options(NULL);
    o.threads = -1;
    ss_window_reader *r;
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "threads"));
}

static void test_errors(ss_store *s) {
    /* a failing transform: SS_ECALLBACK naming the sequence and the message */
    uint64_t bad = 5;
    ss_pipeline *p;
    CHECK_OK(ss_pipeline_create(&p));
    ss_transform a = mk_example("saturation-check", tf_fail, &bad);
    CHECK_OK(ss_pipeline_add(p, &a));
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.window = 8;
    o.lanes = 3;
    o.threads = 2;
    o.transforms = p;
    ss_window_reader *r;
    const ss_window_batch *b;
    int rc = 0, batches[2] = {0, 0};
    /* collated in the call or ahead by the reader's thread: the error comes
     * with the batch it belongs to, with the same message */
    for (uint32_t ahead = 0; ahead < 2; ahead++) {
        o.prefetch = ahead;
        CHECK_OK(ss_window_reader_open(&r, s, &o));
        while ((rc = ss_window_reader_next(&b, r)) == 0) {
            for (uint32_t i = 0; i < b->size; i++) CHECK(!b->mask[i] || b->example[i] != bad);
            CHECK_OK(ss_window_reader_register(r, b, NULL));
            batches[ahead]++;
        }
        CHECK_RC(rc, SS_ECALLBACK);
        const char *msg = ss_error_message();
        CHECK(strstr(msg, "sequence 5,") != NULL);
        CHECK(strstr(msg, "sensor 5 saturated") != NULL);
        CHECK(strstr(msg, "saturation-check") != NULL);
        CHECK(strstr(msg, "window start 0") != NULL);
        /* the reader stays stopped with the same error... */
        CHECK_RC(ss_window_reader_next(&b, r), SS_ECALLBACK);
        CHECK(strstr(ss_error_message(), "sensor 5 saturated") != NULL);
        /* ...until set_epoch; epoch 1 passes the check */
        CHECK_OK(ss_window_reader_set_epoch(r, 1));
        uint64_t seen = 0;
        while ((rc = ss_window_reader_next(&b, r)) == 0) {
            for (uint32_t i = 0; i < b->size; i++) seen += b->mask[i] && b->example[i] == bad;
            CHECK_OK(ss_window_reader_register(r, b, NULL));
        }
        CHECK_RC(rc, SS_ITEROVER);
        CHECK(seen > 0);
        ss_window_reader_free(r);
    }
    CHECK(batches[0] > 0);
    CHECK_EQ_U64(batches[1], batches[0]);
    o.prefetch = 0;
    ss_pipeline_free(p);

    /* changing the window length is an error */
    CHECK_OK(ss_pipeline_create(&p));
    ss_transform sh = mk_example("shorten", tf_shorten, NULL);
    CHECK_OK(ss_pipeline_add(p, &sh));
    o.transforms = p;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    CHECK_RC(ss_window_reader_next(&b, r), SS_ECALLBACK);
    CHECK(strstr(ss_error_message(), "window length from 8 to 7") != NULL);
    ss_window_reader_free(r);
    ss_pipeline_free(p);

    /* declared changes: only of the signal, keeping C elements per sample */
    CHECK_OK(ss_pipeline_create(&p));
    ss_transform d = mk_example("label-to-float", tf_tofloat, NULL);
    d.field = 1; /* y */
    d.dtype = SS_F32;
    CHECK_OK(ss_pipeline_add(p, &d));
    o.transforms = p;
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "label-to-float") != NULL);
    ss_pipeline_free(p);
    CHECK_OK(ss_pipeline_create(&p));
    ss_transform e = mk_example("reshape", tf_tofloat, NULL);
    e.field = 0; /* x */
    e.reshape = 1;
    e.ndim = 1;
    e.dims[0] = C + 1;
    CHECK_OK(ss_pipeline_add(p, &e));
    o.transforms = p;
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    ss_pipeline_free(p);
    (void)batches;
}

int main(void) {
    uint64_t lens[14], st = 3;
    for (int i = 0; i < 14; i++) lens[i] = 10 + ss_test_rand(&st) % 300;
    lens[3] = 12; /* shorter than W = 16: only a padded tail window */
    ss_store *s = make_store("wt.ss", lens, 14);
    test_naive_threads_restore(s);
    test_time_major_random(s);
    test_thread_default(s);
    test_errors(s);
    ss_close(s);
    printf("test_window_transform: ok\n");
    return 0;
}
