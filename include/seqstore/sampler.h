/* SPDX-License-Identifier: BSD-2-Clause */
/* seqstore/sampler.h - part of the public API; include <seqstore.h>, not this file.
 *
 * Samplers: the order in which a job visits the examples of a selection,
 * epoch by epoch, split over ranks and workers.
 *
 * The global order. For a given (seed, epoch) a sampler defines one global
 * sequence of selected examples, the same on every machine:
 *  - SS_SAMPLE_SEQUENTIAL: the selection in index order;
 *  - SS_SAMPLE_SHUFFLE: a permutation of the selection, a new one every
 *    epoch: position p holds selected example perm(p), perm a keyed
 *    bijection of [0, N) (a Feistel network with cycle walking, as Grain's
 *    index shuffle; spec/SDK_SECTIONS.md) keyed by (seed, epoch), each
 *    position computed on its own, so no list of the epoch is kept;
 *  - SS_SAMPLE_REPLACEMENT: `num_samples` uniform draws with replacement;
 *    draw t depends on (seed, epoch, t) only;
 *  - SS_SAMPLE_WEIGHTED: `num_samples` draws with replacement, example i
 *    with probability weights[i] / sum(weights); draw t depends on
 *    (seed, epoch, t) only;
 *  - SS_SAMPLE_BLOCK_SHUFFLE: locality-aware shuffling (below).
 *
 * Block shuffle. Reading a store larger than the page cache in a uniformly
 * random order makes every read a random disk read. BLOCK_SHUFFLE keeps
 * reads local, in the family of MosaicML Streaming's block shuffles and the
 * shuffle buffers of streaming datasets:
 *  1. the selection, in index order, is cut into blocks of consecutive
 *     selected examples: `block_size` examples each (the last one shorter),
 *     or, when `block_bytes` is set, as many consecutive examples as fit in
 *     `block_bytes` bytes (greedily; at least one example; the bytes of an
 *     example are the sum over fields of length * row bytes, taken from
 *     `store`'s length index at create, no data page is read);
 *  2. the order of the blocks is shuffled by (seed, epoch);
 *  3. the shuffled sequence of blocks is cut into windows of
 *     `window_blocks` consecutive blocks (the last one may hold fewer), and
 *     the examples inside each window are shuffled (a shuffle buffer of
 *     window_blocks blocks, drained completely before the next fills).
 * Steps 2 and 3 permute by keyed bijections too (of the blocks, and of each
 * window's positions), so any position is found without a list: in O(1)
 * for blocks of block_size examples, and by binary searches over the
 * epoch's block order with block_bytes or a bucket.
 * Every selected example appears exactly once per epoch. Within the
 * positions of one window there are examples of at most window_blocks
 * blocks, and every block's examples are all in one window.
 *
 * The trade-off. With blocks of K examples (or B bytes) and windows of M
 * blocks:
 *  - locality: at any time the reader works in at most M regions of the
 *    store, each K consecutive examples long, and reads each region once;
 *    with blocks of a few MiB the disk sees mostly sequential reads and the
 *    OS read-ahead works. M blocks (M * B bytes) must fit in the page cache
 *    with room to spare, or pages are evicted before their examples are
 *    read. Measured (bench/bench_shuffle_locality.c, 1.5 GiB store, 256 MiB
 *    memory limit): an epoch takes 4.9 s sequential, 6.2 s with 16 MiB
 *    blocks, 12 s with 2 MiB blocks, 74 s with 256 KiB blocks, and about
 *    2300 s with a full shuffle.
 *  - randomness: examples of one block always land in the same window, so
 *    within M * K positions of each other, and a batch of b consecutive
 *    positions holds examples of at most about M blocks (roughly b / M from
 *    each). Larger M or smaller K mixes better and reads less locally: K = 1
 *    (or M >= the number of blocks) is a full shuffle, M = 1 a shuffled
 *    sequence of sequential blocks. The block order is drawn anew every
 *    epoch, so consecutive epochs are uncorrelated at the block level.
 *    If neighbouring examples are correlated (pieces of one document or one
 *    recording), that correlation survives inside a batch: make M large
 *    enough that no block dominates a batch (M >= 8 for batches of 32 or
 *    more is a reasonable start) and B as large as the memory budget
 *    M * B allows.
 * Blocks within buckets. With `bucket` set (a bucket index of the store,
 * see batch.h), the global order is bucket-sorted: the buckets in ascending
 * key order, and inside each bucket its selected examples in index order
 * cut into blocks (by examples or bytes; blocks never cross buckets),
 * shuffled block-wise and windowed as above, with windows never crossing
 * buckets either. Batches cut from this order hold examples of similar
 * length (except at the boundary between two buckets) and reads stay local
 * within a bucket. The RNG streams of bucket g are seeded by (seed, epoch,
 * g); a bucket without selected examples is skipped.
 *
 * Sharding. There are R = world_size ranks, each with W = num_workers
 * workers, and every rank consumes batches of b = batch_size examples per
 * step, so a global step consumes B = R * b examples. Global step k is the
 * global positions [k*B, (k+1)*B); inside it, rank r takes the positions
 * k*B + r + R*j for j = 0..b-1 (an interleaved slice), and the step is
 * produced by worker k mod W of that rank. Hence the examples of global step
 * k do not depend on R or W, as long as the global batch B is the same
 * ("elastic determinism"), and the ranks' and workers' slices are disjoint
 * and together cover the global order.
 *
 * Epoch length. With N examples in the global order, an epoch has
 * S = floor(N / B) global steps when drop_last is set (the remainder is
 * dropped), else S = ceil(N / B) and the positions N .. S*B-1 repeat the
 * global order from its start (position p >= N is position p mod N). Every
 * rank therefore sees exactly S batches of b examples per epoch; worker w
 * sees the steps k < S with k mod W = w.
 *
 * Memory. A sampler's memory does not grow with the selection for
 * SEQUENTIAL, SHUFFLE, REPLACEMENT and BLOCK_SHUFFLE by block_size (a few
 * integers and the selection's ranges: 10^12 examples are as cheap as 10);
 * it is 24 bytes per block with block_bytes (the cut, and the epoch's block
 * order; 16 bytes per selected example while ss_sampler_create() cuts), 8
 * bytes per selected example more with a bucket index (the grouped order),
 * and 8 per selected example for WEIGHTED (the cumulative weights).
 *
 * Orders of seqstore 0.3. Up to 0.3 SHUFFLE and BLOCK_SHUFFLE drew
 * Fisher-Yates permutations of the whole epoch (8 bytes per example): the
 * same options now give other orders. A state saved by 0.3 (version 1)
 * resumes the other kinds, whose orders did not change, and is refused by
 * these two with a message saying so.
 *
 * Resuming. ss_sampler_state_save() captures (seed, epoch, position) and a
 * fingerprint of the options in a small blob; ss_sampler_state_load() on a
 * sampler made with the same options continues exactly where it stopped,
 * in O(1) (O(blocks) with blocks by bytes or buckets): the epoch is not
 * recomputed.
 * The loader's state (loader.h) also resumes with other ranks and workers at
 * the same global batch, counting its position in global steps. */
