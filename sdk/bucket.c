/* SPDX-License-Identifier: BSD-2-Clause */
/* bucket.c - precomputed bucket indices: a length-sorted permutation with
 * bucket boundaries, stored as the attribute ss.bucket.<name> and used
 * zero-copy from the map (layout in spec/FORMAT.md, "Bucket indices"). */
#include "internal.h"
#include "layout.h"
#include "batch_internal.h"
#include "rng.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define BUCKET_MAGIC 0x54454B4355425353ull /* "SSBUCKET" little-endian */
#define BUCKET_VERSION 1u                  /* ascending length keys, fixed-width buckets */
#define BUCKET_VERSION2 2u                 /* + flags at offset 56 */
#define FLAG_DESCENDING 1u
#define FLAG_QUANTILE 2u  /* estimated boundaries, not by resolution (R = 0) */
#define FLAG_NO_FIELDS 4u /* keys from an array or callback, not field lengths */
#define FLAGS_KNOWN 7u
#define BUCKET_HEADER 64
#define STREAM_BUCKET 0x62756b74ull /* "bukt" */

struct ss_bucket {
    uint64_t count, nbuckets, resolution;
    uint32_t nkeys, flags;
    uint32_t fields[SS_BUCKET_MAX_KEYS];
    const uint64_t *perm;   /* count entries */
    const uint64_t *starts; /* nbuckets + 1 entries */
    uint64_t *owned;        /* perm and starts when built or byte-swapped */
};

static int host_is_le(void) {
    const uint16_t one = 1;
    unsigned char c;
    memcpy(&c, &one, 1);
    return c == 1;
}

static int bucket_attr_name(char *buf, size_t cap, const char *name) {
    size_t plen = strlen(SS_BUCKET_ATTR_PREFIX);
    if (!name || !*name) return ss__fail(SS_EINVAL, "bucket index: empty name");
    size_t n = strlen(name);
    if (plen + n > SS_MAX_ATTR_NAME || plen + n + 1 > cap)
        return ss__fail(SS_EINVAL, "bucket index '%.40s...': name longer than %zu bytes", name,
                        (size_t)SS_MAX_ATTR_NAME - plen);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] <= 0x20 || (unsigned char)name[i] >= 0x7f)
            return ss__fail(SS_EINVAL,
                            "bucket index '%s': names may hold only printable ASCII without "
                            "spaces",
                            name);
    memcpy(buf, SS_BUCKET_ATTR_PREFIX, plen);
    memcpy(buf + plen, name, n + 1);
    return 0;
}

/* ------------------------------------------------------------------ build */

typedef struct sort_item {
    uint64_t key[SS_BUCKET_MAX_KEYS]; /* unused keys are 0 */
    uint64_t idx;
} sort_item;

