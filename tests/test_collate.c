/* SPDX-License-Identifier: BSD-2-Clause */
/* test_collate.c - the collator against a naive reference (one loop over rows
 * and steps) over random schemas, spans, dtypes and options at 1, 2 and 4
 * threads; small cases written out by hand; bad parameters; rows given in
 * memory (ss_collator_collate_rows()) against the same reference. */
#include "seqstore.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ss_dtype all_dtypes[] = {SS_U8,  SS_I8,  SS_U16, SS_I16, SS_U32, SS_I32,
                                      SS_U64, SS_I64, SS_F16, SS_F32, SS_F64, SS_BF16};

/* ------------------------------------------------------------ the reference */

typedef struct ref_out {
    uint64_t steps;
    unsigned char *data;
    uint64_t data_bytes;
    unsigned char *mask;
    uint64_t mask_bytes;
    int64_t lengths[512], offsets[513], perm[512];
} ref_out;

static uint64_t row_elements(const ss_field *f) {
    uint64_t n = 1;
    for (uint32_t k = 0; k < f->ndim; k++) n *= f->dims[k];
    return n;
}

/* Written plainly: rows of `field`'s dtype and shape at given_src[i], given[i]
 * steps each; truncate, decide T, then place every step. */
static void reference_rows(const ss_collate_field *o, const ss_field *field,
                           const unsigned char **given_src, const uint64_t *given, size_t n,
                           ref_out *r) {
    ss_field info = *field;
    ss_dtype out = o->dtype ? o->dtype : info.dtype;
    uint64_t E = row_elements(&info), esz = ss_dtype_size(out), orb = E * esz;
    uint64_t irb = E * ss_dtype_size(info.dtype);
    unsigned char pad[8];
    if (o->pad_kind == SS_VALUE_I64)
        CHECK_OK(ss_cast_rows(pad, out, &o->pad_i64, SS_I64, 1, 1, NULL, NULL));
    else if (o->pad_kind == SS_VALUE_U64)
        CHECK_OK(ss_cast_rows(pad, out, &o->pad_u64, SS_U64, 1, 1, NULL, NULL));
    else
        CHECK_OK(ss_cast_rows(pad, out, &o->pad_value, SS_F64, 1, 1, NULL, NULL));
    const unsigned char *src[512];
    uint64_t len[512], longest = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t L = given[i];
        src[i] = given_src[i];
        if (info.sequence && o->fixed && L > o->fixed_length) {
            if (o->truncate_left) src[i] += (L - o->fixed_length) * irb;
            L = o->fixed_length;
        }
        len[i] = L;
        if (L > longest) longest = L;
        total += L;
    }
    if (!info.sequence) {
        r->steps = 1;
        r->data_bytes = n * orb;
        r->data = malloc(r->data_bytes + 1);
        r->mask_bytes = 0;
        for (size_t i = 0; i < n; i++) {
            CHECK_OK(ss_cast_rows(r->data + i * orb, out, src[i], info.dtype, 1, E, o->scale,
                                  o->offset));
            r->lengths[i] = 1;
        }
        return;
    }
    if (o->layout == SS_LAYOUT_PACKED) {
        size_t order[512];
        for (size_t i = 0; i < n; i++) order[i] = i;
        if (o->sort_by_length) /* insertion sort: stable, descending */
            for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && len[order[j]] > len[order[j - 1]]; j--) {
                    size_t t = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = t;
                }
        r->steps = total;
        r->data_bytes = total * orb;
        r->data = malloc(r->data_bytes + 1);
        r->mask_bytes = 0;
        uint64_t at = 0;
        for (size_t i = 0; i < n; i++) {
            size_t k = order[i];
            r->offsets[i] = (int64_t)at;
            r->lengths[i] = (int64_t)len[k];
            r->perm[i] = (int64_t)k;
            for (uint64_t t = 0; t < len[k]; t++, at++)
                CHECK_OK(ss_cast_rows(r->data + at * orb, out, src[k] + t * irb, info.dtype, 1, E,
                                      o->scale, o->offset));
        }
        r->offsets[n] = (int64_t)at;
        return;
    }
    uint64_t T = longest;
    if (o->fixed)
        T = o->fixed_length;
    else if (o->pad_to_multiple > 1)
        T = (T + o->pad_to_multiple - 1) / o->pad_to_multiple * o->pad_to_multiple;
    r->steps = T;
    r->data_bytes = n * T * orb;
    r->data = malloc(r->data_bytes + 1);
    uint64_t mes = o->mask == SS_MASK_U8 ? 1 : o->mask == SS_MASK_F32 ? 4 : 0;
    r->mask_bytes = n * T * mes;
    r->mask = malloc(r->mask_bytes + 1);
    for (size_t i = 0; i < n; i++) {
        r->lengths[i] = (int64_t)len[i];
        uint64_t first = o->pad_left ? T - len[i] : 0;
        for (uint64_t t = 0; t < T; t++) {
            uint64_t pos = o->layout == SS_LAYOUT_TIME_MAJOR ? t * n + i : i * T + t;
            int real = t >= first && t < first + len[i];
            unsigned char *d = r->data + pos * orb;
            if (real)
                CHECK_OK(ss_cast_rows(d, out, src[i] + (t - first) * irb, info.dtype, 1, E,
                                      o->scale, o->offset));
            else
                for (uint64_t e = 0; e < E; e++) memcpy(d + e * esz, pad, esz);
            if (mes == 1) r->mask[pos] = (unsigned char)real;
            if (mes == 4) {
                float m = real ? 1.0f : 0.0f;
                memcpy(r->mask + 4 * pos, &m, 4);
            }
        }
    }
}

/* Written plainly: resolve each row, then reference_rows(). */
static void reference(const ss_store *s, const ss_collate_field *o, const ss_span *rows, size_t n,
                      ref_out *r) {
    uint32_t fi = o->field;
    ss_field info;
    CHECK_OK(ss_field_info(&info, s, fi));
    uint64_t irb = row_elements(&info) * ss_dtype_size(info.dtype);
    const unsigned char *src[512];
    uint64_t len[512];
    for (size_t i = 0; i < n; i++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, (uint32_t)fi, rows[i].example));
        uint64_t t0 = info.sequence ? rows[i].t0 : 0;
        uint64_t t1 = !info.sequence ? 1 : rows[i].t1 == SS_SPAN_END ? v.length : rows[i].t1;
        src[i] = (const unsigned char *)v.data + t0 * irb;
        len[i] = t1 - t0;
    }
    reference_rows(o, &info, src, len, n, r);
}

static void compare(const ss_collated *c, const ref_out *r, size_t n, const ss_collate_field *o,
                    int sequence) {
    CHECK_EQ_U64(c->batch, n);
    CHECK_EQ_U64(c->steps, r->steps);
    CHECK_EQ_U64(c->data_bytes, r->data_bytes);
    CHECK(r->data_bytes == 0 || memcmp(c->data, r->data, r->data_bytes) == 0);
    CHECK_EQ_U64(c->mask_bytes, r->mask_bytes);
    if (r->mask_bytes)
        CHECK(c->mask && memcmp(c->mask, r->mask, r->mask_bytes) == 0);
    else
        CHECK(c->mask == NULL);
    for (size_t i = 0; i < n; i++) CHECK_EQ_U64(c->lengths[i], r->lengths[i]);
    if (sequence && o->layout == SS_LAYOUT_PACKED) {
        CHECK(c->offsets != NULL);
        for (size_t i = 0; i <= n; i++) CHECK_EQ_U64(c->offsets[i], r->offsets[i]);
        if (o->sort_by_length) {
            CHECK(c->perm != NULL);
            for (size_t i = 0; i < n; i++) CHECK_EQ_U64(c->perm[i], r->perm[i]);
        } else {
            CHECK(c->perm == NULL);
        }
    } else {
        CHECK(c->offsets == NULL && c->perm == NULL);
    }
}

