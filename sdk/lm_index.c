/* SPDX-License-Identifier: BSD-2-Clause */
/* lm_index.c - the LM sample index: Megatron-Core's GPTDataset document,
 * sample and shuffle indices built from the stored lengths (see seqstore/lm.h). */
#include "lm_internal.h"
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include <sched.h>
#include <sys/mman.h>

#define LM_INT32_MAX 2147483647ull

/* The end-of-document id from the attribute FIELD.eos (one integer). */
static int eod_from_store(int64_t *out, const ss_store *s, const char *field) {
    char name[SS_MAX_NAME + 8];
    snprintf(name, sizeof name, "%s.eos", field);
    ss_attr a;
    if (ss_attr_get(&a, s, name) != 0)
        return ss__fail(SS_EINVAL,
                        "lm: field '%s' has no attribute '%s': give options.eod (the "
                        "end-of-document id), with SS_LM_APPEND_EOD if documents do not end "
                        "with it",
                        field, name);
    if ((a.type == SS_U32 || a.type == SS_I32) && a.size == 4) {
        uint32_t v;
        memcpy(&v, a.data, 4);
        *out = a.type == SS_U32 ? (int64_t)v : (int64_t)(int32_t)v;
        return 0;
    }
    if ((a.type == SS_U64 || a.type == SS_I64) && a.size == 8) {
        memcpy(out, a.data, 8);
        return 0;
    }
    return ss__fail(SS_EINVAL, "lm: attribute '%s' is not one 32- or 64-bit integer", name);
}

/* An array the index reads at random (the document shuffle, the sample
 * walk): on transparent huge pages where the kernel has them for the
 * asking, which at 10^7 documents saves a TLB miss on most accesses. Freed
 * with free(). */
static void *lm_alloc(uint64_t bytes) {
    const uint64_t huge = 2u << 20;
    if (bytes < 2 * huge) return malloc(bytes ? bytes : 1);
    void *p = NULL;
    if (posix_memalign(&p, huge, (bytes + huge - 1) / huge * huge)) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE); /* advice only */
#endif
    return p;
}

/* Every document's length (eod included) into lm->sizes, and T: from the
 * stored section ss.lengths.FIELD (one array, no index walk), else from
 * the index. Megatron keeps sizes as int32: a longer document is refused,
 * not wrapped. In parallel: 10^7 documents are 0.1 s on one thread. */
static int read_sizes(ss_lm *lm, const ss_store *s) {
    uint64_t n = lm->ndocs, add = (lm->o.flags & SS_LM_APPEND_EOD) != 0;
    uint64_t *sizes = lm->sizes = lm_alloc(n * sizeof *lm->sizes);
    if (!sizes) return ss__fail(SS_ENOMEM, "lm: out of memory for %" PRIu64 " lengths", n);
    const void *data;
    ss_dtype dt;
    uint64_t count;
    int rc = ss_lengths_view(&data, &dt, &count, s, lm->field);
    if (rc == SS_ENOTFOUND) {
        data = sizes, dt = SS_U64; /* converted in place */
        rc = ss_lengths(sizes, s, lm->field, 0, n);
    } else if (!rc && count != n) {
        rc = ss__fail(SS_ECORRUPT, "lm: %" PRIu64 " stored lengths for %" PRIu64 " examples",
                      count, n);
    }
    if (rc) return rc;
    uint64_t t = 0, bad = UINT64_MAX;
#define LM_SIZES_(code, type)                                                                      \
    case code:                                                                                     \
        _Pragma("omp parallel for schedule(static) reduction(+ : t) reduction(min : bad) if (n > 65536)") \
        for (uint64_t d = 0; d < n; d++) {                                                         \
            uint64_t len = (uint64_t)((const type *)data)[d] + add;                                \
            if (len > LM_INT32_MAX && d < bad) bad = d;                                            \
            sizes[d] = len;                                                                        \
            t += len;                                                                              \
        }                                                                                          \
        break;
    switch (dt) {
        LM_SIZES_(SS_U8, uint8_t)
        LM_SIZES_(SS_U16, uint16_t)
        LM_SIZES_(SS_U32, uint32_t)
        LM_SIZES_(SS_U64, uint64_t)
    default:
        return ss__fail(SS_ECORRUPT, "lm: lengths of dtype %d", (int)dt);
    }
#undef LM_SIZES_
    if (bad != UINT64_MAX)
        return ss__fail(SS_EINVAL, "lm: example %" PRIu64 " has %" PRIu64
                        " tokens, more than Megatron's int32 sizes hold", bad, sizes[bad]);
    lm->tokens_per_epoch = t;
    return 0;
}

