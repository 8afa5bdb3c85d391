/* SPDX-License-Identifier: BSD-2-Clause */
/* seqstore/stream.h - part of the public API; include <seqstore.h>, not this file.
 *
 * Parallel streams for language modelling (the "unaligned" layout, torchnet's
 * SequenceBatchDataset + TargetNextDataset): the flat stream of one field (its
 * examples concatenated, optionally with an <eos> after each) is cut into B
 * equal parallel streams; batch i holds steps [i*T, i*T + T) of every stream,
 * and the target is the input shifted by k steps (k = 0: inputs only, as
 * torchnet's SequenceBatchDataset alone).
 *
 * Example: the flat stream 1..10, B = 3, T = 2, k = 1, tail DROP gives the
 * streams [1 2 3] [4 5 6] [7 8 9] (10 is dropped) and one batch:
 *   input [[1 2] [4 5] [7 8]]   target [[2 3] [5 6] [8 9]].
 * With tail PAD the streams are [1 2 3 4] [5 6 7 8] [9 10] and two batches:
 *   input [[1 2] [5 6] [9 p]]   target [[2 3] [6 7] [10 p]]  mask [[1 1] [1 1] [1 0]]
 *   input [[3 p] [7 p] [p p]]   target [[4 p] [8 p] [p p]]   mask [[1 0] [1 0] [0 0]]
 */
#ifndef SEQSTORE_STREAM_H
#define SEQSTORE_STREAM_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What happens to the end of the streams that does not fill a whole batch. */
typedef enum ss_stream_tail {
    SS_STREAM_TAIL_DROP = 0, /**< streams of floor(N/B) steps; only whole batches */
    SS_STREAM_TAIL_PAD = 1,  /**< streams of ceil(N/B) steps (the last ones shorter);
                                  the last batch is padded, the mask marks real steps */
    SS_STREAM_TAIL_SHORT = 2 /**< as DROP, but a last batch with fewer than T steps is
                                  returned with its shorter T (PyTorch's word LM) */
} ss_stream_tail;

/** Stream options. Start from SS_STREAM_OPTIONS_INIT. */
typedef struct ss_stream_options {
    unsigned version;         /**< SS_STREAM_OPTIONS_VERSION */
    uint64_t batch;           /**< B, number of parallel streams (>= 1, required) */
    uint64_t steps;           /**< T, time steps per batch (>= 1, required) */
    uint64_t shift;           /**< k, target = input shifted by k (INIT: 1); 0: input
                                   only (no target; the mask marks real input steps;
                                   a stream of S steps gives S input steps) */
    int time_major;           /**< 1: arrays are [T][B][C...], else [B][T][C...] */
    ss_dtype dtype;           /**< output dtype of input and target; 0 = stored dtype */
    int eos;                  /**< 1: a row of <eos> values after every example */
    double eos_value;         /**< every element of the <eos> row, with eos_kind
                                   SS_VALUE_F64 (the default); it must have an exact
                                   element of the output dtype (see ss_value_kind) */
    ss_stream_tail tail;      /**< SS_STREAM_TAIL_... */
    double pad_value;         /**< tail PAD: value of padded elements, with pad_kind
                                   SS_VALUE_F64; exact as eos_value */
    const uint64_t *examples; /**< the examples to stream, in this order; NULL = all in
                                   store order. Copied. */
    uint64_t n_examples;      /**< entries in `examples` (0 if examples is NULL) */
    int threads;              /**< OpenMP threads, >= 0; 0 = one (see "Threads" in
                                   seqstore.h) */
    uint64_t parallel_bytes;  /**< a batch with fewer bytes (input + target) is read by
                                   the calling thread alone; 0 = 1 MiB */
    /* Version 2: integer <eos> and pad values (every int64 and uint64 value). */
    ss_value_kind eos_kind;   /**< which of eos_value, eos_i64, eos_u64 is <eos> */
    int64_t eos_i64;          /**< <eos> with SS_VALUE_I64 */
    uint64_t eos_u64;         /**< <eos> with SS_VALUE_U64 */
    ss_value_kind pad_kind;   /**< which of pad_value, pad_i64, pad_u64 is the pad */
    int64_t pad_i64;          /**< the pad with SS_VALUE_I64 */
    uint64_t pad_u64;         /**< the pad with SS_VALUE_U64 */
} ss_stream_options;

/** Version 1 ended at parallel_bytes; both versions are accepted. */
#define SS_STREAM_OPTIONS_VERSION 2
#define SS_STREAM_OPTIONS_INIT                                                                     \
    {                                                                                              \
        SS_STREAM_OPTIONS_VERSION, 0, 0, 1, 0, (ss_dtype)0, 0, 0.0, SS_STREAM_TAIL_DROP, 0.0,      \
            NULL, 0, 0, 0, SS_VALUE_F64, 0, 0, SS_VALUE_F64, 0, 0                                  \
    }
