/* SPDX-License-Identifier: BSD-2-Clause */
/* lmdb_check.c - walk an LMDB snapshot's B-trees with pread before LMDB does.
 *
 * On-disk facts (LMDB 0.9, mdb.c, 64-bit little-endian host, MDB_DEVEL off):
 * a page starts with a 16-byte header: u64 pgno, u16 pad, u16 flags, then
 * u16 lower, u16 upper (branch/leaf) or u32 page count (overflow). Branch and
 * leaf pages hold (lower - 16) / 2 u16 node offsets after the header; a node
 * is u16 lo, u16 hi, u16 flags, u16 ksize, key, data. A branch node's child
 * is lo | hi << 16 | flags << 32; a leaf node's data size is lo | hi << 16,
 * and with F_BIGDATA its data is the u64 number of the first overflow page.
 * Meta pages 0 and 1 hold, after the page header: u32 magic, u32 version,
 * u64 address, u64 mapsize, two 48-byte database records (free DB, main DB:
 * u32 pad (the page size in the free DB's), u16 flags, u16 depth, u64 branch,
 * leaf and overflow page counts, u64 entries, u64 root), u64 last page,
 * u64 txnid. The meta written by transaction t is page t & 1. */
#include "lmdb_check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LC_PAGEHDR 16u
#define LC_NODEHDR 8u
#define LC_P_BRANCH 0x01u
#define LC_P_LEAF 0x02u
#define LC_P_OVERFLOW 0x04u
#define LC_P_META 0x08u
#define LC_F_BIGDATA 0x01u
#define LC_MAGIC 0xBEEFC0DEu
#define LC_DATA_VERSION 1u
#define LC_META_BYTES 152u
#define LC_DB_OFF 40u /* first database record within the meta page */
#define LC_DB_BYTES 48u
#define LC_MAX_KEY 511u
#define LC_MAX_DEPTH 32u /* LMDB's cursor stack (CURSOR_STACK) */
#define LC_INVALID UINT64_MAX
#define LC_RETRIES 16
#define LC_MIN_PSIZE 512u   /* LMDB: MIN_PAGESIZE */
#define LC_MAX_PSIZE 32768u /* LMDB: MAX_PAGESIZE without MDB_DEVEL */

typedef struct lc_db {
    uint16_t flags, depth;
    uint64_t branch, leaf, overflow, entries, root;
} lc_db;

typedef struct lc_meta {
    uint64_t last_pg, txnid;
    uint32_t psize;
    lc_db db[2]; /* free DB, main DB */
} lc_meta;

/* A key seen by the walk: bounds passed down from a branch page. */
typedef struct lc_key {
    const unsigned char *p;
    unsigned size;
} lc_key;

typedef struct lc_walk {
    int fd;
    const char *path;
    unsigned flags;
    uint32_t psize;
    uint64_t npages;      /* last_pg + 1: every page of the snapshot is below */
    unsigned char *seen;  /* one bit per page: reached once, never twice */
    unsigned char *freed; /* one bit per page: listed in the free DB */
    unsigned char *buf;   /* one page per tree level */
    lc_key *keys;         /* the keys of each level's page */
    unsigned maxkeys;     /* node slots in a page */
    int dbi;              /* 0 free DB, 1 main DB */
    const lc_db *db;
    uint64_t branch, leaf, overflow, entries; /* counted by the walk */
} lc_walk;

