/* SPDX-License-Identifier: BSD-2-Clause */
/* test_transform.c - transforms through the loader compared with the same
 * transform written as a plain loop here (with the documented random
 * streams); same augmented batches for 1, 2 and 4 threads and after resume;
 * declared dtype changes; a declared dtype and shape change (u8 {4} -> f32
 * {2}) with shortening, padded and packed; per-batch transforms; errors;
 * pipelines. */
#include "seqstore.h"
#include "rng.h"
#include "testutil.h"

#include <math.h>
#include <string.h>

#define N 200
#define SEED 1234

/* Field indices of the two stores of this file. */
enum { TOK = 0, EEG = 1, LABEL = 2 }; /* xf.ss */
enum { ID = 0, PX = 1 };              /* the pixel store */

static const char *make_store(void) {
    const char *path = ss_test_path("xf.ss");
    ss_field f[3] = {
        {"tok", SS_U16, 1, 0, {0}}, {"eeg", SS_I16, 1, 1, {3}}, {"label", SS_I32, 0, 0, {0}}};
    ss_schema schema = {3, f};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, NULL));
    uint64_t rs = 3;
    for (uint64_t i = 0; i < N; i++) {
        uint16_t tok[64];
        int16_t eeg[64 * 3];
        int32_t label = (int32_t)(ss_test_rand(&rs) % 5);
        uint64_t lt = ss_test_rand(&rs) % 50, le = 1 + ss_test_rand(&rs) % 30;
        for (uint64_t t = 0; t < lt; t++) tok[t] = (uint16_t)(5 + ss_test_rand(&rs) % 500);
        for (uint64_t t = 0; t < le; t++)
            for (int c = 0; c < 3; c++)
                eeg[3 * t + (uint64_t)c] =
                    (int16_t)((int)(ss_test_rand(&rs) % 2001) - 1000 + 300 * c);
        ss_value v[3] = {{tok, lt}, {eeg, le}, {&label, 1}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    return path;
}

/* The generator a per-example transform at `pos` receives. */
static ss_rng example_rng(uint64_t epoch, uint64_t index, uint32_t pos) {
    ss_rng r;
    ss__rng_seed(&r, ss__rng_hash(SEED, epoch, index), SS_TRANSFORM_STREAM + pos);
    return r;
}

/* ---------------------------------------------------------- plain loops */

typedef struct plain {
    int64_t tok[64];
    uint64_t ntok;
    double eeg[64 * 3];
    uint64_t neeg;
    int64_t label;
} plain;

static void load_plain(const ss_store *s, uint64_t i, plain *p) {
    ss_view v;
    CHECK_OK(ss_get(&v, s, 0, i));
    p->ntok = v.length;
    for (uint64_t t = 0; t < v.length; t++) p->tok[t] = ((const uint16_t *)v.data)[t];
    CHECK_OK(ss_get(&v, s, 1, i));
    p->neeg = v.length;
    for (uint64_t t = 0; t < 3 * v.length; t++) p->eeg[t] = ((const int16_t *)v.data)[t];
    CHECK_OK(ss_get(&v, s, 2, i));
    p->label = *(const int32_t *)v.data;
}

static void plain_crop_tok(plain *p, ss_rng *r, uint64_t max) {
    if (p->ntok <= max) return;
    uint64_t start = ss__rng_below(r, p->ntok - max + 1);
    for (uint64_t t = 0; t < max; t++) p->tok[t] = p->tok[start + t];
    p->ntok = max;
}

static void plain_mask_tok(plain *p, ss_rng *r, double prob, int64_t mask, double rnd, double keep,
                           uint64_t vocab) {
    for (uint64_t t = 0; t < p->ntok; t++) {
        if (ss__rng_uniform(r) >= prob) continue;
        double v = ss__rng_uniform(r);
        if (v < 1 - rnd - keep)
            p->tok[t] = mask;
        else if (v < 1 - keep)
            p->tok[t] = (int64_t)ss__rng_below(r, vocab);
    }
}

static void plain_drop_tok(plain *p, ss_rng *r, double prob) {
    uint64_t k = 0;
    for (uint64_t t = 0; t < p->ntok; t++)
        if (ss__rng_uniform(r) >= prob) p->tok[k++] = p->tok[t];
    p->ntok = k;
}

/* -------------------------------------------------------- loader helpers */

static ss_loader *open_loader(const ss_store *s, ss_pipeline *p, uint32_t threads,
                              ss_sampler_kind kind) {
    static ss_collate_field f[3];
    ss_collate_field d = SS_COLLATE_FIELD_INIT;
    f[0] = f[1] = f[2] = d;
    f[0].field = TOK;
    f[0].dtype = SS_I64;
    f[0].pad_value = -1;
    f[0].mask = SS_MASK_U8;
    f[1].field = EEG;
    f[1].dtype = SS_F64;
    f[1].pad_value = 0;
    f[2].field = LABEL;
    f[2].dtype = SS_I64;
    ss_loader_options o = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    o.sampler = &so;
    o.batch = &bo;
    bo.batch_size = 8;
    o.fields = f;
    o.nfields = 3;
    so.kind = kind;
    so.seed = SEED;
    o.threads = threads;
    o.prefetch = 3;
    o.transforms = p;
    ss_loader *l;
    CHECK_OK(ss_loader_open(&l, s, &o));
    return l;
}

typedef void (*plain_fn)(plain *p, uint64_t epoch, uint64_t index);

/* Run 2 epochs and compare every row with the plain loop `fn`. */
static void compare(const ss_store *s, ss_pipeline *p, plain_fn fn, double tol) {
    ss_loader *l = open_loader(s, p, 2, SS_SAMPLE_SHUFFLE);
    for (uint64_t epoch = 0; epoch < 2; epoch++) {
        CHECK_OK(ss_loader_set_epoch(l, epoch));
        const ss_loader_batch *b;
        uint64_t batches = 0;
        while (ss_loader_next(&b, l) == 0) {
            batches++;
            const ss_collated *tok = &b->data.fields[0], *eeg = &b->data.fields[1],
                              *lab = &b->data.fields[2];
            uint64_t T = tok->steps, E = eeg->steps, maxt = 0;
            for (uint64_t r = 0; r < b->rows; r++) {
                plain x;
                load_plain(s, b->indices[r], &x);
                fn(&x, epoch, b->indices[r]);
                if (x.ntok > maxt) maxt = x.ntok;
                CHECK_EQ_U64(tok->lengths[r], x.ntok);
                for (uint64_t t = 0; t < T; t++) {
                    int64_t got = ((const int64_t *)tok->data)[r * T + t];
                    CHECK(got == (t < x.ntok ? x.tok[t] : -1));
                    CHECK(((const uint8_t *)tok->mask)[r * T + t] == (t < x.ntok));
                }
                CHECK_EQ_U64(eeg->lengths[r], x.neeg);
                for (uint64_t t = 0; t < x.neeg * 3; t++) {
                    double got = ((const double *)eeg->data)[r * E * 3 + t];
                    CHECK(fabs(got - x.eeg[t]) <= tol * (1 + fabs(x.eeg[t])));
                }
                CHECK(((const int64_t *)lab->data)[r] == x.label);
            }
            CHECK_EQ_U64(T, maxt); /* collation follows the new lengths */
        }
        CHECK_EQ_U64(batches, N / 8);
    }
    ss_loader_free(l);
}

static ss_pipeline *one(ss_transform *t) {
    ss_pipeline *p;
    CHECK_OK(ss_pipeline_create(&p));
    CHECK_OK(ss_pipeline_add(p, t));
    return p;
}

/* ------------------------------------------------------------ built-ins */

static void crop_plain(plain *p, uint64_t epoch, uint64_t index) {
    ss_rng r = example_rng(epoch, index, 0);
    plain_crop_tok(p, &r, 12);
}

static void mask_plain(plain *p, uint64_t epoch, uint64_t index) {
    ss_rng r = example_rng(epoch, index, 0);
    plain_mask_tok(p, &r, 0.3, 3, 0.2, 0.1, 7);
}

static void drop_plain(plain *p, uint64_t epoch, uint64_t index) {
    ss_rng r = example_rng(epoch, index, 0);
    plain_drop_tok(p, &r, 0.25);
}

static const int64_t label_table[5] = {40, 30, 20, 10, 0};

static void label_plain(plain *p, uint64_t epoch, uint64_t index) {
    (void)epoch;
    (void)index;
    p->label = label_table[p->label];
}

static double g_mean[3], g_std[3];

static void standardize_plain(plain *p, uint64_t epoch, uint64_t index) {
    (void)epoch;
    (void)index;
    for (uint64_t t = 0; t < p->neeg; t++)
        for (int c = 0; c < 3; c++)
            p->eeg[3 * t + (uint64_t)c] =
                (float)((p->eeg[3 * t + (uint64_t)c] - g_mean[c]) / g_std[c]);
}

static void noise_plain(plain *p, uint64_t epoch, uint64_t index) {
    standardize_plain(p, epoch, index);
    ss_rng r = example_rng(epoch, index, 1);
    for (uint64_t t = 0; t < p->neeg * 3; t++)
        p->eeg[t] = (float)((float)p->eeg[t] + (float)(0.5 * ss__rng_normal(&r)));
}

/* crop then mask then label map: positions 0, 1, 2 */
static void chain_plain(plain *p, uint64_t epoch, uint64_t index) {
    ss_rng r0 = example_rng(epoch, index, 0), r1 = example_rng(epoch, index, 1);
    plain_crop_tok(p, &r0, 20);
    plain_mask_tok(p, &r1, 0.5, 1, 0.0, 0.0, 0);
    p->label = label_table[p->label];
}

static void test_builtins(const ss_store *s, const char *path) {
    ss_transform t;
    ss_pipeline *p;
    CHECK_OK(ss_transform_random_crop(&t, TOK, 12));
    compare(s, p = one(&t), crop_plain, 0);
    ss_pipeline_free(p);

    ss_token_mask_options mo = SS_TOKEN_MASK_OPTIONS_INIT;
    mo.prob = 0.3;
    mo.mask_value = 3;
    mo.random_prob = 0.2;
    mo.keep_prob = 0.1;
    mo.vocab = 7;
    CHECK_OK(ss_transform_token_mask(&t, TOK, &mo));
    compare(s, p = one(&t), mask_plain, 0);
    ss_pipeline_free(p);

    CHECK_OK(ss_transform_token_drop(&t, TOK, 0.25));
    compare(s, p = one(&t), drop_plain, 0);
    ss_pipeline_free(p);

    CHECK_OK(ss_transform_label_map(&t, LABEL, label_table, 5));
    compare(s, p = one(&t), label_plain, 0);
    ss_pipeline_free(p);

    /* statistics vs a plain two-pass loop */
    double sum[3] = {0}, sq[3] = {0};
    uint64_t steps = 0;
    for (uint64_t i = 0; i < N; i++) {
        plain x;
        load_plain(s, i, &x);
        for (uint64_t t2 = 0; t2 < x.neeg; t2++)
            for (int c = 0; c < 3; c++) sum[c] += x.eeg[3 * t2 + (uint64_t)c];
        steps += x.neeg;
    }
    for (int c = 0; c < 3; c++) g_mean[c] = sum[c] / (double)steps;
    for (uint64_t i = 0; i < N; i++) {
        plain x;
        load_plain(s, i, &x);
        for (uint64_t t2 = 0; t2 < x.neeg; t2++)
            for (int c = 0; c < 3; c++) {
                double d = x.eeg[3 * t2 + (uint64_t)c] - g_mean[c];
                sq[c] += d * d;
            }
    }
    for (int c = 0; c < 3; c++) g_std[c] = sqrt(sq[c] / (double)steps);
    double mean[3], std[3];
    CHECK_OK(ss_standardize_compute(mean, std, s, NULL, EEG));
    for (int c = 0; c < 3; c++) {
        CHECK(fabs(mean[c] - g_mean[c]) < 1e-9 * (1 + fabs(g_mean[c])));
        CHECK(fabs(std[c] - g_std[c]) < 1e-6 * g_std[c]);
        CHECK(fabs(g_mean[c] - 300 * c) < 60); /* the channels' offsets */
    }
    CHECK_OK(ss_transform_standardize(&t, EEG, g_mean, g_std, 3));
    CHECK(t.dtype == SS_F32);
    compare(s, p = one(&t), standardize_plain, 1e-5);
    /* with noise after it (f32 after the declared change) */
    CHECK_OK(ss_transform_gaussian_noise(&t, EEG, 0.5));
    CHECK_OK(ss_pipeline_add(p, &t));
    compare(s, p, noise_plain, 1e-5);
    ss_pipeline_free(p);

    CHECK_OK(ss_transform_random_crop(&t, TOK, 20));
    p = one(&t);
    mo = (ss_token_mask_options)SS_TOKEN_MASK_OPTIONS_INIT;
    mo.prob = 0.5;
    mo.mask_value = 1;
    mo.random_prob = 0;
    mo.keep_prob = 0;
    CHECK_OK(ss_transform_token_mask(&t, TOK, &mo));
    CHECK_OK(ss_pipeline_add(p, &t));
    CHECK_OK(ss_transform_label_map(&t, LABEL, label_table, 5));
    CHECK_OK(ss_pipeline_add(p, &t));
    CHECK_EQ_U64(ss_pipeline_count(p), 3);
    compare(s, p, chain_plain, 0);
    ss_pipeline_free(p);

    /* statistics saved over a split as attributes, read back */
    (void)path;
}

static void test_standardize_attr(const char *path) {
    ss_selection *sel;
    CHECK_OK(ss_selection_parse(&sel, "0:100", N));
    CHECK_OK(ss_split_save(path, "train", sel));
    CHECK_OK(ss_standardize_save(path, EEG, "train", NULL));
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    double mean[3], std[3];
    CHECK_OK(ss_standardize_compute(mean, std, s, sel, EEG));
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, "ss.norm.eeg.mean"));
    CHECK(a.type == SS_F64 && a.size == 24 && memcmp(a.data, mean, 24) == 0);
    CHECK_OK(ss_attr_get(&a, s, "ss.norm.eeg.std"));
    CHECK(a.type == SS_F64 && a.size == 24 && memcmp(a.data, std, 24) == 0);
    memcpy(g_mean, mean, sizeof mean);
    memcpy(g_std, std, sizeof std);
    ss_transform t;
    CHECK_OK(ss_transform_standardize_attr(&t, s, EEG, NULL));
    ss_pipeline *p = one(&t);
    compare(s, p, standardize_plain, 1e-5);
    ss_pipeline_free(p);
    CHECK_RC(ss_transform_standardize_attr(&t, s, TOK, NULL), SS_ENOTFOUND); /* no ss.norm.tok */
    CHECK_RC(ss_transform_standardize_attr(&t, s, 3, NULL), SS_ERANGE);
    ss_close(s);
    ss_selection_free(sel);
}

