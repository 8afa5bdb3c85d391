/* SPDX-License-Identifier: BSD-2-Clause */
/* window_batch.c - collation of the window reader's batches: the windows are
 * zero-copy slices of the store, converted (dtype, per-channel gain/offset)
 * into [B][W][C] or [W][B][C] with OpenMP; plus the hidden-state gather,
 * labels and the conv-aligned targets. */
#include "window.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define ULL(x) ((unsigned long long)(x))

int ss__window_slots_alloc(ss_window_reader *r) {
    if (r->opt.flags & SS_WINDOW_TIME_MAJOR) {
        r->scratch = malloc((size_t)r->nthreads * r->W * (r->out_row ? r->out_row : 1));
        if (!r->scratch) return ss__fail(SS_ENOMEM, "window reader: out of memory");
    }
    r->slots = calloc(r->nbuf, sizeof *r->slots);
    if (!r->slots) return ss__fail(SS_ENOMEM, "window reader: out of memory");
    uint64_t B = r->B, W = r->W;
    int per_step = (r->opt.flags & SS_WINDOW_LABEL_PER_STEP) != 0;
    uint64_t label_bytes =
        r->opt.label_field != SS_FIELD_NONE ? B * r->label_row * (per_step ? W : 1) : 0;
    for (uint32_t k = 0; k < r->nbuf; k++) {
        ss__wslot *sl = &r->slots[k];
        sl->seq = malloc(B * sizeof *sl->seq);
        sl->keep = calloc(B, 1);
        sl->src = malloc(B * sizeof *sl->src);
        sl->mask = calloc(B, 1);
        sl->step_mask = calloc(B * W, 1);
        sl->reset = calloc(B, 1);
        sl->lane = calloc(B, sizeof *sl->lane);
        sl->example = calloc(B, sizeof *sl->example);
        sl->start = calloc(B, sizeof *sl->start);
        sl->length = calloc(B, sizeof *sl->length);
        sl->index = calloc(B, sizeof *sl->index);
        sl->b.data = calloc(B * W, r->out_row ? r->out_row : 1);
        sl->b.state = r->H ? calloc(B, r->H) : NULL;
        sl->label = label_bytes ? calloc(1, label_bytes) : NULL;
        if (!sl->seq || !sl->keep || !sl->src || !sl->mask || !sl->step_mask || !sl->reset || !sl->lane ||
            !sl->example || !sl->start || !sl->length || !sl->index || !sl->b.data ||
            (r->H && !sl->b.state) || (label_bytes && !sl->label))
            return ss__fail(SS_ENOMEM,
                            "window reader: out of memory for %u batches of %llu "
                            "x %llu samples",
                            r->nbuf, ULL(B), ULL(W));
        ss_window_batch *b = &sl->b;
        b->window = W;
        b->channels = r->C;
        b->dtype = r->out_dtype;
        b->mask = sl->mask;
        b->step_mask = sl->step_mask;
        b->reset = sl->reset;
        b->lane = sl->lane;
        b->example = sl->example;
        b->start = sl->start;
        b->length = sl->length;
        b->index = sl->index;
        b->label = sl->label;
        b->label_row_bytes = r->opt.label_field != SS_FIELD_NONE ? r->label_row : 0;
        b->label_dtype = r->label_dtype;
    }
    return 0;
}

void ss__window_slots_free(ss_window_reader *r) {
    free(r->scratch);
    r->scratch = NULL;
    if (!r->slots) return;
    for (uint32_t k = 0; k < r->nbuf; k++) {
        ss__wslot *sl = &r->slots[k];
        free(sl->seq);
        free(sl->keep);
        free(sl->src);
        free(sl->mask);
        free(sl->step_mask);
        free(sl->reset);
        free(sl->lane);
        free(sl->example);
        free(sl->start);
        free(sl->length);
        free(sl->index);
        free(sl->b.data);
        free(sl->b.state);
        free(sl->label);
    }
    free(r->slots);
    r->slots = NULL;
}

/* Convert `n` samples of one window into row `row` of the batch. Time-major:
 * convert the window contiguously into this thread's scratch rows (long
 * vectorisable loops), then scatter the samples with a stride of `size`. */
static void convert_row(const ss_window_reader *r, uint8_t *data, uint32_t size, uint32_t row,
                        const void *src, uint64_t n, uint8_t *scratch) {
    const ss__affine *a = r->has_aff ? &r->aff : NULL;
    size_t orow = r->out_row;
    if (!(r->opt.flags & SS_WINDOW_TIME_MAJOR)) {
        uint8_t *dst = data + (uint64_t)row * r->W * orow;
        ss__cast(dst, r->out_dtype, src, r->src_dtype, n, r->C, a);
        memset(dst + n * orow, 0, (r->W - n) * orow);
        return;
    }
    ss__cast(scratch, r->out_dtype, src, r->src_dtype, n, r->C, a);
    for (uint64_t t = 0; t < n; t++)
        memcpy(data + (t * size + row) * orow, scratch + t * orow, orow);
    for (uint64_t t = n; t < r->W; t++) memset(data + (t * size + row) * orow, 0, orow);
}