static int item_cmp(const void *a, const void *b) {
    const sort_item *x = a, *y = b;
    for (int k = 0; k < SS_BUCKET_MAX_KEYS; k++)
        if (x->key[k] != y->key[k]) return x->key[k] < y->key[k] ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int item_cmp_desc(const void *a, const void *b) {
    const sort_item *x = a, *y = b;
    for (int k = 0; k < SS_BUCKET_MAX_KEYS; k++)
        if (x->key[k] != y->key[k]) return x->key[k] > y->key[k] ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int u64_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Build from a key getter: key k of example i. */
typedef uint64_t (*key_fn)(const void *ctx, size_t k, uint64_t i);

/* Fixed width R: a bucket starts where floor(key / R) changes in some key.
 * Returns the bucket count. */
static uint64_t cut_fixed(const sort_item *it, uint64_t count, size_t nkeys, uint64_t R,
                          uint64_t *starts) {
    uint64_t nb = 0;
    for (uint64_t i = 0; i < count; i++) {
        int boundary = i == 0;
        for (size_t k = 0; k < nkeys && !boundary; k++)
            boundary = it[i].key[k] / R != it[i - 1].key[k] / R;
        if (boundary) starts[nb++] = i;
    }
    starts[nb] = count;
    return nb;
}

#define HIST_CAP 2048 /* histogram bins of the boundary search */

/* The histogram of key 0 along the sorted items: runs of equal keys, merged
 * into at most HIST_CAP bins of about count / HIST_CAP items (a bin never
 * splits a run). first[g], cnt[g], sum[g], top[g] (largest key). */
static uint64_t histogram(const sort_item *it, uint64_t count, uint64_t *first, uint64_t *cnt,
                          uint64_t *sum, uint64_t *top) {
    uint64_t g = 0, per = count / HIST_CAP + 1;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t v = it[i].key[0];
        int run_start = i == 0 || v != it[i - 1].key[0];
        if (run_start && (g == 0 || (cnt[g - 1] >= per && g < HIST_CAP))) {
            first[g] = i;
            cnt[g] = sum[g] = top[g] = 0;
            g++;
        }
        cnt[g - 1]++;
        sum[g - 1] += v;
        if (v > top[g - 1]) top[g - 1] = v;
    }
    return g;
}

/* Estimated boundaries: cut the histogram into at most maxb contiguous
 * buckets minimising sum over buckets of (items * largest key - sum of
 * keys), the padding of a bucket padded to its longest (an upper bound of
 * its batches' padding), by dynamic programming over the bins,
 * O(maxb * bins^2). Writes the starts, returns the bucket count in *nb. */
static int cut_estimated(const sort_item *it, uint64_t count, uint64_t maxb, uint64_t *starts,
                         uint64_t *nb) {
    *nb = 0;
    if (count == 0) {
        starts[0] = 0;
        return 0;
    }
    uint64_t *h = malloc(4 * HIST_CAP * sizeof *h);
    if (!h) return ss__fail(SS_ENOMEM, "bucket index: out of memory");
    uint64_t *first = h, *cnt = h + HIST_CAP, *sum = h + 2 * HIST_CAP, *top = h + 3 * HIST_CAP;
    uint64_t G = histogram(it, count, first, cnt, sum, top);
    uint64_t K = maxb < G ? maxb : G;
    double *f = malloc(K * G * sizeof *f);
    uint32_t *arg = malloc(K * G * sizeof *arg);
    if (!f || !arg) {
        free(h);
        free(f);
        free(arg);
        return ss__fail(SS_ENOMEM, "bucket index: out of memory");
    }
    /* f[k*G + b]: least padding of bins 0..b in k+1 buckets; arg: first bin
     * of the last bucket. Costs run from bin b down to a. */
    for (uint64_t k = 0; k < K; k++)
        for (uint64_t b = k; b < G; b++) {
            double best = -1, c = 0, s = 0, t = 0;
            uint32_t at = 0;
            for (uint64_t a = b + 1; a-- > k;) {
                c += (double)cnt[a];
                s += (double)sum[a];
                if ((double)top[a] > t) t = (double)top[a];
                double v = c * t - s + (k ? f[(k - 1) * G + a - 1] : 0);
                if (k == 0 && a > 0) continue; /* one bucket covers all */
                if (best < 0 || v < best) best = v, at = (uint32_t)a;
            }
            f[k * G + b] = best;
            arg[k * G + b] = at;
        }
    uint64_t b = G - 1;
    for (uint64_t k = K; k-- > 0;) {
        uint32_t a = arg[k * G + b];
        starts[k] = first[a];
        b = a ? a - 1 : 0;
    }
    starts[K] = count;
    *nb = K;
    free(h);
    free(f);
    free(arg);
    return 0;
}

static int build(ss_bucket **out, key_fn get, const void *ctx, const uint32_t *fields, size_t nkeys,
                 uint64_t count, uint64_t resolution, uint64_t maxb, uint32_t flags) {
    *out = NULL;
    ss_bucket *b = calloc(1, sizeof *b);
    sort_item *it = malloc((count ? count : 1) * sizeof *it);
    uint64_t *owned = malloc((2 * count + 1) * sizeof *owned);
    if (!b || !it || !owned) {
        free(b);
        free(it);
        free(owned);
        return ss__fail(SS_ENOMEM, "bucket index: out of memory for %" PRIu64 " examples", count);
    }
    for (uint64_t i = 0; i < count; i++) {
        memset(it[i].key, 0, sizeof it[i].key);
        for (size_t k = 0; k < nkeys; k++) it[i].key[k] = get(ctx, k, i);
        it[i].idx = i;
    }
    qsort(it, (size_t)count, sizeof *it, flags & FLAG_DESCENDING ? item_cmp_desc : item_cmp);
    uint64_t *perm = owned, *starts = owned + count, nb = 0;
    int rc = 0;
    if (maxb)
        rc = cut_estimated(it, count, maxb, starts, &nb);
    else
        nb = cut_fixed(it, count, nkeys, resolution, starts);
    if (rc) {
        free(b);
        free(it);
        free(owned);
        return rc;
    }
    for (uint64_t i = 0; i < count; i++) perm[i] = it[i].idx;
    free(it);
    /* Within a bucket, store index order (torchnet's BucketSortedDataset). */
    for (uint64_t q = 0; q < nb; q++)
        qsort(perm + starts[q], (size_t)(starts[q + 1] - starts[q]), sizeof *perm, u64_cmp);
    b->count = count;
    b->nbuckets = nb;
    b->resolution = resolution;
    b->nkeys = (uint32_t)nkeys;
    b->flags = flags;
    for (size_t k = 0; k < nkeys; k++) b->fields[k] = fields ? fields[k] : 0;
    b->perm = perm;
    b->starts = starts;
    b->owned = owned;
    *out = b;
    return 0;
}

typedef struct store_ctx {
    const ss_store *s;
    const uint32_t *fields;
} store_ctx;

static uint64_t store_key(const void *ctx, size_t k, uint64_t i) {
    const store_ctx *c = ctx;
    return ss_length(c->s, c->fields[k], i);
}

static uint64_t array_key(const void *ctx, size_t k, uint64_t i) {
    const uint64_t *const *lengths = ctx;
    return lengths[k][i];
}

typedef struct fn_ctx {
    ss_bucket_key_fn fn;
    void *user;
} fn_ctx;

static uint64_t callback_key(const void *ctx, size_t k, uint64_t i) {
    const fn_ctx *c = ctx;
    return c->fn(c->user, k, i);
}

static int check_options(const ss_store *store, const uint32_t *fields, size_t nkeys,
                         const ss_bucket_options *o) {
    if (!o || o->version != SS_BUCKET_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "ss_bucket_create: options missing or of an unknown version");
    if (nkeys < 1 || nkeys > SS_BUCKET_MAX_KEYS)
        return ss__fail(SS_EINVAL, "bucket index: %zu keys (need 1..%d)", nkeys,
                        SS_BUCKET_MAX_KEYS);
    if ((o->resolution == 0) == (o->max_buckets == 0))
        return ss__fail(SS_EINVAL, "bucket index: set exactly one of resolution (fixed-width "
                                   "buckets) and max_buckets (equal-mass buckets)");
    if (o->keys && o->key_fn)
        return ss__fail(SS_EINVAL, "bucket index: keys and key_fn are both set");
    int custom = o->keys || o->key_fn;
    if (!custom && (!store || !fields))
        return ss__fail(SS_EINVAL, "bucket index: length keys need the store and fields");
    if (custom && store && o->count != ss_count(store))
        return ss__fail(SS_EINVAL,
                        "bucket index: count %" PRIu64 " differs from the store's %" PRIu64,
                        o->count, ss_count(store));
    for (size_t k = 0; o->keys && k < nkeys && o->count; k++)
        if (!o->keys[k]) return ss__fail(SS_EINVAL, "bucket index: keys[%zu] is NULL", k);
    for (size_t k = 0; store && fields && k < nkeys; k++)
        if (fields[k] >= ss_field_count(store))
            return ss__fail(SS_ERANGE, "bucket index: field %u does not exist (the store has %u)",
                            fields[k], ss_field_count(store));
    return 0;
}

int ss_bucket_create(ss_bucket **out, const ss_store *store, const uint32_t *fields, size_t nkeys,
                     const ss_bucket_options *options) {
    if (!out) return ss__fail(SS_EINVAL, "ss_bucket_create: out is NULL");
    *out = NULL;
    int rc = check_options(store, fields, nkeys, options);
    if (rc) return rc;
    const ss_bucket_options *o = options;
    uint32_t flags = (o->descending ? FLAG_DESCENDING : 0) | (o->max_buckets ? FLAG_QUANTILE : 0);
    if ((o->keys || o->key_fn) && !fields) flags |= FLAG_NO_FIELDS;
    if (o->keys)
        return build(out, array_key, o->keys, fields, nkeys, o->count, o->resolution,
                     o->max_buckets, flags);
    if (o->key_fn) {
        fn_ctx c = {o->key_fn, o->key_user};
        return build(out, callback_key, &c, fields, nkeys, o->count, o->resolution, o->max_buckets,
                     flags);
    }
    store_ctx c = {store, fields};
    return build(out, store_key, &c, fields, nkeys, ss_count(store), o->resolution, o->max_buckets,
                 flags);
}

/* ------------------------------------------------------------ store, open */

int ss_bucket_set(ss_writer *w, const char *name, const ss_bucket *b) {
    if (!w || !b) return ss__fail(SS_EINVAL, "ss_bucket_set: NULL writer or index");
    char key[SS_MAX_ATTR_NAME + 1];
    int rc = bucket_attr_name(key, sizeof key, name);
    if (rc) return rc;
    size_t bytes = BUCKET_HEADER + 8 * (size_t)(b->count + b->nbuckets + 1);
    unsigned char *buf = calloc(1, bytes);
    if (!buf) return ss__fail(SS_ENOMEM, "bucket index '%s': out of memory", name);
    ss_put_le64(buf, BUCKET_MAGIC);
    ss_put_le32(buf + 8, b->flags ? BUCKET_VERSION2 : BUCKET_VERSION);
    ss_put_le64(buf + 56, b->flags);
    ss_put_le32(buf + 12, b->nkeys);
    for (uint32_t k = 0; k < b->nkeys; k++) ss_put_le32(buf + 16 + 4 * k, b->fields[k]);
    ss_put_le64(buf + 32, b->resolution);
    ss_put_le64(buf + 40, b->count);
    ss_put_le64(buf + 48, b->nbuckets);
    unsigned char *p = buf + BUCKET_HEADER;
    for (uint64_t i = 0; i < b->count; i++, p += 8) ss_put_le64(p, b->perm[i]);
    for (uint64_t q = 0; q <= b->nbuckets; q++, p += 8) ss_put_le64(p, b->starts[q]);
    rc = ss_writer_set_attr(w, key, SS_ATTR_BYTES, buf, bytes);
    free(buf);
    return rc;
}

int ss_bucket_save(const char *path, const char *name, const uint32_t *fields, size_t nkeys,
                   const ss_bucket_options *options) {
    if (!path) return ss__fail(SS_EINVAL, "ss_bucket_save: path is NULL");
    char key[SS_MAX_ATTR_NAME + 1];
    int rc = bucket_attr_name(key, sizeof key, name);
    if (rc) return rc;
    ss_store *s = NULL;
    rc = ss_open(&s, path, SS_OPEN_VERIFY);
    if (rc) return rc;
    ss_bucket *b = NULL;
    rc = ss_bucket_create(&b, s, fields, nkeys, options);
    ss_close(s); /* the built index owns its arrays */
    if (rc) return rc;
    ss_writer *w = NULL;
    uint64_t count = 0;
    rc = ss_sections_writer_open(&w, path); /* a dataset's: its sections store */
    if (!rc) rc = ss__sections_count(&count, path, w);
    if (!rc && count != b->count)
        rc = ss__fail(SS_EBUSY, "bucket index '%s': the store changed while it was built", name);
    if (!rc) rc = ss_bucket_set(w, name, b);
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    ss_bucket_free(b);
    return rc;
}

int ss_bucket_open(ss_bucket **out, const ss_store *store, const char *name) {
    if (!out) return ss__fail(SS_EINVAL, "ss_bucket_open: out is NULL");
    *out = NULL;
    if (!store) return ss__fail(SS_EINVAL, "ss_bucket_open: store is NULL");
    char key[SS_MAX_ATTR_NAME + 1];
    int rc = bucket_attr_name(key, sizeof key, name);
    if (rc) return rc;
    ss_attr a;
    rc = ss_attr_get(&a, store, key);
    if (rc == SS_ENOTFOUND) return ss__fail(SS_ENOTFOUND, "no bucket index named '%s'", name);
    if (rc) return rc;
    const unsigned char *p = a.data;
    if (a.size < BUCKET_HEADER || ss_le64(p) != BUCKET_MAGIC)
        return ss__fail(SS_ECORRUPT, "bucket index '%s': bad magic or size", name);
    uint32_t ver = ss_le32(p + 8);
    uint64_t flags = ver == BUCKET_VERSION2 ? ss_le64(p + 56) : 0;
    if ((ver != BUCKET_VERSION && ver != BUCKET_VERSION2) || (flags & ~(uint64_t)FLAGS_KNOWN))
        return ss__fail(SS_EVERSION,
                        "bucket index '%s': layout version %u (flags %" PRIx64
                        "), this library reads %u and %u",
                        name, ver, flags, BUCKET_VERSION, BUCKET_VERSION2);
    uint32_t nkeys = ss_le32(p + 12);
    uint64_t res = ss_le64(p + 32), count = ss_le64(p + 40), nb = ss_le64(p + 48);
    if (nkeys < 1 || nkeys > SS_BUCKET_MAX_KEYS || (res == 0) != !!(flags & FLAG_QUANTILE) ||
        count > a.size / 8 || nb > count || a.size != BUCKET_HEADER + 8 * (count + nb + 1))
        return ss__fail(SS_ECORRUPT, "bucket index '%s': inconsistent header", name);
    uint64_t have = ss_count(store);
    if (count < have)
        return ss__fail(SS_ESTATE,
                        "bucket index '%s' covers %" PRIu64 " examples but the store has %" PRIu64
                        "; rebuild it (seqstore index)",
                        name, count, have);
    if (count > have)
        return ss__fail(SS_ECORRUPT,
                        "bucket index '%s' covers %" PRIu64
                        " examples, the store has only %" PRIu64,
                        name, count, have);
    ss_bucket *b = calloc(1, sizeof *b);
    if (!b) return ss__fail(SS_ENOMEM, "bucket index: out of memory");
    b->count = count;
    b->nbuckets = nb;
    b->resolution = res;
    b->nkeys = nkeys;
    b->flags = (uint32_t)flags;
    for (uint32_t k = 0; k < nkeys; k++) b->fields[k] = ss_le32(p + 16 + 4 * k);
    if (host_is_le()) {
        b->perm = (const uint64_t *)(const void *)(p + BUCKET_HEADER);
    } else {
        b->owned = malloc((count + nb + 1) * sizeof *b->owned);
        if (!b->owned) {
            free(b);
            return ss__fail(SS_ENOMEM, "bucket index: out of memory");
        }
        for (uint64_t i = 0; i < count + nb + 1; i++)
            b->owned[i] = ss_le64(p + BUCKET_HEADER + 8 * i);
        b->perm = b->owned;
    }
    b->starts = b->perm + count;
    /* Check the boundaries (O(buckets)); permutation entries are range-checked
     * where they are used. */
    int bad = b->starts[0] != 0 || b->starts[nb] != count;
    for (uint32_t k = 0; k < nkeys && !(flags & FLAG_NO_FIELDS); k++)
        bad |= b->fields[k] >= ss_field_count(store);
    for (uint64_t q = 0; q < nb && !bad; q++) bad = b->starts[q] >= b->starts[q + 1];
    if (bad) {
        ss_bucket_free(b);
        return ss__fail(SS_ECORRUPT, "bucket index '%s': bad bucket boundaries or fields", name);
    }
    *out = b;
    return 0;
}

void ss_bucket_free(ss_bucket *b) {
    if (!b) return;
    free(b->owned);
    free(b);
}

uint64_t ss_bucket_size(const ss_bucket *b) {
    return b ? b->count : 0;
}

uint64_t ss_bucket_count(const ss_bucket *b) {
    return b ? b->nbuckets : 0;
}

uint64_t ss_bucket_resolution(const ss_bucket *b) {
    return b ? b->resolution : 0;
}

int ss_bucket_descending(const ss_bucket *b) {
    return b ? !!(b->flags & FLAG_DESCENDING) : 0;
}

size_t ss_bucket_keys(uint32_t *fields, const ss_bucket *b) {
    if (!b || (b->flags & FLAG_NO_FIELDS)) return 0;
    if (fields) memcpy(fields, b->fields, b->nkeys * sizeof *fields);
    return b->nkeys;
}

const uint64_t *ss_bucket_permutation(const ss_bucket *b) {
    return b ? b->perm : NULL;
}

const uint64_t *ss_bucket_starts(const ss_bucket *b) {
    return b ? b->starts : NULL;
}

/* ------------------------------------------------------------------ use */

/* Write the order and, if `seg` is not NULL, the end of each bucket's
 * segment in it (nbuckets entries). */
static int bucket_order(const ss_bucket *b, const ss_selection *sel, int shuffle, uint64_t seed,
                        uint64_t epoch, uint64_t *out, uint64_t *n, uint64_t *seg) {
    if (sel && ss_selection_total(sel) != b->count)
        return ss__fail(SS_EINVAL,
                        "bucket index: selection made for %" PRIu64 " examples, index has %" PRIu64,
                        ss_selection_total(sel), b->count);
    uint64_t k = 0;
    for (uint64_t q = 0; q < b->nbuckets; q++) {
        uint64_t first = k;
        for (uint64_t i = b->starts[q]; i < b->starts[q + 1]; i++) {
            uint64_t x = b->perm[i];
            if (x >= b->count)
                return ss__fail(SS_ECORRUPT,
                                "bucket index: entry %" PRIu64 " is %" PRIu64 ", beyond %" PRIu64
                                " examples",
                                i, x, b->count);
            if (!sel || ss_selection_contains(sel, x)) out[k++] = x;
        }
        /* Index order inside a bucket; an index of layout 1 may hold it in
         * key order: sort then (a linear check first). */
        int sorted = 1;
        for (uint64_t i = first + 1; i < k && sorted; i++) sorted = out[i - 1] < out[i];
        if (!sorted) qsort(out + first, (size_t)(k - first), sizeof *out, u64_cmp);
        if (shuffle && k - first > 1) {
            ss_rng r;
            ss__rng_seed(&r, ss__rng_hash(seed, epoch, q), STREAM_BUCKET);
            for (uint64_t i = k - first; i > 1; i--) {
                uint64_t j = ss__rng_below(&r, i);
                uint64_t t = out[first + i - 1];
                out[first + i - 1] = out[first + j];
                out[first + j] = t;
            }
        }
        if (seg) seg[q] = k;
    }
    *n = k;
    return 0;
}

int ss_bucket_order(uint64_t *out, uint64_t *n, const ss_bucket *b, const ss_selection *sel,
                    int shuffle, uint64_t seed, uint64_t epoch) {
    if (n) *n = 0;
    if (!b || !n || (!out && b->count))
        return ss__fail(SS_EINVAL, "ss_bucket_order: NULL argument");
    return bucket_order(b, sel, shuffle, seed, epoch, out, n, NULL);
}

int ss_bucket_block_order(uint64_t *out, uint64_t *n, const ss_bucket *b, const ss_selection *sel,
                          uint64_t block_size, uint64_t window_blocks, uint64_t seed,
                          uint64_t epoch) {
    if (n) *n = 0;
    if (!b || !n || (!out && b->count))
        return ss__fail(SS_EINVAL, "ss_bucket_block_order: NULL argument");
    ss_selection *all = NULL;
    int rc = 0;
    if (!sel) {
        rc = ss_selection_all(&all, b->count);
        sel = all;
    }
    ss_sampler_options o = SS_SAMPLER_OPTIONS_INIT;
    o.kind = SS_SAMPLE_BLOCK_SHUFFLE;
    o.seed = seed;
    o.block_size = block_size;
    o.window_blocks = window_blocks;
    o.bucket = b;
    ss_sampler *s = NULL;
    if (!rc) rc = ss_sampler_create(&s, sel, &o);
    if (!rc) rc = ss_sampler_set_epoch(s, epoch);
    size_t got = 0;
    uint64_t want = rc ? 0 : ss_selection_count(sel);
    /* ss_sampler_next takes a size_t count: fill in pieces. */
    for (uint64_t k = 0; !rc && k < want; k += got) {
        uint64_t m = want - k < ((size_t)-1) ? want - k : (size_t)-1;
        rc = ss_sampler_next(out + k, (size_t)m, &got, s);
        if (rc == SS_ITEROVER) { /* fewer than the selection: a sampler that drops */
            rc = 0;
            break;
        }
        if (!rc) *n += got;
    }
    ss_sampler_free(s);
    ss_selection_free(all);
    if (rc) *n = 0;
    return rc;
}

int ss_bucket_batches(ss_batcher **out, const ss_bucket *b, const ss_store *store,
                      const ss_selection *sel, const ss_batch_options *options, int shuffle,
                      uint64_t seed, uint64_t epoch) {
    if (!out) return ss__fail(SS_EINVAL, "ss_bucket_batches: out is NULL");
    *out = NULL;
    if (!b) return ss__fail(SS_EINVAL, "ss_bucket_batches: index is NULL");
    int rc = ss__batch_check_options(options, store != NULL);
    if (rc) return rc;
    if (store && ss_count(store) < b->count)
        return ss__fail(SS_EINVAL, "bucket batches: the store has fewer examples than the index");
    if (options->max_tokens && (b->flags & FLAG_NO_FIELDS))
        return ss__fail(SS_EINVAL, "bucket batches: a token budget needs length fields; this "
                                   "index was built from keys without fields");
    uint64_t cap = b->count ? b->count : 1;
    uint64_t *order = malloc(cap * sizeof *order);
    uint64_t *lens = malloc(cap * sizeof *lens);
    uint64_t *seg = malloc((b->nbuckets ? b->nbuckets : 1) * sizeof *seg);
    ss__batch_builder bb;
    memset(&bb, 0, sizeof bb);
    uint64_t n = 0;
    if (!order || !lens || !seg) rc = ss__fail(SS_ENOMEM, "bucket batches: out of memory");
    if (!rc) rc = bucket_order(b, sel, shuffle, seed, epoch, order, &n, seg);
    if (!rc && store && options->max_tokens)
        rc = ss_lengths_gather(lens, store, b->fields, b->nkeys, order, n);
    if (!rc) rc = ss__batch_builder_init(&bb, ss__batch_capacity(n, b->nbuckets, options));
    for (uint64_t q = 0, first = 0; q < b->nbuckets && !rc; first = seg[q++]) {
        rc = ss__batch_segment(&bb, order + first, lens + first, seg[q] - first, options);
        if (rc) ss__context(rc, "bucket %" PRIu64, q);
    }
    if (!rc) rc = ss__batcher_from_builder(out, &bb);
    if (!rc) rc = ss_batcher_shuffle(*out, shuffle, seed, epoch);
    if (rc) {
        ss__batch_builder_free(&bb);
        ss_batcher_free(*out);
        *out = NULL;
    }
    free(order);
    free(lens);
    free(seg);
    return rc;
}
