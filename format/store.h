/* SPDX-License-Identifier: BSD-2-Clause */
/* store.h - the reader's in-memory tables (internal). */
#ifndef SS_STORE_H
#define SS_STORE_H

#include "layout.h"

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>

/* A block's payload inside the map: the layout the inline ss_get() reads
 * (seqstore.h), so that its chunk table is the reader's own. */
typedef ss__fast_chunk ss_block;

/* One index entry as stored: little-endian u64 pair. The reader reads it in
 * place; this library supports little-endian hosts only (checked at build). */
typedef struct ss_entry {
    uint64_t loc;   /* chunk << 32 | byte offset of the first row */
    uint64_t start; /* rows of this field in all earlier examples */
} ss_entry;

/* A field's tables. ss_get() reads only the first cache line (the fields up
 * to dtype), so the hot ones come first. */
typedef struct ss_rfield {
    const ss_entry **segments; /* entries of each index segment */
    ss_block *chunks;
    uint64_t nchunks;
    uint64_t row_bytes;
    _Atomic unsigned char *verdict; /* SS_OPEN_VERIFY: per chunk, an ss_chunk_state;
                                       NULL without the flag */
    int sequence;
    ss_dtype dtype;
    uint64_t per_chunk;   /* fixed fields: rows per chunk */
    uint64_t seg_entries; /* entries per index segment (the format version's) */
    const ss_entry *flat; /* format 3: all count + 1 entries in one array, the
                             segments' pages mapped side by side (flat_map); or NULL */
    void *flat_map;       /* that mapping, and its bytes, for munmap */
    size_t flat_bytes;
    uint64_t nsegments;
    ss_block *segment_blocks;        /* the same segments as blocks, for verify */
    ss__fast_segment *fast_segments; /* the same for the inline ss_get() */
} ss_rfield;

/* What SS_OPEN_VERIFY knows of a data chunk. Two threads may both hash an
 * unchecked chunk; they store the same verdict, so the race is benign. */
enum ss_chunk_state { SS_CHUNK_UNCHECKED = 0, SS_CHUNK_SOUND = 1, SS_CHUNK_CORRUPT = 2 };

typedef struct ss_attr_slot {
    char *name;
    const unsigned char *value; /* the block's raw value (header + payload) */
    uint64_t value_size;
} ss_attr_slot;

typedef struct ss_dataset ss_dataset;

struct ss_store {
    /* First: ss_get()'s inline fast path reads it (seqstore.h; its layout
     * is ABI). ss_fast_setup() fills it once the store is open. */
    ss__fast fast;
    char *path;
    ss_dataset *ds; /* a dataset of shards (dataset.c); then only path, h.count,
                       h.nfields, h.fields[].name/def/row_bytes/total_rows,
                       fields, schema, f[].row_bytes/sequence and lock are set */
    MDB_env *env;
    MDB_txn *txn; /* read snapshot held from open to close */
    MDB_dbi dbi;
    ss_header h;
    ss_field fields[SS_MAX_FIELDS];
    ss_schema schema;
    ss_rfield f[SS_MAX_FIELDS];
    ss_attr_slot *attrs;
    uint64_t nattrs;
    uint64_t file_bytes;
    const unsigned char *map_base; /* LMDB's map (file offset 0), or NULL if unknown */
    int complete;
    pthread_mutex_t lock;
};

_Static_assert(offsetof(struct ss_store, fast) == 0, "the inline ss_get() reads offset 0");
_Static_assert(sizeof(ss_entry) == 2 * sizeof(uint64_t), "the inline ss_get() reads u64 pairs");
_Static_assert(SS__SEGMENT_ENTRIES == SS_SEGMENT_ENTRIES_V2, "the inline ss_get()'s segment size");

static inline const ss_entry *ss_entry_at(const ss_rfield *rf, uint64_t i) {
    if (rf->flat) return rf->flat + i;
    uint64_t g = ss_segment_of(i, rf->seg_entries);
    return &rf->segments[g][i - g * rf->seg_entries];
}

/* dataset.c: a dataset of shards opened as one store (spec/FORMAT.md §13).
 * probe: 1 if `path` is a dataset directory (it holds dataset.manifest) or a
 * manifest file. The others are ss_open(), ss_close(), ss_get()... of a store
 * with `ds` set, called after the public function's argument checks. */
int ss__dataset_probe(const char *path);
/* ss_get()'s cold paths (store.c), out of line so that its fast path below
 * stays a few dozen instructions with no call. */
extern const uint64_t ss__empty[1]; /* where a length-0 view points */
int ss__bad_location(const ss_store *s, uint32_t field, uint64_t index);
void ss__index_extend(const ss_store *s, uint32_t field, uint64_t index);
int ss__chunk_verified(const ss_store *s, uint32_t field, uint64_t chunk, uint64_t index);

