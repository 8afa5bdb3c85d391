/* SPDX-License-Identifier: BSD-2-Clause */
/* loader.c - the prefetching loader (see seqstore/loader.h).
 *
 * The consumer side (the caller's thread) computes the epoch's batch list
 * (`plan`); worker threads take batch numbers in order and fill the slot
 * number g mod S of a ring of S = prefetch + 1 slots. Batch g may be filled
 * once g < consumed + prefetch, so the slot the caller holds (batch
 * consumed - 1) is never overwritten. The plan is replaced only while no
 * worker is filling (`paused`, `busy` == 0), under the mutex.
 *
 * With options.into the workers only prepare (transform) batches and
 * ss_loader_next_into() collates batch `consumed` from its slot into the
 * caller's buffers before counting it consumed, so no worker touches that
 * slot meanwhile. Without per-example transforms there is nothing to prepare
 * ahead: no worker, one slot, prepared by the caller.
 *
 * With a ring (options.ring) slot k collates into the caller's buffer set k;
 * a slot handed out stays `held` until ss_loader_release(), and a worker
 * fills batch g only when slot g mod R is not held, so the depth is R. */
#include "internal.h"
#include "options_internal.h"
#include "layout.h" /* ss_le64, ss_put_le64 */
#include "rng.h"
#include "loader_internal.h"
#include "sampler_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_MAGIC 0x315244414f4c5353ull /* "SSLOADR1" little-endian */
/* 3: the sampler's SHUFFLE and BLOCK_SHUFFLE orders are per-position
 * bijections; 2 (the same bytes) and 1 (the first 88 bytes only, no elastic
 * resume) were saved by seqstore 0.3, whose shuffles were other orders. */
#define STATE_VERSION 3
#define STATE_HEAD 40     /* magic, version, epoch, position, fingerprint; then the sampler's */
#define STATE_SAMPLER 48  /* ss_sampler_state_size() */
#define STATE_V1_SIZE (STATE_HEAD + STATE_SAMPLER)
#define STATE_SIZE (STATE_V1_SIZE + 40) /* + ranks, workers, two fingerprints, batches */
#define MSG_CAP 1024

enum { MODE_FIXED = 0, MODE_TOKENS = 1, MODE_BUCKET = 2 };
enum { SLOT_EMPTY = 0, SLOT_FILLING = 1, SLOT_READY = 2 };

/* The caller's options resolved: sub-options copied by value (defaults for
 * NULL, older versions completed with their defaults). */
typedef struct lopts {
    const ss_selection *selection;
    ss_sampler_options sampler;
    ss_batch_options batch;
    const char *bucket;
    const ss_collate_field *fields;
    uint32_t nfields;
    ss_collator_options collator;
    uint32_t prefetch;
    uint32_t threads;
    int infinite;
    const ss_pipeline *transforms;
    int into;
    const ss_collate_buffers *ring; /* version 4: ring_size sets of nfields */
    uint32_t ring_size;
} lopts;

/* An output field as the transform path sees it. */
typedef struct lfield {
    char name[SS_MAX_NAME + 1];
    uint32_t index;
    int sequence;
    ss_dtype st_dtype; /* stored */
    uint32_t st_ndim;
    uint64_t st_dims[SS_MAX_DIMS];
    ss_dtype fin_dtype; /* after the pipeline (declared to the collator) */
    uint32_t fin_ndim;
    uint64_t fin_dims[SS_MAX_DIMS];
    uint64_t max_rb; /* largest row over the pipeline's stages */
} lfield;

/* A per-example transform, resolved against the output fields. */
typedef struct xform {
    const ss_transform *t;
    uint32_t pos; /* position in the pipeline */
    int field;    /* output field of a declared change, else -1 */
    ss_dtype dtype;
    uint32_t ndim;
    uint64_t dims[SS_MAX_DIMS];
} xform;

typedef struct slot {
    int state;
    int held; /* ring: handed out and not yet released by the caller */
    uint64_t g;
    int rc;
    char msg[MSG_CAP];
    ss_collator *col;
    ss_span *spans;
    uint64_t rows_cap;
    ss_loader_batch batch;
    uint64_t *ix; /* ring: the batch's indices, kept while the caller holds it */
    /* transform path */
    ss_example_field *ef; /* rows_cap * nf */
    ss_collate_input *in; /* rows_cap * nf: the transformed rows, for the collator */
    unsigned char **arena[2];
    uint64_t *arena_cap; /* bytes, per field (both halves) */
    uint64_t *at;        /* rows_cap * nf: byte offset of each example's field in the arena */
} slot;

struct ss_loader {
    const ss_store *store;
    lopts o;
    int mode;
    uint64_t seed;
    uint32_t world, rank, workers, worker;
    int drop_last;
    ss_selection *sel;
    ss_sampler *sampler;
    ss_bucket *bucket;
    uint64_t fingerprint;
    uint64_t elastic; /* fingerprint without ranks and workers (see elastic_resume()) */
    /* output fields */
    uint32_t nf;
    lfield *f;
    ss_collate_field *cfields;
    uint32_t *seq_fields; /* store indices of sequence output fields */
    uint32_t nseq;
    /* transforms */
    const ss_pipeline *pipe;
    xform *xf;
    uint32_t nxf;
    const ss_transform **bxf;
    uint32_t *bxf_pos;
    uint32_t nbxf;
    /* the epoch's plan */
    uint64_t epoch;
    uint64_t *idx, idx_cap;
    uint64_t *start, start_cap;
    uint64_t *order_buf, order_cap, *lens_buf, lens_cap; /* token budget: one chunk */
    uint64_t *span, span_cap; /* token budget: this rank's batches, (p0, p1, rows) each */
    uint64_t *wrap, wrap_cap; /* token budget: the first world_size global batches */
    uint64_t nbatches;
    uint64_t last_rows; /* fixed size: rows of the last batch (batch_size or fewer) */
    int remote;         /* a dataset under a URL: hint the shards of batches ahead */
    /* ring and threads */
    slot *slots;
    uint32_t nslots, prefetch;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    int sync_init;
    uint64_t next_assign, consumed;
    int busy, paused, stop, failed;
    /* Who sleeps, so that a wake (a system call, and a context switch for a
     * thread that finds nothing to do) goes only where it is awaited: */
    uint32_t idle; /* workers waiting on cv_work */
    uint64_t want; /* the caller waits on cv_done for batches consumed to want (wake_at()), or
                      UINT64_MAX */
    int err_rc;
    char err_msg[MSG_CAP];
    pthread_t *th;
    uint32_t nthreads;
    ss_collate_buffers *ring; /* the caller's buffer sets (copied), nslots * nf, or NULL */
};

/* ---------------------------------------------------------------- helpers */

/* Batches ahead whose shards are prefetched (datasets under a URL). */
#define SS_LOADER_PREFETCH_BATCHES 4

static int grow_u64(uint64_t **p, uint64_t *cap, uint64_t need) {
    if (need == 0) need = 1;
    if (*cap >= need) return 0;
    uint64_t *q = realloc(*p, need * sizeof *q);
    if (!q) return ss__fail(SS_ENOMEM, "loader: out of memory for %" PRIu64 " entries", need);
    *p = q;
    *cap = need;
    return 0;
}

/* Grow a buffer (contents not kept) by at least half, so that the largest
 * batches of an epoch settle it within the first epoch. */
static int grow_bytes(void **p, uint64_t *cap, uint64_t need) {
    if (need == 0) need = 1;
    if (*cap >= need) return 0;
    if (need < *cap + *cap / 2) need = *cap + *cap / 2;
    void *q = malloc((size_t)need);
    if (!q) return ss__fail(SS_ENOMEM, "loader: cannot allocate %" PRIu64 " bytes", need);
    free(*p);
    *p = q;
    *cap = need;
    return 0;
}

static uint64_t row_elements(uint32_t ndim, const uint64_t *dims) {
    uint64_t n = 1;
    for (uint32_t k = 0; k < ndim; k++) n *= dims[k];
    return n;
}

static uint64_t hash_str(uint64_t h, const char *s) {
    for (; s && *s; s++) h = ss__rng_hash(h, (unsigned char)*s, 0x737472);
    return h;
}

/* ------------------------------------------------------------------- plan */

/* Batch j of this rank (j < per) is global batch j * R + rank (wrapping
 * around without drop_last); worker w takes the j with j mod W == w, as the
 * sampler assigns global steps to workers in fixed-size mode. */
