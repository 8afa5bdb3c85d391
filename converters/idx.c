/* SPDX-License-Identifier: BSD-2-Clause */
/* idx.c - parse IDX headers (see idx.h). Reads only the bytes it is given. */
#include "idx.h"

#include "internal.h"

#include <string.h>

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* IDX type byte -> dtype and element size; 0 when unknown. */
static int idx_type(unsigned char t, ss_dtype *dtype, uint32_t *size) {
    switch (t) {
    case 0x08:
        *dtype = SS_U8, *size = 1;
        return 1;
    case 0x09:
        *dtype = SS_I8, *size = 1;
        return 1;
    case 0x0B:
        *dtype = SS_I16, *size = 2;
        return 1;
    case 0x0C:
        *dtype = SS_I32, *size = 4;
        return 1;
    case 0x0D:
        *dtype = SS_F32, *size = 4;
        return 1;
    case 0x0E:
        *dtype = SS_F64, *size = 8;
        return 1;
    default:
        return 0;
    }
}

int ss__idx_header_size(size_t *out, const void *buf, size_t len) {
    const unsigned char *p = buf;
    ss_dtype dtype;
    uint32_t size;
    *out = 0;
    if (len < 4)
        return ss__fail(SS_EINPUT, "truncated IDX header: %zu of 4 magic bytes at byte 0", len);
    if (p[0] != 0 || p[1] != 0)
        return ss__fail(SS_EINPUT,
                        "not an IDX file: magic bytes 0-1 are 0x%02x 0x%02x, expected 0x00 0x00",
                        p[0], p[1]);
    if (!idx_type(p[2], &dtype, &size))
        return ss__fail(SS_EINPUT, "unknown IDX element type 0x%02x at byte 2", p[2]);
    if (p[3] == 0 || p[3] > SS_IDX_MAX_DIMS)
        return ss__fail(SS_EINPUT, "IDX dimension count %u at byte 3 is not in 1..%d", p[3],
                        SS_IDX_MAX_DIMS);
    *out = 4 + 4 * (size_t)p[3];
    return 0;
}

int ss__idx_parse_header(ss_idx_header *out, const void *buf, size_t len) {
    const unsigned char *p = buf;
    size_t need;
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = ss__idx_header_size(&need, buf, len)) != 0) return rc;
    if (len < need) return ss__fail(SS_EINPUT, "truncated IDX header: %zu of %zu bytes", len, need);
    idx_type(p[2], &out->dtype, &out->elem_size);
    out->ndim = p[3];
    out->header_bytes = need;
    out->item_elems = 1;
    for (uint32_t k = 0; k < out->ndim; k++) {
        out->dims[k] = be32(p + 4 + 4 * k);
        if (k == 0) continue; /* zero items is a valid (empty) file */
        if (out->dims[k] == 0)
            return ss__fail(SS_EINPUT, "IDX dimension %u (at byte %u) is 0", k, 4 + 4 * k);
        /* dims are < 2^32 and at most 7 of them multiply: check against 2^40
           elements per item, far above any real image and safe from overflow */
        out->item_elems *= out->dims[k];
        if (out->item_elems > ((uint64_t)1 << 40))
            return ss__fail(SS_EINPUT,
                            "IDX item of more than 2^40 elements (dimension %u at byte %u)", k,
                            4 + 4 * k);
    }
    return 0;
}

void ss__idx_to_host(void *data, uint64_t n, uint32_t elem_size) {
    unsigned char *p = data;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return; /* already host order */
#endif
    if (elem_size == 1) return;
    for (uint64_t i = 0; i < n; i++, p += elem_size) {
        for (uint32_t a = 0, b = elem_size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
    }
}
