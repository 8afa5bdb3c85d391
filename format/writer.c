/* SPDX-License-Identifier: BSD-2-Clause */
/* writer.c - streaming writer: examples into chunks, chunks into LMDB
 * transactions of bounded size, the header last. */
#include "layout.h"
#include "sections.h"

#include "env.h"
#include "lmdb_check.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define SS_DEFAULT_COMMIT_BYTES (64ull << 20)
#define SS_DEFAULT_MAP_BYTES (1ull << 30)

/* A finished block waiting for the next commit; the writer owns `payload`. */
typedef struct ss_pending {
    ss_key key;
    unsigned char *payload;
    uint64_t len;
    uint64_t sum; /* its checksum, when `summed` (ss_pending_sum()) */
    int summed;
} ss_pending;

typedef struct ss_pending_attr {
    char name[SS_MAX_ATTR_NAME + 1];
    uint32_t type;
    unsigned char *data;
    uint64_t size;
    int removed; /* ss_writer_remove_attr(): delete the stored attribute */
} ss_pending_attr;

/* The chunk and index segment a field is filling. */
typedef struct ss_wfield {
    unsigned char *chunk;
    uint64_t chunk_cap; /* allocated bytes of `chunk` */
    uint64_t chunk_no;
    uint64_t chunk_used;
    uint64_t last_closed;   /* payload bytes of the last closed chunk */
    uint64_t max_rows;      /* most rows one value of this field may have */
    unsigned char *segment; /* a whole segment's payload (lead, then entries);
                               sequence fields only */
    uint64_t segment_no;
} ss_wfield;

struct ss_writer {
    char *path;
    MDB_env *env;
    MDB_dbi dbi;
    ss_header h;  /* the state after every example appended so far */
    int creating; /* the store has never been finished */
    int broken;
    int finished;
    /* ss__writer_publish(): `path` is a copy that finishing renames over
     * publish_to; publish_lock (a lock held on the file replaced) is closed,
     * and the copy's LMDB lock file removed, when the writer is freed */
    char *publish_to;
    int publish_lock;
    int published;
    unsigned flags;
    uint32_t create_version; /* the format version a created store gets */
    uint64_t capacity;       /* chunk payload capacity */
    uint64_t commit_bytes;
    ss_wfield f[SS_MAX_FIELDS];
    ss_pending *pending;
    size_t npending, pending_cap;
    uint64_t pending_bytes;
    ss_pending_attr *attrs;
    size_t nattrs;
    /* Committed chunk and segment buffers kept for reuse, so that a steady
     * write neither allocates nor page-faults; at most one commit's worth. */
    unsigned char **spare_chunks, **spare_segments;
    size_t nspare_chunks, nspare_segments, spare_cap;
    /* The resume record (key 'R'): written with every intermediate commit,
     * removed by the final one; read back by ss_writer_open. */
    unsigned char *resume_rec;
    size_t resume_len;
    struct ss_committer *bg; /* ss__writer_background(): the commits' thread, or NULL */
};

/* The thread of ss__writer_background(). A due commit is written from
 * `shadow`: a copy of the writer taken at that moment, which owns the pending
 * blocks and points at copies of the partial index segments, so the
 * transaction is the one the writer would have committed then, while the
 * writer appends on. One commit at a time, in order. */
typedef struct ss_committer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int posted; /* the shadow's commit waits for the thread or is being written */
    int stop;   /* the thread is to end */
    int rc;     /* the last commit's result; kept once it failed */
    int wrote;  /* a commit was written since the writer's thread last waited */
    char msg[1024];
    ss_writer shadow;
    unsigned char *seg[SS_MAX_FIELDS]; /* its partial segments */
} ss_committer;

static int ss_bg_wait(ss_writer *w);

/* ---------------------------------------------------------------- helpers */

static int ss_writer_broken(ss_writer *w, int rc) {
    if (rc != SS_EINVAL) w->broken = 1;
    return rc;
}

/* LMDB's codes become seqstore's. A full disk says so, and what it leaves:
 * a store being created stays incomplete (resumable), an append unfinished
 * (the store keeps its finished examples). LMDB reports a write cut short
 * by a full disk as EIO, so EIO with less free space than a commit needs is
 * a full disk too. */
static int ss_writer_lmdb_fail(const ss_writer *w, int rc) {
    const char *left = w->creating ? "store" : "append";
    if (rc == ENOSPC || rc == EDQUOT)
        return ss__fail(SS_EFULL, "%s: disk full (%s): the %s is left incomplete", w->path,
                        strerror(rc), left);
    int fd;
    struct statvfs st;
    if (rc == EIO && w->env && mdb_env_get_fd(w->env, &fd) == 0 && fstatvfs(fd, &st) == 0 &&
        (uint64_t)st.f_bavail * st.f_frsize < w->pending_bytes + (16ull << 20))
        return ss__fail(SS_EFULL,
                        "%s: disk full (%s): a write stopped short with %llu bytes free; the %s "
                        "is left incomplete",
                        w->path, strerror(ENOSPC), (unsigned long long)st.f_bavail * st.f_frsize,
                        left);
    return ss__lmdb_fail(rc, w->path);
}

static int ss_pending_push(ss_writer *w, const ss_key *key, unsigned char *payload, uint64_t len) {
    if (w->npending == w->pending_cap) {
        size_t cap = w->pending_cap ? 2 * w->pending_cap : 16;
        ss_pending *p = realloc(w->pending, cap * sizeof *p);
        if (!p) return ss__fail(SS_ENOMEM, "%s: out of memory", w->path);
        w->pending = p;
        w->pending_cap = cap;
    }
    w->pending[w->npending++] = (ss_pending){*key, payload, len, 0, 0};
    w->pending_bytes += len;
    return 0;
}

static void ss_pending_clear(ss_writer *w) {
    for (size_t i = 0; i < w->npending; i++) free(w->pending[i].payload);
    w->npending = 0;
    w->pending_bytes = 0;
}

/* After a commit: keep the buffers of full chunks and segments of the
 * committed blocks p[0, n) for reuse. */
static void ss_blocks_recycle(ss_writer *w, ss_pending *p, size_t n) {
    if (w->spare_cap < n) {
        size_t cap = n;
        unsigned char **c = realloc(w->spare_chunks, cap * sizeof *c);
        if (c) w->spare_chunks = c;
        unsigned char **g = realloc(w->spare_segments, cap * sizeof *g);
        if (g) w->spare_segments = g;
        if (c && g) w->spare_cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        int is_chunk = p[i].key.bytes[0] == SS_KEY_DATA && p[i].len <= w->capacity;
        int is_segment = p[i].key.bytes[0] == SS_KEY_INDEX;
        if (is_chunk && w->nspare_chunks < w->spare_cap)
            w->spare_chunks[w->nspare_chunks++] = p[i].payload;
        else if (is_segment && w->nspare_segments < w->spare_cap)
            w->spare_segments[w->nspare_segments++] = p[i].payload;
        else
            free(p[i].payload);
    }
}