static uint64_t dealt(const ss_loader *l, uint64_t q, uint64_t nb) {
    uint64_t j = q * l->workers + l->worker;
    return (j * l->world + l->rank) % nb;
}

/* Deal the batches of `b` to this rank and worker (see dealt()). */
static int deal(ss_loader *l, const ss_batcher *b) {
    uint64_t nb = ss_batcher_count(b), R = l->world, W = l->workers, per;
    per = l->drop_last ? nb / R : (nb + R - 1) / R;
    if (nb == 0) per = 0;
    uint64_t mine = per / W + (l->worker < per % W);
    uint64_t total = 0;
    for (uint64_t q = 0; q < mine; q++) {
        const uint64_t *ix;
        size_t n;
        ss_batcher_get(&ix, &n, b, dealt(l, q, nb));
        total += n;
    }
    int rc = grow_u64(&l->idx, &l->idx_cap, total);
    if (!rc) rc = grow_u64(&l->start, &l->start_cap, mine + 1);
    if (rc) return rc;
    uint64_t at = 0;
    l->start[0] = 0;
    for (uint64_t q = 0; q < mine; q++) {
        const uint64_t *ix;
        size_t n;
        ss_batcher_get(&ix, &n, b, dealt(l, q, nb));
        memcpy(l->idx + at, ix, n * sizeof *ix);
        at += n;
        l->start[q + 1] = at;
    }
    l->nbatches = mine;
    return 0;
}

/* Examples in the sampler's global order per epoch. */
static uint64_t global_length(const ss_loader *l) {
    uint64_t nsel = ss_selection_count(l->sel);
    ss_sampler_kind k = l->o.sampler.kind;
    if ((k == SS_SAMPLE_REPLACEMENT || k == SS_SAMPLE_WEIGHTED) && l->o.sampler.num_samples)
        return l->o.sampler.num_samples;
    return nsel;
}

/* Fixed size: batch k is local positions [k*b, (k+1)*b) of the sampler's
 * order, computed when the batch is filled (batch_indices()): the plan is
 * two numbers, whatever the epoch's length. Under SS_REMAINDER_INCLUDE the
 * sampler pads the last global step by repeating the order; cut this rank's
 * share of it back to the real positions (a smaller last batch, or none). */
static int plan_fixed(ss_loader *l) {
    uint64_t bs = l->o.batch.batch_size, nb = ss_sampler_epoch_length(l->sampler) / bs, N = global_length(l);
    uint64_t R = l->world, B = R * bs, S = ss_sampler_steps_per_epoch(l->sampler);
    if (l->o.batch.remainder == SS_REMAINDER_DIVISIBLE && N % B)
        return ss__fail(SS_EINVAL,
                        "loader: %" PRIu64 " examples are not divisible by world_size * "
                        "batch_size = %" PRIu64 " (remainder policy 'divisible')",
                        N, B);
    l->last_rows = bs;
    uint64_t rem = N - (S ? S - 1 : 0) * B; /* real positions of the last step */
    if (l->o.batch.remainder == SS_REMAINDER_INCLUDE && !l->drop_last && S && rem < B &&
        (S - 1) % l->workers == l->worker && nb) {
        /* rank r holds positions r + R*j of the step: the real ones come first */
        uint64_t real = rem > l->rank ? (rem - l->rank + R - 1) / R : 0;
        if (real == 0)
            nb--;
        else
            l->last_rows = real;
    }
    l->nbatches = nb;
    return 0;
}

/* grow_u64() by at least half: for lists appended to one entry at a time. */
static int grow_list(uint64_t **p, uint64_t *cap, uint64_t need) {
    return *cap >= need ? 0 : grow_u64(p, cap, need + need / 2);
}

uint64_t ss__loader_plan_chunk = 65536;

/* Keep global batch j of a token-budget epoch, positions [p0, p1) of the
 * global order holding `rows` examples (the others too long and skipped),
 * if it is this rank's and worker's (j mod R == rank, (j / R) mod W ==
 * worker) or among the first R (which the last round may wrap around to). */
static int keep_span(ss_loader *l, uint64_t j, uint64_t p0, uint64_t p1, uint64_t rows) {
    uint64_t R = l->world;
    int rc = 0;
    if (j < R) {
        rc = grow_list(&l->wrap, &l->wrap_cap, 3 * (j + 1));
        if (!rc) l->wrap[3 * j] = p0, l->wrap[3 * j + 1] = p1, l->wrap[3 * j + 2] = rows;
    }
    if (rc || j % R != l->rank || (j / R) % l->workers != l->worker) return rc;
    uint64_t q = l->nbatches++;
    rc = grow_list(&l->span, &l->span_cap, 3 * (q + 1));
    if (!rc) l->span[3 * q] = p0, l->span[3 * q + 1] = p1, l->span[3 * q + 2] = rows;
    return rc;
}

/* A token budget: the global order (the sampler's, one rank) cut as
 * ss_batcher_create() cuts it, streamed through in chunks, keeping of the
 * global batches only this rank's and worker's positions (three integers a
 * batch; their indices are computed again when a batch is filled). The
 * greedy cut is the same from any batch's start, so each chunk's batches
 * but its last are final, and the next chunk starts at that last batch.
 * Then the batches are dealt as deal() does (the last round wrapping around
 * to global batch 0, 1, ...). O(N) time, but memory for a chunk and this
 * rank's batches only. */
static int plan_tokens(ss_loader *l, uint64_t len) {
    uint64_t chunk = ss__loader_plan_chunk ? ss__loader_plan_chunk : 1, p = 0, j = 0, mt = l->o.batch.max_tokens;
    int skip = l->o.batch.skip_too_long, rc = 0;
    l->nbatches = 0;
    while (!rc && p < len) {
        uint64_t m = len - p < chunk ? len - p : chunk;
        rc = grow_u64(&l->order_buf, &l->order_cap, m);
        if (!rc) rc = grow_u64(&l->lens_buf, &l->lens_cap, m);
        if (rc) break;
        ss__sampler_at(l->order_buf, l->sampler, p, m);
        ss_batcher *b = NULL;
        rc = ss_lengths_gather(l->lens_buf, l->store, l->seq_fields, l->nseq, l->order_buf, m);
        if (!rc) rc = ss_batcher_create(&b, l->order_buf, l->lens_buf, m, &l->o.batch);
        if (rc) {
            if (rc == SS_EINVAL) /* an example too long: name its place in the epoch */
                rc = ss__context(rc, "loader: positions %" PRIu64 "..%" PRIu64, p, p + m);
            break;
        }
        uint64_t nb = ss_batcher_count(b), last = p + m == len ? nb : nb ? nb - 1 : 0;
        if (last == 0 && p + m < len) { /* one batch longer than the chunk */
            ss_batcher_free(b);
            chunk *= 2;
            continue;
        }
        uint64_t c = 0; /* position in the chunk */
        for (uint64_t t = 0; !rc && t < last; t++) {
            const uint64_t *ix;
            size_t n;
            ss_batcher_get(&ix, &n, b, t);
            while (skip && c < m && l->lens_buf[c] > mt) c++;
            uint64_t c0 = c;
            for (size_t k = 0; k < n; c++)
                if (!(skip && l->lens_buf[c] > mt)) k++;
            rc = keep_span(l, j++, p + c0, p + c, n);
        }
        while (skip && c < m && p + m == len && l->lens_buf[c] > mt) c++;
        ss_batcher_free(b);
        p += p + m == len ? m : c;
    }
    if (rc) return rc;
    /* Deal: per = nb / R (drop_last) or ceil(nb / R) rank batches; this
     * worker's are rank batches jr = q W + w < per, global batch jr R + r,
     * beyond the list wrapping around to jr R + r - nb (< R). */
    uint64_t nb = j, R = l->world, W = l->workers;
    uint64_t per = nb == 0 ? 0 : l->drop_last ? nb / R : (nb + R - 1) / R;
    uint64_t mine = per / W + (l->worker < per % W), kept = l->nbatches;
    if (mine > kept) { /* the wrapped round */
        rc = grow_u64(&l->span, &l->span_cap, 3 * mine);
        for (uint64_t q = kept; !rc && q < mine; q++) {
            uint64_t g = ((q * W + l->worker) * R + l->rank) - nb;
            memcpy(&l->span[3 * q], &l->wrap[3 * g], 3 * sizeof *l->span);
        }
        if (rc) return rc;
    }
    l->nbatches = mine;
    return 0;
}

