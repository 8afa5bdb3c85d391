/* SPDX-License-Identifier: BSD-2-Clause */
/* npy.h - parse the header of a NumPy .npy file (format versions 1, 2, 3).
 *
 * A .npy file is: "\x93NUMPY", major and minor version bytes, the header
 * length (little-endian u16 for version 1, u32 for versions 2 and 3), then a
 * Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and a newline, then the raw array data.
 * These functions read only the bytes handed to them (no file I/O), so they
 * can be fuzzed. The CLI glue lives in convert_npy.c. */
#ifndef SS_NPY_H
#define SS_NPY_H

#include "seqstore.h"

#include <stddef.h>
#include <stdint.h>

#define SS_NPY_MAX_DIMS 16 /* more axes than this are refused */
#define SS_NPY_PREAMBLE 12 /* bytes that always suffice for ss__npy_header_size() */

typedef struct ss_npy_header {
    int major, minor;   /* format version */
    ss_dtype dtype;     /* element type in the store (host order) */
    uint32_t elem_size; /* bytes per element */
    int swap;           /* 1: data is big-endian and must be byte-swapped */
    int fortran_order;  /* always 0 after a successful parse */
    uint32_t ndim;      /* number of axes, 0..SS_NPY_MAX_DIMS */
    uint64_t shape[SS_NPY_MAX_DIMS];
    uint64_t count;       /* elements: product of shape (1 for ndim 0) */
    uint64_t data_offset; /* where the array data starts in the file */
} ss_npy_header;

/** Total header bytes (preamble + dict), from the first bytes of the file.
 *  @param[out] out offset of the array data.
 *  @return 0, or SS_EINPUT for a bad magic, an unknown version or too few bytes
 *          (the message names the byte offset). */
int ss__npy_header_size(size_t *out, const void *buf, size_t len);

/** Parse a whole .npy header (`len` >= the size from ss__npy_header_size()).
 *  @return 0; SS_EINPUT for a malformed header (message names the byte
 *          offset), Fortran order, object or structured arrays and unsupported
 *          dtypes (complex, strings, datetimes, long double), or an element
 *          count that overflows. */
int ss__npy_parse_header(ss_npy_header *out, const void *buf, size_t len);

/** Swap `n` elements of `elem_size` bytes in place (big-endian <-> host). */
void ss__npy_swap(void *data, uint64_t n, uint32_t elem_size);

#endif
