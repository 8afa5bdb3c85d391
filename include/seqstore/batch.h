/* SPDX-License-Identifier: BSD-2-Clause */
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

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared in select.h (repeated: C11 allows identical typedefs). */
typedef struct ss_selection ss_selection;

/** What to do with the examples left after the last full fixed-size batch. */
typedef enum ss_remainder {
    SS_REMAINDER_INCLUDE = 0,   /**< keep them as a smaller last batch */
    SS_REMAINDER_SKIP = 1,      /**< drop them */
    SS_REMAINDER_DIVISIBLE = 2, /**< refuse (SS_EINVAL) an order whose size is
                                    not a multiple of batch_size */
    SS_REMAINDER_PAD = 3        /**< fill the last batch up to batch_size by
                                    repeating the order from its start (every
                                    batch full; PyTorch DistributedSampler) */
} ss_remainder;

/** Options of ss_batcher_create() and ss_bucket_batches(). Start from
 *  SS_BATCH_OPTIONS_INIT and set batch_size or max_tokens, not both. Every
 *  field is honoured or refused: a token-budget field (max_sentences,
 *  batch_size_multiple > 1, skip_too_long) in fixed-size mode, and
 *  batch_size or a remainder other than INCLUDE in token-budget mode, are
 *  SS_EINVAL. */
typedef struct ss_batch_options {
    unsigned version;             /**< SS_BATCH_OPTIONS_VERSION */
    uint64_t batch_size;          /**< fixed-size mode: examples per batch (> 0) */
    ss_remainder remainder;       /**< fixed-size mode: remainder policy */
    uint64_t max_tokens;          /**< > 0: token-budget mode; the padded size
                                       n * max_len of a batch stays <= max_tokens */
    uint64_t max_sentences;       /**< token-budget mode: most examples per batch;
                                       0 = no limit */
    uint64_t batch_size_multiple; /**< token-budget mode: m; batch sizes are a
                                    multiple of m or smaller than m (0 or 1:
                                    any); see ss_batcher_create() */
    int skip_too_long;            /**< token-budget mode: 1 = skip examples longer
                                       than max_tokens (counted); 0 = error */
} ss_batch_options;

#define SS_BATCH_OPTIONS_VERSION 1
#define SS_BATCH_OPTIONS_INIT                                                                      \
    { SS_BATCH_OPTIONS_VERSION, 0, SS_REMAINDER_INCLUDE, 0, 0, 0, 0 }
/** Fill `out` with SS_BATCH_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_BATCH_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_batch_options_init(ss_batch_options *out, unsigned version);

/** A list of batches (see above). Reading (count, get) may be shared by
 *  threads; ss_batcher_shuffle() must not run concurrently with anything else
 *  on the same batcher. */
typedef struct ss_batcher ss_batcher;

/** Cut `order` (n store indices) into batches.
 *
 *  Fixed-size mode (max_tokens == 0): consecutive runs of batch_size
 *  examples, the remainder handled by `remainder`.
 *
 *  Token-budget mode (max_tokens > 0), fairseq's batch_by_size: examples
 *  are taken in order, and each batch is the longest run of examples from
 *  its start that fits: n <= max_sentences (if set) and n * M <=
 *  max_tokens, M the longest length in the run. With batch_size_multiple
 *  m > 1 a run of n >= m examples that does not reach the end of the order
 *  is cut down to its first m * floor(n / m) examples, and the next batch
 *  starts after them. Guaranteed for every batch: n * M <= max_tokens,
 *  n <= max_sentences, and n is a multiple of m or n < m. A batch has n < m
 *  when fewer than m examples fit the budget (long examples), when the
 *  examples cut off a full run cannot share a batch with the example after
 *  them, or when it is the last batch, which keeps whatever is left (any n).
 *  fairseq's batch_by_size_vec makes the same promises.
 *
 *  Fixed-size mode with SS_REMAINDER_PAD: the last batch is filled up to
 *  batch_size with order[0], order[1], ... (cyclically if n < batch_size).
 *  @param[out] out    the batcher, in creation order; free it with
 *                     ss_batcher_free().
 *  @param[in] order   n store indices (copied; not checked against a store);
 *                     may be NULL if n is 0.
 *  @param[in] lengths n lengths, lengths[i] belongs to order[i]; may be NULL
 *                     in fixed-size mode. See ss_lengths_gather(). Read
 *                     during the call only.
 *  @param[in] n       entries of order (and lengths).
 *  @param[in] options required (batch_size or max_tokens must be set).
 *  @return 0; SS_EINVAL (NULL options, an unknown options version,
 *          batch_size 0 in fixed-size mode, a bad remainder, an option of
 *          the other mode (see ss_batch_options), an indivisible
 *          order with SS_REMAINDER_DIVISIBLE, NULL order with n > 0, NULL
 *          lengths in token-budget mode, or an example longer than
 *          max_tokens without skip_too_long: the message names its index and
 *          length); SS_ENOMEM. */
