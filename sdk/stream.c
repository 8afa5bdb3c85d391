/* SPDX-License-Identifier: BSD-2-Clause */
/* stream.c - B parallel streams over the flat stream of one field, for
 * language modelling (torchnet's SequenceBatchDataset + TargetNextDataset).
 *
 * The "virtual" stream is the selected examples in order, each followed by an
 * <eos> row when asked. vstart[j] is where example j starts in it, so a
 * position is located by binary search, and rows are converted straight from
 * the map (ss_get) into the output: nothing is copied twice. */
#include "cast.h"
#include "internal.h"

#include <omp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define SS_STREAM_PARALLEL_BYTES ((uint64_t)1 << 20) /* default: below, gathered serially */

struct ss_stream {
    const ss_store *s;
    uint32_t field;
    ss_stream_options o;
    ss_dtype src_dtype, dst_dtype;
    uint32_t ndim;
    uint64_t dims[SS_MAX_DIMS];
    uint64_t row_el, in_rb, out_rb;
    uint64_t *examples; /* NULL: all, in store order */
    uint64_t n_ex;
    uint64_t *vstart; /* n_ex + 1 entries */
    uint64_t N;       /* virtual length */
    uint64_t S;       /* steps per stream */
    uint64_t nbatches;
    unsigned char *eos_row, *pad_row;
    /* library-owned outputs, B*T each */
    unsigned char *input, *target;
    uint8_t *mask, *starts;
    /* time-major staging ([B][T]), and per-stream results */
    unsigned char *stage_in, *stage_tg;
    uint8_t *stage_starts;
    int *rcs;
};

void ss_stream_free(ss_stream *st) {
    if (!st) return;
    free(st->examples);
    free(st->vstart);
    free(st->eos_row);
    free(st->pad_row);
    free(st->input);
    free(st->target);
    free(st->mask);
    free(st->starts);
    free(st->stage_in);
    free(st->stage_tg);
    free(st->stage_starts);
    free(st->rcs);
    free(st);
}

static uint64_t example_at(const ss_stream *st, uint64_t j) {
    return st->examples ? st->examples[j] : j;
}

static int setup_layout(ss_stream *st) {
    const ss_stream_options *o = &st->o;
    uint64_t B = o->batch, T = o->steps, k = o->shift;
    uint64_t N = st->N;
    if (o->tail == SS_STREAM_TAIL_PAD)
        st->S = (N + B - 1) / B;
    else
        st->S = N / B;
    uint64_t usable = st->S > k ? st->S - k : 0; /* input steps that have a target */
    if (o->tail == SS_STREAM_TAIL_DROP)
        st->nbatches = usable / T;
    else
        st->nbatches = (usable + T - 1) / T;
    return 0;
}

/* <eos> and pad must have exact elements of the output dtype (ss_value_kind). */
static int check_values(const ss_stream_options *o, ss_dtype dtype, const char *name) {
    _Alignas(8) unsigned char e[8];
    char v[64];
    if (ss__scalar_exact(e, dtype, o->eos_kind, o->eos_value, o->eos_i64, o->eos_u64)) {
        ss__scalar_print(v, sizeof v, o->eos_kind, o->eos_value, o->eos_i64, o->eos_u64);
        return ss__fail(SS_EINVAL, "stream field '%s': <eos> %s has no exact %s value", name, v,
                        ss_dtype_name(dtype));
    }
    if (ss__scalar_exact(e, dtype, o->pad_kind, o->pad_value, o->pad_i64, o->pad_u64)) {
        ss__scalar_print(v, sizeof v, o->pad_kind, o->pad_value, o->pad_i64, o->pad_u64);
        return ss__fail(SS_EINVAL, "stream field '%s': pad %s has no exact %s value", name, v,
                        ss_dtype_name(dtype));
    }
    return 0;
}

