/* SPDX-License-Identifier: BSD-2-Clause */
/* lm_pack.c - packed LM samples: whole documents put into rows of L tokens
 * by first-fit decreasing over windows of the shuffled order, and reading
 * such rows (see seqstore/lm.h, SS_LM_PACKED). */
#include "lm_internal.h"
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A window's scratch, allocated once for W documents. */
typedef struct pack_scratch {
    uint64_t cap;     /* W */
    uint64_t *key;    /* remainders: length << 32 | position in the window */
    uint32_t *bin;    /* the row each sorted remainder went to */
    uint32_t *count;  /* remainders per row, then where each row's start */
    uint32_t *tree;   /* max-tree of the rows' free room, leaves at p2 */
    uint64_t p2;
} pack_scratch;

static int grow(void **p, uint64_t *cap, uint64_t need, size_t size) {
    if (need <= *cap) return 0;
    uint64_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * size);
    if (!q) return ss__fail(SS_ENOMEM, "lm: out of memory for %" PRIu64 " packed pieces", need);
    *p = q;
    *cap = c;
    return 0;
}

static int push_piece(ss_lm *lm, uint64_t d, uint64_t off, uint64_t len) {
    uint64_t c = lm->piece_cap;
    int rc = grow((void **)&lm->piece_doc, &c, lm->npieces + 1, sizeof *lm->piece_doc);
    c = lm->piece_cap;
    if (!rc) rc = grow((void **)&lm->piece_off, &c, lm->npieces + 1, sizeof *lm->piece_off);
    c = lm->piece_cap;
    if (!rc) rc = grow((void **)&lm->piece_len, &c, lm->npieces + 1, sizeof *lm->piece_len);
    if (rc) return rc;
    lm->piece_cap = c;
    lm->piece_doc[lm->npieces] = (uint32_t)d;
    lm->piece_off[lm->npieces] = (uint32_t)off;
    lm->piece_len[lm->npieces] = (uint32_t)len;
    lm->npieces++;
    return 0;
}

/* Close the row under construction: the next row starts at the next piece. */
static int end_row(ss_lm *lm, uint64_t used) {
    int rc = grow((void **)&lm->row_first, &lm->row_cap, lm->nsamples + 2, sizeof *lm->row_first);
    if (rc) return rc;
    lm->nsamples++;
    lm->row_first[lm->nsamples] = lm->npieces;
    lm->padding += lm->o.seq_length - used;
    return 0;
}

static int by_length_desc(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    uint64_t lx = x >> 32, ly = y >> 32;
    if (lx != ly) return lx > ly ? -1 : 1;
    return (x & 0xffffffffu) < (y & 0xffffffffu) ? -1 : (x != y);
}

/* The leftmost row with at least `len` free tokens (rows not yet opened
 * have L), its room reduced by len. */
static uint64_t first_fit(pack_scratch *w, uint32_t len) {
    uint64_t i = 1;
    while (i < w->p2) i = w->tree[2 * i] >= len ? 2 * i : 2 * i + 1;
    w->tree[i] -= len;
    for (uint64_t j = i / 2; j >= 1; j /= 2)
        w->tree[j] = w->tree[2 * j] > w->tree[2 * j + 1] ? w->tree[2 * j] : w->tree[2 * j + 1];
    return i - w->p2;
}

/* Pack documents doc[0..m) (one window): full pieces as rows, then the
 * remainders first-fit decreasing. */
static int pack_window(ss_lm *lm, const uint32_t *doc, uint64_t m, pack_scratch *w) {
    const uint64_t L = lm->o.seq_length;
    uint64_t nrem = 0;
    int rc = 0;
    for (uint64_t p = 0; p < m && !rc; p++) {
        uint64_t d = (uint64_t)doc[p], size = lm->sizes[d];
        if (size > L) lm->split++;
        for (uint64_t off = 0; off + L <= size && !rc; off += L) {
            rc = push_piece(lm, d, off, L);
            if (!rc) rc = end_row(lm, L);
        }
        if (size % L) w->key[nrem++] = (size % L) << 32 | p;
    }
    if (rc || nrem == 0) return rc;
    qsort(w->key, nrem, sizeof *w->key, by_length_desc);
    for (w->p2 = 1; w->p2 < nrem; w->p2 *= 2) {}
    for (uint64_t i = 0; i < 2 * w->p2; i++) w->tree[i] = (uint32_t)L;
    uint64_t rows = 0;
    for (uint64_t i = 0; i < nrem; i++) {
        w->bin[i] = (uint32_t)first_fit(w, (uint32_t)(w->key[i] >> 32));
        if (w->bin[i] + 1 > rows) rows = w->bin[i] + 1;
    }
    /* each row's pieces in the order they were put there */
    memset(w->count, 0, (rows + 1) * sizeof *w->count);
    for (uint64_t i = 0; i < nrem; i++) w->count[w->bin[i] + 1]++;
    for (uint64_t r = 0; r < rows; r++) w->count[r + 1] += w->count[r];
    uint64_t base = lm->npieces;
    for (uint64_t i = 0; i < nrem && !rc; i++) rc = push_piece(lm, 0, 0, 0);
    for (uint64_t i = 0; i < nrem; i++) {
        uint64_t j = base + w->count[w->bin[i]]++;
        uint64_t d = (uint64_t)doc[w->key[i] & 0xffffffffu], len = w->key[i] >> 32;
        lm->piece_doc[j] = (uint32_t)d;
        lm->piece_off[j] = (uint32_t)(lm->sizes[d] - len);
        lm->piece_len[j] = (uint32_t)len;
    }
    for (uint64_t r = 0; r < rows && !rc; r++) {
        lm->npieces = base + w->count[r]; /* count[r] is now where row r ends */
        rc = end_row(lm, L - w->tree[w->p2 + r]);
    }
    return rc;
}

