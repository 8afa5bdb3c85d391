/* SPDX-License-Identifier: BSD-2-Clause */
/* sampler.c - epoch orders over a selection, sharded over ranks and workers,
 * deterministic per (seed, epoch) and resumable (see seqstore/sampler.h). */
#include "internal.h"
#include "options_internal.h"
#include "layout.h" /* ss_le64, ss_put_le64 */
#include "rng.h"
#include "sampler_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* RNG stream tags: each random decision has its own stream. */
#define STREAM_SHUFFLE 0x73687566ull /* "shuf" */
#define STREAM_DRAW 0x64726177ull    /* "draw" */
#define STREAM_BLOCKS 0x626c6b73ull  /* "blks" */
#define STREAM_WINDOW 0x77696e64ull  /* "wind" */

#define STATE_MAGIC 0x314C504D41535353ull /* "SSSAMPL1" little-endian */
/* 2: SHUFFLE and BLOCK_SHUFFLE permute by a keyed bijection per position;
 * 1 (seqstore 0.3): they drew Fisher-Yates permutations of the whole epoch,
 * another order, so such a state resumes only the kinds whose order did not
 * change. */
#define STATE_VERSION 2u
#define STATE_BYTES 48 /* magic, version, seed, epoch, position, fingerprint */
#define FINGERPRINT_TAG 1u /* unchanged by version 2: the options' hash alone */

struct ss_sampler {
    ss_sampler_options o; /* normalised copy; o.weights is not kept */
    ss_selection *sel;    /* own copy */
    uint64_t nsel;        /* selected examples */
    uint64_t n;           /* global order length per epoch */
    uint64_t R, W, b, B;  /* ranks, workers, local batch, global batch */
    uint64_t steps;       /* global steps per epoch S */
    uint64_t local_len;   /* examples this rank+worker gets per epoch */
    uint64_t epoch, pos;  /* current epoch and local position in it */
    uint64_t key;         /* SHUFFLE: the epoch's permutation key; BLOCK_SHUFFLE
                             without arrays: the block order's key */
    /* BLOCK_SHUFFLE. The "grouped order" is the selection order, or with a
     * bucket index the selection positions bucket by bucket (base). Blocks
     * sit in "slots" 0..nb-1 in the epoch's shuffled block order. */
    uint64_t nb;           /* blocks */
    uint64_t qlast;        /* without arrays: the slot of the last (shorter) block */
    uint64_t *bstart;      /* nb + 1 block starts in the grouped order; NULL:
                              blocks of block_size (the last one shorter) */
    uint64_t *base;        /* n selection positions (grouped order); NULL: identity */
    uint64_t ng;           /* groups (non-empty buckets); 1 without a bucket index */
    uint64_t *gstart;      /* ng + 1 first blocks of the groups; NULL: one group */
    uint64_t *gwin;        /* ng + 1 first windows of the groups (with gstart) */
    uint64_t *slot_block;  /* with bstart: the block in each slot this epoch */
    uint64_t *slot_start;  /* with bstart: nb + 1 first positions of the slots */
    uint64_t nwin;         /* windows per epoch */
    double *cdf;           /* WEIGHTED: cumulative weights, nsel of them */
    uint64_t last_nonzero; /* WEIGHTED: last position with weight > 0 */
    uint64_t fingerprint;
    uint64_t elastic; /* the fingerprint without R, rank, W, worker and b (with B) */
};

/* The key of the permutation a random decision draws: stream `tag` of the
 * decision's seed argument (see spec/SDK_SECTIONS.md). */
static uint64_t perm_key(uint64_t seed_arg, uint64_t tag) {
    return ss__rng_hash(seed_arg, tag, 0);
}

static uint64_t block_begin(const ss_sampler *s, uint64_t blk) {
    return s->bstart ? s->bstart[blk] : blk * s->o.block_size;
}

static uint64_t group_begin(const ss_sampler *s, uint64_t g) {
    return s->gstart ? s->gstart[g] : 0;
}

static uint64_t group_end(const ss_sampler *s, uint64_t g) {
    return s->gstart ? s->gstart[g + 1] : s->nb;
}

/* First position of slot q (q <= nb) in the epoch's order. Without arrays
 * every block has block_size examples but the last, in slot qlast. */
static uint64_t slot_first(const ss_sampler *s, uint64_t q) {
    if (s->slot_start) return s->slot_start[q];
    uint64_t K = s->o.block_size, short_by = s->nb * K - s->n;
    return q * K - (q > s->qlast ? short_by : 0);
}

