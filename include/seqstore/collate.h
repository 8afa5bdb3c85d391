/* SPDX-License-Identifier: BSD-2-Clause */
/* seqstore/collate.h - part of the public API; include <seqstore.h>, not this file.
 *
 * Collation: turn the rows of a batch (whole examples, windows, pieces) into
 * dense arrays ready for a training framework, converting element types on
 * the way, in parallel with OpenMP.
 *
 *  - Padded layouts: [B][T][C...] (batch-major), [T][B][C...] (time-major)
 *    or [B][C...][T] (channels-first, PyTorch Conv1d), with a pad value,
 *    right or left padding, rounding T up to a multiple, or a fixed T (pad
 *    or truncate); lengths [B]; an optional mask (u8, f32, or any dtype such
 *    as the data's own).
 *  - Packed layout: the rows concatenated, [sum L][C...], with offsets [B+1]
 *    (cu_seqlens), optionally in descending-length order with the permutation.
 *  - Fixed (non-sequence) fields such as labels collate to [B][C...].
 *
 * The result of a collation is bit-identical for any thread count.
 */
#ifndef SEQSTORE_COLLATE_H
#define SEQSTORE_COLLATE_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------------- dtype conversion */

/** Cast `n_rows` rows of `row_elements` elements each from `src` (of
 *  `src_dtype`) to `dst` (of `dst_dtype`). Both arrays are dense and
 *  row-major; they must not overlap (except when they are identical and the
 *  dtypes have the same size).
 *
 *  Without scale/offset the value is converted directly:
 *   - integer to integer: exact, or saturated to the destination's range
 *     (i16 -5 to u8 gives 0, u32 70000 to i16 gives 32767);
 *   - float (f16, bf16, f32, f64) to integer: rounded to nearest, ties to
 *     even, then saturated; NaN gives 0;
 *   - to f16/bf16: rounded to nearest, ties to even (IEEE 754 binary16 /
 *     bfloat16); overflow gives +-inf; NaN stays NaN; f16 and bf16 inputs are
 *     decoded exactly;
 *   - to f32/f64: the usual C conversion (round to nearest).
 *  With `scale` and `offset` (each NULL, or `row_elements` values, one per
 *  channel c = element index within the row):
 *     dst = src * scale[c] + offset[c]
 *  with src first converted to double (exact except for 64-bit integers
 *  beyond 2^53), computed in float for f32, f16 and bf16 output (then rounded
 *  as above) and in double for every other output, then converted as above
 *  (so an integer output is rounded to nearest even and saturated). A NULL scale
 *  means 1, a NULL offset means 0.
 *  @param[out] dst       n_rows * row_elements elements of dst_dtype.
 *  @param[in]  src       n_rows * row_elements elements of src_dtype.
 *  @param[in]  scale     per-channel gain, or NULL.
 *  @param[in]  offset    per-channel offset, or NULL.
 *  @return 0, or SS_EINVAL for an unknown dtype or a NULL buffer with
 *          n_rows * row_elements > 0. */
SS_API int ss_cast_rows(void *dst, ss_dtype dst_dtype, const void *src, ss_dtype src_dtype,
                        uint64_t n_rows, uint64_t row_elements, const double *scale,
                        const double *offset);

/** Round a float to IEEE binary16 bits (nearest, ties to even). */
SS_API uint16_t ss_f16_from_float(float x);
/** Decode IEEE binary16 bits (exact). */
SS_API float ss_f16_to_float(uint16_t h);
/** Round a float to bfloat16 bits (nearest, ties to even; NaN stays NaN). */
SS_API uint16_t ss_bf16_from_float(float x);
/** Decode bfloat16 bits (exact). */
SS_API float ss_bf16_to_float(uint16_t h);

/* ---------------------------------------------------------------- spans */

/** t1 value meaning "to the end of the example". */
#define SS_SPAN_END UINT64_MAX

/** One row of a batch: time steps [t0, t1) of example `example`
 *  (t1 = SS_SPAN_END means its end). A whole example is {i, 0, SS_SPAN_END}.
 *  For a fixed (non-sequence) field t0 and t1 are ignored: the row is the
 *  example's single value. For a sequence field t0 <= t1 <= length is
 *  required (SS_ERANGE otherwise); SS_SPAN_END resolves per field, so one span
 *  can cover fields of different lengths (source and target sentences). */
typedef struct ss_span {
    uint64_t example;
    uint64_t t0, t1;
} ss_span;

/* ---------------------------------------------------------------- collator */

