/* SPDX-License-Identifier: BSD-2-Clause */
/* verify.c - recompute every checksum and check the index's consistency. */
#include "lmdb_check.h"
#include "sections.h"
#include "store.h"

#include <stdio.h>

typedef struct ss_verifier {
    const ss_store *s;
    ss_verify_fn report;
    void *ctx;
    uint64_t problems;
    int stop;
    char where[SS_MAX_ATTR_NAME + 128]; /* the block of the current problem */
} ss_verifier;

/* Report a problem with the block named by v->where (set by the caller);
 * `first`/`last` are the examples it concerns (first == last: none). */
static void ss_problem(ss_verifier *v, const char *what, uint32_t field, uint64_t number,
                       uint64_t first, uint64_t last) {
    if (v->problems++ == 0) {
        if (last > first)
            ss__fail(SS_ECORRUPT, "%s: %s (examples %llu to %llu): %s", v->s->path, v->where,
                     (unsigned long long)first, (unsigned long long)(last - 1), what);
        else
            ss__fail(SS_ECORRUPT, "%s: %s: %s", v->s->path, v->where, what);
    }
    ss_verify_problem p = {what, field, number, first, last, v->where};
    if (v->report && v->report(v->ctx, &p)) v->stop = 1;
}

/* Examples [first, last) whose data lies in `chunk` of field `f`. */
static void ss_chunk_examples(const ss_store *s, uint32_t f, uint64_t chunk, uint64_t *first,
                              uint64_t *last) {
    const ss_rfield *rf = &s->f[f];
    if (!rf->sequence) {
        *first = chunk * rf->per_chunk;
        *last = *first + rf->per_chunk < s->h.count ? *first + rf->per_chunk : s->h.count;
        return;
    }
    uint64_t lo = 0, hi = s->h.count; /* first example with chunk >= `chunk` */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (SS_LOC_CHUNK(ss_entry_at(rf, mid)->loc) < chunk)
            lo = mid + 1;
        else
            hi = mid;
    }
    *first = lo;
    while (lo < s->h.count && SS_LOC_CHUNK(ss_entry_at(rf, lo)->loc) == chunk) lo++;
    *last = lo;
}

/* Spec §6.1: a location (of an example, empty ones included, or of the
 * sentinel) is inside or at the end of a chunk's payload, or the start of
 * the chunk after the last. Readers never dereference an empty example's. */
static int ss_loc_placed(const ss_rfield *rf, uint64_t loc) {
    uint64_t c = SS_LOC_CHUNK(loc), o = SS_LOC_OFFSET(loc);
    if (c >= rf->nchunks) return c == rf->nchunks && o == 0;
    const ss_block *b = &rf->chunks[c];
    return o <= b->size && o <= ss_le64(b->data - 8); /* the payload's length */
}

/* The block `tag`/`f`/`number` whose payload is at b->data: b->size is the
 * room of the value, its header holds the payload length and the checksum,
 * bound to the key from format version 2 on. */
static int ss_block_sound(const ss_store *s, const ss_block *b, char tag, uint32_t f,
                          uint64_t number) {
    ss_key key;
    ss__key_numbered(&key, tag, f, number);
    /* not ss__block_open(): the message of the first problem must survive */
    const unsigned char *value = b->data - SS_BLOCK_HDR;
    uint64_t len = ss_le64(value + 8);
    return len <= b->size &&
           ss__block_checksum(b->data, len, &key, s->h.format_version) == ss_le64(value);
}

/* As ss_attr_get() checks it, but without touching the error message. */
static int ss_attr_sound(const ss_store *s, const ss_attr_slot *a) {
    ss_key key;
    ss__key_named(&key, SS_KEY_ATTR, a->name);
    if (a->value_size < SS_BLOCK_HDR) return 0;
    uint64_t len = ss_le64(a->value + 8);
    return len <= a->value_size - SS_BLOCK_HDR && len >= SS_ATTR_PREFIX &&
           ss__block_checksum(a->value + SS_BLOCK_HDR, len, &key, s->h.format_version) ==
               ss_le64(a->value);
}

/* The stored lengths (§7.3), if any, against the index just checked. */
static void ss_verify_lengths(ss_verifier *v, uint32_t f) {
    uint64_t bad = 0;
    int rc = ss__lengths_check(v->s, f, &bad);
    if (rc == 0 || rc == SS_ENOTFOUND) return;
    snprintf(v->where, sizeof v->where, "attribute '" SS_LENGTHS_ATTR_PREFIX "%s'",
             v->s->h.fields[f].name);
    ss_problem(v, "stored lengths differ from the index", f, bad, bad,
               bad < v->s->h.count ? bad + 1 : bad);
}