/* The slot holding position p (p < n). */
static uint64_t slot_of(const ss_sampler *s, uint64_t p) {
    if (s->slot_start) { /* the last slot whose first position is <= p */
        uint64_t lo = 0, hi = s->nb;
        while (hi - lo > 1) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (s->slot_start[mid] <= p)
                lo = mid;
            else
                hi = mid;
        }
        return lo;
    }
    uint64_t K = s->o.block_size, ql = s->qlast, last_len = s->n - (s->nb - 1) * K;
    if (p < ql * K) return p / K;
    if (p < ql * K + last_len) return ql;
    return ql + 1 + (p - ql * K - last_len) / K;
}

static uint64_t slot_block(const ss_sampler *s, uint64_t q) {
    return s->slot_block ? s->slot_block[q] : ss__rng_permute(q, s->nb, s->key);
}

/* The group of slot q (blocks never cross groups, so neither do slots). */
static uint64_t group_of(const ss_sampler *s, uint64_t q) {
    uint64_t lo = 0, hi = s->ng;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (group_begin(s, mid) <= q)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The window of BLOCK_SHUFFLE positions last looked up, kept by the
 * caller of a run of positions: consecutive positions of a rank's batch
 * mostly share one window, whose bounds and key are then found once. */
enum { WINDOW_CACHE_SLOTS = 8 };
typedef struct window_cache {
    uint64_t ws, we; /* its positions [ws, we); we == 0: none yet */
    uint64_t key;
    uint64_t a, ns;                     /* its slots [a, a + ns) */
    uint64_t blk[WINDOW_CACHE_SLOTS];   /* their blocks, when ns <= WINDOW_CACHE_SLOTS */
} window_cache;

/* The epoch's BLOCK_SHUFFLE order (see sampler.h), at position p: inside
 * group g the blocks are permuted (stream "blks" of H(seed, epoch, g));
 * slots [g0 + tM, g0 + (t+1)M) of the group form a window, numbered over
 * the epoch, whose positions are permuted (stream "wind" of
 * H(seed, epoch, w)). Returns the grouped position of the example there.
 * Pure but for *wc: workers call it concurrently, each with its own cache. */
static uint64_t block_at(const ss_sampler *s, uint64_t p, window_cache *wc) {
    if (!(p >= wc->ws && p < wc->we)) {
        uint64_t M = s->o.window_blocks, q = slot_of(s, p), g = group_of(s, q);
        uint64_t g0 = group_begin(s, g), g1 = group_end(s, g), t = (q - g0) / M;
        uint64_t a = g0 + t * M, e = g1 - a > M ? a + M : g1;
        uint64_t w = (s->gwin ? s->gwin[g] : 0) + t;
        wc->ws = slot_first(s, a);
        wc->we = slot_first(s, e);
        wc->key = perm_key(ss__rng_hash(s->o.seed, s->epoch, w), STREAM_WINDOW);
        wc->a = a;
        wc->ns = e - a;
        for (uint64_t i = 0; i < wc->ns && wc->ns <= WINDOW_CACHE_SLOTS; i++)
            wc->blk[i] = slot_block(s, a + i);
    }
    uint64_t x = wc->ws + ss__rng_permute(p - wc->ws, wc->we - wc->ws, wc->key);
    uint64_t qx = slot_of(s, x);
    uint64_t blk = wc->ns <= WINDOW_CACHE_SLOTS ? wc->blk[qx - wc->a] : slot_block(s, qx);
    return block_begin(s, blk) + (x - slot_first(s, qx));
}

/* The block order of the current epoch: its key, and with arrays the block
 * in every slot and the slots' first positions (O(blocks), no allocation). */
static void block_epoch(ss_sampler *s) {
    if (!s->bstart) {
        s->key = perm_key(ss__rng_hash(s->o.seed, s->epoch, 0), STREAM_BLOCKS);
        s->qlast = ss__rng_unpermute(s->nb - 1, s->nb, s->key);
        return;
    }
    for (uint64_t g = 0; g < s->ng; g++) {
        uint64_t b0 = group_begin(s, g), m = group_end(s, g) - b0;
        uint64_t key = perm_key(ss__rng_hash(s->o.seed, s->epoch, g), STREAM_BLOCKS);
        for (uint64_t i = 0; i < m; i++) s->slot_block[b0 + i] = b0 + ss__rng_permute(i, m, key);
    }
    s->slot_start[0] = 0;
    for (uint64_t q = 0; q < s->nb; q++) {
        uint64_t blk = s->slot_block[q];
        s->slot_start[q + 1] = s->slot_start[q] + s->bstart[blk + 1] - s->bstart[blk];
    }
}

static void make_epoch(ss_sampler *s) {
    if (s->o.kind == SS_SAMPLE_SHUFFLE)
        s->key = perm_key(ss__rng_hash(s->o.seed, s->epoch, 0), STREAM_SHUFFLE);
    else if (s->o.kind == SS_SAMPLE_BLOCK_SHUFFLE && s->n)
        block_epoch(s);
}

/* Store index of selection position i (i < nsel). */
static uint64_t sel_at(const ss_sampler *s, uint64_t i) {
    uint64_t x = 0;
    ss_selection_index(&x, s->sel, i); /* i < count: cannot fail */
    return x;
}

/* Store index at global position p (p < n) of the current epoch. */
static uint64_t global_at(const ss_sampler *s, uint64_t p, window_cache *wc) {
    switch (s->o.kind) {
    case SS_SAMPLE_SHUFFLE:
        return sel_at(s, ss__rng_permute(p, s->n, s->key));
    case SS_SAMPLE_BLOCK_SHUFFLE: {
        uint64_t x = block_at(s, p, wc);
        return sel_at(s, s->base ? s->base[x] : x);
    }
    case SS_SAMPLE_REPLACEMENT: {
        ss_rng r;
        ss__rng_seed(&r, ss__rng_hash(s->o.seed, s->epoch, p), STREAM_DRAW);
        return sel_at(s, ss__rng_below(&r, s->nsel));
    }
    case SS_SAMPLE_WEIGHTED: {
        ss_rng r;
        ss__rng_seed(&r, ss__rng_hash(s->o.seed, s->epoch, p), STREAM_DRAW);
        double x = ss__rng_uniform(&r) * s->cdf[s->nsel - 1];
        uint64_t lo = 0, hi = s->nsel; /* first i with cdf[i] > x */
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (s->cdf[mid] > x)
                hi = mid;
            else
                lo = mid + 1;
        }
        return sel_at(s, lo < s->nsel ? lo : s->last_nonzero);
    }
    default:
        return sel_at(s, p);
    }
}