#ifndef SEQSTORE_SAMPLER_H
#define SEQSTORE_SAMPLER_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared in select.h and batch.h (repeated: C11 allows identical
 * typedefs). */
typedef struct ss_selection ss_selection;
typedef struct ss_bucket ss_bucket;

/** The global order of a sampler (see above). */
typedef enum ss_sampler_kind {
    SS_SAMPLE_SEQUENTIAL = 0,
    SS_SAMPLE_SHUFFLE = 1,
    SS_SAMPLE_REPLACEMENT = 2,
    SS_SAMPLE_WEIGHTED = 3,
    SS_SAMPLE_BLOCK_SHUFFLE = 4
} ss_sampler_kind;

/** Options of ss_sampler_create(). Start from SS_SAMPLER_OPTIONS_INIT. */
typedef struct ss_sampler_options {
    unsigned version;       /**< SS_SAMPLER_OPTIONS_VERSION (1 is also accepted) */
    ss_sampler_kind kind;   /**< SS_SAMPLE_... */
    uint64_t seed;          /**< seed of every random choice; same seed, same order */
    uint32_t world_size;    /**< ranks R; 0 means 1 */
    uint32_t rank;          /**< this rank, < world_size */
    uint32_t num_workers;   /**< workers per rank W; 0 means 1 */
    uint32_t worker;        /**< this worker, < num_workers */
    uint64_t batch_size;    /**< examples per rank per step b; 0 means 1. The
                                 sampler only uses it to cut epochs into whole
                                 global steps and to assign steps to workers. */
    int drop_last;          /**< 1: drop the last partial global step; 0: pad it
                                 by repeating the global order from its start */
    int infinite;           /**< 1: never end; epochs follow one another
                                 (epoch, epoch + 1, ...) */
    uint64_t num_samples;   /**< REPLACEMENT/WEIGHTED: draws per epoch; 0 = the
                                 selection's count */
    const double *weights;  /**< WEIGHTED: one weight >= 0 per selected example,
                                in selection order (copied at create); see
                                ss_weights_from_length() */
    uint64_t block_size;    /**< BLOCK_SHUFFLE: examples per block; 0 = 1024
                                 (ignored when block_bytes is set) */
    uint64_t window_blocks; /**< BLOCK_SHUFFLE: blocks per shuffle window; 0 = 4 */
    /* Version 2. */
    uint64_t block_bytes;    /**< BLOCK_SHUFFLE: > 0: cut blocks by bytes, at most
                                  this many per block (a larger example is a
                                  block of its own); needs `store` */
    const ss_store *store;   /**< BLOCK_SHUFFLE with block_bytes: the store the
                                  selection indexes; its length index is read at
                                  create only (not kept) */
    const ss_bucket *bucket; /**< BLOCK_SHUFFLE: NULL, or a bucket index built
                                  for the selection's total: blocks within
                                  buckets (read at create only, not kept) */
} ss_sampler_options;

