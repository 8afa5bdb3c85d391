/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_npy.c - libFuzzer target for the .npy header parser (converters/npy.c).
 *
 * Self-contained: it compiles the parser in (only the library's ss__fail is
 * needed), so it links with seqstore_static alone. Checks the parser's
 * promises on every accepted input. */
#include "../converters/npy.c"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ss_npy_header h;
    size_t need;
    int sized = ss__npy_header_size(&need, data, size) == 0;
    if (ss__npy_parse_header(&h, data, size) != 0) return 0;
    if (!sized || h.data_offset != need || h.data_offset > size) abort();
    if (h.fortran_order || h.ndim > SS_NPY_MAX_DIMS) abort();
    if (ss_dtype_size(h.dtype) != h.elem_size) abort();
    if (h.swap && h.elem_size == 1) abort();
    uint64_t count = 1;
    for (uint32_t k = 0; k < h.ndim; k++) count *= h.shape[k];
    if (count != h.count || count > UINT64_MAX / 8 / h.elem_size) abort();
    return 0;
}
