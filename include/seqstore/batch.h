/* seqstore/batch.h - part of the public API; include <seqstore.h>, not this file.
 *
 * Batching: cutting an order of examples (from a sampler, a selection or a
 * bucket index) into batches, by a fixed size or by a token budget, and
 * precomputed bucket indices that keep examples of similar length together.
 *
 * A batcher (ss_batcher) holds a list of batches, each a list of store
 * indices, computed once at create; reading batches never allocates. Its
 * batch order can be reshuffled per epoch (ss_batcher_shuffle()). To shard
 * batches over ranks, run a sampler over the selection [0, batch count) and
 * use the indices it yields as batch numbers. */
#ifndef SEQSTORE_BATCH_H
#define SEQSTORE_BATCH_H

#include "../seqstore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared in select.h (repeated: C11 allows identical typedefs). */
typedef struct ss_selection ss_selection;

/** What to do with the examples left after the last full fixed-size batch. */
typedef enum ss_remainder {
    SS_REMAINDER_INCLUDE = 0,  /**< keep them as a smaller last batch */
    SS_REMAINDER_SKIP = 1,     /**< drop them */
    SS_REMAINDER_DIVISIBLE = 2 /**< refuse (SS_EINVAL) an order whose size is
                                    not a multiple of batch_size */
} ss_remainder;

typedef struct ss_batch_options {
    unsigned version;             /**< SS_BATCH_OPTIONS_VERSION */
    uint64_t batch_size;          /**< fixed-size mode: examples per batch (> 0) */
    ss_remainder remainder;       /**< fixed-size mode: remainder policy */
    uint64_t max_tokens;          /**< > 0: token-budget mode; the padded size
                                       n * max_len of a batch stays <= max_tokens */
    uint64_t max_sentences;       /**< token-budget mode: most examples per batch;
                                       0 = no limit */
    uint64_t batch_size_multiple; /**< token-budget mode: batch sizes a multiple
                                    of this (0 or 1: any) */
    int skip_too_long;            /**< token-budget mode: 1 = skip examples longer
                                       than max_tokens (counted); 0 = error */
} ss_batch_options;

#define SS_BATCH_OPTIONS_VERSION 1
#define SS_BATCH_OPTIONS_INIT                                                                      \
    { SS_BATCH_OPTIONS_VERSION, 0, SS_REMAINDER_INCLUDE, 0, 0, 0, 0 }

typedef struct ss_batcher ss_batcher;

/** Cut `order` (n store indices) into batches.
 *
 *  Fixed-size mode (max_tokens == 0): consecutive runs of batch_size
 *  examples, the remainder handled by `remainder`.
 *
 *  Token-budget mode (max_tokens > 0), fairseq's batch_by_size: examples are
 *  added greedily in order; before adding example e (length L_e) to a batch
 *  of n examples whose longest has length M, the batch is closed if n ==
 *  max_sentences or (n + 1) * max(M, L_e) > max_tokens. With
 *  batch_size_multiple m > 1 the closed batch keeps only its first
 *  max(m * floor(n / m), n mod m) examples; the rest start the next batch.
 *  The last batch is always kept.
 *  @param[in] lengths n lengths, lengths[i] belongs to order[i]; may be NULL
 *                     in fixed-size mode. See ss_lengths_gather().
 *  @param[in] options required (batch_size or max_tokens must be set).
 *  @return 0; SS_EINVAL (batch_size 0 in fixed-size mode, a bad remainder,
 *          an indivisible order with SS_REMAINDER_DIVISIBLE, NULL lengths in
 *          token-budget mode, or an example longer than max_tokens without
 *          skip_too_long: the message names its index and length); SS_ENOMEM. */
SS_API int ss_batcher_create(ss_batcher **out, const uint64_t *order, const uint64_t *lengths,
                             uint64_t n, const ss_batch_options *options);

/** Free a batcher. Accepts NULL. */
SS_API void ss_batcher_free(ss_batcher *b);

/** Number of batches. */
SS_API uint64_t ss_batcher_count(const ss_batcher *b);

/** Examples skipped because they were longer than max_tokens. */
SS_API uint64_t ss_batcher_skipped(const ss_batcher *b);

