/* SPDX-License-Identifier: BSD-2-Clause */
/* dataset.c - a dataset of shards (spec/FORMAT.md §13) opened as one store.
 *
 * ss_open() of a dataset directory or manifest returns an ss_store whose
 * examples are the shards' in manifest order. Opening reads the manifest
 * only: the global tables (each shard's first example, each sequence field's
 * first flat row) come from the manifest's counts and rows, O(shards), and no
 * shard but the first (for the attributes) is opened until an example of it
 * is read. A shard is opened on first touch under the store's lock, checked
 * against the manifest (schema, count, rows, header digest), and published
 * with a release store; readers load it with acquire, so the hot path takes
 * no lock. Shards are opened with SS_OPEN_NOLOCK: a finished dataset has no
 * writer, and read-only or shared storage needs no lock file. */
#include "manifest.h"
#include "remote_dataset.h"
#include "sections.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* What ss_get() needs of a shard, on one cache line with its neighbours'. */
/* An attribute the dataset shows: attribute k of shard 0 or of the sections
 * store. */
typedef struct ds_attr {
    const ss_store *from;
    uint64_t k;
} ds_attr;

/* A shard: global number of its first example, and the store, NULL until
 * first touched (read with acquire, written with release). The inline
 * ss_get() reads this table (seqstore.h). */
typedef ss__fast_shard ds_slot;

struct ss_dataset {
    /* the hot path first: ss_get() reads these and the slots only */
    uint32_t nshards;
    uint32_t shift;                /* log2 of the examples per entry of shard_of */
    uint32_t *shard_of;            /* entry b: the shard holding example b << shift */
    ds_slot *slot;                 /* nshards + 1 (the last: first = count, no store) */
    uint64_t *first;               /* nshards + 1: the slots' `first`, for the other lookups */
    uint64_t *rows[SS_MAX_FIELDS]; /* sequence fields: nshards + 1 cumulative flat rows */
    ss_manifest m;
    char *dir;      /* shard paths are relative to it */
    unsigned flags; /* the shards' ss_open() flags */
    ds_attr *attrs; /* the attributes the dataset shows, in name order */
    uint64_t nattrs;
    ss_store *sections; /* DIR/dataset.sections.ss (§13.1), or NULL */
    ss__ds_remote *remote; /* a dataset under a URL (§14): DIR is its cache, or NULL */
    /* Stored global lengths per field, looked up (and hashed) on first use,
     * not at open: 0 not yet, 1 found, 2 none. Under the store's lock. */
    _Atomic int len_state[SS_MAX_FIELDS];
    const void *len_data[SS_MAX_FIELDS];
    ss_dtype len_dtype[SS_MAX_FIELDS];
    /* Shard opens attempted, for tests and benchmarks (ss__dataset_shard_opens). */
    _Atomic uint64_t opens;
    /* Per shard, the code and message its open failed with (0: none); NULL
     * until a shard fails. Under the store's lock. */
    int *fail_rc;
    char **fail_msg;
    /* The budget of open shards (ds_budget()). The open ones but shard 0
     * (kept: the attributes point into it) in the order they were opened,
     * a ring of `live` entries; the closed ones not yet unmapped, a ring of
     * `grace` entries. Under the store's lock. */
    uint32_t live, grace;
    uint32_t *opened, nopened, opened_head;
    ss_store **retired;
    uint32_t nretired, retired_head;
};

int ss__dataset_probe(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    if (S_ISDIR(st.st_mode)) {
        char *m = NULL;
        if (asprintf(&m, "%s/%s", path, SS_MANIFEST_NAME) < 0) return 0;
        int is = stat(m, &st) == 0 && S_ISREG(st.st_mode);
        free(m);
        return is;
    }
    /* only a regular file: opening a FIFO for reading waits for a writer */
    char head[17] = {0};
    int fd = S_ISREG(st.st_mode) ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
    if (fd < 0) return 0;
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? pread(fd, head, sizeof head, 0) : 0;
    close(fd);
    return n == (ssize_t)sizeof head && !memcmp(head, "seqstore-dataset ", sizeof head);
}

