/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_idx.c - libFuzzer target for the IDX header parser (converters/idx.c).
 *
 * Self-contained: it compiles the parser in (only the library's ss__fail is
 * needed), so it links with seqstore_static alone. Checks the parser's
 * promises on every accepted input. */
#include "../converters/idx.c"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ss_idx_header h;
    size_t need;
    if (ss__idx_header_size(&need, data, size) == 0 && need > 4 + 4 * SS_IDX_MAX_DIMS) abort();
    if (ss__idx_parse_header(&h, data, size) != 0) return 0;
    if (h.header_bytes > size || h.header_bytes != 4 + 4 * (uint64_t)h.ndim) abort();
    if (h.ndim < 1 || h.ndim > SS_IDX_MAX_DIMS) abort();
    if (ss_dtype_size(h.dtype) != h.elem_size) abort();
    uint64_t elems = 1;
    for (uint32_t k = 1; k < h.ndim; k++) {
        if (h.dims[k] == 0) abort();
        elems *= h.dims[k];
    }
    if (elems != h.item_elems) abort();
    /* the body as items: swapping twice is the identity */
    size_t body = size - (size_t)h.header_bytes, n = body / h.elem_size;
    if (n) {
        uint8_t *copy = malloc(n * h.elem_size);
        if (!copy) return 0;
        memcpy(copy, data + h.header_bytes, n * h.elem_size);
        ss__idx_to_host(copy, n, h.elem_size);
        ss__idx_to_host(copy, n, h.elem_size);
        if (memcmp(copy, data + h.header_bytes, n * h.elem_size) != 0) abort();
        free(copy);
    }
    return 0;
}