/** Output layout of a sequence field. Ignored for fixed fields. */
typedef enum ss_layout {
    SS_LAYOUT_BATCH_MAJOR = 0,   /**< [B][T][C...] padded */
    SS_LAYOUT_TIME_MAJOR = 1,    /**< [T][B][C...] padded */
    SS_LAYOUT_PACKED = 2,        /**< [sum L][C...] concatenated, offsets [B+1] */
    SS_LAYOUT_CHANNELS_FIRST = 3 /**< [B][C...][T] padded (PyTorch Conv1d, Parakeet's
                                      spectrogram batches): element (b, c, t) of a row
                                      of C elements is at (b * C + c) * T + t; the mask
                                      is [B][T] */
} ss_layout;

/** Mask element type (padded layouts only). */
typedef enum ss_mask_type {
    SS_MASK_NONE = 0,
    SS_MASK_U8 = 1,   /**< 1 = real time step, 0 = padding */
    SS_MASK_F32 = 2,  /**< 1.0f = real time step, 0.0f = padding */
    SS_MASK_DTYPE = 3 /**< 1 / 0 in ss_collate_field.mask_dtype, or with mask_dtype 0
                           in the field's output dtype (Matchbox keeps its mask in the
                           data's dtype) */
} ss_mask_type;

/** How one field is collated. Start from SS_COLLATE_FIELD_INIT. */
typedef struct ss_collate_field {
    unsigned version;         /**< SS_COLLATE_FIELD_VERSION */
    uint32_t field;           /**< the field's index in the store (see ss_field_index()) */
    ss_dtype dtype;           /**< output dtype; 0 = the stored dtype */
    ss_layout layout;         /**< sequence fields only */
    double pad_value;         /**< value of padded elements with pad_kind SS_VALUE_F64 (the
                                   default); it must have an exact element of the
                                   output dtype (see ss_value_kind) */
    int pad_left;             /**< 1: padding before the data (data ends at T) */
    uint64_t pad_to_multiple; /**< round T up to a multiple of this; 0 or 1 = off */
    int fixed;                /**< 1: T = fixed_length for every batch (pad or truncate) */
    uint64_t fixed_length;    /**< with `fixed`; must be >= 1. In the packed layout it
                                   caps each row's length instead. */
    int truncate_left;        /**< when a row is longer than fixed_length: 0 keeps its
                                   first steps, 1 keeps its last steps */
    ss_mask_type mask;        /**< padded layouts only */
    const double *scale;      /**< per-channel gain (row elements values) or NULL; copied */
    const double *offset;     /**< per-channel offset (row elements values) or NULL; copied */
    const char *scale_attr;   /**< instead of scale: name of a store attribute holding
                                   row-elements f64 or f32 values; NULL = none */
    const char *offset_attr;  /**< instead of offset: likewise */
    int sort_by_length;       /**< packed layout: order rows by descending length (ties in
                                   row order) and return the permutation */
    /* Rows given in memory (ss_collator_collate_rows()) may differ from the
     * stored field in dtype and trailing shape, e.g. after a transform that
     * declared such a change. Declare it here; scale/offset (and their
     * attributes) then hold the declared shape's row elements. A field
     * declared different from the store cannot be collated from spans. */
    ss_dtype in_dtype;             /**< dtype of the rows in memory; 0 = the stored dtype */
    int in_reshape;                /**< 1: their trailing shape is in_ndim/in_dims;
                                        0: the stored shape */
    uint32_t in_ndim;              /**< with in_reshape: 0..SS_MAX_DIMS */
    uint64_t in_dims[SS_MAX_DIMS]; /**< with in_reshape: each >= 1 */
    /* Version 2. */
    ss_dtype mask_dtype; /**< with mask SS_MASK_DTYPE: the mask's dtype; 0 = the output
                              dtype. Must be 0 with other mask types */
    /* Version 3: integer pads (every int64 and uint64 value; a double holds
     * integers exactly only up to 2^53). */
    ss_value_kind pad_kind; /**< which of pad_value, pad_i64, pad_u64 is the pad */
    int64_t pad_i64;        /**< the pad with SS_VALUE_I64 */
    uint64_t pad_u64;       /**< the pad with SS_VALUE_U64 */
} ss_collate_field;

/** Version 1 ended at in_dims, version 2 at mask_dtype; all are accepted. */
#define SS_COLLATE_FIELD_VERSION 3
#define SS_COLLATE_FIELD_INIT                                                                      \
    {                                                                                              \
        SS_COLLATE_FIELD_VERSION, 0, (ss_dtype)0, SS_LAYOUT_BATCH_MAJOR, 0.0, 0, 0, 0, 0, 0,       \
            SS_MASK_NONE, NULL, NULL, NULL, NULL, 0, (ss_dtype)0, 0, 0, {0}, (ss_dtype)0,          \
            SS_VALUE_F64, 0, 0                                                                     \
    }
