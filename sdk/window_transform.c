/* SPDX-License-Identifier: BSD-2-Clause */
/* window_transform.c - transforms in the window reader (see "Transforms" in
 * seqstore/bptt.h): per-window transforms on a per-lane copy of each window,
 * in parallel over the lanes, before the collation; per-batch transforms on
 * an ss_loader_batch view of the collated batch. */
#include "window.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define ULL(x) ((unsigned long long)(x))

static uint64_t dims_product(uint32_t ndim, const uint64_t *dims) {
    uint64_t n = 1;
    for (uint32_t k = 0; k < ndim; k++) n *= dims[k];
    return n;
}

int ss__window_xf_resolve(ss_window_reader *r, const ss_pipeline *p) {
    r->src_dtype = r->in_dtype;
    uint32_t n = ss_pipeline_count(p);
    if (n == 0) return 0;
    r->xf = calloc(n, sizeof *r->xf);
    r->bxf = calloc(n, sizeof *r->bxf);
    r->bxf_pos = calloc(n, sizeof *r->bxf_pos);
    if (!r->xf || !r->bxf || !r->bxf_pos)
        return ss__fail(SS_ENOMEM, "window reader: out of memory for transforms");
    ss_field f;
    ss_field_info(&f, r->store, r->opt.field);
    ss_dtype dt = f.dtype;
    uint32_t ndim = f.ndim;
    uint64_t dims[SS_MAX_DIMS] = {0};
    memcpy(dims, f.dims, ndim * sizeof *dims);
    r->xrow_max = r->in_row;
    for (uint32_t j = 0; j < n; j++) {
        const ss_transform *t = ss_pipeline_get(p, j);
        if (t->batch) {
            r->bxf[r->nbxf] = t;
            r->bxf_pos[r->nbxf++] = j;
            continue;
        }
        ss__wxf *x = &r->xf[r->nxf++];
        x->t = t;
        x->pos = j;
        x->declares = t->dtype != 0 || t->reshape;
        if (x->declares && t->field != r->opt.field)
            return ss__fail(SS_EINVAL,
                            "window reader: transform '%s' declares a change of field %u; "
                            "only the signal '%s' (field %u) is transformed",
                            t->name, t->field, f.name, r->opt.field);
        if (t->dtype) dt = t->dtype;
        if (t->reshape) {
            if (dims_product(t->ndim, t->dims) != r->C)
                return ss__fail(SS_EINVAL,
                                "window reader: transform '%s' reshapes a sample of %u elements "
                                "into %llu (windows keep their sample size)",
                                t->name, r->C, ULL(dims_product(t->ndim, t->dims)));
            ndim = t->ndim;
            memcpy(dims, t->dims, sizeof dims);
        }
        x->dtype = dt;
        x->ndim = ndim;
        memcpy(x->dims, dims, sizeof x->dims);
        uint64_t rb = (uint64_t)r->C * ss_dtype_size(dt);
        if (rb > r->xrow_max) r->xrow_max = rb;
    }
    r->src_dtype = dt;
    return 0;
}

int ss__window_xf_alloc(ss_window_reader *r) {
    uint64_t B = r->B;
    if (r->nxf) {
        r->xbuf = malloc((size_t)(B * 2 * r->W * r->xrow_max));
        r->xex = calloc(B, sizeof *r->xex);
        r->xef = calloc(B, sizeof *r->xef);
        r->xrc = calloc(B, sizeof *r->xrc);
        r->xfail = calloc(B, sizeof *r->xfail);
        if (!r->xbuf || !r->xex || !r->xef || !r->xrc || !r->xfail)
            return ss__fail(SS_ENOMEM,
                            "window reader: out of memory for the transform buffers (%llu "
                            "lanes x 2 x %llu samples)",
                            ULL(B), ULL(r->W));
    }
    for (uint32_t k = 0; r->nbxf && k < r->nbuf; k++) {
        ss__wslot *sl = &r->slots[k];
        sl->xlen = malloc(B * sizeof *sl->xlen);
        sl->xlab_len = malloc(B * sizeof *sl->xlab_len);
        if (!sl->xlen || !sl->xlab_len)
            return ss__fail(SS_ENOMEM, "window reader: out of memory for the transform buffers");
    }
    return 0;
}

