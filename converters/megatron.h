/* SPDX-License-Identifier: BSD-2-Clause */
/* megatron.h - Megatron-LM / fairseq indexed datasets (`PREFIX.bin` +
 * `PREFIX.idx`, "MMIDIDX"), internal to the command line.
 *
 * The .idx layout (little-endian), as Megatron's _IndexWriter writes it:
 *   9 bytes  magic "MMIDIDX\0\0"
 *   u64      version (1)
 *   u8       dtype code: 1 u8, 2 i8, 3 i16, 4 i32, 5 i64, 6 f64, 7 f32, 8 u16
 *   u64      sequence count S
 *   u64      document count D (entries of doc_idx: documents + 1)
 *   i32[S]   sequence lengths (elements)
 *   i64[S]   sequence pointers (byte offsets into .bin)
 *   i64[D]   doc_idx: doc_idx[0] = 0, then the sequence count after each
 *            document, non-decreasing, the last one S (Megatron's reader
 *            asserts it)
 * The .bin holds the sequences' elements back to back. */
#ifndef SS_MEGATRON_H
#define SS_MEGATRON_H

#include "seqstore.h"

#include <stddef.h>
#include <stdint.h>

#define MG_HEADER_BYTES 34

/** A parsed, checked index; the arrays point into the caller's buffer. */
typedef struct mg_index {
    uint8_t code;      /* dtype code */
    ss_dtype dtype;    /* the same as an ss_dtype */
    uint32_t itemsize; /* bytes per element */
    uint64_t nseq, ndoc;
    const uint8_t *sizes, *pointers, *doc_idx; /* unaligned little-endian arrays */
} mg_index;

/** The ss_dtype of Megatron dtype code `code`, or 0 if unknown. */
ss_dtype ss__mg_dtype_of_code(uint8_t code);
/** The Megatron dtype code of `dtype`, or 0 if Megatron has none (u32, u64, f16, bf16). */
uint8_t ss__mg_code_of_dtype(ss_dtype dtype);

/** Parse and check the index [d, d + n) against a .bin of `bin_size` bytes:
 *  magic, version, dtype code, counts against the file size (no trailing
 *  bytes), lengths >= 0, every sequence inside the .bin, doc_idx starting
 *  at 0, non-decreasing, at most S and ending at S.
 *  @return 0, or -1 with a specific message in err. */
int ss__mg_index_parse(mg_index *out, const uint8_t *d, size_t n, uint64_t bin_size, char *err,
                       size_t errlen);

/** Element i of the index's arrays (i < nseq, resp. < ndoc; after a parse). */
uint64_t ss__mg_seq_size(const mg_index *x, uint64_t i);
uint64_t ss__mg_seq_pointer(const mg_index *x, uint64_t i);
uint64_t ss__mg_doc(const mg_index *x, uint64_t k);

/** Little-endian encoders used by the writer. */
void ss__mg_put_u64(uint8_t *p, uint64_t v);
void ss__mg_put_u32(uint8_t *p, uint32_t v);

#endif