/* ----------------------------------------------- user transforms, errors */

/* A declared change: u16 tokens -> f32 halves, in the out buffer. */
static int halve(void *user, ss_example *ex, ss_rng *rng) {
    (void)user;
    (void)rng;
    ss_example_field *e = ss_example_get_field(ex, TOK);
    if (e->dtype != SS_U16 || e->out_dtype != SS_F32 || !e->out)
        return ss_transform_error(ex, "unexpected stage");
    for (uint64_t t = 0; t < e->length; t++)
        ((float *)e->out)[t] = ((const uint16_t *)e->data)[t] * 0.5f;
    return 0;
}

/* A per-batch transform: label += 1000 * position + a random bit. */
static int tag_batch(void *user, ss_loader_batch *b, ss_rng *rng) {
    (void)user;
    int64_t *lab = b->data.fields[2].data;
    for (uint64_t r = 0; r < b->rows; r++)
        lab[r] += 1000 * (int64_t)b->position + (int64_t)(ss__rng_next(rng) & 1);
    return 0;
}

static void test_user_transforms(const ss_store *s) {
    ss_pipeline *p;
    CHECK_OK(ss_pipeline_create(&p));
    ss_transform t = SS_TRANSFORM_INIT;
    t.name = "halve";
    t.example = halve;
    t.field = TOK;
    t.dtype = SS_F32;
    CHECK_OK(ss_pipeline_add(p, &t));
    ss_transform bt = SS_TRANSFORM_INIT;
    bt.name = "tag";
    bt.batch = tag_batch;
    CHECK_OK(ss_pipeline_add(p, &bt));
    ss_loader *l = open_loader(s, p, 2, SS_SAMPLE_SEQUENTIAL);
    const ss_loader_batch *b;
    while (ss_loader_next(&b, l) == 0) {
        const ss_collated *tok = &b->data.fields[0];
        CHECK(tok->dtype == SS_I64); /* the collate dtype still applies: round(x / 2) */
        ss_rng r;
        ss__rng_seed(&r, ss__rng_hash(SEED, 0, b->position), SS_BATCH_TRANSFORM_STREAM + 1);
        for (uint64_t i = 0; i < b->rows; i++) {
            plain x;
            load_plain(s, b->indices[i], &x);
            for (uint64_t k = 0; k < x.ntok; k++)
                CHECK(((const int64_t *)tok->data)[i * tok->steps + k] ==
                      (int64_t)nearbyint(x.tok[k] * 0.5));
            int64_t want = x.label + 1000 * (int64_t)b->position + (int64_t)(ss__rng_next(&r) & 1);
            CHECK(((const int64_t *)b->data.fields[2].data)[i] == want);
        }
    }
    ss_loader_free(l);
    ss_pipeline_free(p);

    /* bad transforms */
    CHECK_OK(ss_pipeline_create(&p));
    t = (ss_transform)SS_TRANSFORM_INIT;
    CHECK_RC(ss_pipeline_add(p, &t), SS_EINVAL); /* no callback */
    t.example = halve;
    t.batch = tag_batch;
    CHECK_RC(ss_pipeline_add(p, &t), SS_EINVAL); /* both */
    t.batch = NULL;
    t.dtype = SS_F32;
    CHECK_RC(ss_pipeline_add(p, &t), SS_EINVAL); /* change without field */
    t.field = 7;                                 /* not an output field */
    CHECK_OK(ss_pipeline_add(p, &t));
    ss_loader_options o = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    o.sampler = &so;
    o.batch = &bo;
    bo.batch_size = 4;
    o.transforms = p;
    CHECK_RC(ss_loader_open(&l, s, &o), SS_EINVAL); /* not an output field */
    ss_pipeline_free(p);
    CHECK_RC(ss_transform_random_crop(&t, TOK, 0), SS_EINVAL);
    CHECK_RC(ss_transform_gaussian_noise(&t, EEG, -1), SS_EINVAL);
    ss_token_mask_options mo = SS_TOKEN_MASK_OPTIONS_INIT;
    CHECK_RC(ss_transform_token_mask(&t, TOK, &mo), SS_EINVAL); /* vocab 0 */
    double m = 0, sd = 0;
    CHECK_RC(ss_transform_standardize(&t, EEG, &m, &sd, 1), SS_EINVAL);

    /* run-time errors: label outside the table; noise on an integer field */
    CHECK_OK(ss_transform_label_map(&t, LABEL, label_table, 3));
    p = one(&t);
    l = open_loader(s, p, 4, SS_SAMPLE_SEQUENTIAL);
    int rc;
    while ((rc = ss_loader_next(&b, l)) == 0) {
        for (uint64_t i = 0; i < b->rows; i++) {
            plain x;
            load_plain(s, b->indices[i], &x);
            CHECK(x.label < 3);
        }
    }
    CHECK_RC(rc, SS_ECALLBACK);
    CHECK(strstr(ss_error_message(), "outside the table") != NULL);
    CHECK(strstr(ss_error_message(), "label_map") != NULL);
    CHECK(strstr(ss_error_message(), "example ") != NULL);
    ss_loader_free(l);
    ss_pipeline_free(p);
    CHECK_OK(ss_transform_gaussian_noise(&t, TOK, 1));
    p = one(&t);
    l = open_loader(s, p, 1, SS_SAMPLE_SEQUENTIAL);
    CHECK_RC(ss_loader_next(&b, l), SS_ECALLBACK);
    CHECK(strstr(ss_error_message(), "example 0") != NULL);
    CHECK(strstr(ss_error_message(), "not f32 or f64") != NULL);
    ss_loader_free(l);
    ss_pipeline_free(p);
}