void ss__window_xf_free(ss_window_reader *r) {
    for (uint32_t k = 0; r->slots && k < r->nbuf; k++) {
        free(r->slots[k].xlen);
        free(r->slots[k].xlab_len);
        r->slots[k].xlen = r->slots[k].xlab_len = NULL;
    }
    free(r->xf);
    free(r->bxf);
    free(r->bxf_pos);
    free(r->xbuf);
    free(r->xex);
    free(r->xef);
    free(r->xrc);
    free(r->xfail);
    r->xf = NULL;
    r->bxf = NULL;
    r->bxf_pos = NULL;
    r->xbuf = NULL;
    r->xex = NULL;
    r->xef = NULL;
    r->xrc = NULL;
    r->xfail = NULL;
}

/* ------------------------------------------------------ per-window transforms */

/* Copy row `row`'s window into its lane buffer and run the per-window
 * transforms on it. Runs on an OpenMP thread: no ss__fail here (the message
 * would land in that thread); failures go to xrc/xfail and ex->message. */
static int window_row(ss_window_reader *r, ss__wslot *sl, uint32_t row) {
    if (!sl->src[row]) return 0; /* masked */
    ss_field f;
    ss_field_info(&f, r->store, r->opt.field);
    uint64_t half = r->W * r->xrow_max, len = sl->length[row];
    uint8_t *h0 = r->xbuf + 2 * (uint64_t)row * half, *h1 = h0 + half;
    ss_example *ex = &r->xex[row];
    ss_example_field *e = &r->xef[row];
    memset(e, 0, sizeof *e);
    e->name = f.name;
    e->field = r->opt.field;
    e->sequence = 1;
    e->dtype = r->in_dtype;
    e->ndim = f.ndim;
    memcpy(e->dims, f.dims, f.ndim * sizeof *e->dims);
    e->row_elements = r->C;
    e->row_bytes = r->in_row;
    e->data = h0;
    e->length = e->capacity = len;
    memcpy(h0, sl->src[row], (size_t)(len * r->in_row));
    ex->index = sl->example[row];
    ex->epoch = sl->b.epoch;
    ex->nfields = 1;
    ex->fields = e;
    ex->message[0] = 0;
    uint64_t key =
        ss__rng_hash(ss__rng_hash(r->opt.seed, sl->b.epoch, sl->example[row]), sl->start[row], 0);
    for (uint32_t j = 0; j < r->nxf; j++) {
        const ss__wxf *x = &r->xf[j];
        ss_rng rng;
        ss__rng_seed(&rng, key, SS_TRANSFORM_STREAM + x->pos);
        void *spare = NULL;
        if (x->declares) {
            spare = e->data == h0 ? h1 : h0;
            e->out = spare;
            e->out_dtype = x->dtype;
            e->out_ndim = x->ndim;
            memcpy(e->out_dims, x->dims, sizeof e->out_dims);
        }
        int rc = x->t->example(x->t->user, ex, &rng);
        if (rc == 0 && e->length != len) {
            ss_transform_error(ex,
                               "changed the window length from %llu to %llu (windows are "
                               "fixed: a transform may change values only)",
                               ULL(len), ULL(e->length));
            rc = SS_ECALLBACK;
        }
        if (rc) {
            r->xfail[row] = j;
            return rc < 0 ? rc : SS_ECALLBACK;
        }
        if (x->declares) {
            e->out = e->data;
            e->data = spare;
            e->dtype = x->dtype;
            e->ndim = x->ndim;
            memcpy(e->dims, x->dims, sizeof e->dims);
            e->row_bytes = (uint64_t)r->C * ss_dtype_size(x->dtype);
            e->out = NULL;
        }
    }
    sl->src[row] = e->data;
    return 0;
}

