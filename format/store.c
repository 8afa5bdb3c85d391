/* SPDX-License-Identifier: BSD-2-Clause */
/* store.c - opening a store read-only and zero-copy access to examples. */
#include "store.h"

#include "env.h"
#include "lmdb_check.h"
#include "manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where a length-0 view points: a valid address that holds nothing. */
const uint64_t ss__empty[1];

/* Collect the blocks `tag`/`field`/0..n-1 into `out` with one cursor walk.
 * A missing or misnumbered block is corruption; blocks beyond n (an append in
 * progress) are ignored. */
static int ss_collect(ss_store *s, char tag, uint32_t field, uint64_t n, ss_block *out) {
    if (n == 0) return 0;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(s->txn, s->dbi, &cur);
    if (rc) return ss__lmdb_fail(rc, s->path);
    ss_key key;
    ss__key_numbered(&key, tag, field, 0);
    MDB_val k = ss_key_val(&key), v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    const char *what = tag == SS_KEY_DATA ? "data chunk" : "index segment";
    for (uint64_t i = 0; i < n; i++) {
        ss_key want;
        ss__key_numbered(&want, tag, field, i);
        if (rc || k.mv_size != want.size || memcmp(k.mv_data, want.bytes, want.size) != 0) {
            mdb_cursor_close(cur);
            return ss__fail(SS_ECORRUPT, "%s: field '%s': %s %llu is missing", s->path,
                            s->h.fields[field].name, what, (unsigned long long)i);
        }
        /* Bound by the value's size, which LMDB gives without touching the
         * value's pages: opening reads no data page. The block header (exact
         * length, checksum) is checked by ss_verify(). */
        if (v.mv_size < SS_BLOCK_HDR) {
            mdb_cursor_close(cur);
            return ss__fail(SS_ECORRUPT, "%s: field '%s': %s %llu is too short", s->path,
                            s->h.fields[field].name, what, (unsigned long long)i);
        }
        out[i].data = (const unsigned char *)v.mv_data + SS_BLOCK_HDR;
        out[i].size = v.mv_size - SS_BLOCK_HDR;
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return 0;
}

/* The inline ss_get()'s table of `n` index segments (seqstore.h): entry i
 * of segment g is at bias + 16 i, the bias computed in integers (it may lie
 * outside any object). NULL when out of memory. */
static ss__fast_segment *ss_fast_segments(const ss_entry *const *segments, uint64_t n) {
    ss__fast_segment *t = calloc(n, sizeof *t);
    for (uint64_t g = 0; t && g < n; g++) {
        t[g].bias =
            (uintptr_t)segments[g] - (uintptr_t)(g * SS_SEGMENT_ENTRIES_V2 * SS_INDEX_ENTRY);
        t[g].last = (g + 1) * SS_SEGMENT_ENTRIES_V2 - 1;
    }
    return t;
}

static int ss_build_tables(ss_store *s) {
    for (uint32_t i = 0; i < s->h.nfields; i++) {
        ss_rfield *rf = &s->f[i];
        const ss_field_state *fs = &s->h.fields[i];
        rf->row_bytes = fs->row_bytes;
        rf->sequence = fs->def.sequence;
        rf->dtype = fs->def.dtype;
        rf->per_chunk = ss_fixed_per_chunk(&s->h, fs);
        rf->nchunks = fs->nchunks;
        /* spec §5: a fixed field's chunks hold P rows each but the last */
        uint64_t fixed_chunks = (s->h.count + rf->per_chunk - 1) / rf->per_chunk;
        if (!rf->sequence && rf->nchunks != fixed_chunks)
            return ss__fail(SS_ECORRUPT,
                            "%s: fixed field '%s': %llu chunks for %llu examples (must be "
                            "ceil(count / %llu rows per chunk) = %llu)",
                            s->path, fs->name, (unsigned long long)rf->nchunks,
                            (unsigned long long)s->h.count, (unsigned long long)rf->per_chunk,
                            (unsigned long long)fixed_chunks);
        rf->chunks = calloc(rf->nchunks ? rf->nchunks : 1, sizeof *rf->chunks);
        if (!rf->chunks) return ss__fail(SS_ENOMEM, "%s: out of memory", s->path);
        int rc = ss_collect(s, SS_KEY_DATA, i, rf->nchunks, rf->chunks);
        if (rc) return rc;
        if (!rf->sequence) continue;
        uint64_t per = rf->seg_entries = s->h.segment_entries;
        uint64_t lead = ss_segment_lead(s->h.format_version);
        rf->nsegments = ss_segment_of(s->h.count, per) + 1;
        ss_block *segs = calloc(rf->nsegments, sizeof *segs);
        rf->segments = calloc(rf->nsegments, sizeof *rf->segments);
        if (!segs || !rf->segments) {
            free(segs);
            return ss__fail(SS_ENOMEM, "%s: out of memory", s->path);
        }
        rc = ss_collect(s, SS_KEY_INDEX, i, rf->nsegments, segs);
        for (uint64_t g = 0; rc == 0 && g < rf->nsegments; g++) {
            uint64_t want = g + 1 < rf->nsegments ? per : s->h.count + 1 - g * per;
            if (segs[g].size < lead + want * SS_INDEX_ENTRY)
                rc = ss__fail(SS_ECORRUPT, "%s: field '%s': index segment %llu is short", s->path,
                              fs->name, (unsigned long long)g);
            rf->segments[g] = (const ss_entry *)(segs[g].data + lead);
        }
        rf->segment_blocks = segs;
        if (rc) return rc;
        if (per == SS_SEGMENT_ENTRIES_V2 &&
            !(rf->fast_segments = ss_fast_segments(rf->segments, rf->nsegments)))
            return ss__fail(SS_ENOMEM, "%s: out of memory", s->path);
        if (ss_entry_at(rf, s->h.count)->start != fs->total_rows)
            return ss__fail(SS_ECORRUPT, "%s: field '%s': index ends at row %llu, header says %llu",
                            s->path, fs->name,
                            (unsigned long long)ss_entry_at(rf, s->h.count)->start,
                            (unsigned long long)fs->total_rows);
    }
    return 0;
}

/* The start of LMDB's map, which LMDB does not expose (mdb_env_info's
 * me_mapaddr is the meta page's fixed-map address, normally 0). Every LMDB
 * page starts with its own number (u64), and lmdb_check.c has checked that
 * number on every branch and leaf page of this snapshot (not on overflow
 * pages, so a value's address would not do): the leaf page holding the first
 * key, minus that many pages, is the start. Rounding the key's address down
 * to its page needs the map aligned to LMDB's page size, which mmap gives
 * when that is at most the system's. The start must then hold meta pages 0
 * and 1 (their numbers and LMDB's magic). NULL when any of this fails. */
static const unsigned char *ss_map_base(const ss_store *s) {
    MDB_stat st;
    MDB_cursor *cur;
    MDB_val k, v;
    long os_page = sysconf(_SC_PAGESIZE);
    if (mdb_env_stat(s->env, &st) != 0 || st.ms_psize == 0 || (st.ms_psize & (st.ms_psize - 1)) ||
        os_page <= 0 || st.ms_psize > (unsigned long)os_page)
        return NULL;
    if (mdb_cursor_open(s->txn, s->dbi, &cur) != 0) return NULL;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    mdb_cursor_close(cur);
    if (rc != 0) return NULL;
    uintptr_t psize = st.ms_psize, page = (uintptr_t)k.mv_data & ~(psize - 1);
    uint64_t pgno, p0, p1;
    uint32_t magic;
    memcpy(&pgno, (const void *)page, sizeof pgno);
    if (pgno < 2 || pgno > page / psize) return NULL;
    const unsigned char *base = (const unsigned char *)(page - pgno * psize);
    memcpy(&p0, base, sizeof p0);
    memcpy(&p1, base + psize, sizeof p1);
    memcpy(&magic, base + 16, sizeof magic);
    return p0 == 0 && p1 == 1 && magic == 0xBEEFC0DEu ? base : NULL;
}

/* Read and check the header (or, for SS_OPEN_INCOMPLETE, the progress record). */
static int ss_read_header(ss_store *s, unsigned flags) {
    ss_key key;
    MDB_val k, v;
    int rc = MDB_NOTFOUND;
    char tag = SS_KEY_PROGRESS;
    if (flags & SS_OPEN_INCOMPLETE) {
        ss__key_named(&key, tag, NULL);
        k = ss_key_val(&key);
        rc = mdb_get(s->txn, s->dbi, &k, &v);
    }
    if (rc == MDB_NOTFOUND) {
        ss__key_named(&key, tag = SS_KEY_HEADER, NULL);
        k = ss_key_val(&key);
        rc = mdb_get(s->txn, s->dbi, &k, &v);
    }
    if (rc == MDB_NOTFOUND)
        return ss__fail(SS_ENOTSTORE, "%s: not a seqstore store (no header)", s->path);
    if (rc) return ss__lmdb_fail(rc, s->path);
    if ((rc = ss__header_read(&s->h, &v, tag, s->path))) return rc;
    /* before any count of the header sizes a table or indexes one */
    if ((rc = ss__header_check_bounds(&s->h, ss__env_used_bytes(s->env), tag, s->path))) return rc;
    if ((s->h.incompat_flags & SS_INCOMPAT_INCOMPLETE) && !(flags & SS_OPEN_INCOMPLETE))
        return ss__fail(SS_EINCOMPLETE,
                        "%s: store is incomplete: its writer did not finish (%llu examples "
                        "committed); resume the conversion (--resume) or create it again "
                        "(--force)",
                        s->path, (unsigned long long)s->h.count);
    for (uint32_t i = 0; i < s->h.nfields; i++) {
        s->h.fields[i].def.name = s->h.fields[i].name;
        s->fields[i] = s->h.fields[i].def;
    }
    s->schema.nfields = s->h.nfields;
    s->schema.fields = s->fields;
    return 0;
}

/* The one place where SS_OPEN_VERIFY checks a block (a data chunk or an index
 * segment) against its checksum. `b` is the payload room after the block
 * header, as ss_collect() found it; *len is set to the checked payload's size. */
static int ss_block_check(const ss_store *s, char tag, uint32_t field, uint64_t number,
                          const ss_block *b, uint64_t *len) {
    char what[512];
    snprintf(what, sizeof what, "%s: field '%s': %s %llu", s->path, s->h.fields[field].name,
             tag == SS_KEY_DATA ? "data chunk" : "index segment", (unsigned long long)number);
    ss_key key; /* format version 2 binds the checksum to the block's key */
    ss__key_numbered(&key, tag, field, number);
    const unsigned char *payload;
    return ss__block_open(b->data - SS_BLOCK_HDR, b->size + SS_BLOCK_HDR, &key, s->h.format_version,
                          what, &payload, len);
}

/* SS_OPEN_VERIFY: a verdict slot per data chunk, and every index segment
 * checked now. The index is small (16 bytes per example) and read by
 * ss_length(), which cannot report an error, so it is checked at open. */
static int ss_verify_setup(ss_store *s) {
    for (uint32_t i = 0; i < s->h.nfields; i++) {
        ss_rfield *rf = &s->f[i];
        rf->verdict = calloc(rf->nchunks ? rf->nchunks : 1, sizeof *rf->verdict);
        if (!rf->verdict) return ss__fail(SS_ENOMEM, "%s: out of memory", s->path);
        uint64_t per = rf->seg_entries, lead = ss_segment_lead(s->h.format_version);
        for (uint64_t g = 0; rf->sequence && g < rf->nsegments; g++) {
            /* Entries are read up to the room; the checksum covers `len`. */
            uint64_t len, want = lead + (g + 1 < rf->nsegments ? per : s->h.count + 1 - g * per) *
                                            SS_INDEX_ENTRY;
            int rc = ss_block_check(s, SS_KEY_INDEX, i, g, &rf->segment_blocks[g], &len);
            if (rc) return rc;
            if (len < want)
                return ss__fail(SS_ECORRUPT,
                                "%s: field '%s': index segment %llu holds %llu checked bytes, "
                                "needs %llu",
                                s->path, s->h.fields[i].name, (unsigned long long)g,
                                (unsigned long long)len, (unsigned long long)want);
        }
    }
    return 0;
}

/* SS_OPEN_VERIFY: 0 if data chunk `chunk` of `field` is sound, hashing it on
 * its first touch; else SS_ECORRUPT, now and on every later touch. */
int ss__chunk_verified(const ss_store *s, uint32_t field, uint64_t chunk, uint64_t index) {
    _Atomic unsigned char *slot = &s->f[field].verdict[chunk];
    unsigned char state = atomic_load_explicit(slot, memory_order_acquire);
    if (state == SS_CHUNK_UNCHECKED) {
        uint64_t len;
        state = ss_block_check(s, SS_KEY_DATA, field, chunk, &s->f[field].chunks[chunk], &len)
                    ? SS_CHUNK_CORRUPT
                    : SS_CHUNK_SOUND;
        atomic_store_explicit(slot, state, memory_order_release);
    }
    if (state == SS_CHUNK_SOUND) return 0;
    return ss__fail(SS_ECORRUPT,
                    "%s: field '%s' example %llu: data chunk %llu is corrupt (checksum mismatch; "
                    "seqstore verify lists every damaged chunk)",
                    s->path, s->h.fields[field].name, (unsigned long long)index,
                    (unsigned long long)chunk);
}

typedef struct ss_open_ctx {
    const char *path;
    unsigned flags;
    int shard; /* a dataset's shard: a map of the file's size (env.h) */
} ss_open_ctx;

static int ss_open_readonly_env(MDB_env **env, void *vctx) {
    const ss_open_ctx *ctx = vctx;
    int rc = mdb_env_create(env);
    if (rc) return ss__lmdb_fail(rc, ctx->path);
    mdb_env_set_maxreaders(*env, SS_ENV_MAXREADERS);
    /* A map far beyond the file, so that growth by another process's writer
     * never forces a remap under this process's readers (env.c). */
    struct stat st;
    uint64_t file = stat(ctx->path, &st) == 0 ? (uint64_t)st.st_size : 0;
    uint64_t map = ctx->shard ? ss__env_shard_map_bytes(file) : ss__env_reader_map_bytes(file);
    if (map) mdb_env_set_mapsize(*env, (size_t)map);
    unsigned mflags = MDB_RDONLY | MDB_NOSUBDIR | MDB_NOTLS;
    int nolock = (ctx->flags & SS_OPEN_NOLOCK) != 0;
    if (!nolock && (rc = ss__env_lock_prepare(ctx->path, 0, &nolock))) return rc;
    if (nolock) mflags |= MDB_NOLOCK;
    if (ctx->flags & SS_OPEN_RANDOM) mflags |= MDB_NORDAHEAD;
    rc = mdb_env_open(*env, ctx->path, mflags, 0644);
    if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH)
        return ss__fail(SS_ENOTSTORE, "%s: not a seqstore store", ctx->path);
    if (rc == EACCES || rc == EROFS)
        return ss__fail(SS_EIO, "%s: %s (for read-only media, open with SS_OPEN_NOLOCK / --nolock)",
                        ctx->path, strerror(rc));
    return rc ? ss__lmdb_fail(rc, ctx->path) : 0;
}