int ss__window_collate(ss_window_reader *r, ss__wslot *sl) {
    uint32_t size = sl->b.size;
    /* views first, in this thread, so that an error keeps its message */
    for (uint32_t row = 0; row < size; row++) {
        sl->src[row] = NULL;
        if (!sl->mask[row]) continue;
        ss_view v;
        int rc = ss_get_range(&v, r->store, r->opt.field, sl->example[row], sl->start[row],
                              sl->start[row] + sl->length[row]);
        if (rc) return ss__context(rc, "window reader: sequence %llu", ULL(sl->example[row]));
        sl->src[row] = v.data;
    }
    /* per-window transforms: sl->src then points into the lane buffers */
    int xrc = ss__window_xf_rows(r, sl);
    if (xrc) return xrc;
    uint8_t *data = sl->b.data;
    int tm = (r->opt.flags & SS_WINDOW_TIME_MAJOR) != 0;
    int64_t n = (int64_t)size;
    /* threads only pay off for big batches; the result is the same either way */
    int par = size > 1 && (uint64_t)size * r->W * r->out_row >= (1u << 14);
#pragma omp parallel for num_threads(r->nthreads) schedule(static) if (par)
    for (int64_t i = 0; i < n; i++) {
        uint32_t row = (uint32_t)i;
        uint8_t *scratch = /* only the time-major layout has scratch rows */
            r->scratch ? r->scratch + (size_t)omp_get_thread_num() * r->W * r->out_row : NULL;
        convert_row(r, data, size, row, sl->src[row], sl->src[row] ? sl->length[row] : 0, scratch);
    }
    /* step mask and labels: small, sequential */
    for (uint32_t row = 0; row < size; row++) {
        uint64_t len = sl->mask[row] ? sl->length[row] : 0;
        if (!tm) {
            memset(sl->step_mask + (uint64_t)row * r->W, 1, len);
            memset(sl->step_mask + (uint64_t)row * r->W + len, 0, r->W - len);
        } else {
            for (uint64_t t = 0; t < r->W; t++) sl->step_mask[t * size + row] = t < len;
        }
    }
    if (sl->label) {
        uint64_t lr = r->label_row;
        int per_step = (r->opt.flags & SS_WINDOW_LABEL_PER_STEP) != 0;
        for (uint32_t row = 0; row < size; row++) {
            const void *lab = NULL;
            ss_view v;
            if (sl->mask[row]) {
                int rc = ss_get(&v, r->store, r->opt.label_field, sl->example[row]);
                if (rc)
                    return ss__context(rc, "window reader: label of %llu", ULL(sl->example[row]));
                lab = v.data;
            }
            uint64_t steps = per_step ? r->W : 1;
            for (uint64_t t = 0; t < steps; t++) {
                uint64_t at = !per_step ? row : tm ? t * size + row : (uint64_t)row * r->W + t;
                if (lab && (!per_step || t < sl->length[row]))
                    memcpy(sl->label + at * lr, lab, lr);
                else
                    memset(sl->label + at * lr, 0, lr);
            }
        }
    }
    return 0;
}

void ss__window_gather_states(ss_window_reader *r, ss__wslot *sl) {
    for (uint32_t row = 0; r->H && row < sl->b.size; row++) {
        uint8_t *dst = (uint8_t *)sl->b.state + (uint64_t)row * r->H;
        if (!sl->mask[row])
            memset(dst, 0, r->H);
        else if (sl->reset[row])
            memcpy(dst, r->init_state, r->H);
        else
            memcpy(dst, r->hidden + sl->seq[row] * r->H, r->H);
    }
}

int ss_window_reader_targets(void *out, const ss_window_reader *r, const ss_window_batch *batch,
                             uint32_t field, ss_dtype dtype) {
    if (field >= ss_field_count(r->store))
        return ss__fail(SS_ERANGE, "window targets: field %u out of range", field);
    if (!ss__dtype_valid(dtype))
        return ss__fail(SS_EINVAL, "window targets: unknown dtype %d", (int)dtype);
    ss_field f;
    ss_field_info(&f, r->store, field);
    uint64_t rb = ss_field_row_bytes(r->store, field), el = rb / ss_dtype_size(f.dtype);
    uint64_t orow = el * ss_dtype_size(dtype), T = r->W - r->O, size = batch->size;
    int tm = (r->opt.flags & SS_WINDOW_TIME_MAJOR) != 0;
    uint8_t *o = out;
    for (uint64_t row = 0; row < size; row++) {
        uint64_t n = 0;
        const uint8_t *src = NULL;
        if (batch->mask[row]) {
            uint64_t ex = batch->example[row], s0 = batch->start[row] + r->O;
            uint64_t s1 = batch->start[row] + batch->length[row];
            n = s1 > s0 ? s1 - s0 : 0;
            ss_view v;
            int rc;
            if (f.sequence) {
                if (ss_length(r->store, field, ex) < s1)
                    return ss__fail(SS_EINPUT,
                                    "window targets: field '%s' of example %llu is "
                                    "shorter than the signal",
                                    f.name, ULL(ex));
                rc = ss_get_range(&v, r->store, field, ex, s0, s1);
            } else {
                rc = ss_get(&v, r->store, field, ex);
            }
            if (rc) return rc;
            src = v.data;
        }
        for (uint64_t t = 0; t < T; t++) {
            uint8_t *dst = o + (tm ? t * size + row : row * T + t) * orow;
            if (t < n)
                ss__cast(dst, dtype, f.sequence ? src + t * rb : src, f.dtype, 1, el, NULL);
            else
                memset(dst, 0, orow);
        }
    }
    return 0;
}
