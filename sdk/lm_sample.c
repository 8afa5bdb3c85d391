/* SPDX-License-Identifier: BSD-2-Clause */
/* lm_sample.c - reading LM samples: tokens, labels and Megatron's masks and
 * position ids, with the document boundaries as varlen segments (see
 * seqstore/lm.h). */
/* The per-token loops of a row (document starts, position ids, the
 * cu_seqlens fill) vectorised, as cast.c's kernels are: serving 8 x 4096
 * tokens was 0.38x memcpy with them scalar. */
#pragma GCC optimize("O3")
#include "lm_internal.h"
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int ss__lm_read_part(int64_t *dst, const ss_lm *lm, uint64_t d, uint64_t off, uint64_t len) {
    uint64_t stored = ss__lm_size(lm, d) - ((lm->o.flags & SS_LM_APPEND_EOD) != 0);
    uint64_t end = off + len, real = end < stored ? end : stored;
    if (real > off) {
        ss_view v;
        int rc = ss_get_range(&v, lm->store, lm->field, d, off, real);
        if (rc == SS_ERANGE)
            return ss__fail(SS_ECORRUPT, "lm: example %" PRIu64 " is shorter than its stored "
                            "length %" PRIu64, d, stored);
        if (rc) return rc;
        lm->widen(dst, v.data, real - off);
    }
    for (uint64_t t = real > off ? real : off; t < end; t++) dst[t - off] = lm->o.eod;
    return 0;
}

/* Sample k's bounds in the sample index: (position in doc, offset) of its
 * first and last token, checked for a stored index, whose values are its
 * own: in order and inside the document index. */
static int bounds(int64_t *b, const ss_lm *lm, uint64_t k) {
    const int64_t *at = lm->sample + 2 * k;
    int rc = ss__lm_need(lm, at, 4 * sizeof *at);
    if (rc) return rc;
    memcpy(b, at, 4 * sizeof *at);
    if (b[0] < 0 || b[1] < 0 || b[2] < b[0] || (b[2] == b[0] && b[3] < b[1]) || b[3] < 0 ||
        (uint64_t)b[2] >= lm->epochs * lm->ndocs)
        return ss__fail(SS_ECORRUPT, "lm: stored index '%s': sample %" PRIu64 " spans %" PRId64
                        ":%" PRId64 " to %" PRId64 ":%" PRId64, ss__lm_name(lm), k, b[0], b[1],
                        b[2], b[3]);
    return ss__lm_need(lm, lm->doc + b[0], (uint64_t)(b[2] - b[0] + 1) * sizeof *lm->doc);
}

/* The L + 1 tokens of unshuffled sample k (Megatron's
 * _query_document_sample_shuffle_indices): the first L into row (the
 * caller's tokens, written once), the last into *last. */
static int gather(int64_t *row, int64_t *last, const ss_lm *lm, uint64_t k) {
    const uint64_t L = lm->o.seq_length;
    int64_t b[4];
    int rc = bounds(b, lm, k);
    if (rc) return rc;
    uint64_t pos = 0;
    for (int64_t p = b[0]; p <= b[2]; p++) {
        uint64_t d = (uint64_t)lm->doc[p];
        if (d >= lm->ndocs) /* only a damaged stored index */
            return ss__fail(SS_ECORRUPT, "lm: stored index '%s': document %" PRIu64 " of %" PRIu64,
                            ss__lm_name(lm), d, lm->ndocs);
        uint64_t size = ss__lm_size(lm, d);
        uint64_t off = p == b[0] ? (uint64_t)b[1] : 0;
        uint64_t stop = p == b[2] ? (uint64_t)b[3] + 1 : size;
        if (stop <= off) continue;
        if (stop > size || stop - off > lm->o.seq_length + 1 - pos) /* only a damaged stored index */
            return ss__fail(SS_ECORRUPT, "lm: stored index '%s': sample %" PRIu64 " is longer "
                            "than L + 1 or its documents", ss__lm_name(lm), k);
        uint64_t len = stop - off, head = pos + len <= L ? len : L - pos;
        rc = ss__lm_read_part(row + pos, lm, d, off, head);
        if (!rc && head < len) rc = ss__lm_read_part(last, lm, d, off + head, 1);
        if (rc) return rc;
        pos += len;
    }
    if (pos != lm->o.seq_length + 1) /* only a damaged stored index */
        return ss__fail(SS_ECORRUPT, "lm: stored index '%s': sample %" PRIu64 " is shorter than "
                        "L + 1", ss__lm_name(lm), k);
    return 0;
}