/* The shard holding global example `index` (< count): the smallest j with
 * first[j] > index, minus one; empty shards are skipped by construction. */
static uint32_t ds_shard_of(const uint64_t *first, uint32_t nshards, uint64_t index) {
    uint32_t lo = 1, hi = nshards; /* answer j in [lo, hi] */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (first[mid] > index)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo - 1;
}

/* The shard holding global example `index` (< count), in O(1) for any shard
 * sizes: the lookup table's entry gives the shard holding the first example
 * of the entry's range of 2^shift examples, and a range of at most a quarter
 * of the mean shard crosses few boundaries (usually none or one; empty
 * shards are stepped over). */
static inline uint32_t ds_lookup(const ss_dataset *ds, uint64_t index) {
    uint32_t k = ds->shard_of[index >> ds->shift];
    while (ds->first[k + 1] <= index) k++;
    return k;
}

/* The lookup table over the cumulative counts (ds->first). */
static int ds_lookup_table(ss_dataset *ds, uint64_t count) {
    uint64_t mean = ds->nshards ? count / ds->nshards : 0;
    ds->shift = 0;
    while (mean >= 8 && (2ull << ds->shift) <= mean / 4) ds->shift++;
    uint64_t n = count ? ((count - 1) >> ds->shift) + 1 : 1;
    ds->shard_of = malloc(n * sizeof *ds->shard_of);
    if (!ds->shard_of) return ss__fail(SS_ENOMEM, "out of memory");
    ds->shard_of[0] = 0;
    for (uint64_t b = 0; count && b < n; b++)
        ds->shard_of[b] = ds_shard_of(ds->first, ds->nshards, b << ds->shift);
    return 0;
}

/* Shard `k`'s failed open, remembered: a missing or damaged shard fails
 * every later touch at once with the same message, and is never opened
 * again (a loop over its examples must not become a loop of opens). */
static int ds_shard_failed(const ss_dataset *ds, uint32_t k) {
    return ds->fail_rc && ds->fail_rc[k] ? ss__fail(ds->fail_rc[k], "%s", ds->fail_msg[k]) : 0;
}

/* Remember that shard `k` failed with `rc` (under the store's lock); out of
 * memory is not remembered, it may pass. */
static void ds_shard_remember(ss_dataset *ds, uint32_t k, int rc) {
    if (rc == SS_ENOMEM) return;
    if (!ds->fail_rc) {
        ds->fail_rc = calloc(ds->nshards, sizeof *ds->fail_rc);
        ds->fail_msg = calloc(ds->nshards, sizeof *ds->fail_msg);
        if (!ds->fail_rc || !ds->fail_msg) {
            free(ds->fail_rc);
            free(ds->fail_msg);
            ds->fail_rc = NULL, ds->fail_msg = NULL;
            return;
        }
    }
    char *msg = strdup(ss_error_message());
    if (!msg) return;
    ds->fail_msg[k] = msg;
    ds->fail_rc[k] = rc;
}

/* The budget of open shards: SS_MAX_OPEN_SHARDS if set (at least 8), else
 * half the soft limit of open files (each open shard holds a descriptor and
 * two or more maps), at least 64. A quarter of it is grace: a shard
 * closed to make room stays mapped until as many others are closed, so
 * that a view handed out a moment before stays readable (seqstore.h). */
static void ds_budget(ss_dataset *ds) {
    uint64_t b = 0;
    const char *env = getenv("SS_MAX_OPEN_SHARDS");
    if (env && *env) {
        b = strtoull(env, NULL, 10);
        if (b < 8) b = 8;
    } else {
        struct rlimit rl;
        b = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur / 2
                                                                              : 1u << 20;
        if (b < 64) b = 64;
    }
    if (b > UINT32_MAX / 2) b = UINT32_MAX / 2;
    ds->grace = (uint32_t)(b / 4);
    ds->live = (uint32_t)b - ds->grace - 1; /* and shard 0 */
}

