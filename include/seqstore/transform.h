/* SPDX-License-Identifier: BSD-2-Clause */
/* seqstore/transform.h - part of the public API; include <seqstore.h>, not this file.
 *
 * Transforms: user callbacks that change examples or batches on their way from
 * the store to the training loop (normalisation, cropping, noise, masking,
 * token dropout, label mapping).
 *
 * A transform (ss_transform) is a configured callable: a function pointer plus
 * its user data. Transforms compose into a pipeline (ss_pipeline), an ordered
 * list, which a loader applies (ss_loader_options.transforms):
 *  - per-example transforms run on the loader's worker threads, on a private,
 *    writable copy of each example, before collation. They may shorten a
 *    sequence field (crop, drop tokens): the collation follows the new
 *    lengths. They may change a field's dtype or trailing shape only if they
 *    declare the new ones up front (ss_transform.dtype / reshape); they then
 *    write into a separate output buffer.
 *  - per-batch transforms run once per batch, after collation, on the
 *    collated arrays (in place).
 *
 * Randomness. Every call receives its own generator, a pure function of
 * (loader seed, epoch, example index or batch position, transform position):
 *    per example: stream SS_TRANSFORM_STREAM + position of the counter-based
 *                 generator seeded with hash(seed, epoch, example index);
 *    per batch:   stream SS_BATCH_TRANSFORM_STREAM + position, seeded with
 *                 hash(seed, epoch, batch position in the epoch),
 * where hash and the generator are those of spec/SDK_SECTIONS.md. So an
 * augmented epoch is the same for any number of threads, whichever thread ran
 * which example, and after resuming mid-epoch. (An example that occurs twice
 * in one epoch receives the same augmentation both times.)
 *
 * Thread safety: one transform's callback runs concurrently on several
 * threads (on different examples) and must treat its user data as read-only.
 */
#ifndef SEQSTORE_TRANSFORM_H
#define SEQSTORE_TRANSFORM_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared in other sub-headers (repeated: C11 allows identical typedefs). */
typedef struct ss_selection ss_selection;
typedef struct ss_loader_batch ss_loader_batch;

/* ------------------------------------------------------------- randomness */

/** A transform's random generator (counter-based; owned by the loader, valid
 *  during the callback only). */
typedef struct ss_rng ss_rng;

/** Stream offsets of the generators handed to transforms (see above). */
#define SS_TRANSFORM_STREAM 0x7866726d00000000ull       /* "xfrm" << 32 */
#define SS_BATCH_TRANSFORM_STREAM 0x6278666d00000000ull /* "bxfm" << 32 */

/** The next uniform 64-bit number. `r` is the generator passed to the
 *  callback (never NULL there). */
SS_API uint64_t ss_random_next(ss_rng *r);
/** A uniform integer in [0, n) without modulo bias; 0 when n <= 1. */
SS_API uint64_t ss_random_below(ss_rng *r, uint64_t n);
/** A uniform double in [0, 1). */
SS_API double ss_random_uniform(ss_rng *r);
/** A standard normal double (Box-Muller, two outputs per call). */
SS_API double ss_random_normal(ss_rng *r);

/* --------------------------------------------------------------- examples */

/** One field of an example under transformation: a writable copy. */
typedef struct ss_example_field {
    const char *name;           /**< field name (borrowed from the store) */
    uint32_t field;             /**< field index in the store */
    int sequence;               /**< 0: a fixed field, length is 1 */
    ss_dtype dtype;             /**< element type of `data` at this point of the pipeline */
    uint32_t ndim;              /**< trailing shape of `data` at this point */
    uint64_t dims[SS_MAX_DIMS]; /**< dims[0..ndim) */
    uint64_t row_elements;      /**< product of dims */
    uint64_t row_bytes;         /**< row_elements * dtype size */
    void *data;                 /**< `length` rows, writable */
    uint64_t length;            /**< rows; a transform may lower it (never raise it above
                                     capacity, the example's stored length) */
    uint64_t capacity;          /**< most rows `data` and `out` hold */
    /* Set only while a transform that declared a new dtype or shape for this
     * field runs: it must write its result here, `length` rows of out_dtype and
     * out_dims (it may set `length` first). The loader then swaps data and out. */
    void *out;                      /**< capacity rows of out_dtype/out_dims, or NULL */
    ss_dtype out_dtype;             /**< the declared dtype */
    uint32_t out_ndim;              /**< the declared number of trailing dimensions */
    uint64_t out_dims[SS_MAX_DIMS]; /**< the declared trailing shape */
} ss_example_field;