/* Ask the CPU for the tokens of sample i (the next row) while this row is
 * written: a row's documents lie at random in the store, so their first
 * bytes otherwise come from DRAM on demand, a cache miss for each
 * document (widening was a quarter of serving 8 x 4096 tokens). Quiet:
 * a failure here is the real read's to report. */
static void prefetch_sample(const ss_lm *lm, uint64_t i) {
    uint64_t k;
    int64_t b[4];
    if (i >= lm->nsamples || ss__lm_shuffled(&k, lm, i) || bounds(b, lm, k)) return;
    for (int64_t p = b[0]; p <= b[2] && p - b[0] < 256; p++) {
        uint64_t d = lm->doc[p];
        ss_view v;
        if (d >= lm->ndocs || ss_get(&v, lm->store, lm->field, d)) return;
        const char *c = v.data;
        uint64_t from = p == b[0] ? (uint64_t)b[1] : 0, to = p == b[2] ? (uint64_t)b[3] + 1 : v.length;
        if (to > v.length) to = v.length;
        for (uint64_t at = from * v.row_bytes; at < to * v.row_bytes; at += 64)
            __builtin_prefetch(c + at);
    }
}

int ss__lm_shuffled(uint64_t *k, const ss_lm *lm, uint64_t i) {
    int rc = ss__lm_need(lm, lm->shuffle + i, sizeof *lm->shuffle);
    if (rc) return rc;
    *k = (uint64_t)lm->shuffle[i];
    if (*k >= lm->nsamples) /* only a damaged stored index */
        return ss__fail(SS_ECORRUPT, "lm: stored index '%s': sample %" PRIu64 " shuffled to %"
                        PRIu64 " of %" PRIu64, ss__lm_name(lm), i, *k, lm->nsamples);
    return 0;
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define LM_KERNEL_ATTR __attribute__((target_clones("avx2", "default")))
#else
#define LM_KERNEL_ATTR
#endif

/* The document starts of a row (after each eod among tokens[0..L-1)) into
 * starts[1..], starts[0] = 0; returns their count. Eods are rare: blocks
 * of 16 tokens without one are passed with a vector compare. */
LM_KERNEL_ATTR static uint64_t doc_starts(int32_t *starts, const int64_t *buf, uint64_t m,
                                          int64_t eod) {
    uint64_t n = 1, t = 0;
    starts[0] = 0;
    for (; t + 16 <= m; t += 16) {
        int any = 0;
        for (int j = 0; j < 16; j++) any |= buf[t + j] == eod;
        if (!any) continue;
        for (int j = 0; j < 16; j++)
            if (buf[t + j] == eod) starts[n++] = (int32_t)(t + j + 1);
    }
    for (; t < m; t++)
        if (buf[t] == eod) starts[n++] = (int32_t)(t + 1);
    return n;
}

/* p[t] = t - (start of t's segment) for t in [0, starts[n]). */
LM_KERNEL_ATTR static void reset_positions(int64_t *p, const int32_t *starts, uint64_t n) {
    for (uint64_t k = 0; k < n; k++) {
        int64_t s0 = starts[k], len = starts[k + 1] - s0;
        int64_t *q = p + s0;
        for (int64_t t = 0; t < len; t++) q[t] = t;
    }
}

/* n copies of v at dst. */
LM_KERNEL_ATTR static void fill_i32(int32_t *dst, int32_t v, uint64_t n) {
    for (uint64_t k = 0; k < n; k++) dst[k] = v;
}

/* Row r of `out` from the L + 1 tokens in buf (L) and last; starts is
 * scratch for L + 1 offsets. One pass finds the document starts (after
 * each eod but the last token's), then each output is one tight loop. */
static void fill_row(const ss_lm_batch *out, const ss_lm *lm, const int64_t *buf, int64_t last,
                     int32_t *starts, uint64_t r) {
    const uint64_t L = lm->o.seq_length, at = r * L;
    const unsigned f = lm->o.flags;
    const int64_t eod = lm->o.eod;
    /* documents in the row: starts[0..n), then L */
    uint64_t n = doc_starts(starts, buf, L - 1, eod);
    starts[n] = (int32_t)L;
    if (out->tokens && out->tokens + at != buf) memcpy(out->tokens + at, buf, L * sizeof *buf);
    if (out->labels) {
        memcpy(out->labels + at, buf + 1, (L - 1) * sizeof *buf);
        out->labels[at + L - 1] = last;
    }
    if (out->loss_mask) {
        float *m = out->loss_mask + at;
        for (uint64_t t = 0; t < L; t++) m[t] = 1.0f;
        if (f & SS_LM_EOD_MASK_LOSS)
            for (uint64_t t = 0; t < L; t++)
                if (buf[t] == eod) m[t] = 0.0f;
    }
    if (out->position_ids) {
        int64_t *p = out->position_ids + at;
        if (f & SS_LM_RESET_POSITION_IDS) {
            reset_positions(p, starts, n);
        } else {
            for (uint64_t t = 0; t < L; t++) p[t] = (int64_t)t;
        }
    }
    int att = (f & SS_LM_RESET_ATTENTION_MASK) != 0;
    uint64_t nseg = att ? n : 1;
    if (out->segment_ids) {
        int32_t *g = out->segment_ids + at;
        if (att) {
            for (uint64_t k = 0; k < n; k++)
                for (int32_t t = starts[k]; t < starts[k + 1]; t++) g[t] = (int32_t)k;
        } else {
            memset(g, 0, L * sizeof *g);
        }
    }
    if (out->cu_seqlens) {
        int32_t *cu = out->cu_seqlens + r * (L + 1);
        if (att) memcpy(cu, starts, n * sizeof *cu);
        cu[0] = 0;
        fill_i32(cu + nseg, (int32_t)L, L + 1 - nseg);
    }
    if (out->nsegments) out->nsegments[r] = (int32_t)nseg;
}

int ss_lm_get(const ss_lm_batch *out, const ss_lm *lm, const uint64_t *idx, uint64_t n) {
    if (!out || !lm || (!idx && n)) return ss__fail(SS_EINVAL, "ss_lm_get: NULL argument");
    if (n == 0) return 0;
    int64_t *buf = malloc((lm->o.seq_length + 1) * (sizeof *buf + sizeof(int32_t)));
    int32_t *starts = buf ? (int32_t *)(buf + lm->o.seq_length + 1) : NULL;
    if (!buf) return ss__fail(SS_ENOMEM, "lm: out of memory for a sample");
    int rc = 0;
    for (uint64_t r = 0; r < n && !rc; r++) {
        if (idx[r] >= lm->nsamples) {
            rc = ss__fail(SS_ERANGE, "lm: sample %" PRIu64 " (row %" PRIu64 ") of %" PRIu64,
                          idx[r], r, lm->nsamples);
            break;
        }
        uint64_t k;
        rc = ss__lm_shuffled(&k, lm, idx[r]);
        if (rc) break;
        if (lm->o.layout == SS_LM_PACKED) {
            rc = ss__lm_pack_row(out, lm, buf, k, r);
            continue;
        }
        if (r + 1 < n) prefetch_sample(lm, idx[r + 1]);
        int64_t *row = out->tokens ? out->tokens + r * lm->o.seq_length : buf, last = 0;
        rc = gather(row, &last, lm, k);
        if (!rc) fill_row(out, lm, row, last, starts, r);
    }
    free(buf);
    return rc;
}