/* Global position of local position q of this rank and worker. */
static uint64_t local_to_global(const ss_sampler *s, uint64_t q) {
    uint64_t kk = q / s->b, j = q % s->b;
    uint64_t k = kk * s->W + s->o.worker;
    uint64_t p = k * s->B + s->o.rank + s->R * j;
    return p < s->n ? p : p % s->n;
}

static uint64_t hash_double(uint64_t h, double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return ss__rng_hash(h, u, 0x77);
}

static int check_options(const ss_sampler_options *o, uint64_t nsel, uint64_t total) {
    if (o->version != SS_SAMPLER_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "sampler: unknown options version %u", o->version);
    if ((unsigned)o->kind > SS_SAMPLE_BLOCK_SHUFFLE)
        return ss__fail(SS_EINVAL, "sampler: unknown kind %d", (int)o->kind);
    if (o->rank >= o->world_size)
        return ss__fail(SS_EINVAL, "sampler: rank %u >= world_size %u", o->rank, o->world_size);
    if (o->worker >= o->num_workers)
        return ss__fail(SS_EINVAL, "sampler: worker %u >= num_workers %u", o->worker,
                        o->num_workers);
    if ((uint64_t)o->world_size * o->batch_size / o->world_size != o->batch_size)
        return ss__fail(SS_EINVAL, "sampler: world_size * batch_size overflows");
    int draws = o->kind == SS_SAMPLE_REPLACEMENT || o->kind == SS_SAMPLE_WEIGHTED;
    if (draws && nsel == 0 && o->num_samples)
        return ss__fail(SS_EINVAL,
                        "sampler: cannot draw %" PRIu64 " samples from an empty "
                        "selection",
                        o->num_samples);
    if (o->kind == SS_SAMPLE_WEIGHTED && !o->weights && nsel)
        return ss__fail(SS_EINVAL, "sampler: kind WEIGHTED needs weights");
    /* Options of other kinds would be silently ignored: refuse them. */
    if (!draws && o->num_samples)
        return ss__fail(SS_EINVAL, "sampler: num_samples applies to kinds REPLACEMENT and "
                                   "WEIGHTED only");
    if (o->kind != SS_SAMPLE_WEIGHTED && o->weights)
        return ss__fail(SS_EINVAL, "sampler: weights apply to kind WEIGHTED only");
    int v2 = o->version >= 2;
    if (o->kind != SS_SAMPLE_BLOCK_SHUFFLE &&
        (o->block_size || o->window_blocks || (v2 && (o->block_bytes || o->store || o->bucket))))
        return ss__fail(SS_EINVAL, "sampler: block_size, window_blocks, block_bytes, store and "
                                   "bucket apply to kind BLOCK_SHUFFLE only");
    if (o->kind != SS_SAMPLE_BLOCK_SHUFFLE) return 0;

    if (o->block_bytes && !o->store)
        return ss__fail(SS_EINVAL, "sampler: block_bytes needs the store (options.store)");
    if (o->block_bytes && ss_count(o->store) != total)
        return ss__fail(SS_EINVAL,
                        "sampler: options.store has %" PRIu64
                        " examples, the selection was made for %" PRIu64,
                        ss_count(o->store), total);
    if (o->bucket && ss_bucket_size(o->bucket) != total)
        return ss__fail(SS_EINVAL,
                        "sampler: options.bucket covers %" PRIu64
                        " examples, the selection was made for %" PRIu64,
                        ss_bucket_size(o->bucket), total);
    return 0;
}