int ss_stream_create(ss_stream **out, const ss_store *s, uint32_t field,
                     const ss_stream_options *options) {
    if (!out) return ss__fail(SS_EINVAL, "ss_stream_create: out is NULL");
    *out = NULL;
    if (!s || !options) return ss__fail(SS_EINVAL, "ss_stream_create: NULL store or options");
    /* Read by version (seqstore.h, "Options"): version 1 ended at
     * parallel_bytes; later fields keep their INIT values. */
    ss_stream_options opt = SS_STREAM_OPTIONS_INIT;
    if (options->version == 1)
        memcpy(&opt, options, offsetof(ss_stream_options, eos_kind));
    else if (options->version == SS_STREAM_OPTIONS_VERSION)
        opt = *options;
    else
        return ss__fail(SS_EINVAL, "stream: options version %u is not 1..%u", options->version,
                        SS_STREAM_OPTIONS_VERSION);
    opt.version = SS_STREAM_OPTIONS_VERSION;
    const ss_stream_options *o = &opt;
    ss_field info;
    int rc = ss_field_info(&info, s, field);
    if (rc) return ss__context(rc, "stream");
    if (!info.sequence)
        return ss__fail(SS_EINVAL, "stream field '%s': a fixed field has no flat stream",
                        info.name);
    if (o->batch == 0)
        return ss__fail(SS_EINVAL, "stream field '%s': batch (B) must be >= 1", info.name);
    if (o->steps == 0)
        return ss__fail(SS_EINVAL, "stream field '%s': steps (T) must be >= 1", info.name);
    if ((unsigned)o->tail > SS_STREAM_TAIL_SHORT)
        return ss__fail(SS_EINVAL, "stream field '%s': unknown tail policy %d", info.name,
                        (int)o->tail);
    if (o->dtype && !ss__dtype_valid(o->dtype))
        return ss__fail(SS_EINVAL, "stream field '%s': unknown output dtype %d", info.name,
                        (int)o->dtype);
    if (o->threads < 0)
        return ss__fail(SS_EINVAL, "stream field '%s': threads = %d (use 0 for the default)",
                        info.name, o->threads);
    if (!o->examples && o->n_examples)
        return ss__fail(SS_EINVAL, "stream field '%s': examples is NULL but n_examples = %llu",
                        info.name, (unsigned long long)o->n_examples);
    uint64_t count = ss_count(s);
    for (uint64_t j = 0; o->examples && j < o->n_examples; j++)
        if (o->examples[j] >= count)
            return ss__fail(SS_EINVAL,
                            "stream field '%s': examples[%llu] = %llu is out of range (the store "
                            "has %llu examples)",
                            info.name, (unsigned long long)j, (unsigned long long)o->examples[j],
                            (unsigned long long)count);
    rc = check_values(o, o->dtype ? o->dtype : info.dtype, info.name);
    if (rc) return rc;
    uint64_t B = o->batch, T = o->steps;
    if (B > ((uint64_t)1 << 32) || T > ((uint64_t)1 << 32) || B * T > ((uint64_t)1 << 36))
        return ss__fail(SS_EINVAL, "stream field '%s': batch x steps = %llu x %llu is too large",
                        info.name, (unsigned long long)B, (unsigned long long)T);

    ss_stream *st = calloc(1, sizeof *st);
    if (!st) return ss__fail(SS_ENOMEM, "stream: out of memory");
    st->s = s;
    st->field = field;
    st->o = *o;
    st->o.examples = NULL;
    if (st->o.threads == 0) st->o.threads = 1; /* 0 = one thread (seqstore.h) */
    st->src_dtype = info.dtype;
    st->dst_dtype = o->dtype ? o->dtype : info.dtype;
    st->ndim = info.ndim;
    memcpy(st->dims, info.dims, sizeof st->dims);
    st->row_el = 1;
    for (uint32_t d = 0; d < info.ndim; d++) st->row_el *= info.dims[d];
    st->in_rb = st->row_el * ss_dtype_size(st->src_dtype);
    st->out_rb = st->row_el * ss_dtype_size(st->dst_dtype);
    st->n_ex = o->examples ? o->n_examples : count;
    rc = 0;
    if (o->examples) {
        st->examples = malloc((st->n_ex ? st->n_ex : 1) * sizeof *st->examples);
        if (st->examples)
            memcpy(st->examples, o->examples, st->n_ex * sizeof *st->examples);
        else
            rc = SS_ENOMEM;
    }
    st->vstart = malloc((st->n_ex + 1) * sizeof *st->vstart);
    st->eos_row = malloc(st->out_rb);
    st->pad_row = malloc(st->out_rb);
    uint64_t bt = B * T;
    st->input = malloc(bt * st->out_rb);
    st->target = o->shift ? malloc(bt * st->out_rb) : NULL; /* shift 0: input only */
    st->mask = malloc(bt);
    st->starts = malloc(bt);
    st->rcs = malloc(B * sizeof *st->rcs);
    if (o->time_major) {
        st->stage_in = malloc(bt * st->out_rb);
        st->stage_tg = o->shift ? malloc(bt * st->out_rb) : NULL;
        st->stage_starts = malloc(bt);
        if (!st->stage_in || (o->shift && !st->stage_tg) || !st->stage_starts) rc = SS_ENOMEM;
    }
    if (rc || !st->vstart || !st->eos_row || !st->pad_row || !st->input ||
        (o->shift && !st->target) || !st->mask || !st->starts || !st->rcs) {
        ss_stream_free(st);
        return ss__fail(SS_ENOMEM, "stream field '%s': cannot allocate buffers for %llu x %llu",
                        info.name, (unsigned long long)B, (unsigned long long)T);
    }
    uint64_t acc = 0, eos = o->eos ? 1 : 0;
    for (uint64_t j = 0; j < st->n_ex; j++) {
        st->vstart[j] = acc;
        acc += ss_length(s, st->field, example_at(st, j)) + eos;
    }
    st->vstart[st->n_ex] = acc;
    st->N = acc;
    _Alignas(8) unsigned char e1[8], p1[8];
    size_t es = ss_dtype_size(st->dst_dtype);
    ss__scalar_exact(e1, st->dst_dtype, o->eos_kind, o->eos_value, o->eos_i64, o->eos_u64);
    ss__scalar_exact(p1, st->dst_dtype, o->pad_kind, o->pad_value, o->pad_i64, o->pad_u64);
    ss__fill(st->eos_row, e1, es, st->row_el);
    ss__fill(st->pad_row, p1, es, st->row_el);
    setup_layout(st);
    *out = st;
    return 0;
}

