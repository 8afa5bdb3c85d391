/* SPDX-License-Identifier: BSD-2-Clause */
/* npy.c - parse .npy headers (see npy.h). Reads only the bytes it is given. */
#include "npy.h"

#include "internal.h"

#include <string.h>

#define NPY_MAX_DICT (1u << 20) /* a larger header is refused, not allocated */

int ss__npy_header_size(size_t *out, const void *buf, size_t len) {
    const unsigned char *p = buf;
    uint64_t hlen;
    *out = 0;
    if (len < 10)
        return ss__fail(SS_EINPUT, "truncated .npy preamble: %zu of 10 bytes at byte 0", len);
    if (memcmp(p, "\x93NUMPY", 6) != 0)
        return ss__fail(SS_EINPUT, "not a .npy file: bad magic at byte 0");
    if (p[6] == 1) {
        hlen = (uint64_t)p[8] | (uint64_t)p[9] << 8;
        *out = (size_t)(10 + hlen);
        return 0;
    }
    if (p[6] != 2 && p[6] != 3)
        return ss__fail(SS_EINPUT, ".npy format version %u.%u at byte 6 is not 1, 2 or 3", p[6],
                        p[7]);
    if (len < 12)
        return ss__fail(SS_EINPUT, "truncated .npy preamble: %zu of 12 bytes at byte 0", len);
    hlen = (uint64_t)p[8] | (uint64_t)p[9] << 8 | (uint64_t)p[10] << 16 | (uint64_t)p[11] << 24;
    if (hlen > NPY_MAX_DICT)
        return ss__fail(SS_EINPUT, ".npy header length %llu at byte 8 exceeds %u bytes",
                        (unsigned long long)hlen, NPY_MAX_DICT);
    *out = (size_t)(12 + hlen);
    return 0;
}

/* A cursor over the header dict; `base` is the dict's offset in the file so
 * that messages name file byte offsets. */
typedef struct cursor {
    const char *p, *end;
    size_t base;
    const char *start;
} cursor;

static size_t at(const cursor *c) {
    return c->base + (size_t)(c->p - c->start);
}

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int expect(cursor *c, char ch) {
    skip_ws(c);
    if (c->p >= c->end || *c->p != ch)
        return ss__fail(SS_EINPUT, "malformed .npy header: expected '%c' at byte %zu", ch, at(c));
    c->p++;
    return 0;
}

/* A quoted Python string without escapes, copied into out (truncated to cap-1). */
static int parse_string(cursor *c, char *out, size_t cap) {
    char q;
    size_t n = 0;
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return ss__fail(SS_EINPUT, "malformed .npy header: expected a string at byte %zu", at(c));
    q = *c->p++;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\')
            return ss__fail(SS_EINPUT, "malformed .npy header: escape in string at byte %zu",
                            at(c));
        if (n + 1 < cap) out[n++] = *c->p;
        c->p++;
    }
    if (c->p >= c->end)
        return ss__fail(SS_EINPUT, "malformed .npy header: unterminated string at byte %zu", at(c));
    c->p++;
    out[n] = '\0';
    return 0;
}

static int parse_bool(cursor *c, int *out) {
    skip_ws(c);
    if ((size_t)(c->end - c->p) >= 4 && memcmp(c->p, "True", 4) == 0) {
        *out = 1, c->p += 4;
        return 0;
    }
    if ((size_t)(c->end - c->p) >= 5 && memcmp(c->p, "False", 5) == 0) {
        *out = 0, c->p += 5;
        return 0;
    }
    return ss__fail(SS_EINPUT, "malformed .npy header: expected True or False at byte %zu", at(c));
}

static int parse_shape(cursor *c, ss_npy_header *h) {
    int rc;
    if ((rc = expect(c, '(')) != 0) return rc;
    h->ndim = 0;
    for (;;) {
        uint64_t v = 0;
        int digits = 0;
        skip_ws(c);
        if (c->p < c->end && *c->p == ')') break;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (v > (UINT64_MAX - 9) / 10)
                return ss__fail(SS_EINPUT, ".npy shape value too large at byte %zu", at(c));
            v = v * 10 + (uint64_t)(*c->p - '0');
            c->p++, digits++;
        }
        if (!digits)
            return ss__fail(SS_EINPUT, "malformed .npy header: expected a shape value at byte %zu",
                            at(c));
        if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 long */
        if (h->ndim == SS_NPY_MAX_DIMS)
            return ss__fail(SS_EINPUT, ".npy array has more than %d axes (byte %zu)",
                            SS_NPY_MAX_DIMS, at(c));
        h->shape[h->ndim++] = v;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == ')') break;
        return ss__fail(SS_EINPUT, "malformed .npy header: expected ',' or ')' at byte %zu", at(c));
    }
    c->p++; /* ')' */
    return 0;
}

