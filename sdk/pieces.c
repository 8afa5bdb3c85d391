/* SPDX-License-Identifier: BSD-2-Clause */
/* pieces.c - the piece splitter and the lane assembler (truncated BPTT). */
#include "internal.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

struct ss_splitter {
    const ss_store *store;
    uint64_t max_len;
    uint32_t nfields;
    uint32_t fields[SS_MAX_FIELDS];
    uint8_t chosen[SS_MAX_FIELDS]; /* 1: field is split */
    ss_piece *pieces;
    uint64_t npieces;
    uint64_t dropped;
};

static int check_fields(ss_splitter *sp, const ss_split_options *o) {
    const ss_store *s = sp->store;
    uint32_t nf = ss_field_count(s);
    ss_field f;
    if (o->fields) {
        if (o->nfields == 0 || o->nfields > SS_MAX_FIELDS)
            return ss__fail(SS_EINVAL, "split: nfields %u must be 1..%d", o->nfields,
                            SS_MAX_FIELDS);
        for (uint32_t k = 0; k < o->nfields; k++) {
            if (o->fields[k] >= nf)
                return ss__fail(SS_ERANGE, "split: field %u out of range (%u fields)", o->fields[k],
                                nf);
            ss_field_info(&f, s, o->fields[k]);
            if (!f.sequence)
                return ss__fail(SS_EINVAL, "split: field '%s' is not a sequence field", f.name);
            if (sp->chosen[o->fields[k]])
                return ss__fail(SS_EINVAL, "split: field '%s' chosen twice", f.name);
            sp->chosen[o->fields[k]] = 1;
            sp->fields[sp->nfields++] = o->fields[k];
        }
    } else {
        for (uint32_t k = 0; k < nf; k++) {
            ss_field_info(&f, s, k);
            if (!f.sequence) continue;
            sp->chosen[k] = 1;
            sp->fields[sp->nfields++] = k;
        }
        if (sp->nfields == 0) return ss__fail(SS_EINVAL, "split: the store has no sequence field");
    }
    return 0;
}

/* Length of `ex` in the chosen fields, which must agree. */
static int example_length(const ss_splitter *sp, uint64_t ex, uint64_t *len) {
    uint64_t L = ss_length(sp->store, sp->fields[0], ex);
    for (uint32_t k = 1; k < sp->nfields; k++) {
        uint64_t L2 = ss_length(sp->store, sp->fields[k], ex);
        if (L2 != L) {
            ss_field a, b;
            ss_field_info(&a, sp->store, sp->fields[0]);
            ss_field_info(&b, sp->store, sp->fields[k]);
            return ss__fail(SS_EINPUT,
                            "split: example %llu: field '%s' has length %llu but '%s' has %llu",
                            (unsigned long long)ex, a.name, (unsigned long long)L, b.name,
                            (unsigned long long)L2);
        }
    }
    *len = L;
    return 0;
}

/* Number of kept pieces of an example of length L. */
static uint64_t kept_pieces(uint64_t L, uint64_t max_len, uint64_t min_len) {
    if (L <= max_len) return L >= min_len ? 1 : 0;
    uint64_t full = L / max_len, rest = L % max_len;
    return full + (rest > 0 && rest >= min_len ? 1 : 0);
}