/* ------------------------------------ the transform path's own collation */

static int identity(void *user, ss_example *ex, ss_rng *rng) {
    (void)user;
    (void)ex;
    (void)rng;
    return 0;
}

static void same_collated(const ss_collated *a, const ss_collated *b) {
    CHECK(a->dtype == b->dtype && a->layout == b->layout && a->sequence == b->sequence);
    CHECK_EQ_U64(a->ndim, b->ndim);
    for (uint32_t d = 0; d < a->ndim; d++) CHECK_EQ_U64(a->shape[d], b->shape[d]);
    CHECK_EQ_U64(a->batch, b->batch);
    CHECK_EQ_U64(a->steps, b->steps);
    CHECK_EQ_U64(a->data_bytes, b->data_bytes);
    CHECK(memcmp(a->data, b->data, a->data_bytes) == 0);
    CHECK(memcmp(a->lengths, b->lengths, a->batch * 8) == 0);
    CHECK_EQ_U64(a->mask_bytes, b->mask_bytes);
    CHECK(!a->mask == !b->mask);
    if (a->mask) CHECK(memcmp(a->mask, b->mask, a->mask_bytes) == 0);
    CHECK(!a->offsets == !b->offsets);
    if (a->offsets) CHECK(memcmp(a->offsets, b->offsets, (a->batch + 1) * 8) == 0);
    CHECK(!a->perm == !b->perm);
    if (a->perm) CHECK(memcmp(a->perm, b->perm, a->batch * 8) == 0);
}