SS_API int ss_batcher_create(ss_batcher **out, const uint64_t *order, const uint64_t *lengths,
                             uint64_t n, const ss_batch_options *options);

/** Free a batcher. Accepts NULL. */
SS_API void ss_batcher_free(ss_batcher *b);

/** Number of batches (0 for NULL). */
SS_API uint64_t ss_batcher_count(const ss_batcher *b);

/** Examples skipped because they were longer than max_tokens (token-budget
 *  mode with skip_too_long); 0 for NULL. */
SS_API uint64_t ss_batcher_skipped(const ss_batcher *b);

/** Batch number `k` in the current batch order (see ss_batcher_shuffle()).
 *  @param[out] indices points to *n store indices owned by the batcher;
 *                      read-only, valid until ss_batcher_free() (a shuffle
 *                      reorders batches, not their contents).
 *  @param[out] n       examples in the batch.
 *  @return 0; SS_ERANGE if k >= ss_batcher_count(); SS_EINVAL (NULL
 *          argument). */
SS_API int ss_batcher_get(const uint64_t **indices, size_t *n, const ss_batcher *b, uint64_t k);

/** Set the batch order: with `shuffle` != 0 a permutation of the creation
 *  order that depends only on (seed, epoch) (the same on every machine);
 *  with `shuffle` 0 the creation order (seed and epoch are ignored). Each
 *  call starts from the creation order, so calls do not compound. No
 *  allocation.
 *  @return 0, or SS_EINVAL (NULL batcher). */
SS_API int ss_batcher_shuffle(ss_batcher *b, int shuffle, uint64_t seed, uint64_t epoch);

/** Lengths for token-budget batching: out[i] = the largest length of example
 *  indices[i] over `fields` (fairseq's max over source and target). Reads
 *  only the length index; of a dataset, its stored lengths (spec/FORMAT.md
 *  §13.1) when it has them, opening no shard, else the shards' indexes.
 *  @param[out] out     n lengths.
 *  @param[in]  fields  `nfields` >= 1 field indices (a fixed field counts 1).
 *  @param[in]  indices n store indices.
 *  @return 0; SS_ERANGE (a bad field or index; the message names it);
 *          SS_EINVAL (NULL store, no fields, NULL out or indices with
 *          n > 0); of a dataset, the error of a shard that cannot be opened
 *          (SS_ENOTFOUND, SS_ECORRUPT...; the message names the shard). */
SS_API int ss_lengths_gather(uint64_t *out, const ss_store *store, const uint32_t *fields,
                             size_t nfields, const uint64_t *indices, uint64_t n);

