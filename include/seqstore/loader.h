/* SPDX-License-Identifier: BSD-2-Clause */
/* seqstore/loader.h - part of the public API; include <seqstore.h>, not this file.
 *
 * The loader: selection + sampler + batcher + collator (+ transforms) in one
 * object that prepares batches ahead of the training loop on background
 * threads. ss_loader_next() hands over a ready batch.
 *
 * Batch order. The batches of this rank (and this worker) in an epoch:
 *  - fixed size (batch.max_tokens == 0, no bucket): the sampler (with
 *    batch_size = batch.batch_size and the sharding of `sampler`: ranks and
 *    workers) yields the epoch's examples; batch k is positions
 *    [k*b, (k+1)*b) of that order. Nothing is listed ahead: a worker
 *    computes batch k's indices from the sampler's positions when it fills
 *    the batch, so the loader's memory and the cost of starting an epoch or
 *    restoring a state do not grow with the dataset (see sampler.h,
 *    "Memory"). The last global step, when the global
 *    order of N examples is not a multiple of B = world_size * b, follows
 *    batch.remainder: INCLUDE (the default) keeps only its real positions,
 *    so each rank's share of it is a smaller last batch (a rank whose share
 *    is empty has one batch fewer); SKIP (or sampler.drop_last) drops it;
 *    PAD fills it by repeating the global order from its start, so every
 *    batch has b examples (PyTorch's DistributedSampler); DIVISIBLE refuses
 *    such an epoch (SS_EINVAL).
 *  - token budget (batch.max_tokens > 0): at the start of the epoch, on the
 *    calling thread, the sampler's global order (one rank) is cut by
 *    ss_batcher_create() with lengths = the largest length over the
 *    output's sequence fields. The order is streamed through in chunks of
 *    65536 examples (the greedy cut does not depend on where it starts
 *    among batch boundaries) and of the global batches only this rank's
 *    and worker's are kept, as 24 bytes each (their positions in the order;
 *    the indices are computed again when a batch is filled): memory is
 *    about 2 MB for the chunk plus 24 bytes per batch of this rank. The
 *    time is O(N) for N examples in the global order, on every rank, at
 *    each epoch's start and at each restore of a state.
 *  - bucket (`bucket` names a stored bucket index): at the start of the
 *    epoch, O(N) in time and memory (the whole list of batches, 8 bytes
 *    per example, then this rank's share), ss_bucket_batches() with
 *    shuffle = (sampler kind != SEQUENTIAL), seed and epoch (only the kinds
 *    SEQUENTIAL and SHUFFLE are accepted); batch.remainder applies inside
 *    each bucket.
 *  In the last two modes the global list of nb batches is dealt to R =
 *  world_size ranks and W = num_workers workers per rank: rank r's j-th
 *  batch is global batch j * R + r, for j < per = nb / R with drop_last (or
 *  SS_REMAINDER_SKIP), else per = ceil(nb / R) with the last round wrapping
 *  around to batch 0, 1, ...; worker w of rank r takes the j with
 *  j mod W == w, as the sampler gives global steps to workers. The batches
 *  of all ranks and workers are thus disjoint (up to the wrapped round) and
 *  together cover the epoch, and global batch j * R + r is the same for any
 *  W (elastic determinism).
 * Worker threads only fill the batches of that list into a ring of
 * prefetch + 1 preallocated slots, so the output never depends on the number
 * of threads, the prefetch depth or the timing.
 *
 * Into the caller's memory. A loader opened with options.into = 1 hands out
 * the same batches through ss_loader_next_into(), which collates each on the
 * calling thread into buffers the caller gives (pinned memory the GPU copy
 * reads), so a batch is written once; the workers then only run the
 * per-example transforms ahead. With a ring of the caller's buffer sets
 * (options.ring, version 4) the workers collate ahead into those sets
 * instead, and the caller gives each set back with ss_loader_release().
 *
 * Zero-copy. Without per-example transforms the collator reads straight from
 * the memory map. With them each example is first copied into a per-slot
 * arena (preallocated, grown only when a bigger batch arrives) and the same
 * collator collates the transformed rows (ss_collator_collate_rows()), with
 * the dtype and shape the transforms declare.
 *
 * Allocation. Computing an epoch's batch list may allocate (token-budget and
 * bucket modes); handing out batches does not in steady state.
 */
#ifndef SEQSTORE_LOADER_H
#define SEQSTORE_LOADER_H