/* With a no-op transform the loader collates from its arena; the result must
 * equal the collator's, bit for bit, for every layout and option. */
static void test_identity_collation(const ss_store *s) {
    ss_pipeline *p;
    CHECK_OK(ss_pipeline_create(&p));
    ss_transform t = SS_TRANSFORM_INIT;
    t.example = identity;
    CHECK_OK(ss_pipeline_add(p, &t));
    static const double scale[3] = {0.5, 2, -1}, offset[3] = {1, 0, 3};
    for (int v = 0; v < 8; v++) {
        ss_collate_field f[3] = {SS_COLLATE_FIELD_INIT, SS_COLLATE_FIELD_INIT,
                                 SS_COLLATE_FIELD_INIT};
        f[0].field = TOK;
        f[1].field = EEG;
        f[2].field = LABEL;
        f[0].layout = (ss_layout)(v % 3);
        f[1].layout = (ss_layout)((v + 1) % 3);
        if (f[0].layout != SS_LAYOUT_PACKED) {
            f[0].mask = v & 1 ? SS_MASK_U8 : SS_MASK_F32;
            f[0].pad_left = v >= 4;
            f[0].pad_to_multiple = v == 3 ? 8 : 0;
        } else {
            f[0].sort_by_length = v >= 4;
        }
        f[0].fixed = v == 6 || v == 2;
        f[0].fixed_length = 10;
        f[0].truncate_left = v == 6;
        f[0].dtype = v & 1 ? SS_I32 : SS_F16;
        f[0].pad_value = 7;
        f[1].dtype = v & 2 ? SS_F32 : SS_BF16;
        f[1].scale = v & 1 ? scale : NULL;
        f[1].offset = v & 4 ? offset : NULL;
        f[1].fixed = v == 5;
        f[1].fixed_length = 4;
        f[2].dtype = SS_F64;
        ss_loader_options o = SS_LOADER_OPTIONS_INIT;
        ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
        ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
        o.sampler = &so;
        o.batch = &bo;
        bo.batch_size = 9;
        o.fields = f;
        o.nfields = 3;
        so.kind = SS_SAMPLE_SHUFFLE;
        o.threads = 2;
        ss_loader *plain_l, *xf_l;
        CHECK_OK(ss_loader_open(&plain_l, s, &o));
        o.transforms = p;
        CHECK_OK(ss_loader_open(&xf_l, s, &o));
        const ss_loader_batch *a, *b;
        uint64_t n = 0;
        while (ss_loader_next(&a, plain_l) == 0) {
            CHECK_OK(ss_loader_next(&b, xf_l));
            CHECK_EQ_U64(a->rows, b->rows);
            for (uint32_t k = 0; k < 3; k++) same_collated(&a->data.fields[k], &b->data.fields[k]);
            n++;
        }
        CHECK_RC(ss_loader_next(&b, xf_l), SS_ITEROVER);
        CHECK_EQ_U64(n, (N + 8) / 9);
        ss_loader_free(plain_l);
        ss_loader_free(xf_l);
    }
    ss_pipeline_free(p);
}