static void ss_pending_recycle(ss_writer *w) {
    ss_blocks_recycle(w, w->pending, w->npending);
    w->npending = 0;
    w->pending_bytes = 0;
}

static unsigned char *ss_buffer_take(unsigned char **spare, size_t *nspare, size_t bytes) {
    return *nspare ? spare[--*nspare] : malloc(bytes);
}

/* Payload bytes of an index segment holding `entries` entries: the lead of
 * the store's format version (zero bytes, spec §6.2), then the entries. */
static uint64_t ss_segment_bytes(const ss_writer *w, uint64_t entries) {
    return ss_segment_lead(w->h.format_version) + entries * SS_INDEX_ENTRY;
}

/* A buffer for a full segment, its lead zeroed. */
static unsigned char *ss_segment_take(ss_writer *w) {
    uint64_t lead = ss_segment_lead(w->h.format_version);
    unsigned char *b = ss_buffer_take(w->spare_segments, &w->nspare_segments,
                                      ss_segment_bytes(w, w->h.segment_entries));
    if (b) memset(b, 0, lead);
    return b;
}

/* Put one block: reserve the padded value in LMDB, copy, seal with the
 * checksum of the store's format version (a version-1 store stays version 1),
 * or with *sum when the caller has it already. */
static int ss_put_block_sum(const ss_writer *w, MDB_txn *txn, ss_key *key, const void *payload,
                            uint64_t len, const uint64_t *sum) {
    uint64_t vsize = ss__block_value_size(len);
    if (vsize > SS_MAX_VALUE) return MDB_BAD_VALSIZE;
    MDB_val k = ss_key_val(key), v = {vsize, NULL};
    int rc = mdb_put(txn, w->dbi, &k, &v, MDB_RESERVE);
    if (rc) return rc;
    if (len) memcpy((unsigned char *)v.mv_data + SS_BLOCK_HDR, payload, len);
    if (sum)
        ss__block_seal_sum(v.mv_data, vsize, len, *sum);
    else
        ss__block_seal(v.mv_data, vsize, len, key, w->h.format_version);
    return 0;
}

static int ss_put_block(const ss_writer *w, MDB_txn *txn, ss_key *key, const void *payload,
                        uint64_t len) {
    return ss_put_block_sum(w, txn, key, payload, len, NULL);
}

/* The checksums of the pending blocks not summed yet: the writer's thread
 * computes them while a commit in the background is being written, which
 * then only copies the blocks. */
static void ss_pending_sum(ss_writer *w) {
    for (size_t i = w->npending; i-- > 0 && !w->pending[i].summed;) {
        ss_pending *p = &w->pending[i];
        p->sum = ss__block_checksum(p->payload, p->len, &p->key, w->h.format_version);
        p->summed = 1;
    }
}

static uint64_t ss_field_nchunks(const ss_wfield *wf) {
    return wf->chunk_no + (wf->chunk_used > 0);
}

/* Refresh the header's per-field chunk bookkeeping from the fill state. */
static void ss_writer_sync_header(ss_writer *w) {
    for (uint32_t i = 0; i < w->h.nfields; i++) {
        ss_wfield *wf = &w->f[i];
        w->h.fields[i].nchunks = ss_field_nchunks(wf);
        w->h.fields[i].tail_bytes = wf->chunk_used ? wf->chunk_used : wf->last_closed;
    }
}

/* The header of a finished store carries its content digest (§5, §13), over
 * every block as `txn` holds them: the last thing written before it. */
static int ss_put_header(ss_writer *w, MDB_txn *txn, char tag, uint32_t incompat) {
    ss_header h = w->h;
    h.incompat_flags = incompat;
    h.compat_flags = 0;
    if (tag == SS_KEY_HEADER && !incompat) {
        int rc = ss__content_digest(&h.content_digest, txn, w->dbi, &h);
        if (rc) return rc;
        h.compat_flags = SS_COMPAT_CONTENT;
    }
    unsigned char buf[SS_HEADER_FIXED + SS_MAX_FIELDS * SS_FIELD_RECORD + SS_HEADER_CONTENT];
    ss__header_encode(&h, buf);
    ss_key key;
    ss__key_named(&key, tag, NULL);
    return ss_put_block(w, txn, &key, buf, ss__header_size(&h));
}

/* Everything one commit writes, in one transaction. `final` also writes the
 * header as complete, the attributes, and removes the progress record. */
