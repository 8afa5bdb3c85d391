/* SPDX-License-Identifier: BSD-2-Clause */
/* collate.c - padded and packed collation with dtype conversion, OpenMP-
 * parallel over pieces of rows.
 *
 * A collation runs in two phases. Planning resolves every row (one ss_get
 * per row and field: a pointer into the map and a length), then computes T,
 * lengths, offsets and the sort permutation. Execution writes the output in
 * pieces of rows of at most SS_TASK_BYTES: in order on the calling thread,
 * or, for a batch of at least parallel_bytes, as tasks split between the
 * threads of a team by output bytes. A collator whose last batch ran in a
 * team plans the next one in the team too (each thread resolves a share of
 * the rows). Each output byte belongs to exactly one piece and is computed
 * the same way whatever thread runs it, so the result is bit-identical for
 * any thread count. */
#include "cast.h"
#include "internal.h"
#include "options_internal.h"

#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SS_TASK_BYTES ((uint64_t)64 * 1024)      /* output bytes per task, at most */
#define SS_PARALLEL_BYTES ((uint64_t)192 * 1024) /* default: below this a batch runs serially */
#define SS_PREFETCH_BYTES ((uint64_t)256)        /* of each row, while planning */

typedef struct cfield {
    ss_collate_field o;
    char name[SS_MAX_NAME + 1];
    uint32_t index;
    int sequence;
    int mem_only;  /* declared in_dtype/shape other than the store's: no spans */
    uint32_t ndim; /* input (declared or stored) trailing shape */
    uint64_t dims[SS_MAX_DIMS];
    ss_dtype src_dtype, dst_dtype;
    uint64_t row_el; /* elements per row */
    uint64_t in_rb;  /* input bytes per row */
    uint64_t out_rb; /* output bytes per row */
    int affine;
    ss__affine aff;
    ss__conv_fn cv;                        /* without an affine map: the conversion kernel */
    ss__pad_fn cvp;                        /* and the fused pad-convert-pad kernel, or NULL */
    _Alignas(8) unsigned char pad_elem[8]; /* one element of the output dtype */
    ss_dtype mask_dtype;                   /* of the mask elements; 0: no mask */
    _Alignas(8) unsigned char mask_on[8], mask_off[8]; /* written as int64_t, double... */
    /* library-owned outputs */
    void *data, *mask;
    uint64_t data_cap, mask_cap;
    int64_t *lengths, *offsets, *perm;
    /* per-row scratch (rows_cap entries), in output row order */
    const unsigned char **src;
    uint64_t *len;  /* valid steps after truncation */
    uint64_t *pos0; /* padded: first output step holding data */
    uint64_t *tmp;  /* sort scratch */
    /* this batch */
    uint64_t steps; /* T, sum L or 1 */
    ss_collated *out;
} cfield;

typedef struct task {
    uint32_t field;
    uint64_t row;
    uint64_t s0, s1; /* output steps [s0, s1) of the row */
} task;

struct ss_collator {
    const ss_store *s;
    uint32_t nf;
    cfield *f;
    ss_collated *outs;
    int threads;
    uint64_t parallel_bytes;
    uint64_t rows_cap;
    task *tasks;
    uint64_t tasks_cap;
    unsigned char *scratch; /* per thread scratch_bytes, time-major staging */
    uint64_t scratch_bytes;
    uint64_t *longest; /* (threads + 1) x nf: the longest row per field, per thread */
    uint64_t *bounds;  /* threads + 1: each thread's run of tasks */
    int team_next;     /* the last batch ran in parallel: plan the next in the team */
};

/* ---------------------------------------------------------------- helpers */

static int grow(void **p, uint64_t *cap, uint64_t need, const char *what, const char *field) {
    if (need == 0) need = 1;
    if (*cap >= need) return 0;
    void *q = malloc((size_t)need);
    if (!q)
        return ss__fail(SS_ENOMEM, "collate field '%s': cannot allocate %llu bytes for %s", field,
                        (unsigned long long)need, what);
    free(*p);
    *p = q;
    *cap = need;
    return 0;
}

/* Free the field's per-row arrays. */
static void row_arrays_free(cfield *f) {
    free(f->lengths);
    free(f->offsets);
    free(f->perm);
    free(f->src);
    free(f->len);
    free(f->pos0);
    free(f->tmp);
}

static void cfield_free(cfield *f) {
    ss__affine_free(&f->aff);
    free(f->data);
    free(f->mask);
    row_arrays_free(f);
}

void ss_collator_free(ss_collator *c) {
    if (!c) return;
    for (uint32_t k = 0; c->f && k < c->nf; k++) cfield_free(&c->f[k]);
    free(c->f);
    free(c->outs);
    free(c->tasks);
    free(c->scratch);
    free(c->longest);
    free(c->bounds);
    free(c);
}

static int row_arrays(ss_collator *c, uint64_t rows) {
    if (rows <= c->rows_cap) return 0;
    for (uint32_t k = 0; k < c->nf; k++) {
        cfield *f = &c->f[k];
        row_arrays_free(f);
        f->lengths = malloc(rows * sizeof *f->lengths);
        f->offsets = malloc((rows + 1) * sizeof *f->offsets);
        f->perm = malloc(rows * sizeof *f->perm);
        f->src = malloc(rows * sizeof *f->src);
        f->len = malloc(rows * sizeof *f->len);
        f->pos0 = malloc(rows * sizeof *f->pos0);
        f->tmp = malloc(rows * sizeof *f->tmp);
        if (!f->lengths || !f->offsets || !f->perm || !f->src || !f->len || !f->pos0 || !f->tmp) {
            c->rows_cap = 0; /* force a retry next time */
            return ss__fail(SS_ENOMEM, "collate: cannot allocate row arrays for %llu rows",
                            (unsigned long long)rows);
        }
    }
    c->rows_cap = rows;
    return 0;
}

/* Scale or offset from a store attribute of row_el f64/f32 values. */
static int attr_values(const ss_store *s, const cfield *f, const char *attr, double *out) {
    ss_attr a;
    int rc = ss_attr_get(&a, s, attr);
    if (rc)
        return ss__context(rc, "collate field '%s': scale/offset attribute '%s'", f->name, attr);
    size_t es = a.type == SS_F64 ? 8 : a.type == SS_F32 ? 4 : 0;
    if (es == 0 || a.size != f->row_el * es)
        return ss__fail(SS_EINVAL,
                        "collate field '%s': attribute '%s' must hold %llu f64 or f32 values "
                        "(one per channel), it has type %u and %llu bytes",
                        f->name, attr, (unsigned long long)f->row_el, a.type,
                        (unsigned long long)a.size);
    for (uint64_t k = 0; k < f->row_el; k++) {
        if (es == 8) {
            memcpy(&out[k], (const unsigned char *)a.data + 8 * k, 8);
        } else {
            float v;
            memcpy(&v, (const unsigned char *)a.data + 4 * k, 4);
            out[k] = v;
        }
    }
    return 0;
}