/** Version 1 ended at window_blocks; both versions are accepted. */
#define SS_SAMPLER_OPTIONS_VERSION 2
#define SS_SAMPLER_OPTIONS_INIT                                                                    \
    {                                                                                              \
        SS_SAMPLER_OPTIONS_VERSION, SS_SAMPLE_SEQUENTIAL, 0, 1, 0, 1, 0, 1, 0, 0, 0, NULL, 0, 0,   \
            0, NULL, NULL                                                                          \
    }
/** Fill `out` with SS_SAMPLER_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_SAMPLER_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_sampler_options_init(ss_sampler_options *out, unsigned version);

/** A sampler: mutable (it keeps its position), so one thread at a time;
 *  give each worker its own sampler (same options, its own `worker`). */
typedef struct ss_sampler ss_sampler;

/** Create a sampler over `sel`, positioned at the start of epoch 0.
 *
 *  Allocates everything it needs here (see "Memory" above: nothing that
 *  grows with the selection for SHUFFLE and BLOCK_SHUFFLE by block_size; the
 *  block order with block_bytes or a bucket; cumulative weights for
 *  WEIGHTED); ss_sampler_next() never allocates.
 *  @param[out] out     the sampler; free it with ss_sampler_free().
 *  @param[in]  sel     the selection (copied: it may be freed afterwards).
 *  @param[in]  options NULL for sequential, one rank, one worker. Read
 *                      during the call only (weights are copied; store and
 *                      bucket are not kept).
 *  @return 0; SS_EINVAL (NULL sel, rank >= world_size, worker >=
 *          num_workers, an unknown kind, WEIGHTED without weights or with a
 *          negative, non-finite or all-zero weight, REPLACEMENT or WEIGHTED
 *          with num_samples > 0 on an empty selection, world_size *
 *          batch_size overflowing, an unknown options version, block_bytes
 *          without store, a store or bucket index whose example count
 *          differs from the selection's total; the message names the
 *          parameter); SS_ECORRUPT (a bad bucket index entry); SS_ENOMEM. */