static int ss_txn_body(ss_writer *w, MDB_txn *txn, int final) {
    int rc;
    for (size_t i = 0; i < w->npending; i++) {
        ss_pending *p = &w->pending[i];
        const uint64_t *sum = p->summed ? &p->sum : NULL;
        if ((rc = ss_put_block_sum(w, txn, &p->key, p->payload, p->len, sum))) return rc;
    }
    for (uint32_t i = 0; i < w->h.nfields; i++) {
        ss_wfield *wf = &w->f[i];
        ss_key key;
        if (wf->chunk_used) {
            ss__key_numbered(&key, SS_KEY_DATA, i, wf->chunk_no);
            if ((rc = ss_put_block(w, txn, &key, wf->chunk, wf->chunk_used))) return rc;
        }
        if (w->h.fields[i].def.sequence) {
            uint64_t used = w->h.count + 1 - wf->segment_no * w->h.segment_entries;
            ss__key_numbered(&key, SS_KEY_INDEX, i, wf->segment_no);
            if ((rc = ss_put_block(w, txn, &key, wf->segment, ss_segment_bytes(w, used))))
                return rc;
        }
    }
    ss_writer_sync_header(w);
    ss_key rkey;
    ss__key_named(&rkey, SS_KEY_RESUME, NULL);
    if (!final && w->resume_rec && (rc = ss_put_block(w, txn, &rkey, w->resume_rec, w->resume_len)))
        return rc;
    if (final) {
        MDB_val rk = ss_key_val(&rkey);
        rc = mdb_del(txn, w->dbi, &rk, NULL);
        if (rc && rc != MDB_NOTFOUND) return rc;
    }
    if (!final) {
        /* Creating: the header itself, marked incomplete. Appending: the
         * header keeps the finished state; progress goes to its own record. */
        char tag = w->creating ? SS_KEY_HEADER : SS_KEY_PROGRESS;
        return ss_put_header(w, txn, tag, SS_INCOMPAT_INCOMPLETE);
    }
    for (size_t i = 0; i < w->nattrs; i++) {
        ss_pending_attr *a = &w->attrs[i];
        if (a->removed) {
            ss_key key;
            ss__key_named(&key, SS_KEY_ATTR, a->name);
            MDB_val k = ss_key_val(&key);
            rc = mdb_del(txn, w->dbi, &k, NULL);
            if (rc && rc != MDB_NOTFOUND) return rc;
            continue;
        }
        unsigned char *buf = malloc(SS_ATTR_PREFIX + a->size);
        if (!buf) return ENOMEM;
        ss_put_le32(buf, a->type);
        ss_put_le32(buf + 4, 0);
        if (a->size) memcpy(buf + SS_ATTR_PREFIX, a->data, a->size);
        ss_key key;
        ss__key_named(&key, SS_KEY_ATTR, a->name);
        rc = ss_put_block(w, txn, &key, buf, SS_ATTR_PREFIX + a->size);
        free(buf);
        if (rc) return rc;
    }
    /* After the caller's attributes: the writer owns the lengths (§7.3). */
    if ((rc = ss__lengths_put(txn, w->dbi, &w->h))) return rc;
    if ((rc = ss_put_header(w, txn, SS_KEY_HEADER, 0))) return rc;
    ss_key key;
    ss__key_named(&key, SS_KEY_PROGRESS, NULL);
    MDB_val k = ss_key_val(&key);
    rc = mdb_del(txn, w->dbi, &k, NULL);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Grow the map before a commit so that MDB_MAP_FULL is rare; it is still
 * handled by aborting, growing and replaying the same transaction. */
static int ss_map_reserve(ss_writer *w, uint64_t extra) {
    MDB_envinfo info;
    MDB_stat st;
    mdb_env_info(w->env, &info);
    mdb_env_stat(w->env, &st);
    uint64_t used = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
    uint64_t need = used + 2 * extra + (64ull << 20);
    if (info.me_mapsize >= need) return 0;
    uint64_t size = info.me_mapsize;
    while (size < need) size *= 2;
    int rc = mdb_env_set_mapsize(w->env, size);
    return rc ? ss__lmdb_fail(rc, "grow map") : 0;
}

static uint64_t ss_commit_estimate(const ss_writer *w) {
    uint64_t extra = w->pending_bytes;
    for (uint32_t i = 0; i < w->h.nfields; i++)
        extra += w->f[i].chunk_used + (uint64_t)SS_SEGMENT_PAGES * SS_PAGE;
    for (size_t i = 0; i < w->nattrs; i++) extra += w->attrs[i].size + SS_PAGE;
    return extra;
}

/* After a NOSYNC commit: start writing its pages to disk now, without
 * waiting, so that the flush of ss_writer_finish finds little left to do
 * and the disk works while the caller produces the next commit. A hint
 * only: durability still comes from that flush alone, so a failure here
 * changes nothing and is ignored. */
static void ss_writer_start_writeback(const ss_writer *w) {
#ifdef SYNC_FILE_RANGE_WRITE /* Linux; elsewhere the kernel's own write-back */
    int fd;
    if (mdb_env_get_fd(w->env, &fd) == 0) (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#else
    (void)w;
#endif
}

/* Write one commit's transaction (the pending blocks stay pending). */
static int ss_writer_txn_write(ss_writer *w, int final) {
    for (int attempt = 0;; attempt++) {
        int rc = ss_map_reserve(w, ss_commit_estimate(w) << attempt);
        if (rc) return ss_writer_broken(w, rc);
        MDB_txn *txn;
        rc = mdb_txn_begin(w->env, NULL, 0, &txn);
        if (rc) return ss_writer_broken(w, ss_writer_lmdb_fail(w, rc));
        rc = ss_txn_body(w, txn, final);
        if (rc == 0) {
            rc = mdb_txn_commit(txn);
        } else {
            mdb_txn_abort(txn);
        }
        if (rc == MDB_MAP_FULL && attempt < 8) continue;
        if (rc == MDB_BAD_VALSIZE)
            return ss_writer_broken(
                w, ss__fail(SS_ETOOBIG, "%s: a value exceeds LMDB's limit", w->path));
        if (rc) return ss_writer_broken(w, ss_writer_lmdb_fail(w, rc));
        return 0;
    }
}

static int ss_writer_txn(ss_writer *w, int final) {
    int rc = ss_bg_wait(w);
    if (rc == 0) rc = ss_writer_txn_write(w, final);
    if (rc) return rc;
    if (!final && (w->flags & SS_WRITE_NOSYNC)) ss_writer_start_writeback(w);
    ss_pending_recycle(w);
    return 0;
}

int ss_writer_commit(ss_writer *w) {
    if (!w) return ss__fail(SS_EINVAL, "ss_writer_commit: writer is NULL");
    if (w->broken || w->finished)
        return ss__fail(SS_ESTATE, "%s: writer is %s", w->path,
                        w->finished ? "finished" : "broken");
    return ss_writer_txn(w, 0);
}

/* ------------------------------------------------------ background commits */

static void *ss_committer_main(void *arg) {
    ss_committer *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->posted && !b->stop) pthread_cond_wait(&b->cv, &b->mu);
        if (!b->posted) break;
        pthread_mutex_unlock(&b->mu);
        int rc = ss_writer_txn_write(&b->shadow, 0);
        pthread_mutex_lock(&b->mu);
        if (rc) { /* the message is this thread's: the writer's thread reports it */
            b->rc = rc;
            snprintf(b->msg, sizeof b->msg, "%s", ss_error_message());
        } else {
            b->wrote = 1;
        }
        b->posted = 0;
        pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

/* Wait until no commit is in the background (its result stays in b->rc). */
static void ss_bg_idle(ss_committer *b) {
    pthread_mutex_lock(&b->mu);
    while (b->posted) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

/* Wait for the commit in the background, if any, and take its blocks back
 * for reuse. 0, or its failure (again at every call: the writer is broken). */
static int ss_bg_wait(ss_writer *w) {
    ss_committer *b = w->bg;
    if (!b) return 0;
    ss_bg_idle(b);
    ss_writer *s = &b->shadow;
    if (b->rc) {
        ss_pending_clear(s);
        w->broken = 1;
        return ss__fail(b->rc, "%s", b->msg);
    }
    ss_blocks_recycle(w, s->pending, s->npending);
    s->npending = 0;
    s->pending_bytes = 0;
    /* its write-back hint from this thread, which waits, not the committer */
    if (b->wrote && (w->flags & SS_WRITE_NOSYNC)) ss_writer_start_writeback(w);
    b->wrote = 0;
    return 0;
}

/* The shadow of a commit due now: the writer's state, its pending blocks
 * (the writer keeps the shadow's emptied array), copies of its partial
 * segments: the append after a commit may rewrite the entry the commit
 * writes last (an example that begins a chunk moves its start). The partial
 * chunks are shared, not copied: appends only add bytes after the part the
 * commit writes, and a chunk closed meanwhile is pending, reused only once
 * this commit is done. */
static void ss_bg_snapshot(ss_writer *w, ss_committer *b) {
    ss_writer *s = &b->shadow;
    ss_pending *empty = s->pending;
    size_t empty_cap = s->pending_cap;
    *s = *w;
    s->attrs = NULL; /* only a final commit writes them, and the writer's may change */
    s->nattrs = 0;
    s->bg = NULL;
    w->pending = empty;
    w->pending_cap = empty_cap;
    w->npending = 0;
    w->pending_bytes = 0;
    for (uint32_t i = 0; i < w->h.nfields; i++) {
        ss_wfield *wf = &w->f[i];
        if (!w->h.fields[i].def.sequence) continue;
        uint64_t used = w->h.count + 1 - wf->segment_no * w->h.segment_entries;
        memcpy(b->seg[i], wf->segment, ss_segment_bytes(w, used));
        s->f[i].segment = b->seg[i];
    }
}

/* ss_writer_commit() in the background. */
static int ss_bg_commit(ss_writer *w) {
    ss_committer *b = w->bg;
    ss_pending_sum(w); /* while the commit before may still be written */
    int rc = ss_bg_wait(w);
    if (rc) return rc;
    ss_bg_snapshot(w, b);
    pthread_mutex_lock(&b->mu);
    b->posted = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    return 0;
}

/* Wait for the last commit and end the thread. */
static void ss_bg_end(ss_writer *w) {
    ss_committer *b = w->bg;
    if (!b) return;
    ss_bg_idle(b); /* a failure was reported, or is of no interest now */
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    ss_pending_clear(&b->shadow);
    free(b->shadow.pending);
    for (uint32_t i = 0; i < SS_MAX_FIELDS; i++) free(b->seg[i]);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
    w->bg = NULL;
}

static int ss_bg_buffers(ss_writer *w, ss_committer *b) {
    for (uint32_t i = 0; i < w->h.nfields; i++)
        if (w->h.fields[i].def.sequence &&
            !(b->seg[i] = malloc(ss_segment_bytes(w, w->h.segment_entries))))
            return -1;
    return 0;
}

int ss__writer_background(ss_writer *w) {
    if (!w) return ss__fail(SS_EINVAL, "ss__writer_background: writer is NULL");
    if (w->bg) return 0;
    ss_committer *b = calloc(1, sizeof *b);
    if (!b) return ss__fail(SS_ENOMEM, "%s: out of memory", w->path);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    int rc = ss_bg_buffers(w, b) ? SS_ENOMEM : 0;
    if (!rc && pthread_create(&b->thread, NULL, ss_committer_main, b)) rc = SS_EIO;
    if (rc) {
        for (uint32_t i = 0; i < SS_MAX_FIELDS; i++) free(b->seg[i]);
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        free(b);
        return ss__fail(rc, "%s: cannot start the commit thread", w->path);
    }
    w->bg = b;
    return 0;
}

/* ------------------------------------------------------------- appending */

static int ss_chunk_close(ss_writer *w, uint32_t field) {
    ss_wfield *wf = &w->f[field];
    ss_key key;
    ss__key_numbered(&key, SS_KEY_DATA, field, wf->chunk_no);
    unsigned char *fresh = wf->chunk_cap == w->capacity
                               ? ss_buffer_take(w->spare_chunks, &w->nspare_chunks, wf->chunk_cap)
                               : malloc(wf->chunk_cap);
    if (!fresh) return ss__fail(SS_ENOMEM, "%s: out of memory", w->path);
    int rc = ss_pending_push(w, &key, wf->chunk, wf->chunk_used);
    if (rc) {
        free(fresh);
        return rc;
    }
    wf->chunk = fresh;
    wf->last_closed = wf->chunk_used;
    wf->chunk_used = 0;
    wf->chunk_no++;
    return 0;
}

/* Store an oversized example (more than a chunk holds) alone in its own chunk. */
static int ss_chunk_alone(ss_writer *w, uint32_t field, const void *data, uint64_t bytes) {
    ss_wfield *wf = &w->f[field];
    unsigned char *copy = malloc(bytes);
    if (!copy)
        return ss__fail(SS_ENOMEM, "%s: out of memory for %llu bytes", w->path,
                        (unsigned long long)bytes);
    memcpy(copy, data, bytes);
    ss_key key;
    ss__key_numbered(&key, SS_KEY_DATA, field, wf->chunk_no);
    int rc = ss_pending_push(w, &key, copy, bytes);
    if (rc) {
        free(copy);
        return rc;
    }
    wf->last_closed = bytes;
    wf->chunk_no++;
    return 0;
}

static int ss_index_set(ss_writer *w, uint32_t field, uint64_t entry, uint64_t loc,
                        uint64_t start) {
    ss_wfield *wf = &w->f[field];
    uint64_t per = w->h.segment_entries, seg = ss_segment_of(entry, per);
    if (seg != wf->segment_no) { /* the current segment is full */
        ss_key key;
        ss__key_numbered(&key, SS_KEY_INDEX, field, wf->segment_no);
        unsigned char *fresh = ss_segment_take(w);
        if (!fresh) return ss__fail(SS_ENOMEM, "%s: out of memory", w->path);
        int rc = ss_pending_push(w, &key, wf->segment, ss_segment_bytes(w, per));
        if (rc) {
            free(fresh);
            return rc;
        }
        wf->segment = fresh;
        wf->segment_no = seg;
    }
    unsigned char *e = wf->segment + ss_segment_bytes(w, entry - seg * per);
    ss_put_le64(e, loc);
    ss_put_le64(e + 8, start);
    return 0;
}

static int ss_append_field(ss_writer *w, uint32_t field, const ss_value *v) {
    ss_wfield *wf = &w->f[field];
    ss_field_state *fs = &w->h.fields[field];
    uint64_t bytes = v->length * fs->row_bytes;
    int rc, moved = 0; /* the example does not start where the last one ended */
    if (bytes > wf->chunk_cap - wf->chunk_used && wf->chunk_used > 0) {
        if ((rc = ss_chunk_close(w, field))) return rc;
        moved = 1;
    }
    uint64_t loc;
    if (bytes > wf->chunk_cap) {
        loc = SS_LOC(wf->chunk_no, 0);
        if ((rc = ss_chunk_alone(w, field, v->data, bytes))) return rc;
        moved = 1;
    } else {
        loc = SS_LOC(wf->chunk_no, wf->chunk_used);
        if (bytes) memcpy(wf->chunk + wf->chunk_used, v->data, bytes);
        wf->chunk_used += bytes;
    }
    if (fs->def.sequence) {
        /* Entry i already holds this start (the end of example i - 1, or of
         * nothing), unless a chunk was closed or begun for this example. */
        uint64_t i = w->h.count;
        if (moved && (rc = ss_index_set(w, field, i, loc, fs->total_rows))) return rc;
        uint64_t end = SS_LOC(wf->chunk_no, wf->chunk_used);
        if ((rc = ss_index_set(w, field, i + 1, end, fs->total_rows + v->length))) return rc;
    }
    fs->total_rows += v->length;
    return 0;
}

static int ss_check_values(const ss_writer *w, const ss_value *values) {
    for (uint32_t i = 0; i < w->h.nfields; i++) {
        const ss_field_state *fs = &w->h.fields[i];
        const ss_value *v = &values[i];
        if (!fs->def.sequence && v->length != 1)
            return ss__fail(
                SS_EINVAL, "%s: example %llu: fixed field '%s' needs length 1, got %llu", w->path,
                (unsigned long long)w->h.count, fs->name, (unsigned long long)v->length);
        if (v->length && !v->data)
            return ss__fail(SS_EINVAL, "%s: example %llu: field '%s' has length %llu but no data",
                            w->path, (unsigned long long)w->h.count, fs->name,
                            (unsigned long long)v->length);
        uint64_t limit = w->f[i].max_rows;
        if (v->length > limit)
            return ss__fail(
                SS_ETOOBIG,
                "%s: example %llu: field '%s' has %llu rows; one value holds at most %llu", w->path,
                (unsigned long long)w->h.count, fs->name, (unsigned long long)v->length,
                (unsigned long long)limit);
    }
    return 0;
}

int ss_writer_append(ss_writer *w, const ss_value *values) {
    if (!w || !values) return ss__fail(SS_EINVAL, "ss_writer_append: NULL argument");
    if (w->broken || w->finished)
        return ss__fail(SS_ESTATE, "%s: writer is %s", w->path,
                        w->finished ? "finished" : "broken");
    int rc = ss_check_values(w, values);
    if (rc) return rc;
    for (uint32_t i = 0; i < w->h.nfields; i++)
        if ((rc = ss_append_field(w, i, &values[i]))) return ss_writer_broken(w, rc);
    w->h.count++;
    if (w->pending_bytes < w->commit_bytes) return 0;
    return w->bg ? ss_bg_commit(w) : ss_writer_commit(w);
}

/* ------------------------------------------------------ many at once */

/* How many of examples k0.. (at most n) append where the fill state is:
 * in every field's current chunk, their index entries in the current
 * segments, so that appending them closes nothing and makes nothing
 * pending (no commit can come due among them). */
static uint64_t ss_run_fits(const ss_writer *w, uint64_t n, const uint64_t *const *lengths,
                            uint64_t k0) {
    uint64_t m = n;
    for (uint32_t i = 0; i < w->h.nfields && m; i++) {
        const ss_wfield *wf = &w->f[i];
        const ss_field_state *fs = &w->h.fields[i];
        uint64_t rows_room = (wf->chunk_cap - wf->chunk_used) / fs->row_bytes;
        if (rows_room > wf->max_rows) rows_room = wf->max_rows; /* else ss_check_values() */
        if (!fs->def.sequence) {
            if (m > rows_room) m = rows_room;
            continue;
        }
        uint64_t last = (wf->segment_no + 1) * w->h.segment_entries - 1; /* its last entry */
        uint64_t entries = last > w->h.count ? last - w->h.count : 0;
        if (m > entries) m = entries;
        const uint64_t *len = lengths[i] + k0;
        uint64_t fits = 0, rows = 0;
        while (fits < m && len[fits] <= rows_room - rows) rows += len[fits++];
        m = fits;
    }
    return m;
}

/* Append examples k0..k0+m-1, which ss_run_fits(): each field's values in
 * one copy, the index entries written in a row. */
static void ss_append_run(ss_writer *w, uint64_t m, const unsigned char **at,
                          const uint64_t *const *lengths, uint64_t k0) {
    for (uint32_t i = 0; i < w->h.nfields; i++) {
        ss_wfield *wf = &w->f[i];
        ss_field_state *fs = &w->h.fields[i];
        uint64_t rb = fs->row_bytes, used = wf->chunk_used, rows = fs->total_rows;
        if (fs->def.sequence) {
            uint64_t first = w->h.count + 1 - wf->segment_no * w->h.segment_entries;
            unsigned char *e = wf->segment + ss_segment_bytes(w, first);
            const uint64_t *len = lengths[i] + k0;
            for (uint64_t j = 0; j < m; j++, e += SS_INDEX_ENTRY) {
                used += len[j] * rb;
                rows += len[j];
                ss_put_le64(e, SS_LOC(wf->chunk_no, used));
                ss_put_le64(e + 8, rows);
            }
        } else {
            used += m * rb;
            rows += m;
        }
        memcpy(wf->chunk + wf->chunk_used, at[i], used - wf->chunk_used);
        at[i] += used - wf->chunk_used;
        wf->chunk_used = used;
        fs->total_rows = rows;
    }
    w->h.count += m;
}

int ss__writer_append_many(ss_writer *w, uint64_t n, const void *const *data,
                           const uint64_t *const *lengths) {
    if (!w || !data || !lengths)
        return ss__fail(SS_EINVAL, "ss__writer_append_many: NULL argument");
    if (w->broken || w->finished)
        return ss__fail(SS_ESTATE, "%s: writer is %s", w->path,
                        w->finished ? "finished" : "broken");
    const unsigned char *at[SS_MAX_FIELDS];
    for (uint32_t i = 0; i < w->h.nfields; i++) {
        if (!data[i] || (w->h.fields[i].def.sequence && !lengths[i]))
            return ss__fail(SS_EINVAL, "ss__writer_append_many: field '%s' has no %s",
                            w->h.fields[i].name, data[i] ? "lengths" : "data");
        at[i] = data[i];
    }
    for (uint64_t k = 0; k < n;) {
        uint64_t m = ss_run_fits(w, n - k, lengths, k);
        if (m) {
            ss_append_run(w, m, at, lengths, k);
            k += m;
            continue;
        }
        /* one that closes a chunk or a segment: appended as ever (checks, commit) */
        ss_value v[SS_MAX_FIELDS];
        for (uint32_t i = 0; i < w->h.nfields; i++) {
            uint64_t len = w->h.fields[i].def.sequence ? lengths[i][k] : 1;
            v[i] = (ss_value){at[i], len};
            at[i] += len * w->h.fields[i].row_bytes;
        }
        int rc = ss_writer_append(w, v);
        if (rc) return rc;
        k++;
    }
    return 0;
}

uint64_t ss_writer_count(const ss_writer *w) {
    return w ? w->h.count : 0;
}

int ss_writer_set_attr(ss_writer *w, const char *name, uint32_t type, const void *data,
                       size_t size) {
    if (!w || !name) return ss__fail(SS_EINVAL, "ss_writer_set_attr: NULL argument");
    if (w->broken || w->finished)
        return ss__fail(SS_ESTATE, "%s: attribute '%s': writer is %s", w->path, name,
                        w->finished ? "finished" : "broken");
    size_t n = strlen(name);
    if (n == 0 || n > SS_MAX_ATTR_NAME)
        return ss__fail(SS_EINVAL, "attribute name '%s' must have 1 to %d bytes", name,
                        SS_MAX_ATTR_NAME);
    if (type != SS_ATTR_BYTES && type != SS_ATTR_TEXT && ss_dtype_size((ss_dtype)type) == 0)
        return ss__fail(SS_EINVAL, "attribute '%s': unknown type %u", name, type);
    if (size && !data) return ss__fail(SS_EINVAL, "attribute '%s': NULL data", name);
    if (size > SS_MAX_VALUE - 2 * SS_PAGE)
        return ss__fail(SS_ETOOBIG, "attribute '%s': %zu bytes is too large", name, size);
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) return ss__fail(SS_ENOMEM, "attribute '%s': out of memory", name);
    if (size) memcpy(copy, data, size);
    ss_pending_attr *a = NULL;
    for (size_t i = 0; i < w->nattrs; i++)
        if (strcmp(w->attrs[i].name, name) == 0) a = &w->attrs[i];
    if (!a) {
        ss_pending_attr *grown = realloc(w->attrs, (w->nattrs + 1) * sizeof *grown);
        if (!grown) {
            free(copy);
            return ss__fail(SS_ENOMEM, "attribute '%s': out of memory", name);
        }
        w->attrs = grown;
        a = &w->attrs[w->nattrs++];
        memcpy(a->name, name, n + 1);
    } else {
        free(a->data);
    }
    a->type = type;
    a->data = copy;
    a->size = size;
    a->removed = 0;
    return 0;
}

int ss_writer_remove_attr(ss_writer *w, const char *name) {
    if (!w || !name) return ss__fail(SS_EINVAL, "ss_writer_remove_attr: NULL argument");
    /* a pending empty value marked removed: the last call for a name wins */
    int rc = ss_writer_set_attr(w, name, SS_ATTR_BYTES, NULL, 0);
    if (rc) return rc;
    for (size_t i = 0; i < w->nattrs; i++)
        if (strcmp(w->attrs[i].name, name) == 0) w->attrs[i].removed = 1;
    return 0;
}

/* Rename the finished copy over the file it replaces, durably: readers of
 * the old file keep it (and their snapshot) until they close it. */
static int ss_writer_publish_now(ss_writer *w) {
    if (rename(w->path, w->publish_to) != 0)
        return ss__fail(SS_EIO, "rename '%s' to '%s': %s", w->path, w->publish_to,
                        strerror(errno));
    w->published = 1;
    char *slash = strrchr(w->publish_to, '/');
    char *dir = slash ? strndup(w->publish_to, (size_t)(slash - w->publish_to + 1)) : strdup(".");
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) fsync(fd), close(fd);
    free(dir);
    return 0;
}

void ss__writer_publish(ss_writer *w, char *final, int lock_fd) {
    w->publish_to = final;
    w->publish_lock = lock_fd;
}

int ss_writer_finish(ss_writer *w) {
    if (!w) return ss__fail(SS_EINVAL, "ss_writer_finish: writer is NULL");
    if (w->broken || w->finished)
        return ss__fail(SS_ESTATE, "%s: writer is %s", w->path,
                        w->finished ? "finished" : "broken");
    /* LMDB flushes a commit's data pages before it writes the meta page only
     * when the environment syncs: without this, the meta page of a complete
     * header could reach the disk before the pages of the NOSYNC commits it
     * points to (test_format_sync_order). With NOMETASYNC the commit is then
     * one flush of everything, the meta write, and the flush below. */
    int rc = ss_bg_wait(w); /* first: a commit in the background stays NOSYNC */
    if (rc) return rc;
    rc = mdb_env_set_flags(w->env, MDB_NOSYNC, 0);
    if (rc) return ss_writer_broken(w, ss_writer_lmdb_fail(w, rc));
    rc = ss_writer_txn(w, 1);
    if (rc) return rc;
    rc = mdb_env_sync(w->env, 1);
    if (rc) return ss_writer_broken(w, ss_writer_lmdb_fail(w, rc));
    w->finished = 1;
    return w->publish_to ? ss_writer_publish_now(w) : 0;
}

void ss_writer_free(ss_writer *w) {
    if (!w) return;
    ss_bg_end(w);
    ss_pending_clear(w);
    free(w->pending);
    for (size_t i = 0; i < w->nspare_chunks; i++) free(w->spare_chunks[i]);
    for (size_t i = 0; i < w->nspare_segments; i++) free(w->spare_segments[i]);
    free(w->spare_chunks);
    free(w->spare_segments);
    for (size_t i = 0; i < w->nattrs; i++) free(w->attrs[i].data);
    free(w->attrs);
    free(w->resume_rec);
    for (uint32_t i = 0; i < SS_MAX_FIELDS; i++) {
        free(w->f[i].chunk);
        free(w->f[i].segment);
    }
    ss__env_release(w->env);
    if (w->publish_to) { /* the copy's: no other process knows its name */
        if (!w->published) unlink(w->path);
        char *lock = NULL;
        if (asprintf(&lock, "%s-lock", w->path) >= 0) unlink(lock);
        free(lock);
        if (w->publish_lock >= 0) close(w->publish_lock);
        free(w->publish_to);
    }
    free(w->path);
    free(w);
}

/* ------------------------------------------------------------ open/create */

static int ss_writer_alloc(ss_writer **out, const char *path, const ss_writer_options *o) {
    ss_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return ss__fail(SS_ENOMEM, "%s: out of memory", path);
    }
    ss_writer_options defaults = SS_WRITER_OPTIONS_INIT;
    if (!o) o = &defaults;
    w->flags = o->flags;
    w->commit_bytes = o->commit_bytes ? o->commit_bytes : SS_DEFAULT_COMMIT_BYTES;
    w->h.chunk_pages = o->chunk_pages ? o->chunk_pages : SS_DEFAULT_CHUNK_PAGES;
    w->create_version = SS_FORMAT_VERSION;
    *out = w;
    if (o->version < 1 || o->version > SS_WRITER_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "%s: writer options version %u (expected 1..%d)", path,
                        o->version, SS_WRITER_OPTIONS_VERSION);
    /* version 1 of the options ends before format_version */
    if (o->version >= 2 && o->format_version) {
        if (o->format_version < 2 || o->format_version > SS_FORMAT_VERSION)
            return ss__fail(SS_EINVAL, "%s: format_version %u (this library writes 2..%d)", path,
                            o->format_version, SS_FORMAT_VERSION);
        w->create_version = o->format_version;
    }
    if (w->h.chunk_pages > 1048575u)
        return ss__fail(SS_EINVAL, "%s: chunk_pages %u is too large", path, w->h.chunk_pages);
    return 0;
}