int ss_splitter_open(ss_splitter **out, const ss_store *s, const ss_split_options *o) {
    *out = NULL;
    if (!s || !o) return ss__fail(SS_EINVAL, "split: NULL store or options");
    if (o->version != SS_SPLIT_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "split: options version %u is not %u", o->version,
                        SS_SPLIT_OPTIONS_VERSION);
    if (o->max_len == 0) return ss__fail(SS_EINVAL, "split: max_len must be >= 1");
    if (o->min_len > o->max_len)
        return ss__fail(SS_EINVAL, "split: min_len %llu > max_len %llu",
                        (unsigned long long)o->min_len, (unsigned long long)o->max_len);
    ss_splitter *sp = calloc(1, sizeof *sp);
    if (!sp) return ss__fail(SS_ENOMEM, "split: out of memory");
    sp->store = s;
    sp->max_len = o->max_len;
    int rc = check_fields(sp, o);
    uint64_t n = o->examples ? o->n_examples : ss_count(s), count = ss_count(s), total = 0;
    uint64_t *lens = rc ? NULL : malloc((n ? n : 1) * sizeof *lens);
    if (!rc && !lens) rc = ss__fail(SS_ENOMEM, "split: out of memory");
    for (uint64_t i = 0; !rc && i < n; i++) {
        uint64_t ex = o->examples ? o->examples[i] : i;
        if (ex >= count)
            rc = ss__fail(SS_ERANGE, "split: example %llu out of range (%llu examples)",
                          (unsigned long long)ex, (unsigned long long)count);
        else
            rc = example_length(sp, ex, &lens[i]);
        if (!rc) total += kept_pieces(lens[i], o->max_len, o->min_len);
    }
    if (!rc && !(sp->pieces = malloc((total ? total : 1) * sizeof *sp->pieces)))
        rc = ss__fail(SS_ENOMEM, "split: out of memory for %llu pieces", (unsigned long long)total);
    for (uint64_t i = 0; !rc && i < n; i++) {
        uint64_t ex = o->examples ? o->examples[i] : i, L = lens[i];
        uint64_t kept = kept_pieces(L, o->max_len, o->min_len);
        if (kept == 0) sp->dropped++;
        for (uint64_t k = 0; k < kept; k++) {
            ss_piece *p = &sp->pieces[sp->npieces++];
            p->example = ex;
            p->t0 = k * o->max_len;
            p->t1 = p->t0 + o->max_len < L ? p->t0 + o->max_len : L;
            p->index = (uint32_t)k;
            p->flags = (L > o->max_len ? SS_PIECE_SPLIT : 0) | (k > 0 ? SS_PIECE_CONT : 0) |
                       (k + 1 < kept ? SS_PIECE_HAS_NEXT : 0);
        }
    }
    free(lens);
    if (rc) {
        ss_splitter_free(sp);
        return rc;
    }
    *out = sp;
    return 0;
}

void ss_splitter_free(ss_splitter *sp) {
    if (!sp) return;
    free(sp->pieces);
    free(sp);
}

uint64_t ss_splitter_count(const ss_splitter *sp) {
    return sp->npieces;
}

const ss_piece *ss_splitter_pieces(const ss_splitter *sp) {
    return sp->pieces;
}

uint64_t ss_splitter_dropped_examples(const ss_splitter *sp) {
    return sp->dropped;
}

int ss_splitter_view(ss_view *out, const ss_splitter *sp, const ss_piece *p, uint32_t field) {
    if (!p) return ss__fail(SS_ERANGE, "split view: NULL piece");
    if (field >= ss_field_count(sp->store))
        return ss__fail(SS_ERANGE, "split view: field %u out of range", field);
    if (sp->chosen[field]) return ss_get_range(out, sp->store, field, p->example, p->t0, p->t1);
    return ss_get(out, sp->store, field, p->example);
}

/* ---------------------------------------------------------- lane assembler */

struct ss_lanes {
    const ss_splitter *sp;
    ss_lanes_options opt;
    uint64_t ngroups;
    uint64_t *group_first; /* [ngroups + 1]: first piece of each example */
    uint64_t *order;       /* [ngroups]: the epoch's order of groups */
    uint64_t next_group;   /* position in order */
    uint64_t *cur;         /* [lanes]: next piece of the lane, or UINT64_MAX */
    uint64_t *end;         /* [lanes]: one past the lane's last piece */
    uint64_t epoch;
    int ended; /* the last batch was the end-of-epoch marker */
    ss_piece *pieces;
    uint8_t *mask;
    uint32_t *lane;
    ss_lane_batch batch;
};

static void lanes_start_epoch(ss_lanes *la, uint64_t epoch) {
    la->epoch = epoch;
    la->next_group = 0;
    la->ended = 0;
    for (uint64_t g = 0; g < la->ngroups; g++) la->order[g] = g;
    if (la->opt.shuffle) {
        ss_rng rng;
        ss__rng_seed(&rng, la->opt.seed, ss__rng_hash(epoch, 0x6c616e6573ull, 0));
        for (uint64_t i = la->ngroups; i > 1; i--) {
            uint64_t j = ss__rng_below(&rng, i), t = la->order[i - 1];
            la->order[i - 1] = la->order[j];
            la->order[j] = t;
        }
    }
    for (uint32_t b = 0; b < la->opt.lanes; b++) la->cur[b] = la->end[b] = UINT64_MAX;
}