SS_API int ss_sampler_create(ss_sampler **out, const ss_selection *sel,
                             const ss_sampler_options *options);

/** Free a sampler. Accepts NULL. */
SS_API void ss_sampler_free(ss_sampler *s);

/** Start epoch `epoch` from its beginning (O(1); O(blocks) with blocks by
 *  bytes or buckets; no allocation). Epochs need not be consecutive.
 *  @return 0, or SS_EINVAL (NULL sampler). */
SS_API int ss_sampler_set_epoch(ss_sampler *s, uint64_t epoch);

/** The current epoch (0 for NULL). */
SS_API uint64_t ss_sampler_epoch(const ss_sampler *s);

/** Examples this rank and worker receive per epoch (a multiple of
 *  batch_size). */
SS_API uint64_t ss_sampler_epoch_length(const ss_sampler *s);

/** Examples this rank and worker already received in the current epoch,
 *  0 .. ss_sampler_epoch_length(). */
SS_API uint64_t ss_sampler_position(const ss_sampler *s);

/** Global steps per epoch S (the same for every rank). */
SS_API uint64_t ss_sampler_steps_per_epoch(const ss_sampler *s);

/** Next store indices for this rank and worker.
 *
 *  Fills up to `max` indices; *n < max only at the end of an epoch. At the
 *  end of a (finite) epoch it returns SS_ITEROVER with *n = 0 until
 *  ss_sampler_set_epoch() starts another one. The sampler holds no store
 *  and reads nothing: for a dataset under a URL (seqstore/remote.h) the
 *  caller passes the indices of the batches it will read next to
 *  ss_prefetch(), as the loader does. An infinite sampler moves on
 *  to the next epoch by itself (a call may then return indices of two
 *  epochs); if its epoch length is 0 it returns SS_ITEROVER. With max = 0
 *  it returns 0 and *n = 0. Never allocates.
 *  @param[out] out_indices `max` slots; may be NULL if max is 0.
 *  @param[in]  max         capacity of out_indices.
 *  @param[out] n           indices written (set to 0 on error).
 *  @return 0 (*n >= 1 when max > 0); SS_ITEROVER (see above); SS_EINVAL
 *          (NULL sampler or n, NULL out_indices with max > 0). */
SS_API int ss_sampler_next(uint64_t *out_indices, size_t max, size_t *n, ss_sampler *s);

/** Bytes ss_sampler_state_save() writes (48, the layout of
 *  spec/SDK_SECTIONS.md, version 2); 0 for NULL. */
SS_API size_t ss_sampler_state_size(const ss_sampler *s);

/** Save the sampler's position: (seed, epoch, position) and a fingerprint
 *  of its options and selection, as ss_sampler_state_size() little-endian
 *  bytes (see spec/SDK_SECTIONS.md). Save between ss_sampler_next() calls.
 *  @param[out] buf `cap` bytes.
 *  @param[in]  cap bytes of buf.
 *  @param[out] len bytes written (or needed, on SS_EBUFS); may be NULL.
 *  @return 0; SS_EBUFS if cap < ss_sampler_state_size() (nothing written);
 *          SS_EINVAL (NULL sampler or buf). */
SS_API int ss_sampler_state_save(void *buf, size_t cap, size_t *len, const ss_sampler *s);