int ss__dataset_views_stable(const ss_store *s) {
    const ss_dataset *ds = s->ds;
    return ds->nshards <= (uint64_t)ds->live + 1; /* shard 0 is never closed */
}

int ss__store_remote(const ss_store *s) {
    return s && s->ds && s->ds->remote;
}

/* Make room for one more open shard (under the store's lock): the oldest
 * opened is unpublished and retired; the oldest retired is closed. */
static int ds_make_room(ss_dataset *ds) {
    if (!ds->opened) {
        ds->opened = malloc((size_t)ds->live * sizeof *ds->opened);
        ds->retired = malloc((size_t)(ds->grace ? ds->grace : 1) * sizeof *ds->retired);
        if (!ds->opened || !ds->retired) return ss__fail(SS_ENOMEM, "out of memory");
    }
    if (ds->nopened < ds->live) return 0;
    uint32_t victim = ds->opened[ds->opened_head];
    ds->opened_head = (ds->opened_head + 1) % ds->live;
    ds->nopened--;
    ss_store *old = ds->slot[victim].store;
    __atomic_store_n(&ds->slot[victim].store, NULL, __ATOMIC_RELEASE);
    if (!ds->grace) {
        ss_close(old);
        return 0;
    }
    if (ds->nretired == ds->grace) {
        ss_close(ds->retired[ds->retired_head]);
        ds->retired_head = (ds->retired_head + 1) % ds->grace;
        ds->nretired--;
    }
    ds->retired[(ds->retired_head + ds->nretired++) % ds->grace] = old;
    return 0;
}

/* Count shard `k` (not 0) among the open ones, after ds_make_room(). */
static void ds_note_open(ss_dataset *ds, uint32_t k) {
    ds->opened[(ds->opened_head + ds->nopened++) % ds->live] = k;
}

/* Shard `k`, opened and checked against the manifest on first use; a shard
 * that failed fails again at once, with its first message, unopened. */
static int ds_shard(ss_store **out, const ss_store *s, uint32_t k) {
    ss_dataset *ds = s->ds;
    pthread_mutex_t *lock = (pthread_mutex_t *)&s->lock;
    *out = __atomic_load_n(&ds->slot[k].store, __ATOMIC_ACQUIRE);
    if (*out) return 0;
    char *path = NULL;
    int rc = 0;
    if (ds->remote) {
        pthread_mutex_lock(lock);
        rc = ds_shard_failed(ds, k);
        pthread_mutex_unlock(lock);
        if (rc) return rc;
        /* A remote shard is downloaded and checked outside the store's lock,
         * so that threads reading other shards do not wait for this one. */
        if ((rc = ss__remote_shard(&path, ds->remote, &ds->m, k)) != 0) {
            rc = ss__context(rc, "dataset '%s', shard %u", s->path, k);
            pthread_mutex_lock(lock);
            ds_shard_remember(ds, k, rc);
            pthread_mutex_unlock(lock);
            return rc;
        }
    }
    pthread_mutex_lock(lock);
    *out = __atomic_load_n(&ds->slot[k].store, __ATOMIC_RELAXED);
    rc = *out ? 0 : ds_shard_failed(ds, k);
    if (!*out && !rc) {
        ss_store *sh = NULL;
        atomic_fetch_add_explicit(&ds->opens, 1, memory_order_relaxed);
        if (k && (rc = ds_make_room(ds)) != 0) {
            pthread_mutex_unlock(lock);
            free(path);
            return rc;
        }
        if (!path && asprintf(&path, "%s/%s", ds->dir, ds->m.shards[k].path) < 0)
            rc = ss__fail(SS_ENOMEM, "out of memory");
        if (!rc) rc = ss__open_shard(&sh, path, ds->flags);
        if (!rc) rc = ss__manifest_check_shard(&ds->m, k, sh);
        if (rc) {
            ss_close(sh);
            rc = ss__context(rc, "dataset '%s', shard %u '%s'", s->path, k, ds->m.shards[k].path);
            ds_shard_remember(ds, k, rc);
        } else {
            if (k) ds_note_open(ds, k);
            __atomic_store_n(&ds->slot[k].store, sh, __ATOMIC_RELEASE);
            *out = sh;
        }
    }
    pthread_mutex_unlock(lock);
    free(path);
    return rc;
}

