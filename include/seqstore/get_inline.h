/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * seqstore/get_inline.h - NOT API: the inline fast path of ss_get().
 *
 * Included by seqstore/core.h right after ss_get()'s declaration; do not include
 * it yourself. Nothing here is part of the API: the ss__ names, the table
 * layout and this file may change with every SONAME. A program that must
 * not depend on them defines SS_NO_INLINE_GET (zstd keeps such parts behind
 * ZSTD_STATIC_LINKING_ONLY the same way).
 */
#ifndef SEQSTORE_GET_INLINE_H
#define SEQSTORE_GET_INLINE_H

#ifndef SEQSTORE_CORE_H
#error "include <seqstore.h>, not seqstore/get_inline.h"
#endif

/* ss_get()'s inline fast path.
 *
 * A random ss_get() costs two dependent cache misses (the index entry, then
 * the data) and the instructions around them; the fewer the instructions,
 * the more calls of a caller's loop the CPU overlaps (measured:
 * bench/bench_read). So ss_get(), called by name, compiles to the inline
 * function below, which reads a small table at the start of the opaque
 * ss_store:
 *  - format version 3 (spec/FORMAT.md §6.2): the library maps the index
 *    segments' pages side by side into one flat array of entries, and checks
 *    each entry once (its chunk exists, its rows lie inside the chunk's
 *    payload), the first time the exported function reaches it; entries
 *    below `checked` are then served with two loads and no test;
 *  - versions 1 and 2: every check of §6.2 on every call.
 * Anything else (a fixed field, a dataset's shard not opened yet, an
 * entry not checked yet or, with SS_OPEN_VERIFY, in a chunk no read has
 * verified yet, a bad argument, a corrupt entry) calls the exported
 * function ss_get, which checks and reports as
 * documented above. Taking &ss_get or writing (ss_get)(...) calls the
 * exported function. A view of an empty example may point into its chunk
 * rather than where the exported function points it (both valid, not NULL).
 *
 * ABI: the ss__fast table's layout and its place at offset 0 of ss_store
 * are part of the library's binary interface for its SONAME (0.MINOR before
 * 1.0: every minor release may change them, and changes its SONAME). A
 * program that must not depend on them defines SS_NO_INLINE_GET before
 * including this header (or with -D) and always calls the exported function.
 * The ss__ names are not API: do not use them directly. */
#define SS__SEGMENT_ENTRIES 65534u /**< index entries per segment (spec §6) */

/** Not API: a data chunk's payload (see the inline fast path above). */
typedef struct ss__fast_chunk {
    const unsigned char *data; /**< first payload byte, inside the map */
    uint64_t size;             /**< payload bytes */
} ss__fast_chunk;

/** Not API: an index segment for the inline fast path. */
typedef struct ss__fast_segment {
    uintptr_t bias; /**< address of entry 0 if the segment began there: entry i of the
                         field is the u64 pair (location, start) at bias + 16 i */
    uint64_t last;  /**< the segment's last entry (the next one is in the next segment) */
} ss__fast_segment;

/** Not API: one field's tables for the inline fast path. */
typedef struct ss__fast_field {
    const uint64_t *index;            /**< format 3: entry i is the u64 pair (location,
                                           start) at index + 2 i; NULL otherwise */
    uint64_t checked;                 /**< entries of index checked: the fast path serves
                                           examples below it; only grows (relaxed atomic) */
    const ss__fast_chunk *chunks;     /**< the field's data chunks */
    uint64_t row_bytes;               /**< bytes per row */
    const ss__fast_segment *segments; /**< versions 1 and 2: every index segment, in order */
    uint64_t limit;                   /**< versions 1 and 2: examples served: the count, or 0 */
    uint64_t nchunks;                 /**< entries of chunks */
    ss_dtype dtype;                   /**< the field's dtype */
} ss__fast_field;

/** Not API: a shard of a dataset for the inline fast path. */
typedef struct ss__fast_shard {
    uint64_t first;  /**< the global number of the shard's first example */
    ss_store *store; /**< the shard once opened and checked, else NULL; read with
                          acquire and written with release (__atomic builtins) */
} ss__fast_shard;