/* Caller buffers for three fields, sized as the reference says. */
typedef struct cbufs {
    ss_collate_buffers b[3];
    int64_t lens[3][64], offs[3][65], perm[3][64];
} cbufs;

static void cbufs_alloc(cbufs *cb, const ref_out *ref) {
    memset(cb->b, 0, sizeof cb->b);
    for (int f = 0; f < 3; f++) {
        cb->b[f].data = malloc(ref[f].data_bytes + 1);
        cb->b[f].data_bytes = ref[f].data_bytes;
        cb->b[f].mask = malloc(ref[f].mask_bytes + 1);
        cb->b[f].mask_bytes = ref[f].mask_bytes;
        cb->b[f].lengths = cb->lens[f];
        cb->b[f].offsets = cb->offs[f];
        cb->b[f].perm = cb->perm[f];
    }
}

/* The batch lies in the caller buffers and equals the reference; free them. */
static void cbufs_check_free(cbufs *cb, const ss_collated_batch *b, const ref_out *ref, size_t n,
                             const ss_collate_field *fo, const ss_field *fields) {
    for (int f = 0; f < 3; f++) {
        CHECK(b->fields[f].data == cb->b[f].data);
        CHECK(b->fields[f].lengths == cb->lens[f]);
        compare(&b->fields[f], &ref[f], n, &fo[f], fields[f].sequence);
        free(cb->b[f].data);
        free(cb->b[f].mask);
    }
}

/* ------------------------------------------------------------ random stores */

typedef struct rstore {
    ss_store *s;
    ss_field fields[3];
    uint64_t count;
} rstore;

static void make_random_store(rstore *rs, const char *name, uint64_t *rng) {
    static const char *names[3] = {"x", "y", "label"};
    memset(rs, 0, sizeof *rs);
    for (int f = 0; f < 3; f++) {
        ss_field *d = &rs->fields[f];
        d->name = names[f];
        d->dtype = all_dtypes[ss_test_rand(rng) % 12];
        d->sequence = f < 2;
        d->ndim = (uint32_t)(ss_test_rand(rng) % 3);
        for (uint32_t k = 0; k < d->ndim; k++) d->dims[k] = 1 + ss_test_rand(rng) % (k ? 3 : 5);
    }
    ss_schema schema = {3, rs->fields};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, ss_test_path(name), &schema, NULL));
    rs->count = 20 + ss_test_rand(rng) % 20;
    unsigned char *buf[3] = {0};
    for (uint64_t e = 0; e < rs->count; e++) {
        ss_value v[3];
        for (int f = 0; f < 3; f++) {
            uint64_t r = ss_test_rand(rng) % 100, len;
            if (!rs->fields[f].sequence)
                len = 1;
            else if (r < 8)
                len = 0;
            else if (r < 12)
                len = 3000 + ss_test_rand(rng) % 3000; /* many tasks per row */
            else
                len = 1 + ss_test_rand(rng) % 40;
            uint64_t bytes =
                len * row_elements(&rs->fields[f]) * ss_dtype_size(rs->fields[f].dtype);
            buf[f] = realloc(buf[f], bytes + 1);
            for (uint64_t k = 0; k < bytes; k++) buf[f][k] = (unsigned char)ss_test_rand(rng);
            v[f].data = buf[f];
            v[f].length = len;
        }
        CHECK_OK(ss_writer_append(w, v));
    }
    for (int f = 0; f < 3; f++) free(buf[f]);
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    CHECK_OK(ss_open(&rs->s, ss_test_path(name), 0));
}

/* A pad the output dtype holds exactly, given as any of the value kinds
 * that can express it. */
static void random_pad(ss_collate_field *o, ss_dtype out, uint64_t *rng) {
    int integer = out >= SS_U8 && out <= SS_I64;
    int is_unsigned = out == SS_U8 || out == SS_U16 || out == SS_U32 || out == SS_U64;
    int v = (int)(ss_test_rand(rng) % 9) - 4;
    if (is_unsigned && v < 0) v = -v;
    o->pad_kind = integer ? (ss_value_kind)(ss_test_rand(rng) % 3) : SS_VALUE_F64;
    if (o->pad_kind == SS_VALUE_U64 && v < 0) o->pad_kind = SS_VALUE_I64;
    o->pad_value = integer ? v : v * 1.5;
    o->pad_i64 = v;
    o->pad_u64 = (uint64_t)(v < 0 ? 0 : v);
}

static void random_field(ss_collate_field *o, const rstore *rs, int f, uint64_t *rng, double *sc,
                         double *of) {
    ss_collate_field d = SS_COLLATE_FIELD_INIT;
    *o = d;
    o->field = (uint32_t)f;
    o->dtype = ss_test_rand(rng) % 4 == 0 ? (ss_dtype)0 : all_dtypes[ss_test_rand(rng) % 12];
    o->layout = (ss_layout)(ss_test_rand(rng) % 3);
    random_pad(o, o->dtype ? o->dtype : rs->fields[f].dtype, rng);
    o->pad_left = ss_test_rand(rng) % 2;
    int packed = o->layout == SS_LAYOUT_PACKED;
    o->pad_to_multiple = packed ? 0 : (uint64_t[]){0, 1, 3, 8}[ss_test_rand(rng) % 4];
    o->fixed = ss_test_rand(rng) % 3 == 0;
    o->fixed_length = 1 + ss_test_rand(rng) % 30;
    o->truncate_left = ss_test_rand(rng) % 2;
    o->mask = packed ? SS_MASK_NONE : (ss_mask_type)(ss_test_rand(rng) % 3);
    o->sort_by_length = packed && ss_test_rand(rng) % 2;
    uint64_t E = row_elements(&rs->fields[f]);
    if (ss_test_rand(rng) % 3 == 0) {
        for (uint64_t k = 0; k < E; k++) sc[k] = (double)(ss_test_rand(rng) % 200) / 64.0 - 1.0;
        o->scale = sc;
    }
    if (ss_test_rand(rng) % 3 == 0) {
        for (uint64_t k = 0; k < E; k++) of[k] = (double)(ss_test_rand(rng) % 200) / 8.0 - 10.0;
        o->offset = of;
    }
}

static void random_spans(const rstore *rs, ss_span *rows, size_t n, uint64_t *rng) {
    for (size_t i = 0; i < n; i++) {
        uint64_t e = ss_test_rand(rng) % rs->count;
        rows[i].example = e;
        rows[i].t0 = 0;
        rows[i].t1 = SS_SPAN_END;
        /* a window of both sequence fields (within the shorter) */
        uint64_t L = ss_length(rs->s, 0, e), L2 = ss_length(rs->s, 1, e);
        if (L2 < L) L = L2;
        if (ss_test_rand(rng) % 2 && L > 0) {
            uint64_t a = ss_test_rand(rng) % (L + 1), b = ss_test_rand(rng) % (L + 1);
            rows[i].t0 = a < b ? a : b;
            rows[i].t1 = a < b ? b : a;
        }
    }
}