/* One epoch: the documents' order, its windows, its rows' shuffle. */
static int pack_epoch(ss_lm *lm, uint64_t e, ss_mt19937 *mt, pack_scratch *w) {
    const uint64_t n = lm->ndocs, W = w->cap;
    uint64_t cap = e * n;
    int rc = grow((void **)&lm->doc, &cap, (e + 1) * n, sizeof *lm->doc);
    if (rc) return rc;
    uint32_t *doc = lm->doc + e * n;
    for (uint64_t d = 0; d < n; d++) doc[d] = (uint32_t)d;
    ss__mt_shuffle_u32(mt, doc, n);
    uint64_t first = lm->nsamples;
    for (uint64_t p = 0; p < n && !rc; p += W)
        rc = pack_window(lm, doc + p, n - p < W ? n - p : W, w);
    if (rc) return rc;
    uint64_t rows = lm->nsamples - first, scap = first;
    rc = grow((void **)&lm->shuffle, &scap, lm->nsamples, sizeof *lm->shuffle);
    if (rc) return rc;
    for (uint64_t k = 0; k < rows; k++) lm->shuffle[first + k] = (int64_t)k;
    ss__mt_shuffle_i64(mt, lm->shuffle + first, rows);
    for (uint64_t k = 0; k < rows; k++) lm->shuffle[first + k] += (int64_t)first;
    return 0;
}

int ss__lm_pack_build(ss_lm *lm) {
    uint64_t W = lm->o.pack_window ? lm->o.pack_window : SS_LM_PACK_WINDOW_DEFAULT;
    if (W > lm->ndocs) W = lm->ndocs;
    pack_scratch w = {W, NULL, NULL, NULL, NULL, 1};
    uint64_t p2 = 1;
    while (p2 < W) p2 *= 2;
    w.key = malloc(W * sizeof *w.key);
    w.bin = malloc(W * sizeof *w.bin);
    w.count = malloc((W + 1) * sizeof *w.count);
    w.tree = malloc(2 * p2 * sizeof *w.tree);
    lm->row_first = malloc(sizeof *lm->row_first);
    int rc = 0;
    if (!w.key || !w.bin || !w.count || !w.tree || !lm->row_first)
        rc = ss__fail(SS_ENOMEM, "lm: out of memory for a packing window of %" PRIu64, W);
    if (!rc) lm->row_first[0] = 0;
    uint64_t want = lm->o.num_samples, E = lm->o.num_epochs ? lm->o.num_epochs : 1;
    ss_mt19937 mt;
    ss__mt_seed(&mt, (uint32_t)lm->o.seed);
    for (uint64_t e = 0; !rc && (e < E || lm->nsamples < want); e++) {
        if (e >= (1ull << 31))
            rc = ss__fail(SS_EINVAL, "lm: num_samples %" PRIu64 " needs too many epochs", want);
        if (!rc) rc = pack_epoch(lm, e, &mt, &w);
        lm->epochs = e + 1;
    }
    lm->tokens_per_epoch = 0;
    for (uint64_t d = 0; d < lm->ndocs; d++) lm->tokens_per_epoch += lm->sizes[d];
    free(w.key);
    free(w.bin);
    free(w.count);
    free(w.tree);
    return rc;
}

int ss__lm_pack_row(const ss_lm_batch *out, const ss_lm *lm, int64_t *buf, uint64_t k,
                    uint64_t r) {
    const uint64_t L = lm->o.seq_length, at = r * L;
    const int64_t eod = lm->o.eod;
    int32_t *cu = out->cu_seqlens ? out->cu_seqlens + r * (L + 1) : NULL;
    uint64_t pos = 0;
    int32_t seg = 0;
    for (uint64_t j = lm->row_first[k]; j < lm->row_first[k + 1]; j++, seg++) {
        uint64_t d = lm->piece_doc[j], off = lm->piece_off[j], len = lm->piece_len[j];
        int last = off + len == lm->sizes[d]; /* the piece ends the document */
        int rc = ss__lm_read_part(buf, lm, d, off, len + !last);
        if (rc) return rc;
        if (last) buf[len] = eod;
        if (out->tokens) memcpy(out->tokens + at + pos, buf, len * sizeof *buf);
        if (out->labels) memcpy(out->labels + at + pos, buf + 1, len * sizeof *buf);
        for (uint64_t t = 0; t < len; t++) {
            if (out->loss_mask) out->loss_mask[at + pos + t] = 1.0f;
            if (out->position_ids) out->position_ids[at + pos + t] = (int64_t)t;
            if (out->segment_ids) out->segment_ids[at + pos + t] = seg;
        }
        if (last && out->loss_mask) out->loss_mask[at + pos + len - 1] = 0.0f;
        if (cu) cu[seg] = (int32_t)pos;
        pos += len;
    }
    if (pos < L) {
        if (cu) cu[seg] = (int32_t)pos;
        for (uint64_t t = pos; t < L; t++) {
            if (out->tokens) out->tokens[at + t] = eod;
            if (out->labels) out->labels[at + t] = eod;
            if (out->loss_mask) out->loss_mask[at + t] = 0.0f;
            if (out->position_ids) out->position_ids[at + t] = (int64_t)(t - pos);
            if (out->segment_ids) out->segment_ids[at + t] = seg;
        }
        seg++;
    }
    if (cu)
        for (uint64_t t = (uint64_t)seg; t <= L; t++) cu[t] = (int32_t)L;
    if (out->nsegments) out->nsegments[r] = seg;
    return 0;
}