typedef struct ss_writer_env_ctx {
    ss_writer *w;
    uint64_t map_bytes;
} ss_writer_env_ctx;

static int ss_open_writer_env(MDB_env **env, void *vctx) {
    ss_writer_env_ctx *ctx = vctx;
    ss_writer *w = ctx->w;
    int rc = mdb_env_create(env);
    if (rc) return ss__lmdb_fail(rc, "LMDB");
    struct stat st;
    uint64_t size = ctx->map_bytes ? ctx->map_bytes : SS_DEFAULT_MAP_BYTES;
    if (stat(w->path, &st) == 0 && (uint64_t)st.st_size * 2 > size) size = (uint64_t)st.st_size * 2;
    mdb_env_set_mapsize(*env, size);
    mdb_env_set_maxreaders(*env, SS_ENV_MAXREADERS);
    /* NOMETASYNC: one flush per commit instead of two; integrity is kept and a
     * system crash can only undo the last commit (finish syncs everything). */
    unsigned flags = MDB_NOSUBDIR | MDB_NOTLS | MDB_NORDAHEAD | MDB_NOMETASYNC;
    if (w->flags & SS_WRITE_NOSYNC) flags |= MDB_NOSYNC;
    int nolock;
    if ((rc = ss__env_lock_prepare(w->path, 1, &nolock))) return rc;
    rc = mdb_env_open(*env, w->path, flags, 0644);
    if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH)
        return ss__fail(SS_ENOTSTORE, "%s: not a seqstore store", w->path);
    return rc ? ss_writer_lmdb_fail(w, rc) : 0;
}