/* E, S and Megatron's separate_final_epoch rule (gpt_dataset.py). */
static int count_epochs(ss_lm *lm) {
    uint64_t T = lm->tokens_per_epoch, L = lm->o.seq_length, want = lm->o.num_samples;
    if (T < 2) return ss__fail(SS_EINVAL, "lm: %" PRIu64 " tokens per epoch, fewer than 2", T);
    if (lm->o.num_epochs) {
        if (lm->o.num_epochs > (UINT64_MAX / 4) / T)
            return ss__fail(SS_EINVAL, "lm: num_epochs %" PRIu64 " is too large",
                            lm->o.num_epochs);
        want = (lm->o.num_epochs * T - 1) / L;
    }
    if (want > (UINT64_MAX / 4) / L)
        return ss__fail(SS_EINVAL, "lm: num_samples %" PRIu64 " is too large", want);
    uint64_t E = 1;
    if (want) E = (want * L + 1 + T - 1) / T;
    if (E > (UINT64_MAX / 4) / T || E * lm->ndocs / E != lm->ndocs)
        return ss__fail(SS_EINVAL, "lm: %" PRIu64 " epochs of %" PRIu64 " tokens is too many", E,
                        T);
    lm->epochs = E;
    lm->nsamples = (E * T - 1) / L;
    lm->sans_final = lm->nsamples;
    lm->separate = 0;
    if (E > 1) {
        uint64_t sans = ((E - 1) * T - 1) / L, per = (T - 1) / L;
        int64_t from_final = (int64_t)want - (int64_t)sans; /* Megatron's num_samples */
        lm->separate = from_final < (int64_t)(0.80 * (double)per);
        if (lm->separate) lm->sans_final = sans;
    }
    return 0;
}

/* _build_document_index: E copies of 0..n-1, epoch after epoch (then
 * shuffled by the caller, in one or two parts). */
static void document_epochs(uint32_t *doc, uint64_t n, uint64_t e) {
#pragma omp parallel for collapse(2) schedule(static) if (n * e > 65536)
    for (uint64_t k = 0; k < e; k++)
        for (uint64_t d = 0; d < n; d++) doc[k * n + d] = (uint32_t)d;
}

/* helpers.cpp build_sample_idx (drop_last_partial_sequence, extra token):
 * sample k spans from sample[2k] (position in doc, offset) to sample[2k+2]
 * (+ 1 token). Kept statement for statement to keep its edge cases. */
static void sample_index(ss_lm *lm) {
    const int64_t L = (int64_t)lm->o.seq_length, ndoc = (int64_t)(lm->epochs * lm->ndocs);
    const uint32_t *doc = lm->doc;
    const uint64_t *sizes = lm->sizes;
    int64_t *out = lm->sample, k = 0, di = 0, off = 0;
    out[0] = 0, out[1] = 0, k = 1;
    while (k <= (int64_t)lm->nsamples) {
        int64_t remaining = L + 1;
        while (remaining != 0) {
            int64_t len = (int64_t)sizes[doc[di]] - off;
            remaining -= len;
            if (remaining <= 0) {
                off += remaining + len - 1;
                remaining = 0;
            } else {
                if (di == ndoc - 1) { /* unreachable with drop_last: Megatron asserts */
                    off = (int64_t)sizes[doc[di]] - 1;
                    break;
                }
                di++;
                off = 0;
                /* sizes[] is read in the shuffled order: fetch ahead */
                if (di + 16 < ndoc) __builtin_prefetch(sizes + doc[di + 16]);
            }
        }
        out[2 * k] = di, out[2 * k + 1] = off;
        /* a sample starting inside a document (not on its last token,
         * which every sample shares with the next) cuts it */
        if (k < (int64_t)lm->nsamples && off > 0 && off < (int64_t)sizes[doc[di]] - 1 &&
            (k == 1 || out[2 * k - 2] != di || out[2 * k - 1] == 0))
            lm->split++;
        k++;
    }
}