static void test_random(void) {
    uint64_t rng = 2024;
    int cases = 0;
    for (int st = 0; st < 6; st++) {
        rstore rs;
        char name[32];
        snprintf(name, sizeof name, "rand%d.ss", st);
        make_random_store(&rs, name, &rng);
        for (int trial = 0; trial < 12; trial++) {
            ss_collate_field fo[3];
            double sc[3][16], of[3][16];
            for (int f = 0; f < 3; f++) random_field(&fo[f], &rs, f, &rng, sc[f], of[f]);
            size_t n = 1 + ss_test_rand(&rng) % 24;
            ss_span rows[64];
            random_spans(&rs, rows, n, &rng);
            ref_out ref[3];
            for (int f = 0; f < 3; f++) {
                memset(&ref[f], 0, sizeof ref[f]);
                reference(rs.s, &fo[f], rows, n, &ref[f]);
            }
            static const int threads[3] = {1, 2, 4};
            for (int ti = 0; ti < 3; ti++) {
                ss_collator_options opt = SS_COLLATOR_OPTIONS_INIT;
                opt.threads = threads[ti];
                opt.max_rows = trial % 2 ? 8 : 0;
                opt.max_steps = trial % 2 ? 16 : 0;
                opt.parallel_bytes = trial % 3 ? 1 : 0; /* small batches in parallel too */
                ss_collator *c;
                CHECK_OK(ss_collator_create(&c, rs.s, fo, 3, &opt));
                ss_collated_batch b;
                /* twice: the second run reuses the buffers; and a smaller batch in between */
                for (int rep = 0; rep < 2; rep++) {
                    CHECK_OK(ss_collator_collate(&b, c, rows, n));
                    CHECK_EQ_U64(b.rows, n);
                    CHECK_EQ_U64(b.nfields, 3);
                    for (int f = 0; f < 3; f++)
                        compare(&b.fields[f], &ref[f], n, &fo[f], rs.fields[f].sequence);
                    CHECK_OK(ss_collator_collate(&b, c, rows, 1));
                }
                /* sizes and caller buffers */
                ss_collate_sizes sz[3];
                CHECK_OK(ss_collator_sizes(sz, c, rows, n));
                for (int f = 0; f < 3; f++) {
                    CHECK_EQ_U64(sz[f].steps, ref[f].steps);
                    CHECK_EQ_U64(sz[f].data_bytes, ref[f].data_bytes);
                    CHECK_EQ_U64(sz[f].mask_bytes, ref[f].mask_bytes);
                }
                cbufs cb;
                cbufs_alloc(&cb, ref);
                CHECK_OK(ss_collator_collate_into(&b, c, rows, n, cb.b));
                cbufs_check_free(&cb, &b, ref, n, fo, rs.fields);
                ss_collator_free(c);
                cases++;
            }
            for (int f = 0; f < 3; f++) {
                free(ref[f].data);
                free(ref[f].mask);
            }
        }
        ss_close(rs.s);
    }
    printf("random: %d cases\n", cases);
}

/* ------------------------------------------------------------ by hand */

static ss_store *token_store(void) {
    /* tokens (u16): [1 2 3] [4] [5 6]; label (i32): 7 8 9 */
    static int made;
    char name[32];
    snprintf(name, sizeof name, "tok%d.ss", made++);
    const char *path = ss_test_path(name);
    ss_field fields[2] = {{"tok", SS_U16, 1, 0, {0}}, {"label", SS_I32, 0, 0, {0}}};
    ss_schema schema = {2, fields};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, NULL));
    uint16_t t[3][3] = {{1, 2, 3}, {4}, {5, 6}};
    uint64_t len[3] = {3, 1, 2};
    for (int i = 0; i < 3; i++) {
        int32_t label = 7 + i;
        ss_value v[2] = {{t[i], len[i]}, {&label, 1}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_set_attr(w, "unused", SS_ATTR_TEXT, "x", 1));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    return s;
}

static const ss_collated *collate1(ss_store *s, ss_collate_field *o, const ss_span *rows, size_t n,
                                   ss_collator **c) {
    ss_collator_options opt = SS_COLLATOR_OPTIONS_INIT;
    opt.threads = 2;
    CHECK_OK(ss_collator_create(c, s, o, 1, &opt));
    ss_collated_batch b;
    CHECK_OK(ss_collator_collate(&b, *c, rows, n));
    CHECK_EQ_U64(b.nfields, 1);
    return &b.fields[0];
}

static void check_i64(const void *data, const int64_t *want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        memcpy(&v, (const unsigned char *)data + 8 * i, 8);
        if (v != want[i])
            fprintf(stderr, "element %zu: %lld, expected %lld\n", i, (long long)v,
                    (long long)want[i]);
        CHECK(v == want[i]);
    }
}

static void test_by_hand(void) {
    ss_store *s = token_store();
    ss_span all[3] = {{0, 0, SS_SPAN_END}, {1, 0, SS_SPAN_END}, {2, 0, SS_SPAN_END}};
    ss_collator *c;
    ss_collate_field o = SS_COLLATE_FIELD_INIT;
    o.field = 0; /* tok */
    o.dtype = SS_I64;
    o.pad_value = -1;
    o.mask = SS_MASK_U8;

    const ss_collated *r = collate1(s, &o, all, 3, &c);
    CHECK(r->ndim == 2 && r->shape[0] == 3 && r->shape[1] == 3 && r->dtype == SS_I64);
    check_i64(r->data, (const int64_t[]){1, 2, 3, 4, -1, -1, 5, 6, -1}, 9);
    CHECK(memcmp(r->mask, "\1\1\1\1\0\0\1\1\0", 9) == 0);
    CHECK(r->lengths[0] == 3 && r->lengths[1] == 1 && r->lengths[2] == 2);
    ss_collator_free(c);

    o.pad_left = 1; /* left padding */
    r = collate1(s, &o, all, 3, &c);
    check_i64(r->data, (const int64_t[]){1, 2, 3, -1, -1, 4, -1, 5, 6}, 9);
    CHECK(memcmp(r->mask, "\1\1\1\0\0\1\0\1\1", 9) == 0);
    ss_collator_free(c);

    o.pad_left = 0; /* time-major: [T][B] */
    o.layout = SS_LAYOUT_TIME_MAJOR;
    r = collate1(s, &o, all, 3, &c);
    CHECK(r->shape[0] == 3 && r->shape[1] == 3);
    check_i64(r->data, (const int64_t[]){1, 4, 5, 2, -1, 6, 3, -1, -1}, 9);
    CHECK(memcmp(r->mask, "\1\1\1\1\0\1\1\0\0", 9) == 0);
    ss_collator_free(c);

    o.layout = SS_LAYOUT_BATCH_MAJOR; /* pad to a multiple of 4 */
    o.pad_to_multiple = 4;
    o.mask = SS_MASK_F32;
    r = collate1(s, &o, all, 3, &c);
    CHECK(r->steps == 4);
    check_i64(r->data, (const int64_t[]){1, 2, 3, -1, 4, -1, -1, -1, 5, 6, -1, -1}, 12);
    const float *fm = r->mask;
    CHECK(fm[0] == 1.0f && fm[3] == 0.0f && fm[4] == 1.0f && fm[5] == 0.0f && fm[9] == 1.0f);
    ss_collator_free(c);

    o.pad_to_multiple = 0; /* fixed length 2: truncate and pad */
    o.mask = SS_MASK_NONE;
    o.fixed = 1;
    o.fixed_length = 2;
    r = collate1(s, &o, all, 3, &c);
    check_i64(r->data, (const int64_t[]){1, 2, 4, -1, 5, 6}, 6);
    CHECK(r->lengths[0] == 2 && r->mask == NULL);
    ss_collator_free(c);
    o.truncate_left = 1;
    r = collate1(s, &o, all, 3, &c);
    check_i64(r->data, (const int64_t[]){2, 3, 4, -1, 5, 6}, 6);
    ss_collator_free(c);

    /* packed, sorted by descending length, with the permutation */
    ss_collate_field p = SS_COLLATE_FIELD_INIT;
    p.field = 0; /* tok */
    p.dtype = SS_I64;
    p.layout = SS_LAYOUT_PACKED;
    p.sort_by_length = 1;
    ss_span rev[3] = {{1, 0, SS_SPAN_END}, {2, 0, SS_SPAN_END}, {0, 0, SS_SPAN_END}};
    r = collate1(s, &p, rev, 3, &c);
    CHECK(r->ndim == 1 && r->shape[0] == 6);
    check_i64(r->data, (const int64_t[]){1, 2, 3, 5, 6, 4}, 6);
    check_i64(r->offsets, (const int64_t[]){0, 3, 5, 6}, 4);
    check_i64(r->perm, (const int64_t[]){2, 1, 0}, 3);
    check_i64(r->lengths, (const int64_t[]){3, 2, 1}, 3);
    ss_collator_free(c);
    p.sort_by_length = 0; /* packed in row order, spans as windows */
    ss_span win[2] = {{0, 1, 3}, {2, 0, 1}};
    r = collate1(s, &p, win, 2, &c);
    check_i64(r->data, (const int64_t[]){2, 3, 5}, 3);
    check_i64(r->offsets, (const int64_t[]){0, 2, 3}, 3);
    CHECK(r->perm == NULL);
    ss_collator_free(c);

    /* the label field collates to [B] */
    ss_collate_field l = SS_COLLATE_FIELD_INIT;
    l.field = 1; /* label */
    l.dtype = SS_I64;
    r = collate1(s, &l, rev, 3, &c);
    CHECK(r->ndim == 1 && r->shape[0] == 3 && !r->sequence);
    check_i64(r->data, (const int64_t[]){8, 9, 7}, 3);
    ss_collator_free(c);

    /* all fields with defaults: stored dtypes, batch-major, pad 0 */
    CHECK_OK(ss_collator_create(&c, s, NULL, 0, NULL));
    ss_collated_batch b;
    CHECK_OK(ss_collator_collate(&b, c, all, 3));
    CHECK(b.nfields == 2 && b.fields[0].dtype == SS_U16 && b.fields[1].dtype == SS_I32);
    const uint16_t *tk = b.fields[0].data;
    CHECK(tk[0] == 1 && tk[3] == 4 && tk[4] == 0 && tk[8] == 0 && tk[7] == 6);
    const int32_t *lb = b.fields[1].data;
    CHECK(lb[0] == 7 && lb[1] == 8 && lb[2] == 9);
    ss_collator_free(c);
    ss_close(s);
}

