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

/* Is the key `k` a block the header `h` names (an attribute, or a data chunk
 * or index segment within the header's counts)? */
static int ss_content_key(const ss_header *h, const MDB_val *k) {
    const unsigned char *b = k->mv_data;
    if (k->mv_size >= 2 && b[0] == SS_KEY_ATTR) return 1;
    if (k->mv_size != 10 || (b[0] != SS_KEY_DATA && b[0] != SS_KEY_INDEX) || b[1] >= h->nfields)
        return 0;
    const ss_field_state *f = &h->fields[b[1]];
    uint64_t n = ss_be64(b + 2);
    if (b[0] == SS_KEY_DATA) return n < f->nchunks;
    return f->def.sequence && n <= ss_segment_of(h->count, h->segment_entries);
}

int ss_content_digest(uint64_t *out, MDB_txn *txn, MDB_dbi dbi, const ss_header *h) {
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
        if (!ss_content_key(h, &k)) continue;
        if (v.mv_size < SS_BLOCK_HDR) {
            rc = MDB_CORRUPTED;
            break;
        }
        unsigned char len[2] = {(unsigned char)k.mv_size, (unsigned char)(k.mv_size >> 8)};
        XXH3_64bits_update(st, len, 2);
        XXH3_64bits_update(st, k.mv_data, k.mv_size);
        XXH3_64bits_update(st, v.mv_data, SS_BLOCK_HDR);
    }
    if (rc == MDB_NOTFOUND) {
        rc = 0;
        *out = XXH3_64bits_digest(st);
    }
    XXH3_freeState(st);
    mdb_cursor_close(cur);
    return rc;
}