/** Padding statistics of the batches: *real = sum of lengths of the batched
 *  examples, *padded = sum over batches of n * max length, where an
 *  example's length is its largest over `fields` (as ss_lengths_gather()).
 *  Padding waste is 1 - real / padded. Reads only the length index.
 *  @param[in]  store   the store the batcher's indices refer to.
 *  @param[in]  fields  `nfields` >= 1 field indices.
 *  @param[out] real    sum of lengths.
 *  @param[out] padded  sum of padded sizes.
 *  @return 0; SS_ERANGE (a bad field, or a batched index beyond the store);
 *          SS_EINVAL (NULL argument, no fields). */
SS_API int ss_batcher_padding(uint64_t *real, uint64_t *padded, const ss_batcher *b,
                              const ss_store *store, const uint32_t *fields, size_t nfields);

/* ----------------------------------------------------------- bucket index */

/** Prefix of the attribute that holds a bucket index. */
#define SS_BUCKET_ATTR_PREFIX "ss.bucket."
/** Most length keys of a bucket index. */
#define SS_BUCKET_MAX_KEYS 4

/** A bucket index: the examples sorted by their keys (lengths of fields by
 *  default; lexicographically: first key, then the next; ascending unless
 *  built descending), cut into buckets, and inside each bucket listed in
 *  store index order (torchnet's BucketSortedDataset: at resolution 3 the
 *  lengths {2, 1, 1} of examples 0, 1, 2 form one bucket, in the order
 *  0, 1, 2). Fixed-width buckets (resolution R) start where floor(key / R)
 *  changes for some key, so examples of one bucket have, in every key,
 *  keys within one range [q * R, (q + 1) * R). Estimated boundaries: see
 *  ss_bucket_options.max_buckets. */
typedef struct ss_bucket ss_bucket;

/** Key of a bucket index from a callback: key `key` (0..nkeys-1) of
 *  example `index`. Called during ss_bucket_create() only, from the calling
 *  thread. */
typedef uint64_t (*ss_bucket_key_fn)(void *user, size_t key, uint64_t index);

/** Options of ss_bucket_create(). Start from SS_BUCKET_OPTIONS_INIT and set
 *  exactly one of resolution and max_buckets. */
typedef struct ss_bucket_options {
    unsigned version;            /**< SS_BUCKET_OPTIONS_VERSION */
    uint64_t resolution;         /**< > 0: fixed-width buckets of width R */
    uint64_t max_buckets;        /**< > 0 (resolution 0): estimated boundaries: at
                                      most max_buckets buckets, cut between different
                                      first keys so as to minimise the padding of the
                                      buckets, sum of (examples * longest - total
                                      length), an upper bound of their batches'
                                      padding. Exact over the histogram of the first
                                      key (dynamic programming, O(max_buckets * D^2)
                                      for D distinct keys); with D > 2048 the keys are
                                      first grouped into 2048 bins of about equal
                                      counts, a bin never splitting a key. Narrow
                                      buckets where lengths are dense, as speech
                                      toolkits cut duration buckets at quantiles */
    int descending;              /**< 1: sort keys descending (longest first) */
    const uint64_t *const *keys; /**< NULL, or nkeys arrays of `count` keys (any
                                      meaning: a duration, a priority); read during the
                                      call only */
    ss_bucket_key_fn key_fn;     /**< NULL, or a callback giving the keys */
    void *key_user;              /**< passed to key_fn */
    uint64_t count;              /**< examples, with keys or key_fn (must equal the
                                      store's count if a store is given) */
} ss_bucket_options;

#define SS_BUCKET_OPTIONS_VERSION 1
#define SS_BUCKET_OPTIONS_INIT                                                                     \
    { SS_BUCKET_OPTIONS_VERSION, 0, 0, 0, NULL, NULL, NULL, 0 }