static int ss_writer_env(ss_writer *w, uint64_t map_bytes) {
    ss_writer_env_ctx ctx = {w, map_bytes};
    int rc = ss__env_acquire(&w->env, w->path, 1, ss_open_writer_env, &ctx);
    if (rc) return rc;
    if ((rc = ss__env_check_size(w->env, w->path))) return rc;
    MDB_txn *txn;
    if ((rc = mdb_txn_begin(w->env, NULL, 0, &txn))) return ss__lmdb_fail(rc, w->path);
    rc = mdb_dbi_open(txn, NULL, 0, &w->dbi);
    if (rc == 0)
        rc = mdb_txn_commit(txn);
    else
        mdb_txn_abort(txn);
    return rc ? ss_writer_lmdb_fail(w, rc) : 0;
}

static int ss_writer_buffers(ss_writer *w) {
    w->capacity = ss_chunk_capacity(w->h.chunk_pages);
    for (uint32_t i = 0; i < w->h.nfields; i++) {
        ss_wfield *wf = &w->f[i];
        uint64_t rb = w->h.fields[i].row_bytes;
        wf->chunk_cap = w->h.fields[i].def.sequence || rb <= w->capacity ? w->capacity : rb;
        wf->max_rows = (SS_MAX_VALUE - 2 * SS_PAGE) / rb;
        wf->chunk = malloc(wf->chunk_cap);
        if (!wf->chunk) return ss__fail(SS_ENOMEM, "%s: out of memory", w->path);
        if (w->h.fields[i].def.sequence) {
            wf->segment = calloc(1, ss_segment_bytes(w, w->h.segment_entries));
            if (!wf->segment) return ss__fail(SS_ENOMEM, "%s: out of memory", w->path);
        }
    }
    return 0;
}