static int check_options(const ss_lm_options *o) {
    if (o->version != SS_LM_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "lm: unknown options version %u (this library knows 1)",
                        o->version);
    unsigned known = SS_LM_APPEND_EOD | SS_LM_RESET_POSITION_IDS | SS_LM_RESET_ATTENTION_MASK |
                     SS_LM_EOD_MASK_LOSS;
    if (o->flags & ~known) return ss__fail(SS_EINVAL, "lm: unknown flags 0x%x", o->flags & ~known);
    if (o->seq_length < 2 || o->seq_length > LM_INT32_MAX - 1)
        return ss__fail(SS_EINVAL, "lm: seq_length %" PRIu64 " is not in 2..2^31-2",
                        o->seq_length);
    if (o->seed > 0xffffffffull)
        return ss__fail(SS_EINVAL, "lm: seed %" PRIu64 " is not in 0..2^32-1 (numpy's "
                        "RandomState)", o->seed);
    if (o->num_samples && o->num_epochs)
        return ss__fail(SS_EINVAL, "lm: num_samples %" PRIu64 " and num_epochs %" PRIu64
                        ": give one", o->num_samples, o->num_epochs);
    if (o->layout != SS_LM_MEGATRON && o->layout != SS_LM_PACKED)
        return ss__fail(SS_EINVAL, "lm: unknown layout %u", o->layout);
    if (o->layout == SS_LM_MEGATRON && o->pack_window)
        return ss__fail(SS_EINVAL, "lm: pack_window %" PRIu64 " needs layout SS_LM_PACKED",
                        o->pack_window);
    if (o->pack_window > LM_INT32_MAX)
        return ss__fail(SS_EINVAL, "lm: pack_window %" PRIu64 " is not in 1..2^31-1",
                        o->pack_window);
    if (o->eod == SS_LM_EOD_FROM_STORE && (o->flags & SS_LM_APPEND_EOD))
        return ss__fail(SS_EINVAL, "lm: SS_LM_APPEND_EOD needs an explicit options.eod");
    return 0;
}

static int check_field(const ss_store *s, uint32_t field, ss_field *fi) {
    int rc = ss_field_info(fi, s, field);
    if (rc) return rc;
    int integer = fi->dtype == SS_U8 || fi->dtype == SS_I8 || fi->dtype == SS_U16 ||
                  fi->dtype == SS_I16 || fi->dtype == SS_U32 || fi->dtype == SS_I32 ||
                  fi->dtype == SS_U64 || fi->dtype == SS_I64;
    if (!fi->sequence || fi->ndim || !integer)
        return ss__fail(SS_EINVAL, "lm: field '%s' is not a sequence of scalar integers",
                        fi->name);
    return 0;
}

/* The sample index as build_sample_idx gives it, computed backwards from
 * the end of positions [lo, hi) of the document index (`end` tokens lie
 * before hi) as their shuffle finalises them (lo + *front, see
 * ss__mt_shuffle_u32_front()): sample k >= 1 starts at token k * L of the
 * concatenation, in the document holding it (Megatron's walk never stops
 * in an empty document), so each is found from the tokens before its
 * document alone, and the result is sample_index()'s whatever the order. */