uint64_t ss_stream_count(const ss_stream *st) {
    return st ? st->nbatches : 0;
}

uint64_t ss_stream_length(uint64_t *total, const ss_stream *st) {
    if (total) *total = st ? st->N : 0;
    return st ? st->S : 0;
}

/* The example holding virtual position p (p < N): the last j with vstart[j] <= p,
 * which skips empty examples. */
static uint64_t locate(const ss_stream *st, uint64_t p) {
    uint64_t lo = 0, hi = st->n_ex;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (st->vstart[mid] <= p)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Write n rows of the virtual stream from position p to dst (dense) and their
 * example-start flags to starts (may be NULL); rows at positions >= valid_end
 * are padding. */
static int gather(const ss_stream *st, uint64_t p, uint64_t valid_end, uint64_t n,
                  unsigned char *dst, uint8_t *starts) {
    uint64_t v = valid_end > p ? valid_end - p : 0;
    if (v > n) v = n;
    uint64_t done = 0, eos = st->o.eos ? 1 : 0;
    uint64_t j = v ? locate(st, p) : 0;
    while (done < v) {
        while (st->vstart[j + 1] <= p) j++; /* skip empty examples */
        uint64_t off = p - st->vstart[j];
        uint64_t len = st->vstart[j + 1] - st->vstart[j] - eos;
        if (off < len) {
            uint64_t take = len - off < v - done ? len - off : v - done;
            ss_view view;
            int rc = ss_get_range(&view, st->s, st->field, example_at(st, j), off, off + take);
            if (rc) return ss__context(rc, "stream position %llu", (unsigned long long)p);
            ss__cast(dst + done * st->out_rb, st->dst_dtype, view.data, st->src_dtype, take,
                     st->row_el, NULL);
            if (starts) {
                memset(starts + done, 0, (size_t)take);
                starts[done] = off == 0;
            }
            done += take;
            p += take;
        } else { /* the <eos> row */
            memcpy(dst + done * st->out_rb, st->eos_row, st->out_rb);
            if (starts) starts[done] = off == 0; /* an empty example is only its <eos> */
            done++;
            p++;
        }
    }
    for (uint64_t q = v; q < n; q++) memcpy(dst + q * st->out_rb, st->pad_row, st->out_rb);
    if (starts && n > v) memset(starts + v, 0, (size_t)(n - v));
    return 0;
}

/* Stream b of batch `index`: T rows of input, target, mask and starts, dense. */
static int one_stream(const ss_stream *st, uint64_t b, uint64_t index, uint64_t T,
                      unsigned char *in, unsigned char *tg, uint8_t *mask, uint8_t *starts) {
    uint64_t S = st->S, k = st->o.shift, first = b * S;
    uint64_t len = first >= st->N ? 0 : (st->N - first < S ? st->N - first : S);
    uint64_t j0 = index * st->o.steps; /* step within the stream */
    /* valid input steps: j + k < len */
    uint64_t valid = len > k ? len - k : 0;
    int rc = gather(st, first + j0, first + valid, T, in, starts);
    if (rc == 0 && k) rc = gather(st, first + j0 + k, first + len, T, tg, NULL);
    /* targets beyond the valid inputs are padding too */
    uint64_t nv = valid > j0 ? (valid - j0 < T ? valid - j0 : T) : 0;
    for (uint64_t q = nv; rc == 0 && k && q < T; q++)
        memcpy(tg + q * st->out_rb, st->pad_row, st->out_rb);
    if (mask)
        for (uint64_t q = 0; q < T; q++) mask[q] = q < nv;
    return rc;
}

int ss_stream_read_into(ss_stream_batch *out, void *input, void *target, uint8_t *mask,
                        uint8_t *starts, ss_stream *st, uint64_t index) {
    if (!st || !out || !input || (!target && st->o.shift))
        return ss__fail(SS_EINVAL, "ss_stream_read: NULL argument");
    if (!st->o.shift) target = NULL; /* input only */
    memset(out, 0, sizeof *out);
    if (index >= st->nbatches)
        return ss__fail(SS_ERANGE, "stream: batch %llu is out of range (%llu batches)",
                        (unsigned long long)index, (unsigned long long)st->nbatches);
    uint64_t B = st->o.batch, T = st->o.steps, rb = st->out_rb;
    if (st->o.tail == SS_STREAM_TAIL_SHORT) {
        uint64_t usable = st->S - st->o.shift, left = usable - index * T;
        if (left < T) T = left;
    }
    /* Time-major output goes through [B][T] staging, transposed per stream; its
     * mask is computed from the stream lengths afterwards. */
    int tm = st->o.time_major;
    unsigned char *in = tm ? st->stage_in : input, *tg = tm ? st->stage_tg : target;
    uint8_t *sts = tm ? st->stage_starts : starts;
    int *rcs = st->rcs;
    uint64_t pbytes = st->o.parallel_bytes ? st->o.parallel_bytes : SS_STREAM_PARALLEL_BYTES;
    int threads = B > 1 && 2 * B * T * rb >= pbytes ? st->o.threads : 1;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (uint64_t b = 0; b < B; b++) {
        rcs[b] = one_stream(st, b, index, T, in + b * T * rb, tg ? tg + b * T * rb : NULL,
                            (!tm && mask) ? mask + b * T : NULL, sts ? sts + b * T : NULL);
        if (tm && rcs[b] == 0) {
            unsigned char *din = input, *dtg = target;
            for (uint64_t q = 0; q < T; q++) {
                memcpy(din + (q * B + b) * rb, in + (b * T + q) * rb, rb);
                if (dtg) memcpy(dtg + (q * B + b) * rb, tg + (b * T + q) * rb, rb);
                if (starts) starts[q * B + b] = sts[b * T + q];
            }
        }
    }
    for (uint64_t b = 0; b < B; b++)
        if (rcs[b]) /* rerun in this thread: the message is thread-local */
            return one_stream(st, b, index, T, in + b * T * rb, tg ? tg + b * T * rb : NULL, NULL,
                              NULL);
    if (tm && mask) {
        /* mask[q][b] = step q of stream b is real */
        uint64_t S = st->S, k = st->o.shift, j0 = index * st->o.steps;
        for (uint64_t b = 0; b < B; b++) {
            uint64_t first = b * S;
            uint64_t len = first >= st->N ? 0 : (st->N - first < S ? st->N - first : S);
            uint64_t valid = len > k ? len - k : 0;
            for (uint64_t q = 0; q < T; q++) mask[q * B + b] = j0 + q < valid;
        }
    }
    out->index = index;
    out->batch = B;
    out->steps = T;
    out->dtype = st->dst_dtype;
    uint32_t d = 0;
    out->shape[d++] = tm ? T : B;
    out->shape[d++] = tm ? B : T;
    for (uint32_t q = 0; q < st->ndim; q++) out->shape[d++] = st->dims[q];
    out->ndim = d;
    out->input = input;
    out->target = target;
    out->mask = mask;
    out->starts = starts;
    out->data_bytes = B * T * rb;
    out->flag_bytes = B * T;
    return 0;
}

int ss_stream_read(ss_stream_batch *out, ss_stream *st, uint64_t index) {
    if (!st) return ss__fail(SS_EINVAL, "ss_stream_read: NULL stream");
    return ss_stream_read_into(out, st->input, st->target, st->mask, st->starts, st, index);
}