static uint16_t lc16(const unsigned char *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static uint32_t lc32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint64_t lc64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static int lc_bad(const lc_walk *w, const char *kind, uint64_t pgno, const char *what,
                  long long node) {
    if (node >= 0)
        return ss__fail(SS_ECORRUPT, "%s: corrupt LMDB %s page %llu (%s DB): node %lld %s", w->path,
                        kind, (unsigned long long)pgno, w->dbi ? "main" : "free", node, what);
    return ss__fail(SS_ECORRUPT, "%s: corrupt LMDB %s page %llu (%s DB): %s", w->path, kind,
                    (unsigned long long)pgno, w->dbi ? "main" : "free", what);
}

static int lc_read(const lc_walk *w, void *dst, size_t n, uint64_t off) {
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(w->fd, (char *)dst + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return ss__fail(SS_EIO, "%s: read: %s", w->path, strerror(errno));
        if (r == 0)
            return ss__fail(SS_ECORRUPT,
                            "%s: corrupt LMDB file: a page at byte %llu lies past its end", w->path,
                            (unsigned long long)(off + done));
        done += (size_t)r;
    }
    return 0;
}

/* Mark pages [pgno, pgno + n) as reached; a page reached twice is a cycle or
 * two owners of one page. */
static int lc_mark(lc_walk *w, const char *kind, uint64_t pgno, uint64_t n) {
    if (pgno < 2 || pgno >= w->npages || n > w->npages - pgno)
        return lc_bad(w, kind, pgno, "lies outside the snapshot's pages", -1);
    for (uint64_t p = pgno; p < pgno + n; p++) {
        unsigned char bit = (unsigned char)(1u << (p & 7));
        if (w->seen[p >> 3] & bit) return lc_bad(w, kind, p, "is reached twice", -1);
        if (w->freed[p >> 3] & bit) return lc_bad(w, kind, p, "is listed as a free page", -1);
        w->seen[p >> 3] |= bit;
    }
    return 0;
}

/* LMDB's key order: the main DB compares bytes then length (mdb_cmp_memn);
 * the free DB's keys are native u64 transaction ids (MDB_INTEGERKEY). */
static int lc_cmp(const lc_walk *w, lc_key a, lc_key b) {
    if (w->dbi == 0) {
        uint64_t x = lc64(a.p), y = lc64(b.p);
        return x < y ? -1 : x > y;
    }
    int c = memcmp(a.p, b.p, a.size < b.size ? a.size : b.size);
    return c ? c : (a.size > b.size) - (a.size < b.size);
}

/* An F_BIGDATA value: `dsize` bytes in overflow pages from `ov`. */
static int lc_overflow(lc_walk *w, uint64_t pgno, unsigned i, uint64_t ov, uint64_t dsize) {
    uint64_t need = (LC_PAGEHDR - 1 + dsize) / w->psize + 1, pages = need;
    if (ov < 2 || ov >= w->npages || need > w->npages - ov)
        return lc_bad(w, "leaf", pgno, "points at overflow pages outside the snapshot", i);
    if (w->flags & SS_LMDB_CHECK_OVERFLOW) {
        unsigned char h[LC_PAGEHDR];
        int rc = lc_read(w, h, sizeof h, ov * w->psize);
        if (rc) return rc;
        pages = lc32(h + 12);
        if (lc64(h) != ov || lc16(h + 10) != LC_P_OVERFLOW || pages < need ||
            pages > w->npages - ov)
            return lc_bad(w, "overflow", ov, "header does not match its value", -1);
    }
    w->overflow += pages;
    return lc_mark(w, "overflow", ov, pages);
}

/* A free DB record (u64 count, then that many page numbers; maybe room to
 * spare): its pages must not be reached from the main DB, or a damaged page
 * number could make a value read a freed, stale but checksum-valid block. */
static int lc_free_list(lc_walk *w, uint64_t pgno, unsigned i, const unsigned char *ids,
                        uint64_t dsize) {
    uint64_t n = lc64(ids);
    if (n >= dsize / 8)
        return lc_bad(w, "leaf", pgno, "free-page list is longer than its record", i);
    for (uint64_t k = 1; k <= n; k++) {
        uint64_t f = lc64(ids + 8 * k);
        if (f < 2 || f >= w->npages)
            return lc_bad(w, "leaf", pgno, "lists a free page outside the snapshot", i);
        w->freed[f >> 3] |= (unsigned char)(1u << (f & 7));
    }
    return 0;
}

/* A free DB record held in overflow pages. */
static int lc_free_list_big(lc_walk *w, uint64_t pgno, unsigned i, uint64_t ov, uint64_t dsize) {
    unsigned char *ids = malloc(dsize);
    if (!ids) return ss__fail(SS_ENOMEM, "%s: out of memory", w->path);
    int rc = lc_read(w, ids, dsize, ov * w->psize + LC_PAGEHDR);
    if (rc == 0) rc = lc_free_list(w, pgno, i, ids, dsize);
    free(ids);
    return rc;
}

/* The data of node i of leaf page `p` (node at `off`, key already checked). */
static int lc_leaf_data(lc_walk *w, const unsigned char *p, uint64_t pgno, unsigned i,
                        unsigned off) {
    const unsigned char *n = p + off;
    unsigned nflags = lc16(n + 4);
    uint64_t dsize = lc16(n) | (uint64_t)lc16(n + 2) << 16;
    uint64_t end = off + LC_NODEHDR + lc16(n + 6); /* where the data starts */
    if (nflags & ~LC_F_BIGDATA)
        return lc_bad(w, "leaf", pgno, "has sub-database or duplicate flags", i);
    /* A free DB record: u64 count, then that many page numbers (maybe room to spare). */
    if (w->dbi == 0 && (dsize < 8 || dsize % 8))
        return lc_bad(w, "leaf", pgno, "holds a free-page list of a bad size", i);
    if (!(nflags & LC_F_BIGDATA)) {
        if (end + dsize > w->psize) return lc_bad(w, "leaf", pgno, "data runs past the page", i);
        return w->dbi == 0 ? lc_free_list(w, pgno, i, p + end, dsize) : 0;
    }
    if (end + 8 > w->psize)
        return lc_bad(w, "leaf", pgno, "overflow page number runs past the page", i);
    int rc = lc_overflow(w, pgno, i, lc64(p + end), dsize);
    if (rc == 0 && w->dbi == 0) rc = lc_free_list_big(w, pgno, i, lc64(p + end), dsize);
    return rc;
}

/* Node offsets, node sizes and key order of page `p`; its keys into `keys`.
 * Every key lies in [lo, hi), the range its parent's branch node gives it. */
static int lc_check_nodes(lc_walk *w, const unsigned char *p, uint64_t pgno, int leaf,
                          const lc_key *lo, const lc_key *hi, lc_key *keys, unsigned *nkeys) {
    const char *kind = leaf ? "leaf" : "branch";
    unsigned lower = lc16(p + 12), upper = lc16(p + 14);
    if (lower < LC_PAGEHDR || (lower - LC_PAGEHDR) % 2 || lower > upper || upper > w->psize)
        return lc_bad(w, kind, pgno, "has bad free-space bounds (lower/upper)", -1);
    unsigned n = (lower - LC_PAGEHDR) / 2;
    if (n == 0) return lc_bad(w, kind, pgno, "holds no nodes", -1);
    for (unsigned i = 0; i < n; i++) {
        unsigned off = lc16(p + LC_PAGEHDR + 2 * i);
        if (off < upper || off % 2 || off + LC_NODEHDR > w->psize)
            return lc_bad(w, kind, pgno, "lies outside the page's node area", i);
        const unsigned char *node = p + off;
        unsigned ksize = lc16(node + 6);
        if (off + LC_NODEHDR + ksize > w->psize)
            return lc_bad(w, kind, pgno, "key runs past the page", i);
        keys[i] = (lc_key){node + LC_NODEHDR, ksize};
        if (!leaf && i == 0) continue; /* a branch's first key is implicit */
        if (ksize == 0 || ksize > LC_MAX_KEY || (w->dbi == 0 && ksize != 8))
            return lc_bad(w, kind, pgno, "has a bad key size", i);
        if ((i > (leaf ? 0u : 1u) && lc_cmp(w, keys[i - 1], keys[i]) >= 0) ||
            (lo && lc_cmp(w, *lo, keys[i]) > 0) || (hi && lc_cmp(w, keys[i], *hi) >= 0))
            return lc_bad(w, kind, pgno, "key is out of order", i);
        if (leaf) {
            int rc = lc_leaf_data(w, p, pgno, i, off);
            if (rc) return rc;
        }
    }
    *nkeys = n;
    return 0;
}

/* Page `pgno` at `level` (1 = root) of the tree w->db, then its children. */
static int lc_walk_page(lc_walk *w, uint64_t pgno, unsigned level, const lc_key *lo,
                        const lc_key *hi) {
    int leaf = level == w->db->depth;
    const char *kind = leaf ? "leaf" : "branch";
    int rc = lc_mark(w, kind, pgno, 1);
    if (rc) return rc;
    unsigned char *p = w->buf + (size_t)(level - 1) * w->psize;
    if ((rc = lc_read(w, p, w->psize, pgno * w->psize))) return rc;
    if (lc64(p) != pgno) return lc_bad(w, kind, pgno, "header names another page", -1);
    if (lc16(p + 10) != (leaf ? LC_P_LEAF : LC_P_BRANCH))
        return lc_bad(w, kind, pgno,
                      leaf ? "is not a leaf page, at the tree's bottom"
                           : "is not a branch page, above the tree's bottom",
                      -1);
    lc_key *keys = w->keys + (size_t)(level - 1) * w->maxkeys;
    unsigned n = 0;
    if ((rc = lc_check_nodes(w, p, pgno, leaf, lo, hi, keys, &n))) return rc;
    if (leaf) {
        w->leaf++;
        w->entries += n;
        return 0;
    }
    w->branch++;
    for (unsigned i = 0; i < n; i++) {
        const unsigned char *node = p + lc16(p + LC_PAGEHDR + 2 * i);
        uint64_t child =
            lc16(node) | (uint64_t)lc16(node + 2) << 16 | (uint64_t)lc16(node + 4) << 32;
        if (child < 2 || child >= w->npages)
            return lc_bad(w, "branch", pgno, "points at a page outside the snapshot", i);
        rc = lc_walk_page(w, child, level + 1, i ? &keys[i] : lo, i + 1 < n ? &keys[i + 1] : hi);
        if (rc) return rc;
    }
    return 0;
}

static void lc_parse_db(const unsigned char *b, lc_db *db) {
    db->flags = lc16(b + 4);
    db->depth = lc16(b + 6);
    db->branch = lc64(b + 8);
    db->leaf = lc64(b + 16);
    db->overflow = lc64(b + 24);
    db->entries = lc64(b + 32);
    db->root = lc64(b + 40);
}

/* Meta page `i` as read into `pg`: header, magic, version. */
static int lc_parse_meta(const char *path, const unsigned char *pg, unsigned i, lc_meta *m) {
    if (lc64(pg) != i || !(lc16(pg + 10) & LC_P_META) || lc32(pg + 16) != LC_MAGIC ||
        lc32(pg + 20) != LC_DATA_VERSION)
        return ss__fail(SS_ECORRUPT, "%s: corrupt LMDB meta page %u: bad header, magic or version",
                        path, i);
    m->psize = lc32(pg + LC_DB_OFF);
    lc_parse_db(pg + LC_DB_OFF, &m->db[0]);
    lc_parse_db(pg + LC_DB_OFF + LC_DB_BYTES, &m->db[1]);
    m->last_pg = lc64(pg + 136);
    m->txnid = lc64(pg + 144);
    return 0;
}

/* Transaction t writes meta page t & 1, so the two pages hold consecutive ids
 * (both 0 before the first commit): a damaged id would otherwise make LMDB
 * read an old snapshot whose pages have been reused. LMDB took the larger id,
 * ours; the other is one less, or larger when a writer has committed since:
 * after two commits our page may be rewritten under us (1: take a newer one). */
static int lc_check_metas(const char *path, const lc_meta m[2], unsigned sel) {
    uint64_t a = m[sel].txnid, b = m[!sel].txnid;
    if (a == 0 && b == 0) return 0;
    if ((a & 1) == sel && b > a && b - a > 1) return 1;
    if ((a & 1) != sel || (a != b + 1 && b != a + 1))
        return ss__fail(SS_ECORRUPT,
                        "%s: corrupt LMDB meta pages 0 and 1 disagree (transactions %llu and %llu)",
                        path, (unsigned long long)m[0].txnid, (unsigned long long)m[1].txnid);
    return 0;
}

/* The database record `dbi` of meta page `sel`: flags and tree shape. */
static int lc_check_db(const char *path, const lc_db *db, int dbi, unsigned sel) {
    /* Free DB: MDB_INTEGERKEY plus environment flags; the main DB: none (seqstore
     * opens it with flags 0). Sort or duplicate flags make LMDB misread nodes. */
    unsigned bad = dbi == 0 ? 0x76u : 0xFFFFu;
    if ((db->flags & bad) || (dbi == 0 && !(db->flags & 0x08u)))
        return ss__fail(SS_ECORRUPT, "%s: corrupt LMDB meta page %u: %s DB has flags 0x%x", path,
                        sel, dbi ? "main" : "free", db->flags);
    if ((db->depth == 0) != (db->root == LC_INVALID) || db->depth > LC_MAX_DEPTH)
        return ss__fail(SS_ECORRUPT,
                        "%s: corrupt LMDB meta page %u: %s DB has depth %u and root %llu", path,
                        sel, dbi ? "main" : "free", db->depth, (unsigned long long)db->root);
    return 0;
}

static int lc_walk_db(lc_walk *w, const lc_meta *m, int dbi) {
    w->dbi = dbi;
    w->db = &m->db[dbi];
    w->branch = w->leaf = w->overflow = w->entries = 0;
    if (w->db->depth == 0) return 0;
    if (w->db->root < 2 || w->db->root >= w->npages)
        return lc_bad(w, "root", w->db->root, "lies outside the snapshot's pages", -1);
    int rc = lc_walk_page(w, w->db->root, 1, NULL, NULL);
    if (rc) return rc;
    if (w->branch != w->db->branch || w->leaf != w->db->leaf || w->entries != w->db->entries ||
        ((w->flags & SS_LMDB_CHECK_OVERFLOW) && w->overflow != w->db->overflow))
        return ss__fail(
            SS_ECORRUPT,
            "%s: corrupt LMDB %s DB: the meta page's page and entry counts differ from the "
            "tree's",
            w->path, dbi ? "main" : "free");
    return 0;
}

/* The meta page of `txn`'s snapshot, checked; 1 when a writer has overwritten it. */
static int lc_snapshot_meta(lc_walk *w, MDB_txn *txn, uint64_t file_bytes, lc_meta *out) {
    unsigned char pg[2][LC_META_BYTES];
    lc_meta m[2];
    int rc = lc_read(w, pg[0], LC_META_BYTES, 0);
    if (rc == 0) rc = lc_read(w, pg[1], LC_META_BYTES, w->psize);
    for (unsigned i = 0; rc == 0 && i < 2; i++) rc = lc_parse_meta(w->path, pg[i], i, &m[i]);
    if (rc) return rc;
    uint64_t id = mdb_txn_id(txn);
    unsigned sel = m[0].txnid == id ? 0 : m[1].txnid == id ? 1 : 2;
    if (sel == 2) return 1;
    if ((rc = lc_check_metas(w->path, m, sel))) return rc; /* or 1 */
    if (m[sel].psize != w->psize)
        return ss__fail(SS_ECORRUPT, "%s: corrupt LMDB meta page %u: page size %u, LMDB uses %u",
                        w->path, sel, m[sel].psize, w->psize);
    if (m[sel].last_pg < 1 || m[sel].last_pg >= file_bytes / w->psize)
        return ss__fail(
            SS_ECORRUPT,
            "%s: corrupt LMDB meta page %u: last page %llu lies past the end of the file "
            "(%llu bytes)",
            w->path, sel, (unsigned long long)m[sel].last_pg, (unsigned long long)file_bytes);
    for (int dbi = 0; dbi < 2; dbi++)
        if ((rc = lc_check_db(w->path, &m[sel].db[dbi], dbi, sel))) return rc;
    *out = m[sel];
    return 0;
}

/* 0, an error, or 1 when the snapshot's meta page has been overwritten. */
static int lc_check_snapshot(MDB_env *env, MDB_txn *txn, const char *path, unsigned flags) {
    lc_walk w = {.path = path, .flags = flags};
    MDB_stat st;
    struct stat fst;
    if (mdb_env_get_fd(env, &w.fd) != 0 || mdb_env_stat(env, &st) != 0 || fstat(w.fd, &fst) != 0)
        return ss__fail(SS_EIO, "%s: cannot stat the data file", path);
    w.psize = st.ms_psize;
    lc_meta m;
    int rc = lc_snapshot_meta(&w, txn, (uint64_t)fst.st_size, &m);
    if (rc) return rc;
    w.npages = m.last_pg + 1;
    unsigned depth = m.db[0].depth > m.db[1].depth ? m.db[0].depth : m.db[1].depth;
    w.maxkeys = (w.psize - LC_PAGEHDR) / 2;
    w.seen = calloc(w.npages / 8 + 1, 1);
    w.freed = calloc(w.npages / 8 + 1, 1);
    w.buf = malloc((size_t)(depth ? depth : 1) * w.psize);
    w.keys = malloc((size_t)(depth ? depth : 1) * w.maxkeys * sizeof *w.keys);
    if (!w.seen || !w.freed || !w.buf || !w.keys)
        rc = ss__fail(SS_ENOMEM, "%s: out of memory", path);
    if (rc == 0) rc = lc_walk_db(&w, &m, 0);
    if (rc == 0) rc = lc_walk_db(&w, &m, 1);
    free(w.seen);
    free(w.freed);
    free(w.buf);
    free(w.keys);
    return rc;
}

int ss__lmdb_check(MDB_env *env, MDB_txn **txn, const char *path, unsigned flags) {
    for (int tries = 0; tries < LC_RETRIES; tries++) {
        int rc = lc_check_snapshot(env, *txn, path, flags);
        if (rc != 1) return rc;
        /* Two commits since our snapshot began: take a newer snapshot. */
        mdb_txn_reset(*txn);
        if ((rc = mdb_txn_renew(*txn))) return ss__lmdb_fail(rc, path);
    }
    return ss__fail(SS_EBUSY, "%s: the store changed under every attempt to check it", path);
}

int ss__lmdb_check_held(MDB_env *env, MDB_txn *txn, const char *path, unsigned flags) {
    int rc = lc_check_snapshot(env, txn, path, flags);
    if (rc != 1) return rc;
    MDB_txn *fresh;
    if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &fresh))) return ss__lmdb_fail(rc, path);
    rc = ss__lmdb_check(env, &fresh, path, flags);
    mdb_txn_abort(fresh);
    return rc;
}