static void sample_index_behind(ss_lm *lm, uint64_t lo, uint64_t hi, uint64_t end,
                                _Atomic uint64_t *front) {
    const uint64_t L = lm->o.seq_length, S = lm->nsamples;
    const uint32_t *doc = lm->doc;
    const uint64_t *sizes = lm->sizes;
    int64_t *out = lm->sample;
    uint64_t p = hi, cum = end;
    /* the next sample to place, going down: the last starting before `end` */
    uint64_t k = end ? (end - 1) / L : 0;
    if (k > S) k = S;
    while (p > lo) {
        /* the shuffle of [lo, hi) counts its front from lo */
        uint64_t f = lo + atomic_load_explicit(front, memory_order_acquire);
        if (f >= p) {
            sched_yield(); /* the shuffle is ahead of nothing yet */
            continue;
        }
        for (; p > f; p--) {
            if (p > f + 17) __builtin_prefetch(sizes + doc[p - 17]);
            cum -= sizes[doc[p - 1]];
            /* samples after this document's start are in it: they start
             * before the documents after it, which took the later ones */
            for (; k >= 1 && k * L >= cum; k--) {
                out[2 * k] = (int64_t)(p - 1);
                out[2 * k + 1] = (int64_t)(k * L - cum);
            }
        }
    }
}

/* ss_lm_info.split_documents as sample_index() counts it. */
static uint64_t count_split(const ss_lm *lm) {
    uint64_t split = 0;
    const int64_t *sm = lm->sample;
#pragma omp parallel for schedule(static) reduction(+ : split) if (lm->nsamples > 65536)
    for (uint64_t k = 1; k < lm->nsamples; k++) {
        int64_t di = sm[2 * k], off = sm[2 * k + 1];
        if (off > 0 && off < (int64_t)lm->sizes[lm->doc[di]] - 1 &&
            (k == 1 || sm[2 * k - 2] != di || sm[2 * k - 1] == 0))
            split++;
    }
    return split;
}

/* The three indices, in Megatron's order of draws from one RandomState.
 * With two threads or more, one draws (the document shuffles, then the
 * sample shuffle, which does not depend on the sample index) while
 * another computes the sample index behind the document shuffle's front;
 * on one thread, as Megatron does, one after the other. The indices are
 * the same either way (test_lm_threads). */
static int build(ss_lm *lm, const ss_store *sizes_from) {
    uint64_t n = lm->ndocs, E = lm->epochs, S = lm->nsamples, T = lm->tokens_per_epoch;
    lm->doc = lm_alloc(n * E * sizeof *lm->doc);
    lm->sample = lm_alloc(2 * (S + 1) * sizeof *lm->sample);
    lm->shuffle = lm_alloc(S * sizeof *lm->shuffle);
    if (!lm->doc || !lm->sample || !lm->shuffle)
        return ss__fail(SS_ENOMEM, "lm: out of memory for %" PRIu64 " samples of %" PRIu64
                        " epochs", S, E);
    ss_mt19937 mt;
    ss__mt_seed(&mt, (uint32_t)lm->o.seed);
    /* the document index in one or two shuffled parts: [0, cut) and [cut, E n) */
    uint64_t cut = lm->separate ? (E - 1) * n : E * n;
    _Atomic uint64_t front[2];
    atomic_init(&front[0], cut);
    atomic_init(&front[1], n);
    document_epochs(lm->doc, n, E);
    int team = omp_get_max_threads() > 1 && n * E >= 65536 && !omp_in_parallel();
    int sizes_rc = 0;
    char sizes_msg[512] = "";
#pragma omp parallel num_threads(2) if (team)
    {
        int me = omp_get_thread_num(), all = omp_get_num_threads();
        /* the lengths, when not read yet, by the thread that walks them */
        if (sizes_from && me == all - 1) {
            sizes_rc = read_sizes(lm, sizes_from);
            if (!sizes_rc && lm->tokens_per_epoch != T)
                sizes_rc = ss__fail(SS_ECORRUPT, "lm: the lengths sum to %" PRIu64 " tokens, the "
                                    "store's header says %" PRIu64, lm->tokens_per_epoch, T);
            if (sizes_rc) snprintf(sizes_msg, sizeof sizes_msg, "%s", ss_error_message());
        }
        if (me == 0) {
            ss__mt_shuffle_u32_front(&mt, lm->doc, cut, all > 1 ? &front[0] : NULL);
            if (lm->separate)
                ss__mt_shuffle_u32_front(&mt, lm->doc + cut, n, all > 1 ? &front[1] : NULL);
            if (all == 1 && !sizes_rc) sample_index(lm);
            for (uint64_t k = 0; k < S; k++) lm->shuffle[k] = (int64_t)k;
            ss__mt_shuffle_i64(&mt, lm->shuffle, lm->sans_final);
            ss__mt_shuffle_i64(&mt, lm->shuffle + lm->sans_final, S - lm->sans_final);
        }
        if (me == 1 && !sizes_rc) {
            lm->sample[0] = 0, lm->sample[1] = 0;
            sample_index_behind(lm, 0, cut, cut / n * T, &front[0]);
            if (lm->separate) sample_index_behind(lm, cut, E * n, E * T, &front[1]);
        }
    }
    if (sizes_rc) return ss__fail(sizes_rc, "%s", sizes_msg);
    if (team) lm->split = count_split(lm);
    return 0;
}