/* EEG-like: i16 x 3 channels with gains from a store attribute, f32 output. */
static void test_gain_attr(void) {
    ss_field fields[1] = {{"eeg", SS_I16, 1, 1, {3}}};
    ss_schema schema = {1, fields};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, ss_test_path("eeg.ss"), &schema, NULL));
    int16_t d[2][3] = {{10, -20, 30}, {-1, 2, 4}};
    ss_value v = {d, 2};
    CHECK_OK(ss_writer_append(w, &v));
    double gain[3] = {0.5, 2.0, -1.0}, off[3] = {0, 1, 100};
    float gainf[2] = {1, 2};
    CHECK_OK(ss_writer_set_attr(w, "eeg.gain", SS_F64, gain, sizeof gain));
    CHECK_OK(ss_writer_set_attr(w, "eeg.offset", SS_F64, off, sizeof off));
    CHECK_OK(ss_writer_set_attr(w, "short", SS_F32, gainf, sizeof gainf));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, ss_test_path("eeg.ss"), 0));
    ss_collate_field o = SS_COLLATE_FIELD_INIT;
    o.field = 0; /* eeg */
    o.dtype = SS_F32;
    o.scale_attr = "eeg.gain";
    o.offset_attr = "eeg.offset";
    o.fixed = 1;
    o.fixed_length = 3;
    o.pad_value = NAN;
    ss_collator *c;
    ss_span sp = {0, 0, SS_SPAN_END};
    const ss_collated *r = collate1(s, &o, &sp, 1, &c);
    const float *x = r->data;
    CHECK(r->ndim == 3 && r->shape[0] == 1 && r->shape[1] == 3 && r->shape[2] == 3);
    const float want[6] = {5, -39, 70, -0.5f, 5, 96};
    for (int i = 0; i < 6; i++) CHECK(x[i] == want[i]);
    for (int i = 6; i < 9; i++) CHECK(isnan(x[i]));
    ss_collator_free(c);
    /* an attribute of the wrong size is refused with its name */
    o.offset_attr = NULL;
    o.scale_attr = "short";
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
    CHECK(c == NULL && strstr(ss_error_message(), "short") != NULL);
    o.scale_attr = "missing";
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_ENOTFOUND);
    CHECK(strstr(ss_error_message(), "missing") != NULL);
    ss_close(s);
}

static void test_errors(void) {
    ss_store *s = token_store();
    ss_collator *c = (ss_collator *)1;
    ss_collate_field o = SS_COLLATE_FIELD_INIT;
    o.field = 2; /* the store has tok (0) and label (1) */
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_ERANGE);
    CHECK(c == NULL && strstr(ss_error_message(), "field 2") != NULL);
    o.field = 0;
    o.dtype = (ss_dtype)77;
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "dtype") != NULL && strstr(ss_error_message(), "tok"));
    o.dtype = 0;
    o.fixed = 1;
    o.fixed_length = 0;
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "fixed_length") != NULL);
    o.fixed = 0;
    o.layout = SS_LAYOUT_PACKED;
    o.mask = SS_MASK_U8;
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "mask") != NULL);
    o.mask = SS_MASK_NONE;
    o.pad_to_multiple = 8;
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
    o.pad_to_multiple = 0;
    o.layout = (ss_layout)9;
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
    o.layout = SS_LAYOUT_BATCH_MAJOR;
    o.sort_by_length = 1;
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
    o.sort_by_length = 0;
    o.version = 99;
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
    o.version = SS_COLLATE_FIELD_VERSION;
    ss_collator_options opt = SS_COLLATOR_OPTIONS_INIT;
    opt.threads = -1;
    CHECK_RC(ss_collator_create(&c, s, &o, 1, &opt), SS_EINVAL);

    CHECK_OK(ss_collator_create(&c, s, &o, 1, NULL));
    ss_collated_batch b;
    ss_span bad[1] = {{5, 0, SS_SPAN_END}};
    CHECK_RC(ss_collator_collate(&b, c, bad, 1), SS_ERANGE);
    CHECK(strstr(ss_error_message(), "tok") != NULL);
    ss_span bad2[1] = {{0, 2, 5}};
    CHECK_RC(ss_collator_collate(&b, c, bad2, 1), SS_ERANGE);
    CHECK(strstr(ss_error_message(), "[2, 5)") != NULL);
    ss_span bad3[1] = {{0, 2, 1}};
    CHECK_RC(ss_collator_collate(&b, c, bad3, 1), SS_ERANGE);
    CHECK_RC(ss_collator_collate(&b, c, bad3, 0), SS_EINVAL);
    ss_span ok[2] = {{0, 0, SS_SPAN_END}, {1, 0, SS_SPAN_END}};
    unsigned char small[4];
    ss_collate_buffers buf = {small, sizeof small, NULL, 0, NULL, NULL, NULL};
    CHECK_RC(ss_collator_collate_into(&b, c, ok, 2, &buf), SS_EBUFS);
    CHECK(strstr(ss_error_message(), "needs 12") != NULL);
    CHECK_OK(ss_collator_collate(&b, c, ok, 2)); /* usable after errors */
    CHECK_EQ_U64(b.fields[0].steps, 3);
    ss_collator_free(c);
    ss_collator_free(NULL);

    /* The same errors when the team plans (after a parallel batch): the
     * first bad row named on the caller's thread, then usable again. */
    opt.threads = 2;
    opt.parallel_bytes = 1;
    CHECK_OK(ss_collator_create(&c, s, &o, 1, &opt));
    CHECK_OK(ss_collator_collate(&b, c, ok, 2));
    ss_span bad4[4] = {{0, 0, SS_SPAN_END}, {1, 0, SS_SPAN_END}, {0, 2, 5}, {7, 0, SS_SPAN_END}};
    CHECK_RC(ss_collator_collate(&b, c, bad4, 4), SS_ERANGE);
    CHECK(strstr(ss_error_message(), "row 2") != NULL);
    CHECK_OK(ss_collator_collate(&b, c, ok, 2));
    CHECK_RC(ss_collator_collate_into(&b, c, ok, 2, &buf), SS_EBUFS);
    CHECK(strstr(ss_error_message(), "needs 12") != NULL);
    CHECK_OK(ss_collator_collate(&b, c, ok, 2));
    CHECK_EQ_U64(b.fields[0].steps, 3);
    ss_collator_free(c);
    ss_close(s);
}