static int setup_weights(ss_sampler *s, const double *w) {
    if (!s->nsel) return 0;
    s->cdf = malloc(s->nsel * sizeof *s->cdf);
    if (!s->cdf) return ss__fail(SS_ENOMEM, "sampler: out of memory for weights");
    double acc = 0;
    for (uint64_t i = 0; i < s->nsel; i++) {
        if (!(w[i] >= 0) || !isfinite(w[i]))
            return ss__fail(SS_EINVAL,
                            "sampler: weight %" PRIu64 " is %g (must be finite and "
                            ">= 0)",
                            i, w[i]);
        if (w[i] > 0) s->last_nonzero = i;
        acc += w[i];
        s->cdf[i] = acc;
        s->fingerprint = hash_double(s->fingerprint, w[i]);
    }
    if (!(acc > 0) || !isfinite(acc))
        return ss__fail(SS_EINVAL, "sampler: the weights sum to %g (must be finite and > 0)", acc);
    return 0;
}

/* bytes[i] = bytes of the i-th selected example: the sum over fields of
 * length * row bytes, from the length index only. */
static int example_bytes(uint64_t *bytes, const ss_store *store, const ss_selection *sel) {
    enum { CHUNK = 4096 };
    uint64_t len[CHUNK];
    uint64_t nsel = ss_selection_count(sel);
    memset(bytes, 0, nsel * sizeof *bytes);
    const ss_range *rg = ss_selection_ranges(sel);
    for (uint32_t f = 0; f < ss_field_count(store); f++) {
        uint64_t row = ss_field_row_bytes(store, f), k = 0;
        for (size_t i = 0; i < ss_selection_range_count(sel); i++) {
            for (uint64_t x = rg[i].start; x < rg[i].end; x += CHUNK) {
                uint64_t m = rg[i].end - x < CHUNK ? rg[i].end - x : CHUNK;
                int rc = ss_lengths(len, store, f, x, m);
                if (rc) return ss__context(rc, "sampler: block_bytes");
                for (uint64_t j = 0; j < m; j++) bytes[k++] += len[j] * row;
            }
        }
    }
    return 0;
}