/* The stored index when there is one for these documents, else build().
 * The stored one needs no lengths when the store's lengths section is the
 * one it was built from: T then comes from the header (O(1) in the
 * documents), and reads take each length from the store's index. */
static int from_stored(ss_lm *lm, const ss_store *s, const char *field, int use_stored) {
    int rc = SS_ENOTFOUND;
    if (use_stored) {
        lm->tokens_per_epoch =
            ss_flat_size(s, lm->field) + ((lm->o.flags & SS_LM_APPEND_EOD) ? lm->ndocs : 0);
        rc = count_epochs(lm);
        /* a failure is said again below, after the lengths' own checks */
        rc = rc ? SS_ENOTFOUND : ss__lm_stored_find(lm, field);
        if (rc == 1) { /* bound by the documents' digest: read their lengths */
            rc = read_sizes(lm, s);
            if (!rc) rc = count_epochs(lm);
            if (!rc) rc = ss__lm_stored_find(lm, field);
            if (rc == 1) rc = SS_ENOTFOUND;
        }
    }
    if (rc != SS_ENOTFOUND) return rc;
    rc = 0;
    if (!lm->sizes) {
        /* T from the store's header: the document shuffle needs no length,
         * so build() reads them beside it (checked against T there) */
        lm->tokens_per_epoch =
            ss_flat_size(s, lm->field) + ((lm->o.flags & SS_LM_APPEND_EOD) ? lm->ndocs : 0);
        if (count_epochs(lm) == 0) return build(lm, s);
        rc = read_sizes(lm, s); /* its failures first, then count_epochs' */
    }
    if (!rc) rc = count_epochs(lm);
    if (!rc) rc = build(lm, NULL);
    return rc;
}

int ss_lm_create(ss_lm **out, const ss_store *s, uint32_t field, const ss_lm_options *options) {
    return ss__lm_create(out, s, field, options, 1);
}

int ss__lm_create(ss_lm **out, const ss_store *s, uint32_t field, const ss_lm_options *options,
                  int use_stored) {
    if (!out) return ss__fail(SS_EINVAL, "ss_lm_create: NULL argument");
    *out = NULL;
    if (!s || !options) return ss__fail(SS_EINVAL, "ss_lm_create: NULL argument");
    ss_field fi;
    int rc = check_options(options);
    if (!rc) rc = check_field(s, field, &fi);
    if (rc) return rc;
    ss_lm *lm = calloc(1, sizeof *lm);
    if (!lm) return ss__fail(SS_ENOMEM, "lm: out of memory");
    lm->o = *options;
    lm->store = s;
    lm->field = field;
    lm->dtype = fi.dtype;
    lm->widen = ss__cast_kernel(SS_I64, fi.dtype);
    lm->ndocs = ss_count(s);
    if (lm->o.eod == SS_LM_EOD_FROM_STORE) rc = eod_from_store(&lm->o.eod, s, fi.name);
    if (!rc && (lm->ndocs == 0 || lm->ndocs > LM_INT32_MAX))
        rc = ss__fail(SS_EINVAL, "lm: %" PRIu64 " documents: Megatron needs 1..2^31-1",
                      lm->ndocs);
    if (!rc && lm->o.layout == SS_LM_PACKED) {
        rc = read_sizes(lm, s);
        if (!rc) rc = ss__lm_pack_build(lm);
    } else if (!rc) {
        rc = from_stored(lm, s, fi.name, use_stored);
    }
    if (rc) {
        ss_lm_free(lm);
        return rc;
    }
    *out = lm;
    return 0;
}

