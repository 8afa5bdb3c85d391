/* SPDX-License-Identifier: BSD-2-Clause */
/* lengths.c - the stored lengths section `ss.lengths.FIELD` (spec/FORMAT.md
 * §7.3): written by the writer's final transaction from the index it has
 * just written, read zero-copy, checked by verify against the index.
 *
 * Why a section when lengths are differences of the index's `start`: the
 * index interleaves `loc` and `start` in 16-byte entries split over blocks of
 * 65534 or 65536, so a reader wanting every length (a bucket sampler, NumPy) must walk
 * it and allocate 8 bytes per example. The section is one contiguous typed
 * array of the narrowest width that holds the longest example, readable in
 * place, so lengths cost no pass and no memory at open or afterwards. */
#include "sections.h"

#include <stdio.h>
#include <stdlib.h>

/* The index payload of segment `g` of field `f` inside write transaction
 * `txn` (the blocks this transaction wrote included). */
static int ss_segment_get(MDB_txn *txn, MDB_dbi dbi, const ss_header *h, uint32_t f, uint64_t g,
                          const unsigned char **entries, uint64_t *n) {
    ss_key key;
    ss__key_numbered(&key, SS_KEY_INDEX, f, g);
    MDB_val k = ss_key_val(&key), v;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc) return rc;
    if (v.mv_size < SS_BLOCK_HDR) return MDB_CORRUPTED;
    uint64_t len = ss_le64((const unsigned char *)v.mv_data + 8);
    uint64_t lead = ss_segment_lead(h->format_version);
    if (len > v.mv_size - SS_BLOCK_HDR || len < lead || (len - lead) % SS_INDEX_ENTRY)
        return MDB_CORRUPTED;
    *entries = (const unsigned char *)v.mv_data + SS_BLOCK_HDR + lead;
    *n = (len - lead) / SS_INDEX_ENTRY;
    return 0;
}

/* Walk the `count + 1` index entries of field `f`, calling `each` with every
 * example's length. Two walks (the longest, then the values) read the index
 * pages twice but keep no 8-byte copy of every length. */
typedef void (*ss_length_fn)(void *ctx, uint64_t i, uint64_t length);

static int ss_index_walk(MDB_txn *txn, MDB_dbi dbi, const ss_header *h, uint32_t f,
                         ss_length_fn each, void *ctx) {
    uint64_t prev = 0, e = 0;
    for (uint64_t g = 0; e <= h->count; g++) {
        const unsigned char *p;
        uint64_t n;
        int rc = ss_segment_get(txn, dbi, h, f, g, &p, &n);
        if (rc) return rc;
        for (uint64_t j = 0; j < n && e <= h->count; j++, e++) {
            uint64_t start = ss_le64(p + j * SS_INDEX_ENTRY + 8);
            if (e > 0) {
                if (start < prev) return MDB_CORRUPTED;
                each(ctx, e - 1, start - prev);
            }
            prev = start;
        }
        if (n < h->segment_entries && e <= h->count) return MDB_CORRUPTED;
    }
    return 0;
}

static void ss_track_max(void *ctx, uint64_t i, uint64_t length) {
    (void)i;
    uint64_t *max = ctx;
    if (length > *max) *max = length;
}

typedef struct ss_fill {
    unsigned char *out;
    unsigned width;
} ss_fill;

static void ss_fill_one(void *ctx, uint64_t i, uint64_t length) {
    ss_fill *f = ctx;
    unsigned char *p = f->out + i * f->width;
    for (unsigned b = 0; b < f->width; b++) p[b] = (unsigned char)(length >> (8 * b));
}

uint32_t ss__lengths_dtype(uint64_t longest, unsigned *width) {
    *width = longest <= UINT8_MAX ? 1 : longest <= UINT16_MAX ? 2 : longest <= UINT32_MAX ? 4 : 8;
    return *width == 1 ? SS_U8 : *width == 2 ? SS_U16 : *width == 4 ? SS_U32 : SS_U64;
}