/* ss_get() of a plain store after its checks (field and index in range, no
 * NULL): what a dataset calls on its shard, which it knows is in range.
 * Inline, because the loads it chains (segment table, index entry, chunk
 * table) are the cost of a random read: fewer instructions around them let
 * the CPU overlap more reads. Every check of spec §6.2 is here: the chunk
 * exists and the rows lie inside its payload (rows × row_bytes computed
 * without overflow, no division). */
static inline int ss__get_unchecked(ss_view *out, const ss_store *s, uint32_t field,
                                    uint64_t index) {
    const ss_rfield *rf = &s->f[field];
    uint64_t chunk, offset, rows, bytes;
    if (__builtin_expect(rf->sequence, 1)) {
        const ss_entry *e, *next;
        if (rf->flat) {
            /* serve the inline ss_get() from here on (a cold call, once per range) */
            if (index >= __atomic_load_n(&s->fast.f[field].checked, __ATOMIC_RELAXED))
                ss__index_extend(s, field, index);
            e = rf->flat + index;
            next = e + 1;
        } else {
            uint64_t per = rf->seg_entries, g = ss_segment_of(index, per), r = index - g * per;
            e = rf->segments[g] + r;
            /* entry index + 1 exists: ss_build_tables() checked every segment */
            next = r + 1 < per ? e + 1 : rf->segments[g + 1];
        }
        uint64_t end = next->start;
        chunk = SS_LOC_CHUNK(e->loc);
        offset = SS_LOC_OFFSET(e->loc);
        rows = end - e->start;
    } else {
        chunk = index / rf->per_chunk;
        offset = (index - chunk * rf->per_chunk) * rf->row_bytes;
        rows = 1;
    }
    out->length = rows;
    out->row_bytes = rf->row_bytes;
    out->dtype = rf->dtype;
    if (rows == 0) {
        /* where the inline ss_get() points it once the entry is checked */
        out->data = chunk < rf->nchunks && offset <= rf->chunks[chunk].size
                        ? rf->chunks[chunk].data + offset
                        : (const void *)ss__empty;
        return 0;
    }
    if (__builtin_expect(chunk >= rf->nchunks, 0)) return ss__bad_location(s, field, index);
    const ss_block *b = &rf->chunks[chunk];
    if (__builtin_expect(__builtin_mul_overflow(rows, rf->row_bytes, &bytes) || offset > b->size ||
                             bytes > b->size - offset,
                         0))
        return ss__bad_location(s, field, index);
    /* SS_OPEN_VERIFY: one byte load per view once the chunk is known sound. */
    if (rf->verdict &&
        atomic_load_explicit(&rf->verdict[chunk], memory_order_relaxed) != SS_CHUNK_SOUND) {
        int rc = ss__chunk_verified(s, field, chunk, index);
        if (rc) return rc;
    }
    out->data = b->data + offset;
    return 0;
}

int ss__dataset_open(ss_store **out, const char *path, unsigned flags);
/* ss_open() of a dataset's shard: the same, with a map of the file's size
 * instead of 1 TiB (env.h: ss__env_shard_map_bytes()). */
int ss__open_shard(ss_store **out, const char *path, unsigned flags);
void ss__dataset_close(ss_store *s);
int ss__dataset_get(ss_view *out, const ss_store *s, uint32_t field, uint64_t index);
/* ss_views_stable() of a dataset. */
int ss__dataset_views_stable(const ss_store *s);
uint64_t ss__dataset_length(const ss_store *s, uint32_t field, uint64_t index);
/* The length from the shard's own index, never the stored lengths: what
 * checks the stored lengths against. */
uint64_t ss__dataset_index_length(const ss_store *s, uint32_t field, uint64_t index);
int ss__dataset_lengths(uint64_t *out, const ss_store *s, uint32_t field, uint64_t first,
                        uint64_t n);
int ss__dataset_flat_locate(uint64_t *example, uint64_t *offset, const ss_store *s, uint32_t field,
                            uint64_t pos);
/* The attributes a dataset shows are attributes of plain stores (its first
 * shard, its sections store): these find which, and attr.c decodes it, so
 * the dataset needs nothing of attr.c. *from and *k: attribute *k of *from. */
int ss__dataset_attr_find(const ss_store **from, uint64_t *k, const ss_store *s,
                          const char *name);
uint64_t ss__dataset_attr_count(const ss_store *s);
int ss__dataset_attr_slot(const ss_store **from, uint64_t *k, const ss_store *s, uint64_t i);
int ss__dataset_info(ss_store_info *out, const ss_store *s);
int ss__dataset_verify(uint64_t *problems, const ss_store *s, ss_verify_fn report, void *ctx);
/* Shards of a dataset store; 0 for a plain store or NULL. */
uint32_t ss__dataset_shard_count(const ss_store *s);
/* Shard opens a dataset attempted since ss_open() (0 for a plain store): what
 * tests and benchmarks count to check that a rank opens only what it reads. */
uint64_t ss__dataset_shard_opens(const ss_store *s);

int ss__attr_load(ss_store *s);
void ss__attr_unload(ss_store *s);

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "seqstore reads its little-endian index in place: little-endian hosts only"
#endif

#endif
