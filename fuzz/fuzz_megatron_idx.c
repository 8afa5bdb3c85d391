/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_megatron_idx.c - libFuzzer target for the Megatron index parser
 * (converters/megatron.c).
 *
 * Bytes 0-1 are the .bin size; byte 2 = 0 takes the rest as the whole .idx,
 * otherwise the rest follows a valid magic and version (so the fuzzer
 * reaches the body). Checks every promise of an accepted index, and that
 * writing its fields back gives the same bytes. */
#include "../converters/errmsg.c"
#include "../converters/megatron.c"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    uint64_t bin = (uint64_t)data[0] | (uint64_t)data[1] << 8;
    size_t n = size - 3 + (data[2] ? 17 : 0);
    uint8_t *idx = malloc(n + 1);
    if (!idx) return 0;
    if (data[2]) {
        memcpy(idx, "MMIDIDX\0\0\1\0\0\0\0\0\0\0", 17);
        memcpy(idx + 17, data + 3, size - 3);
    } else {
        memcpy(idx, data + 3, size - 3);
    }
    mg_index x;
    char err[256] = "";
    if (ss__mg_index_parse(&x, idx, n, bin, err, sizeof err)) {
        if (!err[0]) abort();
        free(idx);
        return 0;
    }
    if (n != MG_HEADER_BYTES + 12 * x.nseq + 8 * x.ndoc) abort();
    if (ss_dtype_size(x.dtype) != x.itemsize || ss__mg_code_of_dtype(x.dtype) != x.code) abort();
    uint8_t *w = malloc(n + 1);
    if (!w) abort();
    memcpy(w, "MMIDIDX\0\0", 9);
    ss__mg_put_u64(w + 9, 1);
    w[17] = x.code;
    ss__mg_put_u64(w + 18, x.nseq);
    ss__mg_put_u64(w + 26, x.ndoc);
    for (uint64_t i = 0; i < x.nseq; i++) {
        uint64_t len = ss__mg_seq_size(&x, i), p = ss__mg_seq_pointer(&x, i);
        if (len > INT32_MAX || p + len * x.itemsize > bin) abort();
        ss__mg_put_u32(w + MG_HEADER_BYTES + 4 * i, (uint32_t)len);
        ss__mg_put_u64(w + MG_HEADER_BYTES + 4 * x.nseq + 8 * i, p);
    }
    if (x.ndoc < 1 || ss__mg_doc(&x, 0) != 0) abort();
    for (uint64_t k = 0; k < x.ndoc; k++) {
        if (k && (ss__mg_doc(&x, k) < ss__mg_doc(&x, k - 1) || ss__mg_doc(&x, k) > x.nseq)) abort();
        ss__mg_put_u64(w + MG_HEADER_BYTES + 12 * x.nseq + 8 * k, ss__mg_doc(&x, k));
    }
    if (memcmp(w, idx, n)) abort();
    free(w);
    free(idx);
    return 0;
}