/* ------------------------------------------------------------ rows in memory */

/* Random bytes for a row of `len` steps of `f`'s dtype and shape. */
static unsigned char *random_row(const ss_field *f, uint64_t len, uint64_t *rng) {
    uint64_t bytes = len * row_elements(f) * ss_dtype_size(f->dtype);
    unsigned char *p = malloc(bytes + 1);
    CHECK(p != NULL);
    for (uint64_t k = 0; k < bytes; k++) p[k] = (unsigned char)ss_test_rand(rng);
    return p;
}

static void set_input(ss_collate_input *in, const ss_field *f, const void *data, uint64_t len) {
    memset(in, 0, sizeof *in);
    in->data = data;
    in->length = len;
    in->dtype = f->dtype;
    in->ndim = f->ndim;
    memcpy(in->dims, f->dims, sizeof in->dims);
}

/* ss_collator_collate_rows() against reference_rows(): either rows of the
 * store (its views, no declaration: also equal to collating the spans) or
 * random rows in memory of a declared dtype and shape other than the store's;
 * random options at 1, 2 and 4 threads, own and caller buffers. */
static void test_rows(void) {
    uint64_t rng = 4711;
    int cases = 0;
    for (int st = 0; st < 4; st++) {
        rstore rs;
        char name[32];
        snprintf(name, sizeof name, "rows%d.ss", st);
        make_random_store(&rs, name, &rng);
        for (int trial = 0; trial < 12; trial++) {
            int from_store = trial % 3 == 0;
            rstore decl = rs; /* the declared input of each field */
            ss_collate_field fo[3];
            double sc[3][16], of[3][16];
            for (int f = 0; f < 3; f++) {
                ss_field *d = &decl.fields[f];
                if (!from_store && ss_test_rand(&rng) % 3)
                    d->dtype = all_dtypes[ss_test_rand(&rng) % 12];
                if (!from_store && ss_test_rand(&rng) % 2) {
                    d->ndim = (uint32_t)(ss_test_rand(&rng) % 3);
                    memset(d->dims, 0, sizeof d->dims);
                    for (uint32_t k = 0; k < d->ndim; k++)
                        d->dims[k] = 1 + ss_test_rand(&rng) % (k ? 3 : 5);
                }
                random_field(&fo[f], &decl, f, &rng, sc[f], of[f]);
                if (!from_store) {
                    fo[f].in_dtype = d->dtype;
                    fo[f].in_reshape = 1;
                    fo[f].in_ndim = d->ndim;
                    memcpy(fo[f].in_dims, d->dims, sizeof fo[f].in_dims);
                }
            }
            size_t n = 1 + ss_test_rand(&rng) % 24;
            ss_span spans[64];
            random_spans(&rs, spans, n, &rng);
            ss_collate_input in[64 * 3];
            unsigned char *own[64 * 3] = {0};
            const unsigned char *src[3][64];
            uint64_t len[3][64];
            for (size_t i = 0; i < n; i++) {
                for (int f = 0; f < 3; f++) {
                    const ss_field *d = &decl.fields[f];
                    if (from_store) {
                        ss_view v;
                        CHECK_OK(ss_get(&v, rs.s, (uint32_t)f, spans[i].example));
                        uint64_t t0 = d->sequence ? spans[i].t0 : 0;
                        uint64_t t1 = !d->sequence                 ? 1
                                      : spans[i].t1 == SS_SPAN_END ? v.length
                                                                   : spans[i].t1;
                        src[f][i] = (const unsigned char *)v.data + t0 * v.row_bytes;
                        len[f][i] = t1 - t0;
                    } else {
                        uint64_t r = ss_test_rand(&rng) % 100;
                        len[f][i] = !d->sequence ? 1
                                    : r < 8      ? 0
                                    : r < 12     ? 2000 + ss_test_rand(&rng) % 2000
                                                 : 1 + ss_test_rand(&rng) % 40;
                        own[i * 3 + f] = random_row(d, len[f][i], &rng);
                        src[f][i] = own[i * 3 + f];
                    }
                    set_input(&in[i * 3 + f], d, src[f][i], len[f][i]);
                }
            }
            ref_out ref[3];
            for (int f = 0; f < 3; f++) {
                memset(&ref[f], 0, sizeof ref[f]);
                reference_rows(&fo[f], &decl.fields[f], src[f], len[f], n, &ref[f]);
            }
            static const int threads[3] = {1, 2, 4};
            for (int ti = 0; ti < 3; ti++) {
                ss_collator_options opt = SS_COLLATOR_OPTIONS_INIT;
                opt.threads = threads[ti];
                opt.max_rows = trial % 2 ? 8 : 0;
                opt.max_steps = trial % 2 ? 16 : 0;
                opt.parallel_bytes = trial % 4 ? 1 : 0;
                ss_collator *c;
                CHECK_OK(ss_collator_create(&c, rs.s, fo, 3, &opt));
                ss_collated_batch b;
                for (int rep = 0; rep < 2; rep++) {
                    CHECK_OK(ss_collator_collate_rows(&b, c, in, n, NULL));
                    CHECK_EQ_U64(b.rows, n);
                    CHECK_EQ_U64(b.nfields, 3);
                    for (int f = 0; f < 3; f++) {
                        const ss_field *d = &decl.fields[f];
                        compare(&b.fields[f], &ref[f], n, &fo[f], d->sequence);
                        /* the declared trailing shape */
                        const ss_collated *o = &b.fields[f];
                        CHECK_EQ_U64(o->ndim,
                                     d->ndim +
                                         (d->sequence && fo[f].layout != SS_LAYOUT_PACKED ? 2 : 1));
                        for (uint32_t k = 0; k < d->ndim; k++)
                            CHECK_EQ_U64(o->shape[o->ndim - d->ndim + k], d->dims[k]);
                    }
                    CHECK_OK(ss_collator_collate_rows(&b, c, in, 1, NULL));
                }
                if (from_store) { /* the same as collating the spans */
                    CHECK_OK(ss_collator_collate(&b, c, spans, n));
                    for (int f = 0; f < 3; f++)
                        compare(&b.fields[f], &ref[f], n, &fo[f], decl.fields[f].sequence);
                } else {
                    int differs = 0;
                    for (int f = 0; f < 3; f++)
                        differs |=
                            memcmp(&decl.fields[f].dtype, &rs.fields[f].dtype, sizeof(ss_dtype)) ||
                            decl.fields[f].ndim != rs.fields[f].ndim ||
                            memcmp(decl.fields[f].dims, rs.fields[f].dims,
                                   sizeof rs.fields[f].dims);
                    if (differs) CHECK_RC(ss_collator_collate(&b, c, spans, n), SS_EINVAL);
                }
                cbufs cb;
                cbufs_alloc(&cb, ref);
                CHECK_OK(ss_collator_collate_rows(&b, c, in, n, cb.b));
                cbufs_check_free(&cb, &b, ref, n, fo, decl.fields);
                ss_collator_free(c);
                cases++;
            }
            for (int f = 0; f < 3; f++) {
                free(ref[f].data);
                free(ref[f].mask);
            }
            for (size_t i = 0; i < 3 * n; i++) free(own[i]);
        }
        ss_close(rs.s);
    }
    printf("rows: %d cases\n", cases);
}