/** Restore a state saved by ss_sampler_state_save() on a sampler created
 *  with the same selection and options (seed included); the next
 *  ss_sampler_next() continues exactly where the saved sampler stopped.
 *  @param[in] buf `len` bytes; only read during the call.
 *  A version 1 state (seqstore 0.3) loads into SEQUENTIAL, REPLACEMENT and
 *  WEIGHTED samplers, whose orders are unchanged since.
 *  @return 0; SS_EINVAL (wrong size, magic or version, another seed, a state
 *          of a sampler with different options or selection, a position
 *          beyond the epoch, a version 1 state of SHUFFLE or BLOCK_SHUFFLE
 *          (another order: "saved by seqstore 0.3 ... cannot resume
 *          exactly"), NULL argument; the sampler is unchanged). */
SS_API int ss_sampler_state_load(ss_sampler *s, const void *buf, size_t len);

/** Weights from lengths for SS_SAMPLE_WEIGHTED: out[i] = pow(L_i, power),
 *  where L_i is the length in `field` of the i-th selected example (0^0 is 1).
 *  Reads only the length index. Pass the result as options.weights.
 *  @param[out] out   ss_selection_count(sel) weights.
 *  @param[in]  store the store `sel` was made for.
 *  @param[in]  sel   the selection the sampler will use.
 *  @param[in]  field the field whose lengths count (a fixed field gives 1).
 *  @param[in]  power exponent (1: proportional to length, 0: uniform).
 *  @return 0; SS_ERANGE (bad field); SS_EINVAL (`sel` made for another
 *          count, NULL argument). */
SS_API int ss_weights_from_length(double *out, const ss_store *store, const ss_selection *sel,
                                  uint32_t field, double power);

/* ------------------------------------------------------------- blending
 * Several sources (stores or datasets) read in chosen proportions, as
 * Megatron's blended dataset: global sample n (0, 1, 2, ...) comes from the
 * source j that maximises w_j * (n + 1) - c_j (ties: the lowest j), c_j the
 * samples source j gave before, so after n samples |c_j - w_j * n| < 1 for
 * every j (weights normalised to sum 1). Within a source, its c-th sample is
 * example perm_{j,e}(c mod size_j) of epoch e = c / size_j, perm a
 * permutation of [0, size_j) drawn from (seed, j, e) (or the identity without
 * shuffle): every example once per source epoch, and each source's epochs
 * counted on its own. The state is (n, c_0 ... c_{K-1}): deterministic for a
 * seed and resumable exactly. Sharding: global sample n goes to rank
 * n mod R and, within it, to worker (n / R) mod W, so the R x W consumers
 * together read the global stream once; each consumer's ss_blend_next()
 * steps the selection through the others' samples too (O(K x R x W) per
 * sample, no communication). The caller reads the example with ss_get() on
 * its own store for that source. */

typedef struct ss_blend ss_blend;

typedef struct ss_blend_options {
    unsigned version;      /**< SS_BLEND_OPTIONS_VERSION */
    uint32_t nsources;     /**< K, 1..65536 */
    const double *weights; /**< K weights > 0 (finite); normalised to sum 1; copied */
    const uint64_t *sizes; /**< K source sizes >= 1 (ss_count() of each); copied */
    uint64_t seed;         /**< seed of the per-source permutations */
    int shuffle;           /**< 1: a new permutation per source epoch; 0: in order */
    uint32_t world_size;   /**< ranks R; 0 means 1 */
    uint32_t rank;         /**< < world_size */
    uint32_t num_workers;  /**< workers per rank W; 0 means 1 */
    uint32_t worker;       /**< < num_workers */
} ss_blend_options;

#define SS_BLEND_OPTIONS_VERSION 1
#define SS_BLEND_OPTIONS_INIT                                                                      \
    { SS_BLEND_OPTIONS_VERSION, 0, NULL, NULL, 0, 1, 0, 0, 0, 0 }