/* descr such as "<f4" -> dtype, size, swap. `off` is its byte offset. */
static int parse_descr(ss_npy_header *h, const char *d, size_t off) {
    char order = '|', kind;
    unsigned long size = 0;
    const char *s = d;
    if (*s == '<' || *s == '>' || *s == '|' || *s == '=') order = *s++;
    kind = *s;
    if (kind == '\0') return ss__fail(SS_EINPUT, ".npy descr '%s' at byte %zu is empty", d, off);
    if (kind == 'O')
        return ss__fail(SS_EINPUT, ".npy object arrays (descr '%s' at byte %zu) are not supported",
                        d, off);
    s++;
    if (*s < '0' || *s > '9')
        return ss__fail(SS_EINPUT, ".npy descr '%s' at byte %zu has no element size", d, off);
    while (*s >= '0' && *s <= '9' && size < 1000) size = size * 10 + (unsigned long)(*s++ - '0');
    if (*s != '\0') return ss__fail(SS_EINPUT, "unsupported .npy dtype '%s' at byte %zu", d, off);
    h->dtype = 0;
    if (kind == 'b' && size == 1)
        h->dtype = SS_U8;
    else if (kind == 'i' && size == 1)
        h->dtype = SS_I8;
    else if (kind == 'i' && size == 2)
        h->dtype = SS_I16;
    else if (kind == 'i' && size == 4)
        h->dtype = SS_I32;
    else if (kind == 'i' && size == 8)
        h->dtype = SS_I64;
    else if (kind == 'u' && size == 1)
        h->dtype = SS_U8;
    else if (kind == 'u' && size == 2)
        h->dtype = SS_U16;
    else if (kind == 'u' && size == 4)
        h->dtype = SS_U32;
    else if (kind == 'u' && size == 8)
        h->dtype = SS_U64;
    else if (kind == 'f' && size == 2)
        h->dtype = SS_F16;
    else if (kind == 'f' && size == 4)
        h->dtype = SS_F32;
    else if (kind == 'f' && size == 8)
        h->dtype = SS_F64;
    if (h->dtype == 0)
        return ss__fail(SS_EINPUT,
                        "unsupported .npy dtype '%s' at byte %zu (supported: bool, int8-64, "
                        "uint8-64, float16/32/64)",
                        d, off);
    h->elem_size = (uint32_t)size;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    h->swap = size > 1 && order == '<';
#else
    h->swap = size > 1 && order == '>';
#endif
    return 0;
}

static int parse_dict(ss_npy_header *h, cursor *c) {
    int have_descr = 0, have_order = 0, have_shape = 0, rc;
    char key[32], descr[64];
    size_t descr_at = 0;
    if ((rc = expect(c, '{')) != 0) return rc;
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == '}') break;
        size_t key_at = at(c);
        if ((rc = parse_string(c, key, sizeof key)) != 0) return rc;
        if ((rc = expect(c, ':')) != 0) return rc;
        if (strcmp(key, "descr") == 0) {
            skip_ws(c);
            descr_at = at(c);
            if (c->p < c->end && *c->p == '[')
                return ss__fail(SS_EINPUT, ".npy structured dtype at byte %zu is not supported",
                                descr_at);
            if ((rc = parse_string(c, descr, sizeof descr)) != 0) return rc;
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if ((rc = parse_bool(c, &h->fortran_order)) != 0) return rc;
            have_order = 1;
        } else if (strcmp(key, "shape") == 0) {
            if ((rc = parse_shape(c, h)) != 0) return rc;
            have_shape = 1;
        } else {
            return ss__fail(SS_EINPUT, "unknown .npy header key '%s' at byte %zu", key, key_at);
        }
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == '}') break;
        return ss__fail(SS_EINPUT, "malformed .npy header: expected ',' or '}' at byte %zu", at(c));
    }
    if (!have_descr || !have_order || !have_shape)
        return ss__fail(SS_EINPUT, ".npy header lacks '%s'",
                        !have_descr   ? "descr"
                        : !have_order ? "fortran_order"
                                      : "shape");
    if ((rc = parse_descr(h, descr, descr_at)) != 0) return rc;
    return 0;
}

int ss__npy_parse_header(ss_npy_header *out, const void *buf, size_t len) {
    const unsigned char *p = buf;
    size_t need, pre;
    cursor c;
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = ss__npy_header_size(&need, buf, len)) != 0) return rc;
    if (len < need)
        return ss__fail(SS_EINPUT, "truncated .npy header: %zu of %zu bytes", len, need);
    out->major = p[6];
    out->minor = p[7];
    pre = out->major == 1 ? 10 : 12;
    c.p = c.start = (const char *)p + pre;
    c.end = (const char *)p + need;
    c.base = pre;
    if ((rc = parse_dict(out, &c)) != 0) return rc;
    if (out->fortran_order)
        return ss__fail(SS_EINPUT, ".npy array is in Fortran order; only C order is supported");
    out->count = 1;
    for (uint32_t k = 0; k < out->ndim; k++) {
        if (out->shape[k] != 0 && out->count > (UINT64_MAX >> 8) / out->shape[k])
            return ss__fail(SS_EINPUT, ".npy shape overflows: axis %u is %llu", k,
                            (unsigned long long)out->shape[k]);
        out->count *= out->shape[k];
    }
    out->data_offset = need;
    return 0;
}

void ss__npy_swap(void *data, uint64_t n, uint32_t elem_size) {
    unsigned char *p = data;
    if (elem_size <= 1) return;
    for (uint64_t i = 0; i < n; i++, p += elem_size) {
        for (uint32_t a = 0, b = elem_size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
    }
}
