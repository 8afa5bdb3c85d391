/* SPDX-License-Identifier: BSD-2-Clause */
/* idx.h - parse the header of an IDX file (MNIST, Fashion-MNIST).
 *
 * An IDX file is: 2 zero bytes, a type byte, a dimension count byte, then one
 * big-endian u32 per dimension, then the elements, big-endian, row-major.
 * These functions read only bytes handed to them: no file I/O, so they can be
 * fuzzed. The CLI glue lives in convert_idx.c. */
#ifndef SS_IDX_H
#define SS_IDX_H

#include "seqstore.h"

#include <stddef.h>
#include <stdint.h>

#define SS_IDX_MAX_DIMS 8 /* more dimensions than this are refused */

typedef struct ss_idx_header {
    ss_dtype dtype;                 /* element type in the store (host order) */
    uint32_t elem_size;             /* bytes per element */
    uint32_t ndim;                  /* 1..SS_IDX_MAX_DIMS */
    uint32_t dims[SS_IDX_MAX_DIMS]; /* dims[0] is the item count */
    uint64_t item_elems;            /* product of dims[1..ndim) (1 if ndim is 1) */
    uint64_t header_bytes;          /* 4 + 4 * ndim: where the data starts */
} ss_idx_header;

/** Bytes the header needs, from its first 4 bytes (the magic).
 *  @param[out] out 4 + 4 * ndim.
 *  @return 0, or SS_EINPUT when fewer than 4 bytes are given, the first two
 *          are not zero, the type byte is unknown or ndim is 0 or too large
 *          (the message names the byte offset). */
int ss__idx_header_size(size_t *out, const void *buf, size_t len);

/** Parse an IDX header from the first `len` bytes of a file.
 *  @return 0; SS_EINPUT for a bad magic, a truncated header, a zero
 *          dimension or an item too large (the message names the byte
 *          offset). */
int ss__idx_parse_header(ss_idx_header *out, const void *buf, size_t len);

/** Convert `n` big-endian elements of `elem_size` bytes in place to host order. */
void ss__idx_to_host(void *data, uint64_t n, uint32_t elem_size);

#endif