int ss__lengths_put(MDB_txn *txn, MDB_dbi dbi, const ss_header *h) {
    for (uint32_t f = 0; f < h->nfields; f++) {
        if (!h->fields[f].def.sequence) continue;
        uint64_t longest = 0;
        int rc = ss_index_walk(txn, dbi, h, f, ss_track_max, &longest);
        if (rc) return rc;
        unsigned width;
        uint32_t dtype = ss__lengths_dtype(longest, &width);
        uint64_t len = SS_ATTR_PREFIX + h->count * width;
        ss_key key;
        char name[SS_MAX_ATTR_NAME + 1];
        snprintf(name, sizeof name, SS_LENGTHS_ATTR_PREFIX "%s", h->fields[f].name);
        ss__key_named(&key, SS_KEY_ATTR, name);
        MDB_val k = ss_key_val(&key);
        uint64_t vsize = ss__block_value_size(len);
        if (vsize > SS_MAX_VALUE || h->count > (SS_MAX_VALUE / width)) {
            /* Too many examples for one block: no section (readers fall back
             * to the index), rather than a write that fails at its end. */
            rc = mdb_del(txn, dbi, &k, NULL);
            if (rc && rc != MDB_NOTFOUND) return rc;
            continue;
        }
        MDB_val v = {vsize, NULL};
        if ((rc = mdb_put(txn, dbi, &k, &v, MDB_RESERVE))) return rc;
        unsigned char *payload = (unsigned char *)v.mv_data + SS_BLOCK_HDR;
        ss_put_le32(payload, dtype);
        ss_put_le32(payload + 4, 0);
        ss_fill fill = {payload + SS_ATTR_PREFIX, width};
        if ((rc = ss_index_walk(txn, dbi, h, f, ss_fill_one, &fill))) return rc;
        ss__block_seal(v.mv_data, vsize, len, &key, h->format_version);
    }
    return 0;
}

/* ---------------------------------------------------------------- reading */

int ss_lengths_view(const void **data, ss_dtype *dtype, uint64_t *count, const ss_store *s,
                    uint32_t field) {
    if (!data || !dtype || !count || !s)
        return ss__fail(SS_EINVAL, "ss_lengths_view: NULL argument");
    *data = NULL;
    *count = 0;
    if (field >= s->h.nfields)
        return ss__fail(SS_ERANGE, "%s: field %u of %u", s->path, field, s->h.nfields);
    const char *fname = s->h.fields[field].name;
    if (!s->h.fields[field].def.sequence)
        return ss__fail(SS_EINVAL,
                        "%s: field '%s' is fixed (every length is 1): no lengths section", s->path,
                        fname);
    char name[SS_MAX_ATTR_NAME + 1];
    snprintf(name, sizeof name, SS_LENGTHS_ATTR_PREFIX "%s", fname);
    ss_attr a;
    int rc = ss_attr_get(&a, s, name);
    if (rc == SS_ENOTFOUND)
        return ss__fail(SS_ENOTFOUND,
                        "%s: field '%s' has no stored lengths (a store written before "
                        "format §7.3, or too many examples for one block): use ss_lengths()",
                        s->path, fname);
    if (rc) return rc;
    size_t w = a.type == SS_U8    ? 1
               : a.type == SS_U16 ? 2
               : a.type == SS_U32 ? 4
               : a.type == SS_U64 ? 8
                                  : 0;
    if (!w || a.size != s->h.count * w || a.size / w != s->h.count)
        return ss__fail(SS_ECORRUPT,
                        "%s: attribute '%s': type %u and %llu bytes, not %llu lengths of "
                        "u8, u16, u32 or u64",
                        s->path, name, a.type, (unsigned long long)a.size,
                        (unsigned long long)s->h.count);
    *data = a.data;
    *dtype = (ss_dtype)a.type;
    *count = s->h.count;
    return 0;
}

uint64_t ss__lengths_value(const void *data, ss_dtype dtype, uint64_t i) {
    switch (dtype) {
    case SS_U8:
        return ((const uint8_t *)data)[i];
    case SS_U16:
        return ((const uint16_t *)data)[i];
    case SS_U32:
        return ((const uint32_t *)data)[i];
    default:
        return ((const uint64_t *)data)[i];
    }
}

int ss__lengths_check(const ss_store *s, uint32_t field, uint64_t *bad) {
    const void *data;
    ss_dtype dtype;
    uint64_t n;
    int rc = ss_lengths_view(&data, &dtype, &n, s, field);
    if (rc) return rc;
    /* Every length, and the narrowest width: a wider one means the writer did
     * not write it (§7.3 fixes the width), so it is not trusted either. */
    uint64_t longest = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t want = s->ds ? ss__dataset_index_length(s, field, i) : ss_length(s, field, i);
        uint64_t got = ss__lengths_value(data, dtype, i);
        if (want > longest) longest = want;
        if (got != want) {
            *bad = i;
            return ss__fail(SS_ECORRUPT,
                            "%s: stored lengths (attribute '" SS_LENGTHS_ATTR_PREFIX
                            "%s'): example %llu has %llu, the "
                            "index says %llu",
                            s->path, s->h.fields[field].name, (unsigned long long)i,
                            (unsigned long long)got, (unsigned long long)want);
        }
    }
    unsigned width;
    if (ss__lengths_dtype(longest, &width) != dtype) {
        *bad = n;
        return ss__fail(SS_ECORRUPT,
                        "%s: stored lengths (attribute '" SS_LENGTHS_ATTR_PREFIX
                        "%s'): type %u is not the narrowest for "
                        "a longest example of %llu",
                        s->path, s->h.fields[field].name, (unsigned)dtype,
                        (unsigned long long)longest);
    }
    return 0;
}
