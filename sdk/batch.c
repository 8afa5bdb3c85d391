/* SPDX-License-Identifier: BSD-2-Clause */
/* batch.c - fixed-size and token-budget batching (fairseq's batch_by_size). */
#include "internal.h"
#include "batch_internal.h"
#include "rng.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define STREAM_BATCH_ORDER 0x626f7264ull /* "bord" */

struct ss_batcher {
    uint64_t *items; /* store indices of all batches, batch after batch */
    uint64_t *offs;  /* nbatches + 1 offsets into items */
    uint64_t *order; /* batch order: k-th batch served is order[k] */
    uint64_t nbatches;
    uint64_t skipped;
};

int ss__batch_check_options(const ss_batch_options *o, int have_lengths) {
    if (!o) return ss__fail(SS_EINVAL, "batch: options are required");
    if (o->version != SS_BATCH_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "batch: unknown options version %u", o->version);
    if ((unsigned)o->remainder > SS_REMAINDER_PAD)
        return ss__fail(SS_EINVAL, "batch: unknown remainder policy %d", (int)o->remainder);
    if (o->max_tokens == 0) {
        if (o->batch_size == 0)
            return ss__fail(SS_EINVAL, "batch: batch_size is 0 (set batch_size, or max_tokens "
                                       "for token-budget batching)");
        /* Token-budget options would be silently ignored here: refuse them. */
        if (o->max_sentences || o->batch_size_multiple > 1 || o->skip_too_long)
            return ss__fail(SS_EINVAL, "batch: max_sentences, batch_size_multiple and "
                                       "skip_too_long apply to token-budget batching only "
                                       "(max_tokens is 0)");
        return 0;
    }
    if (o->batch_size)
        return ss__fail(SS_EINVAL,
                        "batch: both batch_size (%" PRIu64 ") and max_tokens (%" PRIu64
                        ") are set; set one (max_sentences caps a token-budget batch)",
                        o->batch_size, o->max_tokens);
    if (o->remainder != SS_REMAINDER_INCLUDE)
        return ss__fail(SS_EINVAL, "batch: the remainder policy applies to fixed-size batches "
                                   "only (token-budget batching always keeps its last batch)");
    if (!have_lengths)
        return ss__fail(SS_EINVAL,
                        "batch: token-budget batching (max_tokens %" PRIu64 ") needs lengths",
                        o->max_tokens);
    return 0;
}

uint64_t ss__batch_capacity(uint64_t n, uint64_t segments, const ss_batch_options *o) {
    /* SS_REMAINDER_PAD adds up to batch_size - 1 items per segment. */
    if (o->max_tokens || o->remainder != SS_REMAINDER_PAD) return n;
    return n + segments * (o->batch_size - 1);
}

int ss__batch_builder_init(ss__batch_builder *bb, uint64_t cap) {
    memset(bb, 0, sizeof *bb);
    size_t c = (size_t)(cap ? cap : 1);
    bb->items = malloc(c * sizeof *bb->items);
    bb->lens = malloc(c * sizeof *bb->lens);
    bb->offs = malloc((c + 1) * sizeof *bb->offs);
    if (!bb->items || !bb->lens || !bb->offs) {
        ss__batch_builder_free(bb);
        return ss__fail(SS_ENOMEM, "batch: out of memory for %" PRIu64 " examples", cap);
    }
    bb->cap = cap;
    bb->offs[0] = 0;
    return 0;
}

void ss__batch_builder_free(ss__batch_builder *bb) {
    free(bb->items);
    free(bb->lens);
    free(bb->offs);
    memset(bb, 0, sizeof *bb);
}

static void close_batch(ss__batch_builder *bb, uint64_t end) {
    bb->offs[++bb->nbatches] = end;
}

static int segment_fixed(ss__batch_builder *bb, const uint64_t *order, uint64_t n,
                         const ss_batch_options *o) {
    uint64_t bs = o->batch_size, full = n / bs * bs;
    if (o->remainder == SS_REMAINDER_DIVISIBLE && full != n)
        return ss__fail(SS_EINVAL,
                        "batch: %" PRIu64 " examples are not divisible by batch_size %" PRIu64
                        " (remainder policy 'divisible')",
                        n, bs);
    uint64_t keep = o->remainder == SS_REMAINDER_SKIP ? full : n;
    /* PAD: fill the last batch up to bs by repeating the order from its start. */
    if (o->remainder == SS_REMAINDER_PAD && n % bs) keep = full + bs;
    for (uint64_t i = 0; i < keep; i++) {
        bb->items[bb->nitems++] = order[i % n];
        if ((i + 1) % bs == 0 || i + 1 == keep) close_batch(bb, bb->nitems);
    }
    return 0;
}