#include "batch.h"
#include "collate.h"
#include "core.h"
#include "sampler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared in other sub-headers (repeated: C11 allows identical typedefs). */
typedef struct ss_selection ss_selection;
typedef struct ss_pipeline ss_pipeline;
typedef struct ss_loader_batch ss_loader_batch;

/** Loader options. Start from SS_LOADER_OPTIONS_INIT. */
typedef struct ss_loader_options {
    unsigned version;                  /**< SS_LOADER_OPTIONS_VERSION */
    const ss_selection *selection;     /**< examples to read; NULL = all (copied) */
    const ss_sampler_options *sampler; /**< order, seed, sharding (world_size, rank,
                                            num_workers, worker), drop_last; NULL =
                                            SS_SAMPLER_OPTIONS_INIT. Its batch_size
                                            (leave 0 or 1) and infinite (leave 0) are
                                            set by the loader. Read at open only. */
    const ss_batch_options *batch;     /**< batch_size (fixed), or max_tokens etc.
                                            (required: one of them must be set). Read
                                            at open only. */
    const char *bucket;                /**< name of a stored bucket index (ss.bucket.NAME)
                                            for bucket batching, or NULL */
    const ss_collate_field *fields;    /**< output fields (copied); NULL = every field of
                                            the store with defaults. Their in_dtype,
                                            in_reshape, in_ndim, in_dims are set by the
                                            loader (from the transforms' declarations) */
    uint32_t nfields;
    const ss_collator_options *collator; /**< NULL = defaults (threads 0: one thread per
                                              collation). Read at open only. */
    uint32_t prefetch;                   /**< batches prepared ahead N; 0 = 2 */
    int threads;                         /**< worker threads, >= 0; 0 = 1 */
    int infinite;                        /**< 1: at the end of an epoch go on with the next
                                              one (ss_loader_next() never returns SS_ITEROVER) */
    const ss_pipeline *transforms;       /**< NULL, or transforms to apply; borrowed: it must
                                              outlive the loader */
    /* Version 3. */
    int into; /**< 1: batches are collated at ss_loader_next_into() by the calling
                   thread, straight into the caller's buffers, and ss_loader_next()
                   is refused; 0: the workers collate into the loader's slots and
                   ss_loader_next_into() is refused. With `into` the worker threads
                   only run the per-example transforms ahead (into a slot's arena);
                   without per-example transforms there is nothing to prepare ahead,
                   no thread is started and threads > 1 or prefetch > 0 is refused.
                   Batch transforms run at ss_loader_next_into(), on the caller's
                   buffers. With a `ring` (version 4) all of this is different: see
                   there. */
    /* Version 4. */
    const ss_collate_buffers *ring; /**< NULL, or ring_size sets of the caller's buffers,
                                         set k being ring[k * nf .. k * nf + nf - 1] (nf
                                         output fields, members as ss_collate_buffers,
                                         NULL members = the loader's own). Needs into = 1.
                                         The worker threads collate (and run the batch
                                         transforms) ahead into the sets, batch g into
                                         set g mod ring_size, so collation overlaps the
                                         training step with or without transforms. The
                                         array is copied at open; the memory it points
                                         to is written by the workers from open until
                                         ss_loader_free() (except while a set is out,
                                         see ss_loader_release()). prefetch must be 0:
                                         the depth is ring_size. */
    uint32_t ring_size;             /**< sets in `ring` (2 to 4 is typical; 1 = no
                                         overlap) */
} ss_loader_options;

/** Version 2: sampler, batch and collator became pointers (version 1
 *  embedded them by value, so they could not grow); version 1 is refused.
 *  Version 3 appended `into`; version 4 `ring` and `ring_size`; versions 2
 *  and 3 are accepted (into = 0, no ring). */
#define SS_LOADER_OPTIONS_VERSION 4
#define SS_LOADER_OPTIONS_INIT                                                                     \
    { SS_LOADER_OPTIONS_VERSION, NULL, NULL, NULL, NULL, NULL, 0, NULL, 0, 0, 0, NULL, 0, NULL, 0 }
/** Fill `out` with SS_LOADER_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_LOADER_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_loader_options_init(ss_loader_options *out, unsigned version);

/** A batch handed out by ss_loader_next() (or ss_loader_next_into(), whose
 *  data are the caller's buffers). Everything else is borrowed from the
 *  loader and valid until the next ss_loader_next(), ss_loader_next_into(),
 *  ss_loader_set_epoch(), ss_loader_state_load() or ss_loader_free(). */
