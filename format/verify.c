/* verify.c - recompute every checksum and check the index's consistency. */
#include "lmdb_check.h"
#include "store.h"

#include <xxhash.h>

typedef struct ss_verifier {
    const ss_store *s;
    ss_verify_fn report;
    void *ctx;
    uint64_t problems;
    int stop;
} ss_verifier;

static void ss_problem(ss_verifier *v, const char *what, int field, uint64_t chunk, uint64_t first,
                       uint64_t last) {
    if (v->problems++ == 0) {
        if (field >= 0)
            ss__fail(SS_ECORRUPT, "%s: field '%s' chunk %llu (examples %llu to %llu): %s",
                     v->s->path, v->s->h.fields[field].name, (unsigned long long)chunk,
                     (unsigned long long)first, (unsigned long long)(last ? last - 1 : 0), what);
        else
            ss__fail(SS_ECORRUPT, "%s: %s", v->s->path, what);
    }
    ss_verify_problem p = {what, field, chunk, first, last};
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

/* b->size is the room of the value; the header holds the payload length. */
static int ss_block_sound(const ss_block *b) {
    const unsigned char *value = b->data - SS_BLOCK_HDR;
    uint64_t len = ss_le64(value + 8);
    return len <= b->size && XXH3_64bits(b->data, len) == ss_le64(value);
}

static void ss_verify_field(ss_verifier *v, uint32_t f) {
    const ss_store *s = v->s;
    const ss_rfield *rf = &s->f[f];
    for (uint64_t c = 0; c < rf->nchunks && !v->stop; c++) {
        if (ss_block_sound(&rf->chunks[c])) continue;
        uint64_t first, last;
        ss_chunk_examples(s, f, c, &first, &last);
        ss_problem(v, "data chunk checksum mismatch", (int)f, c, first, last);
    }
    if (!rf->sequence) return;
    for (uint64_t g = 0; g < rf->nsegments && !v->stop; g++) {
        ss_block b = rf->segment_blocks[g];
        if (!ss_block_sound(&b)) {
            uint64_t first = g * SS_SEGMENT_ENTRIES, last = first + SS_SEGMENT_ENTRIES;
            ss_problem(v, "index segment checksum mismatch", (int)f, g, first,
                       last < s->h.count ? last : s->h.count);
        }
    }
    for (uint64_t i = 0; i < s->h.count && !v->stop; i++) {
        ss_view view;
        const ss_entry *a = ss_entry_at(rf, i), *b = ss_entry_at(rf, i + 1);
        if (b->start < a->start || b->loc < a->loc || ss_get(s, f, i, &view) != 0) {
            ss_problem(v, "index entry is inconsistent", (int)f, SS_LOC_CHUNK(a->loc), i, i + 1);
            return;
        }
    }
}

int ss_verify(const ss_store *s, ss_verify_fn report, void *ctx, uint64_t *problems) {
    if (problems) *problems = 0;
    if (!s) return ss__fail(SS_EINVAL, "ss_verify: store is NULL");
    /* The B-trees again, with every overflow page header (open skips those). */
    int rc = ss_lmdb_check_held(s->env, s->txn, s->path, SS_LMDB_CHECK_OVERFLOW);
    if (rc) {
        if (problems) *problems = 1;
        ss_verify_problem p = {"LMDB B-tree is damaged (see the error message)", -1, 0, 0, 0};
        if (report) report(ctx, &p);
        return rc;
    }
    ss_verifier v = {s, report, ctx, 0, 0};
    for (uint32_t f = 0; f < s->h.nfields && !v.stop; f++) ss_verify_field(&v, f);
    for (uint64_t k = 0; k < ss_attr_count(s) && !v.stop; k++) {
        ss_attr a;
        if (ss_attr_at(s, k, &a)) ss_problem(&v, "attribute checksum mismatch", -1, k, 0, 0);
    }
    if (problems) *problems = v.problems;
    return v.problems ? SS_ECORRUPT : 0;
}