/* The input dtype and trailing shape: declared for rows in memory, else stored. */
static int input_setup(cfield *f, const ss_collate_field *o, const ss_field *info) {
    f->src_dtype = o->in_dtype ? o->in_dtype : info->dtype;
    if (!ss__dtype_valid(f->src_dtype))
        return ss__fail(SS_EINVAL, "collate field '%s': unknown in_dtype %d", f->name,
                        (int)o->in_dtype);
    f->ndim = info->ndim;
    memcpy(f->dims, info->dims, sizeof f->dims);
    if (o->in_reshape) {
        if (o->in_ndim > SS_MAX_DIMS)
            return ss__fail(SS_EINVAL, "collate field '%s': in_ndim %u > %d", f->name, o->in_ndim,
                            SS_MAX_DIMS);
        for (uint32_t k = 0; k < o->in_ndim; k++)
            if (o->in_dims[k] == 0)
                return ss__fail(SS_EINVAL, "collate field '%s': in_dims[%u] is 0", f->name, k);
        f->ndim = o->in_ndim;
        memset(f->dims, 0, sizeof f->dims);
        memcpy(f->dims, o->in_dims, f->ndim * sizeof *f->dims);
    }
    f->mem_only = f->src_dtype != info->dtype || f->ndim != info->ndim;
    for (uint32_t k = 0; k < f->ndim; k++) f->mem_only |= f->dims[k] != info->dims[k];
    return 0;
}

static uint64_t mask_elem(const cfield *f) {
    return f->mask_dtype ? ss_dtype_size(f->mask_dtype) : 0;
}

int ss__collate_field_read(ss_collate_field *dst, const ss_collate_field *fields, uint32_t k) {
    unsigned v = fields[0].version;
    if (v < 1 || v > SS_COLLATE_FIELD_VERSION)
        return ss__fail(SS_EINVAL,
                        "collate field: version %u is not 1..%u (use SS_COLLATE_FIELD_INIT)", v,
                        SS_COLLATE_FIELD_VERSION);
    /* An older struct ends where its version ended, rounded up to the
     * struct's alignment as its compiler did: that is its size in the array
     * (version 1 at in_dims, version 2 at mask_dtype). */
    size_t align = _Alignof(ss_collate_field);
    size_t end = v == 1   ? offsetof(ss_collate_field, mask_dtype)
                 : v == 2 ? offsetof(ss_collate_field, pad_kind)
                          : sizeof *fields;
    size_t size = (end + align - 1) / align * align;
    const ss_collate_field *src = (const void *)((const char *)fields + (size_t)k * size);
    if (src->version != v)
        return ss__fail(SS_EINVAL, "collate field %u: version %u, but field 0 has version %u", k,
                        src->version, v);
    ss_collate_field init = SS_COLLATE_FIELD_INIT;
    *dst = init;
    memcpy(dst, src, size);
    dst->version = SS_COLLATE_FIELD_VERSION;
    return 0;
}

static int field_setup(ss_collator *c, cfield *f, const ss_collate_field *o) {
    const ss_store *s = c->s;
    ss_field info;
    int rc = ss_field_info(&info, s, o->field);
    if (rc) return ss__context(rc, "collate");
    f->o = *o;
    snprintf(f->name, sizeof f->name, "%s", info.name);
    f->index = o->field;
    f->sequence = info.sequence;
    rc = input_setup(f, o, &info);
    if (rc) return rc;
    f->dst_dtype = o->dtype ? o->dtype : f->src_dtype;
    if (!ss__dtype_valid(f->dst_dtype))
        return ss__fail(SS_EINVAL, "collate field '%s': unknown output dtype %d", f->name,
                        (int)o->dtype);
    f->row_el = 1;
    for (uint32_t k = 0; k < f->ndim; k++) f->row_el *= f->dims[k];
    f->in_rb = f->row_el * ss_dtype_size(f->src_dtype);
    f->out_rb = f->row_el * ss_dtype_size(f->dst_dtype);
    if (f->sequence) {
        if ((unsigned)o->layout > SS_LAYOUT_CHANNELS_FIRST)
            return ss__fail(SS_EINVAL, "collate field '%s': unknown layout %d", f->name,
                            (int)o->layout);
        if ((unsigned)o->mask > SS_MASK_DTYPE)
            return ss__fail(SS_EINVAL, "collate field '%s': unknown mask type %d", f->name,
                            (int)o->mask);
        if (f->o.mask_dtype && (o->mask != SS_MASK_DTYPE || !ss__dtype_valid(f->o.mask_dtype)))
            return ss__fail(SS_EINVAL,
                            "collate field '%s': mask_dtype %d needs mask SS_MASK_DTYPE and a "
                            "known dtype",
                            f->name, (int)f->o.mask_dtype);
        f->mask_dtype = o->mask == SS_MASK_U8    ? SS_U8
                        : o->mask == SS_MASK_F32 ? SS_F32
                        : o->mask == SS_MASK_DTYPE
                            ? (f->o.mask_dtype ? f->o.mask_dtype : f->dst_dtype)
                            : (ss_dtype)0;
        if (f->mask_dtype) {
            ss__scalar_to(f->mask_on, f->mask_dtype, 1.0);
            ss__scalar_to(f->mask_off, f->mask_dtype, 0.0);
        }
        if (o->fixed && o->fixed_length == 0)
            return ss__fail(SS_EINVAL, "collate field '%s': fixed_length must be >= 1", f->name);
        if (o->layout == SS_LAYOUT_PACKED && o->mask != SS_MASK_NONE)
            return ss__fail(SS_EINVAL,
                            "collate field '%s': a mask needs a padded layout, not packed "
                            "(packed rows carry offsets instead)",
                            f->name);
        if (o->layout == SS_LAYOUT_PACKED && o->pad_to_multiple > 1)
            return ss__fail(SS_EINVAL, "collate field '%s': pad_to_multiple needs a padded layout",
                            f->name);
        if (o->layout != SS_LAYOUT_PACKED && o->sort_by_length)
            return ss__fail(SS_EINVAL, "collate field '%s': sort_by_length needs the packed layout",
                            f->name);
    }
    if (o->scale && o->scale_attr)
        return ss__fail(SS_EINVAL, "collate field '%s': give scale or scale_attr, not both",
                        f->name);
    if (o->offset && o->offset_attr)
        return ss__fail(SS_EINVAL, "collate field '%s': give offset or offset_attr, not both",
                        f->name);
    f->affine = o->scale || o->offset || o->scale_attr || o->offset_attr;
    if (f->affine) {
        double *sc = malloc(f->row_el * sizeof(double));
        double *of = malloc(f->row_el * sizeof(double));
        rc = sc && of ? 0 : ss__fail(SS_ENOMEM, "collate field '%s': out of memory", f->name);
        for (uint64_t k = 0; rc == 0 && k < f->row_el; k++) {
            sc[k] = o->scale ? o->scale[k] : 1.0;
            of[k] = o->offset ? o->offset[k] : 0.0;
        }
        if (rc == 0 && o->scale_attr) rc = attr_values(s, f, o->scale_attr, sc);
        if (rc == 0 && o->offset_attr) rc = attr_values(s, f, o->offset_attr, of);
        if (rc == 0) rc = ss__affine_init(&f->aff, f->row_el, sc, of);
        free(sc);
        free(of);
        if (rc) return rc;
    }
    if (!f->affine) { /* resolved once: rows are short, calls many */
        f->cv = ss__cast_kernel(f->dst_dtype, f->src_dtype);
        f->cvp = ss__cast_pad_kernel(f->dst_dtype, f->src_dtype);
    }
    f->o.scale = f->o.offset = NULL; /* not kept: the affine map holds copies */
    f->o.scale_attr = f->o.offset_attr = NULL;
    if (ss__scalar_exact(f->pad_elem, f->dst_dtype, o->pad_kind, o->pad_value, o->pad_i64,
                         o->pad_u64)) {
        char v[64];
        ss__scalar_print(v, sizeof v, o->pad_kind, o->pad_value, o->pad_i64, o->pad_u64);
        return ss__fail(SS_EINVAL, "collate field '%s': pad %s has no exact %s value (%s)", f->name,
                        v, ss_dtype_name(f->dst_dtype),
                        (unsigned)o->pad_kind > SS_VALUE_U64 ? "unknown pad_kind"
                                                             : "give a pad the output dtype holds");
    }
    return 0;
}