/* Rows in memory by hand (u16 tokens declared as i32 pairs), and bad entries. */
static void test_rows_by_hand(void) {
    ss_store *s = token_store();
    ss_collate_field o = SS_COLLATE_FIELD_INIT;
    o.field = 0; /* tok */
    o.dtype = SS_I64;
    o.pad_value = -1;
    o.mask = SS_MASK_U8;
    o.in_dtype = SS_I32;
    o.in_reshape = 1;
    o.in_ndim = 1;
    o.in_dims[0] = 2;
    ss_collate_field l = SS_COLLATE_FIELD_INIT;
    l.field = 1; /* label */
    ss_collator *c;
    ss_collate_field fo[2] = {o, l};
    CHECK_OK(ss_collator_create(&c, s, fo, 2, NULL));
    int32_t a[4] = {1, 2, 3, 4}, b1[2] = {5, 6};
    int32_t la = 10, lb = 20;
    ss_field tokf = {"tok", SS_I32, 1, 1, {2}}, labf = {"label", SS_I32, 0, 0, {0}};
    ss_collate_input in[4];
    set_input(&in[0], &tokf, a, 2);
    set_input(&in[1], &labf, &la, 1);
    set_input(&in[2], &tokf, b1, 1);
    set_input(&in[3], &labf, &lb, 1);
    ss_collated_batch b;
    CHECK_OK(ss_collator_collate_rows(&b, c, in, 2, NULL));
    const ss_collated *r = &b.fields[0];
    CHECK(r->ndim == 3 && r->shape[0] == 2 && r->shape[1] == 2 && r->shape[2] == 2);
    check_i64(r->data, (const int64_t[]){1, 2, 3, 4, 5, 6, -1, -1}, 8);
    CHECK(memcmp(r->mask, "\1\1\1\0", 4) == 0);
    CHECK(r->lengths[0] == 2 && r->lengths[1] == 1);
    const int32_t *lab = b.fields[1].data;
    CHECK(b.fields[1].dtype == SS_I32 && lab[0] == 10 && lab[1] == 20);
    /* spans of the store do not have the declared dtype and shape */
    ss_span sp[1] = {{0, 0, SS_SPAN_END}};
    CHECK_RC(ss_collator_collate(&b, c, sp, 1), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "tok") != NULL);
    ss_collate_sizes sz[2];
    CHECK_RC(ss_collator_sizes(sz, c, sp, 1), SS_EINVAL);
    /* bad entries: wrong dtype, wrong shape, a fixed field of 2, NULL data */
    in[2].dtype = SS_U16;
    CHECK_RC(ss_collator_collate_rows(&b, c, in, 2, NULL), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "'tok', row 1") != NULL);
    in[2].dtype = SS_I32;
    in[2].dims[0] = 3;
    CHECK_RC(ss_collator_collate_rows(&b, c, in, 2, NULL), SS_EINVAL);
    in[2].dims[0] = 2;
    in[3].length = 2;
    CHECK_RC(ss_collator_collate_rows(&b, c, in, 2, NULL), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "label") != NULL);
    in[3].length = 1;
    in[2].data = NULL;
    CHECK_RC(ss_collator_collate_rows(&b, c, in, 2, NULL), SS_EINVAL);
    in[2].length = 0; /* an empty row may have no data */
    CHECK_OK(ss_collator_collate_rows(&b, c, in, 2, NULL));
    check_i64(b.fields[0].data, (const int64_t[]){1, 2, 3, 4, -1, -1, -1, -1}, 8);
    CHECK_RC(ss_collator_collate_rows(&b, c, in, 0, NULL), SS_EINVAL);
    CHECK_RC(ss_collator_collate_rows(&b, c, NULL, 1, NULL), SS_EINVAL);
    ss_collator_free(c);
    /* bad declarations */
    o.in_dtype = (ss_dtype)77;
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "in_dtype") != NULL);
    o.in_dtype = 0;
    o.in_ndim = SS_MAX_DIMS + 1;
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
    o.in_ndim = 1;
    o.in_dims[0] = 0;
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
    ss_close(s);
}

/* ------------------------------------------- mask dtypes, channels-first */

/* Matchbox's MaskedBatch.fromlist(examples, dims=(True, False)): data =
 * examples[0].new(bs, maxT, C).zero_(), mask = examples[0].new(bs, maxT,
 * 1).zero_() (the data's dtype), mask[i, :T_i] = 1. Two f32 examples of
 * 2 and 3 steps of C = 2; then the mask in i64 output's dtype, and an
 * explicit f16 mask (1.0 = 0x3c00). */
static void test_mask_dtype(void) {
    ss_field fd[1] = {{"x", SS_F32, 1, 1, {2}}};
    ss_schema sc = {1, fd};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, ss_test_path("mb.ss"), &sc, NULL));
    float e0[4] = {1, 2, 3, 4}, e1[6] = {5, 6, 7, 8, 9, 10};
    ss_value v0 = {e0, 2}, v1 = {e1, 3};
    CHECK_OK(ss_writer_append(w, &v0));
    CHECK_OK(ss_writer_append(w, &v1));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, ss_test_path("mb.ss"), 0));
    ss_collate_field o = SS_COLLATE_FIELD_INIT;
    o.field = 0; /* x */
    o.mask = SS_MASK_DTYPE;
    ss_span rows[2] = {{0, 0, SS_SPAN_END}, {1, 0, SS_SPAN_END}};
    ss_collator *c;
    const ss_collated *r = collate1(s, &o, rows, 2, &c);
    float want[12] = {1, 2, 3, 4, 0, 0, 5, 6, 7, 8, 9, 10}, wmask[6] = {1, 1, 0, 1, 1, 1};
    CHECK(r->dtype == SS_F32 && r->mask_bytes == 6 * 4);
    CHECK(memcmp(r->data, want, sizeof want) == 0);
    CHECK(memcmp(r->mask, wmask, sizeof wmask) == 0);
    ss_collator_free(c);
    o.dtype = SS_I64;
    r = collate1(s, &o, rows, 2, &c);
    int64_t imask[6] = {1, 1, 0, 1, 1, 1};
    CHECK(r->mask_bytes == 6 * 8 && memcmp(r->mask, imask, sizeof imask) == 0);
    ss_collator_free(c);
    o.mask_dtype = SS_F16;
    r = collate1(s, &o, rows, 2, &c);
    uint16_t hmask[6] = {0x3c00, 0x3c00, 0, 0x3c00, 0x3c00, 0x3c00};
    CHECK(r->mask_bytes == 6 * 2 && memcmp(r->mask, hmask, sizeof hmask) == 0);
    ss_collator_free(c);
    o.mask = SS_MASK_U8; /* mask_dtype only with SS_MASK_DTYPE */
    CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "mask_dtype"));
    ss_close(s);
}

/* Channels-first [B][C...][T] against a naive transpose of the batch-major
 * [B][T][C...] collation of the same rows (random stores, dtypes, padding,
 * fixed lengths, masks of any dtype, 1 and 3 threads, forced parallelism). */