static int plan_epoch(ss_loader *l, uint64_t epoch) {
    int rc = 0;
    ss_batcher *b = NULL;
    l->nbatches = 0;
    if (l->mode == MODE_BUCKET) {
        rc = ss_bucket_batches(&b, l->bucket, l->store, l->sel, &l->o.batch,
                               l->o.sampler.kind != SS_SAMPLE_SEQUENTIAL, l->seed, epoch);
        if (!rc) rc = ss_sampler_set_epoch(l->sampler, epoch);
    } else {
        rc = ss_sampler_set_epoch(l->sampler, epoch);
        uint64_t len = ss_sampler_epoch_length(l->sampler);
        size_t n = 0;
        if (!rc && l->mode == MODE_FIXED) {
            rc = plan_fixed(l);
        } else if (!rc) {
            rc = plan_tokens(l, len);
        }
        (void)n;
    }
    if (!rc && b) rc = deal(l, b);
    ss_batcher_free(b);
    if (rc) {
        l->nbatches = 0;
        return ss__context(rc, "loader: epoch %" PRIu64, epoch);
    }
    l->epoch = epoch;
    return 0;
}

/* Wait until no worker fills a slot; the mutex is held on return. */
static void quiesce(ss_loader *l) {
    l->paused = 1;
    while (l->busy) pthread_cond_wait(&l->cv_done, &l->mu);
}

/* Replan (mutex held, workers quiet) and restart at batch `pos`. */
static int restart(ss_loader *l, uint64_t epoch, uint64_t pos) {
    int rc = plan_epoch(l, epoch);
    for (uint32_t k = 0; k < l->nslots; k++) {
        l->slots[k].state = SLOT_EMPTY;
        l->slots[k].g = UINT64_MAX;
    }
    if (pos > l->nbatches) pos = l->nbatches;
    l->next_assign = l->consumed = pos;
    l->failed = 0;
    l->err_rc = 0;
    l->paused = 0;
    pthread_cond_broadcast(&l->cv_work);
    return rc;
}

/* ------------------------------------------------------------- filling */

/* Free the slot's per-row arrays. */
static void slot_rows_free(slot *s) {
    free(s->spans);
    free(s->ef);
    free(s->in);
    free(s->at);
    free(s->ix);
    s->ix = NULL;
    s->spans = NULL;
    s->ef = NULL;
    s->in = NULL;
    s->at = NULL;
}

static int slot_rows(ss_loader *l, slot *s, uint64_t n) {
    if (n <= s->rows_cap) return 0;
    slot_rows_free(s);
    uint64_t nf = l->nf;
    s->spans = malloc(n * sizeof *s->spans);
    s->ef = l->nxf ? calloc(n * nf, sizeof *s->ef) : NULL;
    s->in = l->nxf ? malloc(n * nf * sizeof *s->in) : NULL;
    s->at = l->nxf ? malloc(n * nf * sizeof *s->at) : NULL;
    int own_ix = l->ring || l->mode != MODE_BUCKET;
    s->ix = own_ix ? malloc(n * sizeof *s->ix) : NULL;
    if (!s->spans || (l->nxf && (!s->ef || !s->in || !s->at)) || (own_ix && !s->ix)) {
        s->rows_cap = 0;
        return ss__fail(SS_ENOMEM, "loader: out of memory for a batch of %" PRIu64 " rows", n);
    }
    s->rows_cap = n;
    return 0;
}

/* Copy the batch's examples into the arena and run the per-example
 * transforms on them. */
static int transform_rows(ss_loader *l, slot *s, const uint64_t *ix, uint64_t n, uint64_t epoch,
                          uint64_t pos) {
    uint32_t nf = l->nf;
    for (uint32_t k = 0; k < nf; k++) {
        uint64_t total = 0;
        for (uint64_t r = 0; r < n; r++) total += ss_length(l->store, l->f[k].index, ix[r]);
        uint64_t need = total * l->f[k].max_rb;
        if (need > s->arena_cap[k]) {
            uint64_t cap0 = s->arena_cap[k], cap1 = s->arena_cap[k];
            int rc = grow_bytes((void **)&s->arena[0][k], &cap0, need);
            if (!rc) rc = grow_bytes((void **)&s->arena[1][k], &cap1, need);
            if (rc) return rc;
            s->arena_cap[k] = cap0 < cap1 ? cap0 : cap1;
        }
    }
    uint64_t off[SS_MAX_FIELDS] = {0};
    for (uint64_t r = 0; r < n; r++) {
        ss_example ex;
        ex.index = ix[r];
        ex.epoch = epoch;
        ex.nfields = nf;
        ex.fields = &s->ef[r * nf];
        ex.message[0] = 0;
        for (uint32_t k = 0; k < nf; k++) {
            const lfield *f = &l->f[k];
            ss_example_field *e = &ex.fields[k];
            ss_view v;
            int rc = ss_get(&v, l->store, f->index, ix[r]);
            if (rc) return ss__context(rc, "loader: epoch %" PRIu64 ", batch %" PRIu64, epoch, pos);
            memset(e, 0, sizeof *e);
            e->name = f->name;
            e->field = f->index;
            e->sequence = f->sequence;
            e->dtype = f->st_dtype;
            e->ndim = f->st_ndim;
            memcpy(e->dims, f->st_dims, sizeof e->dims);
            e->row_elements = row_elements(f->st_ndim, f->st_dims);
            e->row_bytes = v.row_bytes;
            s->at[r * nf + k] = off[k] * f->max_rb;
            e->data = s->arena[0][k] + s->at[r * nf + k];
            e->out = NULL;
            e->length = e->capacity = v.length;
            memcpy(e->data, v.data, (size_t)(v.length * v.row_bytes));
            off[k] += v.length;
        }
        for (uint32_t j = 0; j < l->nxf; j++) {
            const xform *x = &l->xf[j];
            ss_rng rng;
            ss__rng_seed(&rng, ss__rng_hash(l->seed, epoch, ix[r]), SS_TRANSFORM_STREAM + x->pos);
            ss_example_field *e = x->field >= 0 ? &ex.fields[x->field] : NULL;
            void *spare = NULL;
            if (e) {
                /* the example's place in the other half of the arena */
                uint64_t at = s->at[r * nf + (uint32_t)x->field];
                unsigned char *h0 = s->arena[0][x->field], *h1 = s->arena[1][x->field];
                spare = (unsigned char *)e->data == h0 + at ? h1 + at : h0 + at;
                e->out = spare;
                e->out_dtype = x->dtype;
                e->out_ndim = x->ndim;
                memcpy(e->out_dims, x->dims, sizeof e->out_dims);
            }
            int rc = x->t->example(x->t->user, &ex, &rng);
            if (rc == 0) {
                for (uint32_t k = 0; k < nf; k++)
                    if (ex.fields[k].length > ex.fields[k].capacity ||
                        (!ex.fields[k].sequence && ex.fields[k].length != 1))
                        rc =
                            ss__fail(SS_ECALLBACK,
                                     "set the length of field '%s' to %" PRIu64
                                     " (it may only shorten a sequence of %" PRIu64 ")",
                                     ex.fields[k].name, ex.fields[k].length, ex.fields[k].capacity);
            } else {
                ss__fail(rc < 0 ? rc : SS_ECALLBACK, "%s",
                         ex.message[0] ? ex.message : "failed without a message");
                if (rc > 0) rc = SS_ECALLBACK;
            }
            if (rc)
                return ss__context(rc,
                                   "loader: epoch %" PRIu64 ", batch %" PRIu64 ", example %" PRIu64
                                   ": transform '%s'",
                                   epoch, pos, ix[r], x->t->name);
            if (e) {
                e->out = e->data;
                e->data = spare;
                e->dtype = x->dtype;
                e->ndim = x->ndim;
                memcpy(e->dims, x->dims, sizeof e->dims);
                e->row_elements = row_elements(x->ndim, x->dims);
                e->row_bytes = e->row_elements * ss_dtype_size(x->dtype);
                e->out = NULL;
            }
        }
    }
    for (uint64_t i = 0; i < n * nf; i++) {
        const ss_example_field *e = &s->ef[i];
        ss_collate_input *in = &s->in[i];
        in->data = e->data;
        in->length = e->length;
        in->dtype = e->dtype;
        in->ndim = e->ndim;
        memcpy(in->dims, e->dims, sizeof in->dims);
    }
    return 0;
}