/* Meta page 0's page size, which tells where meta page 1 is. */
static int lc_file_psize(const char *path, const unsigned char *pg0, ssize_t got,
                         uint64_t file_bytes, uint32_t *psize) {
    if (got < 20 || lc32(pg0 + 16) != LC_MAGIC)
        return ss__fail(SS_ENOTSTORE, "%s: not a seqstore store (not an LMDB file)", path);
    if (got >= 24 && lc32(pg0 + 20) != LC_DATA_VERSION)
        return ss__fail(SS_ENOTSTORE, "%s: not a seqstore store (LMDB data version %u)", path,
                        lc32(pg0 + 20));
    *psize = got >= (ssize_t)LC_META_BYTES ? lc32(pg0 + LC_DB_OFF) : 0;
    if (got < (ssize_t)LC_META_BYTES || file_bytes < 2ull * *psize)
        return ss__fail(SS_ECORRUPT,
                        "%s: file is truncated (%llu bytes; a store holds at least its two LMDB "
                        "meta pages)",
                        path, (unsigned long long)file_bytes);
    if (*psize < LC_MIN_PSIZE || *psize > LC_MAX_PSIZE || (*psize & (*psize - 1)))
        return ss__fail(SS_ECORRUPT, "%s: corrupt LMDB meta page 0: bad page size %u", path,
                        *psize);
    return 0;
}