static void ss_verify_field(ss_verifier *v, uint32_t f) {
    const ss_store *s = v->s;
    const ss_rfield *rf = &s->f[f];
    const char *name = s->h.fields[f].name;
    for (uint64_t c = 0; c < rf->nchunks && !v->stop; c++) {
        if (ss_block_sound(s, &rf->chunks[c], SS_KEY_DATA, f, c)) continue;
        uint64_t first, last;
        ss_chunk_examples(s, f, c, &first, &last);
        snprintf(v->where, sizeof v->where, "field '%s' data chunk %llu", name,
                 (unsigned long long)c);
        ss_problem(v, "data chunk checksum mismatch", f, c, first, last);
    }
    if (!rf->sequence) return;
    for (uint64_t g = 0; g < rf->nsegments && !v->stop; g++) {
        if (ss_block_sound(s, &rf->segment_blocks[g], SS_KEY_INDEX, f, g)) continue;
        uint64_t first = g * rf->seg_entries, last = first + rf->seg_entries;
        snprintf(v->where, sizeof v->where, "index segment %llu of field '%s'",
                 (unsigned long long)g, name);
        ss_problem(v, "index segment checksum mismatch", f, g, first,
                   last < s->h.count ? last : s->h.count);
    }
    for (uint64_t i = 0; i <= s->h.count && !v->stop; i++) {
        ss_view view;
        const ss_entry *a = ss_entry_at(rf, i), *b = i < s->h.count ? ss_entry_at(rf, i + 1) : a;
        if (b->start < a->start || b->loc < a->loc || !ss_loc_placed(rf, a->loc) ||
            (i < s->h.count && ss_get(&view, s, f, i) != 0)) {
            snprintf(v->where, sizeof v->where, "index segment %llu of field '%s', entry %llu",
                     (unsigned long long)ss_segment_of(i, rf->seg_entries), name,
                     (unsigned long long)i);
            ss_problem(v, "index entry is inconsistent", f, SS_LOC_CHUNK(a->loc), i,
                       i < s->h.count ? i + 1 : i); /* the sentinel concerns no example */
            return;
        }
    }
    ss_verify_lengths(v, f);
}

/* The header's content digest (§13) against the blocks as they are: it
 * differs when a block, or which block a key leads to, changed after the
 * writer finished although every block matches its own checksum. */
static void ss_verify_content(ss_verifier *v) {
    const ss_store *s = v->s;
    uint64_t digest = 0;
    int rc = ss__content_digest(&digest, s->txn, s->dbi, &s->h);
    if (rc == 0 && digest == s->h.content_digest) return;
    snprintf(v->where, sizeof v->where, "header");
    ss_problem(v,
               rc ? "content digest cannot be computed (a block is shorter than its header)"
                  : "content digest differs from the blocks (changed after the writer finished)",
               SS_FIELD_NONE, 0, 0, 0);
}

int ss_verify(uint64_t *problems, const ss_store *s, ss_verify_fn report, void *ctx) {
    if (problems) *problems = 0;
    if (!s) return ss__fail(SS_EINVAL, "ss_verify: store is NULL");
    if (s->ds) return ss__dataset_verify(problems, s, report, ctx);
    /* The B-trees again, with every overflow page header (open skips those). */
    int rc = ss__lmdb_check_held(s->env, s->txn, s->path, SS_LMDB_CHECK_OVERFLOW);
    if (rc) {
        if (problems) *problems = 1;
        ss_verify_problem p = {
            "LMDB B-tree is damaged (see the error message)", -1, 0, 0, 0, "LMDB pages"};
        if (report) report(ctx, &p);
        return rc;
    }
    ss_verifier v = {s, report, ctx, 0, 0, {0}};
    for (uint32_t f = 0; f < s->h.nfields && !v.stop; f++) ss_verify_field(&v, f);
    for (uint64_t k = 0; k < s->nattrs && !v.stop; k++) {
        if (ss_attr_sound(s, &s->attrs[k])) continue;
        snprintf(v.where, sizeof v.where, "attribute '%s'", s->attrs[k].name);
        ss_problem(&v, "attribute checksum mismatch", SS_FIELD_NONE, k, 0, 0);
    }
    /* after a problem with a block, the digest would restate it */
    if (!v.problems && (s->h.compat_flags & SS_COMPAT_CONTENT)) ss_verify_content(&v);
    if (problems) *problems = v.problems;
    return v.problems ? SS_ECORRUPT : 0;
}