/* Share the process's environment of this file and take our own snapshot. */
static int ss_open_env(ss_store *s, unsigned flags, int shard) {
    ss_open_ctx ctx = {s->path, flags, shard};
    int rc = ss__env_acquire(&s->env, s->path, 0, ss_open_readonly_env, &ctx);
    if (rc) return rc;
    if ((rc = ss__env_begin_read(s->env, s->path, &s->txn))) return rc;
    /* LMDB maps pages beyond the end of a truncated file, and touching them
     * raises SIGBUS: the file must hold every page the meta page claims. */
    if ((rc = ss__env_check_size(s->env, s->path))) return rc;
    /* LMDB trusts its pages: check the snapshot's B-trees before it reads them. */
    if ((rc = ss__lmdb_check(s->env, &s->txn, s->path, 0))) return rc;
    rc = mdb_dbi_open(s->txn, NULL, 0, &s->dbi);
    return rc ? ss__lmdb_fail(rc, s->path) : 0;
}

enum { SS_FLAT_SPAN = SS_SEGMENT_ENTRIES_V3 * SS_INDEX_ENTRY }; /* a segment's entries: 1 MiB */

/* Format 3: map the entries of every index segment of `rf` side by side
 * into one reserved range, so that entry i is at flat + i (spec §6.2: each
 * segment's entries fill whole pages from a page boundary of the file). The
 * pages are the file's own, shared with LMDB's map and the page cache, and
 * stay valid while the snapshot is held, as LMDB's map does. Leaves
 * rf->flat NULL (the segments serve) when the system's pages are not 4096
 * bytes, the map's start is unknown, or the kernel refuses (a process has a
 * limited number of mappings: vm.max_map_count). */