/* Rows of batch g (< nbatches) of the epoch's plan. */
static uint64_t batch_rows(const ss_loader *l, uint64_t g) {
    if (l->mode == MODE_BUCKET) return l->start[g + 1] - l->start[g];
    if (l->mode == MODE_TOKENS) return l->span[3 * g + 2];
    return g + 1 == l->nbatches ? l->last_rows : l->o.batch.batch_size;
}

/* Entries batch_indices() writes for batch g (more than its rows when a
 * token-budget batch's positions hold skipped examples). */
static uint64_t batch_scratch(const ss_loader *l, uint64_t g) {
    return l->mode == MODE_TOKENS ? l->span[3 * g + 1] - l->span[3 * g] : batch_rows(l, g);
}

/* The store indices of batch g: fixed size, computed into buf (batch_rows()
 * entries) from the sampler's positions; else in the plan. Pure: workers
 * call it concurrently (the plan changes only while they are quiet). */
static const uint64_t *batch_indices(const ss_loader *l, uint64_t g, uint64_t *buf) {
    if (l->mode == MODE_BUCKET) return l->idx + l->start[g];
    if (l->mode == MODE_FIXED) {
        ss__sampler_at(buf, l->sampler, g * l->o.batch.batch_size, batch_rows(l, g));
        return buf;
    }
    uint64_t p0 = l->span[3 * g], n = l->span[3 * g + 1] - p0, rows = l->span[3 * g + 2];
    ss__sampler_at(buf, l->sampler, p0, n);
    if (rows < n) { /* drop the examples skipped as too long, as the plan did */
        uint64_t k = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t len = 0;
            for (uint32_t f = 0; f < l->nseq; f++) {
                uint64_t x = ss_length(l->store, l->seq_fields[f], buf[i]);
                if (x > len) len = x;
            }
            if (len <= l->o.batch.max_tokens) buf[k++] = buf[i];
        }
    }
    return buf;
}

/* Prepare batch g in slot s, everything but the collation: its rows as spans
 * of the store or, with per-example transforms, as transformed examples in
 * the slot's arena. */
static int prepare(ss_loader *l, slot *s, uint64_t g, uint64_t epoch) {
    uint64_t n = batch_rows(l, g);
    int rc = slot_rows(l, s, batch_scratch(l, g));
    if (rc) return rc;
    const uint64_t *ix = batch_indices(l, g, s->ix);
    s->batch.epoch = epoch;
    s->batch.position = g;
    s->batch.rows = n;
    s->batch.indices = ix;
    if (l->ring && ix != s->ix) { /* the plan is replaced at set_epoch, maybe while the
                                     caller holds it */
        memcpy(s->ix, ix, n * sizeof *ix);
        s->batch.indices = s->ix;
    }
    if (l->nxf) return transform_rows(l, s, ix, n, epoch, g);
    for (uint64_t r = 0; r < n; r++) s->spans[r] = (ss_span){ix[r], 0, SS_SPAN_END};
    return 0;
}

/* Collate a prepared slot into `buffers` (NULL: the slot collator's own). */
static int collate_slot(ss_loader *l, slot *s, const ss_collate_buffers *buffers) {
    size_t n = (size_t)s->batch.rows;
    int rc = l->nxf ? ss_collator_collate_rows(&s->batch.data, s->col, s->in, n, buffers)
                    : ss_collator_collate_into(&s->batch.data, s->col, s->spans, n, buffers);
    if (rc)
        return ss__context(rc, "loader: epoch %" PRIu64 ", batch %" PRIu64, s->batch.epoch,
                           s->batch.position);
    return 0;
}

/* Run the batch transforms on the collated batch of slot s. */
static int batch_transforms(ss_loader *l, slot *s) {
    int rc = 0;
    uint64_t epoch = s->batch.epoch, g = s->batch.position;
    for (uint32_t j = 0; !rc && j < l->nbxf; j++) {
        ss_rng rng;
        ss__rng_seed(&rng, ss__rng_hash(l->seed, epoch, g),
                     SS_BATCH_TRANSFORM_STREAM + l->bxf_pos[j]);
        const ss_transform *t = l->bxf[j];
        rc = t->batch(t->user, &s->batch, &rng);
        if (rc) {
            if (rc > 0) rc = SS_ECALLBACK;
            rc = ss__fail(rc,
                          "loader: epoch %" PRIu64 ", batch %" PRIu64
                          ": batch transform '%s' failed (%d)",
                          epoch, g, t->name, rc);
        }
    }
    return rc;
}

/* A worker's part of batch g: all of it, or with `into` the preparation
 * (ss_loader_next_into() collates). */
static int fill(ss_loader *l, slot *s, uint64_t g, uint64_t epoch) {
    /* A dataset under a URL starts downloading the shards of the batches
     * after this one (a hint: nothing for local stores). */
    for (uint64_t a = g + 1; l->remote && a <= g + SS_LOADER_PREFETCH_BATCHES && a < l->nbatches;
         a++) {
        if (slot_rows(l, s, batch_scratch(l, a))) break; /* only a hint */
        ss_prefetch(l->store, batch_indices(l, a, s->ix), (size_t)batch_rows(l, a));
    }
    int rc = prepare(l, s, g, epoch);
    if (rc || (l->o.into && !l->ring)) return rc;
    rc = collate_slot(l, s, l->ring ? l->ring + (size_t)(s - l->slots) * l->nf : NULL);
    return rc ? rc : batch_transforms(l, s);
}

/* Under the mutex, after batch g is filled: whether the caller waits and
 * its wait is over (batches consumed to want all ready). */
static int wait_over(const ss_loader *l, uint64_t g) {
    if (l->want == UINT64_MAX || g > l->want) return 0;
    for (uint64_t b = l->consumed; b <= l->want; b++) {
        const slot *s = &l->slots[b % l->nslots];
        if (!(s->state == SLOT_READY && s->g == b)) return 0;
    }
    return 1;
}

static void *worker(void *arg) {
    ss_loader *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->stop && (l->paused || l->failed || l->next_assign >= l->nbatches ||
                            l->next_assign >= l->consumed + l->prefetch ||
                            (l->ring && l->slots[l->next_assign % l->nslots].held))) {
            l->idle++;
            pthread_cond_wait(&l->cv_work, &l->mu);
            l->idle--;
        }
        if (l->stop) break;
        uint64_t g = l->next_assign++, epoch = l->epoch;
        slot *s = &l->slots[g % l->nslots];
        s->state = SLOT_FILLING;
        l->busy++;
        pthread_mutex_unlock(&l->mu);
        int rc = fill(l, s, g, epoch);
        if (rc) snprintf(s->msg, sizeof s->msg, "%s", ss_error_message());
        pthread_mutex_lock(&l->mu);
        s->g = g;
        s->rc = rc;
        s->state = SLOT_READY;
        l->busy--;
        if (rc) l->failed = 1;
        /* Wake the caller only for the batch it waits for (or a quiesce for
         * the last busy worker, or any error), after unlocking: a thread
         * woken under the mutex would sleep again on it at once. */
        if (wait_over(l, g) || (l->paused && l->busy == 0) || rc) {
            pthread_mutex_unlock(&l->mu);
            pthread_cond_broadcast(&l->cv_done);
            pthread_mutex_lock(&l->mu);
        }
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* ---------------------------------------------------------------- open */

static void slot_free(ss_loader *l, slot *s) {
    ss_collator_free(s->col);
    slot_rows_free(s);
    for (uint32_t k = 0; k < l->nf; k++) {
        if (s->arena[0]) free(s->arena[0][k]);
        if (s->arena[1]) free(s->arena[1][k]);
    }
    free(s->arena[0]);
    free(s->arena[1]);
    free(s->arena_cap);
}