/** Fill `out` with SS_BUCKET_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_BUCKET_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_bucket_options_init(ss_bucket_options *out, unsigned version);

/** Build a bucket index in memory; the one constructor. The options say
 *  where the keys come from:
 *   - neither `options.keys` nor `options.key_fn` (the default): the
 *     store's lengths of `fields` (its length index, no data page read);
 *   - `options.keys`: the caller's `nkeys` arrays of `options.count` keys
 *     (a converter that knows the lengths while writing needs no store);
 *   - `options.key_fn`: a callback, for `options.count` examples;
 *  and how they are cut: fixed-width buckets (`resolution`) or estimated
 *  boundaries (`max_buckets`), ascending or descending. The index owns its
 *  arrays and does not borrow the store.
 *  An index stored with ss_bucket_set() records its flags (layout version 2
 *  when descending, with estimated boundaries or keyed without fields).
 *  @param[out] out     the index; free it with ss_bucket_free().
 *  @param[in]  store   the store (required for length keys; else may be
 *                      NULL); read during the call only.
 *  @param[in]  fields  `nkeys` field indices: the length keys, or with
 *                      keys/key_fn the fields whose lengths token budgets
 *                      use (may then be NULL: no token budgets with this
 *                      index, ss_bucket_keys() gives 0).
 *  @param[in]  nkeys   1..SS_BUCKET_MAX_KEYS.
 *  @param[in]  options required.
 *  @return 0; SS_EINVAL (NULL or unknown-version options, both or neither
 *          of resolution and max_buckets, both keys and key_fn, no store or
 *          fields for length keys, a NULL key array, a count unlike the
 *          store's); SS_ERANGE (a field beyond the store); SS_ENOMEM. */
SS_API int ss_bucket_create(ss_bucket **out, const ss_store *store, const uint32_t *fields,
                            size_t nkeys, const ss_bucket_options *options);

/** Open the stored bucket index `name` (attribute ss.bucket.<name>) of an
 *  open store, zero-copy: no sort and no copy of the permutation. The index
 *  borrows from `store`: free it before ss_close().
 *  @param[out] out  the index; free it with ss_bucket_free().
 *  @param[in]  name the index name, as for ss_bucket_set().
 *  @return 0; SS_ENOTFOUND; SS_EINVAL (a bad name, NULL store);
 *          SS_EVERSION (a newer layout version); SS_ECORRUPT (checksum or
 *          bad layout, a field that does not exist, more examples than the
 *          store); SS_ESTATE (the index covers fewer examples than the store
 *          has: rebuild it); SS_ENOMEM. */
SS_API int ss_bucket_open(ss_bucket **out, const ss_store *store, const char *name);

/** Free a bucket index. Accepts NULL. */
SS_API void ss_bucket_free(ss_bucket *b);

/** Stage the bucket index as attribute ss.bucket.<name> on a writer (written
 *  at its next commit or finish; the index is copied and may be freed).
 *  @param[in] name 1 or more bytes of printable ASCII 0x21..0x7e, at most
 *                  SS_MAX_ATTR_NAME minus the prefix.
 *  @return 0; SS_EINVAL (a bad name, NULL writer or index); SS_ENOMEM; as
 *          ss_writer_set_attr(). */
SS_API int ss_bucket_set(ss_writer *w, const char *name, const ss_bucket *b);

/** Build the bucket index of the finished store at `path` and store it as
 *  ss.bucket.<name> (opens the store, builds as ss_bucket_create() with
 *  `fields`, `nkeys` and `options`, so any index it builds: descending,
 *  estimated boundaries, keys; appends the attribute). The store must not be
 *  open in this process nor have an active writer.
 *  @return 0; SS_EINVAL and SS_ERANGE as ss_bucket_create() and
 *          ss_bucket_set() (NULL path too); SS_EBUSY (the store changed
 *          between build and write); as ss_open(), ss_writer_open() and
 *          ss_writer_finish(). */
SS_API int ss_bucket_save(const char *path, const char *name, const uint32_t *fields, size_t nkeys,
                          const ss_bucket_options *options);