static void ss_flat_map(ss_store *s, ss_rfield *rf) {
    int fd;
    if (s->h.format_version < 3 || !rf->sequence || !s->map_base ||
        sysconf(_SC_PAGESIZE) != SS_PAGE || mdb_env_get_fd(s->env, &fd) != 0)
        return;
    size_t bytes = (size_t)rf->nsegments * SS_FLAT_SPAN;
    unsigned char *base =
        mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) return;
    for (uint64_t g = 0; g < rf->nsegments; g++) {
        uint64_t off = (uint64_t)((const unsigned char *)rf->segments[g] - s->map_base);
        uint64_t n = g + 1 < rf->nsegments ? SS_SEGMENT_ENTRIES_V3
                                           : s->h.count + 1 - g * SS_SEGMENT_ENTRIES_V3;
        size_t len = (size_t)((n * SS_INDEX_ENTRY + SS_PAGE - 1) & ~(uint64_t)(SS_PAGE - 1));
        /* the entries start a page; ss_build_tables() checked that the
         * block's value holds them, and the value's pages are whole */
        if (off % SS_PAGE != 0 || mmap(base + g * SS_FLAT_SPAN, len, PROT_READ,
                                       MAP_SHARED | MAP_FIXED, fd, (off_t)off) == MAP_FAILED) {
            munmap(base, bytes);
            return;
        }
    }
    rf->flat = (const ss_entry *)(const void *)base;
    rf->flat_map = base;
    rf->flat_bytes = bytes;
}