struct ss_loader_batch {
    uint64_t epoch;          /**< epoch of the batch */
    uint64_t position;       /**< its number in this rank's epoch, from 0 */
    uint64_t rows;           /**< B, examples in the batch */
    const uint64_t *indices; /**< [B] store indices, in row order */
    ss_collated_batch data;  /**< the collated fields: data, lengths, masks,
                                  offsets (see collate.h) */
};

typedef struct ss_loader ss_loader;

/** Open a loader on `store` and start its worker threads, at epoch 0.
 *
 *  Allocates the ring of prefetch + 1 slots (each with its own collator) and
 *  computes epoch 0's batches.
 *  @param[out] out     the loader; free it with ss_loader_free().
 *  @param[in]  store   must stay open until ss_loader_free().
 *  @param[in]  options required.
 *  @return 0; SS_EINVAL (bad version, neither batch_size nor max_tokens, a
 *          token budget or bucket without a sequence output field, rank >=
 *          world_size, worker >= num_workers, sampler.infinite or
 *          sampler.batch_size set, drop_last with remainder PAD or
 *          DIVISIBLE, DIVISIBLE with an indivisible epoch, a bucket with a
 *          sampler kind other than SEQUENTIAL or SHUFFLE, a selection made for another count, a
 * transform declaring a change of a field that is not an output field, a bad collate option; the
 * message names it); as ss_sampler_create(), ss_collator_create(), ss_bucket_open(),
 * ss_batcher_create(); SS_ENOMEM; SS_EIO (a thread could not start). */
SS_API int ss_loader_open(ss_loader **out, const ss_store *store, const ss_loader_options *options);

/** Stop the workers (waiting for the batches they are filling, even mid-epoch)
 *  and free everything. Accepts NULL. */
SS_API void ss_loader_free(ss_loader *l);

/** The next batch of the epoch (a loader opened without options.into).
 *  When it is not ready yet the caller sleeps until k batches from it on
 *  are ready, k = min(threads, prefetch + 1 - threads) and at least 1 (one
 *  wake-up for k batches, while every worker keeps a batch to fill).
 *  @param[out] out the batch, valid until the next call (see ss_loader_batch);
 *                  NULL at the end of the epoch or on error.
 *  @return 0; SS_ITEROVER at the end of a finite epoch, again on every
 *          call until ss_loader_set_epoch(); a negative code when preparing
 *          the batch failed (the message names the epoch, batch, example and,
 *          for a transform, its name and message: e.g. SS_ECALLBACK). After an
 *          error the loader stops preparing batches and returns the same error
 *          until ss_loader_set_epoch() or ss_loader_state_load(). */
SS_API int ss_loader_next(const ss_loader_batch **out, ss_loader *l);

/** The next batch of the epoch, collated by the calling thread into the
 *  caller's buffers (pinned memory that a GPU copy reads, say): each batch is
 *  written once, by the collator, where the caller wants it, never through
 *  the loader's slots. Needs a loader opened with options.into = 1.
 *
 *  The batch (epoch, position, rows, indices and the data) is exactly the one
 *  ss_loader_next() would hand out with the same options: the same plan, the
 *  same determinism over ranks, workers, threads and prefetch depths, the same
 *  position for ss_loader_state_save() (a state saved by either kind of
 *  loader resumes the other). The collation runs collator.threads OpenMP
 *  threads on the calling thread's behalf.
 *  @param[out] out     the batch, NULL at the end of the epoch or on error.
 *                      The struct, its indices and the lengths, offsets, perm
 *                      and masks the caller did not provide are borrowed from
 *                      the loader until the next ss_loader_next_into(),
 *                      ss_loader_set_epoch(), ss_loader_state_load() or
 *                      ss_loader_free(); data (and whatever else the caller
 *                      provided) points into the caller's buffers, which stay
 *                      the caller's.
 *  @param[in]  l       a loader opened with options.into = 1.
 *  @param[in]  buffers one entry per output field, in the order of
 *                      ss_loader_options.fields (the store's field order when
 *                      fields is NULL); NULL members (or NULL buffers) mean
 *                      the loader's own buffers, as in
 *                      ss_collator_collate_into(). Sizes: ss_collate_buffers.
 *                      Read during the call only.
 *  @return 0; SS_ITEROVER as ss_loader_next(); SS_EINVAL (a NULL
 *          argument; a loader opened without `into`); SS_EBUFS (a buffer
 *          too small for this batch, the message naming the field and the
 *          bytes needed):
 *          a failed collation leaves the position unchanged, so the same
 *          batch can be collated again into larger buffers; a negative code
 *          as ss_loader_next() when preparing the batch failed (a transform,
 *          SS_ECORRUPT, SS_ENOMEM), after which the loader returns that error
 *          until ss_loader_set_epoch() or ss_loader_state_load(). */