/* Close the batch [begin, begin + keep) of the builder; the rest stays. */
static uint64_t close_keep(ss__batch_builder *bb, uint64_t begin, uint64_t keep,
                           uint64_t *cur_max) {
    close_batch(bb, begin + keep);
    begin += keep;
    *cur_max = 0;
    for (uint64_t j = begin; j < bb->nitems; j++)
        if (bb->lens[j] > *cur_max) *cur_max = bb->lens[j];
    return begin;
}

/* Greedy: each batch is the longest run from its start that fits (n <=
 * max_sentences, n * max_len <= max_tokens), cut down to a multiple of m
 * when it holds m or more; the cut-off examples start the next run. If they
 * cannot share a batch with the next example, they close as a batch of
 * their own (fewer than m): the budget is never exceeded. */
static int segment_tokens(ss__batch_builder *bb, const uint64_t *order, const uint64_t *lengths,
                          uint64_t n, const ss_batch_options *o) {
    uint64_t mt = o->max_tokens, ms = o->max_sentences;
    uint64_t mult = o->batch_size_multiple > 1 ? o->batch_size_multiple : 1;
    uint64_t begin = bb->nitems, cur_max = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = lengths[i];
        if (len > mt) {
            if (o->skip_too_long) {
                bb->skipped++;
                continue;
            }
            return ss__fail(SS_EINVAL,
                            "batch: example %" PRIu64 " (position %" PRIu64
                            " in the order) has length %" PRIu64 " > max_tokens %" PRIu64,
                            order[i], i, len, mt);
        }
        for (;;) { /* at most twice: a full batch, then its carried remainder */
            uint64_t cnt = bb->nitems - begin;
            uint64_t m = len > cur_max ? len : cur_max;
            /* (cnt + 1) * m > mt, without overflow: m <= mt here. */
            int full = cnt > 0 && ((ms && cnt >= ms) || m > mt / (cnt + 1) || (cnt + 1) * m > mt);
            if (!full) break;
            uint64_t keep = cnt >= mult ? mult * (cnt / mult) : cnt;
            begin = close_keep(bb, begin, keep, &cur_max);
        }
        bb->items[bb->nitems] = order[i];
        bb->lens[bb->nitems++] = len;
        if (len > cur_max) cur_max = len;
    }
    if (bb->nitems > begin) close_batch(bb, bb->nitems);
    return 0;
}

int ss__batch_segment(ss__batch_builder *bb, const uint64_t *order, const uint64_t *lengths,
                      uint64_t n, const ss_batch_options *o) {
    if (bb->nitems + ss__batch_capacity(n, 1, o) > bb->cap)
        return ss__fail(SS_EINVAL, "batch: builder overflow");
    return o->max_tokens ? segment_tokens(bb, order, lengths, n, o)
                         : segment_fixed(bb, order, n, o);
}

int ss__batcher_from_builder(ss_batcher **out, ss__batch_builder *bb) {
    *out = NULL;
    ss_batcher *b = calloc(1, sizeof *b);
    uint64_t *order = malloc((bb->nbatches ? bb->nbatches : 1) * sizeof *order);
    if (!b || !order) {
        free(b);
        free(order);
        return ss__fail(SS_ENOMEM, "batch: out of memory");
    }
    for (uint64_t k = 0; k < bb->nbatches; k++) order[k] = k;
    b->items = bb->items;
    b->offs = bb->offs;
    b->order = order;
    b->nbatches = bb->nbatches;
    b->skipped = bb->skipped;
    free(bb->lens);
    memset(bb, 0, sizeof *bb);
    *out = b;
    return 0;
}

int ss_batcher_create(ss_batcher **out, const uint64_t *order, const uint64_t *lengths, uint64_t n,
                      const ss_batch_options *options) {
    if (!out) return ss__fail(SS_EINVAL, "ss_batcher_create: out is NULL");
    *out = NULL;
    if (n && !order) return ss__fail(SS_EINVAL, "ss_batcher_create: order is NULL");
    int rc = ss__batch_check_options(options, lengths != NULL || n == 0);
    if (rc) return rc;
    ss__batch_builder bb;
    rc = ss__batch_builder_init(&bb, ss__batch_capacity(n, 1, options));
    if (!rc) rc = ss__batch_segment(&bb, order, lengths, n, options);
    if (!rc) rc = ss__batcher_from_builder(out, &bb);
    if (rc) ss__batch_builder_free(&bb);
    return rc;
}

void ss_batcher_free(ss_batcher *b) {
    if (!b) return;
    free(b->items);
    free(b->offs);
    free(b->order);
    free(b);
}

uint64_t ss_batcher_count(const ss_batcher *b) {
    return b ? b->nbatches : 0;
}