int ss__lmdb_check_file(const char *path, uint64_t file_bytes) {
    /* O_NONBLOCK and fstat: a FIFO swapped in since the caller's stat must not hang */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return ss__fail(SS_EIO, "open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ss__fail(SS_ENOTSTORE, "open '%s': not a seqstore store (not a regular file)",
                        path);
    }
    unsigned char pg[2][LC_META_BYTES];
    uint32_t psize = 0;
    ssize_t got = pread(fd, pg[0], LC_META_BYTES, 0);
    int rc = got < 0 ? ss__fail(SS_EIO, "%s: read: %s", path, strerror(errno))
                     : lc_file_psize(path, pg[0], got, file_bytes, &psize);
    if (rc == 0 && pread(fd, pg[1], LC_META_BYTES, psize) != (ssize_t)LC_META_BYTES)
        rc = ss__fail(SS_EIO, "%s: cannot read LMDB meta page 1", path);
    /* The size after the meta pages: an appender grows the file before it commits. */
    if (rc == 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size > file_bytes)
        file_bytes = (uint64_t)st.st_size;
    close(fd);
    lc_meta m[2];
    for (unsigned i = 0; rc == 0 && i < 2; i++) rc = lc_parse_meta(path, pg[i], i, &m[i]);
    if (rc == 0 && m[1].psize != psize)
        rc = ss__fail(SS_ECORRUPT, "%s: corrupt LMDB meta pages disagree on the page size (%u, %u)",
                      path, psize, m[1].psize);
    /* LMDB maps (last page + 1) * page size from the newer meta page (at least,
     * with a smaller map size in it): below 2 pages it reads meta page 1 past its map. */
    const lc_meta *newer = &m[m[1].txnid > m[0].txnid];
    if (rc == 0 && newer->last_pg < 1)
        rc = ss__fail(SS_ECORRUPT, "%s: corrupt LMDB meta page %d: last page 0", path,
                      (int)(newer - m));
    if (rc == 0 && newer->last_pg >= file_bytes / psize)
        rc = ss__fail(SS_ECORRUPT, "%s: file is truncated (%llu bytes, LMDB's last page is %llu)",
                      path, (unsigned long long)file_bytes, (unsigned long long)newer->last_pg);
    return rc;
}
