/* SPDX-License-Identifier: BSD-2-Clause */
/* content.c - a store's content digest (spec/FORMAT.md §5, §13): what the
 * header of a finished store carries so that a dataset's manifest, which
 * digests that header, binds the shard's every block, and not only its
 * counts. The writer computes it before it writes the final header; verify
 * computes it again from the blocks and compares. */
#include "layout.h"

#include <errno.h>
#include <xxhash.h>

static uint64_t ss_be64(const unsigned char *b) {
    uint64_t v = 0;
    for (int k = 0; k < 8; k++) v = v << 8 | b[k];
    return v;
}

/* What the digest takes of the block under key `k`. */
enum ss_content_part {
    SS_CONTENT_NONE,   /* not a block the header names */
    SS_CONTENT_HEADER, /* its stored checksum and length */
    SS_CONTENT_PREFIX  /* a field's last data chunk or index segment: the
                          payload bytes the header counts (an append rewrites
                          these blocks with more bytes after them before it
                          writes a new header) */
};

/* The part of block `k` the digest takes, and for a prefix its bytes. */
static enum ss_content_part ss_content_key(const ss_header *h, const MDB_val *k,
                                           uint64_t *prefix) {
    const unsigned char *b = k->mv_data;
    if (k->mv_size >= 2 && b[0] == SS_KEY_ATTR) return SS_CONTENT_HEADER;
    if (k->mv_size != 10 || (b[0] != SS_KEY_DATA && b[0] != SS_KEY_INDEX) || b[1] >= h->nfields)
        return SS_CONTENT_NONE;
    const ss_field_state *f = &h->fields[b[1]];
    uint64_t n = ss_be64(b + 2);
    if (b[0] == SS_KEY_DATA) {
        *prefix = f->tail_bytes;
        return n + 1 < f->nchunks ? SS_CONTENT_HEADER
               : n < f->nchunks   ? SS_CONTENT_PREFIX
                                  : SS_CONTENT_NONE;
    }
    uint64_t last = ss_segment_of(h->count, h->segment_entries);
    if (!f->def.sequence || n > last) return SS_CONTENT_NONE;
    *prefix = ss_segment_lead(h->format_version) +
              (h->count + 1 - last * h->segment_entries) * SS_INDEX_ENTRY;
    return n < last ? SS_CONTENT_HEADER : SS_CONTENT_PREFIX;
}

int ss__content_digest(uint64_t *out, MDB_txn *txn, MDB_dbi dbi, const ss_header *h) {
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc) return rc;
    XXH3_state_t *st = XXH3_createState();
    if (!st) {
        mdb_cursor_close(cur);
        return ENOMEM;
    }
    XXH3_64bits_reset(st);
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        uint64_t prefix = 0;
        enum ss_content_part part = ss_content_key(h, &k, &prefix);
        if (part == SS_CONTENT_NONE) continue;
        const unsigned char *value = v.mv_data;
        unsigned char rec[SS_BLOCK_HDR];
        if (v.mv_size < SS_BLOCK_HDR ||
            (part == SS_CONTENT_PREFIX &&
             (prefix > v.mv_size - SS_BLOCK_HDR || prefix > ss_le64(value + 8)))) {
            rc = MDB_CORRUPTED;
            break;
        }
        if (part == SS_CONTENT_HEADER) {
            memcpy(rec, value, SS_BLOCK_HDR);
        } else {
            ss_put_le64(rec, XXH3_64bits(value + SS_BLOCK_HDR, (size_t)prefix));
            ss_put_le64(rec + 8, prefix);
        }
        unsigned char len[2] = {(unsigned char)k.mv_size, (unsigned char)(k.mv_size >> 8)};
        XXH3_64bits_update(st, len, 2);
        XXH3_64bits_update(st, k.mv_data, k.mv_size);
        XXH3_64bits_update(st, rec, SS_BLOCK_HDR);
    }
    if (rc == MDB_NOTFOUND) {
        rc = 0;
        *out = XXH3_64bits_digest(st);
    }
    XXH3_freeState(st);
    mdb_cursor_close(cur);
    return rc;
}