/* Append the blocks of grouped positions [p0, p1) as one group. */
static void cut_group(ss_sampler *s, uint64_t p0, uint64_t p1, const uint64_t *bytes) {
    if (p0 == p1) return;
    s->gstart[s->ng++] = s->nb;
    uint64_t M = s->o.window_blocks, first = s->nb;
    for (uint64_t p = p0; p < p1;) {
        s->bstart[s->nb++] = p;
        if (bytes) {
            uint64_t acc = bytes[s->base ? s->base[p] : p];
            for (p++; p < p1; p++) {
                uint64_t x = bytes[s->base ? s->base[p] : p];
                if (acc > s->o.block_bytes || x > s->o.block_bytes - acc) break;
                acc += x;
            }
        } else {
            p = p1 - p > s->o.block_size ? p + s->o.block_size : p1;
        }
    }
    s->nwin += (s->nb - first + M - 1) / M;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The grouped order of a bucket index: the selection positions bucket by
 * bucket, ascending inside each bucket; the groups are cut into blocks. */
static int bucket_groups(ss_sampler *s, const ss_bucket *bk, const uint64_t *bytes) {
    const ss_range *rg = ss_selection_ranges(s->sel);
    size_t nr = ss_selection_range_count(s->sel);
    uint64_t count = ss_bucket_size(bk), nbk = ss_bucket_count(bk);
    const uint64_t *bp = ss_bucket_permutation(bk), *bst = ss_bucket_starts(bk);
    uint64_t *before = malloc((nr ? nr : 1) * sizeof *before);
    unsigned char *seen = calloc(s->n / 8 + 1, 1);
    int rc = 0;
    if (!before || !seen) rc = ss__fail(SS_ENOMEM, "sampler: out of memory for buckets");
    for (size_t i = 0, acc = 0; !rc && i < nr; acc += rg[i].end - rg[i].start, i++) before[i] = acc;
    uint64_t k = 0;
    for (uint64_t q = 0; !rc && q < nbk; q++) {
        uint64_t first = k;
        for (uint64_t i = bst[q]; i < bst[q + 1]; i++) {
            uint64_t x = bp[i];
            if (x >= count) {
                rc = ss__fail(SS_ECORRUPT,
                              "sampler: bucket index entry %" PRIu64 " is %" PRIu64
                              ", beyond %" PRIu64 " examples",
                              i, x, count);
                break;
            }
            size_t lo = 0, hi = nr; /* the first range ending after x */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (rg[mid].end <= x)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == nr || x < rg[lo].start) continue;
            uint64_t pos = before[lo] + (x - rg[lo].start);
            if (seen[pos / 8] & (1u << (pos % 8))) {
                rc = ss__fail(SS_ECORRUPT, "sampler: bucket index lists example %" PRIu64 " twice",
                              x);
                break;
            }
            seen[pos / 8] |= (unsigned char)(1u << (pos % 8));
            s->base[k++] = pos;
        }
        qsort(s->base + first, (size_t)(k - first), sizeof *s->base, cmp_u64);
        cut_group(s, first, k, bytes);
    }
    if (!rc && k != s->n)
        rc = ss__fail(SS_ECORRUPT,
                      "sampler: bucket index covers %" PRIu64 " of the %" PRIu64
                      " selected examples",
                      k, s->n);
    free(before);
    free(seen);
    return rc;
}

/* Blocks, groups and windows of BLOCK_SHUFFLE (the arrays only when blocks
 * are cut by bytes or within buckets). */
static int setup_blocks(ss_sampler *s, const ss_store *store, const ss_bucket *bk) {
    uint64_t n = s->n, M = s->o.window_blocks;
    if (!s->o.block_bytes && !bk) {
        s->nb = n / s->o.block_size + (n % s->o.block_size != 0);
        s->ng = 1;
        s->nwin = (s->nb + M - 1) / M;
        return 0;
    }
    uint64_t *bytes = NULL;
    int rc = 0;
    s->bstart = malloc((n + 1) * sizeof *s->bstart);
    s->gstart = malloc((bk ? ss_bucket_count(bk) + 1 : 2) * sizeof *s->gstart);
    if (s->o.block_bytes) bytes = malloc((n ? n : 1) * sizeof *bytes);
    if (bk) s->base = malloc((n ? n : 1) * sizeof *s->base);
    if (!s->bstart || !s->gstart || (s->o.block_bytes && !bytes) || (bk && !s->base))
        rc = ss__fail(SS_ENOMEM, "sampler: out of memory for %" PRIu64 " blocks", n);
    if (!rc && bytes) rc = example_bytes(bytes, store, s->sel);
    if (!rc && bk)
        rc = bucket_groups(s, bk, bytes);
    else if (!rc)
        cut_group(s, 0, n, bytes);
    free(bytes);
    if (rc) return rc;
    s->bstart[s->nb] = n;
    s->gstart[s->ng] = s->nb;
    /* Keep O(blocks), not O(examples): the cut needed n + 1 starts at most. */
    uint64_t *shrunk = realloc(s->bstart, (s->nb + 1) * sizeof *s->bstart);
    if (shrunk) s->bstart = shrunk;
    s->gwin = malloc((s->ng + 1) * sizeof *s->gwin);
    s->slot_block = malloc((s->nb ? s->nb : 1) * sizeof *s->slot_block);
    s->slot_start = malloc((s->nb + 1) * sizeof *s->slot_start);
    if (!s->gwin || !s->slot_block || !s->slot_start)
        return ss__fail(SS_ENOMEM, "sampler: out of memory for %" PRIu64 " blocks", s->nb);
    s->gwin[0] = 0;
    for (uint64_t g = 0; g < s->ng; g++)
        s->gwin[g + 1] = s->gwin[g] + (s->gstart[g + 1] - s->gstart[g] + M - 1) / M;
    /* Fingerprint the cut: it depends on the store's lengths and the index. */
    for (uint64_t i = 0; i < s->nb; i++)
        s->fingerprint = ss__rng_hash(s->fingerprint, s->bstart[i], 1);
    for (uint64_t g = 0; g < s->ng; g++)
        s->fingerprint = ss__rng_hash(s->fingerprint, s->gstart[g], 2);
    for (uint64_t i = 0; s->base && i < n; i++)
        s->fingerprint = ss__rng_hash(s->fingerprint, s->base[i], 3);
    return 0;
}