int ss_collator_create(ss_collator **out, const ss_store *s, const ss_collate_field *fields,
                       uint32_t nfields, const ss_collator_options *options) {
    if (!out) return ss__fail(SS_EINVAL, "ss_collator_create: out is NULL");
    *out = NULL;
    if (!s) return ss__fail(SS_EINVAL, "ss_collator_create: store is NULL");
    ss_collator_options opt = SS_COLLATOR_OPTIONS_INIT;
    if (options) {
        if (options->version != SS_COLLATOR_OPTIONS_VERSION)
            return ss__fail(SS_EINVAL, "ss_collator_create: options version %u is not %u",
                            options->version, SS_COLLATOR_OPTIONS_VERSION);
        opt = *options;
    }
    if (opt.threads < 0)
        return ss__fail(SS_EINVAL, "ss_collator_create: threads = %d (use 0 for the default)",
                        opt.threads);
    if (!fields && nfields)
        return ss__fail(SS_EINVAL, "ss_collator_create: fields is NULL but nfields = %u", nfields);
    ss_collator *c = calloc(1, sizeof *c);
    if (!c) return ss__fail(SS_ENOMEM, "ss_collator_create: out of memory");
    c->s = s;
    c->threads = opt.threads ? opt.threads : 1; /* 0 = one thread (seqstore.h) */
    c->parallel_bytes = opt.parallel_bytes ? opt.parallel_bytes : SS_PARALLEL_BYTES;
    c->nf = fields ? nfields : ss_field_count(s);
    int rc = 0;
    if (c->nf == 0) rc = ss__fail(SS_EINVAL, "ss_collator_create: no fields to collate");
    if (rc == 0) {
        c->f = calloc(c->nf, sizeof *c->f);
        c->outs = calloc(c->nf, sizeof *c->outs);
        if (!c->f || !c->outs) rc = ss__fail(SS_ENOMEM, "ss_collator_create: out of memory");
    }
    for (uint32_t k = 0; rc == 0 && k < c->nf; k++) {
        ss_collate_field def = SS_COLLATE_FIELD_INIT;
        def.field = k;
        if (fields) rc = ss__collate_field_read(&def, fields, k);
        if (rc == 0) rc = field_setup(c, &c->f[k], &def);
        c->f[k].out = &c->outs[k];
    }
    /* Time-major staging: one task's output per thread (a task is one row when
     * rows are larger than SS_TASK_BYTES). */
    c->scratch_bytes = SS_TASK_BYTES;
    for (uint32_t k = 0; rc == 0 && k < c->nf; k++)
        if (c->f[k].out_rb > c->scratch_bytes) c->scratch_bytes = c->f[k].out_rb;
    if (rc == 0 && !(c->scratch = malloc((size_t)(c->scratch_bytes * (uint64_t)c->threads))))
        rc = ss__fail(SS_ENOMEM, "ss_collator_create: out of memory");
    if (rc == 0 && !(c->longest = calloc(((size_t)c->threads + 1) * c->nf, sizeof *c->longest)))
        rc = ss__fail(SS_ENOMEM, "ss_collator_create: out of memory");
    if (rc == 0 && !(c->bounds = calloc((size_t)c->threads + 1, sizeof *c->bounds)))
        rc = ss__fail(SS_ENOMEM, "ss_collator_create: out of memory");
    /* Preallocate for max_rows x max_steps. */
    if (rc == 0 && opt.max_rows) rc = row_arrays(c, opt.max_rows);
    for (uint32_t k = 0; rc == 0 && k < c->nf && opt.max_rows; k++) {
        cfield *f = &c->f[k];
        uint64_t steps = f->sequence ? (opt.max_steps ? opt.max_steps : 1) : 1;
        rc = grow(&f->data, &f->data_cap, opt.max_rows * steps * f->out_rb, "data", f->name);
        if (rc == 0 && f->o.mask != SS_MASK_NONE && f->sequence)
            rc = grow(&f->mask, &f->mask_cap, opt.max_rows * steps * mask_elem(f), "mask", f->name);
    }
    if (rc) {
        ss_collator_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* ---------------------------------------------------------------- planning */

/* Resolve one row of one field: a pointer to its first step and its length. */
static int resolve(const ss_collator *c, const cfield *f, const ss_span *sp, size_t r,
                   const unsigned char **src, uint64_t *len) {
    ss_view v;
    int rc = ss_get(&v, c->s, f->index, sp->example);
    if (rc)
        return ss__context(rc, "collate field '%s', row %zu (example %llu)", f->name, r,
                           (unsigned long long)sp->example);
    if (!f->sequence) {
        *src = v.data;
        *len = 1;
        return 0;
    }
    uint64_t t1 = sp->t1 == SS_SPAN_END ? v.length : sp->t1;
    if (sp->t0 > t1 || t1 > v.length)
        return ss__fail(SS_ERANGE,
                        "collate field '%s', row %zu (example %llu): span [%llu, %llu) is outside "
                        "its %llu steps",
                        f->name, r, (unsigned long long)sp->example, (unsigned long long)sp->t0,
                        (unsigned long long)sp->t1, (unsigned long long)v.length);
    *src = (const unsigned char *)v.data + sp->t0 * v.row_bytes;
    *len = t1 - sp->t0;
    return 0;
}

/* Resolve one row of one field given in memory, checking it against the
 * field's input dtype and shape. */
static int resolve_input(const cfield *f, const ss_collate_input *in, size_t r,
                         const unsigned char **src, uint64_t *len) {
    int same = in->dtype == f->src_dtype && in->ndim == f->ndim;
    for (uint32_t k = 0; same && k < f->ndim; k++) same = in->dims[k] == f->dims[k];
    if (!same)
        return ss__fail(SS_EINVAL,
                        "collate field '%s', row %zu: given as dtype %d with %u dims, the field's "
                        "input is dtype %d with %u dims (or other dims)",
                        f->name, r, (int)in->dtype, in->ndim, (int)f->src_dtype, f->ndim);
    if (!f->sequence && in->length != 1)
        return ss__fail(SS_EINVAL,
                        "collate field '%s', row %zu: a fixed field has length 1, not %llu",
                        f->name, r, (unsigned long long)in->length);
    if (!in->data && in->length)
        return ss__fail(SS_EINVAL, "collate field '%s', row %zu: data is NULL", f->name, r);
    *src = in->data;
    *len = in->length;
    return 0;
}

static int spans_allowed(const cfield *f) {
    if (!f->mem_only) return 0;
    return ss__fail(SS_EINVAL,
                    "collate field '%s': declared with an in-memory dtype or shape other than "
                    "the store's; collate its rows with ss_collator_collate_rows()",
                    f->name);
}

/* Steps kept from a row of `len` steps, and how many are skipped at its start. */
static uint64_t keep(const cfield *f, uint64_t len, uint64_t *skip) {
    *skip = 0;
    if (!f->o.fixed || len <= f->o.fixed_length) return len;
    if (f->o.truncate_left) *skip = len - f->o.fixed_length;
    return f->o.fixed_length;
}

static uint64_t padded_steps(const cfield *f, uint64_t longest) {
    if (f->o.fixed) return f->o.fixed_length;
    uint64_t m = f->o.pad_to_multiple;
    if (m > 1 && longest % m) longest += m - longest % m;
    return longest;
}

int ss_collator_sizes(ss_collate_sizes *out, const ss_collator *c, const ss_span *rows,
                      size_t n_rows) {
    if (!c || !out || (!rows && n_rows))
        return ss__fail(SS_EINVAL, "ss_collator_sizes: NULL argument");
    for (uint32_t k = 0; k < c->nf; k++) {
        const cfield *f = &c->f[k];
        uint64_t longest = 0, total = 0;
        int rc = spans_allowed(f);
        if (rc) return rc;
        for (size_t r = 0; r < n_rows; r++) {
            const unsigned char *p;
            uint64_t len = 0, skip;
            rc = resolve(c, f, &rows[r], r, &p, &len);
            if (rc) return rc;
            len = keep(f, len, &skip);
            if (len > longest) longest = len;
            total += len;
        }
        uint64_t steps = !f->sequence                      ? 1
                         : f->o.layout == SS_LAYOUT_PACKED ? total
                                                           : padded_steps(f, longest);
        out[k].steps = steps;
        if (f->sequence && f->o.layout == SS_LAYOUT_PACKED) {
            out[k].data_bytes = total * f->out_rb;
            out[k].mask_bytes = 0;
        } else {
            out[k].data_bytes = (uint64_t)n_rows * steps * f->out_rb;
            out[k].mask_bytes = f->sequence ? (uint64_t)n_rows * steps * mask_elem(f) : 0;
        }
    }
    return 0;
}

/* Stable merge sort of row indices by descending len. */
static void sort_desc(uint64_t *idx, uint64_t *tmp, const uint64_t *len, uint64_t n) {
    for (uint64_t w = 1; w < n; w *= 2) {
        for (uint64_t lo = 0; lo < n; lo += 2 * w) {
            uint64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            uint64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = len[idx[j]] > len[idx[i]] ? idx[j++] : idx[i++];
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, n * sizeof *idx);
    }
}

static int grow_tasks(ss_collator *c, uint64_t need) {
    if (need <= c->tasks_cap) return 0;
    uint64_t cap = c->tasks_cap ? c->tasks_cap : 64;
    while (cap < need) cap *= 2;
    task *t = realloc(c->tasks, cap * sizeof *t);
    if (!t)
        return ss__fail(SS_ENOMEM, "collate: cannot allocate %llu tasks", (unsigned long long)cap);
    c->tasks = t;
    c->tasks_cap = cap;
    return 0;
}

/* Start loading the first SS_PREFETCH_BYTES of a row from the map while the
 * other rows are planned: rows are short, scattered runs of memory that the
 * hardware prefetcher does not catch in time. A few lines are enough to
 * start it; 2 KiB (32 prefetches a row) stalled planning on the miss buffers
 * (token batches 8.5 -> 7.9 us with 256 B, 1 thread, tokens of
 * bench_collate's store). */
static void prefetch_row(const unsigned char *p, uint64_t bytes) {
    if (bytes > SS_PREFETCH_BYTES) bytes = SS_PREFETCH_BYTES;
#if defined(__GNUC__)
    for (uint64_t k = 0; k < bytes; k += 64) __builtin_prefetch(p + k);
#else
    (void)p;
#endif
}

/* Resolve rows [r0, r1) of field k (spans of the store, or entries in
 * memory): src and len; the longest kept length in *longest. Any thread. */
static int resolve_rows(const ss_collator *c, uint32_t k, const ss_span *spans,
                        const ss_collate_input *inputs, size_t r0, size_t r1, uint64_t *longest) {
    cfield *f = &c->f[k];
    uint64_t most = 0;
    int rc = spans ? spans_allowed(f) : 0;
    if (rc) return rc;
    for (size_t r = r0; r < r1; r++) {
        uint64_t len = 0, skip;
        rc = spans ? resolve(c, f, &spans[r], r, &f->src[r], &len)
                   : resolve_input(f, &inputs[r * c->nf + k], r, &f->src[r], &len);
        if (rc) return rc;
        len = keep(f, len, &skip);
        if (skip) f->src[r] += skip * f->in_rb;
        f->len[r] = len;
        prefetch_row(f->src[r], len * f->in_rb);
        if (len > most) most = len;
    }
    *longest = most;
    return 0;
}

/* With every row of field k resolved: lengths, offsets, perm, steps. */
static void finish_field(ss_collator *c, uint32_t k, size_t n, uint64_t longest) {
    cfield *f = &c->f[k];
    int packed = f->sequence && f->o.layout == SS_LAYOUT_PACKED;
    if (!f->sequence) {
        f->steps = 1;
        for (size_t r = 0; r < n; r++) f->lengths[r] = 1;
        return;
    }
    if (!packed) {
        f->steps = padded_steps(f, longest);
        for (size_t r = 0; r < n; r++) {
            f->lengths[r] = (int64_t)f->len[r];
            f->pos0[r] = f->o.pad_left ? f->steps - f->len[r] : 0;
        }
        return;
    }
    /* Packed: order (identity or by descending length), then offsets. */
    uint64_t *order = f->pos0; /* pos0 is unused in the packed layout */
    for (size_t r = 0; r < n; r++) order[r] = r;
    if (f->o.sort_by_length) {
        sort_desc(order, f->tmp, f->len, n);
        /* Reorder src/len into packed order through tmp. */
        for (size_t i = 0; i < n; i++) f->tmp[i] = f->len[order[i]];
        memcpy(f->len, f->tmp, n * sizeof *f->len);
        for (size_t i = 0; i < n; i++) f->perm[i] = (int64_t)order[i];
        /* src: permute in place following cycles (no scratch of pointers). */
        for (size_t i = 0; i < n; i++) f->tmp[i] = 0;
        for (size_t i = 0; i < n; i++) {
            if (f->tmp[i]) continue;
            const unsigned char *first = f->src[i];
            size_t j = i;
            while (1) {
                f->tmp[j] = 1;
                size_t from = (size_t)order[j];
                if (from == i) {
                    f->src[j] = first;
                    break;
                }
                f->src[j] = f->src[from];
                j = from;
            }
        }
    }
    int64_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        f->offsets[i] = acc;
        f->lengths[i] = (int64_t)f->len[i];
        acc += (int64_t)f->len[i];
    }
    f->offsets[n] = acc;
    f->steps = (uint64_t)acc;
}

/* ---------------------------------------------------------------- execution */

static void put_mask(const cfield *f, void *mask, uint64_t at, int on) {
    size_t es = ss_dtype_size(f->mask_dtype);
    if (es == 1)
        ((uint8_t *)mask)[at] = on ? f->mask_on[0] : f->mask_off[0];
    else
        memcpy((unsigned char *)mask + es * at, on ? f->mask_on : f->mask_off, es);
}

/* The mask of row b's steps [s0, s1) where the row's mask is contiguous
 * ([B][T]): off over [s0, a), on over [a, z), off over [z, s1). */
static void mask_row(const cfield *f, void *mask, uint64_t T, uint64_t b, uint64_t s0, uint64_t a,
                     uint64_t z, uint64_t s1) {
    size_t es = ss_dtype_size(f->mask_dtype);
    unsigned char *m = (unsigned char *)mask + (b * T + s0) * es;
    ss__fill(m, f->mask_off, es, a - s0);
    ss__fill(m + (a - s0) * es, f->mask_on, es, z - a);
    ss__fill(m + (z - s0) * es, f->mask_off, es, s1 - z);
}

/* Scatter n rows of rb bytes from a dense staging buffer to a stride. */
static void scatter(unsigned char *dst, uint64_t stride, const unsigned char *src, uint64_t rb,
                    uint64_t n) {
    switch (rb) {
    case 1:
        for (uint64_t i = 0; i < n; i++) dst[i * stride] = src[i];
        return;
    case 2:
        for (uint64_t i = 0; i < n; i++) memcpy(dst + i * stride, src + 2 * i, 2);
        return;
    case 4:
        for (uint64_t i = 0; i < n; i++) memcpy(dst + i * stride, src + 4 * i, 4);
        return;
    case 8:
        for (uint64_t i = 0; i < n; i++) memcpy(dst + i * stride, src + 8 * i, 8);
        return;
    default:
        for (uint64_t i = 0; i < n; i++) memcpy(dst + i * stride, src + rb * i, (size_t)rb);
    }
}

static void convert(const cfield *f, void *dst, const void *src, uint64_t n_rows) {
    if (f->cv) {
        if (n_rows) f->cv(dst, src, (size_t)(n_rows * f->row_el));
        return;
    }
    ss__cast(dst, f->dst_dtype, src, f->src_dtype, n_rows, f->row_el, f->affine ? &f->aff : NULL);
}

/* Steps per block of the transpose below: a block of the source (steps x C
 * elements) stays in L1 while each channel's BLOCK steps are written. */
#define SS_TRANSPOSE_STEPS 32

#define SS_TRANSPOSE(type)                                                                   \
    do {                                                                                     \
        type *d = (type *)dst;                                                               \
        const type *x = (const type *)src;                                                   \
        for (uint64_t s0 = 0; s0 < n; s0 += SS_TRANSPOSE_STEPS) {                            \
            uint64_t s1 = n - s0 < SS_TRANSPOSE_STEPS ? n : s0 + SS_TRANSPOSE_STEPS;         \
            for (uint64_t ch = 0; ch < C; ch++)                                              \
                for (uint64_t s = s0; s < s1; s++) d[ch * T + s] = x[s * C + ch];           \
        }                                                                                    \
    } while (0)

/* dst[ch][s] = src[s][ch] for n steps of C elements of es bytes; dst's
 * channel lines are T elements apart. In blocks of steps: one pass over the
 * source instead of one per channel (the source of a window of 22 channels
 * read 22 times, 1 element of each cache line used per read). */
static void transpose_steps(unsigned char *dst, uint64_t T, const unsigned char *src, uint64_t n,
                            uint64_t C, size_t es) {
    switch (es) {
    case 1: SS_TRANSPOSE(uint8_t); return;
    case 2: SS_TRANSPOSE(uint16_t); return;
    case 4: SS_TRANSPOSE(uint32_t); return;
    case 8: SS_TRANSPOSE(uint64_t); return;
    default:
        for (uint64_t ch = 0; ch < C; ch++)
            for (uint64_t s = 0; s < n; s++)
                memcpy(dst + (ch * T + s) * es, src + (s * C + ch) * es, es);
    }
}

/* [B][C][T]: row b's steps [s0, s1), data in [a, z): converted densely to
 * scratch ([z-a][C]) unless the dtype stays as stored, then transposed into
 * each channel's line, padded around. */
static void channels_first(const cfield *f, unsigned char *data, uint64_t b, uint64_t s0,
                           uint64_t s1, uint64_t a, uint64_t z, unsigned char *scratch) {
    uint64_t C = f->row_el, T = f->steps, p0 = f->pos0[b];
    size_t es = ss_dtype_size(f->dst_dtype);
    unsigned char *plane = data + b * C * T * es;
    if (z > a) {
        const unsigned char *src = f->src[b] + (a - p0) * f->in_rb;
        if (f->affine || f->src_dtype != f->dst_dtype) {
            convert(f, scratch, src, z - a);
            src = scratch;
        }
        transpose_steps(plane + a * es, T, src, z - a, C, es);
    }
    for (uint64_t ch = 0; ch < C; ch++) {
        unsigned char *line = plane + ch * T * es;
        if (a > s0) ss__fill(line + s0 * es, f->pad_elem, es, a - s0);
        if (s1 > z) ss__fill(line + z * es, f->pad_elem, es, s1 - z);
    }
}

static void run_task(const ss_collator *c, const task *t, uint64_t B, unsigned char *scratch) {
    const cfield *f = &c->f[t->field];
    const ss_collated *o = f->out;
    unsigned char *data = o->data;
    uint64_t rb = f->out_rb, b = t->row;
    if (!f->sequence) {
        convert(f, data + b * rb, f->src[b], 1);
        return;
    }
    if (f->o.layout == SS_LAYOUT_PACKED) {
        convert(f, data + ((uint64_t)o->offsets[b] + t->s0) * rb, f->src[b] + t->s0 * f->in_rb,
                t->s1 - t->s0);
        return;
    }
    uint64_t T = f->steps, p0 = f->pos0[b], p1 = p0 + f->len[b];
    uint64_t s0 = t->s0, s1 = t->s1;
    /* the three segments of [s0, s1): pad [s0, a), data [a, z), pad [z, s1) */
    uint64_t a = s0 > p0 ? s0 : p0, z = s1 < p1 ? s1 : p1;
    if (a > z) a = z = (s1 <= p0 ? s1 : s0);
    if (f->o.layout == SS_LAYOUT_CHANNELS_FIRST) {
        channels_first(f, data, b, s0, s1, a, z, scratch);
        if (o->mask) mask_row(f, o->mask, T, b, s0, a, z, s1);
    } else if (f->o.layout == SS_LAYOUT_BATCH_MAJOR) {
        unsigned char *row = data + b * T * rb;
        const unsigned char *src = z > a ? f->src[b] + (a - p0) * f->in_rb : NULL;
        uint64_t E = f->row_el;
        if (f->cvp) { /* the whole piece in one call, each byte written once */
            f->cvp(row + s0 * rb, src, (size_t)((a - s0) * E), (size_t)((z - a) * E),
                   (size_t)((s1 - z) * E), f->pad_elem);
        } else {
            if (a > s0) ss__fill(row + s0 * rb, f->pad_elem, rb / E, (a - s0) * E);
            if (z > a) convert(f, row + a * rb, src, z - a);
            if (s1 > z) ss__fill(row + z * rb, f->pad_elem, rb / E, (s1 - z) * E);
        }
        if (o->mask) mask_row(f, o->mask, T, b, s0, a, z, s1);
    } else {
        uint64_t stride = B * rb;
        for (uint64_t s = s0; s < a; s++)
            ss__fill(data + (s * B + b) * rb, f->pad_elem, rb / f->row_el, f->row_el);
        if (z > a) {
            convert(f, scratch, f->src[b] + (a - p0) * f->in_rb, z - a);
            scatter(data + (a * B + b) * rb, stride, scratch, rb, z - a);
        }
        for (uint64_t s = z; s < s1; s++)
            ss__fill(data + (s * B + b) * rb, f->pad_elem, rb / f->row_el, f->row_el);
        if (o->mask)
            for (uint64_t s = s0; s < s1; s++) put_mask(f, o->mask, s * B + b, s >= a && s < z);
    }
}

/* The caller's buffer `theirs` (if not NULL and large enough) or the library's
 * own, grown to `need` bytes. */
static int bind_bytes(cfield *f, const char *what, void *theirs, uint64_t their_bytes,
                      uint64_t need, void **own, uint64_t *own_cap, void **out) {
    if (!theirs) {
        int rc = grow(own, own_cap, need, what, f->name);
        *out = *own;
        return rc;
    }
    if (their_bytes < need)
        return ss__fail(SS_EBUFS,
                        "collate field '%s': the %s buffer holds %llu bytes, the batch needs %llu",
                        f->name, what, (unsigned long long)their_bytes, (unsigned long long)need);
    *out = theirs;
    return 0;
}

/* The caller's array `theirs` with a copy of n values of `own`, or `own`. */
static int64_t *bind_ints(int64_t *theirs, int64_t *own, uint64_t n) {
    if (!theirs) return own;
    memcpy(theirs, own, n * sizeof *own);
    return theirs;
}

/* Point the field's outputs at caller or library buffers, checking sizes. */
static int bind_outputs(ss_collator *c, cfield *f, const ss_collate_buffers *buf, uint64_t n) {
    ss_collated *o = f->out;
    int packed = f->sequence && f->o.layout == SS_LAYOUT_PACKED;
    uint64_t steps = f->steps;
    uint64_t data_bytes = packed ? steps * f->out_rb : n * steps * f->out_rb;
    uint64_t mask_bytes = f->sequence && !packed ? n * steps * mask_elem(f) : 0;
    memset(o, 0, sizeof *o);
    int rc = bind_bytes(f, "data", buf ? buf->data : NULL, buf ? buf->data_bytes : 0, data_bytes,
                        &f->data, &f->data_cap, &o->data);
    if (rc == 0 && mask_bytes)
        rc = bind_bytes(f, "mask", buf ? buf->mask : NULL, buf ? buf->mask_bytes : 0, mask_bytes,
                        &f->mask, &f->mask_cap, &o->mask);
    if (rc) return rc;
    o->lengths = bind_ints(buf ? buf->lengths : NULL, f->lengths, n);
    if (packed) o->offsets = bind_ints(buf ? buf->offsets : NULL, f->offsets, n + 1);
    if (packed && f->o.sort_by_length) o->perm = bind_ints(buf ? buf->perm : NULL, f->perm, n);
    (void)c;
    o->name = f->name;
    o->field = f->index;
    o->dtype = f->dst_dtype;
    o->layout = f->sequence ? f->o.layout : SS_LAYOUT_BATCH_MAJOR;
    o->sequence = f->sequence;
    o->batch = n;
    o->steps = steps;
    o->data_bytes = data_bytes;
    o->mask_bytes = mask_bytes;
    uint32_t d = 0;
    if (!f->sequence) {
        o->shape[d++] = n;
    } else if (packed) {
        o->shape[d++] = steps;
    } else if (f->o.layout == SS_LAYOUT_TIME_MAJOR) {
        o->shape[d++] = steps;
        o->shape[d++] = n;
    } else if (f->o.layout == SS_LAYOUT_CHANNELS_FIRST) {
        o->shape[d++] = n;
        for (uint32_t k = 0; k < f->ndim; k++) o->shape[d++] = f->dims[k];
        o->shape[d++] = steps;
        o->ndim = d;
        return 0;
    } else {
        o->shape[d++] = n;
        o->shape[d++] = steps;
    }
    for (uint32_t k = 0; k < f->ndim; k++) o->shape[d++] = f->dims[k];
    o->ndim = d;
    return 0;
}

/* Output steps of a task, at most. */
static uint64_t task_steps(const cfield *f) {
    return SS_TASK_BYTES / f->out_rb ? SS_TASK_BYTES / f->out_rb : 1;
}

/* Output steps of row r of a planned field. */
static uint64_t out_steps(const cfield *f, size_t r) {
    return !f->sequence ? 1 : f->o.layout == SS_LAYOUT_PACKED ? f->len[r] : f->steps;
}

/* Rows [r0, r1) of a batch-major padded field with a fused kernel, one
 * call per whole row, into data (and mask) of T steps a row: a piece of a
 * row is converted element by element as the whole row is, so this writes
 * the bytes the pieces of a team write, without a task and run_task()'s
 * bookkeeping per row (token batches 7.9 -> 7.3 us). */
static void padded_rows(const cfield *f, unsigned char *data, void *mask, uint64_t T, uint64_t r0,
                        uint64_t r1) {
    uint64_t E = f->row_el;
    for (uint64_t b = r0; b < r1; b++) {
        uint64_t p0 = f->pos0[b], L = f->len[b];
        f->cvp(data + b * T * f->out_rb, L ? f->src[b] : NULL, (size_t)(p0 * E), (size_t)(L * E),
               (size_t)((T - p0 - L) * E), f->pad_elem);
        if (mask) mask_row(f, mask, T, b, 0, p0, p0 + L, T);
    }
}

/* Run the pieces of every row in order on the caller's thread: the same
 * pieces as the parallel tasks (so the same bytes), without a task list
 * or an OpenMP team. */
static void run_serial(const ss_collator *c, uint64_t n_rows) {
    for (uint32_t k = 0; k < c->nf; k++) {
        const cfield *f = &c->f[k];
        if (f->sequence && f->o.layout == SS_LAYOUT_BATCH_MAJOR && f->cvp) {
            padded_rows(f, f->out->data, f->out->mask, f->steps, 0, n_rows);
            continue;
        }
        uint64_t per = task_steps(f);
        for (uint64_t r = 0; r < n_rows; r++) {
            uint64_t steps = out_steps(f, r);
            for (uint64_t s = 0; s < steps; s += per) {
                task t = {k, r, s, s + per < steps ? s + per : steps};
                run_task(c, &t, n_rows, c->scratch);
            }
        }
    }
}

/* Describe a collated batch in `out`. Returns 0. */
static int done(ss_collator *c, size_t n_rows, ss_collated_batch *out) {
    out->rows = n_rows;
    out->nfields = c->nf;
    out->fields = c->outs;
    return 0;
}

/* With every row resolved: finish each field (longest[k]: its longest row)
 * and bind its outputs; the batch's output bytes in *total. */
static int finish(ss_collator *c, const uint64_t *longest, size_t n_rows,
                  const ss_collate_buffers *buffers, uint64_t *total) {
    *total = 0;
    for (uint32_t k = 0; k < c->nf; k++) {
        finish_field(c, k, n_rows, longest[k]);
        int rc = bind_outputs(c, &c->f[k], buffers ? &buffers[k] : NULL, n_rows);
        if (rc) return rc;
        *total += c->f[k].out->data_bytes;
    }
    return 0;
}

/* Output bytes a task writes (data and mask), its cost. */
static uint64_t task_bytes(const ss_collator *c, const task *t) {
    const cfield *f = &c->f[t->field];
    return (t->s1 - t->s0) * (f->out_rb + (f->out->mask ? mask_elem(f) : 0));
}

/* Cut every row into pieces of at most task_steps() steps: c->tasks[0, *nt). */
static int cut_tasks(ss_collator *c, size_t n_rows, uint64_t *nt) {
    uint64_t ntasks = 0;
    for (uint32_t k = 0; k < c->nf; k++) {
        uint64_t per = task_steps(&c->f[k]);
        for (size_t r = 0; r < n_rows; r++) /* counted, not divided: rows are mostly one task */
            for (uint64_t s = 0, steps = out_steps(&c->f[k], r); s < steps; s += per) ntasks++;
    }
    int rc = grow_tasks(c, ntasks);
    if (rc) return rc;
    uint64_t t = 0;
    for (uint32_t k = 0; k < c->nf; k++) {
        const cfield *f = &c->f[k];
        uint64_t per = task_steps(f);
        for (size_t r = 0; r < n_rows; r++) {
            uint64_t steps = out_steps(f, r);
            for (uint64_t s = 0; s < steps; s += per)
                c->tasks[t++] = (task){k, r, s, s + per < steps ? s + per : steps};
        }
    }
    *nt = t;
    return 0;
}

/* Give each of nth threads a run of consecutive tasks with an equal share of
 * the output bytes: c->bounds[t] to c->bounds[t + 1]. No shared counter to
 * contend for per task (tasks of a short row are a few microseconds), and
 * a thread writes the same part of the output batch after batch (it stays
 * in that core's cache) and the rows it resolved (and prefetched). */
static void split_tasks(ss_collator *c, uint64_t nt, int nth) {
    uint64_t total = 0, acc = 0;
    for (uint64_t i = 0; i < nt; i++) total += task_bytes(c, &c->tasks[i]);
    int t = 1;
    c->bounds[0] = 0;
    for (uint64_t i = 0; i < nt && t < nth; i++) {
        acc += task_bytes(c, &c->tasks[i]);
        while (t < nth && acc * (uint64_t)nth >= total * (uint64_t)t) c->bounds[t++] = i + 1;
    }
    while (t <= nth) c->bounds[t++] = nt;
}

/* Thread id's share of the tasks split_tasks() made. */
static void run_share(const ss_collator *c, int id, uint64_t n_rows) {
    unsigned char *scratch = c->scratch + (uint64_t)id * c->scratch_bytes;
    for (uint64_t i = c->bounds[id]; i < c->bounds[id + 1]; i++)
        run_task(c, &c->tasks[i], n_rows, scratch);
}

/* Plan on the caller's thread, then run serially or (a batch of at least
 * parallel_bytes) as tasks of a team. */
static int collate_plain(ss_collator *c, const ss_span *spans, const ss_collate_input *inputs,
                         size_t n_rows, const ss_collate_buffers *buffers, ss_collated_batch *out) {
    uint64_t *longest = c->longest, total, nt = 0;
    for (uint32_t k = 0; k < c->nf; k++) {
        int rc = resolve_rows(c, k, spans, inputs, 0, n_rows, &longest[k]);
        if (rc) return rc;
    }
    int rc = finish(c, longest, n_rows, buffers, &total);
    if (rc) return rc;
    c->team_next = c->threads > 1 && total >= c->parallel_bytes;
    if (c->threads > 1 && total >= c->parallel_bytes && (rc = cut_tasks(c, n_rows, &nt))) return rc;
    if (nt < 2) {
        run_serial(c, n_rows);
        return done(c, n_rows, out);
    }
#pragma omp parallel num_threads(c->threads)
    {
#pragma omp master
        split_tasks(c, nt, omp_get_num_threads());
#pragma omp barrier
        run_share(c, omp_get_thread_num(), n_rows);
    }
    return done(c, n_rows, out);
}

/* ------------------------------------------------- a team writing by rows */

/* A field whose rows a team can write each on the thread that resolved it:
 * padded batch-major rows with the fused kernel, and fixed fields. Their
 * rows all take the same output bytes, so equal shares of rows are equal
 * shares of the work. */
static int by_rows(const cfield *f) {
    return !f->sequence || (f->o.layout == SS_LAYOUT_BATCH_MAJOR && f->cvp);
}

/* bind_bytes() without its side effects: the buffer it will bind, and 1 if
 * it will bind it without allocating or failing. */
static int fits(void *theirs, uint64_t their_bytes, uint64_t need, void *own, uint64_t own_cap,
                void **out) {
    *out = theirs ? theirs : own;
    return theirs ? their_bytes >= need : own_cap >= (need ? need : 1);
}

/* The data and mask bind_outputs() will give field f for n rows of T steps,
 * when it will give them without allocating or failing (1): then every
 * thread of the team can write its rows before the master binds. */
static int bound_in_place(const cfield *f, const ss_collate_buffers *buf, uint64_t n, uint64_t T,
                          unsigned char **data, void **mask) {
    uint64_t mask_bytes = f->sequence ? n * T * mask_elem(f) : 0;
    void *d;
    *mask = NULL;
    if (!fits(buf ? buf->data : NULL, buf ? buf->data_bytes : 0, n * T * f->out_rb, f->data,
              f->data_cap, &d))
        return 0;
    *data = d;
    return !mask_bytes || fits(buf ? buf->mask : NULL, buf ? buf->mask_bytes : 0, mask_bytes,
                               f->mask, f->mask_cap, mask);
}

/* The longest row of field k any of the nth threads resolved. */
static uint64_t team_longest(const ss_collator *c, uint32_t k, int nth) {
    uint64_t most = 0;
    for (int t = 0; t < nth; t++) {
        uint64_t v = c->longest[(size_t)(t + 1) * c->nf + k];
        if (v > most) most = v;
    }
    return most;
}

/* Field k's steps from the team's longest row. */
static uint64_t team_steps(const ss_collator *c, uint32_t k, int nth) {
    return c->f[k].sequence ? padded_steps(&c->f[k], team_longest(c, k, nth)) : 1;
}

/* Whether every field of the collator is by_rows() (its options decide). */
static int all_by_rows(const ss_collator *c) {
    for (uint32_t k = 0; k < c->nf; k++)
        if (!by_rows(&c->f[k])) return 0;
    return 1;
}

/* With every field by_rows(): whether the team can write the batch by rows,
 * every field's outputs in place. Every thread gets the same answer as long
 * as no thread binds (grows) outputs before all have asked. */
static int rows_ready(const ss_collator *c, const ss_collate_buffers *buffers, size_t n, int nth) {
    for (uint32_t k = 0; k < c->nf; k++) {
        unsigned char *data;
        void *mask;
        if (!bound_in_place(&c->f[k], buffers ? &buffers[k] : NULL, n, team_steps(c, k, nth), &data,
                            &mask))
            return 0;
    }
    return 1;
}

/* A thread's rows [r0, r1) of every field: finish_field()'s per-row part
 * (lengths, first steps) and their output bytes, as run_serial() writes
 * them. */
static void write_rows(ss_collator *c, const ss_collate_buffers *buffers, size_t n, int nth,
                       size_t r0, size_t r1) {
    for (uint32_t k = 0; k < c->nf; k++) {
        cfield *f = &c->f[k];
        uint64_t T = team_steps(c, k, nth);
        unsigned char *data;
        void *mask;
        bound_in_place(f, buffers ? &buffers[k] : NULL, n, T, &data, &mask);
        for (size_t r = r0; r < r1; r++) {
            f->lengths[r] = (int64_t)(f->sequence ? f->len[r] : 1);
            if (f->sequence) f->pos0[r] = f->o.pad_left ? T - f->len[r] : 0;
        }
        if (f->sequence) {
            padded_rows(f, data, mask, T, r0, r1);
            continue;
        }
        for (size_t r = r0; r < r1; r++) convert(f, data + r * f->out_rb, f->src[r], 1);
    }
}

/* After write_rows() on every thread: bind the outputs (the buffers the
 * rows were written to) and decide whether the next batch plans in a team. */
static int bind_rows(ss_collator *c, const ss_collate_buffers *buffers, size_t n, int nth) {
    uint64_t total = 0;
    for (uint32_t k = 0; k < c->nf; k++) {
        c->f[k].steps = team_steps(c, k, nth);
        int rc = bind_outputs(c, &c->f[k], buffers ? &buffers[k] : NULL, n);
        if (rc) return rc;
        total += c->f[k].out->data_bytes;
    }
    c->team_next = total >= c->parallel_bytes;
    return 0;
}

/* The master's part of a team that writes tasks: the team's longest rows,
 * finish() and the tasks, or the whole batch when it is too small for the
 * team. *parallel: the team runs the tasks. */
static int plan_tasks(ss_collator *c, size_t n_rows, const ss_collate_buffers *buffers, int nth,
                      int *parallel) {
    uint64_t total, nt = 0;
    for (uint32_t k = 0; k < c->nf; k++) c->longest[k] = team_longest(c, k, nth);
    int rc = finish(c, c->longest, n_rows, buffers, &total);
    c->team_next = total >= c->parallel_bytes;
    if (rc == 0 && c->team_next) rc = cut_tasks(c, n_rows, &nt);
    *parallel = rc == 0 && nt >= 2;
    if (*parallel) split_tasks(c, nt, nth);
    if (rc == 0 && !*parallel) run_serial(c, n_rows);
    return rc;
}

/* One team for the whole batch: each thread resolves a share of the rows
 * (ss_get and the prefetch of their first bytes, a third of a small batch's
 * time). Then, when every field is written by rows (by_rows()) into
 * buffers it already has, each thread writes the rows it resolved: one
 * barrier, no serial part, and each row's bytes stay in one core's cache.
 * Otherwise the caller's thread (the master: error messages are per
 * thread) finishes the plan and the team runs tasks. A row that fails to
 * resolve sends the batch to collate_plain(), which reports the first
 * failing row as a serial run does. */
static int collate_team(ss_collator *c, const ss_span *spans, const ss_collate_input *inputs,
                        size_t n_rows, const ss_collate_buffers *buffers, ss_collated_batch *out) {
    int failed = 0, rc = 0, parallel = 0, rows = 0, team = 1;
#pragma omp parallel num_threads(c->threads)
    {
        int id = omp_get_thread_num(), nth = omp_get_num_threads();
        size_t r0 = n_rows * (size_t)id / (size_t)nth, r1 = n_rows * (size_t)(id + 1) / (size_t)nth;
        uint64_t *mine = c->longest + (size_t)(id + 1) * c->nf;
        int trc = 0;
        for (uint32_t k = 0; k < c->nf && !trc; k++)
            trc = resolve_rows(c, k, spans, inputs, r0, r1, &mine[k]);
        if (trc) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp barrier
        int able = all_by_rows(c), by_row = able && !failed && rows_ready(c, buffers, n_rows, nth);
        if (id == 0) {
            rows = by_row;
            team = nth;
        }
        if (by_row) {
            write_rows(c, buffers, n_rows, nth, r0, r1);
        } else {
            /* plan_tasks() may grow the outputs rows_ready() looks at: only
             * once every thread has taken this branch (a thread that asked
             * after the growth would write by rows alone, and the team
             * would wait for it at the barrier below forever) */
            if (able) {
#pragma omp barrier
            }
#pragma omp master
            if (!failed) rc = plan_tasks(c, n_rows, buffers, nth, &parallel);
#pragma omp barrier
            if (parallel) run_share(c, id, n_rows);
        }
    }
    if (failed) return collate_plain(c, spans, inputs, n_rows, buffers, out);
    if (rows) rc = bind_rows(c, buffers, n_rows, team);
    return rc ? rc : done(c, n_rows, out);
}

/* Collate spans of the store (inputs NULL) or rows in memory (spans NULL).
 * The team also plans when the collator's last batch was large enough to
 * run in parallel (the size is known only after planning; consecutive
 * batches are alike). Either way each output byte is computed the same. */
static int collate(ss_collator *c, const ss_span *spans, const ss_collate_input *inputs,
                   size_t n_rows, const ss_collate_buffers *buffers, ss_collated_batch *out) {
    int rc = row_arrays(c, n_rows);
    if (rc) return rc;
    /* the views of every row are held until the rows are written: a dataset
     * with more shards than its open budget keeps their shards open */
    if (spans) ss__store_pin(c->s, &spans[0].example, n_rows, sizeof *spans, 1);
    if (c->team_next && n_rows >= 2)
        rc = collate_team(c, spans, inputs, n_rows, buffers, out);
    else
        rc = collate_plain(c, spans, inputs, n_rows, buffers, out);
    if (spans) ss__store_pin(c->s, &spans[0].example, n_rows, sizeof *spans, -1);
    return rc;
}

int ss_collator_collate_into(ss_collated_batch *out, ss_collator *c, const ss_span *rows,
                             size_t n_rows, const ss_collate_buffers *buffers) {
    if (!c || !out || !rows) return ss__fail(SS_EINVAL, "ss_collator_collate: NULL argument");
    memset(out, 0, sizeof *out);
    if (n_rows == 0) return ss__fail(SS_EINVAL, "ss_collator_collate: a batch needs >= 1 row");
    return collate(c, rows, NULL, n_rows, buffers, out);
}

int ss_collator_collate(ss_collated_batch *out, ss_collator *c, const ss_span *rows,
                        size_t n_rows) {
    return ss_collator_collate_into(out, c, rows, n_rows, NULL);
}

int ss_collator_collate_rows(ss_collated_batch *out, ss_collator *c, const ss_collate_input *rows,
                             size_t n_rows, const ss_collate_buffers *buffers) {
    if (!c || !out || !rows) return ss__fail(SS_EINVAL, "ss_collator_collate_rows: NULL argument");
    memset(out, 0, sizeof *out);
    if (n_rows == 0) return ss__fail(SS_EINVAL, "ss_collator_collate_rows: a batch needs >= 1 row");
    return collate(c, NULL, rows, n_rows, buffers, out);
}