int ss__window_xf_rows(ss_window_reader *r, ss__wslot *sl) {
    if (!r->nxf) return 0;
    int64_t n = (int64_t)sl->b.size;
    /* user callbacks are usually costly: parallel whenever there are two rows;
     * each row depends only on its own window, so any schedule gives the same */
#pragma omp parallel for num_threads(r->nthreads) schedule(dynamic, 1) if (n > 1 && r->nthreads > 1)
    for (int64_t i = 0; i < n; i++) r->xrc[i] = window_row(r, sl, (uint32_t)i);
    for (uint32_t row = 0; row < sl->b.size; row++) {
        if (!r->xrc[row]) continue;
        const ss_example *ex = &r->xex[row];
        return ss__fail(r->xrc[row],
                        "window reader: epoch %llu, batch %llu, sequence %llu, window start "
                        "%llu: transform '%s': %s",
                        ULL(sl->b.epoch), ULL(r->batches_in_epoch), ULL(sl->example[row]),
                        ULL(sl->start[row]), r->xf[r->xfail[row]].t->name,
                        ex->message[0] ? ex->message : "failed without a message");
    }
    return 0;
}

/* ------------------------------------------------------- per-batch transforms */

/* Describe field `field` (dims from the store) as a collated array of `rows`
 * rows and `steps` steps (0: a fixed field). */
static void describe(ss_collated *c, const ss_store *s, uint32_t field, ss_dtype dtype,
                     uint64_t rows, uint64_t steps, int time_major) {
    ss_field f;
    ss_field_info(&f, s, field);
    memset(c, 0, sizeof *c);
    c->name = f.name;
    c->field = field;
    c->dtype = dtype;
    c->layout = steps && time_major ? SS_LAYOUT_TIME_MAJOR : SS_LAYOUT_BATCH_MAJOR;
    c->sequence = steps > 0;
    c->batch = rows;
    c->steps = steps ? steps : 1;
    uint32_t d = 0;
    if (steps) {
        c->shape[d++] = time_major ? steps : rows;
        c->shape[d++] = time_major ? rows : steps;
    } else {
        c->shape[d++] = rows;
    }
    for (uint32_t k = 0; k < f.ndim; k++) c->shape[d++] = f.dims[k];
    c->ndim = d;
    c->data_bytes = rows * c->steps * ss_field_row_bytes(s, field) / ss_dtype_size(f.dtype) *
                    ss_dtype_size(dtype);
}

int ss__window_xf_batch(ss_window_reader *r, ss__wslot *sl) {
    if (!r->nbxf) return 0;
    uint64_t size = sl->b.size, W = r->W;
    int tm = (r->opt.flags & SS_WINDOW_TIME_MAJOR) != 0;
    int per_step = (r->opt.flags & SS_WINDOW_LABEL_PER_STEP) != 0;
    for (uint64_t row = 0; row < size; row++) {
        sl->xlen[row] = sl->mask[row] ? (int64_t)sl->length[row] : 0;
        sl->xlab_len[row] = per_step ? sl->xlen[row] : 1;
    }
    ss_collated *c = sl->xcol;
    describe(&c[0], r->store, r->opt.field, r->out_dtype, size, W, tm);
    c[0].data = sl->b.data;
    c[0].lengths = sl->xlen;
    c[0].mask = sl->step_mask;
    c[0].mask_bytes = size * W;
    uint32_t nf = 1;
    if (r->opt.label_field != SS_FIELD_NONE) {
        uint32_t lf = r->opt.label_field;
        ss_field f;
        ss_field_info(&f, r->store, lf);
        describe(&c[1], r->store, lf, f.dtype, size, per_step ? W : 0, tm);
        c[1].data = sl->label;
        c[1].lengths = sl->xlab_len;
        nf = 2;
    }
    ss_loader_batch *b = &sl->xb;
    b->epoch = sl->b.epoch;
    b->position = r->batches_in_epoch;
    b->rows = size;
    b->indices = sl->example;
    b->data.rows = size;
    b->data.nfields = nf;
    b->data.fields = c;
    for (uint32_t j = 0; j < r->nbxf; j++) {
        const ss_transform *t = r->bxf[j];
        ss_rng rng;
        ss__rng_seed(&rng, ss__rng_hash(r->opt.seed, b->epoch, b->position),
                     SS_BATCH_TRANSFORM_STREAM + r->bxf_pos[j]);
        int rc = t->batch(t->user, b, &rng);
        if (rc)
            return ss__fail(rc < 0 ? rc : SS_ECALLBACK,
                            "window reader: epoch %llu, batch %llu: batch transform '%s' "
                            "failed (%d)",
                            ULL(b->epoch), ULL(b->position), t->name, rc);
    }
    return 0;
}
