/* sampler.c - epoch orders over a selection, sharded over ranks and workers,
 * deterministic per (seed, epoch) and resumable (see seqstore/sampler.h). */
#include "internal.h"
#include "rng.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* RNG stream tags: each random decision has its own stream. */
#define STREAM_SHUFFLE 0x73687566ull /* "shuf" */
#define STREAM_DRAW 0x64726177ull    /* "draw" */
#define STREAM_BLOCKS 0x626c6b73ull  /* "blks" */
#define STREAM_WINDOW 0x77696e64ull  /* "wind" */

#define STATE_MAGIC 0x314C504D41535353ull /* "SSSAMPL1" little-endian */
#define STATE_VERSION 1u

struct ss_sampler {
    ss_sampler_options o;  /* normalised copy; o.weights is not kept */
    ss_selection *sel;     /* own copy */
    uint64_t nsel;         /* selected examples */
    uint64_t n;            /* global order length per epoch */
    uint64_t R, W, b, B;   /* ranks, workers, local batch, global batch */
    uint64_t steps;        /* global steps per epoch S */
    uint64_t local_len;    /* examples this rank+worker gets per epoch */
    uint64_t epoch, pos;   /* current epoch and local position in it */
    uint64_t *perm;        /* SHUFFLE, BLOCK_SHUFFLE: positions, n of them */
    double *cdf;           /* WEIGHTED: cumulative weights, nsel of them */
    uint64_t last_nonzero; /* WEIGHTED: last position with weight > 0 */
    uint64_t fingerprint;
};

