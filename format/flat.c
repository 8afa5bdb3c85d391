/* SPDX-License-Identifier: BSD-2-Clause */
/* flat.c - a field's examples seen as one continuous stream of rows. */
#include "store.h"

uint64_t ss_flat_size(const ss_store *s, uint32_t field) {
    return s && field < s->h.nfields ? s->h.fields[field].total_rows : 0;
}

int ss_flat_locate(uint64_t *example, uint64_t *offset, const ss_store *s, uint32_t field,
                   uint64_t pos) {
    if (!s || !example || !offset) return ss__fail(SS_EINVAL, "ss_flat_locate: NULL argument");
    if (field >= s->h.nfields || pos >= s->h.fields[field].total_rows)
        return ss__fail(SS_ERANGE, "%s: flat position %llu of field %u is out of range", s->path,
                        (unsigned long long)pos, field);
    const ss_rfield *rf = &s->f[field];
    if (!rf->sequence) {
        *example = pos;
        *offset = 0;
        return 0;
    }
    if (s->ds) return ss__dataset_flat_locate(example, offset, s, field, pos);
    /* The last example whose start is <= pos; later ties are empty examples
     * before it, so taking the last one skips them. */
    uint64_t lo = 0, hi = s->h.count; /* answer in [lo, hi) */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (ss_entry_at(rf, mid)->start <= pos)
            lo = mid;
        else
            hi = mid;
    }
    *example = lo;
    *offset = pos - ss_entry_at(rf, lo)->start;
    return 0;
}

/* Consecutive examples' rows that lie back to back in one chunk: bytes
 * [b0, b1) of chunk `chunk`, copied with one memcpy. `example` is the first
 * of them, named if the run is bad. */
typedef struct flat_run {
    uint64_t chunk, b0, b1, example;
} flat_run;

/* Check a run as ss_get() checks one example (spec §6.2: the chunk exists and
 * the bytes lie inside its payload; with SS_OPEN_VERIFY, the chunk is sound),
 * then copy it to *dst. Every example of the run lies inside it. */
static int flat_flush(unsigned char **dst, const ss_store *s, uint32_t field, const flat_run *r) {
    const ss_rfield *rf = &s->f[field];
    if (r->b1 == r->b0) return 0;
    if (r->chunk >= rf->nchunks || r->b1 > rf->chunks[r->chunk].size)
        return ss__bad_location(s, field, r->example);
    if (rf->verdict &&
        atomic_load_explicit(&rf->verdict[r->chunk], memory_order_relaxed) != SS_CHUNK_SOUND) {
        int rc = ss__chunk_verified(s, field, r->chunk, r->example);
        if (rc) return rc;
    }
    memcpy(*dst, rf->chunks[r->chunk].data + r->b0, r->b1 - r->b0);
    *dst += r->b1 - r->b0;
    return 0;
}

/* What copy_runs() copies: at most `rows` rows and `count` examples; with
 * `whole`, only whole examples, whose lengths go to `lengths` (including that
 * of the first one that does not fit, if any). */
typedef struct flat_want {
    uint64_t rows, count;
    int whole;
    uint64_t *lengths;
} flat_want;

/* The block step of copy_runs(): examples 0..n-1 of entries e[0..n] (one
 * segment) with their lengths into `lengths`, branch-free. Returns their
 * rows if they form one run (starts never decrease, and every example
 * starts where the rows before it end: location - e[0]'s location = rows
 * since e[0] times rb) holding at most `cap` rows; else UINT64_MAX, and the
 * caller walks them one by one. Below `cap`, no product here overflows. */
static uint64_t block_run(uint64_t *lengths, const ss_entry *e, uint64_t n, uint64_t rb,
                          uint64_t cap) {
    uint64_t s0 = e[0].start, l0 = e[0].loc, prev = s0, bad = 0;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t next = e[k + 1].start;
        lengths[k] = next - prev;
        bad |= (uint64_t)(next < prev) | ((e[k].loc - l0) ^ ((prev - s0) * rb));
        prev = next;
    }
    return bad || prev - s0 > cap ? UINT64_MAX : prev - s0;
}

enum { BLOCK = 256 }; /* examples per block step */

/* ss_flat_read() and ss_read_examples() of a sequence field of a plain
 * store, from row `off` of example `ex` on; *got = examples passed. A scan of
 * short examples is bound by the calls and copies per example, so the index
 * is walked in place, once, and the examples that follow each other in a
 * chunk (all of them, as the writer lays them out) are copied as one run. */