uint64_t ss_batcher_skipped(const ss_batcher *b) {
    return b ? b->skipped : 0;
}

int ss_batcher_get(const uint64_t **indices, size_t *n, const ss_batcher *b, uint64_t k) {
    if (!b || !indices || !n) return ss__fail(SS_EINVAL, "ss_batcher_get: NULL argument");
    if (k >= b->nbatches)
        return ss__fail(SS_ERANGE, "batch %" PRIu64 " out of range (%" PRIu64 " batches)", k,
                        b->nbatches);
    uint64_t q = b->order[k];
    *indices = b->items + b->offs[q];
    *n = (size_t)(b->offs[q + 1] - b->offs[q]);
    return 0;
}

int ss_batcher_shuffle(ss_batcher *b, int shuffle, uint64_t seed, uint64_t epoch) {
    if (!b) return ss__fail(SS_EINVAL, "ss_batcher_shuffle: batcher is NULL");
    for (uint64_t k = 0; k < b->nbatches; k++) b->order[k] = k;
    if (!shuffle) return 0;
    ss_rng r;
    ss__rng_seed(&r, ss__rng_hash(seed, epoch, 0), STREAM_BATCH_ORDER);
    for (uint64_t i = b->nbatches; i > 1; i--) {
        uint64_t j = ss__rng_below(&r, i);
        uint64_t t = b->order[i - 1];
        b->order[i - 1] = b->order[j];
        b->order[j] = t;
    }
    return 0;
}

static int check_fields(const ss_store *store, const uint32_t *fields, size_t nfields,
                        const char *what) {
    if (!store || !fields || !nfields)
        return ss__fail(SS_EINVAL, "%s: need a store and at least one field", what);
    for (size_t f = 0; f < nfields; f++)
        if (fields[f] >= ss_field_count(store))
            return ss__fail(SS_ERANGE, "%s: field %u does not exist (the store has %u)", what,
                            fields[f], ss_field_count(store));
    return 0;
}

static uint64_t max_length(const ss_store *store, const uint32_t *fields, size_t nfields,
                           uint64_t idx) {
    uint64_t m = 0;
    for (size_t f = 0; f < nfields; f++) {
        uint64_t l = ss_length(store, fields[f], idx);
        if (l > m) m = l;
    }
    return m;
}

/* max_length() through ss_lengths(), which reports what ss_length() cannot:
 * a dataset's shard that is missing or damaged (named in the message). */
static int max_length_checked(uint64_t *out, const ss_store *store, const uint32_t *fields,
                              size_t nfields, uint64_t idx) {
    uint64_t m = 0;
    for (size_t f = 0; f < nfields; f++) {
        uint64_t l;
        int rc = ss_lengths(&l, store, fields[f], idx, 1);
        if (rc) return ss__context(rc, "lengths: example %" PRIu64, idx);
        if (l > m) m = l;
    }
    *out = m;
    return 0;
}

int ss_lengths_gather(uint64_t *out, const ss_store *store, const uint32_t *fields, size_t nfields,
                      const uint64_t *indices, uint64_t n) {
    int rc = check_fields(store, fields, nfields, "lengths");
    if (rc) return rc;
    if (n && (!out || !indices)) return ss__fail(SS_EINVAL, "lengths: NULL array");
    uint64_t count = ss_count(store);
    for (uint64_t i = 0; i < n; i++) {
        if (indices[i] >= count)
            return ss__fail(SS_ERANGE,
                            "lengths: example %" PRIu64 " out of range (%" PRIu64 " examples)",
                            indices[i], count);
        if ((rc = max_length_checked(&out[i], store, fields, nfields, indices[i])) != 0) return rc;
    }
    return 0;
}

int ss_batcher_padding(uint64_t *real, uint64_t *padded, const ss_batcher *b, const ss_store *store,
                       const uint32_t *fields, size_t nfields) {
    if (!b || !real || !padded) return ss__fail(SS_EINVAL, "ss_batcher_padding: NULL argument");
    int rc = check_fields(store, fields, nfields, "padding");
    if (rc) return rc;
    uint64_t count = ss_count(store), sum = 0, pad = 0;
    for (uint64_t q = 0; q < b->nbatches; q++) {
        uint64_t m = 0;
        for (uint64_t i = b->offs[q]; i < b->offs[q + 1]; i++) {
            if (b->items[i] >= count)
                return ss__fail(SS_ERANGE, "padding: example %" PRIu64 " out of range",
                                b->items[i]);
            uint64_t l = max_length(store, fields, nfields, b->items[i]);
            sum += l;
            if (l > m) m = l;
        }
        pad += m * (b->offs[q + 1] - b->offs[q]);
    }
    *real = sum;
    *padded = pad;
    return 0;
}