static const char *ds_attr_name(const ds_attr *a) {
    return a->from->attrs[a->k].name;
}

/* The dataset's attributes: shard 0's except its own `source.shard` and the
 * derived `ss.` ones (splits, bucket indices, statistics), which describe one
 * shard's examples by local number; and the sections store's `ss.` ones,
 * which number the dataset's (§13.1). Both lists are sorted: merged. */
static int ds_attr_table(ss_store *s) {
    ss_dataset *ds = s->ds;
    ss_store *s0;
    int rc = ds_shard(&s0, s, 0);
    if (rc) return rc;
    const ss_store *sec = ds->sections;
    uint64_t n0 = s0->nattrs, n1 = sec ? sec->nattrs : 0, i = 0, j = 0;
    ds->attrs = malloc((n0 + n1 + 1) * sizeof *ds->attrs);
    if (!ds->attrs) return ss__fail(SS_ENOMEM, "out of memory");
    while (i < n0 || j < n1) {
        ds_attr a = {s0, i}, b = {sec, j};
        if (i < n0 && (strcmp(ds_attr_name(&a), "source.shard") == 0 ||
                       strncmp(ds_attr_name(&a), "ss.", 3) == 0)) {
            i++;
            continue;
        }
        if (j < n1 && strncmp(ds_attr_name(&b), "ss.", 3) != 0) {
            j++;
            continue;
        }
        int first = j >= n1 || (i < n0 && strcmp(ds_attr_name(&a), ds_attr_name(&b)) < 0);
        ds->attrs[ds->nattrs++] = first ? a : b;
        first ? i++ : j++;
    }
    return 0;
}

/* The global tables and the store's schema from the manifest. */
static int ds_tables(ss_store *s) {
    ss_dataset *ds = s->ds;
    const ss_manifest *m = &ds->m;
    uint32_t n = m->nshards;
    ds->nshards = n;
    ds->first = malloc((n + 1) * sizeof *ds->first);
    ds->slot = calloc(n + 1, sizeof *ds->slot);
    if (!ds->first || !ds->slot) return ss__fail(SS_ENOMEM, "out of memory");
    ds->first[0] = 0;
    for (uint32_t k = 0; k < n; k++) ds->first[k + 1] = ds->first[k] + m->shards[k].count;
    for (uint32_t k = 0; k <= n; k++) ds->slot[k].first = ds->first[k];
    if (n && ds_lookup_table(ds, m->examples)) return SS_ENOMEM;
    /* the inline ss_get()'s dispatch (seqstore.h); its `limit`s stay 0 */
    s->fast.shards = ds->slot;
    s->fast.nshards = n;
    s->fast.shard_of = ds->shard_of;
    s->fast.shard_shift = ds->shift;
    s->fast.shard_limit = n ? m->examples : 0;
    s->h.nfields = m->nfields;
    s->h.count = m->examples;
    for (uint32_t f = 0; f < m->nfields; f++) {
        ss_field_state *fs = &s->h.fields[f];
        snprintf(fs->name, sizeof fs->name, "%s", m->fields[f].name);
        fs->def = m->fields[f];
        fs->def.name = fs->name;
        fs->row_bytes = ss_dtype_size(fs->def.dtype);
        for (uint32_t d = 0; d < fs->def.ndim; d++) fs->row_bytes *= fs->def.dims[d];
        s->fields[f] = fs->def;
        s->f[f].row_bytes = fs->row_bytes;
        s->f[f].sequence = fs->def.sequence;
        s->f[f].dtype = fs->def.dtype;
        if (!fs->def.sequence) {
            fs->total_rows = m->examples;
            continue;
        }
        uint64_t *r = ds->rows[f] = malloc((n + 1) * sizeof *r);
        if (!r) return ss__fail(SS_ENOMEM, "out of memory");
        r[0] = 0;
        for (uint32_t k = 0; k < n; k++) r[k + 1] = r[k] + m->shards[k].rows[f];
        fs->total_rows = r[n];
    }
    s->schema.nfields = m->nfields;
    s->schema.fields = s->fields;
    return 0;
}

