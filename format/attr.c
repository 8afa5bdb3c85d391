/* SPDX-License-Identifier: BSD-2-Clause */
/* attr.c - the store's attributes: a sorted table of names built at open,
 * values read zero-copy from the map and checked at every lookup. */
#include "store.h"

#include <errno.h>
#include <stdlib.h>

int ss__attr_load(ss_store *s) {
    MDB_cursor *cur;
    int rc = mdb_cursor_open(s->txn, s->dbi, &cur);
    if (rc) return ss__lmdb_fail(rc, s->path);
    ss_key key;
    ss__key_named(&key, SS_KEY_ATTR, NULL);
    MDB_val k = ss_key_val(&key), v;
    uint64_t cap = 0;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        const unsigned char *kb = k.mv_data;
        if (k.mv_size < 2 || kb[0] != SS_KEY_ATTR) break;
        if (s->nattrs == cap) {
            cap = cap ? 2 * cap : 16;
            ss_attr_slot *grown = realloc(s->attrs, cap * sizeof *grown);
            if (!grown) {
                rc = ENOMEM;
                break;
            }
            s->attrs = grown;
        }
        ss_attr_slot *a = &s->attrs[s->nattrs];
        if (!(a->name = strndup((const char *)kb + 1, k.mv_size - 1))) {
            rc = ENOMEM;
            break;
        }
        a->value = v.mv_data;
        a->value_size = v.mv_size;
        s->nattrs++;
    }
    mdb_cursor_close(cur);
    if (rc == ENOMEM) return ss__fail(SS_ENOMEM, "%s: out of memory", s->path);
    /* The walk ends at the first key after the attributes or at the end of
     * the database. Any other cursor error inside a valid read transaction
     * means a damaged B-tree: stopping there would drop attributes silently. */
    if (rc != 0 && rc != MDB_NOTFOUND)
        return ss__fail(SS_ECORRUPT, "%s: attributes: the walk failed after %llu of them (%s)",
                        s->path, (unsigned long long)s->nattrs, mdb_strerror(rc));
    return 0;
}

void ss__attr_unload(ss_store *s) {
    for (uint64_t i = 0; i < s->nattrs; i++) free(s->attrs[i].name);
    free(s->attrs);
}

static int ss_attr_decode(const ss_store *s, const ss_attr_slot *a, ss_attr *out) {
    ss_key key;
    ss__key_named(&key, SS_KEY_ATTR, a->name);
    const unsigned char *p;
    uint64_t len;
    out->name = a->name; /* named even when damaged: callers say which one */
    if (ss__block_open(a->value, a->value_size, &key, s->h.format_version, "attribute", &p, &len) ||
        len < SS_ATTR_PREFIX) {
        out->type = SS_ATTR_BYTES;
        out->data = NULL;
        out->size = 0;
        return ss__fail(SS_ECORRUPT, "%s: attribute '%s': checksum mismatch", s->path, a->name);
    }
    out->type = ss_le32(p);
    out->data = p + SS_ATTR_PREFIX;
    out->size = len - SS_ATTR_PREFIX;
    return 0;
}

/* The slot of attribute `name`: attribute *k of *from (a dataset's shard or
 * sections store, or s itself). */
static int ss_attr_find(const ss_store **from, uint64_t *k, const ss_store *s, const char *name) {
    if (s->ds) return ss__dataset_attr_find(from, k, s, name);
    uint64_t lo = 0, hi = s->nattrs;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->attrs[mid].name, name);
        if (c == 0) {
            *from = s;
            *k = mid;
            return 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return ss__fail(SS_ENOTFOUND, "%s: no attribute '%s'", s->path, name);
}

int ss_attr_get(ss_attr *out, const ss_store *s, const char *name) {
    if (!s || !name || !out) return ss__fail(SS_EINVAL, "ss_attr_get: NULL argument");
    const ss_store *from;
    uint64_t k;
    int rc = ss_attr_find(&from, &k, s, name);
    return rc ? rc : ss_attr_decode(from, &from->attrs[k], out);
}

int ss__attr_unhashed(ss_attr *out, uint64_t *checksum, const ss_store *s, const char *name) {
    const ss_store *from;
    uint64_t k;
    int rc = ss_attr_find(&from, &k, s, name);
    if (rc) return rc;
    const ss_attr_slot *a = &from->attrs[k];
    const unsigned char *p;
    uint64_t len;
    out->name = a->name;
    if (ss__block_open(a->value, a->value_size, NULL, 0, "attribute", &p, &len) ||
        len < SS_ATTR_PREFIX)
        return ss__fail(SS_ECORRUPT, "%s: attribute '%s': bad block header", from->path, a->name);
    *checksum = ss_le64(a->value);
    out->type = ss_le32(p);
    out->data = p + SS_ATTR_PREFIX;
    out->size = len - SS_ATTR_PREFIX;
    return 0;
}

uint64_t ss_attr_count(const ss_store *s) {
    if (s && s->ds) return ss__dataset_attr_count(s);
    return s ? s->nattrs : 0;
}

int ss_attr_at(ss_attr *out, const ss_store *s, uint64_t k) {
    if (!s || !out) return ss__fail(SS_EINVAL, "ss_attr_at: NULL argument");
    if (s->ds) {
        const ss_store *from;
        uint64_t j;
        int rc = ss__dataset_attr_slot(&from, &j, s, k);
        return rc ? rc : ss_attr_decode(from, &from->attrs[j], out);
    }
    if (k >= s->nattrs)
        return ss__fail(SS_ERANGE, "%s: attribute %llu of %llu", s->path, (unsigned long long)k,
                        (unsigned long long)s->nattrs);
    return ss_attr_decode(s, &s->attrs[k], out);
}