static void ss_unlink_store(const char *path) {
    char lock[4096];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(path);
    unlink(lock);
}

int ss_writer_create(ss_writer **out, const char *path, const ss_schema *schema,
                     const ss_writer_options *options) {
    if (!out) return ss__fail(SS_EINVAL, "ss_writer_create: out is NULL");
    *out = NULL;
    if (!path || !*path) return ss__fail(SS_EINVAL, "ss_writer_create: empty path");
    ss_writer *w;
    int rc = ss_writer_alloc(&w, path, options);
    if (rc == 0) rc = ss__header_set_schema(&w->h, schema);
    if (rc) {
        ss__context(rc, "create '%s'", path);
        ss_writer_free(w);
        return rc;
    }
    struct stat st;
    if (stat(path, &st) == 0) {
        if (!(w->flags & SS_WRITE_FORCE)) {
            ss_writer_free(w);
            return ss__fail(SS_EEXIST, "create '%s': file exists (use --force to replace it)",
                            path);
        }
        ss_unlink_store(path);
    }
    w->h.format_version = w->create_version;
    w->h.segment_entries = ss_segment_entries(w->create_version);
    w->creating = 1;
    rc = ss_writer_env(w, options ? options->map_bytes : 0);
    if (rc == 0) rc = ss_writer_buffers(w);
    if (rc == 0) rc = ss_writer_txn(w, 0); /* the header, marked incomplete */
    if (rc) {
        ss_writer_free(w);
        return ss__context(rc, "create '%s'", path);
    }
    *out = w;
    return 0;
}