/** Batch number `k` in the current batch order: *indices points to *n store
 *  indices owned by the batcher, valid until ss_batcher_free().
 *  @return 0, or SS_ERANGE if k >= ss_batcher_count(). */
SS_API int ss_batcher_get(const ss_batcher *b, uint64_t k, const uint64_t **indices, size_t *n);

/** Set the batch order to a permutation that depends only on (seed, epoch)
 *  (the same on every machine); seed and epoch both 0 with `shuffle` 0
 *  restores creation order.
 *  @return 0. */
SS_API int ss_batcher_shuffle(ss_batcher *b, int shuffle, uint64_t seed, uint64_t epoch);

/** Lengths for token-budget batching: out[i] = the largest length of example
 *  indices[i] over `fields` (fairseq's max over source and target). Reads
 *  only the length index.
 *  @return 0, or SS_ERANGE (a bad field or index; the message names it). */
SS_API int ss_lengths_gather(uint64_t *out, const ss_store *store, const uint32_t *fields,
                             size_t nfields, const uint64_t *indices, uint64_t n);

/** Padding statistics of the batches: *real = sum of lengths of the batched
 *  examples, *padded = sum over batches of n * max length, both in `field`
 *  (or the max over `fields`). Padding waste is 1 - real / padded.
 *  @return 0 or SS_ERANGE. */
SS_API int ss_batcher_padding(const ss_batcher *b, const ss_store *store, const uint32_t *fields,
                              size_t nfields, uint64_t *real, uint64_t *padded);

/* ----------------------------------------------------------- bucket index */

/** Prefix of the attribute that holds a bucket index. */
#define SS_BUCKET_ATTR_PREFIX "ss.bucket."
/** Most length keys of a bucket index. */
#define SS_BUCKET_MAX_KEYS 4

/** A bucket index: a permutation of all examples sorted by their length keys
 *  (lexicographically: first key, then the next; ties by index), cut into
 *  buckets where floor(key / resolution) changes for some key. Examples of
 *  one bucket have, in every key, lengths within one resolution-wide range
 *  [q * R, (q + 1) * R). */
typedef struct ss_bucket ss_bucket;

/** Build a bucket index in memory from the store's length index.
 *  @param[in] fields     `nkeys` (1..SS_BUCKET_MAX_KEYS) field indices, most
 *                        significant first.
 *  @param[in] resolution bucket width R >= 1 in length units.
 *  @return 0; SS_EINVAL (resolution 0, no or too many keys); SS_ERANGE (bad
 *          field; named); SS_ENOMEM. */
SS_API int ss_bucket_build(ss_bucket **out, const ss_store *store, const uint32_t *fields,
                           size_t nkeys, uint64_t resolution);

/** Build a bucket index from length arrays (for converters, which know the
 *  lengths while writing): lengths[k][i] is key k of example i.
 *  `fields` are recorded in the index only. */
SS_API int ss_bucket_build_lengths(ss_bucket **out, const uint64_t *const *lengths,
                                   const uint32_t *fields, size_t nkeys, uint64_t count,
                                   uint64_t resolution);

/** Open the stored bucket index `name` (attribute ss.bucket.<name>) of an
 *  open store, zero-copy: no sort and no copy of the permutation. The index
 *  borrows from `store`: free it before ss_close().
 *  @return 0; SS_ENOTFOUND; SS_ECORRUPT (bad layout); SS_ESTATE (the index
 *          covers fewer examples than the store has: rebuild it); SS_ENOMEM. */
SS_API int ss_bucket_open(ss_bucket **out, const ss_store *store, const char *name);

/** Free a bucket index. Accepts NULL. */
SS_API void ss_bucket_free(ss_bucket *b);

/** Stage the bucket index as attribute ss.bucket.<name> on a writer. */
SS_API int ss_bucket_set(ss_writer *w, const char *name, const ss_bucket *b);

/** Build the bucket index of the finished store at `path` and store it as
 *  ss.bucket.<name> (opens the store, builds, appends the attribute). */