/** An example under transformation. */
typedef struct ss_example {
    uint64_t index;           /**< store index */
    uint64_t epoch;           /**< the loader's epoch */
    uint32_t nfields;         /**< the loader's output fields, in their order */
    ss_example_field *fields; /**< `nfields` fields; owned by the loader, valid during
                                   the callback only */
    char message[256];        /**< a failing transform's message (ss_transform_error()) */
} ss_example;

/** The entry of store field `field` in `ex->fields`, borrowed from `ex` (valid
 *  during the callback), or NULL if the field is not one of the example's
 *  fields (or ex is NULL). */
SS_API ss_example_field *ss_example_get_field(ss_example *ex, uint32_t field);

/** Record a transform's error message (printf-style, truncated to
 *  sizeof ex->message) in `ex` and return SS_ECALLBACK, so a callback can
 *  `return ss_transform_error(ex, "...")`. The loader reports it at
 *  ss_loader_next() with the example index. NULL ex or fmt records nothing.
 *  Per-batch callbacks have no ss_example: they return a negative code. */
SS_API int ss_transform_error(ss_example *ex, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ------------------------------------------------------------- transforms */

/** A per-example callback: transform `ex` in place. Return 0, or a negative
 *  value to stop the loader (the message from ss_transform_error(), if any,
 *  is reported). */
typedef int (*ss_example_fn)(void *user, ss_example *ex, ss_rng *rng);

/** A per-batch callback: transform the collated arrays of `batch` in place
 *  (same shapes; change values only). Return 0 or a negative value. */
typedef int (*ss_batch_fn)(void *user, ss_loader_batch *batch, ss_rng *rng);

/** A transform. Start from SS_TRANSFORM_INIT; set exactly one of `example`
 *  and `batch`. */
typedef struct ss_transform {
    unsigned version;              /**< SS_TRANSFORM_VERSION */
    const char *name;              /**< for messages; copied (NULL = "transform") */
    ss_example_fn example;         /**< per-example callback, or NULL */
    ss_batch_fn batch;             /**< per-batch callback, or NULL */
    void *user;                    /**< passed to the callback */
    void (*free_user)(void *user); /**< if not NULL, called on `user` when the
                                        pipeline holding the transform is freed */
    /* Declared changes (per-example transforms only): */
    uint32_t field;             /**< the field (store index) whose dtype/shape changes;
                                     SS_FIELD_NONE (INIT) when nothing is declared */
    ss_dtype dtype;             /**< new dtype of `field`, or 0 = unchanged */
    int reshape;                /**< 1: new trailing shape ndim/dims */
    uint32_t ndim;              /**< with reshape: 0..SS_MAX_DIMS */
    uint64_t dims[SS_MAX_DIMS]; /**< with reshape: dims[0..ndim), each >= 1 */
} ss_transform;

#define SS_TRANSFORM_VERSION 1
#define SS_TRANSFORM_INIT                                                                          \
    {                                                                                              \
        SS_TRANSFORM_VERSION, NULL, NULL, NULL, NULL, NULL, SS_FIELD_NONE, (ss_dtype)0, 0, 0, {    \
            0, 0, 0, 0                                                                             \
        }                                                                                          \
    }
/** Fill `out` with SS_TRANSFORM_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_TRANSFORM_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_transform_init(ss_transform *out, unsigned version);

/** Free a transform's user data (calls free_user) if it was never added to a
 *  pipeline; sets t->user to NULL. Accepts NULL. */
SS_API void ss_transform_release(ss_transform *t);

/* ---------------------------------------------------------------- pipeline */

/** An ordered list of transforms. Built by one thread, then read-only: a
 *  pipeline may be shared by several loaders or window readers. */
typedef struct ss_pipeline ss_pipeline;

/** Create an empty pipeline.
 *  @param[out] out the pipeline; free it with ss_pipeline_free().
 *  @return 0; SS_ENOMEM; SS_EINVAL (NULL out). */
SS_API int ss_pipeline_create(ss_pipeline **out);

/** Free a pipeline and the user data of its transforms (free_user). Accepts
 *  NULL. Every loader and window reader using it must be freed first. */
SS_API void ss_pipeline_free(ss_pipeline *p);

/** Append a transform (copied, name and field strings too). The pipeline
 *  takes ownership of t->user when t->free_user is set, also on failure
 *  (then freed at once) -- except when p or t is NULL.
 *  @return 0; SS_EINVAL (NULL argument; bad version; neither or both
 *          callbacks; a declared change on a per-batch transform or without
 *          `field`; an unknown declared dtype; ndim > SS_MAX_DIMS or a
 *          dimension 0); SS_ENOMEM. */
SS_API int ss_pipeline_add(ss_pipeline *p, const ss_transform *t);

/** Number of transforms (0 for NULL). */
SS_API uint32_t ss_pipeline_count(const ss_pipeline *p);

/** Transform number `k`, borrowed from the pipeline (valid until
 *  ss_pipeline_free()), or NULL if k >= ss_pipeline_count(). */
SS_API const ss_transform *ss_pipeline_get(const ss_pipeline *p, uint32_t k);

/* ------------------------------------------------------ built-in transforms
 * Each fills *out with a configured transform whose user data it allocates
 * (freed by the pipeline, or ss_transform_release()). `field` is the store
 * index of one of the loader's output fields (a field that is not one fails
 * the example at run time). On failure *out is SS_TRANSFORM_INIT (nothing to
 * release), except where noted. NULL out or field SS_FIELD_NONE is SS_EINVAL. */

/** Per-channel standardisation: y = (x - mean[c]) / std[c] for channel c (the
 *  element index within a row), computed in float with the equivalent
 *  y = x * (1/std) + (-mean/std). Declares the output dtype f32.
 *  @param[in] channels row elements of the field; mean/std hold that many.
 *  @param[in] mean     `channels` values (copied).
 *  @param[in] std      `channels` values > 0 (copied).
 *  @return 0; SS_EINVAL (NULL arrays, channels 0, a std <= 0 or not finite,
 *          a mean not finite -- then *out is left as it was); SS_ENOMEM. At
 *          run time a field with another row size fails. */
SS_API int ss_transform_standardize(ss_transform *out, uint32_t field, const double *mean,
                                    const double *std, uint64_t channels);

/** Mean and (population) standard deviation per channel of sequence or fixed
 *  field `field` over every time step of the examples of `sel` (NULL: all),
 *  in double. Reads every data page of the field (not only the index).
 *  A constant channel gives std 0, which ss_transform_standardize() refuses.
 *  @param[out] mean the field's row elements values.
 *  @param[out] std  as mean.
 *  @param[in]  sel  NULL: all examples; must be made for the store's count.
 *  @return 0; SS_ERANGE (no such field); SS_EINVAL (no data, NULL argument);
 *          SS_ERANGE (`sel` reaches beyond the store); SS_ECORRUPT as
 *          ss_get(); SS_ENOMEM. */
SS_API int ss_standardize_compute(double *mean, double *std, const ss_store *s,
                                  const ss_selection *sel, uint32_t field);

/** Compute the statistics over the named split `split` (NULL: all examples)
 *  of the finished store at `path` and save them as f64 attributes
 *  "<prefix>.mean" and "<prefix>.std" (prefix NULL: "ss.norm.<name>", the
 *  field's name). Opens the store, then appends with a writer: the store
 *  must not be open in this process nor have an active writer.
 *  @return 0; SS_EINVAL (NULL path); SS_ERANGE (a field beyond the schema); as ss_open(),
 *          ss_standardize_compute(), ss_split_load(), ss_writer_open(),
 *          ss_writer_set_attr() and ss_writer_finish(). */
SS_API int ss_standardize_save(const char *path, uint32_t field, const char *split,
                               const char *prefix);

/** ss_transform_standardize() with mean and std read from the attributes
 *  "<prefix>.mean" and "<prefix>.std" of `s` (prefix NULL: "ss.norm.<name>",
 *  the field's name).
 *  The values are copied: the transform does not borrow the store.
 *  @return 0; SS_ENOTFOUND (an attribute is missing); SS_EINVAL (attribute
 *          type or size, a std <= 0, NULL argument); SS_ECORRUPT (attribute
 *          checksum); SS_ENOMEM. */
SS_API int ss_transform_standardize_attr(ss_transform *out, const ss_store *s, uint32_t field,
                                         const char *prefix);

/** Random crop: a sequence longer than max_length keeps max_length steps
 *  starting at ss_random_below(rng, length - max_length + 1); shorter ones are
 *  unchanged (no random number drawn).
 *  @return 0; SS_EINVAL (max_length 0, NULL argument); SS_ENOMEM. */
SS_API int ss_transform_random_crop(ss_transform *out, uint32_t field, uint64_t max_length);

/** Additive Gaussian noise on a float field (f32 or f64): every element in
 *  row-major order gets x += sigma * ss_random_normal(rng).
 *  @return 0; SS_EINVAL (sigma < 0 or not finite, NULL argument);
 *          SS_ENOMEM. Other dtypes fail at run time. */
SS_API int ss_transform_gaussian_noise(ss_transform *out, uint32_t field, double sigma);

/** Options of ss_transform_token_mask(). */
typedef struct ss_token_mask_options {
    unsigned version;   /**< SS_TOKEN_MASK_OPTIONS_VERSION */
    double prob;        /**< probability that a token is selected (default 0.15) */
    int64_t mask_value; /**< the [MASK] token */
    double random_prob; /**< of the selected: probability of a random token (0.1) */
    double keep_prob;   /**< of the selected: probability to keep it (0.1) */
    uint64_t vocab;     /**< random tokens are drawn from [0, vocab); required when
                             random_prob > 0 */
} ss_token_mask_options;

#define SS_TOKEN_MASK_OPTIONS_VERSION 1
#define SS_TOKEN_MASK_OPTIONS_INIT                                                                 \
    { SS_TOKEN_MASK_OPTIONS_VERSION, 0.15, 0, 0.1, 0.1, 0 }
/** Fill `out` with SS_TOKEN_MASK_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_TOKEN_MASK_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_token_mask_options_init(ss_token_mask_options *out, unsigned version);

/** Masked-LM token masking on an integer field. For every element in order:
 *  u = ss_random_uniform(rng); if u < prob, v = ss_random_uniform(rng) and the
 *  token becomes mask_value if v < 1 - random_prob - keep_prob, else
 *  ss_random_below(rng, vocab) if v < 1 - keep_prob, else stays.
 *  @param[in] options NULL for SS_TOKEN_MASK_OPTIONS_INIT (which has
 *                     vocab 0 and random_prob 0.1, so is refused: set vocab).
 *  @return 0; SS_EINVAL (an unknown options version, probabilities outside
 *          [0, 1], random_prob + keep_prob > 1, vocab 0 with random_prob >
 *          0, NULL argument); SS_ENOMEM. */
SS_API int ss_transform_token_mask(ss_transform *out, uint32_t field,
                                   const ss_token_mask_options *options);

/** Token dropout: every time step of a sequence field is removed with
 *  probability `prob` (one ss_random_uniform(rng) per step, dropped when
 *  u < prob); the sequence shortens.
 *  @return 0; SS_EINVAL (prob outside [0, 1], NULL argument); SS_ENOMEM. */
SS_API int ss_transform_token_drop(ss_transform *out, uint32_t field, double prob);

/** Label remapping on an integer field: every element x becomes table[x]
 *  (saturated to the field's dtype). An element outside [0, n) fails the
 *  example (message names the value).
 *  @param[in] table `n` entries (copied).
 *  @return 0; SS_EINVAL (NULL table, n 0, NULL argument); SS_ENOMEM. */
SS_API int ss_transform_label_map(ss_transform *out, uint32_t field, const int64_t *table,
                                  uint64_t n);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_TRANSFORM_H */