static void test_channels_first(void) {
    uint64_t rng = 404;
    int cases = 0;
    for (int round = 0; round < 12; round++) {
        rstore rs;
        char name[32];
        snprintf(name, sizeof name, "cf%d.ss", round);
        make_random_store(&rs, name, &rng);
        for (int trial = 0; trial < 8; trial++) {
            ss_collate_field bm, cf;
            double sc[16], of[16];
            random_field(&bm, &rs, 0, &rng, sc, of);
            bm.layout = SS_LAYOUT_BATCH_MAJOR; /* the reference */
            bm.sort_by_length = 0;
            if (ss_test_rand(&rng) % 2) {
                bm.mask = SS_MASK_DTYPE;
                bm.mask_dtype = ss_test_rand(&rng) % 2 ? all_dtypes[ss_test_rand(&rng) % 12] : 0;
            }
            cf = bm;
            cf.layout = SS_LAYOUT_CHANNELS_FIRST;
            ss_span rows[24];
            size_t n = 1 + (size_t)(ss_test_rand(&rng) % 24);
            random_spans(&rs, rows, n, &rng);
            for (int th = 1; th <= 3; th += 2) {
                ss_collator_options opt = SS_COLLATOR_OPTIONS_INIT;
                opt.threads = th;
                opt.parallel_bytes = th > 1 ? 1 : 0;
                ss_collator *c1, *c2;
                ss_collated_batch b1, b2;
                CHECK_OK(ss_collator_create(&c1, rs.s, &bm, 1, &opt));
                CHECK_OK(ss_collator_create(&c2, rs.s, &cf, 1, &opt));
                CHECK_OK(ss_collator_collate(&b1, c1, rows, n));
                CHECK_OK(ss_collator_collate(&b2, c2, rows, n));
                const ss_collated *x = &b1.fields[0], *y = &b2.fields[0];
                uint64_t T = x->steps, C = row_elements(&rs.fields[0]);
                size_t es = ss_dtype_size(x->dtype);
                CHECK_EQ_U64(y->steps, T);
                CHECK_EQ_U64(y->data_bytes, x->data_bytes);
                CHECK_EQ_U64(y->ndim, x->ndim);
                CHECK_EQ_U64(y->shape[0], n);
                CHECK_EQ_U64(y->shape[y->ndim - 1], T);
                for (uint32_t k = 0; k < rs.fields[0].ndim; k++)
                    CHECK_EQ_U64(y->shape[1 + k], rs.fields[0].dims[k]);
                const unsigned char *xd = x->data, *yd = y->data;
                for (uint64_t b = 0; b < n; b++)
                    for (uint64_t t = 0; t < T; t++)
                        for (uint64_t ch = 0; ch < C; ch++) {
                            CHECK(memcmp(yd + ((b * C + ch) * T + t) * es,
                                         xd + ((b * T + t) * C + ch) * es, es) == 0);
                        }
                CHECK_EQ_U64(y->mask_bytes, x->mask_bytes);
                if (x->mask) CHECK(memcmp(y->mask, x->mask, x->mask_bytes) == 0);
                for (uint64_t b = 0; b < n; b++) CHECK(y->lengths[b] == x->lengths[b]);
                ss_collator_free(c1);
                ss_collator_free(c2);
                cases++;
            }
        }
        ss_close(rs.s);
    }
    printf("channels-first: %d cases\n", cases);
}

/* Integer pads. INT64_MIN + 1 and UINT64_MAX have no
 * double (a double pad would have been rounded to -2^63 and 2^64, then
 * saturated); as integers they pad exactly. A pad the output dtype cannot
 * hold is refused, never wrapped, saturated or rounded. */
static void test_integer_pads(void) {
    ss_store *s = token_store();
    ss_span two[2] = {{0, 0, SS_SPAN_END}, {1, 0, SS_SPAN_END}}; /* lengths 3 and 1 */
    ss_collator *c;
    ss_collate_field o = SS_COLLATE_FIELD_INIT;
    o.field = 0; /* tok */
    o.dtype = SS_I64;
    o.pad_kind = SS_VALUE_I64;
    o.pad_i64 = INT64_MIN + 1;
    const ss_collated *r = collate1(s, &o, two, 2, &c);
    check_i64(r->data, (const int64_t[]){1, 2, 3, 4, INT64_MIN + 1, INT64_MIN + 1}, 6);
    ss_collator_free(c);

    o.dtype = SS_U64;
    o.pad_kind = SS_VALUE_U64;
    o.pad_u64 = UINT64_MAX - 1;
    r = collate1(s, &o, two, 2, &c);
    uint64_t got[6];
    memcpy(got, r->data, sizeof got);
    CHECK(got[0] == 1 && got[3] == 4 && got[4] == UINT64_MAX - 1 && got[5] == UINT64_MAX - 1);
    ss_collator_free(c);

    o.dtype = SS_F32; /* an integer a float holds exactly */
    o.pad_kind = SS_VALUE_I64;
    o.pad_i64 = -(INT64_C(1) << 24);
    r = collate1(s, &o, two, 2, &c);
    float pf;
    memcpy(&pf, (const unsigned char *)r->data + 4 * 4, 4);
    CHECK(pf == -16777216.0f);
    ss_collator_free(c);

    /* refused: each names the pad and the dtype */
    static const struct {
        ss_dtype dtype;
        ss_value_kind kind;
        double f;
        int64_t i;
        uint64_t u;
        const char *text;
    } bad[] = {
        {SS_U16, SS_VALUE_F64, -1, 0, 0, "pad -1 has no exact u16"},
        {SS_I32, SS_VALUE_F64, 1.5, 0, 0, "pad 1.5 has no exact i32"},
        {SS_I64, SS_VALUE_F64, NAN, 0, 0, "no exact i64"},
        {SS_U8, SS_VALUE_U64, 0, 0, 256, "pad 256 has no exact u8"},
        {SS_I8, SS_VALUE_I64, 0, -129, 0, "pad -129 has no exact i8"},
        {SS_I64, SS_VALUE_U64, 0, 0, UINT64_C(1) << 63, "pad 9223372036854775808 has no exact i64"},
        {SS_U64, SS_VALUE_I64, 0, -1, 0, "pad -1 has no exact u64"},
        {SS_F32, SS_VALUE_I64, 0, (INT64_C(1) << 24) + 1, 0, "pad 16777217 has no exact f32"},
        {SS_F64, SS_VALUE_U64, 0, 0, UINT64_MAX, "pad 18446744073709551615 has no exact f64"},
        {SS_BF16, SS_VALUE_I64, 0, 257, 0, "pad 257 has no exact bf16"},
        {SS_I64, (ss_value_kind)7, 0, 0, 0, "unknown pad_kind"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        o.dtype = bad[k].dtype;
        o.pad_kind = bad[k].kind;
        o.pad_value = bad[k].f;
        o.pad_i64 = bad[k].i;
        o.pad_u64 = bad[k].u;
        CHECK_RC(ss_collator_create(&c, s, &o, 1, NULL), SS_EINVAL);
        if (!strstr(ss_error_message(), bad[k].text))
            fprintf(stderr, "case %zu: %s\n", k, ss_error_message());
        CHECK(strstr(ss_error_message(), bad[k].text) != NULL);
        CHECK(strstr(ss_error_message(), "'tok'") != NULL);
    }
    /* the edges that fit are accepted */
    static const struct {
        ss_dtype dtype;
        ss_value_kind kind;
        double f;
        int64_t i;
        uint64_t u;
    } good[] = {
        {SS_U8, SS_VALUE_U64, 0, 0, 255},
        {SS_I8, SS_VALUE_I64, 0, -128, 0},
        {SS_U64, SS_VALUE_U64, 0, 0, UINT64_MAX},
        {SS_I64, SS_VALUE_I64, 0, INT64_MIN, 0},
        {SS_I64, SS_VALUE_F64, -9223372036854775808.0, 0, 0},
        {SS_F32, SS_VALUE_F64, NAN, 0, 0},
        {SS_F16, SS_VALUE_I64, 0, 2048, 0},
        {SS_U16, SS_VALUE_F64, 65535, 0, 0},
    };
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
        o.dtype = good[k].dtype;
        o.pad_kind = good[k].kind;
        o.pad_value = good[k].f;
        o.pad_i64 = good[k].i;
        o.pad_u64 = good[k].u;
        CHECK_OK(ss_collator_create(&c, s, &o, 1, NULL));
        ss_collator_free(c);
    }
    ss_close(s);
}