SS_API int ss_loader_next_into(const ss_loader_batch **out, ss_loader *l,
                               const ss_collate_buffers *buffers);

/* With a ring of buffer sets (options.ring), ss_loader_next_into(out, l, NULL)
 * hands out the next batch already collated by a worker into its set, and the
 * set is the caller's (no worker writes into it) until ss_loader_release():
 *  - buffers must be NULL (SS_EINVAL otherwise);
 *  - *out and everything it points to (the indices, the data in the caller's
 *    set, and the lengths, masks, offsets the loader provided) stay valid
 *    until ss_loader_release(l, *out) or ss_loader_free(), across later
 *    ss_loader_next_into(), ss_loader_set_epoch() and ss_loader_state_load()
 *    calls;
 *  - when the set of the next batch is still out (all ring_size sets held),
 *    ss_loader_next_into() returns SS_EINVAL naming the batch to release and
 *    hands out nothing (call it again after releasing; never blocks forever);
 *  - a buffer too small for a batch is found by the worker: the call returns
 *    SS_EBUFS naming the field and the bytes needed, and the loader returns
 *    it until ss_loader_set_epoch() or ss_loader_state_load() (the sets are
 *    fixed at open, so the same batch cannot be retried into larger ones);
 *  - batches, positions and saved states are those of ss_loader_next(): a
 *    batch counts as handed out when ss_loader_next_into() returns it,
 *    whether or not it was released; ss_loader_set_epoch() and
 *    ss_loader_state_load() keep the sets that are out (the workers skip
 *    them until they are released);
 *  - ss_loader_free() with sets out is fine: the loader stops writing to
 *    every set, which stay the caller's memory. */

/** Give a ring loader's buffer set back to its workers (see above).
 *  @param[in] l     a loader opened with options.ring.
 *  @param[in] batch a batch ss_loader_next_into() returned and not yet
 *                   released; invalid after this call.
 *  @return 0; SS_EINVAL (NULL argument; a loader without a ring; a batch not
 *          of this loader; a batch already released). */
SS_API int ss_loader_release(ss_loader *l, const ss_loader_batch *batch);

/** Start epoch `epoch` from its first batch (discarding prefetched batches).
 *  @return 0, or as ss_loader_open() when computing the batch list fails. */
SS_API int ss_loader_set_epoch(ss_loader *l, uint64_t epoch);

/** The current epoch. */
SS_API uint64_t ss_loader_epoch(const ss_loader *l);
/** Batches of this rank in the current epoch (as ss_batcher_count(): a
 *  `_count` is how many items an object hands out per epoch or stream). */
SS_API uint64_t ss_loader_count(const ss_loader *l);
/** Batches already handed out in the current epoch. */
SS_API uint64_t ss_loader_position(const ss_loader *l);

/** Bytes ss_loader_state_save() writes (128 in this version; a version 1
 *  state, from 0.3's first loader, is 88); 0 for NULL. */
SS_API size_t ss_loader_state_size(const ss_loader *l);

/** Save the position after the batches handed out so far: magic "SSLOADR1",
 *  version 3, epoch, batch position, a fingerprint of the batching options
 *  (u64 each, little-endian), the sampler's state (ss_sampler_state_size()),
 *  then world_size << 32 | rank, num_workers << 32 | worker, the
 *  fingerprints of the options that do not depend on the ranks and workers
 *  (loader's, sampler's) and the batches of the epoch's plan.
 *  @param[out] buf `cap` bytes.
 *  @param[in]  cap bytes of buf.
 *  @param[out] len bytes written (or needed, on SS_EBUFS); may be NULL.
 *  @return 0; SS_EBUFS if cap < ss_loader_state_size() (nothing written);
 *          SS_EINVAL (NULL loader or buf). */
SS_API int ss_loader_state_save(void *buf, size_t cap, size_t *len, const ss_loader *l);

