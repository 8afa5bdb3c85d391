/* SPDX-License-Identifier: BSD-2-Clause */
/* select.c - selections (sorted disjoint index ranges), k-fold splits, length
 * filters and named splits stored as attributes. */
#include "internal.h"
#include "cast.h"
#include "layout.h" /* ss_le64, ss_put_le64 */
#include "rng.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ss_selection {
    uint64_t total; /* examples in the store it was made for */
    uint64_t count; /* selected examples */
    size_t nranges;
    ss_range *ranges; /* sorted, disjoint, non-adjacent, non-empty */
    uint64_t *before; /* before[i]: selected examples in ranges[0..i) */
};

/* ------------------------------------------------------------ range lists */

/* A growable list of ranges that merges a range adjacent to the last one. */
typedef struct range_list {
    ss_range *r;
    size_t n, cap;
} range_list;

static int range_list_push(range_list *l, uint64_t start, uint64_t end) {
    if (start == end) return 0;
    if (l->n && l->r[l->n - 1].end == start) {
        l->r[l->n - 1].end = end;
        return 0;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        ss_range *grown = realloc(l->r, cap * sizeof *grown);
        if (!grown) return ss__fail(SS_ENOMEM, "selection: out of memory");
        l->r = grown;
        l->cap = cap;
    }
    l->r[l->n].start = start;
    l->r[l->n].end = end;
    l->n++;
    return 0;
}

/* Make a selection owning the ranges of `l` (sorted, disjoint, merged); or,
 * when `rc` (an earlier failure building `l`) is not 0, free `l` and return rc. */
static int selection_from_list(ss_selection **out, range_list *l, uint64_t total, int rc) {
    *out = NULL;
    if (rc) {
        free(l->r);
        l->r = NULL;
        return rc;
    }
    ss_selection *sel = calloc(1, sizeof *sel);
    uint64_t *before = malloc((l->n ? l->n : 1) * sizeof *before);
    if (!l->r) l->r = malloc(sizeof *l->r); /* ranges are never NULL, even when empty */
    if (!sel || !before || !l->r) {
        free(sel);
        free(before);
        free(l->r);
        l->r = NULL;
        return ss__fail(SS_ENOMEM, "selection: out of memory");
    }
    uint64_t c = 0;
    for (size_t i = 0; i < l->n; i++) {
        before[i] = c;
        c += l->r[i].end - l->r[i].start;
    }
    sel->total = total;
    sel->count = c;
    sel->nranges = l->n;
    sel->ranges = l->r;
    sel->before = before;
    l->r = NULL;
    *out = sel;
    return 0;
}