static int copy_runs(unsigned char *dst, const ss_store *s, uint32_t field, uint64_t ex,
                     uint64_t off, flat_want w, uint64_t *got) {
    const ss_rfield *rf = &s->f[field];
    uint64_t rb = rf->row_bytes, per = rf->seg_entries, g = ss_segment_of(ex, per),
             r = ex - g * per;
    uint64_t k, at;
    /* Every take below is at most w.rows, so take * rb cannot overflow. */
    if (__builtin_mul_overflow(w.rows, rb, &at))
        return ss__fail(SS_ERANGE, "%s: %llu rows of field %u do not fit in memory", s->path,
                        (unsigned long long)w.rows, field);
    if (w.count > s->h.count - ex) w.count = s->h.count - ex;
    const ss_entry *e = rf->segments[g] + r;
    flat_run run = {0, 0, 0, ex};
    uint64_t one_by_one = 0; /* examples to walk singly after a block failed */
    for (k = 0; k < w.count && (w.whole || w.rows); k++, off = 0) {
        /* Whole examples in blocks (ss_read_examples()): the index walk of
         * short examples costs more than their copy. */
        uint64_t n = w.count - k < BLOCK ? w.count - k : BLOCK;
        if (n > per - 1 - r) n = per - 1 - r;
        if (w.whole && one_by_one == 0 && n >= 16) {
            uint64_t rows = block_run(w.lengths + k, e, n, rb, w.rows), end;
            at = SS_LOC_OFFSET(e->loc);
            if (rows == UINT64_MAX || __builtin_add_overflow(at, rows * rb, &end)) {
                one_by_one = n;
            } else {
                if (!(at == run.b1 && SS_LOC_CHUNK(e->loc) == run.chunk && run.b1 > run.b0)) {
                    int rc = flat_flush(&dst, s, field, &run);
                    if (rc) return rc;
                    run = (flat_run){SS_LOC_CHUNK(e->loc), at, at, ex + k};
                }
                run.b1 = end;
                w.rows -= rows;
                k += n - 1;
                r += n;
                e += n;
                continue;
            }
        }
        if (one_by_one) one_by_one--;
        const ss_entry *next = ++r < per ? e + 1 : rf->segments[++g];
        if (r == per) r = 0;
        uint64_t rows = next->start - e->start, loc = e->loc, end;
        e = next;
        if (__builtin_expect(off > rows, 0)) return ss__bad_location(s, field, ex + k);
        uint64_t take = rows - off;
        if (w.whole) w.lengths[k] = rows;
        if (take > w.rows) {
            if (w.whole) break;
            take = w.rows;
        }
        w.rows -= take;
        at = SS_LOC_OFFSET(loc);
        if (__builtin_expect(off != 0, 0) &&
            (__builtin_mul_overflow(off, rb, &end) || __builtin_add_overflow(at, end, &at)))
            return ss__bad_location(s, field, ex + k);
        if (__builtin_add_overflow(at, take * rb, &end)) return ss__bad_location(s, field, ex + k);
        if (at == run.b1 && SS_LOC_CHUNK(loc) == run.chunk && run.b1 > run.b0) {
            run.b1 = end; /* the common case: right after the previous example */
            continue;
        }
        if (take == 0) continue;
        int rc = flat_flush(&dst, s, field, &run);
        if (rc) return rc;
        run = (flat_run){SS_LOC_CHUNK(loc), at, end, ex + k};
    }
    if (!w.whole && w.rows) return ss__bad_location(s, field, ex + k); /* the index lies */
    *got = k;
    return flat_flush(&dst, s, field, &run);
}

int ss_flat_read(void *buf, const ss_store *s, uint32_t field, uint64_t p, uint64_t q) {
    if (!s || (!buf && q > p)) return ss__fail(SS_EINVAL, "ss_flat_read: NULL argument");
    if (field >= s->h.nfields || p > q || q > s->h.fields[field].total_rows)
        return ss__fail(SS_ERANGE, "%s: flat range [%llu, %llu) of field %u is out of range",
                        s->path, (unsigned long long)p, (unsigned long long)q, field);
    if (p == q) return 0;
    uint64_t example, offset;
    int rc = ss_flat_locate(&example, &offset, s, field, p);
    if (rc == 0 && !s->ds && s->f[field].sequence)
        return copy_runs(buf, s, field, example, offset, (flat_want){q - p, UINT64_MAX, 0, NULL},
                         &example);
    unsigned char *dst = buf;
    while (rc == 0 && p < q) {
        ss_view v;
        if ((rc = ss_get(&v, s, field, example))) break;
        if (offset > v.length) return ss__bad_location(s, field, example);
        uint64_t take = v.length - offset;
        if (take > q - p) take = q - p;
        memcpy(dst, (const unsigned char *)v.data + offset * v.row_bytes, take * v.row_bytes);
        dst += take * v.row_bytes;
        p += take;
        offset = 0;
        example++;
    }
    return rc;
}

/* ss_read_examples() one ss_get() at a time: datasets and fixed fields. */
static int read_each(unsigned char *dst, uint64_t *lengths, uint64_t *got, const ss_store *s,
                     uint32_t field, uint64_t first, uint64_t n, uint64_t cap) {
    uint64_t k = 0;
    for (; k < n; k++) {
        ss_view v;
        int rc = ss_get(&v, s, field, first + k);
        if (rc) return rc;
        lengths[k] = v.length;
        uint64_t bytes = v.length * v.row_bytes;
        if (bytes > cap) break;
        memcpy(dst, v.data, (size_t)bytes);
        dst += bytes;
        cap -= bytes;
    }
    *got = k;
    return 0;
}

int ss_read_examples(uint64_t *got, void *buf, uint64_t *lengths, const ss_store *s, uint32_t field,
                     uint64_t first, uint64_t n, uint64_t cap) {
    if (!got) return ss__fail(SS_EINVAL, "ss_read_examples: NULL argument");
    *got = 0;
    if (!s || (!buf && cap) || (!lengths && n))
        return ss__fail(SS_EINVAL, "ss_read_examples: NULL argument");
    if (field >= s->h.nfields || first > s->h.count || n > s->h.count - first)
        return ss__fail(SS_ERANGE, "%s: examples [%llu, %llu) of field %u out of range", s->path,
                        (unsigned long long)first, (unsigned long long)(first + n), field);
    if (n == 0) return 0;
    uint64_t k = 0;
    int rc = !s->ds && s->f[field].sequence
                 ? copy_runs(buf, s, field, first, 0,
                             (flat_want){cap / s->f[field].row_bytes, n, 1, lengths}, &k)
                 : read_each(buf, lengths, &k, s, field, first, n, cap);
    if (rc == 0) *got = k;
    return rc;
}