/** Fill `out` with SS_STREAM_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_STREAM_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_stream_options_init(ss_stream_options *out, unsigned version);

/** One batch of parallel streams. Pointers are borrowed from the stream
 *  (valid until the next ss_stream_read() or ss_stream_free()) or are the
 *  caller's buffers (ss_stream_read_into()). */
typedef struct ss_stream_batch {
    uint64_t index; /**< batch number */
    uint64_t batch; /**< B */
    uint64_t steps; /**< T of this batch (smaller only for the last one with TAIL_SHORT) */
    ss_dtype dtype; /**< element type of input and target (the output dtype) */
    uint32_t ndim;  /**< entries used in shape */
    uint64_t shape[SS_MAX_DIMS + 2]; /**< [B][T][dims] or [T][B][dims] */
    void *input;                     /**< the inputs, shape above */
    void *target;                    /**< input shifted by k steps, same shape; NULL
                                          with shift 0 */
    uint8_t *mask;                   /**< [B][T] or [T][B]: 1 where input and target are real */
    uint8_t *starts;                 /**< [B][T] or [T][B]: 1 where the input step is the first step
                                          of an example (reset the model's state there) */
    uint64_t data_bytes;             /**< bytes of input (= of target) */
    uint64_t flag_bytes;             /**< bytes of mask (= of starts) = B * T */
} ss_stream_batch;

/** Parallel streams over one field. Reads mutate the stream's buffers: one
 *  thread at a time (each read may use OpenMP threads inside). */
typedef struct ss_stream ss_stream;

/** Create parallel streams over sequence field `field` of store `s`.
 *  Reads the lengths of the examples (index pages only); allocates all
 *  buffers here, none per batch.
 *  @param[out] out the stream; free it with ss_stream_free().
 *  @param[in]  s       must stay open while the stream is used (borrowed
 *                      until ss_stream_free()).
 *  @param[in]  field   the index of a sequence field.
 *  @param[in]  options required; read during the call only (`examples` is
 *                      copied).
 *  @return 0; SS_ERANGE (no such field); SS_EINVAL (NULL argument, a
 *          fixed field, B or T 0, B * T too large, a bad dtype, tail or
 *          options version, threads < 0, NULL examples with n_examples > 0,
 *          an example index out of range); SS_ENOMEM. */
SS_API int ss_stream_create(ss_stream **out, const ss_store *s, uint32_t field,
                            const ss_stream_options *options);

/** Free the stream. Accepts NULL. */
SS_API void ss_stream_free(ss_stream *st);

/** Number of batches per epoch (0 if the data is too short, or for NULL). */
SS_API uint64_t ss_stream_count(const ss_stream *st);

/** Length of each parallel stream in steps (S), and the flat length N
 *  (including <eos> rows) through `total` if not NULL. 0 for NULL. */
SS_API uint64_t ss_stream_length(uint64_t *total, const ss_stream *st);

/** Read batch `index` (any order, any number of times) into the stream's own
 *  buffers. No allocation.
 *  @param[out] out the batch; its pointers are
 *                  borrowed from the stream, valid until the next
 *                  ss_stream_read() or ss_stream_free().
 *  @return 0; SS_ERANGE (index >= ss_stream_count()); SS_ECORRUPT (as
 *          ss_get()); SS_EINVAL (NULL argument). After SS_ERANGE or a read
 *          error *out is zeroed. */
SS_API int ss_stream_read(ss_stream_batch *out, ss_stream *st, uint64_t index);

/** Read batch `index` into caller buffers. No allocation; it still uses the
 *  stream's internal staging, so one thread at a time as ss_stream_read().
 *  @param[out] input  B*T*row elements of the output dtype (row = elements
 *                     of one row of the field).
 *  @param[out] target as input; ignored (may be NULL) with shift 0.
 *  @param[out] mask   B*T bytes, or NULL.
 *  @param[out] starts B*T bytes, or NULL.
 *  @param[out] out    the batch description; its pointers are the buffers
 *                     above.
 *  @return 0; SS_ERANGE (index >= ss_stream_count()); SS_ECORRUPT (as
 *          ss_get()); SS_EINVAL (NULL stream, out or input; NULL target
 *          with shift > 0). */
SS_API int ss_stream_read_into(ss_stream_batch *out, void *input, void *target, uint8_t *mask,
                               uint8_t *starts, ss_stream *st, uint64_t index);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_STREAM_H */