/* Check entries of field `field`'s flat index from its checked prefix
 * towards example `index`, as ss__get_unchecked() checks one (spec §6.2:
 * the chunk exists, the rows lie inside its payload), and extend the prefix
 * that the inline ss_get() serves without checks. Stops at the first entry
 * that fails: the exported function keeps reporting it, and the examples
 * after it keep their checks. About 1 ns an entry, so a store's index is
 * checked once, by whichever threads get there; two threads may check the
 * same entries, and the prefix only grows. With SS_OPEN_VERIFY an entry
 * also needs its chunk verified sound (ss__chunk_verified() hashes a chunk
 * on its first touch): the prefix stops at the first chunk not verified
 * yet, so it grows as reads verify chunks and never hashes one itself.
 * One call extends it by EXTEND_ENTRIES at most, a few microseconds (reads
 * beyond the prefix take the checked path meanwhile): walking all the way
 * to the index read made the first random reads of a store of 10^7
 * examples wait for every entry before them, 45-90 ms for the first LM
 * batch of 8 x 2048 tokens. */
#define EXTEND_ENTRIES 4096
void ss__index_extend(const ss_store *s, uint32_t field, uint64_t index) {
    const ss_rfield *rf = &s->f[field];
    uint64_t *checked = (uint64_t *)&s->fast.f[field].checked; /* the store is ours */
    uint64_t i = __atomic_load_n(checked, __ATOMIC_RELAXED), at = i;
    if (!rf->flat || s->ds || rf->row_bytes >> 32 != 0 || index < i) return;
    uint64_t stop = (index | (SS_SEGMENT_ENTRIES_V3 - 1)) + 1;
    if (stop > i + EXTEND_ENTRIES) stop = i + EXTEND_ENTRIES;
    if (stop > s->h.count) stop = s->h.count;
    for (const ss_entry *e = rf->flat + i; i < stop; i++, e++) {
        uint64_t chunk = SS_LOC_CHUNK(e->loc), rows = e[1].start - e->start;
        /* rows <= 2^32 and row_bytes < 2^32: the sum cannot overflow */
        if (chunk >= rf->nchunks || e[1].start < e->start || rows > (1ull << 32) ||
            SS_LOC_OFFSET(e->loc) + rows * rf->row_bytes > rf->chunks[chunk].size ||
            (rf->verdict &&
             atomic_load_explicit(&rf->verdict[chunk], memory_order_acquire) != SS_CHUNK_SOUND))
            break;
    }
    while (i > at &&
           !__atomic_compare_exchange_n(checked, &at, i, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/* The table of ss_get()'s inline fast path (seqstore.h): plain sequence
 * fields of a plain store opened without SS_OPEN_VERIFY; format 3 through
 * the flat index and its checked prefix (0 until ss__index_extend() grows
 * it), versions 1 and 2 through the segments (limit 0 sends every call to
 * the out-of-line ss_get()). Set last, once the tables are complete;
 * afterwards only `checked` changes. */
static void ss_fast_setup(ss_store *s) {
    for (uint32_t i = 0; i < s->h.nfields; i++) {
        ss_rfield *rf = &s->f[i];
        ss__fast_field *f = &s->fast.f[i];
        ss_flat_map(s, rf);
        f->index = (const uint64_t *)(const void *)rf->flat;
        f->checked = 0;
        f->segments = rf->fast_segments;
        f->chunks = rf->chunks;
        f->nchunks = rf->nchunks;
        f->row_bytes = rf->row_bytes;
        f->dtype = rf->dtype;
        f->limit =
            rf->sequence && rf->fast_segments && !rf->verdict && !s->ds && rf->row_bytes >> 32 == 0
                ? s->h.count
                : 0;
    }
}

static int ss_open_store(ss_store **out, const char *path, unsigned flags, int shard);

static const char *ss_file_kind(mode_t mode) {
    return S_ISFIFO(mode)   ? "a FIFO"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
                            : "not a file";
}

/* A directory that ss__dataset_probe() refused: say why if it has a manifest. */
static int ss_open_not_dataset(const char *path) {
    char manifest[4096];
    struct stat st;
    snprintf(manifest, sizeof manifest, "%s/" SS_MANIFEST_NAME, path);
    if (stat(manifest, &st) == 0 && !S_ISREG(st.st_mode))
        return ss__fail(SS_ENOTSTORE, "open '%s': not a dataset (not a regular file: %s)",
                        manifest, ss_file_kind(st.st_mode));
    return ss__fail(SS_ENOTSTORE, "open '%s': not a seqstore store (a directory)", path);
}

int ss_open(ss_store **out, const char *path, unsigned flags) {
    return ss_open_store(out, path, flags, 0);
}

int ss__open_shard(ss_store **out, const char *path, unsigned flags) {
    return ss_open_store(out, path, flags, 1);
}

static int ss_open_store(ss_store **out, const char *path, unsigned flags, int shard) {
    if (!out) return ss__fail(SS_EINVAL, "ss_open: out is NULL");
    *out = NULL;
    if (!path || !*path) return ss__fail(SS_EINVAL, "ss_open: empty path");
    if (!shard && ss_is_url(path)) return ss_open_url(out, path, flags, NULL);
    struct stat st;
    if (stat(path, &st) != 0)
        return ss__fail(errno == ENOENT ? SS_ENOTFOUND : SS_EIO, "open '%s': %s", path,
                        strerror(errno));
    if (ss__dataset_probe(path)) return ss__dataset_open(out, path, flags);
    if (S_ISDIR(st.st_mode)) return ss_open_not_dataset(path);
    /* LMDB's open of a FIFO would wait for a writer forever */
    if (!S_ISREG(st.st_mode))
        return ss__fail(SS_ENOTSTORE, "open '%s': not a seqstore store (not a regular file: %s)",
                        path, ss_file_kind(st.st_mode));
    if (st.st_size == 0)
        return ss__fail(SS_ENOTSTORE, "open '%s': not a seqstore store (empty file)", path);
    int rc = ss__lmdb_check_file(path, (uint64_t)st.st_size);
    if (rc) return rc;
    ss_store *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return ss__fail(SS_ENOMEM, "open '%s': out of memory", path);
    }
    s->file_bytes = (uint64_t)st.st_size;
    s->complete = 1;
    pthread_mutex_init(&s->lock, NULL);
    rc = ss_open_env(s, flags, shard);
    if (rc == 0) rc = ss_read_header(s, flags);
    if (rc == 0) rc = ss_build_tables(s);
    if (rc == 0 && (flags & SS_OPEN_VERIFY)) rc = ss_verify_setup(s);
    if (rc == 0) rc = ss__attr_load(s);
    if (rc == 0) s->map_base = ss_map_base(s);
    if (rc == 0) ss_fast_setup(s);
    if (rc) {
        ss_close(s);
        return rc;
    }
    s->complete = !(s->h.incompat_flags & SS_INCOMPAT_INCOMPLETE);
    *out = s;
    return 0;
}

void ss_close(ss_store *s) {
    if (!s) return;
    if (s->ds) ss__dataset_close(s);
    for (uint32_t i = 0; i < SS_MAX_FIELDS; i++) {
        free(s->f[i].chunks);
        free(s->f[i].segments);
        free(s->f[i].segment_blocks);
        free(s->f[i].fast_segments);
        if (s->f[i].flat_map) munmap(s->f[i].flat_map, s->f[i].flat_bytes);
        free((void *)s->f[i].verdict);
    }
    ss__attr_unload(s);
    if (s->txn) mdb_txn_abort(s->txn);
    ss__env_release(s->env);
    pthread_mutex_destroy(&s->lock);
    free(s->path);
    free(s);
}

int ss_views_stable(const ss_store *s) {
    if (!s) return 0;
    return s->ds ? ss__dataset_views_stable(s) : 1;
}

int ss_store_map(const void **base, uint64_t *size, int *fd, const ss_store *s) {
    if (!base || !size || !fd || !s) return ss__fail(SS_EINVAL, "ss_store_map: NULL argument");
    MDB_envinfo info;
    struct stat st;
    int f;
    if (!s->map_base)
        return ss__fail(SS_EIO,
                        "%s: the start of the map is unknown (LMDB page size above the "
                        "system's)",
                        s->path);
    /* The meta page first, the file size second: the file only grows. */
    uint64_t need = ss__env_used_bytes(s->env);
    mdb_env_info(s->env, &info);
    if (mdb_env_get_fd(s->env, &f) != 0 || fstat(f, &st) != 0)
        return ss__fail(SS_EIO, "%s: cannot stat the data file: %s", s->path, strerror(errno));
    if ((uint64_t)st.st_size < need)
        return ss__fail(SS_ECORRUPT, "%s: file is truncated (%llu bytes, needs %llu)", s->path,
                        (unsigned long long)st.st_size, (unsigned long long)need);
    *base = s->map_base;
    *size = (uint64_t)st.st_size < info.me_mapsize ? (uint64_t)st.st_size : info.me_mapsize;
    *fd = f;
    return 0;
}

uint64_t ss_count(const ss_store *s) {
    return s ? s->h.count : 0;
}

uint32_t ss_field_count(const ss_store *s) {
    return s ? s->h.nfields : 0;
}

int ss_field_index(uint32_t *out, const ss_store *s, const char *name) {
    if (!out || !s || !name) return ss__fail(SS_EINVAL, "ss_field_index: NULL argument");
    for (uint32_t i = 0; i < s->h.nfields; i++)
        if (strcmp(s->h.fields[i].name, name) == 0) {
            *out = i;
            return 0;
        }
    return ss__fail(SS_ENOTFOUND, "%s: no field '%s'", s->path, name);
}

int ss_field_info(ss_field *out, const ss_store *s, uint32_t field) {
    if (!s || !out) return ss__fail(SS_EINVAL, "ss_field_info: NULL argument");
    if (field >= s->h.nfields)
        return ss__fail(SS_ERANGE, "%s: field %u of %u", s->path, field, s->h.nfields);
    *out = s->fields[field];
    return 0;
}

uint64_t ss_field_row_bytes(const ss_store *s, uint32_t field) {
    return s && field < s->h.nfields ? s->f[field].row_bytes : 0;
}

const ss_schema *ss_store_schema(const ss_store *s) {
    return s ? &s->schema : NULL;
}

static int ss_bad_index(const ss_store *s, uint32_t field, uint64_t index) {
    if (field >= s->h.nfields)
        return ss__fail(SS_ERANGE, "%s: field %u does not exist (%u fields)", s->path, field,
                        s->h.nfields);
    return ss__fail(SS_ERANGE, "%s: example %llu is out of range (%llu examples)", s->path,
                    (unsigned long long)index, (unsigned long long)s->h.count);
}

int ss__bad_location(const ss_store *s, uint32_t field, uint64_t index) {
    return ss__fail(SS_ECORRUPT, "%s: field '%s' example %llu: index points outside its chunk",
                    s->path, s->h.fields[field].name, (unsigned long long)index);
}

/* The exported function (its name in parentheses: seqstore.h makes ss_get a
 * macro for the inline fast path, which calls this for everything else). */
int(ss_get)(ss_view *out, const ss_store *s, uint32_t field, uint64_t index) {
    if (!s || !out) return ss__fail(SS_EINVAL, "ss_get: NULL argument");
    int rc = field >= s->h.nfields || index >= s->h.count ? ss_bad_index(s, field, index)
             : s->ds                                      ? ss__dataset_get(out, s, field, index)
                                                          : ss__get_unchecked(out, s, field, index);
    /* seqstore.h's inline ss_get() copies every member of the view */
    if (rc) memset(out, 0, sizeof *out);
    return rc;
}

int ss_get_range(ss_view *out, const ss_store *s, uint32_t field, uint64_t index, uint64_t t0,
                 uint64_t t1) {
    int rc = ss_get(out, s, field, index);
    if (rc) return rc;
    if (t0 > t1 || t1 > out->length)
        return ss__fail(SS_ERANGE,
                        "%s: field '%s' example %llu: range [%llu, %llu) outside its "
                        "%llu rows",
                        s->path, s->h.fields[field].name, (unsigned long long)index,
                        (unsigned long long)t0, (unsigned long long)t1,
                        (unsigned long long)out->length);
    out->length = t1 - t0;
    if (out->length) out->data = (const unsigned char *)out->data + t0 * out->row_bytes;
    return 0;
}

uint64_t ss_length(const ss_store *s, uint32_t field, uint64_t index) {
    if (!s || field >= s->h.nfields || index >= s->h.count) return 0;
    const ss_rfield *rf = &s->f[field];
    if (!rf->sequence) return 1;
    if (s->ds) return ss__dataset_length(s, field, index);
    return ss_entry_at(rf, index + 1)->start - ss_entry_at(rf, index)->start;
}

int ss_lengths(uint64_t *out, const ss_store *s, uint32_t field, uint64_t first, uint64_t n) {
    if (!s || (!out && n)) return ss__fail(SS_EINVAL, "ss_lengths: NULL argument");
    if (field >= s->h.nfields || first > s->h.count || n > s->h.count - first)
        return ss__fail(SS_ERANGE, "%s: lengths [%llu, %llu) of field %u out of range", s->path,
                        (unsigned long long)first, (unsigned long long)(first + n), field);
    const ss_rfield *rf = &s->f[field];
    if (!rf->sequence) {
        for (uint64_t i = 0; i < n; i++) out[i] = 1;
        return 0;
    }
    if (s->ds) return ss__dataset_lengths(out, s, field, first, n);
    uint64_t prev = ss_entry_at(rf, first)->start;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t next = ss_entry_at(rf, first + i + 1)->start;
        out[i] = next - prev;
        prev = next;
    }
    return 0;
}

int ss_store_get_info(ss_store_info *out, const ss_store *s) {
    if (!s || !out) return ss__fail(SS_EINVAL, "ss_store_get_info: NULL argument");
    if (s->ds) return ss__dataset_info(out, s);
    memset(out, 0, sizeof *out);
    out->format_version = s->h.format_version;
    out->complete = s->complete;
    out->count = s->h.count;
    out->file_bytes = s->file_bytes;
    out->chunk_bytes = ss_chunk_capacity(s->h.chunk_pages);
    for (uint32_t i = 0; i < s->h.nfields; i++) out->data_chunks += s->f[i].nchunks;
    return 0;
}
