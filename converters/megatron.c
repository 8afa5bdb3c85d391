/* SPDX-License-Identifier: BSD-2-Clause */
/* megatron.c - the Megatron index parser (see megatron.h). */
#include "megatron.h"
#include "errmsg.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char mg_magic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};

static const ss_dtype code_dtype[9] = {0,      SS_U8,  SS_I8,  SS_I16, SS_I32,
                                       SS_I64, SS_F64, SS_F32, SS_U16};

ss_dtype ss__mg_dtype_of_code(uint8_t code) {
    return code < 9 ? code_dtype[code] : 0;
}

uint8_t ss__mg_code_of_dtype(ss_dtype dtype) {
    for (uint8_t k = 1; k < 9; k++)
        if (code_dtype[k] == dtype) return k;
    return 0;
}

static uint64_t rd64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void ss__mg_put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i);
}

void ss__mg_put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

uint64_t ss__mg_seq_size(const mg_index *x, uint64_t i) {
    return rd32(x->sizes + 4 * i);
}

uint64_t ss__mg_seq_pointer(const mg_index *x, uint64_t i) {
    return rd64(x->pointers + 8 * i);
}

uint64_t ss__mg_doc(const mg_index *x, uint64_t k) {
    return rd64(x->doc_idx + 8 * k);
}

static int parse_header(mg_index *x, const uint8_t *d, size_t n, char *err, size_t errlen) {
    if (n < MG_HEADER_BYTES)
        return ss__errbuf(err, errlen, "index is %zu bytes, shorter than the %d-byte header", n,
                    MG_HEADER_BYTES);
    if (memcmp(d, mg_magic, 9))
        return ss__errbuf(err, errlen, "not a Megatron index: the magic is not MMIDIDX\\0\\0");
    uint64_t version = rd64(d + 9);
    if (version != 1)
        return ss__errbuf(err, errlen, "index version %" PRIu64 ": only version 1 is known", version);
    x->code = d[17];
    x->dtype = ss__mg_dtype_of_code(x->code);
    if (!x->dtype)
        return ss__errbuf(err, errlen, "unknown dtype code %u (Megatron's are 1 to 8)", x->code);
    x->itemsize = (uint32_t)ss_dtype_size(x->dtype);
    x->nseq = rd64(d + 18);
    x->ndoc = rd64(d + 26);
    uint64_t body = n - MG_HEADER_BYTES;
    if (x->nseq > body / 12 || x->ndoc > (body - 12 * x->nseq) / 8)
        return ss__errbuf(err, errlen,
                    "the index claims %" PRIu64 " sequences and %" PRIu64
                    " document indices, more than its %zu bytes hold",
                    x->nseq, x->ndoc, n);
    uint64_t extra = body - 12 * x->nseq - 8 * x->ndoc;
    if (extra && extra == x->nseq)
        return ss__errbuf(err, errlen,
                    "%" PRIu64 " bytes after the document indices: sequence modes of a "
                    "multimodal dataset, not supported",
                    extra);
    if (extra)
        return ss__errbuf(err, errlen, "%" PRIu64 " trailing bytes after the document indices", extra);
    x->sizes = d + MG_HEADER_BYTES;
    x->pointers = x->sizes + 4 * x->nseq;
    x->doc_idx = x->pointers + 8 * x->nseq;
    return 0;
}

int ss__mg_index_parse(mg_index *out, const uint8_t *d, size_t n, uint64_t bin_size, char *err,
                       size_t errlen) {
    mg_index x;
    memset(out, 0, sizeof *out);
    if (parse_header(&x, d, n, err, errlen)) return -1;
    for (uint64_t i = 0; i < x.nseq; i++) {
        uint32_t len = rd32(x.sizes + 4 * i);
        uint64_t p = ss__mg_seq_pointer(&x, i);
        if (len > INT32_MAX)
            return ss__errbuf(err, errlen, "sequence %" PRIu64 " has a negative length", i);
        if (p > bin_size || (uint64_t)len * x.itemsize > bin_size - p)
            return ss__errbuf(err, errlen,
                        "sequence %" PRIu64 " (bytes %" PRIu64 " + %" PRIu64
                        ") passes the end of the .bin (%" PRIu64 " bytes)",
                        i, p, (uint64_t)len * x.itemsize, bin_size);
    }
    if (x.ndoc == 0) return ss__errbuf(err, errlen, "no document indices (doc_idx must start with 0)");
    if (ss__mg_doc(&x, 0) != 0)
        return ss__errbuf(err, errlen, "document index 0 is %" PRIu64 ", not 0", ss__mg_doc(&x, 0));
    for (uint64_t k = 1; k < x.ndoc; k++) {
        uint64_t v = ss__mg_doc(&x, k), prev = ss__mg_doc(&x, k - 1);
        if (v < prev || v > x.nseq)
            return ss__errbuf(err, errlen,
                        "document index %" PRIu64 " is %" PRIu64 ": must be in [%" PRIu64
                        ", %" PRIu64 "]",
                        k, v, prev, x.nseq);
    }
    /* Megatron's reader asserts it too: every sequence is in a document */
    if (ss__mg_doc(&x, x.ndoc - 1) != x.nseq)
        return ss__errbuf(err, errlen,
                    "the last document index is %" PRIu64 ", not the sequence count %" PRIu64
                    ": the sequences after it belong to no document",
                    ss__mg_doc(&x, x.ndoc - 1), x.nseq);
    *out = x;
    return 0;
}
