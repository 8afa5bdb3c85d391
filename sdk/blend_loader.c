/* SPDX-License-Identifier: BSD-2-Clause */
/* blend_loader.c - batches blended from several stores (see the blended
 * batches section of seqstore/loader.h): an ss_blend picks each row's source
 * and example, one collator collates the rows straight from the sources'
 * maps (ss_collator_collate_rows()). */
#include "internal.h"
#include "options_internal.h"
#include "layout.h" /* ss_le64, ss_put_le64 */
#include "rng.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_MAGIC 0x31444c444c425353ull /* "SSBLDLD1" little-endian */

struct ss_blend_loader {
    ss_blend_loader_options o; /* stores and weights: copied arrays below */
    const ss_store **stores;
    uint32_t k, nf;
    uint32_t (*fidx)[SS_MAX_FIELDS]; /* [source][output field] field index there */
    ss_field finfo[SS_MAX_FIELDS];   /* output field k as stored (in every source) */
    ss_blend *blend;
    uint64_t consumers, me, length, position, fingerprint;
    ss_collator *col;
    ss_collate_input *in; /* batch_size * nf */
    uint32_t *src;
    uint64_t *idx;
    unsigned char *undo; /* the blend's state before a batch (8 x (K + 3) bytes) */
    ss_blend_batch batch;
};

static const char *dtype_name(ss_dtype d) {
    const char *n = ss_dtype_name(d);
    return n ? n : "?";
}

/* Output field k of source 0 in source j: the same name, dtype, sequence
 * flag and shape, else SS_EINVAL naming both. */
static int match_field(ss_blend_loader *l, uint32_t j, uint32_t k, const ss_field *f0) {
    uint32_t fi;
    int rc = ss_field_index(&fi, l->stores[j], f0->name);
    if (rc)
        return ss__fail(SS_EINVAL, "ss_blend_loader_open: source %u (of %u) has no field '%s'", j,
                        l->k, f0->name);
    ss_field f;
    rc = ss_field_info(&f, l->stores[j], fi);
    if (rc) return rc;
    if (f.dtype != f0->dtype)
        return ss__fail(SS_EINVAL,
                        "ss_blend_loader_open: source %u (of %u): field '%s' is %s, source 0's "
                        "is %s",
                        j, l->k, f0->name, dtype_name(f.dtype), dtype_name(f0->dtype));
    if (f.sequence != f0->sequence || f.ndim != f0->ndim ||
        memcmp(f.dims, f0->dims, f.ndim * sizeof f.dims[0]) != 0)
        return ss__fail(SS_EINVAL,
                        "ss_blend_loader_open: source %u (of %u): field '%s' differs from source "
                        "0's in %s",
                        j, l->k, f0->name,
                        f.sequence != f0->sequence ? "being a sequence" : "shape");
    l->fidx[j][k] = fi;
    return 0;
}

static int setup_fields(ss_blend_loader *l, ss_collate_field *cf) {
    const ss_store *s0 = l->stores[0];
    l->nf = l->o.fields ? l->o.nfields : ss_field_count(s0);
    if (l->nf == 0 || l->nf > SS_MAX_FIELDS)
        return ss__fail(SS_EINVAL, "ss_blend_loader_open: %u output fields", l->nf);
    for (uint32_t k = 0; k < l->nf; k++) {
        ss_collate_field def = SS_COLLATE_FIELD_INIT;
        def.field = k;
        cf[k] = def;
        int rc = l->o.fields ? ss__collate_field_read(&cf[k], l->o.fields, k) : 0;
        ss_field f0;
        if (!rc) rc = ss_field_info(&f0, s0, cf[k].field);
        for (uint32_t j = 0; !rc && j < l->k; j++) rc = match_field(l, j, k, &f0);
        if (rc) return ss__context(rc, "ss_blend_loader_open: output field %u", k);
        l->finfo[k] = f0;
        /* rows come from memory: declare the stored dtype and shape */
        cf[k].in_dtype = f0.dtype;
        cf[k].in_reshape = 1;
        cf[k].in_ndim = f0.ndim;
        memcpy(cf[k].in_dims, f0.dims, sizeof cf[k].in_dims);
    }
    return 0;
}