/** Not API: the start of every ss_store (the inline fast path reads it). */
typedef struct ss__fast {
    ss__fast_field f[SS_MAX_FIELDS]; /**< limit 0 beyond the schema, and for a dataset */
    const ss__fast_shard *shards;    /**< a dataset's nshards + 1 (the last: first = count) */
    uint64_t shard_limit;            /**< a dataset's count, else 0 */
    uint64_t nshards;                /**< entries of shards, less 1 */
    const uint32_t *shard_of;        /**< a dataset's lookup table: entry b is the shard
                                          holding example b << shard_shift */
    uint64_t shard_shift;            /**< log2 of the examples per entry of shard_of, at
                                          most a quarter of the mean shard's */
} ss__fast;

#if !defined(SS_NO_INLINE_GET) && defined(__GNUC__)
/** Not API: ss_get()'s out-of-line path, through a copy so that the
 *  caller's view need not live in memory on the fast path. */
static inline int ss__get_call(ss_view *out, const ss_store *s, uint32_t field, uint64_t index) {
    ss_view v;
    if (!out) return (ss_get)(out, s, field, index);
    int rc = (ss_get)(&v, s, field, index); /* sets every member, also on failure */
    *out = v;
    return rc;
}

/** Not API: example `index` of the field table `f` into *out: 0, or 1 when
 *  the fast path does not serve it (out untouched). */
__attribute__((always_inline)) static inline int
ss__get_table(ss_view *out, const ss__fast_field *f, uint64_t index) {
    if (__builtin_expect(index < __atomic_load_n(&f->checked, __ATOMIC_RELAXED), 1)) {
        /* entries index and index + 1 were checked (see above) */
        const uint64_t *e = f->index + 2 * index;
        const ss__fast_chunk *c = &f->chunks[e[0] >> 32];
        out->data = c->data + (e[0] & 0xFFFFFFFFu);
        out->length = e[3] - e[1];
        out->row_bytes = f->row_bytes;
        out->dtype = f->dtype;
        return 0;
    }
    if (__builtin_expect(index >= f->limit, 0)) return 1;
    const ss__fast_segment *g = &f->segments[index / SS__SEGMENT_ENTRIES];
    const uint64_t *e = (const uint64_t *)(g->bias + 16 * index);
    /* entry index + 1 exists (the library checked every segment's size),
     * in the next segment after the last entry of one */
    uint64_t end = __builtin_expect(index != g->last, 1)
                       ? e[3]
                       : ((const uint64_t *)(g[1].bias + 16 * (index + 1)))[1];
    uint64_t loc = e[0], rows = end - e[1], chunk = loc >> 32, offset = loc & 0xFFFFFFFFu;
    /* 1 <= rows <= 2^32 (an empty example takes the out-of-line path), and
     * row_bytes < 2^32 (else limit is 0): rows * row_bytes + offset < 2^64. */
    if (__builtin_expect(chunk >= f->nchunks || ((rows - 1) >> 32) != 0, 0)) return 1;
    const ss__fast_chunk *c = &f->chunks[chunk];
    if (__builtin_expect(offset + rows * f->row_bytes > c->size, 0)) return 1;
    out->data = c->data + offset;
    out->length = rows;
    out->row_bytes = f->row_bytes;
    out->dtype = f->dtype;
    return 0;
}

/** ss_get(), inline (see above): the same results and return codes. A
 *  dataset's example is served from its shard's table once the shard is
 *  open (the shard found from the dataset's lookup table, as the exported
 *  function finds it). */
__attribute__((always_inline)) static inline int ss__get_inline(ss_view *out, const ss_store *s,
                                                                uint32_t field, uint64_t index) {
    if (__builtin_expect(!out || !s || field >= SS_MAX_FIELDS, 0))
        return ss__get_call(out, s, field, index);
    const ss__fast *t = (const ss__fast *)(const void *)s;
    if (__builtin_expect(ss__get_table(out, &t->f[field], index) == 0, 1)) return 0;
    if (index < t->shard_limit) {
        /* the entry's shard starts at or before index; a step covers one
         * shard boundary inside the entry's examples, rarer ones go out of line */
        const ss__fast_shard *sh = &t->shards[t->shard_of[index >> t->shard_shift]];
        const ss_store *st;
        if (index >= sh[1].first) sh++;
        if (index < sh[1].first &&
            (st = __atomic_load_n(&sh->store, __ATOMIC_ACQUIRE)) != NULL &&
            ss__get_table(out, &((const ss__fast *)(const void *)st)->f[field],
                          index - sh->first) == 0)
            return 0;
    }
    return ss__get_call(out, s, field, index);
}
#define ss_get(out, s, field, index) ss__get_inline(out, s, field, index)
#endif

#endif /* SEQSTORE_GET_INLINE_H */