int ss__sampler_options_read(ss_sampler_options *dst, const ss_sampler_options *src) {
    /* A version-1 caller's struct ends at window_blocks: read no further. */
    if (src->version == 1) {
        memcpy(dst, src, offsetof(ss_sampler_options, block_bytes));
        dst->version = SS_SAMPLER_OPTIONS_VERSION;
        return 0;
    }
    if (src->version != SS_SAMPLER_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "sampler: unknown options version %u (this library knows 1..%u)",
                        src->version, SS_SAMPLER_OPTIONS_VERSION);
    *dst = *src;
    return 0;
}

/* What shapes the global order and its cut into global steps of B
 * examples, but not how ranks and workers share it: two samplers with the
 * same value give the same global step k for any R, W and b with R * b = B. */
static uint64_t elastic_fingerprint(const ss_sampler_options *o, const ss_sampler *s,
                                    const ss_selection *sel, int bucket) {
    uint64_t h = ss__rng_hash(o->seed, (uint64_t)o->kind, 0x656c6173ull);
    h = ss__rng_hash(h, s->B, ((uint64_t)(o->drop_last != 0) << 1) | (o->infinite != 0));
    h = ss__rng_hash(h, s->n, ss_selection_total(sel));
    if (o->kind == SS_SAMPLE_BLOCK_SHUFFLE) {
        h = ss__rng_hash(h, o->block_size, o->window_blocks);
        h = ss__rng_hash(h, o->block_bytes, (uint64_t)bucket);
    }
    for (size_t i = 0; i < ss_selection_range_count(sel); i++)
        h = ss__rng_hash(h, ss_selection_ranges(sel)[i].start, ss_selection_ranges(sel)[i].end);
    return h;
}

uint64_t ss__sampler_elastic_fingerprint(const ss_sampler *s) {
    return s ? s->elastic : 0;
}