void ss_loader_free(ss_loader *l) {
    if (!l) return;
    if (l->sync_init) {
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_broadcast(&l->cv_work);
        pthread_mutex_unlock(&l->mu);
        for (uint32_t k = 0; k < l->nthreads; k++) pthread_join(l->th[k], NULL);
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv_work);
        pthread_cond_destroy(&l->cv_done);
    }
    for (uint32_t k = 0; l->slots && k < l->nslots; k++) slot_free(l, &l->slots[k]);
    free(l->slots);
    free(l->ring);
    free(l->th);
    free(l->f);
    free(l->cfields);
    free(l->seq_fields);
    free(l->xf);
    free(l->bxf);
    free(l->bxf_pos);
    free(l->idx);
    free(l->start);
    free(l->order_buf);
    free(l->lens_buf);
    free(l->span);
    free(l->wrap);
    ss_bucket_free(l->bucket);
    ss_sampler_free(l->sampler);
    ss_selection_free(l->sel);
    free(l);
}

/* Resolve the output fields (copies) and the transforms. */
static int setup_fields(ss_loader *l) {
    const ss_store *st = l->store;
    l->nf = l->o.fields ? l->o.nfields : ss_field_count(st);
    if (l->nf == 0 || l->nf > SS_MAX_FIELDS)
        return ss__fail(SS_EINVAL, "ss_loader_open: %u output fields", l->nf);
    l->f = calloc(l->nf, sizeof *l->f);
    l->cfields = calloc(l->nf, sizeof *l->cfields);
    l->seq_fields = calloc(l->nf, sizeof *l->seq_fields);
    if (!l->f || !l->cfields || !l->seq_fields)
        return ss__fail(SS_ENOMEM, "ss_loader_open: out of memory");
    for (uint32_t k = 0; k < l->nf; k++) {
        lfield *f = &l->f[k];
        ss_collate_field def = SS_COLLATE_FIELD_INIT;
        def.field = k;
        ss_collate_field *o = &l->cfields[k];
        *o = def;
        int rc = l->o.fields ? ss__collate_field_read(o, l->o.fields, k) : 0;
        if (rc) return ss__context(rc, "ss_loader_open: output field %u", k);
        ss_field info;
        rc = ss_field_info(&info, st, o->field);
        if (rc) return ss__context(rc, "ss_loader_open: output field %u", k);
        snprintf(f->name, sizeof f->name, "%s", info.name);
        f->index = o->field;
        f->sequence = info.sequence;
        if (f->sequence) l->seq_fields[l->nseq++] = f->index;
        f->st_dtype = f->fin_dtype = info.dtype;
        f->st_ndim = f->fin_ndim = info.ndim;
        memcpy(f->st_dims, info.dims, sizeof f->st_dims);
        memcpy(f->fin_dims, info.dims, sizeof f->fin_dims);
        f->max_rb = row_elements(info.ndim, info.dims) * ss_dtype_size(info.dtype);
    }
    /* transforms */
    uint32_t nt = ss_pipeline_count(l->pipe);
    l->xf = calloc(nt ? nt : 1, sizeof *l->xf);
    l->bxf = calloc(nt ? nt : 1, sizeof *l->bxf);
    l->bxf_pos = calloc(nt ? nt : 1, sizeof *l->bxf_pos);
    if (!l->xf || !l->bxf || !l->bxf_pos)
        return ss__fail(SS_ENOMEM, "ss_loader_open: out of memory");
    for (uint32_t j = 0; j < nt; j++) {
        const ss_transform *t = ss_pipeline_get(l->pipe, j);
        if (t->batch) {
            l->bxf_pos[l->nbxf] = j;
            l->bxf[l->nbxf++] = t;
            continue;
        }
        xform *x = &l->xf[l->nxf++];
        x->t = t;
        x->pos = j;
        x->field = -1;
        if (!(t->dtype || t->reshape)) continue;
        for (uint32_t k = 0; k < l->nf; k++)
            if (l->f[k].index == t->field) x->field = (int)k;
        if (x->field < 0)
            return ss__fail(SS_EINVAL,
                            "ss_loader_open: transform '%s' declares a change of field %u, "
                            "which is not an output field",
                            t->name, t->field);
        lfield *f = &l->f[x->field];
        x->dtype = t->dtype ? t->dtype : f->fin_dtype;
        x->ndim = t->reshape ? t->ndim : f->fin_ndim;
        memcpy(x->dims, t->reshape ? t->dims : f->fin_dims, sizeof x->dims);
        f->fin_dtype = x->dtype;
        f->fin_ndim = x->ndim;
        memcpy(f->fin_dims, x->dims, sizeof f->fin_dims);
        uint64_t rb = row_elements(x->ndim, x->dims) * ss_dtype_size(x->dtype);
        if (rb > f->max_rb) f->max_rb = rb;
    }
    /* The collator takes the transformed rows as the pipeline declares them
     * (the stored dtype and shape without transforms). */
    for (uint32_t k = 0; k < l->nf; k++) {
        const lfield *f = &l->f[k];
        ss_collate_field *o = &l->cfields[k];
        o->in_dtype = f->fin_dtype;
        o->in_reshape = 1;
        o->in_ndim = f->fin_ndim;
        memcpy(o->in_dims, f->fin_dims, sizeof o->in_dims);
    }
    return 0;
}

static int setup_slots(ss_loader *l) {
    l->slots = calloc(l->nslots, sizeof *l->slots);
    if (!l->slots) return ss__fail(SS_ENOMEM, "ss_loader_open: out of memory");
    ss_collator_options co = l->o.collator;
    if (co.threads == 0) co.threads = 1;
    if (co.max_rows == 0 && l->mode == MODE_FIXED) co.max_rows = l->o.batch.batch_size;
    for (uint32_t i = 0; i < l->nslots; i++) {
        slot *s = &l->slots[i];
        s->g = UINT64_MAX;
        int rc = ss_collator_create(&s->col, l->store, l->cfields, l->nf, &co);
        if (!rc && l->nxf) {
            uint32_t nf = l->nf;
            s->arena[0] = calloc(nf, sizeof *s->arena[0]);
            s->arena[1] = calloc(nf, sizeof *s->arena[1]);
            s->arena_cap = calloc(nf, sizeof *s->arena_cap);
            if (!s->arena[0] || !s->arena[1] || !s->arena_cap)
                rc = ss__fail(SS_ENOMEM, "ss_loader_open: out of memory");
        }
        if (!rc && co.max_rows) rc = slot_rows(l, s, co.max_rows);
        if (rc) return rc;
    }
    return 0;
}

static int setup_order(ss_loader *l) {
    const lopts *o = &l->o;
    int rc = o->selection ? ss_selection_create(&l->sel, ss_selection_ranges(o->selection),
                                                ss_selection_range_count(o->selection),
                                                ss_selection_total(o->selection))
                          : ss_selection_all(&l->sel, ss_count(l->store));
    if (rc) return rc;
    if (ss_selection_total(l->sel) != ss_count(l->store))
        return ss__fail(SS_EINVAL,
                        "ss_loader_open: the selection was made for %" PRIu64
                        " examples, the store has %" PRIu64,
                        ss_selection_total(l->sel), ss_count(l->store));
    ss_sampler_options so = o->sampler;
    so.infinite = 0;
    if (l->mode == MODE_FIXED) {
        so.batch_size = o->batch.batch_size;
        so.drop_last = l->drop_last;
    } else {
        so.world_size = 1;
        so.rank = 0;
        so.num_workers = 1;
        so.worker = 0;
        so.batch_size = 1;
        so.drop_last = 0;
    }
    if (l->mode == MODE_BUCKET) rc = ss_bucket_open(&l->bucket, l->store, o->bucket);
    if (!rc) rc = ss_sampler_create(&l->sampler, l->sel, &so);
    return rc;
}

/* The policy for a last partial step or round: batch.remainder, with
 * sampler.drop_last as another way to say SKIP. Fields the loader sets
 * itself must be left at their defaults. */
static int check_remainder(ss_loader *l) {
    const lopts *o = &l->o;
    ss_remainder rp = o->batch.remainder;
    if (o->sampler.infinite)
        return ss__fail(SS_EINVAL, "ss_loader_open: sampler.infinite is set by the loader; use "
                                   "options.infinite");
    if (o->sampler.batch_size > 1 && o->sampler.batch_size != o->batch.batch_size)
        return ss__fail(SS_EINVAL,
                        "ss_loader_open: sampler.batch_size %" PRIu64
                        " differs from batch.batch_size; the loader sets it (leave it at 1)",
                        o->sampler.batch_size);
    if (o->sampler.drop_last && rp != SS_REMAINDER_INCLUDE && rp != SS_REMAINDER_SKIP)
        return ss__fail(SS_EINVAL,
                        "ss_loader_open: sampler.drop_last contradicts batch.remainder "
                        "%d (drop_last means SS_REMAINDER_SKIP)",
                        (int)rp);
    l->drop_last = o->sampler.drop_last || rp == SS_REMAINDER_SKIP;
    return 0;
}