/* ------------------------------------------------- determinism, resume */

static uint64_t fnv(uint64_t h, const void *p, uint64_t n) {
    const unsigned char *c = p;
    for (uint64_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t batch_hash(const ss_loader_batch *b) {
    uint64_t h = fnv(0xcbf29ce484222325ull, b->indices, b->rows * 8);
    for (uint32_t k = 0; k < b->data.nfields; k++) {
        const ss_collated *c = &b->data.fields[k];
        h = fnv(h, c->data, c->data_bytes);
        h = fnv(h, c->lengths, c->batch * 8);
    }
    return h;
}

static void test_determinism(const ss_store *s) {
    ss_transform t;
    ss_pipeline *p;
    CHECK_OK(ss_transform_token_drop(&t, TOK, 0.2));
    p = one(&t);
    CHECK_OK(ss_transform_random_crop(&t, EEG, 9));
    CHECK_OK(ss_pipeline_add(p, &t));
    double mean[3] = {1, 2, 3}, std[3] = {100, 200, 300};
    CHECK_OK(ss_transform_standardize(&t, EEG, mean, std, 3));
    CHECK_OK(ss_pipeline_add(p, &t));
    CHECK_OK(ss_transform_gaussian_noise(&t, EEG, 0.1));
    CHECK_OK(ss_pipeline_add(p, &t));
    uint64_t ref[2 * N / 8], n = 0;
    const uint32_t th[] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        ss_loader *l = open_loader(s, p, th[i], SS_SAMPLE_SHUFFLE);
        const ss_loader_batch *b;
        uint64_t k = 0;
        for (uint64_t e = 0; e < 2; e++) {
            CHECK_OK(ss_loader_set_epoch(l, e));
            while (ss_loader_next(&b, l) == 0) {
                if (i == 0)
                    ref[n++] = batch_hash(b);
                else
                    CHECK(batch_hash(b) == ref[k++]);
            }
        }
        if (i) CHECK_EQ_U64(k, n);
        ss_loader_free(l);
    }
    CHECK_EQ_U64(n, 2 * N / 8);
    CHECK(ref[0] != ref[N / 8]); /* another epoch, other augmentations */
    /* resume mid-epoch 1 with another thread count */
    ss_loader *l = open_loader(s, p, 1, SS_SAMPLE_SHUFFLE);
    CHECK_OK(ss_loader_set_epoch(l, 1));
    const ss_loader_batch *b;
    for (int k = 0; k < 10; k++) CHECK_OK(ss_loader_next(&b, l));
    unsigned char st[256];
    size_t st_len;
    CHECK_OK(ss_loader_state_save(st, sizeof st, &st_len, l));
    ss_loader_free(l);
    l = open_loader(s, p, 4, SS_SAMPLE_SHUFFLE);
    CHECK_OK(ss_loader_state_load(l, st, st_len));
    uint64_t k = N / 8 + 10;
    while (ss_loader_next(&b, l) == 0) CHECK(batch_hash(b) == ref[k++]);
    CHECK_EQ_U64(k, n);
    ss_loader_free(l);
    ss_pipeline_free(p);
}

/* --------------------------------- a declared change of dtype and shape */

#define RN 150 /* examples of the pixel store */
#define RB 7   /* rows per batch: the last batch wraps around */

/* px: u8 [L][4]; id: i32 (fixed, collated as it is). */
static const char *make_pixel_store(void) {
    const char *path = ss_test_path("px.ss");
    ss_field f[2] = {{"id", SS_I32, 0, 0, {0}}, {"px", SS_U8, 1, 1, {4}}};
    ss_schema schema = {2, f};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, NULL));
    uint64_t rs = 17;
    for (uint64_t i = 0; i < RN; i++) {
        uint8_t px[40 * 4];
        int32_t id = (int32_t)i * 3 - 100;
        uint64_t len = ss_test_rand(&rs) % 40; /* 0 .. 39: odd and even, empty */
        for (uint64_t k = 0; k < 4 * len; k++) px[k] = (uint8_t)(ss_test_rand(&rs) & 0xff);
        ss_value v[2] = {{&id, 1}, {px, len}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    return path;
}

/* Each row of 4 u8 (a, b, c, d) becomes 2 f32 ((a + b) / 2, (c - d) * 0.5),
 * written into the declared out buffer; an odd sequence loses its last row. */
static int pairs(void *user, ss_example *ex, ss_rng *rng) {
    (void)user;
    (void)rng;
    ss_example_field *e = ss_example_get_field(ex, PX);
    if (!e) return ss_transform_error(ex, "no px");
    if (e->dtype != SS_U8 || e->ndim != 1 || e->dims[0] != 4 || e->row_bytes != 4 || !e->out ||
        e->out == e->data || e->out_dtype != SS_F32 || e->out_ndim != 1 || e->out_dims[0] != 2)
        return ss_transform_error(ex, "unexpected stage");
    e->length &= ~(uint64_t)1;
    const uint8_t *in = e->data;
    float *out = e->out;
    for (uint64_t t = 0; t < e->length; t++) {
        const uint8_t *p = in + 4 * t;
        out[2 * t] = ((float)p[0] + (float)p[1]) / 2;
        out[2 * t + 1] = ((float)p[2] - (float)p[3]) * 0.5f;
    }
    return 0;
}

/* The same, by hand, then the collator's per-channel scale/offset (values
 * chosen so that every step is exact in float). */
static const double px_scale[2] = {3.0, -0.25}, px_offset[2] = {1.5, 100.0};
#define PX_PAD (-7.5f)

static uint64_t plain_pairs(const ss_store *s, uint64_t index, float *out) {
    ss_view v;
    CHECK_OK(ss_get(&v, s, 1, index));
    CHECK_EQ_U64(v.row_bytes, 4);
    uint64_t len = v.length & ~(uint64_t)1;
    const uint8_t *p = v.data;
    for (uint64_t t = 0; t < len; t++, p += 4) {
        float y0 = ((float)p[0] + (float)p[1]) / 2, y1 = ((float)p[2] - (float)p[3]) * 0.5f;
        out[2 * t] = y0 * (float)px_scale[0] + (float)px_offset[0];
        out[2 * t + 1] = y1 * (float)px_scale[1] + (float)px_offset[1];
    }
    return len;
}

static uint64_t collated_hash(uint64_t h, const ss_collated *c) {
    h = fnv(h, c->data, c->data_bytes);
    h = fnv(h, c->lengths, c->batch * 8);
    if (c->mask) h = fnv(h, c->mask, c->mask_bytes);
    if (c->offsets) h = fnv(h, c->offsets, (c->batch + 1) * 8);
    return h;
}

/* Every batch of 2 epochs against the plain loop; returns a hash per batch. */
static void reshape_run(const ss_store *s, ss_pipeline *p, ss_layout layout, uint32_t threads,
                        uint64_t *hashes) {
    ss_collate_field f[2] = {SS_COLLATE_FIELD_INIT, SS_COLLATE_FIELD_INIT};
    f[0].field = PX;
    f[0].dtype = SS_F32;
    f[0].layout = layout;
    f[0].pad_value = PX_PAD;
    f[0].mask = layout == SS_LAYOUT_PACKED ? SS_MASK_NONE : SS_MASK_U8;
    f[0].scale = px_scale;
    f[0].offset = px_offset;
    f[1].field = ID;
    f[1].dtype = SS_I64;
    ss_loader_options o = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    o.sampler = &so;
    o.batch = &bo;
    bo.batch_size = RB;
    bo.remainder = SS_REMAINDER_PAD; /* full batches, as the sampler by hand */
    o.fields = f;
    o.nfields = 2;
    so.kind = SS_SAMPLE_SHUFFLE;
    so.seed = SEED;
    o.threads = threads;
    o.prefetch = 3;
    o.transforms = p;
    ss_loader *l;
    CHECK_OK(ss_loader_open(&l, s, &o));
    ss_selection *all;
    CHECK_OK(ss_selection_all(&all, RN));
    ss_sampler_options by_hand = so;
    by_hand.batch_size = RB;
    ss_sampler *sm;
    CHECK_OK(ss_sampler_create(&sm, all, &by_hand));
    const uint64_t nb = (RN + RB - 1) / RB;
    static float want[RB * 40 * 2], rowv[RB][40 * 2];
    static uint8_t want_mask[RB * 40];
    uint64_t nh = 0;
    for (uint64_t epoch = 0; epoch < 2; epoch++) {
        CHECK_OK(ss_loader_set_epoch(l, epoch));
        CHECK_OK(ss_sampler_set_epoch(sm, epoch));
        uint64_t order[RN + RB];
        size_t n;
        CHECK_OK(ss_sampler_next(order, RN + RB, &n, sm));
        CHECK_EQ_U64(n, nb * RB);
        CHECK_EQ_U64(ss_loader_count(l), nb);
        const ss_loader_batch *b;
        for (uint64_t k = 0; k < nb; k++) {
            CHECK_OK(ss_loader_next(&b, l));
            CHECK_EQ_U64(b->rows, RB);
            CHECK_EQ_U64(b->position, k);
            CHECK_EQ_U64(b->data.nfields, 2);
            const ss_collated *c = &b->data.fields[0], *id = &b->data.fields[1];
            uint64_t len[RB], T = 0, sum = 0;
            for (uint64_t r = 0; r < RB; r++) {
                CHECK_EQ_U64(b->indices[r], order[k * RB + r]);
                len[r] = plain_pairs(s, order[k * RB + r], rowv[r]);
                if (len[r] > T) T = len[r];
                sum += len[r];
                CHECK(((const int64_t *)id->data)[r] == (int64_t)order[k * RB + r] * 3 - 100);
            }
            CHECK(c->dtype == SS_F32 && c->layout == layout && c->sequence);
            CHECK_EQ_U64(c->batch, RB);
            for (uint64_t r = 0; r < RB; r++) CHECK_EQ_U64(c->lengths[r], len[r]);
            if (layout == SS_LAYOUT_PACKED) {
                CHECK_EQ_U64(c->ndim, 2);
                CHECK_EQ_U64(c->shape[0], sum);
                CHECK_EQ_U64(c->shape[1], 2);
                CHECK_EQ_U64(c->steps, sum);
                CHECK(c->mask == NULL && c->offsets != NULL);
                uint64_t at = 0;
                for (uint64_t r = 0; r < RB; r++) {
                    CHECK_EQ_U64(c->offsets[r], at);
                    memcpy(want + 2 * at, rowv[r], len[r] * 2 * sizeof(float));
                    at += len[r];
                }
                CHECK_EQ_U64(c->offsets[RB], sum);
                CHECK_EQ_U64(c->data_bytes, sum * 2 * sizeof(float));
            } else {
                CHECK_EQ_U64(c->ndim, 3);
                CHECK_EQ_U64(c->shape[0], RB);
                CHECK_EQ_U64(c->shape[1], T);
                CHECK_EQ_U64(c->shape[2], 2);
                CHECK_EQ_U64(c->steps, T);
                CHECK(c->offsets == NULL && c->mask != NULL);
                for (uint64_t r = 0; r < RB; r++)
                    for (uint64_t t = 0; t < T; t++) {
                        int real = t < len[r];
                        want_mask[r * T + t] = (uint8_t)real;
                        for (uint64_t ch = 0; ch < 2; ch++)
                            want[(r * T + t) * 2 + ch] = real ? rowv[r][2 * t + ch] : PX_PAD;
                    }
                CHECK_EQ_U64(c->data_bytes, RB * T * 2 * sizeof(float));
                CHECK_EQ_U64(c->mask_bytes, RB * T);
                if (T) CHECK(memcmp(c->mask, want_mask, RB * T) == 0);
            }
            if (c->data_bytes) CHECK(memcmp(c->data, want, c->data_bytes) == 0);
            hashes[nh++] = collated_hash(collated_hash(0xcbf29ce484222325ull, c), id);
        }
        CHECK_RC(ss_loader_next(&b, l), SS_ITEROVER);
    }
    ss_sampler_free(sm);
    ss_selection_free(all);
    ss_loader_free(l);
}

/* A user transform declaring dtype f32 and shape {2} for a u8 {4} field, and
 * shortening the sequence, through the loader's arena path: padded
 * (batch-major, pad value, u8 mask, scale/offset) and packed, at 1, 2 and 4
 * threads. */
static void test_reshape(void) {
    const char *path = make_pixel_store();
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_pipeline *p;
    CHECK_OK(ss_pipeline_create(&p));
    ss_transform t = SS_TRANSFORM_INIT;
    t.name = "pairs";
    t.example = pairs;
    t.field = PX;
    t.dtype = SS_F32;
    t.reshape = 1;
    t.ndim = 1;
    t.dims[0] = 2;
    CHECK_OK(ss_pipeline_add(p, &t));
    enum { NH = 2 * ((RN + RB - 1) / RB) };
    const ss_layout layouts[2] = {SS_LAYOUT_BATCH_MAJOR, SS_LAYOUT_PACKED};
    const uint32_t th[3] = {1, 2, 4};
    for (int li = 0; li < 2; li++) {
        uint64_t ref[NH], got[NH];
        for (int i = 0; i < 3; i++) {
            reshape_run(s, p, layouts[li], th[i], i ? got : ref);
            if (i) CHECK(memcmp(got, ref, sizeof ref) == 0);
        }
    }
    ss_pipeline_free(p);
    ss_close(s);
}

int main(void) {
    const char *path = make_store();
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    test_builtins(s, path);
    test_user_transforms(s);
    test_identity_collation(s);
    test_determinism(s);
    ss_close(s);
    test_standardize_attr(path);
    test_reshape();
    printf("test_transform: ok\n");
    return 0;
}