/** Continue from a saved state: the next ss_loader_next() returns exactly the
 *  batch an uninterrupted run would have returned after the saved one.
 *
 *  Same options: the loader must have the same store, selection and options,
 *  and continues where the saved one stopped. Restoring costs what starting
 *  the epoch costs: O(1) for fixed-size batches (no replanning), O(N) time
 *  with a token budget or buckets.
 *
 *  States of seqstore 0.3 (versions 1, of 88 bytes, and 2): their shuffled
 *  orders (SHUFFLE, BLOCK_SHUFFLE) were other permutations than this
 *  version's (see sampler.h), so they resume only loaders whose order is
 *  unchanged: sequential, with replacement, weighted, or bucket batching;
 *  a shuffled loader refuses them with a message saying why.
 *
 *  Elastic resume: a state saved by rank r of R with num_workers = 1 (a
 *  rank's own position) also loads into a loader with another world_size,
 *  rank, num_workers or worker, when every other option is the same and,
 *  with a fixed batch_size, the global batch world_size * batch_size is
 *  unchanged. All ranks are taken to have consumed as many batches as rank
 *  r (a synchronous step). The loader then continues the same global order:
 *  with a fixed batch_size after the saved rank's j batches, i.e. j global
 *  steps (see sampler.h: global step k's examples do not depend on R or W);
 *  with a token budget or buckets after j * R global batches, which must be
 *  a multiple of the new world_size. This worker skips the batches of the
 *  rank's steps before that point that are its own (step k is worker
 *  k mod num_workers's). A state at the end of its rank's epoch resumes at
 *  the end of the epoch.
 *  @param[in] buf `len` bytes; only read during the call.
 *  @param[in] len ss_loader_state_size(), or 88 for a version 1 state.
 *  @return 0; SS_EINVAL (wrong size, magic or version; a state of other
 *          options; a state of seqstore 0.3 for a shuffled loader (see
 *          above); an elastic resume that cannot be exact: a state saved by
 *          one of several workers, whose rank's position it does not hold,
 *          or j * R global batches that the new ranks cannot split evenly;
 *          the message says which; the loader is unchanged). */
SS_API int ss_loader_state_load(ss_loader *l, const void *buf, size_t len);

/* ------------------------------------------------------ blended batches
 * ss_blend_loader: batches whose rows come from several stores (sources) in
 * chosen proportions, collated together. Row i of this consumer's stream is
 * its i-th sample of the blend of sampler.h (ss_blend: Megatron's greedy
 * rule over global samples, per-source permutations per source epoch, global
 * sample n to consumer n mod (R x W) = rank + R x worker); batch k is rows
 * [k*b, (k+1)*b) of that stream. The output fields are named by their index
 * in source 0; each other source must have a field of that name with the
 * same dtype, sequence flag and trailing shape (refused otherwise, naming the
 * source and field). One collator (on source 0: its scale_attr/offset_attr
 * apply) collates the rows straight from each source's map.
 *
 * Stopping (ss_blend_stop), as Hugging Face datasets' interleave_datasets:
 *  - SS_BLEND_INFINITE: never ends (Megatron);
 *  - SS_BLEND_FIRST_EXHAUSTED: the global stream ends right after the sample
 *    with which some source completes its first epoch (c_j = size_j);
 *  - SS_BLEND_ALL_EXHAUSTED: it ends right after the sample with which the
 *    last source completes its first epoch (the others are oversampled:
 *    they go on into their next epochs meanwhile).
 * The stream's length N is computed at open (O(N x K)); a consumer's rows
 * are the global samples n < N with n mod (R x W) = its number; its last
 * batch may be smaller (dropped with drop_last).
 *
 * The batches are prepared on the calling thread (collator.threads OpenMP
 * threads inside a collation); no per-batch allocation in steady state. */

typedef enum ss_blend_stop {
    SS_BLEND_INFINITE = 0,
    SS_BLEND_FIRST_EXHAUSTED = 1,
    SS_BLEND_ALL_EXHAUSTED = 2
} ss_blend_stop;

typedef struct ss_blend_loader_options {
    unsigned version;               /**< SS_BLEND_LOADER_OPTIONS_VERSION */
    uint32_t nsources;              /**< K >= 1 */
    const ss_store *const *stores;  /**< K stores; borrowed until ss_blend_loader_free() */
    const double *weights;          /**< K weights > 0; copied */
    uint64_t seed;                  /**< seed of the per-source permutations */
    int shuffle;                    /**< 1: a new permutation per source epoch; 0: in order */
    uint32_t world_size, rank;      /**< ranks R (0 means 1) and this rank */
    uint32_t num_workers, worker;   /**< workers per rank W (0 means 1) and this worker */
    ss_blend_stop stop;             /**< SS_BLEND_... */
    uint64_t batch_size;            /**< rows per batch, >= 1 */
    int drop_last;                  /**< 1: a finite stream's smaller last batch is dropped */
    const ss_collate_field *fields; /**< output fields (field = index in source 0);
                                         NULL = every field of source 0. Copied */
    uint32_t nfields;
    const ss_collator_options *collator; /**< NULL = defaults */
} ss_blend_loader_options;