void ss_lm_free(ss_lm *lm) {
    if (!lm) return;
    free(lm->sizes);
    if (!lm->borrowed) {
        free(lm->doc);
        free(lm->shuffle);
        free(lm->sample);
    }
    free(lm->row_first);
    free(lm->piece_doc);
    free(lm->piece_off);
    free(lm->piece_len);
    free((void *)lm->verdict);
    free(lm->stored_name);
    free(lm);
}

int ss_lm_get_info(ss_lm_info *out, const ss_lm *lm) {
    if (!out || !lm) return ss__fail(SS_EINVAL, "ss_lm_get_info: NULL argument");
    out->num_samples = lm->nsamples;
    out->num_epochs = lm->epochs;
    out->tokens_per_epoch = lm->tokens_per_epoch;
    out->documents = lm->ndocs;
    out->eod = lm->o.eod;
    out->separate_final_epoch = lm->separate;
    out->layout = lm->o.layout;
    out->padding_tokens = lm->padding;
    out->split_documents = lm->split;
    out->stored = lm->borrowed;
    return 0;
}

int ss_lm_sample_position(uint64_t *first, uint64_t *offset, uint64_t *shuffled, const ss_lm *lm,
                          uint64_t i) {
    if (!first || !offset || !lm)
        return ss__fail(SS_EINVAL, "ss_lm_sample_position: NULL argument");
    if (i >= lm->nsamples)
        return ss__fail(SS_ERANGE, "lm: sample %" PRIu64 " of %" PRIu64, i, lm->nsamples);
    uint64_t k;
    int rc = ss__lm_shuffled(&k, lm, i);
    if (rc) return rc;
    if (shuffled) *shuffled = k;
    if (lm->o.layout == SS_LM_PACKED) { /* the row's first piece */
        uint64_t j = lm->row_first[k];
        *first = lm->piece_doc[j];
        *offset = lm->piece_off[j];
        return 0;
    }
    rc = ss__lm_need(lm, lm->sample + 2 * k, 2 * sizeof *lm->sample);
    if (rc) return rc;
    int64_t pos = lm->sample[2 * k], off = lm->sample[2 * k + 1];
    if (pos < 0 || (uint64_t)pos >= lm->epochs * lm->ndocs || off < 0) /* only a damaged stored index */
        return ss__fail(SS_ECORRUPT, "lm: stored index '%s': sample %" PRIu64 " starts at %" PRId64
                        ":%" PRId64, ss__lm_name(lm), k, pos, off);
    *first = (uint64_t)pos;
    *offset = (uint64_t)off;
    return 0;
}

uint64_t ss_lm_document(const ss_lm *lm, uint64_t k) {
    if (!lm || k >= lm->epochs * lm->ndocs) return UINT64_MAX;
    if (ss__lm_need(lm, lm->doc + k, sizeof *lm->doc)) return UINT64_MAX;
    if (lm->doc[k] >= lm->ndocs) { /* only a damaged stored index */
        ss__fail(SS_ECORRUPT, "lm: stored index '%s': document %" PRIu32 " of %" PRIu64,
                 ss__lm_name(lm), lm->doc[k], lm->ndocs);
        return UINT64_MAX;
    }
    return (uint64_t)lm->doc[k];
}