/** Fill `out` with SS_COLLATE_FIELD_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_COLLATE_FIELD_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_collate_field_init(ss_collate_field *out, unsigned version);

/** Collator options. */
typedef struct ss_collator_options {
    unsigned version;        /**< SS_COLLATOR_OPTIONS_VERSION */
    int threads;             /**< OpenMP threads per collation; 0 = one (the calling
                                  thread), see "Threads" in seqstore.h; < 0 refused */
    uint64_t max_rows;       /**< rows to preallocate library-owned buffers for; 0 = none */
    uint64_t max_steps;      /**< time steps per row to preallocate for; 0 = none */
    uint64_t parallel_bytes; /**< a batch with fewer output bytes is collated by the
                                  calling thread alone; 0 = 192 KiB. Starting an OpenMP
                                  team costs more than it saves on small batches (and
                                  libgomp's default waiting can cost a millisecond);
                                  bench_collate's batch-size table shows where two
                                  threads start to pay */
} ss_collator_options;

#define SS_COLLATOR_OPTIONS_VERSION 1
#define SS_COLLATOR_OPTIONS_INIT                                                                   \
    { SS_COLLATOR_OPTIONS_VERSION, 0, 0, 0, 0 }
/** Fill `out` with SS_COLLATOR_OPTIONS_INIT (for bindings that cannot use the macro).
 *  @param[out] out     the defaults.
 *  @param[in]  version SS_COLLATOR_OPTIONS_VERSION: the version the caller was compiled against.
 *  @return 0; SS_EINVAL (NULL out, another version). */
SS_API int ss_collator_options_init(ss_collator_options *out, unsigned version);

/** One collated field of a batch. Every pointer is borrowed: from the collator
 *  (library-owned buffers, valid until the next collation with the same
 *  collator or ss_collator_free()) or the caller's own buffers. */
typedef struct ss_collated {
    const char *name;                /**< field name, borrowed from the store */
    uint32_t field;                  /**< field index in the store */
    ss_dtype dtype;                  /**< element type of data */
    ss_layout layout;                /**< SS_LAYOUT_BATCH_MAJOR for fixed fields */
    int sequence;                    /**< 0 for a fixed field ([B][C...]) */
    uint32_t ndim;                   /**< entries used in shape */
    uint64_t shape[SS_MAX_DIMS + 2]; /**< by layout: [B][T][dims] (batch-major),
                                          [T][B][dims] (time-major), [sum L][dims]
                                          (packed), [B][dims...][T] (channels-first);
                                          [B][dims] for a fixed field */
    uint64_t batch;                  /**< B, the number of rows */
    uint64_t steps;                  /**< T (padded layouts, channels-first too: the last
                                          dimension), sum L (packed) or 1 (fixed field) */
    void *data;                      /**< the array described by shape */
    uint64_t data_bytes;
    int64_t *lengths; /**< [B] valid time steps per row after truncation (packed +
                           sorted: in packed order); 1 for a fixed field */
    void *mask;       /**< [B][T] (batch-major, channels-first) or [T][B] (time-major),
                           of the mask's dtype, or NULL */
    uint64_t mask_bytes;
    int64_t *offsets; /**< packed: [B+1], row i is data rows [offsets[i], offsets[i+1]);
                           else NULL */
    int64_t *perm;    /**< packed + sort_by_length: perm[i] = index in `rows` of packed
                           row i; else NULL */
} ss_collated;

/** A collated batch: one ss_collated per requested field, in request order. */
typedef struct ss_collated_batch {
    uint64_t rows; /**< B */
    uint32_t nfields;
    const ss_collated *fields; /**< borrowed from the collator */
} ss_collated_batch;

/** Sizes a batch needs, per field (see ss_collator_sizes()). */
typedef struct ss_collate_sizes {
    uint64_t steps; /**< T, sum L or 1 */
    uint64_t data_bytes;
    uint64_t mask_bytes; /**< 0 without a mask */
} ss_collate_sizes;

/** Caller-provided output buffers for one field; NULL members are provided by
 *  the collator. data/mask must hold at least the bytes ss_collator_sizes()
 *  reports; lengths and perm hold B values, offsets B+1. */
typedef struct ss_collate_buffers {
    void *data;
    uint64_t data_bytes; /**< capacity of data */
    void *mask;
    uint64_t mask_bytes; /**< capacity of mask */
    int64_t *lengths;
    int64_t *offsets;
    int64_t *perm;
} ss_collate_buffers;

typedef struct ss_collator ss_collator;