int ss__dataset_open(ss_store **out, const char *path, unsigned flags) {
    return ss__dataset_open_at(out, path, path, flags, NULL);
}

int ss__dataset_open_at(ss_store **out, const char *path, const char *shown, unsigned flags,
                        ss__ds_remote *remote) {
    *out = NULL;
    if (flags & SS_OPEN_INCOMPLETE)
        return ss__remote_ds_free(remote),
               ss__fail(SS_EINVAL,
                        "open '%s': a dataset has no unfinished state to open "
                        "(SS_OPEN_INCOMPLETE)",
                        shown);
    ss_store *s = calloc(1, sizeof *s);
    ss_dataset *ds = calloc(1, sizeof *ds);
    if (!s || !ds || !(s->path = strdup(shown))) {
        free(ds);
        if (s) free(s->path);
        free(s);
        ss__remote_ds_free(remote);
        return ss__fail(SS_ENOMEM, "open '%s': out of memory", shown);
    }
    pthread_mutex_init(&s->lock, NULL);
    s->ds = ds;
    ds->remote = remote;
    s->complete = 1;
    ds->flags = flags | SS_OPEN_NOLOCK;
    ds_budget(ds);
    char *file = NULL;
    int rc = ss__manifest_locate(path, &file, &ds->dir);
    free(file);
    if (!rc) rc = ss__manifest_read(&ds->m, path);
    if (!rc) rc = ds_tables(s);
    if (!rc) rc = ss__sections_open(&ds->sections, ds->dir, &ds->m, flags);
    if (!rc) rc = ds_attr_table(s);
    if (rc) {
        ss_close(s);
        return ss__context(rc, "open dataset '%s'", shown);
    }
    *out = s;
    return 0;
}

void ss__dataset_close(ss_store *s) {
    ss_dataset *ds = s->ds;
    for (uint32_t k = 0; ds->slot && k < ds->nshards; k++) ss_close(ds->slot[k].store);
    for (uint32_t j = 0; j < ds->nretired; j++)
        ss_close(ds->retired[(ds->retired_head + j) % ds->grace]);
    free(ds->opened);
    free(ds->retired);
    for (uint32_t f = 0; f < SS_MAX_FIELDS; f++) free(ds->rows[f]);
    for (uint32_t k = 0; ds->fail_msg && k < ds->nshards; k++) free(ds->fail_msg[k]);
    free(ds->fail_rc);
    free(ds->fail_msg);
    free(ds->slot);
    free(ds->shard_of);
    free(ds->first);
    free(ds->attrs);
    ss_close(ds->sections);
    ss__remote_ds_free(ds->remote); /* after the shards: it holds their cache locks */
    free(ds->dir);
    ss__manifest_free(&ds->m);
    free(ds);
}

/* ------------------------------------------------------- examples */

int ss__dataset_get(ss_view *out, const ss_store *s, uint32_t field, uint64_t index) {
    const ss_dataset *ds = s->ds;
    uint32_t k = ds_lookup(ds, index); /* a binary search's branches cost more than the read */
    const ds_slot *at = &ds->slot[k];
    ss_store *sh = __atomic_load_n(&at->store, __ATOMIC_ACQUIRE);
    if (!sh) {
        int rc = ds_shard(&sh, s, (uint32_t)k);
        if (rc) return rc;
    }
    return ss__get_unchecked(out, sh, field, index - at->first);
}