/* Decode and check the header-layout block at key `tag`; SS_ENOTFOUND if absent. */
static int ss_read_header_block(ss_writer *w, MDB_txn *txn, char tag, ss_header *h) {
    ss_key key;
    ss__key_named(&key, tag, NULL);
    MDB_val k = ss_key_val(&key), v;
    int rc = mdb_get(txn, w->dbi, &k, &v);
    if (rc == MDB_NOTFOUND)
        return tag == SS_KEY_HEADER ? ss__fail(SS_ENOTSTORE, "not a seqstore store (no header)")
                                    : SS_ENOTFOUND;
    if (rc) return ss__lmdb_fail(rc, "read header");
    const char *what = tag == SS_KEY_HEADER ? "header" : "progress record";
    if ((rc = ss__header_read(h, &v, tag, what))) return rc;
    /* before the counts size the buffers or index the blocks to reload */
    return ss__header_check_bounds(h, ss__env_used_bytes(w->env), tag, what);
}

/* The committed state: the header, or with resume the progress record of an
 * interrupted append when there is one. */
static int ss_writer_read_state(ss_writer *w, MDB_txn *txn, int resume) {
    int rc = ss_read_header_block(w, txn, SS_KEY_HEADER, &w->h);
    if (rc) return rc;
    w->creating = (w->h.incompat_flags & SS_INCOMPAT_INCOMPLETE) != 0;
    if (w->creating && !resume)
        return ss__fail(SS_EINCOMPLETE,
                        "store is incomplete (its writer did not finish, %llu examples committed): "
                        "resume the write or create it again",
                        (unsigned long long)w->h.count);
    if (resume && !w->creating) {
        ss_header progress;
        rc = ss_read_header_block(w, txn, SS_KEY_PROGRESS, &progress);
        if (rc == 0 && progress.format_version != w->h.format_version)
            return ss__fail(SS_ECORRUPT, "progress record: format version %u, the header's is %u",
                            progress.format_version, w->h.format_version);
        if (rc == 0)
            w->h = progress;
        else if (rc != SS_ENOTFOUND)
            return rc;
        for (uint32_t i = 0; i < w->h.nfields; i++) w->h.fields[i].def.name = w->h.fields[i].name;
    }
    return 0;
}

static int ss_schema_equal(const ss_header *h, const ss_schema *schema) {
    ss_header want;
    if (ss__header_set_schema(&want, schema)) return 0;
    if (want.nfields != h->nfields) return 0;
    for (uint32_t i = 0; i < h->nfields; i++) {
        const ss_field *a = &h->fields[i].def, *b = &want.fields[i].def;
        if (strcmp(a->name, b->name) || a->dtype != b->dtype || a->sequence != b->sequence ||
            a->ndim != b->ndim || memcmp(a->dims, b->dims, sizeof a->dims))
            return 0;
    }
    return 1;
}