static int range_cmp(const void *a, const void *b) {
    const ss_range *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* ------------------------------------------------------------ basic calls */

int ss_selection_all(ss_selection **out, uint64_t total) {
    ss_range r = {0, total};
    return ss_selection_create(out, &r, 1, total);
}

int ss_selection_create(ss_selection **out, const ss_range *ranges, size_t nranges,
                        uint64_t total) {
    if (!out) return ss__fail(SS_EINVAL, "ss_selection_create: out is NULL");
    *out = NULL;
    if (nranges && !ranges) return ss__fail(SS_EINVAL, "ss_selection_create: ranges is NULL");
    ss_range *tmp = malloc((nranges ? nranges : 1) * sizeof *tmp);
    if (!tmp) return ss__fail(SS_ENOMEM, "selection: out of memory");
    size_t m = 0;
    for (size_t i = 0; i < nranges; i++) {
        if (ranges[i].start > ranges[i].end) {
            free(tmp);
            return ss__fail(SS_EINVAL, "selection: range %" PRIu64 ":%" PRIu64 " is inverted",
                            ranges[i].start, ranges[i].end);
        }
        if (ranges[i].end > total) {
            free(tmp);
            return ss__fail(SS_ERANGE,
                            "selection: range %" PRIu64 ":%" PRIu64
                            " ends beyond the store's %" PRIu64 " examples",
                            ranges[i].start, ranges[i].end, total);
        }
        if (ranges[i].start < ranges[i].end) tmp[m++] = ranges[i];
    }
    qsort(tmp, m, sizeof *tmp, range_cmp);
    range_list l = {0};
    int rc = 0;
    for (size_t i = 0; i < m && !rc; i++) {
        if (i && tmp[i].start < tmp[i - 1].end) {
            rc = ss__fail(SS_EINVAL,
                          "selection: ranges %" PRIu64 ":%" PRIu64 " and %" PRIu64 ":%" PRIu64
                          " overlap",
                          tmp[i - 1].start, tmp[i - 1].end, tmp[i].start, tmp[i].end);
            break;
        }
        rc = range_list_push(&l, tmp[i].start, tmp[i].end);
    }
    free(tmp);
    return selection_from_list(out, &l, total, rc);
}

void ss_selection_free(ss_selection *sel) {
    if (!sel) return;
    free(sel->ranges);
    free(sel->before);
    free(sel);
}

uint64_t ss_selection_count(const ss_selection *sel) {
    return sel ? sel->count : 0;
}

uint64_t ss_selection_total(const ss_selection *sel) {
    return sel ? sel->total : 0;
}

size_t ss_selection_range_count(const ss_selection *sel) {
    return sel ? sel->nranges : 0;
}

const ss_range *ss_selection_ranges(const ss_selection *sel) {
    return sel ? sel->ranges : NULL;
}

int ss_selection_index(uint64_t *out, const ss_selection *sel, uint64_t i) {
    if (!sel || !out) return ss__fail(SS_EINVAL, "ss_selection_index: NULL argument");
    if (i >= sel->count)
        return ss__fail(SS_ERANGE, "selection: position %" PRIu64 " >= count %" PRIu64, i,
                        sel->count);
    /* The last range whose `before` is <= i. */
    size_t lo = 0, hi = sel->nranges;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (sel->before[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    *out = sel->ranges[lo].start + (i - sel->before[lo]);
    return 0;
}

int ss_selection_contains(const ss_selection *sel, uint64_t index) {
    if (!sel || !sel->nranges) return 0;
    size_t lo = 0, hi = sel->nranges; /* first range with end > index */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sel->ranges[mid].end <= index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sel->nranges && sel->ranges[lo].start <= index;
}

int ss_selection_format(char *buf, size_t cap, size_t *len, const ss_selection *sel) {
    if (!sel) return ss__fail(SS_EINVAL, "ss_selection_format: selection is NULL");
    if (!buf && cap) return ss__fail(SS_EINVAL, "ss_selection_format: buf is NULL, cap %zu", cap);
    size_t need = 0;
    for (size_t i = 0; i < sel->nranges; i++) {
        char tmp[64];
        int k = snprintf(tmp, sizeof tmp, "%s%" PRIu64 ":%" PRIu64, i ? "," : "",
                         sel->ranges[i].start, sel->ranges[i].end);
        if (buf && need + (size_t)k < cap) memcpy(buf + need, tmp, (size_t)k);
        need += (size_t)k;
    }
    if (len) *len = need;
    if (need + 1 > cap) {
        if (buf && cap) buf[0] = '\0';
        return ss__fail(SS_EBUFS, "selection: text needs %zu bytes, buffer has %zu", need + 1,
                        cap);
    }
    buf[need] = '\0';
    return 0;
}

/* ------------------------------------------------------------------ parse */

/* Parse an optionally signed decimal in [s, e) (spaces trimmed). Empty text
 * gives *present = 0. */
static int parse_bound(const char *s, const char *e, int *present, int *neg, uint64_t *v) {
    while (s < e && isspace((unsigned char)*s)) s++;
    while (e > s && isspace((unsigned char)e[-1])) e--;
    *present = s < e;
    *neg = 0;
    *v = 0;
    if (!*present) return 0;
    if (*s == '-' || *s == '+') *neg = *s++ == '-';
    if (s == e) return -1;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9') return -1;
        uint64_t d = (uint64_t)(*s - '0');
        if (*v > (UINT64_MAX - d) / 10) return -1;
        *v = *v * 10 + d;
    }
    return 0;
}

/* Resolve a bound against total: negative counts from the end. */
static int resolve_bound(int neg, uint64_t v, uint64_t total, uint64_t *out) {
    if (neg) {
        if (v > total) return -1;
        *out = total - v;
    } else {
        if (v > total) return -1;
        *out = v;
    }
    return 0;
}

int ss_selection_parse(ss_selection **out, const char *text, uint64_t total) {
    if (!out) return ss__fail(SS_EINVAL, "ss_selection_parse: out is NULL");
    *out = NULL;
    if (!text) return ss__fail(SS_EINVAL, "ss_selection_parse: text is NULL");
    const char *t = text;
    while (isspace((unsigned char)*t)) t++;
    if (strcmp(t, "all") == 0) return ss_selection_all(out, total);
    size_t cap = 1;
    for (const char *p = text; *p; p++) cap += *p == ',';
    ss_range *r = malloc(cap * sizeof *r);
    if (!r) return ss__fail(SS_ENOMEM, "selection: out of memory");
    size_t n = 0;
    int rc = 0;
    int only_space = 1;
    for (const char *p = text; *p; p++) only_space &= isspace((unsigned char)*p) != 0;
    const char *s = text;
    while (!only_space) {
        const char *e = strchr(s, ',');
        if (!e) e = s + strlen(s);
        int len = (int)(e - s);
        const char *colon = memchr(s, ':', (size_t)(e - s));
        int has_a, neg_a, has_b = 0, neg_b = 0;
        uint64_t a, b = 0;
        if (parse_bound(s, colon ? colon : e, &has_a, &neg_a, &a) ||
            (colon && parse_bound(colon + 1, e, &has_b, &neg_b, &b)) || (!colon && !has_a)) {
            rc = ss__fail(SS_EINVAL, "selection: cannot parse range '%.*s' in '%s'", len, s, text);
            break;
        }
        uint64_t start = 0, end = total;
        if (has_a && resolve_bound(neg_a, a, total, &start)) {
            rc = ss__fail(SS_ERANGE,
                          "selection: range '%.*s' is outside the store's %" PRIu64 " examples",
                          len, s, total);
            break;
        }
        if (!colon) {
            if (start >= total) {
                rc = ss__fail(SS_ERANGE,
                              "selection: index '%.*s' is outside the store's %" PRIu64 " examples",
                              len, s, total);
                break;
            }
            end = start + 1;
        } else if (has_b && resolve_bound(neg_b, b, total, &end)) {
            rc = ss__fail(SS_ERANGE,
                          "selection: range '%.*s' is outside the store's %" PRIu64 " examples",
                          len, s, total);
            break;
        }
        if (start > end) {
            rc = ss__fail(SS_EINVAL,
                          "selection: range '%.*s' is inverted (%" PRIu64 " > %" PRIu64 ")", len, s,
                          start, end);
            break;
        }
        r[n].start = start;
        r[n].end = end;
        n++;
        if (!*e) break;
        s = e + 1;
    }
    if (!rc) rc = ss_selection_create(out, r, n, total);
    free(r);
    return rc;
}

/* ------------------------------------------------------- set operations */

enum { OP_UNION, OP_INTERSECT, OP_MINUS };

/* Whether position x is in the result, given membership in a and b. */
static int op_keeps(int op, int in_a, int in_b) {
    return op == OP_UNION ? in_a || in_b : op == OP_INTERSECT ? in_a && in_b : in_a && !in_b;
}

/* Sweep the range boundaries of a and b in order: between two consecutive
 * boundaries membership in a and b is constant. O(ranges of a + b). */
static int set_op(ss_selection **out, const ss_selection *a, const ss_selection *b, int op,
                  const char *what) {
    if (!out) return ss__fail(SS_EINVAL, "%s: out is NULL", what);
    *out = NULL;
    if (!a || !b) return ss__fail(SS_EINVAL, "%s: NULL selection", what);
    if (a->total != b->total)
        return ss__fail(SS_EINVAL,
                        "%s: the selections were made for %" PRIu64 " and %" PRIu64 " examples",
                        what, a->total, b->total);
    range_list l = {0};
    size_t i = 0, j = 0;
    uint64_t x = 0;
    int rc = 0;
    while (!rc && (i < a->nranges || j < b->nranges)) {
        int in_a = i < a->nranges && a->ranges[i].start <= x;
        int in_b = j < b->nranges && b->ranges[j].start <= x;
        /* the next boundary after x */
        uint64_t next = UINT64_MAX;
        if (i < a->nranges) next = in_a ? a->ranges[i].end : a->ranges[i].start;
        if (j < b->nranges) {
            uint64_t nb = in_b ? b->ranges[j].end : b->ranges[j].start;
            if (nb < next) next = nb;
        }
        if (op_keeps(op, in_a, in_b)) rc = range_list_push(&l, x, next);
        x = next;
        if (i < a->nranges && a->ranges[i].end <= x) i++;
        if (j < b->nranges && b->ranges[j].end <= x) j++;
    }
    return selection_from_list(out, &l, a->total, rc);
}

int ss_selection_union(ss_selection **out, const ss_selection *a, const ss_selection *b) {
    return set_op(out, a, b, OP_UNION, "ss_selection_union");
}

int ss_selection_intersect(ss_selection **out, const ss_selection *a, const ss_selection *b) {
    return set_op(out, a, b, OP_INTERSECT, "ss_selection_intersect");
}

int ss_selection_minus(ss_selection **out, const ss_selection *a, const ss_selection *b) {
    return set_op(out, a, b, OP_MINUS, "ss_selection_minus");
}

/* ------------------------------------------------------------------ folds */

/* Append the store indices of positions [a, b) of `sel` to `l`. */
static int push_positions(range_list *l, const ss_selection *sel, uint64_t a, uint64_t b) {
    for (size_t i = 0; i < sel->nranges && a < b; i++) {
        uint64_t p0 = sel->before[i], len = sel->ranges[i].end - sel->ranges[i].start;
        if (p0 + len <= a) continue;
        if (p0 >= b) break;
        uint64_t lo = a > p0 ? a : p0, hi = b < p0 + len ? b : p0 + len;
        int rc =
            range_list_push(l, sel->ranges[i].start + (lo - p0), sel->ranges[i].start + (hi - p0));
        if (rc) return rc;
    }
    return 0;
}

static int kfold_shuffled(range_list *tr, range_list *va, const ss_selection *sel, uint64_t a,
                          uint64_t b, uint64_t seed) {
    uint64_t n = sel->count;
    uint64_t *perm = malloc(n * sizeof *perm);
    unsigned char *in_valid = calloc(n, 1);
    if (!perm || !in_valid) {
        free(perm);
        free(in_valid);
        return ss__fail(SS_ENOMEM, "kfold: out of memory for %" PRIu64 " examples", n);
    }
    ss_rng r;
    ss__rng_seed(&r, seed, 0x6b666f6c64ull); /* "kfold" */
    for (uint64_t i = 0; i < n; i++) perm[i] = i;
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = ss__rng_below(&r, i);
        uint64_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    for (uint64_t i = a; i < b; i++) in_valid[perm[i]] = 1;
    free(perm);
    int rc = 0;
    uint64_t pos = 0;
    for (size_t i = 0; i < sel->nranges && !rc; i++)
        for (uint64_t x = sel->ranges[i].start; x < sel->ranges[i].end && !rc; x++, pos++)
            rc = range_list_push(in_valid[pos] ? va : tr, x, x + 1);
    free(in_valid);
    return rc;
}

/* An item to sort: a key (group id or label), a tie-break and a position. */
typedef struct key_item {
    int64_t key;
    uint64_t tie, pos;
} key_item;

static int key_cmp(const void *x, const void *y) {
    const key_item *a = x, *b = y;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    if (a->tie != b->tie) return a->tie < b->tie ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Items of the selection's positions keyed by `keys`, tie-broken by position
 * or, with shuffle, by a seeded permutation; sorted. */
static key_item *sorted_items(const int64_t *keys, uint64_t n, int shuffle, uint64_t seed) {
    key_item *it = malloc((n ? n : 1) * sizeof *it);
    if (!it) return NULL;
    for (uint64_t i = 0; i < n; i++) it[i] = (key_item){keys[i], i, i};
    if (shuffle) {
        ss_rng r;
        ss__rng_seed(&r, seed, 0x6b666f6c64ull); /* "kfold" */
        for (uint64_t i = n; i > 1; i--) {
            uint64_t j = ss__rng_below(&r, i), t = it[i - 1].tie;
            it[i - 1].tie = it[j].tie;
            it[j].tie = t;
        }
    }
    qsort(it, (size_t)n, sizeof *it, key_cmp);
    return it;
}

/* Stratified: the positions sorted by (label, tie) are dealt round-robin:
 * the j-th goes to fold j mod k, so each label's examples are spread over
 * the folds within one of each other. */
static int assign_strata(uint32_t *fold_of, const int64_t *labels, uint64_t n, uint32_t k,
                         int shuffle, uint64_t seed) {
    key_item *it = sorted_items(labels, n, shuffle, seed);
    if (!it) return ss__fail(SS_ENOMEM, "kfold: out of memory for %" PRIu64 " examples", n);
    for (uint64_t j = 0; j < n; j++) fold_of[it[j].pos] = (uint32_t)(j % k);
    free(it);
    return 0;
}

/* Grouped: groups in order of decreasing size (ties: the group whose first
 * item sorts first), each to the fold with the fewest examples so far (ties:
 * the lowest fold), as scikit-learn's GroupKFold. */
static int assign_groups(uint32_t *fold_of, const int64_t *groups, uint64_t n, uint32_t k,
                         int shuffle, uint64_t seed) {
    key_item *it = sorted_items(groups, n, shuffle, seed);
    key_item *g = malloc((n ? n : 1) * sizeof *g); /* per group: -size, first tie, start */
    uint64_t *load = calloc(k, sizeof *load);
    int rc = 0;
    if (!it || !g || !load) rc = ss__fail(SS_ENOMEM, "kfold: out of memory");
    uint64_t ng = 0;
    for (uint64_t i = 0; !rc && i < n; i++) {
        if (i == 0 || it[i].key != it[i - 1].key) g[ng++] = (key_item){0, it[i].tie, i};
        g[ng - 1].key--; /* minus the size: larger groups sort first */
    }
    if (!rc && ng < k)
        rc = ss__fail(SS_EINVAL, "kfold: %" PRIu64 " groups cannot fill k = %u folds", ng, k);
    if (!rc) qsort(g, (size_t)ng, sizeof *g, key_cmp);
    for (uint64_t q = 0; !rc && q < ng; q++) {
        uint32_t best = 0;
        for (uint32_t f = 1; f < k; f++)
            if (load[f] < load[best]) best = f;
        uint64_t size = (uint64_t)-g[q].key;
        load[best] += size;
        for (uint64_t i = g[q].pos; i < g[q].pos + size; i++) fold_of[it[i].pos] = best;
    }
    free(it);
    free(g);
    free(load);
    return rc;
}

/* Push every selected example to train or valid by its fold. */
static int push_folds(range_list *tr, range_list *va, const ss_selection *sel,
                      const uint32_t *fold_of, uint32_t fold) {
    int rc = 0;
    uint64_t pos = 0;
    for (size_t i = 0; i < sel->nranges && !rc; i++)
        for (uint64_t x = sel->ranges[i].start; x < sel->ranges[i].end && !rc; x++, pos++)
            rc = range_list_push(fold_of[pos] == fold ? va : tr, x, x + 1);
    return rc;
}

static int kfold_check(const ss_selection *sel, uint32_t k, uint32_t fold,
                       const ss_kfold_options *o) {
    if (!sel) return ss__fail(SS_EINVAL, "kfold: selection is NULL");
    if (o && o->version != SS_KFOLD_OPTIONS_VERSION && o->version != 1)
        return ss__fail(SS_EINVAL, "kfold: unknown options version %u", o->version);
    if (k < 2) return ss__fail(SS_EINVAL, "kfold: k = %u, need at least 2 folds", k);
    if (fold >= k) return ss__fail(SS_EINVAL, "kfold: fold %u out of range for k = %u", fold, k);
    uint64_t n = sel->count;
    if (k > n)
        return ss__fail(SS_EINVAL, "kfold: k = %u exceeds the %" PRIu64 " selected examples", k, n);
    if (!o || o->version < 2) return 0;
    if (o->groups && o->labels)
        return ss__fail(SS_EINVAL, "kfold: groups and labels together are not supported");
    if (o->strict && (o->groups || o->labels))
        return ss__fail(SS_EINVAL, "kfold: strict (equal folds) cannot be promised with %s",
                        o->groups ? "groups" : "labels");
    if (o->strict && n % k)
        return ss__fail(SS_EINVAL,
                        "kfold: strict: %" PRIu64 " examples do not split into %u equal folds", n,
                        k);
    return 0;
}

int ss_selection_kfold(ss_selection **train, ss_selection **valid, const ss_selection *sel,
                       uint32_t k, uint32_t fold, const ss_kfold_options *options) {
    if (train) *train = NULL;
    if (valid) *valid = NULL;
    int rc = kfold_check(sel, k, fold, options);
    if (rc) return rc;
    uint64_t n = sel->count;
    /* floor(n * i / k) without overflow: n * i may exceed 64 bits. */
    __extension__ typedef unsigned __int128 u128;
    uint64_t a = (uint64_t)((u128)n * fold / k), b = (uint64_t)((u128)n * (fold + 1) / k);
    const int64_t *groups = options && options->version >= 2 ? options->groups : NULL;
    const int64_t *labels = options && options->version >= 2 ? options->labels : NULL;
    int shuffle = options && options->shuffle;
    uint64_t seed = options ? options->seed : 0;
    range_list tr = {0}, va = {0};
    if (groups || labels) {
        uint32_t *fold_of = malloc((n ? n : 1) * sizeof *fold_of);
        rc = fold_of ? 0 : ss__fail(SS_ENOMEM, "kfold: out of memory");
        if (!rc && groups) rc = assign_groups(fold_of, groups, n, k, shuffle, seed);
        if (!rc && labels) rc = assign_strata(fold_of, labels, n, k, shuffle, seed);
        if (!rc) rc = push_folds(&tr, &va, sel, fold_of, fold);
        free(fold_of);
    } else if (shuffle) {
        rc = kfold_shuffled(&tr, &va, sel, a, b, seed);
    } else {
        rc = push_positions(&tr, sel, 0, a);
        if (!rc) rc = push_positions(&va, sel, a, b);
        if (!rc) rc = push_positions(&tr, sel, b, n);
    }
    ss_selection *t = NULL, *v = NULL;
    if (!rc) rc = selection_from_list(&t, &tr, sel->total, 0);
    if (!rc) rc = selection_from_list(&v, &va, sel->total, 0);
    free(tr.r);
    free(va.r);
    if (rc) {
        ss_selection_free(t);
        ss_selection_free(v);
        return rc;
    }
    if (train)
        *train = t;
    else
        ss_selection_free(t);
    if (valid)
        *valid = v;
    else
        ss_selection_free(v);
    return 0;
}

/* ---------------------------------------------------------- length filter */

int ss_selection_filter_length(ss_selection **out, const ss_store *store, const ss_selection *sel,
                               const uint32_t *fields, size_t nfields, uint64_t min_len,
                               uint64_t max_len) {
    if (!out) return ss__fail(SS_EINVAL, "filter: out is NULL");
    *out = NULL;
    if (!sel || !store) return ss__fail(SS_EINVAL, "filter: NULL selection or store");
    if (!fields || nfields == 0) return ss__fail(SS_EINVAL, "filter: no fields given");
    if (max_len == 0) max_len = UINT64_MAX;
    if (min_len > max_len)
        return ss__fail(SS_EINVAL, "filter: min_len %" PRIu64 " > max_len %" PRIu64, min_len,
                        max_len);
    if (sel->total != ss_count(store))
        return ss__fail(SS_EINVAL,
                        "filter: selection made for %" PRIu64 " examples, store has %" PRIu64,
                        sel->total, ss_count(store));
    uint32_t nf = ss_field_count(store);
    for (size_t f = 0; f < nfields; f++)
        if (fields[f] >= nf)
            return ss__fail(SS_ERANGE, "filter: field %u does not exist (the store has %u)",
                            fields[f], nf);
    enum { CHUNK = 4096 };
    uint64_t *len = malloc(CHUNK * sizeof *len);
    unsigned char *keep = malloc(CHUNK);
    if (!len || !keep) {
        free(len);
        free(keep);
        return ss__fail(SS_ENOMEM, "filter: out of memory");
    }
    range_list l = {0};
    int rc = 0;
    for (size_t i = 0; i < sel->nranges && !rc; i++) {
        for (uint64_t x = sel->ranges[i].start; x < sel->ranges[i].end && !rc; x += CHUNK) {
            uint64_t m = sel->ranges[i].end - x < CHUNK ? sel->ranges[i].end - x : CHUNK;
            memset(keep, 1, (size_t)m);
            for (size_t f = 0; f < nfields && !rc; f++) {
                rc = ss_lengths(len, store, fields[f], x, m);
                for (uint64_t j = 0; j < m && !rc; j++)
                    if (len[j] < min_len || len[j] > max_len) keep[j] = 0;
            }
            for (uint64_t j = 0; j < m && !rc; j++)
                if (keep[j]) rc = range_list_push(&l, x + j, x + j + 1);
        }
    }
    free(len);
    free(keep);
    return selection_from_list(out, &l, sel->total, rc);
}

/* ------------------------------------------------------------ named splits */

/* Build "ss.split.<name>" into buf after checking the name. */
static int split_attr_name(char *buf, size_t cap, const char *name) {
    size_t plen = strlen(SS_SPLIT_ATTR_PREFIX);
    if (!name || !*name) return ss__fail(SS_EINVAL, "split: empty name");
    size_t n = strlen(name);
    if (plen + n > SS_MAX_ATTR_NAME || plen + n + 1 > cap)
        return ss__fail(SS_EINVAL, "split '%.40s...': name longer than %zu bytes", name,
                        (size_t)SS_MAX_ATTR_NAME - plen);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] <= 0x20 || (unsigned char)name[i] >= 0x7f)
            return ss__fail(SS_EINVAL,
                            "split '%s': names may hold only printable ASCII without spaces", name);
    memcpy(buf, SS_SPLIT_ATTR_PREFIX, plen);
    memcpy(buf + plen, name, n + 1);
    return 0;
}

int ss_split_load(ss_selection **out, const ss_store *store, const char *name) {
    if (!out) return ss__fail(SS_EINVAL, "ss_split_load: out is NULL");
    *out = NULL;
    if (!store) return ss__fail(SS_EINVAL, "ss_split_load: store is NULL");
    char key[SS_MAX_ATTR_NAME + 1];
    int rc = split_attr_name(key, sizeof key, name);
    if (rc) return rc;
    ss_attr a;
    rc = ss_attr_get(&a, store, key);
    if (rc == SS_ENOTFOUND) return ss__fail(SS_ENOTFOUND, "no split named '%s'", name);
    if (rc) return rc;
    if (a.type != SS_U64 || a.size % 16)
        return ss__fail(SS_ECORRUPT, "split '%s': payload is not pairs of u64 (%" PRIu64 " bytes)",
                        name, a.size);
    size_t n = (size_t)(a.size / 16);
    const unsigned char *p = a.data;
    uint64_t total = ss_count(store);
    range_list l = {0};
    uint64_t prev_end = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        uint64_t s = ss_le64(p + 16 * i), e = ss_le64(p + 16 * i + 8);
        if (s >= e || e > total || (i && s < prev_end))
            rc = ss__fail(SS_ECORRUPT,
                          "split '%s': range %zu (%" PRIu64 ":%" PRIu64
                          ") is empty, unsorted or beyond the store's %" PRIu64 " examples",
                          name, i, s, e, total);
        else
            rc = range_list_push(&l, s, e);
        prev_end = e;
    }
    return selection_from_list(out, &l, total, rc);
}