/** Create a collator for `nfields` fields of store `s`.
 *
 *  Library-owned buffers are allocated for max_rows x max_steps at create and
 *  grow (never shrink) when a bigger batch arrives, so that a steady state
 *  allocates nothing. A collator is used by one thread at a time; each
 *  collation runs `threads` OpenMP threads.
 *  @param[out] out     the collator; free it with ss_collator_free().
 *  @param[in]  s       the store; must stay open while the collator is used.
 *  @param[in]  fields  one description per output field (copied, with its
 *                      scale/offset); NULL with nfields = 0 means every field
 *                      of the store with defaults.
 *  @param[in]  options NULL for defaults.
 *  @return 0; SS_ERANGE (a field index beyond the schema); SS_ENOTFOUND
 *          (unknown scale/offset attribute, the message names it);
 *          SS_EINVAL (bad dtype or in_dtype, in_ndim > SS_MAX_DIMS or an
 *          in_dims entry 0, fixed_length 0, mask or pad_to_multiple with the
 *          packed layout, sort_by_length without it, an attribute of the
 *          wrong type or size, a bad version); SS_ENOMEM. */
SS_API int ss_collator_create(ss_collator **out, const ss_store *s, const ss_collate_field *fields,
                              uint32_t nfields, const ss_collator_options *options);

/** Free a collator and its buffers. Accepts NULL. */
SS_API void ss_collator_free(ss_collator *c);

/** Sizes of the arrays collating `rows` would produce, per field.
 *  @param[out] out one entry per collator field.
 *  @return 0; SS_ERANGE (bad example or span, message names it); SS_EINVAL (a
 *          field declared with an in-memory dtype or shape other than the
 *          store's, see ss_collate_field.in_dtype). */
SS_API int ss_collator_sizes(ss_collate_sizes *out, const ss_collator *c, const ss_span *rows,
                             size_t n_rows);

/** Collate `rows` into library-owned buffers.
 *  @param[out] out the batch; its pointers are valid until the next
 *                  collation with `c` or ss_collator_free(c).
 *  @param[in]  rows n_rows >= 1 spans.
 *  @return 0; SS_EINVAL (n_rows 0, or a field declared with an in-memory
 *          dtype or shape other than the store's); SS_ERANGE (bad example or span);
 *          SS_ECORRUPT; SS_ENOMEM (growing a buffer failed). */
SS_API int ss_collator_collate(ss_collated_batch *out, ss_collator *c, const ss_span *rows,
                               size_t n_rows);

/** Collate `rows` into caller-provided buffers (pinned memory of a GPU
 *  framework, say).
 *  @param[in] buffers one entry per collator field, or NULL (= collator's own).
 *  @return as ss_collator_collate(), plus SS_EBUFS when a buffer is too small
 *          (the message names the field and the bytes needed). */
SS_API int ss_collator_collate_into(ss_collated_batch *out, ss_collator *c, const ss_span *rows,
                                    size_t n_rows, const ss_collate_buffers *buffers);

/** One field of one row given in memory (see ss_collator_collate_rows()). */
typedef struct ss_collate_input {
    const void *data; /**< `length` dense steps of dtype and dims; may be NULL when
                           length is 0 */
    uint64_t length;  /**< time steps; 1 for a fixed (non-sequence) field */
    ss_dtype dtype;   /**< must be the field's input dtype (in_dtype or the stored one) */
    uint32_t ndim;    /**< must be the field's input trailing shape */
    uint64_t dims[SS_MAX_DIMS];
} ss_collate_input;

/** Collate rows given in memory (rows transformed by the caller, say) with the
 *  same semantics as spans of the store: truncation, padding, packing, masks,
 *  dtype conversion and scale/offset. Nothing of the store is read.
 *  @param[in] rows    n_rows * nfields entries: rows[r * nfields + k] is field k
 *                     (in the collator's field order) of row r. Borrowed for the
 *                     call only.
 *  @param[in] buffers one entry per collator field, or NULL (= collator's own).
 *  @param[out] out    as ss_collator_collate_into().
 *  @return 0; SS_EINVAL (n_rows 0, a NULL argument, an entry whose dtype or
 *          shape is not the field's input, a fixed field of length other than
 *          1, NULL data with length > 0; the message names the field and row);
 *          SS_EBUFS (a buffer too small, naming the field); SS_ENOMEM. */
SS_API int ss_collator_collate_rows(ss_collated_batch *out, ss_collator *c,
                                    const ss_collate_input *rows, size_t n_rows,
                                    const ss_collate_buffers *buffers);

#ifdef __cplusplus
}
#endif

#endif /* SEQSTORE_COLLATE_H */