static int ss_load_block(ss_writer *w, MDB_txn *txn, char tag, uint32_t field, uint64_t number,
                         unsigned char *dst, uint64_t want) {
    ss_key key;
    ss__key_numbered(&key, tag, field, number);
    MDB_val k = ss_key_val(&key), v;
    int rc = mdb_get(txn, w->dbi, &k, &v);
    if (rc) return ss__lmdb_fail(rc, "reload tail block");
    const unsigned char *p;
    uint64_t len;
    rc = ss__block_open(v.mv_data, v.mv_size, &key, w->h.format_version, "tail block", &p, &len);
    if (rc) return rc;
    if (len < want)
        return ss__fail(SS_ECORRUPT, "tail block holds %llu bytes, header says %llu",
                        (unsigned long long)len, (unsigned long long)want);
    memcpy(dst, p, want);
    return 0;
}

/* Reload the partly filled chunk and index segment of every field so that
 * appending continues exactly where the committed state ends. */
static int ss_writer_reload(ss_writer *w, MDB_txn *txn) {
    for (uint32_t i = 0; i < w->h.nfields; i++) {
        ss_wfield *wf = &w->f[i];
        ss_field_state *fs = &w->h.fields[i];
        uint64_t n = fs->nchunks, tail = fs->tail_bytes;
        int rc;
        /* A sequence field continues in its last chunk unless that chunk
         * is a value's own (larger than a chunk): also when it is exactly
         * full, as if the writer had never stopped, so that the next value
         * closes it and moves its own index entry (spec §6.1). */
        if (fs->def.sequence ? (n > 0 && tail <= wf->chunk_cap)
                             : (w->h.count % ss_fixed_per_chunk(&w->h, fs) != 0)) {
            if (n == 0 || tail > wf->chunk_cap) /* the reload copies tail bytes into chunk */
                return ss__fail(SS_ECORRUPT,
                                "field '%s': %llu chunks with %llu bytes in the last do not "
                                "match a chunk of %llu bytes",
                                fs->name, (unsigned long long)n, (unsigned long long)tail,
                                (unsigned long long)wf->chunk_cap);
            wf->chunk_no = n - 1;
            wf->chunk_used = tail;
            if ((rc = ss_load_block(w, txn, SS_KEY_DATA, i, n - 1, wf->chunk, tail))) return rc;
        } else {
            wf->chunk_no = n;
        }
        wf->last_closed = tail;
        if (fs->def.sequence) {
            wf->segment_no = ss_segment_of(w->h.count, w->h.segment_entries);
            uint64_t used = w->h.count + 1 - wf->segment_no * w->h.segment_entries;
            if ((rc = ss_load_block(w, txn, SS_KEY_INDEX, i, wf->segment_no, wf->segment,
                                    ss_segment_bytes(w, used))))
                return rc;
        }
    }
    return 0;
}

/* The resume record of an unfinished write, if any. */
static int ss_writer_read_resume(ss_writer *w, MDB_txn *txn) {
    ss_key key;
    ss__key_named(&key, SS_KEY_RESUME, NULL);
    MDB_val k = ss_key_val(&key), v;
    int rc = mdb_get(txn, w->dbi, &k, &v);
    if (rc == MDB_NOTFOUND) return 0;
    if (rc) return ss__lmdb_fail(rc, "read resume record");
    const unsigned char *p;
    uint64_t len;
    if ((rc = ss__block_open(v.mv_data, v.mv_size, &key, w->h.format_version, "resume record", &p,
                             &len)))
        return rc;
    return ss__writer_set_resume_record(w, p, (size_t)len);
}

int ss__writer_set_resume_record(ss_writer *w, const void *data, size_t size) {
    if (!w || (!data && size)) return ss__fail(SS_EINVAL, "ss__writer_set_resume_record: NULL");
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) return ss__fail(SS_ENOMEM, "out of memory");
    if (size) memcpy(copy, data, size);
    if (w->bg) ss_bg_idle(w->bg); /* a commit in the background may be writing the old one */
    free(w->resume_rec);
    w->resume_rec = copy;
    w->resume_len = size;
    return 0;
}

const void *ss__writer_resume_record(const ss_writer *w, size_t *size) {
    *size = w && w->resume_rec ? w->resume_len : 0;
    return w ? w->resume_rec : NULL;
}

int ss_writer_open(ss_writer **out, const char *path, const ss_schema *schema,
                   const ss_writer_options *options) {
    if (!out) return ss__fail(SS_EINVAL, "ss_writer_open: out is NULL");
    *out = NULL;
    if (!path || !*path) return ss__fail(SS_EINVAL, "ss_writer_open: empty path");
    struct stat st;
    if (stat(path, &st) != 0)
        return ss__fail(errno == ENOENT ? SS_ENOTFOUND : SS_EIO, "open '%s': %s", path,
                        strerror(errno));
    if (!S_ISREG(st.st_mode))
        return ss__fail(SS_ENOTSTORE, "open '%s': not a seqstore store (not a regular file)",
                        path);
    if (st.st_size == 0)
        return ss__fail(SS_ENOTSTORE, "open '%s': not a seqstore store (empty file)", path);
    int rc = ss__lmdb_check_file(path, (uint64_t)st.st_size);
    if (rc) return ss__context(rc, "open '%s' for writing", path);
    ss_writer *w;
    rc = ss_writer_alloc(&w, path, options);
    if (rc == 0) rc = ss_writer_env(w, options ? options->map_bytes : 0);
    MDB_txn *txn = NULL;
    if (rc == 0 && (rc = mdb_txn_begin(w->env, NULL, MDB_RDONLY, &txn)))
        rc = ss__lmdb_fail(rc, "begin");
    if (rc == 0) rc = ss__lmdb_check(w->env, &txn, w->path, SS_LMDB_CHECK_OVERFLOW);
    if (rc == 0) rc = ss_writer_read_state(w, txn, (w->flags & SS_WRITE_RESUME) != 0);
    if (rc == 0 && schema && !ss_schema_equal(&w->h, schema))
        rc = ss__fail(SS_ESCHEMA, "the store's schema differs from the one given");
    if (rc == 0) rc = ss_writer_buffers(w);
    if (rc == 0) rc = ss_writer_reload(w, txn);
    if (rc == 0) rc = ss_writer_read_resume(w, txn);
    if (txn) mdb_txn_abort(txn);
    if (rc) {
        ss_writer_free(w);
        return ss__context(rc, "open '%s' for writing", path);
    }
    *out = w;
    return 0;
}

int ss_writer_options_init(ss_writer_options *out, unsigned version) {
    if (!out) return ss__fail(SS_EINVAL, "ss_writer_options_init: out is NULL");
    if (version != SS_WRITER_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "ss_writer_options_init: version %u is not %u", version,
                        SS_WRITER_OPTIONS_VERSION);
    static const ss_writer_options defaults = SS_WRITER_OPTIONS_INIT; /* padding zeroed too */
    memcpy(out, &defaults, sizeof *out);
    return 0;
}