/* The stored global lengths of sequence field `field` (§13.1), found and
 * checked once: *data NULL when the dataset has none (then the shards
 * answer). A damaged section is an error at every call, as any damaged
 * attribute is, never a reason to ask the shards instead. */
enum { DS_LEN_UNKNOWN, DS_LEN_STORED, DS_LEN_NONE, DS_LEN_DAMAGED };

static int ds_stored_lengths(const void **data, ss_dtype *dtype, const ss_store *s,
                             uint32_t field) {
    ss_dataset *ds = s->ds;
    int state = atomic_load_explicit(&ds->len_state[field], memory_order_acquire);
    if (!state) {
        pthread_mutex_lock((pthread_mutex_t *)&s->lock);
        state = atomic_load_explicit(&ds->len_state[field], memory_order_relaxed);
        if (!state) {
            uint64_t n;
            int rc = ss_lengths_view(&ds->len_data[field], &ds->len_dtype[field], &n, s, field);
            state = !rc ? DS_LEN_STORED : rc == SS_ENOTFOUND ? DS_LEN_NONE : DS_LEN_DAMAGED;
            atomic_store_explicit(&ds->len_state[field], state, memory_order_release);
        }
        pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
    }
    *data = NULL;
    if (state == DS_LEN_DAMAGED) { /* the same failure again, for this call's message */
        const void *d;
        uint64_t n;
        return ss_lengths_view(&d, dtype, &n, s, field);
    }
    *dtype = ds->len_dtype[field];
    if (state == DS_LEN_STORED) *data = ds->len_data[field];
    return 0;
}

/* From the stored lengths when the dataset has them (no shard is opened),
 * else from the shard's index. */
uint64_t ss__dataset_length(const ss_store *s, uint32_t field, uint64_t index) {
    const ss_dataset *ds = s->ds;
    const void *stored = NULL;
    ss_dtype dt;
    if (ds->sections && ds_stored_lengths(&stored, &dt, s, field) == 0 && stored)
        return ss__lengths_value(stored, dt, index);
    return ss__dataset_index_length(s, field, index);
}

uint64_t ss__dataset_index_length(const ss_store *s, uint32_t field, uint64_t index) {
    const ss_dataset *ds = s->ds;
    uint32_t k = ds_lookup(ds, index);
    ss_store *sh;
    return ds_shard(&sh, s, k) ? 0 : ss_length(sh, field, index - ds->first[k]);
}

int ss__dataset_lengths(uint64_t *out, const ss_store *s, uint32_t field, uint64_t first,
                        uint64_t n) {
    const ss_dataset *ds = s->ds;
    ss_dtype dt;
    const void *stored = NULL;
    if (ds->sections && s->f[field].sequence) {
        int rc = ds_stored_lengths(&stored, &dt, s, field);
        if (rc) return rc;
    }
    if (stored) { /* no shard is opened */
        for (uint64_t i = 0; i < n; i++) out[i] = ss__lengths_value(stored, dt, first + i);
        return 0;
    }
    while (n) {
        uint32_t k = ds_lookup(ds, first);
        uint64_t local = first - ds->first[k], take = ds->first[k + 1] - first;
        if (take > n) take = n;
        ss_store *sh;
        int rc = ds_shard(&sh, s, k);
        if (!rc) rc = ss_lengths(out, sh, field, local, take);
        if (rc) return rc;
        out += take, first += take, n -= take;
    }
    return 0;
}

int ss__dataset_flat_locate(uint64_t *example, uint64_t *offset, const ss_store *s, uint32_t field,
                            uint64_t pos) {
    const ss_dataset *ds = s->ds;
    uint32_t k = ds_shard_of(ds->rows[field], ds->nshards, pos);
    ss_store *sh;
    int rc = ds_shard(&sh, s, k);
    if (!rc) rc = ss_flat_locate(example, offset, sh, field, pos - ds->rows[field][k]);
    if (!rc) *example += ds->first[k];
    return rc;
}