SS_API int ss_bucket_save(const char *path, const char *name, const uint32_t *fields, size_t nkeys,
                          uint64_t resolution);

/** Examples covered. */
SS_API uint64_t ss_bucket_size(const ss_bucket *b);
/** Number of buckets. */
SS_API uint64_t ss_bucket_count(const ss_bucket *b);
/** The resolution R. */
SS_API uint64_t ss_bucket_resolution(const ss_bucket *b);
/** Number of keys; `fields` (may be NULL) receives their field indices. */
SS_API size_t ss_bucket_keys(const ss_bucket *b, uint32_t *fields);

/** The sorted permutation (ss_bucket_size() indices) and the bucket starts
 *  (ss_bucket_count() + 1 offsets into it): bucket q holds
 *  perm[starts[q] .. starts[q+1]). Borrowed (from the map for a stored
 *  index), little-endian on disk; valid until ss_bucket_free(). On a
 *  big-endian host they are a converted copy. */
SS_API const uint64_t *ss_bucket_permutation(const ss_bucket *b);
SS_API const uint64_t *ss_bucket_starts(const ss_bucket *b);

/** A bucket-sorted order (torchnet's BucketSortedDataset): buckets in
 *  ascending key order, examples inside each bucket shuffled by (seed,
 *  epoch) when `shuffle` is set, else in index-sorted order. Only examples
 *  in `sel` (NULL: all) are written.
 *  @param[out] out  room for ss_selection_count(sel) (or ss_bucket_size())
 *                   indices.
 *  @param[out] n    indices written.
 *  @return 0; SS_EINVAL (`sel` made for another count); SS_ECORRUPT. */
SS_API int ss_bucket_order(const ss_bucket *b, const ss_selection *sel, int shuffle, uint64_t seed,
                           uint64_t epoch, uint64_t *out, uint64_t *n);

/** A block-shuffled bucket order (locality-aware): buckets in ascending key
 *  order; inside each bucket its selected examples in index order, cut into
 *  blocks of `block_size` consecutive ones, the blocks shuffled and the
 *  examples shuffled inside windows of `window_blocks` blocks, by (seed,
 *  epoch). Blocks and windows never cross buckets. This is the global order
 *  of a SS_SAMPLE_BLOCK_SHUFFLE sampler with options.bucket = b (see
 *  sampler.h for the randomness/locality trade-off, blocks cut by bytes, and
 *  sharding); use such a sampler directly to shard it or resume it.
 *  Compared with ss_bucket_order() with `shuffle`, an epoch reads each
 *  bucket as window_blocks-block regions of nearby examples instead of at
 *  random.
 *  @param[in] sel          NULL: all examples.
 *  @param[in] block_size   examples per block; 0 = 1024.
 *  @param[in] window_blocks blocks per window; 0 = 4.
 *  @param[out] out  room for ss_selection_count(sel) (or ss_bucket_size())
 *                   indices.
 *  @param[out] n    indices written.
 *  @return 0; SS_EINVAL (`sel` made for another count); SS_ECORRUPT (a bad
 *          index entry); SS_ENOMEM. */
SS_API int ss_bucket_block_order(const ss_bucket *b, const ss_selection *sel, uint64_t block_size,
                                 uint64_t window_blocks, uint64_t seed, uint64_t epoch,
                                 uint64_t *out, uint64_t *n);

/** Batches drawn from within one bucket only (torchnet's
 *  BucketBatchDataset): every bucket's examples (restricted to `sel`,
 *  shuffled inside the bucket by (seed, epoch) when `shuffle` is set) are
 *  cut into batches by `options` separately (a remainder stays a smaller
 *  batch of its bucket under SS_REMAINDER_INCLUDE), then the batch order is
 *  shuffled by (seed, epoch) when `shuffle` is set. Token budgets use the
 *  largest of the index's key lengths.
 *  @return as ss_batcher_create() and ss_bucket_order(). */
SS_API int ss_bucket_batches(ss_batcher **out, const ss_bucket *b, const ss_store *store,
                             const ss_selection *sel, const ss_batch_options *options, int shuffle,
                             uint64_t seed, uint64_t epoch);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_BATCH_H */