int ss_split_set(ss_writer *w, const char *name, const ss_selection *sel) {
    if (!w || !sel) return ss__fail(SS_EINVAL, "ss_split_set: NULL writer or selection");
    char key[SS_MAX_ATTR_NAME + 1];
    int rc = split_attr_name(key, sizeof key, name);
    if (rc) return rc;
    size_t bytes = sel->nranges * 16;
    unsigned char *buf = malloc(bytes ? bytes : 1);
    if (!buf) return ss__fail(SS_ENOMEM, "split '%s': out of memory", name);
    for (size_t i = 0; i < sel->nranges; i++) {
        ss_put_le64(buf + 16 * i, sel->ranges[i].start);
        ss_put_le64(buf + 16 * i + 8, sel->ranges[i].end);
    }
    rc = ss_writer_set_attr(w, key, SS_U64, buf, bytes);
    free(buf);
    return rc;
}

int ss_split_save(const char *path, const char *name, const ss_selection *sel) {
    if (!path || !sel) return ss__fail(SS_EINVAL, "ss_split_save: NULL path or selection");
    char key[SS_MAX_ATTR_NAME + 1];
    int rc = split_attr_name(key, sizeof key, name);
    if (rc) return rc;
    ss_writer *w = NULL;
    rc = ss_sections_writer_open(&w, path); /* a dataset's: its sections store */
    if (rc) return rc;
    uint64_t count;
    if ((rc = ss__sections_count(&count, path, w))) {
        ss_writer_free(w);
        return rc;
    }
    if (sel->nranges && sel->ranges[sel->nranges - 1].end > count)
        rc = ss__fail(SS_ERANGE,
                      "split '%s': range ends at %" PRIu64 ", beyond the store's %" PRIu64
                      " examples",
                      name, sel->ranges[sel->nranges - 1].end, count);
    if (!rc) rc = ss_split_set(w, name, sel);
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    return rc;
}