/* Resolve the caller's options into `o`. Each sub-options struct is read by
 * its own version (ss__options_read), so it can grow without the loader's
 * options changing. */
static int read_options(lopts *o, const ss_loader_options *in) {
    if (in->version < 2 || in->version > SS_LOADER_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL,
                        "ss_loader_open: options version %u is not 2 to %u (version 1 embedded "
                        "the sampler, batch and collator options; they are pointers now)",
                        in->version, SS_LOADER_OPTIONS_VERSION);
    const ss_sampler_options si = SS_SAMPLER_OPTIONS_INIT;
    const ss_batch_options bi = SS_BATCH_OPTIONS_INIT;
    const ss_collator_options ci = SS_COLLATOR_OPTIONS_INIT;
    o->sampler = si;
    o->batch = bi;
    o->collator = ci;
    int rc = 0;
    if (in->sampler) rc = ss__sampler_options_read(&o->sampler, in->sampler);
    if (!rc && in->batch && in->batch->version != SS_BATCH_OPTIONS_VERSION)
        rc = ss__fail(SS_EINVAL, "ss_loader_open: batch options version %u is not %u",
                      in->batch->version, SS_BATCH_OPTIONS_VERSION);
    if (!rc && in->batch) o->batch = *in->batch;
    if (!rc && in->collator && in->collator->version != SS_COLLATOR_OPTIONS_VERSION)
        rc = ss__fail(SS_EINVAL, "ss_loader_open: collator options version %u is not %u",
                      in->collator->version, SS_COLLATOR_OPTIONS_VERSION);
    if (!rc && in->collator) o->collator = *in->collator;
    if (rc) return ss__context(rc, "ss_loader_open");
    o->selection = in->selection;
    o->bucket = in->bucket;
    o->fields = in->fields;
    o->nfields = in->nfields;
    o->prefetch = in->prefetch;
    if (in->threads < 0)
        return ss__fail(SS_EINVAL, "ss_loader_open: threads = %d (use 0 for the default)",
                        in->threads);
    o->threads = (uint32_t)in->threads;
    o->infinite = in->infinite;
    o->transforms = in->transforms;
    o->into = in->version >= 3 ? in->into : 0; /* version 2 ends before it */
    o->ring = in->version >= 4 ? in->ring : NULL;
    o->ring_size = in->version >= 4 ? in->ring_size : 0;
    return 0;
}

static int check_options(ss_loader *l) {
    const lopts *o = &l->o;
    l->mode = o->bucket ? MODE_BUCKET : o->batch.max_tokens ? MODE_TOKENS : MODE_FIXED;
    if (l->mode != MODE_TOKENS && o->batch.batch_size == 0 && !(o->bucket && o->batch.max_tokens))
        return ss__fail(SS_EINVAL, "ss_loader_open: batch.batch_size is 0 (set it, or "
                                   "batch.max_tokens for token-budget batching)");
    l->world = o->sampler.world_size ? o->sampler.world_size : 1;
    l->rank = o->sampler.rank;
    if (l->rank >= l->world)
        return ss__fail(SS_EINVAL, "ss_loader_open: rank %u >= world_size %u", l->rank, l->world);
    l->workers = o->sampler.num_workers ? o->sampler.num_workers : 1;
    l->worker = o->sampler.worker;
    if (l->worker >= l->workers)
        return ss__fail(SS_EINVAL, "ss_loader_open: worker %u >= num_workers %u", l->worker,
                        l->workers);
    int rc = check_remainder(l);
    if (rc) return rc;
    if (l->mode == MODE_BUCKET && o->sampler.kind != SS_SAMPLE_SEQUENTIAL &&
        o->sampler.kind != SS_SAMPLE_SHUFFLE)
        return ss__fail(SS_EINVAL,
                        "ss_loader_open: bucket batching shuffles inside buckets; sampler kind "
                        "%d is not honoured (use SEQUENTIAL or SHUFFLE)",
                        (int)o->sampler.kind);
    l->seed = o->sampler.seed;
    l->prefetch = o->prefetch ? o->prefetch : 2;
    l->nslots = l->prefetch + 1;
    l->nthreads = o->threads ? o->threads : 1;
    uint64_t h = ss__rng_hash((uint64_t)l->mode, o->batch.batch_size, o->batch.max_tokens);
    h = ss__rng_hash(h, o->batch.max_sentences, o->batch.batch_size_multiple);
    h = ss__rng_hash(h, (uint64_t)o->batch.skip_too_long, (uint64_t)o->batch.remainder);
    h = ss__rng_hash(h, ((uint64_t)l->world << 32) | l->rank, (uint64_t)l->drop_last);
    h = ss__rng_hash(h, ((uint64_t)l->workers << 32) | l->worker, 0x776b72);
    l->fingerprint = hash_str(h, o->bucket);
    /* Fixed size: the global batch B = R * b, not R and b, shapes the
     * global steps; the other modes deal one global batch list to any R. */
    uint64_t bs = l->mode == MODE_FIXED ? o->batch.batch_size * l->world : o->batch.batch_size;
    h = ss__rng_hash((uint64_t)l->mode, bs, o->batch.max_tokens);
    h = ss__rng_hash(h, o->batch.max_sentences, o->batch.batch_size_multiple);
    h = ss__rng_hash(h, (uint64_t)o->batch.skip_too_long, (uint64_t)o->batch.remainder);
    h = ss__rng_hash(h, (uint64_t)l->drop_last, 0x656c6173);
    l->elastic = hash_str(h, o->bucket);
    return 0;
}

/* A ring of the caller's buffer sets: one slot per set, the workers collate
 * batch g into set g mod R once the caller released the batch before it in
 * that set (slot.held), so up to R batches are ready at once. */
static int setup_ring(ss_loader *l) {
    const lopts *o = &l->o;
    if (!o->into || !o->ring || o->ring_size == 0)
        return ss__fail(SS_EINVAL,
                        "ss_loader_open: a ring of buffer sets needs into = 1, ring "
                        "and ring_size >= 1 (ring %s, ring_size %u, into %d)",
                        o->ring ? "set" : "NULL", o->ring_size, o->into);
    if (o->prefetch)
        return ss__fail(SS_EINVAL,
                        "ss_loader_open: with a ring the depth is ring_size; "
                        "prefetch %u is not honoured (leave it 0)",
                        o->prefetch);
    l->ring = malloc((size_t)o->ring_size * l->nf * sizeof *l->ring);
    if (!l->ring) return ss__fail(SS_ENOMEM, "ss_loader_open: out of memory");
    memcpy(l->ring, o->ring, (size_t)o->ring_size * l->nf * sizeof *l->ring);
    l->nslots = l->prefetch = o->ring_size;
    return 0;
}

/* With `into` and no per-example transforms nothing is prepared ahead: no
 * worker thread, one slot (its collator collates at ss_loader_next_into()). */
static int setup_into(ss_loader *l) {
    const lopts *o = &l->o;
    if (o->ring || o->ring_size) return setup_ring(l);
    if (!o->into || l->nxf) return 0;
    if (o->threads > 1 || o->prefetch > 0)
        return ss__fail(SS_EINVAL,
                        "ss_loader_open: into without per-example transforms starts no worker "
                        "thread; threads %u and prefetch %u are not honoured (leave them 0; "
                        "collator.threads parallelises the collation)",
                        o->threads, o->prefetch);
    l->nthreads = 0;
    l->prefetch = 0;
    l->nslots = 1;
    return 0;
}