int ss_sampler_create(ss_sampler **out, const ss_selection *sel,
                      const ss_sampler_options *options) {
    if (!out) return ss__fail(SS_EINVAL, "ss_sampler_create: out is NULL");
    *out = NULL;
    if (!sel) return ss__fail(SS_EINVAL, "ss_sampler_create: selection is NULL");
    ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
    if (options) {
        int rc = ss__sampler_options_read(&o, options);
        if (rc) return rc;
    }
    if (!o.world_size) o.world_size = 1;
    if (!o.num_workers) o.num_workers = 1;
    if (!o.batch_size) o.batch_size = 1;
    uint64_t nsel = ss_selection_count(sel);
    int rc = check_options(&o, nsel, ss_selection_total(sel));
    if (rc) return rc;
    if (!o.block_size) o.block_size = 1024;
    if (!o.window_blocks) o.window_blocks = 4;
    ss_sampler *s = calloc(1, sizeof *s);
    if (!s) return ss__fail(SS_ENOMEM, "sampler: out of memory");
    const double *weights = o.weights;
    const ss_store *store = o.store;
    const ss_bucket *bucket = o.bucket;
    o.weights = NULL;
    o.store = NULL;
    o.bucket = NULL;
    if (o.kind != SS_SAMPLE_BLOCK_SHUFFLE) bucket = NULL;
    s->o = o;
    s->nsel = nsel;
    int draws = o.kind == SS_SAMPLE_REPLACEMENT || o.kind == SS_SAMPLE_WEIGHTED;
    s->n = draws && o.num_samples ? o.num_samples : nsel;
    s->R = o.world_size;
    s->W = o.num_workers;
    s->b = o.batch_size;
    s->B = s->R * s->b;
    s->steps = o.drop_last ? s->n / s->B : s->n / s->B + (s->n % s->B != 0);
    s->local_len = s->steps > o.worker ? ((s->steps - 1 - o.worker) / s->W + 1) * s->b : 0;
    rc = ss_selection_create(&s->sel, ss_selection_ranges(sel), ss_selection_range_count(sel),
                             ss_selection_total(sel));
    /* Fingerprint: everything that shapes the order, so that a state is
     * only loaded into an equivalent sampler. */
    uint64_t h = ss__rng_hash(o.seed, (uint64_t)o.kind, FINGERPRINT_TAG);
    h = ss__rng_hash(h, ((uint64_t)o.world_size << 32) | o.rank,
                     ((uint64_t)o.num_workers << 32) | o.worker);
    h = ss__rng_hash(h, o.batch_size, ((uint64_t)(o.drop_last != 0) << 1) | (o.infinite != 0));
    h = ss__rng_hash(h, s->n, ss_selection_total(sel));
    if (o.kind == SS_SAMPLE_BLOCK_SHUFFLE) {
        h = ss__rng_hash(h, o.block_size, o.window_blocks);
        h = ss__rng_hash(h, o.block_bytes, bucket != NULL);
    }
    for (size_t i = 0; i < ss_selection_range_count(sel); i++)
        h = ss__rng_hash(h, ss_selection_ranges(sel)[i].start, ss_selection_ranges(sel)[i].end);
    s->fingerprint = h;
    s->elastic = elastic_fingerprint(&o, s, sel, bucket != NULL);
    if (!rc && o.kind == SS_SAMPLE_WEIGHTED) rc = setup_weights(s, weights);
    if (!rc && o.kind == SS_SAMPLE_BLOCK_SHUFFLE) rc = setup_blocks(s, store, bucket);
    if (rc) {
        ss_sampler_free(s);
        return rc;
    }
    make_epoch(s);
    *out = s;
    return 0;
}

void ss_sampler_free(ss_sampler *s) {
    if (!s) return;
    ss_selection_free(s->sel);
    free(s->cdf);
    free(s->gwin);
    free(s->slot_block);
    free(s->slot_start);
    free(s->bstart);
    free(s->base);
    free(s->gstart);
    free(s);
}

int ss_sampler_set_epoch(ss_sampler *s, uint64_t epoch) {
    if (!s) return ss__fail(SS_EINVAL, "ss_sampler_set_epoch: sampler is NULL");
    s->epoch = epoch;
    s->pos = 0;
    make_epoch(s);
    return 0;
}

uint64_t ss_sampler_epoch(const ss_sampler *s) {
    return s ? s->epoch : 0;
}

uint64_t ss_sampler_epoch_length(const ss_sampler *s) {
    return s ? s->local_len : 0;
}

size_t ss_sampler_state_size(const ss_sampler *s) {
    return s ? STATE_BYTES : 0;
}

uint64_t ss_sampler_position(const ss_sampler *s) {
    return s ? s->pos : 0;
}

uint64_t ss_sampler_steps_per_epoch(const ss_sampler *s) {
    return s ? s->steps : 0;
}

int ss__sampler_order_changed(const ss_sampler *s) {
    return s && (s->o.kind == SS_SAMPLE_SHUFFLE || s->o.kind == SS_SAMPLE_BLOCK_SHUFFLE);
}

void ss__sampler_at(uint64_t *out, const ss_sampler *s, uint64_t q0, uint64_t n) {
    window_cache wc = {0};
    for (uint64_t i = 0; i < n; i++) out[i] = global_at(s, local_to_global(s, q0 + i), &wc);
}

int ss_sampler_next(uint64_t *out_indices, size_t max, size_t *n, ss_sampler *s) {
    if (n) *n = 0;
    if (!s || !n || (max && !out_indices))
        return ss__fail(SS_EINVAL, "ss_sampler_next: NULL argument");
    size_t k = 0;
    window_cache wc = {0};
    while (k < max) {
        if (s->pos == s->local_len) {
            if (!s->o.infinite || s->local_len == 0) break;
            s->epoch++;
            s->pos = 0;
            make_epoch(s);
            wc.we = 0; /* another epoch, other windows */
        }
        out_indices[k++] = global_at(s, local_to_global(s, s->pos), &wc);
        s->pos++;
    }
    *n = k;
    if (k == 0 && max > 0)
        return ss__fail(SS_ITEROVER, "ss_sampler_next: epoch %llu is over",
                        (unsigned long long)s->epoch);
    return 0;
}