/* Largest stream whose end open() computes: the simulation costs N x K steps. */
#define MAX_STEPS (1ull << 34)

/* The finite stream's length: simulate the blend on one consumer until the
 * stopping rule holds (HF interleave_datasets: checked before each sample).
 * Source j completes its first epoch near sample size_j / w_j (c_j stays
 * within one of w_j n), so a stream too long to simulate is refused first. */
static int stream_length(ss_blend_loader *l, const ss_blend_options *bo) {
    l->length = UINT64_MAX;
    if (l->o.stop == SS_BLEND_INFINITE) return 0;
    double sum = 0, est = l->o.stop == SS_BLEND_FIRST_EXHAUSTED ? INFINITY : 0;
    for (uint32_t j = 0; j < l->k; j++) sum += bo->weights[j];
    for (uint32_t j = 0; j < l->k; j++) {
        double e = (double)bo->sizes[j] * sum / bo->weights[j];
        est = l->o.stop == SS_BLEND_FIRST_EXHAUSTED ? fmin(est, e) : fmax(est, e);
    }
    if (!(est * l->k < (double)MAX_STEPS))
        return ss__fail(SS_EINVAL,
                        "the stream would end after about %.3g samples (%s); finding its end "
                        "costs that many steps times %u sources (limit %.3g): use the infinite "
                        "mode and stop by count",
                        est,
                        l->o.stop == SS_BLEND_FIRST_EXHAUSTED ? "first_exhausted" : "all_exhausted",
                        l->k, (double)MAX_STEPS);
    ss_blend_options one = *bo;
    one.world_size = one.num_workers = 1;
    one.rank = one.worker = 0;
    ss_blend *b;
    int rc = ss_blend_create(&b, &one);
    if (rc) return rc;
    for (;;) {
        uint32_t done = 0;
        for (uint32_t j = 0; j < l->k; j++) done += ss_blend_source_count(b, j) >= bo->sizes[j];
        if (l->o.stop == SS_BLEND_FIRST_EXHAUSTED ? done > 0 : done == l->k) break;
        uint32_t src;
        uint64_t ix;
        ss_blend_next(&src, &ix, b);
    }
    l->length = ss_blend_position(b);
    ss_blend_free(b);
    return 0;
}

static int setup_blend(ss_blend_loader *l) {
    const ss_blend_loader_options *o = &l->o;
    uint64_t *sizes = malloc(l->k * sizeof *sizes);
    if (!sizes) return ss__fail(SS_ENOMEM, "ss_blend_loader_open: out of memory");
    for (uint32_t j = 0; j < l->k; j++) sizes[j] = ss_count(l->stores[j]);
    ss_blend_options bo = SS_BLEND_OPTIONS_INIT;
    bo.nsources = l->k;
    bo.weights = o->weights;
    bo.sizes = sizes;
    bo.seed = o->seed;
    bo.shuffle = o->shuffle;
    bo.world_size = o->world_size;
    bo.rank = o->rank;
    bo.num_workers = o->num_workers;
    bo.worker = o->worker;
    int rc = ss_blend_create(&l->blend, &bo);
    if (!rc) rc = stream_length(l, &bo);
    free(sizes);
    if (rc) return ss__context(rc, "ss_blend_loader_open");
    uint64_t R = o->world_size ? o->world_size : 1, W = o->num_workers ? o->num_workers : 1;
    l->consumers = R * W;
    l->me = o->rank + R * o->worker;
    uint64_t h = ss__rng_hash(o->batch_size, (uint64_t)o->stop, (uint64_t)o->drop_last);
    l->fingerprint = ss__rng_hash(h, l->length, l->nf);
    return 0;
}

