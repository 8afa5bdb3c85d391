/* SPDX-License-Identifier: BSD-2-Clause */
/* window.c - the stateful window reader: sequences, lanes, epochs and the
 * hidden-state carry (truncated BPTT over long signals such as EEG).
 * Collation is in window_batch.c, save/restore in window_save.c. */
#include "window.h"

#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ULL(x) ((unsigned long long)(x))

/* ------------------------------------------------------------ geometry */

/* Windows of a sequence of length L that starts at s (with the tail window of
 * SS_WINDOW_PAD_TAIL). */
uint64_t ss__window_count(const ss_window_reader *r, uint64_t L, uint64_t s) {
    uint64_t full = L >= s + r->W ? (L - s - r->W) / r->S + 1 : 0;
    if (!(r->opt.flags & SS_WINDOW_PAD_TAIL) || r->opt.mode == SS_WINDOW_RANDOM) return full;
    if (full == 0) return L > s + r->O ? 1 : 0;
    uint64_t covered = s + (full - 1) * r->S + r->W;
    return full + (covered < L ? 1 : 0);
}

static int eligible(const ss_window_reader *r, uint64_t L) {
    return ss__window_count(r, L, 0) > 0;
}

static void shuffle(uint64_t *a, uint64_t n, uint64_t seed, uint64_t stream) {
    ss_rng rng;
    ss__rng_seed(&rng, seed, stream);
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = ss__rng_below(&rng, i), t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

static void class_pass_order(ss_window_reader *r, uint32_t c) {
    uint64_t *a = r->class_seq + r->class_off[c], n = r->class_off[c + 1] - r->class_off[c];
    /* each pass starts from the sorted members so that it depends only on
     * (seed, epoch, class, pass) */
    uint64_t k = 0;
    for (uint64_t i = 0; i < r->nelig; i++)
        if (r->seq_class[r->elig[i]] == c) a[k++] = r->elig[i];
    if (r->opt.shuffle)
        shuffle(a, n, r->opt.seed, ss__rng_hash(r->epoch, 0x636c617373ull + c, r->class_pass[c]));
}

void ss__window_start_epoch(ss_window_reader *r, uint64_t epoch) {
    r->epoch = epoch;
    r->ended = 0;
    r->exhausted = 0;
    r->order_pos = 0;
    r->park_head = r->park_n = 0;
    r->windows_out = 0;
    r->batches_in_epoch = 0;
    uint64_t total = 0;
    for (uint64_t q = 0; q < r->nseq; q++) {
        uint64_t L = r->seq_len[q], s = 0;
        if (r->opt.mode == SS_WINDOW_SEQUENTIAL_RANDOM_START && L >= r->W) {
            uint64_t hi = L - r->W < r->S ? L - r->W : r->S; /* min(L - W, W - O) */
            ss_rng rng;
            ss__rng_seed(&rng, r->opt.seed, ss__rng_hash(epoch, r->seq_ex[q], 0x7374617274ull));
            s = ss__rng_below(&rng, hi + 1);
        }
        r->seq_start[q] = s;
        r->seq_nwin[q] = ss__window_count(r, L, s);
        r->seq_cur[q] = 0;
        r->seq_st[q] = r->seq_nwin[q] ? SS_SEQ_NORMAL : SS_SEQ_DONE;
        r->seq_owned[q] = 0;
        total += r->seq_nwin[q];
    }
    for (uint32_t b = 0; b < r->B; b++) r->lane_seq[b] = SS_NONE;
    memcpy(r->order, r->elig, r->nelig * sizeof *r->order);
    if (r->opt.shuffle)
        shuffle(r->order, r->nelig, r->opt.seed, ss__rng_hash(epoch, 0x6f72646572, 0));
    for (uint32_t c = 0; c < r->nclass; c++) {
        r->class_pos[c] = 0;
        r->class_pass[c] = 0;
        class_pass_order(r, c);
    }
    if (r->opt.mode == SS_WINDOW_RANDOM)
        total = r->opt.epoch_windows ? r->opt.epoch_windows : r->full_windows;
    r->epoch_windows = total;
}

/* ------------------------------------------------------------------ open */

static int check_options(const ss_store *s, const ss_window_options *o) {
    if (o->window == 0) return ss__fail(SS_EINVAL, "window reader: window W must be >= 1");
    if (o->overlap >= o->window)
        return ss__fail(SS_EINVAL, "window reader: overlap O = %llu must be < window W = %llu",
                        ULL(o->overlap), ULL(o->window));
    if (o->lanes == 0) return ss__fail(SS_EINVAL, "window reader: lanes B must be >= 1");
    if (o->threads < 0)
        return ss__fail(SS_EINVAL, "window reader: threads = %d (0 is one thread)", o->threads);
    if (o->mode != SS_WINDOW_SEQUENTIAL && o->mode != SS_WINDOW_SEQUENTIAL_RANDOM_START &&
        o->mode != SS_WINDOW_RANDOM)
        return ss__fail(SS_EINVAL, "window reader: unknown mode %d", (int)o->mode);
    if (o->state_dtype && !ss__dtype_valid(o->state_dtype))
        return ss__fail(SS_EINVAL, "window reader: unknown state dtype %d", (int)o->state_dtype);
    if (o->out_dtype && !ss__dtype_valid(o->out_dtype))
        return ss__fail(SS_EINVAL, "window reader: unknown output dtype %d", (int)o->out_dtype);
    if (o->field >= ss_field_count(s))
        return ss__fail(SS_ERANGE, "window reader: field %u out of range (%u fields)", o->field,
                        ss_field_count(s));
    ss_field f;
    ss_field_info(&f, s, o->field);
    if (!f.sequence)
        return ss__fail(SS_ESCHEMA, "window reader: field '%s' is not a sequence field", f.name);
    if (o->label_field != SS_FIELD_NONE) {
        if (o->label_field >= ss_field_count(s))
            return ss__fail(SS_ERANGE, "window reader: label field %u out of range",
                            o->label_field);
        ss_field_info(&f, s, o->label_field);
        if (f.sequence)
            return ss__fail(SS_ESCHEMA, "window reader: label field '%s' is a sequence field",
                            f.name);
    } else if (o->flags & SS_WINDOW_BALANCED) {
        return ss__fail(SS_EINVAL, "window reader: SS_WINDOW_BALANCED needs a label_field");
    }
    if ((o->flags & SS_WINDOW_BALANCED) && o->max_pending > 1)
        return ss__fail(SS_EINVAL, "window reader: SS_WINDOW_BALANCED needs max_pending <= 1");
    if (o->flags & ~(unsigned)SS_WINDOW_FLAGS_ALL)
        return ss__fail(SS_EINVAL, "window reader: unknown flags 0x%x",
                        o->flags & ~(unsigned)SS_WINDOW_FLAGS_ALL);
    if ((o->flags & SS_WINDOW_DROP_LAST) && o->max_pending > 1)
        return ss__fail(SS_EINVAL, "window reader: SS_WINDOW_DROP_LAST needs max_pending <= 1 "
                                   "(with pending batches a short batch is not the last)");
    if (o->prefetch > 1)
        return ss__fail(SS_EINVAL, "window reader: prefetch = %u (0 or 1 batch ahead)",
                        o->prefetch);
    if (o->prefetch && o->max_pending > 1)
        return ss__fail(SS_EINVAL, "window reader: prefetch needs max_pending <= 1 (with more, "
                                   "the next batch depends on which batches are registered "
                                   "when it is asked for)");
    if ((o->flags & SS_WINDOW_REDRAW) &&
        (o->mode == SS_WINDOW_RANDOM || (o->flags & SS_WINDOW_BALANCED)))
        return ss__fail(SS_EINVAL, "window reader: SS_WINDOW_REDRAW needs a sequential mode "
                                   "without SS_WINDOW_BALANCED");
    return 0;
}

static int load_sequences(ss_window_reader *r, const ss_window_options *o) {
    uint64_t count = ss_count(r->store);
    r->nseq = o->examples ? o->n_examples : count;
    uint64_t n = r->nseq ? r->nseq : 1;
    r->seq_ex = malloc(n * sizeof(uint64_t));
    r->seq_len = malloc(n * sizeof(uint64_t));
    r->seq_start = malloc(n * sizeof(uint64_t));
    r->seq_nwin = malloc(n * sizeof(uint64_t));
    r->seq_cur = malloc(n * sizeof(uint64_t));
    r->seq_stamp = calloc(n, sizeof(uint64_t));
    r->seq_st = malloc(n);
    r->seq_owned = malloc(n);
    r->elig = malloc(n * sizeof(uint64_t));
    r->order = malloc(n * sizeof(uint64_t));
    r->parked = malloc(n * sizeof(uint64_t));
    r->hidden = calloc(n, r->H ? r->H : 1);
    if (!r->seq_ex || !r->seq_len || !r->seq_start || !r->seq_nwin || !r->seq_cur ||
        !r->seq_stamp || !r->seq_st || !r->seq_owned || !r->elig || !r->order || !r->parked ||
        !r->hidden)
        return ss__fail(SS_ENOMEM, "window reader: out of memory for %llu sequences", ULL(r->nseq));
    for (uint64_t q = 0; q < r->nseq; q++) {
        uint64_t ex = o->examples ? o->examples[q] : q;
        if (ex >= count)
            return ss__fail(SS_ERANGE, "window reader: example %llu out of range (%llu examples)",
                            ULL(ex), ULL(count));
        r->seq_ex[q] = ex;
        r->seq_len[q] = ss_length(r->store, o->field, ex);
        if (eligible(r, r->seq_len[q])) {
            r->elig[r->nelig++] = q;
            if (r->seq_len[q] >= r->W) r->full_windows += (r->seq_len[q] - r->W) / r->S + 1;
        } else {
            r->too_short++;
        }
    }
    return 0;
}

/* Read every sequence's label; with SS_WINDOW_BALANCED number the classes. */
static int load_labels(ss_window_reader *r, const ss_window_options *o) {
    uint32_t lf = o->label_field;
    r->label_row = ss_field_row_bytes(r->store, lf);
    ss_field f;
    ss_field_info(&f, r->store, lf);
    r->label_dtype = f.dtype;
    if (!(o->flags & SS_WINDOW_BALANCED)) return 0;
    int integer = f.dtype >= SS_U8 && f.dtype <= SS_I64;
    if (!integer || r->label_row != ss_dtype_size(f.dtype))
        return ss__fail(SS_ESCHEMA,
                        "window reader: balanced lanes need a scalar integer label; "
                        "field '%s' is not one",
                        f.name);
    uint64_t n = r->nseq ? r->nseq : 1;
    int64_t *val = malloc(n * sizeof *val), *distinct = malloc(n * sizeof *distinct);
    r->seq_class = calloc(n, sizeof *r->seq_class);
    int rc = (!val || !distinct || !r->seq_class)
                 ? ss__fail(SS_ENOMEM, "window reader: out of memory for labels")
                 : 0;
    uint64_t nd = 0;
    for (uint64_t i = 0; !rc && i < r->nelig; i++) {
        ss_view v;
        rc = ss_get(&v, r->store, lf, r->seq_ex[r->elig[i]]);
        if (rc) break;
        ss__cast(&val[i], SS_I64, v.data, f.dtype, 1, 1, NULL);
        uint64_t lo = 0, hi = nd; /* insert into the sorted distinct values */
        while (lo < hi) {
            uint64_t mid = (lo + hi) / 2;
            if (distinct[mid] < val[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == nd || distinct[lo] != val[i]) {
            memmove(distinct + lo + 1, distinct + lo, (nd - lo) * sizeof *distinct);
            distinct[lo] = val[i];
            nd++;
        }
    }
    if (!rc && nd == 0) rc = ss__fail(SS_EINVAL, "window reader: balanced lanes: no sequence");
    if (!rc && r->B % nd)
        rc = ss__fail(SS_EINVAL,
                      "window reader: balanced lanes: B = %u is not a multiple of the "
                      "%llu classes",
                      r->B, ULL(nd));
    if (!rc) {
        r->nclass = (uint32_t)nd;
        r->class_off = calloc(nd + 1, sizeof *r->class_off);
        r->class_seq = malloc((r->nelig ? r->nelig : 1) * sizeof *r->class_seq);
        r->class_pos = calloc(nd, sizeof *r->class_pos);
        r->class_pass = calloc(nd, sizeof *r->class_pass);
        if (!r->class_off || !r->class_seq || !r->class_pos || !r->class_pass)
            rc = ss__fail(SS_ENOMEM, "window reader: out of memory for classes");
    }
    for (uint64_t i = 0; !rc && i < r->nelig; i++) {
        uint64_t lo = 0, hi = nd;
        while (lo < hi) {
            uint64_t mid = (lo + hi) / 2;
            if (distinct[mid] < val[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        r->seq_class[r->elig[i]] = (uint32_t)lo;
        r->class_off[lo + 1]++;
    }
    for (uint64_t c = 0; !rc && c < nd; c++) {
        uint64_t cnt = r->class_off[c + 1];
        r->class_off[c + 1] += r->class_off[c];
        if (cnt > r->class_max) r->class_max = cnt;
        if (cnt < r->B / nd)
            rc = ss__fail(SS_EINVAL,
                          "window reader: balanced lanes: label %lld has %llu "
                          "sequences, fewer than its %llu lanes",
                          (long long)distinct[c], ULL(cnt), ULL(r->B / nd));
    }
    free(val);
    free(distinct);
    return rc;
}

/* The caller's options by their version (seqstore.h, "Options"): version 1
 * ended at `transforms`, version 2 at `offset_attr`, version 3 at `n_offset`;
 * later fields take their INIT values, except the counts of gain and offset,
 * which versions 1 and 2 did not give: UNCOUNTED (C values are read, as those
 * versions did). */
#define UNCOUNTED SIZE_MAX
static int read_options(ss_window_options *dst, const ss_window_options *o) {
    const ss_window_options init = SS_WINDOW_OPTIONS_INIT;
    *dst = init;
    if (o->version >= 1 && o->version <= 3) {
        memcpy(dst, o,
               o->version == 1   ? offsetof(ss_window_options, gain_attr)
               : o->version == 2 ? offsetof(ss_window_options, n_gain)
                                 : offsetof(ss_window_options, prefetch));
        dst->version = SS_WINDOW_OPTIONS_VERSION;
        if (o->version < 3) dst->n_gain = dst->n_offset = UNCOUNTED;
        return 0;
    }
    if (o->version != SS_WINDOW_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "window reader: options version %u, expected 1..%u", o->version,
                        SS_WINDOW_OPTIONS_VERSION);
    *dst = *o;
    return 0;
}

/* Per-channel gain and offset: given, or from attributes (as the collator's
 * scale_attr), or none. */
static int setup_affine(ss_window_reader *r, const ss_window_options *o) {
    if ((o->gain && o->gain_attr) || (o->offset && o->offset_attr))
        return ss__fail(SS_EINVAL, "window reader: set gain or gain_attr (offset or "
                                   "offset_attr), not both");
    const double *gain = o->gain, *offset = o->offset;
    double *ga = NULL, *oa = NULL;
    int rc = 0;
    for (int k = 0; k < 2; k++) { /* a wrong count would make the collation over-read */
        size_t n = k ? o->n_offset : o->n_gain;
        if (!(k ? offset : gain) || n == UNCOUNTED || n == r->C) continue;
        ss_field f;
        rc = ss_field_info(&f, r->store, o->field);
        return ss__fail(SS_EINVAL,
                        "window reader: %s has %zu values (n_%s), field '%s' has %u channels",
                        k ? "offset" : "gain", n, k ? "offset" : "gain", rc ? "?" : f.name, r->C);
    }
    if (o->gain_attr || o->offset_attr) {
        ga = malloc(2 * (size_t)r->C * sizeof *ga);
        if (!ga) return ss__fail(SS_ENOMEM, "window reader: out of memory");
        oa = ga + r->C;
    }
    if (o->gain_attr) {
        rc = ss_attr_get_f64(ga, r->C, r->store, o->gain_attr);
        gain = ga;
    }
    if (!rc && o->offset_attr) {
        rc = ss_attr_get_f64(oa, r->C, r->store, o->offset_attr);
        offset = oa;
    }
    if (rc) rc = ss__context(rc, "window reader: gain/offset attribute");
    if (!rc && (gain || offset)) {
        rc = ss__affine_init(&r->aff, r->C, gain, offset);
        r->has_aff = rc == 0;
    }
    free(ga);
    return rc;
}

int ss_window_reader_open(ss_window_reader **out, const ss_store *s,
                          const ss_window_options *options) {
    *out = NULL;
    if (!s || !options) return ss__fail(SS_EINVAL, "window reader: NULL store or options");
    ss_window_options oo;
    int rc = read_options(&oo, options);
    if (rc) return rc;
    const ss_window_options *o = &oo;
    rc = check_options(s, o);
    if (rc) return rc;
    ss_window_reader *r = calloc(1, sizeof *r);
    if (!r) return ss__fail(SS_ENOMEM, "window reader: out of memory");
    r->store = s;
    r->opt = *o;
    r->opt.gain = r->opt.offset = NULL;
    r->opt.gain_attr = r->opt.offset_attr = NULL;
    r->opt.initial_state = NULL;
    r->opt.examples = NULL;
    r->W = o->window;
    r->O = o->overlap;
    r->S = o->window - o->overlap;
    r->B = o->lanes;
    ss_field f;
    ss_field_info(&f, s, o->field);
    r->in_dtype = f.dtype;
    r->in_row = (size_t)ss_field_row_bytes(s, o->field);
    r->C = (uint32_t)(r->in_row / ss_dtype_size(f.dtype));
    rc = ss__window_xf_resolve(r, o->transforms); /* sets src_dtype */
    r->out_dtype = o->out_dtype ? o->out_dtype : r->src_dtype;
    r->out_row = (size_t)r->C * ss_dtype_size(r->out_dtype);
    r->H = o->state_size * (o->state_dtype ? ss_dtype_size(o->state_dtype) : 1);
    r->carry = o->mode != SS_WINDOW_RANDOM && !(o->flags & SS_WINDOW_FORGET_STATE) && r->H > 0;
    r->nslots = o->max_pending > 1 ? o->max_pending : 1;
    r->strict = r->nslots == 1;
    r->nbuf = r->nslots + (o->prefetch ? 1 : 0); /* the batch planned ahead has its own */
    r->nthreads = o->threads > 0 ? o->threads : 1; /* 0 = one thread (seqstore.h) */
    if (!rc) rc = setup_affine(r, o);
    if (!rc && r->H) {
        r->init_state = calloc(1, r->H);
        if (!r->init_state)
            rc = ss__fail(SS_ENOMEM, "window reader: out of memory");
        else if (o->initial_state)
            memcpy(r->init_state, o->initial_state, r->H);
    }
    if (!rc) rc = load_sequences(r, o);
    if (!rc && o->label_field != SS_FIELD_NONE) rc = load_labels(r, o);
    if (!rc && o->mode == SS_WINDOW_RANDOM && !(o->flags & SS_WINDOW_BALANCED) && r->nelig < r->B)
        rc = ss__fail(SS_EINVAL,
                      "window reader: RANDOM mode needs at least B = %u sequences of "
                      "length >= W = %llu; %llu have it",
                      r->B, ULL(r->W), ULL(r->nelig));
    if (!rc) {
        r->lane_seq = malloc(r->B * sizeof *r->lane_seq);
        r->cand = malloc((r->nelig ? r->nelig : 1) * sizeof *r->cand);
        if (!r->lane_seq || !r->cand) rc = ss__fail(SS_ENOMEM, "window reader: out of memory");
    }
    if (!rc) rc = ss__window_slots_alloc(r);
    if (!rc) rc = ss__window_xf_alloc(r);
    if (!rc && o->prefetch) rc = ss__window_prefetch_start(r);
    if (rc) {
        ss_window_reader_free(r);
        return rc;
    }
    ss__window_start_epoch(r, 0);
    *out = r;
    return 0;
}

void ss_window_reader_free(ss_window_reader *r) {
    if (!r) return;
    ss__window_prefetch_stop(r);
    ss__window_xf_free(r);
    ss__window_slots_free(r);
    if (r->has_aff) ss__affine_free(&r->aff);
    free(r->init_state);
    free(r->seq_ex);
    free(r->seq_len);
    free(r->seq_start);
    free(r->seq_nwin);
    free(r->seq_cur);
    free(r->seq_stamp);
    free(r->seq_st);
    free(r->seq_owned);
    free(r->elig);
    free(r->order);
    free(r->parked);
    free(r->hidden);
    free(r->seq_class);
    free(r->class_off);
    free(r->class_seq);
    free(r->class_pos);
    free(r->class_pass);
    free(r->lane_seq);
    free(r->cand);
    free(r);
}

int ss_window_reader_info(ss_window_info *out, const ss_window_reader *r) {
    ss__window_prefetch_wait(r);
    memset(out, 0, sizeof *out);
    out->sequences = r->nseq;
    out->eligible = r->nelig;
    out->too_short = r->too_short;
    out->epoch_windows = r->epoch_windows;
    out->epoch = r->epoch;
    /* a batch planned ahead is not out yet */
    out->windows_out = r->windows_out - (r->prep_kind > 0 ? r->prep_planned : 0);
    out->classes = r->nclass;
    out->state_bytes = r->H;
    return 0;
}

static int in_slot(const ss__wslot *sl, uint32_t rows, uint64_t seq) {
    for (uint32_t row = 0; row < rows; row++)
        if (sl->mask[row] && sl->seq[row] == seq) return 1;
    return 0;
}

ss_seq_state ss_window_reader_seq_state(const ss_window_reader *r, uint64_t seq) {
    if (seq >= r->nseq) return SS_SEQ_DONE;
    ss__window_prefetch_wait(r);
    /* as without a batch planned ahead: its sequences are not out yet, those
     * of a batch out are blocked until it is registered */
    for (uint32_t k = 0; k < r->nbuf; k++)
        if (r->slots[k].pending && in_slot(&r->slots[k], r->slots[k].b.size, seq))
            return SS_SEQ_BLOCKED;
    if (r->prep_kind > 0 && in_slot(r->prep, r->prep_rows, seq)) return SS_SEQ_NORMAL;
    return (ss_seq_state)r->seq_st[seq];
}

static int any_pending(const ss_window_reader *r) {
    for (uint32_t k = 0; k < r->nbuf; k++)
        if (r->slots[k].pending) return 1;
    return 0;
}

int ss_window_reader_set_epoch(ss_window_reader *r, uint64_t epoch) {
    ss__window_prefetch_wait(r);
    if (r->carry && any_pending(r))
        return ss__fail(SS_ESTATE, "window reader: set_epoch with a batch not registered");
    ss__window_prep_drop(r);
    for (uint32_t k = 0; k < r->nbuf; k++) r->slots[k].pending = r->slots[k].anticipated = 0;
    r->failed = 0;
    ss__window_start_epoch(r, epoch);
    return 0;
}

/* --------------------------------------------------------------- lanes */

static uint64_t take_from_class(ss_window_reader *r, uint32_t c) {
    uint64_t off = r->class_off[c], n = r->class_off[c + 1] - off;
    for (uint64_t tries = 0; tries <= n; tries++) {
        if (r->class_pos[c] == n) {
            if (n == r->class_max) { /* a largest class is used up: the epoch ends */
                r->exhausted = 1;
                return SS_NONE;
            }
            r->class_pass[c]++; /* smaller classes are recycled to keep up */
            r->class_pos[c] = 0;
            class_pass_order(r, c);
        }
        uint64_t q = r->class_seq[off + r->class_pos[c]++];
        if (r->seq_owned[q]) continue;
        r->seq_cur[q] = 0;
        r->seq_st[q] = SS_SEQ_NORMAL;
        r->seq_owned[q] = 1;
        return q;
    }
    return SS_NONE;
}

static uint64_t take_new(ss_window_reader *r, uint32_t b) {
    if (r->nclass && (r->opt.flags & SS_WINDOW_BALANCED)) {
        uint64_t q = take_from_class(r, b % r->nclass);
        return q;
    }
    uint64_t q = SS_NONE;
    if (r->park_n) {
        q = r->parked[r->park_head];
        r->park_head = (r->park_head + 1) % r->nseq;
        r->park_n--;
    } else if (r->order_pos < r->nelig) {
        q = r->order[r->order_pos++];
    }
    if (q != SS_NONE) r->seq_owned[q] = 1;
    return q;
}

/* Put sequence q with window k into row `row` of slot sl. */
static void put_row(ss_window_reader *r, ss__wslot *sl, uint32_t row, uint32_t lane, uint64_t q,
                    uint64_t start, uint64_t k, int reset) {
    uint64_t L = r->seq_len[q];
    sl->seq[row] = q;
    sl->mask[row] = 1;
    sl->lane[row] = lane;
    sl->example[row] = r->seq_ex[q];
    sl->start[row] = start;
    sl->length[row] = L - start < r->W ? L - start : r->W;
    sl->index[row] = k;
    sl->reset[row] = (uint8_t)reset;
    r->seq_st[q] = SS_SEQ_BLOCKED;
    r->windows_out++;
}

static void put_empty(ss__wslot *sl, uint32_t row, uint32_t lane) {
    sl->seq[row] = SS_NONE;
    sl->mask[row] = 0;
    sl->lane[row] = lane;
    sl->example[row] = sl->start[row] = sl->length[row] = sl->index[row] = 0;
    sl->reset[row] = 0;
}

static uint32_t fill_lanes(ss_window_reader *r, ss__wslot *sl, uint32_t *active) {
    uint32_t rows = 0, act = 0;
    int shrink = (r->opt.flags & SS_WINDOW_SHRINK) != 0;
    int forget = (r->opt.flags & SS_WINDOW_FORGET_STATE) != 0;
    for (uint32_t b = 0; b < r->B; b++) {
        uint64_t q = r->lane_seq[b];
        if (q != SS_NONE && r->seq_st[q] == SS_SEQ_BLOCKED) {
            /* max_pending > 1: serve another eligible sequence meanwhile */
            r->seq_owned[q] = 0;
            q = SS_NONE;
        }
        if (q == SS_NONE) q = take_new(r, b);
        if (r->exhausted) { /* the epoch ends: the rows put so far are not handed out */
            *active = 0;
            return rows;
        }
        r->lane_seq[b] = q;
        if (q == SS_NONE) {
            if (!shrink) put_empty(sl, rows++, b);
            continue;
        }
        uint64_t k = r->seq_cur[q]++;
        put_row(r, sl, rows++, b, q, r->seq_start[q] + k * r->S, k, k == 0 || forget);
        act++;
        if (r->seq_cur[q] == r->seq_nwin[q]) { /* last window out: the lane is free */
            r->lane_seq[b] = SS_NONE;
            r->seq_owned[q] = 0;
        }
    }
    *active = act;
    return rows;
}

/* SS_WINDOW_REDRAW: every round, lane b draws one of the sequences that can
 * give a window now (not done, not blocked, not drawn by a lower lane this
 * round) uniformly by (seed, epoch, batch number) and hands out its next
 * window. */
static uint32_t fill_redraw(ss_window_reader *r, ss__wslot *sl, uint32_t *active) {
    uint64_t n = 0;
    for (uint64_t i = 0; i < r->nelig; i++) {
        uint64_t q = r->elig[i];
        if (r->seq_st[q] == SS_SEQ_NORMAL && r->seq_cur[q] < r->seq_nwin[q]) r->cand[n++] = q;
    }
    ss_rng rng;
    ss__rng_seed(&rng, r->opt.seed, ss__rng_hash(r->epoch, r->batches_in_epoch, 0x7265647277ull));
    int forget = (r->opt.flags & SS_WINDOW_FORGET_STATE) != 0;
    uint32_t rows = 0, act = 0;
    for (uint32_t b = 0; b < r->B; b++) {
        if (n == 0) {
            if (!(r->opt.flags & SS_WINDOW_SHRINK)) put_empty(sl, rows++, b);
            continue;
        }
        uint64_t j = ss__rng_below(&rng, n), q = r->cand[j];
        r->cand[j] = r->cand[--n];
        r->seq_owned[q] = 1; /* never parked: it is drawn again, not queued */
        uint64_t k = r->seq_cur[q]++;
        put_row(r, sl, rows++, b, q, r->seq_start[q] + k * r->S, k, k == 0 || forget);
        act++;
    }
    *active = act;
    return rows;
}

static uint32_t fill_random(ss_window_reader *r, ss__wslot *sl, uint64_t id, uint32_t *active) {
    uint32_t rows = 0, act = 0;
    if (r->windows_out >= r->epoch_windows) {
        *active = 0;
        return 0;
    }
    uint64_t left = r->epoch_windows - r->windows_out;
    uint32_t n = left < r->B ? (uint32_t)left : r->B;
    ss_rng rng;
    ss__rng_seed(&rng, r->opt.seed, ss__rng_hash(r->epoch, r->batches_in_epoch, 0x72616e64ull));
    int balanced = r->nclass && (r->opt.flags & SS_WINDOW_BALANCED);
    for (uint32_t b = 0; b < r->B; b++) {
        if (b >= n) {
            if (!(r->opt.flags & SS_WINDOW_SHRINK)) put_empty(sl, rows++, b);
            continue;
        }
        uint64_t q;
        do { /* distinct sequences within the batch */
            if (balanced) {
                uint32_t c = b % r->nclass;
                uint64_t off = r->class_off[c], cnt = r->class_off[c + 1] - off;
                q = r->class_seq[off + ss__rng_below(&rng, cnt)];
            } else {
                q = r->elig[ss__rng_below(&rng, r->nelig)];
            }
        } while (r->seq_stamp[q] == id + 1);
        r->seq_stamp[q] = id + 1;
        uint64_t start = ss__rng_below(&rng, r->seq_len[q] - r->W + 1);
        put_row(r, sl, rows++, b, q, start, 0, 1);
        act++;
    }
    *active = act;
    return rows;
}

/* The bookkeeping of registering a batch: unblock its sequences (park them
 * with max_pending > 1) and note which rows keep their state. */
void ss__window_release_marks(ss_window_reader *r, ss__wslot *sl) {
    int lanes_mode = r->opt.mode != SS_WINDOW_RANDOM;
    for (uint32_t row = 0; row < sl->b.size; row++) {
        sl->keep[row] = 0;
        if (!sl->mask[row]) continue;
        uint64_t q = sl->seq[row];
        if (!lanes_mode || r->seq_cur[q] < r->seq_nwin[q]) {
            sl->keep[row] = 1;
            r->seq_st[q] = SS_SEQ_NORMAL;
            if (lanes_mode && !r->seq_owned[q]) { /* max_pending > 1: park it */
                r->parked[(r->park_head + r->park_n) % r->nseq] = q;
                r->park_n++;
                r->seq_owned[q] = 1;
            }
        } else {
            r->seq_st[q] = SS_SEQ_DONE;
        }
    }
}

/* Store the final states of a batch and unblock its sequences (already
 * done when the prefetched batch anticipated it). */
static void release(ss_window_reader *r, ss__wslot *sl, const void *states) {
    if (!sl->anticipated) ss__window_release_marks(r, sl);
    for (uint32_t row = 0; states && r->carry && row < sl->b.size; row++)
        if (sl->mask[row] && sl->keep[row])
            memcpy(r->hidden + sl->seq[row] * r->H, (const uint8_t *)states + (uint64_t)row * r->H,
                   r->H);
    sl->pending = 0;
    sl->anticipated = 0;
}

int ss__window_plan(ss_window_reader *r, ss__wslot *sl) {
    if (r->ended) ss__window_start_epoch(r, r->epoch + 1);
    uint32_t npend = 0;
    uint64_t oldest = SS_NONE;
    for (uint32_t k = 0; k < r->nbuf; k++) {
        const ss__wslot *x = &r->slots[k];
        if (x->pending && !x->anticipated) {
            npend++;
            if (x->b.id < oldest) oldest = x->b.id;
        }
    }
    uint64_t id = r->next_id, out0 = r->windows_out;
    uint32_t active = 0, rows;
    if (r->opt.mode == SS_WINDOW_RANDOM)
        rows = fill_random(r, sl, id, &active);
    else if (r->opt.flags & SS_WINDOW_REDRAW)
        rows = fill_redraw(r, sl, &active);
    else
        rows = fill_lanes(r, sl, &active);
    r->prep_planned = r->windows_out - out0;
    r->prep_rows = rows;
    /* DROP_LAST: a batch of fewer than B windows ends the epoch instead (its
     * windows are not handed out; the next epoch resets every cursor). */
    if ((r->opt.flags & SS_WINDOW_DROP_LAST) && active < r->B) active = 0;
    if (active == 0 && npend > 0)
        return ss__fail(SS_ESTATE,
                        "window reader: every remaining sequence is blocked; register "
                        "batch %llu first",
                        ULL(oldest));
    sl->b.id = id;
    sl->b.epoch = r->epoch;
    sl->b.size = active ? rows : 0;
    sl->b.active = active;
    return active ? SS__PREP_BATCH : SS__PREP_END;
}

/* Hand out the planned batch: with prefetch its data is collated already. */
static int hand_out(const ss_window_batch **out, ss_window_reader *r) {
    ss__wslot *sl = r->prep;
    int kind = r->prep_kind;
    if (kind == SS__PREP_BATCH && !r->prep_collated) { /* restored from a save */
        ss__window_prep_collate(r);
    }
    r->prep = NULL;
    r->prep_kind = SS__PREP_NONE;
    if (kind < 0) return ss__fail(kind, "%s", r->prep_msg); /* the plan's SS_ESTATE */
    if (kind == SS__PREP_END) { /* end of the epoch: nothing to hand out or register */
        ss__window_start_epoch(r, r->epoch + 1);
        return ss__fail(SS_ITEROVER, "window reader: epoch %llu is over", ULL(r->epoch - 1));
    }
    if (r->prep_rc) {
        /* the batch's bookkeeping is done but it cannot be handed out: stop */
        r->failed = r->prep_rc;
        snprintf(r->fail_msg, sizeof r->fail_msg, "%s", r->prep_msg);
        return ss__fail(r->failed, "%s", r->fail_msg);
    }
    ss__window_gather_states(r, sl);
    r->next_id++;
    r->batches_in_epoch++;
    sl->pending = 1;
    r->last = sl;
    *out = &sl->b;
    return 0;
}

int ss_window_reader_next(const ss_window_batch **out, ss_window_reader *r) {
    *out = NULL;
    ss__window_prefetch_wait(r);
    if (r->failed) return ss__fail(r->failed, "%s", r->fail_msg);
    uint32_t npend = 0;
    uint64_t oldest = SS_NONE;
    for (uint32_t k = 0; k < r->nbuf; k++) {
        ss__wslot *x = &r->slots[k];
        if (x->pending && !r->carry) release(r, x, NULL);
        if (x->pending) {
            npend++;
            if (x->b.id < oldest) oldest = x->b.id;
        }
    }
    if (npend >= r->nslots)
        return ss__fail(SS_ESTATE,
                        "window reader: the final hidden states of batch %llu are not registered; "
                        "call ss_window_reader_register() first (%u batch%s may be pending)",
                        ULL(oldest), r->nslots, r->nslots == 1 ? "" : "es");
    if (r->prep_kind == SS__PREP_NONE) ss__window_prepare(r);
    int rc = hand_out(out, r);
    if ((rc == 0 || rc == SS_ITEROVER) && r->opt.prefetch) {
        /* the next batch is planned as if this one were registered: in strict
         * mode nothing else can come first */
        for (uint32_t k = 0; k < r->nbuf; k++) {
            ss__wslot *x = &r->slots[k];
            if (x->pending && !x->anticipated) {
                ss__window_release_marks(r, x);
                x->anticipated = 1;
            }
        }
        ss__window_prefetch_request(r);
    }
    return rc;
}

int ss_window_reader_register(ss_window_reader *r, const ss_window_batch *batch,
                              const void *final_states) {
    ss__window_prefetch_wait(r);
    ss__wslot *sl = NULL;
    for (uint32_t k = 0; k < r->nbuf; k++)
        if (batch == &r->slots[k].b) sl = &r->slots[k];
    if (!sl || sl == r->prep)
        return ss__fail(SS_EINVAL, "window reader register: not a batch of this reader");
    if (batch->size == 0) return 0; /* the end-of-epoch marker */
    if (!sl->pending) {
        if (!r->carry) return 0; /* released by the next call already */
        return ss__fail(SS_ESTATE, "window reader register: batch %llu is already registered",
                        ULL(batch->id));
    }
    if (r->carry && !final_states)
        return ss__fail(SS_EINVAL, "window reader register: batch %llu: NULL final states",
                        ULL(batch->id));
    release(r, sl, final_states);
    return 0;
}