static uint64_t le64_load(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void le64_store(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void shuffle_u64(uint64_t *a, uint64_t n, ss_rng *r) {
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = ss_rng_below(r, i);
        uint64_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* The permutation of BLOCK_SHUFFLE for the current epoch: blocks of
 * block_size consecutive positions (the last one shorter) in a shuffled
 * order, then a shuffle inside each window of window_blocks * block_size
 * consecutive positions of that sequence. In place, no allocation: the block
 * order is drawn into perm[0..nb) and expanded from the back; block q of the
 * new order lands at offset >= q (every block is non-empty), so the entries
 * perm[0..q) still to be read are never overwritten. */
static void block_permutation(ss_sampler *s) {
    uint64_t n = s->n, bs = s->o.block_size, nb = (n + bs - 1) / bs;
    uint64_t *perm = s->perm;
    ss_rng r;
    ss_rng_seed(&r, ss_rng_hash(s->o.seed, s->epoch, 0), STREAM_BLOCKS);
    for (uint64_t i = 0; i < nb; i++) perm[i] = i;
    shuffle_u64(perm, nb, &r);
    uint64_t last_len = n - (nb - 1) * bs, off = n;
    for (uint64_t q = nb; q-- > 0;) {
        uint64_t blk = perm[q];
        uint64_t len = blk == nb - 1 ? last_len : bs;
        off -= len;
        for (uint64_t j = len; j-- > 0;) perm[off + j] = blk * bs + j;
    }
    uint64_t wlen = s->o.window_blocks * bs;
    for (uint64_t w0 = 0, wi = 0; w0 < n; w0 += wlen, wi++) {
        uint64_t len = n - w0 < wlen ? n - w0 : wlen;
        ss_rng_seed(&r, ss_rng_hash(s->o.seed, s->epoch, wi), STREAM_WINDOW);
        shuffle_u64(perm + w0, len, &r);
    }
}

static void make_epoch(ss_sampler *s) {
    if (s->o.kind == SS_SAMPLE_SHUFFLE) {
        ss_rng r;
        ss_rng_seed(&r, ss_rng_hash(s->o.seed, s->epoch, 0), STREAM_SHUFFLE);
        for (uint64_t i = 0; i < s->n; i++) s->perm[i] = i;
        shuffle_u64(s->perm, s->n, &r);
    } else if (s->o.kind == SS_SAMPLE_BLOCK_SHUFFLE && s->n) {
        block_permutation(s);
    }
}

/* Store index of selection position i (i < nsel). */
static uint64_t sel_at(const ss_sampler *s, uint64_t i) {
    uint64_t x = 0;
    ss_selection_index(s->sel, i, &x); /* i < count: cannot fail */
    return x;
}

/* Store index at global position p (p < n) of the current epoch. */
static uint64_t global_at(const ss_sampler *s, uint64_t p) {
    switch (s->o.kind) {
    case SS_SAMPLE_SHUFFLE:
    case SS_SAMPLE_BLOCK_SHUFFLE:
        return sel_at(s, s->perm[p]);
    case SS_SAMPLE_REPLACEMENT: {
        ss_rng r;
        ss_rng_seed(&r, ss_rng_hash(s->o.seed, s->epoch, p), STREAM_DRAW);
        return sel_at(s, ss_rng_below(&r, s->nsel));
    }
    case SS_SAMPLE_WEIGHTED: {
        ss_rng r;
        ss_rng_seed(&r, ss_rng_hash(s->o.seed, s->epoch, p), STREAM_DRAW);
        double x = ss_rng_uniform(&r) * s->cdf[s->nsel - 1];
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
    return ss_rng_hash(h, u, 0x77);
}

static int check_options(const ss_sampler_options *o, uint64_t nsel) {
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
    if (o->kind == SS_SAMPLE_BLOCK_SHUFFLE && o->window_blocks > UINT64_MAX / o->block_size)
        return ss__fail(SS_EINVAL, "sampler: block_size * window_blocks overflows");
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

int ss_sampler_create(ss_sampler **out, const ss_selection *sel,
                      const ss_sampler_options *options) {
    if (!out) return ss__fail(SS_EINVAL, "ss_sampler_create: out is NULL");
    *out = NULL;
    if (!sel) return ss__fail(SS_EINVAL, "ss_sampler_create: selection is NULL");
    ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
    if (options) o = *options;
    if (!o.world_size) o.world_size = 1;
    if (!o.num_workers) o.num_workers = 1;
    if (!o.batch_size) o.batch_size = 1;
    if (!o.block_size) o.block_size = 1024;
    if (!o.window_blocks) o.window_blocks = 4;
    uint64_t nsel = ss_selection_count(sel);
    int rc = check_options(&o, nsel);
    if (rc) return rc;
    ss_sampler *s = calloc(1, sizeof *s);
    if (!s) return ss__fail(SS_ENOMEM, "sampler: out of memory");
    const double *weights = o.weights;
    o.weights = NULL;
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
    uint64_t h = ss_rng_hash(o.seed, (uint64_t)o.kind, STATE_VERSION);
    h = ss_rng_hash(h, ((uint64_t)o.world_size << 32) | o.rank,
                    ((uint64_t)o.num_workers << 32) | o.worker);
    h = ss_rng_hash(h, o.batch_size, ((uint64_t)(o.drop_last != 0) << 1) | (o.infinite != 0));
    h = ss_rng_hash(h, s->n, ss_selection_total(sel));
    if (o.kind == SS_SAMPLE_BLOCK_SHUFFLE) h = ss_rng_hash(h, o.block_size, o.window_blocks);
    for (size_t i = 0; i < ss_selection_range_count(sel); i++)
        h = ss_rng_hash(h, ss_selection_ranges(sel)[i].start, ss_selection_ranges(sel)[i].end);
    s->fingerprint = h;
    if (!rc && o.kind == SS_SAMPLE_WEIGHTED) rc = setup_weights(s, weights);
    if (!rc && (o.kind == SS_SAMPLE_SHUFFLE || o.kind == SS_SAMPLE_BLOCK_SHUFFLE)) {
        s->perm = malloc((s->n ? s->n : 1) * sizeof *s->perm);
        if (!s->perm)
            rc = ss__fail(SS_ENOMEM, "sampler: out of memory for a permutation of %" PRIu64, s->n);
    }
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
    free(s->perm);
    free(s->cdf);
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

uint64_t ss_sampler_position(const ss_sampler *s) {
    return s ? s->pos : 0;
}

uint64_t ss_sampler_steps_per_epoch(const ss_sampler *s) {
    return s ? s->steps : 0;
}

int ss_sampler_next(ss_sampler *s, uint64_t *out_indices, size_t max, size_t *n) {
    if (n) *n = 0;
    if (!s || !n || (max && !out_indices))
        return ss__fail(SS_EINVAL, "ss_sampler_next: NULL argument");
    size_t k = 0;
    while (k < max) {
        if (s->pos == s->local_len) {
            if (!s->o.infinite || s->local_len == 0) break;
            s->epoch++;
            s->pos = 0;
            make_epoch(s);
        }
        out_indices[k++] = global_at(s, local_to_global(s, s->pos));
        s->pos++;
    }
    *n = k;
    return 0;
}

int ss_sampler_state_save(const ss_sampler *s, void *buf, size_t cap, size_t *len) {
    if (len) *len = 0;
    if (!s || !buf) return ss__fail(SS_EINVAL, "ss_sampler_state_save: NULL argument");
    if (cap < SS_SAMPLER_STATE_SIZE)
        return ss__fail(SS_ETOOBIG, "sampler state: needs %d bytes, buffer has %zu",
                        SS_SAMPLER_STATE_SIZE, cap);
    unsigned char *p = buf;
    le64_store(p, STATE_MAGIC);
    le64_store(p + 8, STATE_VERSION);
    le64_store(p + 16, s->o.seed);
    le64_store(p + 24, s->epoch);
    le64_store(p + 32, s->pos);
    le64_store(p + 40, s->fingerprint);
    if (len) *len = SS_SAMPLER_STATE_SIZE;
    return 0;
}

int ss_sampler_state_load(ss_sampler *s, const void *buf, size_t len) {
    if (!s || !buf) return ss__fail(SS_EINVAL, "ss_sampler_state_load: NULL argument");
    const unsigned char *p = buf;
    if (len != SS_SAMPLER_STATE_SIZE || le64_load(p) != STATE_MAGIC)
        return ss__fail(SS_EINVAL, "sampler state: not a saved sampler state (%zu bytes)", len);
    if (le64_load(p + 8) != STATE_VERSION)
        return ss__fail(SS_EINVAL, "sampler state: unknown version %" PRIu64, le64_load(p + 8));
    if (le64_load(p + 16) != s->o.seed)
        return ss__fail(SS_EINVAL,
                        "sampler state: saved with seed %" PRIu64 ", sampler has %" PRIu64,
                        le64_load(p + 16), s->o.seed);
    if (le64_load(p + 40) != s->fingerprint)
        return ss__fail(SS_EINVAL, "sampler state: saved by a sampler with different options "
                                   "or selection");
    uint64_t pos = le64_load(p + 32);
    if (pos > s->local_len)
        return ss__fail(SS_EINVAL,
                        "sampler state: position %" PRIu64 " beyond the epoch's %" PRIu64, pos,
                        s->local_len);
    s->epoch = le64_load(p + 24);
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
            int rc = ss_lengths(store, field, x, m, len);
            if (rc) return rc;
            for (uint64_t j = 0; j < m; j++) out[k++] = pow((double)len[j], power);
        }
    }
    return 0;
}