/** Fill `out` with SS_BLEND_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_BLEND_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_blend_options_init(ss_blend_options *out, unsigned version);

/** Create a blend at global sample 0.
 *  @param[out] out the blend; free it with ss_blend_free().
 *  @return 0; SS_EINVAL (bad version, no source, a weight not > 0 or not
 *          finite, a size 0, rank >= world_size, worker >= num_workers; the
 *          message names it); SS_ENOMEM. */
SS_API int ss_blend_create(ss_blend **out, const ss_blend_options *options);
SS_API void ss_blend_free(ss_blend *b);

/** This consumer's next sample: its source and the example's index there.
 *  Never ends (sources start new epochs on their own).
 *  @param[out] source the source j.  @param[out] index its example.
 *  @return 0; SS_EINVAL (NULL argument). */
SS_API int ss_blend_next(uint32_t *source, uint64_t *index, ss_blend *b);

/** Samples source j has given so far over all consumers (c_j), and its
 *  epoch (c_j / size_j, the epoch its next sample belongs to); 0 for a bad
 *  argument. Global samples so far: ss_blend_position(). */
SS_API uint64_t ss_blend_source_count(const ss_blend *b, uint32_t source);
SS_API uint64_t ss_blend_source_epoch(const ss_blend *b, uint32_t source);
SS_API uint64_t ss_blend_position(const ss_blend *b);

/** Bytes ss_blend_state_save() writes: 8 x (K + 3); 0 for NULL. */
SS_API size_t ss_blend_state_size(const ss_blend *b);
/** Save the blend's state (position, counts and a fingerprint of its
 *  options) into buf; *len (may be NULL) gets the size needed
 *  (ss_blend_state_size()).
 *  @return 0; SS_EBUFS (cap too small: nothing written, *len set);
 *          SS_EINVAL (NULL argument). */
SS_API int ss_blend_state_save(void *buf, size_t cap, size_t *len, const ss_blend *b);
/** Restore a state saved from a blend of the same options (weights, sizes,
 *  seed, shuffle, sharding): the next samples are exactly those the saved
 *  blend would have given.
 *  @return 0; SS_EINVAL (wrong size, other options, counts that do not add
 *          up: the blend is unchanged). */
SS_API int ss_blend_state_load(ss_blend *b, const void *buf, size_t len);

/** "Not given" for ss_rank_from_env()'s rank and world size. */
#define SS_RANK_UNSET UINT32_MAX

/** This process's rank and world size as its launcher set them, for
 *  ss_sampler_options.rank / world_size (reading on many nodes) and
 *  `seqstore convert --shard auto`. Explicit values win: pass SS_RANK_UNSET
 *  in *rank or *world_size to read that value from the environment; a value
 *  already set is kept. The environment is read from the first pair of
 *  variables of which either is set, in this order: RANK and WORLD_SIZE
 *  (torchrun, torch.distributed), OMPI_COMM_WORLD_RANK and
 *  OMPI_COMM_WORLD_SIZE (Open MPI's mpirun), SLURM_PROCID and SLURM_NTASKS
 *  (srun). With none set, rank 0 of world size 1.
 *  @param[in,out] rank       SS_RANK_UNSET or an explicit rank.
 *  @param[in,out] world_size SS_RANK_UNSET or an explicit world size.
 *  @param[out]    source     may be NULL; a static string naming where the
 *                            values came from: "RANK/WORLD_SIZE",
 *                            "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE",
 *                            "SLURM_PROCID/SLURM_NTASKS", "explicit" (both
 *                            given) or "default" (none set).
 *  @return 0; SS_EINVAL (NULL rank or world_size; only one variable of the
 *          pair used is set; a value that is not a decimal number below
 *          2^32 - 1; world size 0; rank >= world size; the message names the
 *          variables). On failure *rank and *world_size are unchanged. */
SS_API int ss_rank_from_env(uint32_t *rank, uint32_t *world_size, const char **source);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_SAMPLER_H */