int ss_prefetch(const ss_store *s, const uint64_t *examples, size_t n) {
    if (!s || (n && !examples)) return ss__fail(SS_EINVAL, "ss_prefetch: NULL argument");
    const ss_dataset *ds = s->ds;
    if (!ds || !ds->remote) return 0;
    uint32_t last = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        if (examples[i] >= s->h.count)
            return ss__fail(SS_ERANGE, "ss_prefetch: example %llu of %llu",
                            (unsigned long long)examples[i], (unsigned long long)s->h.count);
        uint32_t k = ds_shard_of(ds->first, ds->nshards, examples[i]);
        if (k == last || __atomic_load_n(&ds->slot[k].store, __ATOMIC_ACQUIRE)) continue;
        last = k;
        int rc = ss__remote_prefetch(ds->remote, &ds->m, k);
        if (rc) return rc;
    }
    return 0;
}

/* ----------------------------------------------------- attributes */

int ss__dataset_attr_find(const ss_store **from, uint64_t *k, const ss_store *s,
                          const char *name) {
    const ss_dataset *ds = s->ds;
    uint64_t lo = 0, hi = ds->nattrs;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const ds_attr *a = &ds->attrs[mid];
        int c = strcmp(ds_attr_name(a), name);
        if (c == 0) {
            *from = a->from;
            *k = a->k;
            return 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return ss__fail(SS_ENOTFOUND, "%s: no attribute '%s'", s->path, name);
}

uint64_t ss__dataset_attr_count(const ss_store *s) {
    return s->ds->nattrs;
}

int ss__dataset_attr_slot(const ss_store **from, uint64_t *k, const ss_store *s, uint64_t i) {
    const ss_dataset *ds = s->ds;
    if (i >= ds->nattrs)
        return ss__fail(SS_ERANGE, "%s: attribute %llu of %llu", s->path, (unsigned long long)i,
                        (unsigned long long)ds->nattrs);
    *from = ds->attrs[i].from;
    *k = ds->attrs[i].k;
    return 0;
}

/* ------------------------------------------------- info and verify */

uint32_t ss__dataset_shard_count(const ss_store *s) {
    return s && s->ds ? s->ds->nshards : 0;
}

uint64_t ss__dataset_shard_opens(const ss_store *s) {
    return s && s->ds ? atomic_load_explicit(&s->ds->opens, memory_order_relaxed) : 0;
}

/* Every shard is visited: the sums are the readable shards', and a shard
 * that cannot be opened makes the call fail, counted and named, after the
 * others are summed (a dataset short of a shard is not a smaller one). */
int ss__dataset_info(ss_store_info *out, const ss_store *s) {
    const ss_dataset *ds = s->ds;
    memset(out, 0, sizeof *out);
    out->complete = 1;
    out->count = s->h.count;
    uint32_t bad = 0;
    int first_rc = 0;
    char first_msg[1024] = "";
    for (uint32_t k = 0; k < ds->nshards; k++) {
        ss_store *sh;
        ss_store_info in;
        int rc = ds_shard(&sh, s, k);
        if (!rc) rc = ss_store_get_info(&in, sh);
        if (rc) {
            if (!bad++) first_rc = rc, snprintf(first_msg, sizeof first_msg, "%s", ss_error_message());
            continue;
        }
        if (in.format_version > out->format_version) out->format_version = in.format_version;
        out->file_bytes += in.file_bytes;
        out->data_chunks += in.data_chunks;
        if (k == 0) out->chunk_bytes = in.chunk_bytes;
    }
    if (bad)
        return ss__fail(first_rc, "%u of %u shards unreadable; the first: %s", bad, ds->nshards,
                        first_msg);
    return 0;
}

typedef struct ds_verify_ctx {
    ss_verify_fn report;
    void *ctx;
    uint64_t first;
    const char *kind; /* "shard" or "sections store" */
    const char *shard_path;
    char where[600];
} ds_verify_ctx;

/* A shard's problem in global example numbers, named by shard. */
static int ds_verify_relay(void *vctx, const ss_verify_problem *p) {
    ds_verify_ctx *v = vctx;
    ss_verify_problem g = *p;
    g.first_example += v->first;
    g.last_example += v->first;
    snprintf(v->where, sizeof v->where, "%s '%s': %s", v->kind, v->shard_path, p->where);
    g.where = v->where;
    return v->report ? v->report(v->ctx, &g) : 0;
}

/* The sections store (§13.1): its own checksums, then every stored global
 * length against the shards' indexes (ss_length() reads the shards). */
static int ds_verify_sections(uint64_t *problems, const ss_store *s, int shards_open,
                              ss_verify_fn report, void *ctx) {
    const ss_dataset *ds = s->ds;
    ds_verify_ctx v = {report, ctx, 0, "sections store", SS_SECTIONS_NAME, {0}};
    int first_rc = ss_verify(problems, ds->sections, report ? ds_verify_relay : NULL, &v);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", first_rc ? ss_error_message() : "");
    /* A shard that cannot be opened is already a problem; its lengths are
     * unknown, so comparing them would report a second, false one. */
    for (uint32_t f = 0; f < s->h.nfields && shards_open; f++) {
        uint64_t bad = 0;
        if (!s->f[f].sequence) continue;
        int rc = ss__lengths_check(s, f, &bad);
        if (rc == 0 || rc == SS_ENOTFOUND) continue;
        ++*problems;
        if (!first_rc) first_rc = rc, snprintf(msg, sizeof msg, "%s", ss_error_message());
        snprintf(v.where, sizeof v.where,
                 "sections store '%s': attribute '" SS_LENGTHS_ATTR_PREFIX "%s'", SS_SECTIONS_NAME,
                 s->h.fields[f].name);
        ss_verify_problem p = {"stored lengths differ from the shards' indexes",
                               f,
                               bad,
                               bad,
                               bad < s->h.count ? bad + 1 : bad,
                               v.where};
        if (report) report(ctx, &p);
    }
    return first_rc ? ss__fail(first_rc, "%s", msg) : 0;
}

int ss__dataset_verify(uint64_t *problems, const ss_store *s, ss_verify_fn report, void *ctx) {
    const ss_dataset *ds = s->ds;
    uint64_t total = 0;
    int first_rc = 0, unopened = 0;
    char first_msg[1024] = "";
    for (uint32_t k = 0; k < ds->nshards; k++) {
        ds_verify_ctx v = {report, ctx, ds->first[k], "shard", ds->m.shards[k].path, {0}};
        ss_store *sh;
        uint64_t n = 0;
        int rc = ds_shard(&sh, s, k);
        if (rc) { /* missing, unreadable or not the shard the manifest describes */
            n = 1;
            unopened = 1;
            snprintf(v.where, sizeof v.where, "shard '%s'", v.shard_path);
            ss_verify_problem p = {"shard cannot be opened or differs from the manifest",
                                   SS_FIELD_NONE,
                                   k,
                                   ds->first[k],
                                   ds->first[k + 1],
                                   v.where};
            if (report) report(ctx, &p);
        } else {
            rc = ss_verify(&n, sh, report ? ds_verify_relay : NULL, &v);
        }
        if (rc && !first_rc) {
            first_rc =
                rc == SS_ECORRUPT || rc == SS_ENOTFOUND || rc == SS_ESCHEMA ? SS_ECORRUPT : rc;
            snprintf(first_msg, sizeof first_msg, "%s", ss_error_message());
        }
        total += n;
    }
    if (ds->sections) {
        uint64_t n = 0;
        int rc = ds_verify_sections(&n, s, !unopened, report, ctx);
        if (rc && !first_rc) {
            first_rc = rc == SS_ENOTFOUND ? SS_ECORRUPT : rc;
            snprintf(first_msg, sizeof first_msg, "%s", ss_error_message());
        }
        total += n;
    }
    if (problems) *problems = total;
    if (first_rc) return ss__fail(first_rc, "%s", first_msg);
    return 0;
}