int ss_loader_open(ss_loader **out, const ss_store *store, const ss_loader_options *options) {
    if (!out) return ss__fail(SS_EINVAL, "ss_loader_open: out is NULL");
    *out = NULL;
    if (!store || !options) return ss__fail(SS_EINVAL, "ss_loader_open: NULL argument");
    ss_loader *l = calloc(1, sizeof *l);
    if (!l) return ss__fail(SS_ENOMEM, "ss_loader_open: out of memory");
    l->store = store;
    int rc = read_options(&l->o, options);
    l->pipe = options->transforms;
    if (!rc) rc = check_options(l);
    if (!rc) rc = setup_fields(l);
    if (!rc && l->mode != MODE_FIXED && l->nseq == 0)
        rc = ss__fail(SS_EINVAL, "ss_loader_open: token-budget and bucket batching need a "
                                 "sequence field among the output fields");
    if (!rc) rc = setup_into(l);
    if (!rc) rc = setup_order(l);
    l->remote = ss__store_remote(store);
    if (!rc) rc = setup_slots(l);
    if (!rc) rc = plan_epoch(l, 0);
    if (!rc) {
        l->th = calloc(l->nthreads ? l->nthreads : 1, sizeof *l->th);
        if (!l->th) rc = ss__fail(SS_ENOMEM, "ss_loader_open: out of memory");
    }
    if (!rc) {
        pthread_mutex_init(&l->mu, NULL);
        pthread_cond_init(&l->cv_work, NULL);
        pthread_cond_init(&l->cv_done, NULL);
        l->sync_init = 1;
        l->want = UINT64_MAX;
        uint32_t started = 0;
        for (; started < l->nthreads; started++)
            if (pthread_create(&l->th[started], NULL, worker, l) != 0) break;
        if (started < l->nthreads) {
            l->nthreads = started;
            rc = ss__fail(SS_EIO, "ss_loader_open: cannot start worker thread %u", started);
        }
    }
    if (rc) {
        ss_loader_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

/* ---------------------------------------------------------------- next */

/* The last batch a caller that must wait waits for (from `consumed` on).
 * When the workers are slower than the caller, it sleeps until k batches
 * are ready, k up to one per worker: one wake-up (a futex call, and a
 * context switch on a core the workers need) then serves k batches, not
 * one (raw loader, 2 workers on 2 cores: the caller woke for every batch).
 * Batches wait unconsumed k - 1 longer, which narrows the workers' window
 * (prefetch batches from `consumed`) as much: k leaves a batch for every
 * worker in it. A ring waits for one: its held buffer sets may keep
 * workers from filling more. */
static uint64_t wake_at(const ss_loader *l) {
    uint64_t n = l->nthreads, k = l->ring ? 1 : n;
    if (l->prefetch + 1 < n + k) k = l->prefetch + 1 > n ? l->prefetch + 1 - n : 1;
    uint64_t last = l->consumed + k - 1;
    return last < l->nbatches ? last : l->nbatches - 1;
}

/* The end of a finite epoch (not an error: the loader stays usable). */
static int epoch_over(const ss_loader *l) {
    return ss__fail(SS_ITEROVER,
                    "ss_loader_next: epoch %" PRIu64 " is over (ss_loader_set_epoch() starts another)",
                    l->epoch);
}

/* Under the mutex: the slot of batch `consumed`, ready (prepared by a worker,
 * or by the caller when no worker runs). 0, SS_ITEROVER or an error, which
 * stops the loader until set_epoch or state_load. */
static int ready_slot(slot **out, ss_loader *l) {
    if (l->err_rc) return ss__fail(l->err_rc, "%s", l->err_msg);
    if (l->consumed >= l->nbatches) {
        if (!l->o.infinite) return epoch_over(l);
        quiesce(l);
        int rc = restart(l, l->epoch + 1, 0);
        if (!rc && l->nbatches == 0) rc = epoch_over(l);
        if (rc) return rc;
    }
    slot *s = &l->slots[l->consumed % l->nslots];
    if (s->held) /* not an error of the loader: release one and call again */
        return ss__fail(SS_EINVAL,
                        "ss_loader_next_into: all %u buffer sets are out; the next batch "
                        "goes into the set of batch %" PRIu64 " (epoch %" PRIu64
                        "): ss_loader_release() it first",
                        l->nslots, s->batch.position, s->batch.epoch);
    if (l->nthreads == 0) { /* into without transforms: only spans to set */
        s->rc = prepare(l, s, l->consumed, l->epoch);
        if (s->rc) snprintf(s->msg, sizeof s->msg, "%s", ss_error_message());
    } else {
        while (!(s->state == SLOT_READY && s->g == l->consumed)) {
            l->want = wake_at(l);
            pthread_cond_wait(&l->cv_done, &l->mu);
        }
        l->want = UINT64_MAX;
    }
    if (s->rc) {
        l->err_rc = s->rc;
        snprintf(l->err_msg, sizeof l->err_msg, "%s", s->msg);
        return ss__fail(l->err_rc, "%s", l->err_msg);
    }
    *out = s;
    return 0;
}

/* Hand out batch `consumed`: from now on the workers may refill the slot of
 * the batch before it. 1 if a worker sleeps and needs a broadcast of cv_work
 * (a busy worker checks the ring again under the mutex when it is done). */
static int consume(ss_loader *l) {
    l->consumed++;
    return l->idle > 0;
}

int ss_loader_next(const ss_loader_batch **out, ss_loader *l) {
    if (out) *out = NULL;
    if (!l || !out) return ss__fail(SS_EINVAL, "ss_loader_next: NULL argument");
    if (l->o.into)
        return ss__fail(SS_EINVAL, "ss_loader_next: the loader was opened with options.into; "
                                   "its batches are collated by ss_loader_next_into()");
    pthread_mutex_lock(&l->mu);
    slot *s = NULL;
    int rc = ready_slot(&s, l), wake = 0;
    if (rc == 0) {
        wake = consume(l);
        *out = &s->batch;
    }
    pthread_mutex_unlock(&l->mu);
    if (wake) pthread_cond_broadcast(&l->cv_work);
    return rc;
}

/* ss_loader_next_into() with a ring: the workers collated the batch into
 * its buffer set; it stays the caller's until ss_loader_release(). */
static int next_ring(const ss_loader_batch **out, ss_loader *l, const ss_collate_buffers *buffers) {
    if (buffers)
        return ss__fail(SS_EINVAL, "ss_loader_next_into: the loader collates into the ring of "
                                   "buffer sets given at open; pass buffers = NULL");
    pthread_mutex_lock(&l->mu);
    slot *s = NULL;
    int rc = ready_slot(&s, l), wake = 0;
    if (rc == 0) {
        s->held = 1;
        wake = consume(l);
        *out = &s->batch;
    }
    pthread_mutex_unlock(&l->mu);
    if (wake) pthread_cond_broadcast(&l->cv_work);
    return rc;
}

int ss_loader_release(ss_loader *l, const ss_loader_batch *batch) {
    if (!l || !batch) return ss__fail(SS_EINVAL, "ss_loader_release: NULL argument");
    if (!l->ring)
        return ss__fail(SS_EINVAL, "ss_loader_release: the loader has no ring of buffer sets "
                                   "(options.ring); its batches need no release");
    pthread_mutex_lock(&l->mu);
    int rc = 0;
    uint32_t k = 0;
    while (k < l->nslots && &l->slots[k].batch != batch) k++;
    if (k == l->nslots)
        rc = ss__fail(SS_EINVAL, "ss_loader_release: the batch was not handed out by this loader");
    else if (!l->slots[k].held)
        rc = ss__fail(SS_EINVAL,
                      "ss_loader_release: the batch in buffer set %u (batch %" PRIu64
                      ") is not out: released twice?",
                      k, batch->position);
    else {
        l->slots[k].held = 0;
        pthread_cond_broadcast(&l->cv_work);
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int ss_loader_next_into(const ss_loader_batch **out, ss_loader *l,
                        const ss_collate_buffers *buffers) {
    if (out) *out = NULL;
    if (!l || !out) return ss__fail(SS_EINVAL, "ss_loader_next_into: NULL argument");
    if (!l->o.into)
        return ss__fail(SS_EINVAL, "ss_loader_next_into: the loader was opened without "
                                   "options.into (its workers collate into its own slots; "
                                   "use ss_loader_next(), or open it with into = 1)");
    if (l->ring) return next_ring(out, l, buffers);
    pthread_mutex_lock(&l->mu);
    slot *s = NULL;
    int rc = ready_slot(&s, l);
    pthread_mutex_unlock(&l->mu);
    if (rc) return rc;
    /* Batch `consumed` stays unconsumed while collating: no worker refills its
     * slot (they fill only batches < consumed + prefetch, in other slots). */
    rc = collate_slot(l, s, buffers);
    if (rc) return rc; /* e.g. a buffer too small: the same batch again next time */
    rc = batch_transforms(l, s);
    int wake = 0;
    pthread_mutex_lock(&l->mu);
    if (rc) {
        l->err_rc = rc;
        l->failed = 1;
        snprintf(l->err_msg, sizeof l->err_msg, "%s", ss_error_message());
    } else {
        wake = consume(l);
        *out = &s->batch;
    }
    pthread_mutex_unlock(&l->mu);
    if (wake) pthread_cond_broadcast(&l->cv_work);
    return rc;
}

int ss_loader_set_epoch(ss_loader *l, uint64_t epoch) {
    if (!l) return ss__fail(SS_EINVAL, "ss_loader_set_epoch: loader is NULL");
    pthread_mutex_lock(&l->mu);
    quiesce(l);
    int rc = restart(l, epoch, 0);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

uint64_t ss_loader_epoch(const ss_loader *l) {
    return l ? l->epoch : 0;
}

uint64_t ss_loader_count(const ss_loader *l) {
    return l ? l->nbatches : 0;
}

size_t ss_loader_state_size(const ss_loader *l) {
    return l ? STATE_SIZE : 0;
}

uint64_t ss_loader_position(const ss_loader *l) {
    return l ? l->consumed : 0;
}

/* ---------------------------------------------------------------- state */

int ss_loader_state_save(void *buf, size_t cap, size_t *len, const ss_loader *l) {
    size_t need = ss_loader_state_size(l);
    if (len) *len = need;
    if (!l || !buf) return ss__fail(SS_EINVAL, "ss_loader_state_save: NULL argument");
    if (cap < need)
        return ss__fail(SS_EBUFS, "ss_loader_state_save: %zu bytes, %zu needed", cap, need);
    ss_loader *m = (ss_loader *)l; /* the mutex only */
    unsigned char *p = buf;
    pthread_mutex_lock(&m->mu);
    ss_put_le64(p, STATE_MAGIC);
    ss_put_le64(p + 8, STATE_VERSION);
    ss_put_le64(p + 16, l->epoch);
    ss_put_le64(p + 24, l->consumed);
    ss_put_le64(p + 32, l->fingerprint);
    int rc = ss_sampler_state_save(p + STATE_HEAD, STATE_SAMPLER, NULL, l->sampler);
    ss_put_le64(p + 88, ((uint64_t)l->world << 32) | l->rank);
    ss_put_le64(p + 96, ((uint64_t)l->workers << 32) | l->worker);
    ss_put_le64(p + 104, l->elastic);
    ss_put_le64(p + 112, ss__sampler_elastic_fingerprint(l->sampler));
    ss_put_le64(p + 120, l->nbatches);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Batches of this worker among the first `done` of its rank (the rank's
 * batch j is worker j mod W's). */
static uint64_t worker_share(const ss_loader *l, uint64_t done) {
    return done > l->worker ? (done - 1 - l->worker) / l->workers + 1 : 0;
}

/* The position in this loader's batches of a state saved by a loader with
 * other ranks or workers but the same global order (both elastic
 * fingerprints equal): *pos, or SS_EINVAL saying why it cannot be exact. */
static int elastic_resume(uint64_t *pos, const ss_loader *l, const unsigned char *p) {
    uint64_t R = ss_le64(p + 88) >> 32, W = ss_le64(p + 96) >> 32;
    uint64_t w = ss_le64(p + 96) & 0xffffffffu;
    uint64_t done = ss_le64(p + 24), planned = ss_le64(p + 120);
    if (ss_le64(p + 104) != l->elastic ||
        ss_le64(p + 112) != ss__sampler_elastic_fingerprint(l->sampler))
        return ss__fail(SS_EINVAL, "the state belongs to a loader with other "
                                   "options (beyond world_size, rank and num_workers; with a fixed "
                                   "batch_size, world_size * batch_size must stay the same)");
    if (R == 0 || W == 0 || (ss_le64(p + 88) & 0xffffffffu) >= R || w >= W || done > planned)
        return ss__fail(SS_EINVAL, "not a loader state (rank %" PRIu64 " of %" PRIu64
                                   ", worker %" PRIu64 " of %" PRIu64 ", batch %" PRIu64
                                   " of %" PRIu64 ")",
                        ss_le64(p + 88) & 0xffffffffu, R, w, W, done, planned);
    if (W > 1)
        return ss__fail(SS_EINVAL,
                        "the state was saved by worker %" PRIu64 " of %" PRIu64
                        ": one worker's position does not tell how many batches its rank "
                        "consumed; save the rank's position (a loader with num_workers = 1) to "
                        "resume with other ranks or workers",
                        w, W);
    /* The rank consumed `done` of its batches; all ranks the same count. */
    if (done >= planned) {
        *pos = UINT64_MAX; /* the epoch is over for every rank */
        return 0;
    }
    uint64_t steps = done; /* fixed size: rank batch j is global step j */
    if (l->mode != MODE_FIXED) {
        /* rank r's batch j is global batch j * R + r: R * done global batches out */
        if (done > UINT64_MAX / R)
            return ss__fail(SS_EINVAL, "not a loader state (%" PRIu64 " batches of %" PRIu64
                                       " ranks)",
                            done, R);
        uint64_t global = done * R;
        if (global % l->world)
            return ss__fail(SS_EINVAL,
                            "%" PRIu64 " ranks consumed %" PRIu64
                            " batches each (%" PRIu64 " global batches), which %u ranks cannot "
                            "split evenly; resume at a multiple of %u global batches",
                            R, done, global, l->world, l->world);
        steps = global / l->world;
    }
    *pos = worker_share(l, steps);
    return 0;
}

/* A state of seqstore 0.3 (versions 1 and 2) resumes a loader whose order
 * did not change since: sequential, drawn with replacement or weighted, or
 * bucket batches (their shuffles are bucket.c's, not the sampler's). Else
 * SS_EINVAL saying why. */
static int old_state_ok(const ss_loader *l, uint64_t version) {
    if (version >= 3 || l->mode == MODE_BUCKET || !ss__sampler_order_changed(l->sampler)) return 0;
    return ss__fail(SS_EINVAL,
                    "ss_loader_state_load: a version %" PRIu64 " state, saved by seqstore 0.3, "
                    "whose shuffled orders were other permutations (drawn whole per epoch; "
                    "this version computes each position with a keyed bijection): it cannot "
                    "resume this shuffled loader exactly; start the epoch again "
                    "(ss_loader_set_epoch())",
                    version);
}

int ss_loader_state_load(ss_loader *l, const void *buf, size_t len) {
    if (!l || !buf) return ss__fail(SS_EINVAL, "ss_loader_state_load: NULL argument");
    const unsigned char *p = buf;
    uint64_t version = len >= 16 ? ss_le64(p + 8) : 0;
    if (len < 16 || ss_le64(p) != STATE_MAGIC || version < 1 || version > STATE_VERSION ||
        len != (version == 1 ? STATE_V1_SIZE : STATE_SIZE))
        return ss__fail(SS_EINVAL, "ss_loader_state_load: not a loader state (%zu bytes)", len);
    int rc = old_state_ok(l, version);
    if (rc) return rc;
    /* An old state's sampler part is version 1; where the order is unchanged
     * (old_state_ok()) it resumes as the same fields of version 2. */
    unsigned char sampler_state[STATE_SAMPLER];
    memcpy(sampler_state, p + STATE_HEAD, STATE_SAMPLER);
    if (version < 3 && ss_le64(sampler_state + 8) == 1) ss_put_le64(sampler_state + 8, 2);
    int exact = ss_le64(p + 32) == l->fingerprint;
    if (!exact && version == 1)
        return ss__fail(SS_EINVAL, "ss_loader_state_load: the state belongs to a loader with "
                                   "other batching options");
    uint64_t pos = 0;
    pthread_mutex_lock(&l->mu);
    quiesce(l);
    if (exact) {
        rc = ss_sampler_state_load(l->sampler, sampler_state, STATE_SAMPLER);
        pos = ss_le64(p + 24);
    } else {
        rc = elastic_resume(&pos, l, p);
    }
    uint64_t epoch = rc ? l->epoch : ss_le64(p + 16);
    if (rc) pos = l->consumed;
    int rc2 = restart(l, epoch, pos);
    pthread_mutex_unlock(&l->mu);
    return rc ? ss__context(rc, "ss_loader_state_load") : rc2;
}