/* ------------------------------------------------- per-example int values */

static int int_dtype(ss_dtype d) {
    return d >= SS_U8 && d <= SS_I64;
}

int ss_selection_field_values(int64_t *out, const ss_store *store, const ss_selection *sel,
                              uint32_t field) {
    if (!store || !sel || (!out && sel->count))
        return ss__fail(SS_EINVAL, "ss_selection_field_values: NULL argument");
    if (sel->total != ss_count(store))
        return ss__fail(SS_EINVAL,
                        "field values: the selection was made for %" PRIu64
                        " examples, the store has %" PRIu64,
                        sel->total, ss_count(store));
    ss_field f;
    int rc = ss_field_info(&f, store, field);
    if (rc) return rc;
    uint64_t row = 1;
    for (uint32_t d = 0; d < f.ndim; d++) row *= f.dims[d];
    if (f.sequence || row != 1 || !int_dtype(f.dtype))
        return ss__fail(SS_EINVAL,
                        "field values: field '%s' is not a fixed field of one integer element",
                        f.name);
    uint64_t pos = 0;
    for (size_t i = 0; i < sel->nranges; i++)
        for (uint64_t x = sel->ranges[i].start; x < sel->ranges[i].end; x++, pos++) {
            ss_view v;
            rc = ss_get(&v, store, field, x);
            if (rc) return ss__context(rc, "field values: field '%s'", f.name);
            ss__cast(&out[pos], SS_I64, v.data, f.dtype, 1, 1, NULL);
        }
    return 0;
}