#define SS_BLEND_LOADER_OPTIONS_VERSION 1
#define SS_BLEND_LOADER_OPTIONS_INIT                                                               \
    {                                                                                              \
        SS_BLEND_LOADER_OPTIONS_VERSION, 0, NULL, NULL, 0, 1, 0, 0, 0, 0, SS_BLEND_INFINITE, 0, 0, \
            NULL, 0, NULL                                                                          \
    }
/** Fill `out` with SS_BLEND_LOADER_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_BLEND_LOADER_OPTIONS_VERSION:
 *                      the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_blend_loader_options_init(ss_blend_loader_options *out, unsigned version);

/** A blended batch; everything is borrowed from the loader until the next
 *  ss_blend_loader_next(), ss_blend_loader_state_load() or
 *  ss_blend_loader_free(). */
typedef struct ss_blend_batch {
    uint64_t position;       /**< its number in this consumer's stream, from 0 */
    uint64_t rows;           /**< B */
    const uint32_t *sources; /**< [B] source of each row */
    const uint64_t *indices; /**< [B] example index in its source */
    ss_collated_batch data;  /**< the collated fields (see collate.h) */
} ss_blend_batch;

typedef struct ss_blend_loader ss_blend_loader;

/** Open a blended loader at the start of the stream.
 *  @param[out] out the loader; free it with ss_blend_loader_free().
 *  @return 0; SS_EINVAL (bad version, NULL stores/weights, batch_size 0, an
 *          unknown stop, a source without a field of source 0's name or with
 *          another dtype, sequence flag or shape: "source 2 (of 3): field
 *          'tok' is i32, source 0's is u16"; a finite stream so long that
 *          finding its end, about N x K steps, would exceed 2^34 steps);
 *          as ss_blend_create(),
 *          ss_collator_create(); SS_ENOMEM. */
SS_API int ss_blend_loader_open(ss_blend_loader **out, const ss_blend_loader_options *options);
/** Free the loader. Accepts NULL. */
SS_API void ss_blend_loader_free(ss_blend_loader *l);

/** The next batch of this consumer.
 *  @param[out] out the batch (see ss_blend_batch), NULL at the end or on error.
 *  @return 0; SS_ITEROVER at the end of a finite stream (again on every
 *          call); SS_ECORRUPT, SS_ERANGE (reading an example; the message
 *          names the source and example); SS_ENOMEM. After an error the
 *          position is unchanged. */
SS_API int ss_blend_loader_next(const ss_blend_batch **out, ss_blend_loader *l);

/** Global samples of the finite stream (N), or UINT64_MAX when infinite. */
SS_API uint64_t ss_blend_loader_count(const ss_blend_loader *l);
/** Samples source j gave over all consumers up to this consumer's last row
 *  handed out (c_j), and the epochs it completed (c_j / size_j), as
 *  ss_blend_source_count() and ss_blend_source_epoch(); 0 for a bad
 *  argument. */
SS_API uint64_t ss_blend_loader_source_count(const ss_blend_loader *l, uint32_t source);
SS_API uint64_t ss_blend_loader_source_epoch(const ss_blend_loader *l, uint32_t source);

/** Bytes of a saved state: 8 x (K + 6). */
SS_API size_t ss_blend_loader_state_size(const ss_blend_loader *l);
/** Save the position after the batches handed out so far ("SSBLDLD1", the
 *  batch position, a fingerprint of the options, then ss_blend's state).
 *  @return 0; SS_EBUFS (cap < ss_blend_loader_state_size()); SS_EINVAL. */
SS_API int ss_blend_loader_state_save(void *buf, size_t cap, size_t *len, const ss_blend_loader *l);
/** Continue exactly after a saved state of a loader with the same options.
 *  @return 0; SS_EINVAL (not such a state: the loader is unchanged). */
SS_API int ss_blend_loader_state_load(ss_blend_loader *l, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_LOADER_H */