/** Examples covered (0 for NULL). */
SS_API uint64_t ss_bucket_size(const ss_bucket *b);
/** Number of buckets (0 for NULL). */
SS_API uint64_t ss_bucket_count(const ss_bucket *b);
/** The resolution R (0 for NULL or equal-mass buckets). */
SS_API uint64_t ss_bucket_resolution(const ss_bucket *b);
/** 1 if the index sorts its keys descending, else 0 (also for NULL). */
SS_API int ss_bucket_descending(const ss_bucket *b);
/** Number of length keys (0 for NULL, or an index keyed without fields);
 *  `fields` (may be NULL, else room for SS_BUCKET_MAX_KEYS) receives their
 *  field indices. */
SS_API size_t ss_bucket_keys(uint32_t *fields, const ss_bucket *b);

/** The sorted permutation (ss_bucket_size() indices) and the bucket starts
 *  (ss_bucket_count() + 1 offsets into it): bucket q holds
 *  perm[starts[q] .. starts[q+1]). Borrowed (from the map for a stored
 *  index), little-endian on disk; valid until ss_bucket_free(). On a
 *  big-endian host they are a converted copy. For a stored index the
 *  entries are not range-checked: check perm[i] < ss_bucket_size(). NULL
 *  for NULL. */
SS_API const uint64_t *ss_bucket_permutation(const ss_bucket *b);
/** The bucket starts; see ss_bucket_permutation(). */
SS_API const uint64_t *ss_bucket_starts(const ss_bucket *b);

/** A bucket-sorted order (torchnet's BucketSortedDataset): buckets in
 *  key order (ascending, or descending for a descending index), examples
 *  inside each bucket shuffled by (seed, epoch) when `shuffle` is set, else
 *  in store index order. Only examples
 *  in `sel` (NULL: all) are written.
 *  @param[out] out  room for ss_selection_count(sel) (or ss_bucket_size())
 *                   indices.
 *  @param[out] n    indices written.
 *  @return 0; SS_EINVAL (`sel` made for another count, NULL b or n, NULL
 *          out with a non-empty index); SS_ECORRUPT (an index entry beyond
 *          the count). */
SS_API int ss_bucket_order(uint64_t *out, uint64_t *n, const ss_bucket *b, const ss_selection *sel,
                           int shuffle, uint64_t seed, uint64_t epoch);

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
 *  @return 0; SS_EINVAL (`sel` made for another count, NULL b or n, NULL
 *          out with a non-empty index); SS_ECORRUPT (a bad index entry);
 *          SS_ENOMEM (it allocates a temporary sampler). */
SS_API int ss_bucket_block_order(uint64_t *out, uint64_t *n, const ss_bucket *b,
                                 const ss_selection *sel, uint64_t block_size,
                                 uint64_t window_blocks, uint64_t seed, uint64_t epoch);

/** Batches drawn from within one bucket only (torchnet's
 *  BucketBatchDataset): every bucket's examples (restricted to `sel`,
 *  shuffled inside the bucket by (seed, epoch) when `shuffle` is set) are
 *  cut into batches by `options` separately (a remainder stays a smaller
 *  batch of its bucket under SS_REMAINDER_INCLUDE), then the batch order is
 *  shuffled by (seed, epoch) when `shuffle` is set. Token budgets use the
 *  largest of the index's key lengths.
 *  @param[out] out     the batcher; free it with ss_batcher_free().
 *  @param[in]  store   the store the index belongs to; needed only in
 *                      token-budget mode (else may be NULL); only read
 *                      during the call.
 *  @param[in]  sel     NULL: all examples.
 *  @param[in]  options required, as for ss_batcher_create().
 *  @return as ss_batcher_create() and ss_bucket_order(); SS_EINVAL also
 *          for a store with fewer examples than the index, or a NULL store
 *          in token-budget mode; SS_ERANGE (a key field beyond the store). */
SS_API int ss_bucket_batches(ss_batcher **out, const ss_bucket *b, const ss_store *store,
                             const ss_selection *sel, const ss_batch_options *options, int shuffle,
                             uint64_t seed, uint64_t epoch);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_BATCH_H */