int ss_selection_attr_values(int64_t *out, const ss_store *store, const ss_selection *sel,
                             const char *name) {
    if (!store || !sel || !name || (!out && sel->count))
        return ss__fail(SS_EINVAL, "ss_selection_attr_values: NULL argument");
    uint64_t count = ss_count(store);
    if (sel->total != count)
        return ss__fail(SS_EINVAL,
                        "attribute values: the selection was made for %" PRIu64
                        " examples, the store has %" PRIu64,
                        sel->total, count);
    ss_attr a;
    int rc = ss_attr_get(&a, store, name);
    if (rc) return ss__context(rc, "attribute '%s'", name);
    size_t es = int_dtype((ss_dtype)a.type) ? ss_dtype_size((ss_dtype)a.type) : 0;
    if (!es || a.size != count * es)
        return ss__fail(SS_EINVAL,
                        "attribute '%s': not an integer array of one value per example (%" PRIu64
                        " examples, %" PRIu64 " bytes of type %u)",
                        name, count, a.size, a.type);
    uint64_t pos = 0;
    const unsigned char *p = a.data;
    for (size_t i = 0; i < sel->nranges; i++)
        for (uint64_t x = sel->ranges[i].start; x < sel->ranges[i].end; x++, pos++)
            ss__cast(&out[pos], SS_I64, p + x * es, (ss_dtype)a.type, 1, 1, NULL);
    return 0;
}
