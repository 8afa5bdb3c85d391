/* SPDX-License-Identifier: BSD-2-Clause */
/* cast.h - element type casts shared by the collator and the
 * streams; not installed. */
#ifndef SS_CAST_H
#define SS_CAST_H

#include "seqstore.h"

#include <stddef.h>

/* A per-channel affine map prepared for the conversion loops: the row_elements
 * gains and offsets repeated over rows_per_period rows (period = row_elements
 * * rows_per_period values), so that short rows (21 EEG channels) still give
 * long, vectorisable inner loops. In float (f32/f16/bf16 output) and double
 * (other outputs). */
typedef struct ss__affine {
    size_t row_elements;
    size_t rows_per_period;
    size_t period;
    float *scale_f, *offset_f;
    double *scale_d, *offset_d;
} ss__affine;

/* Prepare `a` from scale/offset (either may be NULL: 1 and 0). SS_ENOMEM. */
int ss__affine_init(ss__affine *a, uint64_t row_elements, const double *scale,
                    const double *offset);
void ss__affine_free(ss__affine *a);

/* 1 if `d` is a known dtype. */
int ss__dtype_valid(ss_dtype d);

/* ss_cast_rows() without argument checks; `a` may be NULL (no affine map).
 * With `a`, a->row_elements must equal row_elements. */
void ss__cast(void *dst, ss_dtype dst_dtype, const void *src, ss_dtype src_dtype, uint64_t n_rows,
              uint64_t row_elements, const ss__affine *a);

/* A plain conversion kernel: n elements of src to dst (no affine map). */
typedef void (*ss__conv_fn)(void *restrict dst, const void *restrict src, size_t n);

/* The kernel ss__cast() uses from src_dtype to dst_dtype without an affine
 * map (a copy for equal dtypes; the buffers must not overlap). Resolved once
 * by callers that convert many short runs. Both dtypes must be valid. */
ss__conv_fn ss__cast_kernel(ss_dtype dst_dtype, ss_dtype src_dtype);

/* A fused padded kernel: at dst, `lead` copies of the element at `pad`, then
 * n elements of src converted as ss__cast_kernel() converts them, then
 * `trail` copies of the pad; one pass over the output (a padded row). */
typedef void (*ss__pad_fn)(void *restrict dst, const void *restrict src, size_t lead, size_t n,
                           size_t trail, const void *restrict pad);

/* The fused kernel from src_dtype to dst_dtype, or NULL for the pairs that
 * have none (convert and fill separately). Both dtypes must be valid. */
ss__pad_fn ss__cast_pad_kernel(ss_dtype dst_dtype, ss_dtype src_dtype);

/* Fill n elements of size `size` at dst with the element at `elem`. */
void ss__fill(void *dst, const void *elem, size_t size, uint64_t n);

/* Convert one double to one element of `dtype` (as ss_cast_rows from f64). */
void ss__scalar_to(void *dst, ss_dtype dtype, double value);

/* One element of `dtype` at dst from the value `kind` selects among f, i
 * and u (see ss_value_kind): 0, or SS_ERANGE when it has no exact element
 * (an integer dtype needs an integer in range; a float dtype, an integer
 * that converts exactly, or any double, which is rounded). */
int ss__scalar_exact(void *dst, ss_dtype dtype, ss_value_kind kind, double f, int64_t i,
                     uint64_t u);

/* The value `kind` selects, printed for an error message ("-1", "2.5"). */
void ss__scalar_print(char *buf, size_t cap, ss_value_kind kind, double f, int64_t i, uint64_t u);

#endif