int ss_sampler_state_save(void *buf, size_t cap, size_t *len, const ss_sampler *s) {
    if (len) *len = s ? STATE_BYTES : 0;
    if (!s || !buf) return ss__fail(SS_EINVAL, "ss_sampler_state_save: NULL argument");
    if (cap < STATE_BYTES)
        return ss__fail(SS_EBUFS, "sampler state: needs %d bytes, buffer has %zu",
                        STATE_BYTES, cap);
    unsigned char *p = buf;
    ss_put_le64(p, STATE_MAGIC);
    ss_put_le64(p + 8, STATE_VERSION);
    ss_put_le64(p + 16, s->o.seed);
    ss_put_le64(p + 24, s->epoch);
    ss_put_le64(p + 32, s->pos);
    ss_put_le64(p + 40, s->fingerprint);
    if (len) *len = STATE_BYTES;
    return 0;
}

int ss_sampler_state_load(ss_sampler *s, const void *buf, size_t len) {
    if (!s || !buf) return ss__fail(SS_EINVAL, "ss_sampler_state_load: NULL argument");
    const unsigned char *p = buf;
    if (len != STATE_BYTES || ss_le64(p) != STATE_MAGIC)
        return ss__fail(SS_EINVAL, "sampler state: not a saved sampler state (%zu bytes)", len);
    uint64_t version = ss_le64(p + 8);
    if (version != 1 && version != STATE_VERSION)
        return ss__fail(SS_EINVAL, "sampler state: unknown version %" PRIu64, version);
    if (version == 1 && ss__sampler_order_changed(s))
        return ss__fail(SS_EINVAL,
                        "sampler state: saved by seqstore 0.3, whose %s order was another "
                        "permutation (drawn whole per epoch; this version computes each "
                        "position with a keyed bijection), so it cannot resume exactly; "
                        "start the epoch again (ss_sampler_set_epoch())",
                        s->o.kind == SS_SAMPLE_SHUFFLE ? "SHUFFLE" : "BLOCK_SHUFFLE");
    if (ss_le64(p + 16) != s->o.seed)
        return ss__fail(SS_EINVAL,
                        "sampler state: saved with seed %" PRIu64 ", sampler has %" PRIu64,
                        ss_le64(p + 16), s->o.seed);
    if (ss_le64(p + 40) != s->fingerprint)
        return ss__fail(SS_EINVAL, "sampler state: saved by a sampler with different options "
                                   "or selection");
    uint64_t pos = ss_le64(p + 32);
    if (pos > s->local_len)
        return ss__fail(SS_EINVAL,
                        "sampler state: position %" PRIu64 " beyond the epoch's %" PRIu64, pos,
                        s->local_len);
    s->epoch = ss_le64(p + 24);
    make_epoch(s);
    s->pos = pos;
    return 0;
}

int ss_weights_from_length(double *out, const ss_store *store, const ss_selection *sel,
                           uint32_t field, double power) {
    if (!out || !store || !sel) return ss__fail(SS_EINVAL, "ss_weights_from_length: NULL argument");
    if (field >= ss_field_count(store))
        return ss__fail(SS_ERANGE, "weights: field %u does not exist (the store has %u)", field,
                        ss_field_count(store));
    if (ss_selection_total(sel) != ss_count(store))
        return ss__fail(SS_EINVAL,
                        "weights: selection made for %" PRIu64 " examples, store has %" PRIu64,
                        ss_selection_total(sel), ss_count(store));
    enum { CHUNK = 4096 };
    uint64_t len[CHUNK];
    uint64_t k = 0;
    const ss_range *r = ss_selection_ranges(sel);
    for (size_t i = 0; i < ss_selection_range_count(sel); i++) {
        for (uint64_t x = r[i].start; x < r[i].end; x += CHUNK) {
            uint64_t m = r[i].end - x < CHUNK ? r[i].end - x : CHUNK;
            int rc = ss_lengths(len, store, field, x, m);
            if (rc) return rc;
            for (uint64_t j = 0; j < m; j++) out[k++] = pow((double)len[j], power);
        }
    }
    return 0;
}