int ss_blend_loader_open(ss_blend_loader **out, const ss_blend_loader_options *o) {
    if (!out) return ss__fail(SS_EINVAL, "ss_blend_loader_open: out is NULL");
    *out = NULL;
    if (!o || !o->stores || !o->weights || o->nsources == 0)
        return ss__fail(SS_EINVAL, "ss_blend_loader_open: NULL options, stores or weights, or "
                                   "no source");
    if (o->version != SS_BLEND_LOADER_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "ss_blend_loader_open: options version %u is not %d", o->version,
                        SS_BLEND_LOADER_OPTIONS_VERSION);
    if (o->batch_size == 0) return ss__fail(SS_EINVAL, "ss_blend_loader_open: batch_size is 0");
    if (o->stop != SS_BLEND_INFINITE && o->stop != SS_BLEND_FIRST_EXHAUSTED &&
        o->stop != SS_BLEND_ALL_EXHAUSTED)
        return ss__fail(SS_EINVAL, "ss_blend_loader_open: unknown stop %d", (int)o->stop);
    for (uint32_t j = 0; j < o->nsources; j++)
        if (!o->stores[j]) return ss__fail(SS_EINVAL, "ss_blend_loader_open: store %u is NULL", j);
    ss_blend_loader *l = calloc(1, sizeof *l);
    if (!l) return ss__fail(SS_ENOMEM, "ss_blend_loader_open: out of memory");
    l->o = *o;
    l->k = o->nsources;
    l->stores = malloc(l->k * sizeof *l->stores);
    l->fidx = malloc(l->k * sizeof *l->fidx);
    l->in = malloc(o->batch_size * SS_MAX_FIELDS * sizeof *l->in);
    l->src = malloc(o->batch_size * sizeof *l->src);
    l->idx = malloc(o->batch_size * sizeof *l->idx);
    l->undo = malloc(8 * ((size_t)l->k + 3));
    int rc = 0;
    if (!l->stores || !l->fidx || !l->in || !l->src || !l->idx || !l->undo)
        rc = ss__fail(SS_ENOMEM, "ss_blend_loader_open: out of memory");
    if (!rc) memcpy(l->stores, o->stores, l->k * sizeof *l->stores);
    ss_collate_field cf[SS_MAX_FIELDS];
    if (!rc) rc = setup_fields(l, cf);
    l->o.fields = NULL; /* copied into the collator */
    if (!rc) rc = setup_blend(l);
    ss_collator_options co = SS_COLLATOR_OPTIONS_INIT;
    if (o->collator) co = *o->collator;
    if (co.max_rows == 0) co.max_rows = o->batch_size;
    if (!rc) rc = ss_collator_create(&l->col, l->stores[0], cf, l->nf, &co);
    if (rc) {
        ss_blend_loader_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

void ss_blend_loader_free(ss_blend_loader *l) {
    if (!l) return;
    ss_collator_free(l->col);
    ss_blend_free(l->blend);
    free(l->stores);
    free(l->fidx);
    free(l->in);
    free(l->src);
    free(l->idx);
    free(l->undo);
    free(l);
}

/* Global samples left for this consumer before the stream's end (capped at
 * `want`): its samples are n = me, me + RW, ... below the length. */
static uint64_t rows_left(const ss_blend_loader *l, uint64_t want) {
    if (l->length == UINT64_MAX) return want;
    uint64_t pos = ss_blend_position(l->blend), RW = l->consumers;
    uint64_t first = pos + (l->me + RW - pos % RW) % RW; /* its next global sample */
    if (first >= l->length) return 0;
    uint64_t n = (l->length - 1 - first) / RW + 1;
    return n < want ? n : want;
}

/* Row r's fields as collator inputs, straight from its source's map. */
static int gather_row(ss_blend_loader *l, uint64_t r) {
    uint32_t j = l->src[r];
    for (uint32_t k = 0; k < l->nf; k++) {
        ss_view v;
        int rc = ss_get(&v, l->stores[j], l->fidx[j][k], l->idx[r]);
        if (rc)
            return ss__context(rc, "blend loader: batch %" PRIu64 ", source %u, example %" PRIu64,
                               l->position, j, l->idx[r]);
        ss_collate_input *in = &l->in[r * l->nf + k];
        const ss_field *f = &l->finfo[k];
        in->data = v.data;
        in->length = v.length;
        in->dtype = f->dtype;
        in->ndim = f->ndim;
        memcpy(in->dims, f->dims, sizeof in->dims);
    }
    return 0;
}

int ss_blend_loader_next(const ss_blend_batch **out, ss_blend_loader *l) {
    if (out) *out = NULL;
    if (!out || !l) return ss__fail(SS_EINVAL, "ss_blend_loader_next: NULL argument");
    uint64_t n = rows_left(l, l->o.batch_size);
    if (n == 0 || (n < l->o.batch_size && l->o.drop_last))
        return ss__fail(SS_ITEROVER, "ss_blend_loader_next: the stream is over");
    size_t len = 0;
    int rc = ss_blend_state_save(l->undo, 8 * ((size_t)l->k + 3), &len, l->blend);
    for (uint64_t r = 0; !rc && r < n; r++) rc = ss_blend_next(&l->src[r], &l->idx[r], l->blend);
    for (uint64_t r = 0; !rc && r < n; r++) rc = gather_row(l, r);
    if (!rc) rc = ss_collator_collate_rows(&l->batch.data, l->col, l->in, (size_t)n, NULL);
    if (rc) { /* the position stays: the blend goes back to before the batch */
        ss_blend_state_load(l->blend, l->undo, len);
        return ss__context(rc, "ss_blend_loader_next");
    }
    l->batch.position = l->position++;
    l->batch.rows = n;
    l->batch.sources = l->src;
    l->batch.indices = l->idx;
    *out = &l->batch;
    return 0;
}

uint64_t ss_blend_loader_count(const ss_blend_loader *l) {
    return l ? l->length : 0;
}

uint64_t ss_blend_loader_source_count(const ss_blend_loader *l, uint32_t source) {
    return l ? ss_blend_source_count(l->blend, source) : 0;
}

uint64_t ss_blend_loader_source_epoch(const ss_blend_loader *l, uint32_t source) {
    if (!l || source >= l->k) return 0;
    return ss_blend_source_count(l->blend, source) / ss_count(l->stores[source]);
}

size_t ss_blend_loader_state_size(const ss_blend_loader *l) {
    return l ? 8 * ((size_t)l->k + 6) : 0;
}

int ss_blend_loader_state_save(void *buf, size_t cap, size_t *len, const ss_blend_loader *l) {
    if (!l || !buf) return ss__fail(SS_EINVAL, "ss_blend_loader_state_save: NULL argument");
    size_t need = ss_blend_loader_state_size(l), bl;
    if (len) *len = need;
    if (cap < need)
        return ss__fail(SS_EBUFS, "ss_blend_loader_state_save: %zu bytes, %zu needed", cap, need);
    unsigned char *p = buf;
    ss_put_le64(p, STATE_MAGIC);
    ss_put_le64(p + 8, l->position);
    ss_put_le64(p + 16, l->fingerprint);
    return ss_blend_state_save(p + 24, cap - 24, &bl, l->blend);
}

int ss_blend_loader_state_load(ss_blend_loader *l, const void *buf, size_t len) {
    if (!l || !buf) return ss__fail(SS_EINVAL, "ss_blend_loader_state_load: NULL argument");
    const unsigned char *p = buf;
    if (len != ss_blend_loader_state_size(l) || ss_le64(p) != STATE_MAGIC)
        return ss__fail(SS_EINVAL,
                        "ss_blend_loader_state_load: not a state of this loader "
                        "(%zu bytes)",
                        len);
    if (ss_le64(p + 16) != l->fingerprint)
        return ss__fail(SS_EINVAL, "ss_blend_loader_state_load: the state belongs to a loader "
                                   "with other options");
    int rc = ss_blend_state_load(l->blend, p + 24, len - 24);
    if (rc) return ss__context(rc, "ss_blend_loader_state_load");
    l->position = ss_le64(p + 8);
    return 0;
}