/* Batch-major padding without an affine map runs one fused kernel per piece
 * of a row (pad, convert, pad); every input/output dtype pair against
 * reference_rows(): both pad sides, rows of length 0, truncation from either
 * side, rows longer than a task (several pieces per row), 1 or 3 elements per
 * step, masks, random bits (NaNs too), at 1 thread and at 2 with every batch
 * parallel. */
static void test_fused_pairs(void) {
    uint64_t rng = 1515;
    rstore rs;
    make_random_store(&rs, "fused.ss", &rng); /* field 0 is a sequence */
    int cases = 0;
    for (int si = 0; si < 12; si++)
        for (int di = 0; di < 12; di++) {
            ss_field d = rs.fields[0];
            d.dtype = all_dtypes[si];
            memset(d.dims, 0, sizeof d.dims);
            d.ndim = (uint32_t)((si + di) % 2);
            d.dims[0] = d.ndim ? 3 : 0;
            ss_collate_field o = SS_COLLATE_FIELD_INIT;
            o.field = 0;
            o.dtype = all_dtypes[di];
            o.layout = SS_LAYOUT_BATCH_MAJOR;
            random_pad(&o, o.dtype, &rng);
            o.pad_left = ss_test_rand(&rng) % 2;
            o.fixed = ss_test_rand(&rng) % 3 == 0;
            o.fixed_length = 1 + ss_test_rand(&rng) % 30;
            o.truncate_left = ss_test_rand(&rng) % 2;
            o.pad_to_multiple = ss_test_rand(&rng) % 2 ? 8 : 0;
            o.mask = (ss_mask_type)(ss_test_rand(&rng) % 3);
            o.in_dtype = d.dtype;
            o.in_reshape = 1;
            o.in_ndim = d.ndim;
            memcpy(o.in_dims, d.dims, sizeof o.in_dims);
            size_t n = 2 + ss_test_rand(&rng) % 20;
            ss_collate_input in[24];
            unsigned char *own[24];
            const unsigned char *src[24];
            uint64_t len[24];
            for (size_t i = 0; i < n; i++) {
                /* row 0 empty; row 1 longer than a task of any output dtype */
                len[i] = i == 0   ? 0
                         : i == 1 ? 9000 + ss_test_rand(&rng) % 100
                                  : ss_test_rand(&rng) % 41;
                own[i] = random_row(&d, len[i], &rng);
                src[i] = own[i];
                set_input(&in[i], &d, src[i], len[i]);
            }
            ref_out ref;
            memset(&ref, 0, sizeof ref);
            reference_rows(&o, &d, src, len, n, &ref);
            for (int threads = 1; threads <= 2; threads++) {
                ss_collator_options opt = SS_COLLATOR_OPTIONS_INIT;
                opt.threads = threads;
                opt.parallel_bytes = threads == 2 ? 1 : 0;
                ss_collator *c;
                CHECK_OK(ss_collator_create(&c, rs.s, &o, 1, &opt));
                ss_collated_batch b;
                CHECK_OK(ss_collator_collate_rows(&b, c, in, n, NULL));
                compare(&b.fields[0], &ref, n, &o, 1);
                ss_collator_free(c);
                cases++;
            }
            free(ref.data);
            free(ref.mask);
            for (size_t i = 0; i < n; i++) free(own[i]);
        }
    ss_close(rs.s);
    printf("fused pairs: %d cases\n", cases);
}

/* A team that writes batch-major rows on the threads that resolved them
 * (no tasks): consecutive batches of other rows and sizes on one collator
 * (its per-row arrays hold the batch before), own and caller buffers,
 * growing and shrinking, 2 and 3 threads, against the reference. */
static void test_team_rows(void) {
    uint64_t rng = 77;
    int cases = 0;
    for (int st = 0; st < 4; st++) {
        rstore rs;
        char name[32];
        snprintf(name, sizeof name, "team%d.ss", st);
        make_random_store(&rs, name, &rng);
        ss_collate_field fo[3];
        for (int f = 0; f < 3; f++) {
            double unused[16];
            random_field(&fo[f], &rs, f, &rng, unused, unused);
            fo[f].layout = SS_LAYOUT_BATCH_MAJOR; /* fused where the dtypes allow */
            fo[f].scale = fo[f].offset = NULL;
            fo[f].sort_by_length = 0;
        }
        for (int th = 2; th <= 3; th++) {
            ss_collator_options opt = SS_COLLATOR_OPTIONS_INIT;
            opt.threads = th;
            opt.parallel_bytes = 1;
            ss_collator *c;
            CHECK_OK(ss_collator_create(&c, rs.s, fo, 3, &opt));
            for (int batch = 0; batch < 8; batch++) {
                size_t n =
                    batch % 3 == 2 ? (size_t)(40 + batch) : (size_t)(2 + ss_test_rand(&rng) % 30);
                ss_span rows[64];
                random_spans(&rs, rows, n, &rng);
                ref_out ref[3];
                for (int f = 0; f < 3; f++) {
                    memset(&ref[f], 0, sizeof ref[f]);
                    reference(rs.s, &fo[f], rows, n, &ref[f]);
                }
                ss_collated_batch b;
                if (batch % 2) {
                    cbufs cb;
                    cbufs_alloc(&cb, ref);
                    CHECK_OK(ss_collator_collate_into(&b, c, rows, n, cb.b));
                    cbufs_check_free(&cb, &b, ref, n, fo, rs.fields);
                } else {
                    CHECK_OK(ss_collator_collate(&b, c, rows, n));
                    for (int f = 0; f < 3; f++)
                        compare(&b.fields[f], &ref[f], n, &fo[f], rs.fields[f].sequence);
                }
                for (int f = 0; f < 3; f++) {
                    free(ref[f].data);
                    free(ref[f].mask);
                }
                cases++;
            }
            ss_collator_free(c);
        }
        ss_close(rs.s);
    }
    printf("team by rows: %d batches\n", cases);
}

/* The team's first batch that outgrows the collator's buffers, many times
 * over (a fresh collator each): every thread must take the same path, by
 * rows or by tasks. A thread that decided after the master had grown the
 * buffers went its own way, and the team hung at its next barrier. */
static void test_team_growth(void) {
    uint64_t rng = 99;
    rstore rs;
    make_random_store(&rs, "growth.ss", &rng);
    ss_collate_field fo = SS_COLLATE_FIELD_INIT;
    fo.field = 0;
    fo.dtype = SS_I64;
    fo.layout = SS_LAYOUT_BATCH_MAJOR;
    ss_span rows[48];
    for (size_t i = 0; i < 48; i++) rows[i] = (ss_span){i % rs.count, 0, SS_SPAN_END};
    ref_out ref;
    memset(&ref, 0, sizeof ref);
    reference(rs.s, &fo, rows, 48, &ref);
    for (int rep = 0; rep < 400; rep++) {
        ss_collator_options opt = SS_COLLATOR_OPTIONS_INIT;
        opt.threads = 2 + rep % 2;
        opt.parallel_bytes = 1;
        ss_collator *c;
        CHECK_OK(ss_collator_create(&c, rs.s, &fo, 1, &opt));
        ss_collated_batch b;
        CHECK_OK(ss_collator_collate(&b, c, rows, 2));  /* small: the next plans in the team */
        CHECK_OK(ss_collator_collate(&b, c, rows, 48)); /* grows in the team */
        compare(&b.fields[0], &ref, 48, &fo, 1);
        ss_collator_free(c);
    }
    free(ref.data);
    free(ref.mask);
    ss_close(rs.s);
}

int main(void) {
    test_by_hand();
    test_gain_attr();
    test_errors();
    test_random();
    test_rows_by_hand();
    test_rows();
    test_mask_dtype();
    test_channels_first();
    test_integer_pads();
    test_fused_pairs();
    test_team_rows();
    test_team_growth();
    printf("test_collate: ok\n");
    return 0;
}