int ss_lanes_open(ss_lanes **out, const ss_splitter *sp, const ss_lanes_options *o) {
    *out = NULL;
    if (!sp || !o) return ss__fail(SS_EINVAL, "lanes: NULL splitter or options");
    if (o->version != SS_LANES_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "lanes: options version %u is not %u", o->version,
                        SS_LANES_OPTIONS_VERSION);
    if (o->lanes == 0) return ss__fail(SS_EINVAL, "lanes: lanes must be >= 1");
    ss_lanes *la = calloc(1, sizeof *la);
    if (!la) return ss__fail(SS_ENOMEM, "lanes: out of memory");
    la->sp = sp;
    la->opt = *o;
    uint64_t n = sp->npieces, ng = 0;
    for (uint64_t i = 0; i < n; i++)
        if (i == 0 || !(sp->pieces[i].flags & SS_PIECE_CONT)) ng++;
    la->ngroups = ng;
    la->group_first = malloc((ng + 1) * sizeof *la->group_first);
    la->order = malloc((ng ? ng : 1) * sizeof *la->order);
    la->cur = malloc(o->lanes * sizeof *la->cur);
    la->end = malloc(o->lanes * sizeof *la->end);
    la->pieces = malloc(o->lanes * sizeof *la->pieces);
    la->mask = malloc(o->lanes);
    la->lane = malloc(o->lanes * sizeof *la->lane);
    if (!la->group_first || !la->order || !la->cur || !la->end || !la->pieces || !la->mask ||
        !la->lane) {
        ss_lanes_free(la);
        return ss__fail(SS_ENOMEM, "lanes: out of memory");
    }
    ng = 0;
    for (uint64_t i = 0; i < n; i++)
        if (i == 0 || !(sp->pieces[i].flags & SS_PIECE_CONT)) la->group_first[ng++] = i;
    la->group_first[ng] = n;
    lanes_start_epoch(la, 0);
    *out = la;
    return 0;
}

void ss_lanes_free(ss_lanes *la) {
    if (!la) return;
    free(la->group_first);
    free(la->order);
    free(la->cur);
    free(la->end);
    free(la->pieces);
    free(la->mask);
    free(la->lane);
    free(la);
}

int ss_lanes_set_epoch(ss_lanes *la, uint64_t epoch) {
    lanes_start_epoch(la, epoch);
    return 0;
}

int ss_lanes_next(const ss_lane_batch **out, ss_lanes *la) {
    if (out) *out = NULL;
    if (!out || !la) return ss__fail(SS_EINVAL, "ss_lanes_next: NULL argument");
    if (la->ended) lanes_start_epoch(la, la->epoch + 1);
    uint32_t B = la->opt.lanes, rows = 0, active = 0;
    for (uint32_t b = 0; b < B; b++) {
        if (la->cur[b] == la->end[b] && la->next_group < la->ngroups) {
            uint64_t g = la->order[la->next_group++];
            la->cur[b] = la->group_first[g];
            la->end[b] = la->group_first[g + 1];
        }
        int has = la->cur[b] != la->end[b];
        active += (uint32_t)has;
        if (!has && (la->opt.flags & SS_LANES_SHRINK)) continue;
        la->lane[rows] = b;
        la->mask[rows] = (uint8_t)has;
        if (has)
            la->pieces[rows] = la->sp->pieces[la->cur[b]++];
        else
            memset(&la->pieces[rows], 0, sizeof la->pieces[rows]);
        rows++;
    }
    if (active == 0) { /* the next call starts the next epoch */
        la->ended = 1;
        return ss__fail(SS_ITEROVER, "ss_lanes_next: epoch %llu is over",
                        (unsigned long long)la->epoch);
    }
    la->batch.size = rows;
    la->batch.active = active;
    la->batch.epoch = la->epoch;
    la->batch.pieces = la->pieces;
    la->batch.mask = la->mask;
    la->batch.lane = la->lane;
    *out = &la->batch;
    return 0;
}
