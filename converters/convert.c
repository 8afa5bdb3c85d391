/* SPDX-License-Identifier: BSD-2-Clause */
/* convert.c - the converter framework: `seqstore convert KIND ...` (see convert.h). */
#include "convert.h"
#include "commands.h"
#include "internal.h"
#include "resume.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

const ss_converter *const ss_converters[] = {&ss_converter_lines,
                                             &ss_converter_text,
                                             &ss_converter_parallel,
                                             &ss_converter_idx,
                                             &ss_converter_npy,
                                             &ss_converter_edf,
                                             &ss_converter_jsonl,
                                             &ss_converter_megatron,
                                             &ss_converter_audio,  /* h9 */
                                             &ss_converter_biosig, /* h9 */
                                             NULL};

/* The converters' commit size (--commit-bytes): smaller than the writer's
 * 64 MiB so that the write-back each NOSYNC commit starts overlaps the
 * decoding, even of stores of a few tens of MB, and ss_writer_finish's
 * flush finds little left (a 30 MB audio store: its fdatasync went from
 * ~20 ms to 2-10 ms); and small enough that the pages are still in the
 * CPU's caches when LMDB copies them into the page cache. 4 MiB against
 * 8 MiB: BioSig at 2 threads 0.76-0.80x its own read against 0.70-0.79x,
 * FLAC 0.61-0.64x against 0.55-0.57x, `--tokens bytes` 314 against 381 ms
 * (medians of 5-9 runs; 2 MiB was as good for signals, slower for text). */
#define SS_CONV_COMMIT_BYTES (4ull << 20)

/* ss_conv_later() threads at once at most (beyond: the work is done at once). */
#define SS_CONV_LATER 4

/* Bad records listed at the end with --skip-bad; beyond this only counted. */
#define SS_CONV_MAX_LISTED 1000
/* Look at the clock every this many progress/append calls. */
#define SS_CONV_TICK 4096
/* Redraw the progress line at most this often (seconds). */
#define SS_CONV_REDRAW 0.25

/* A bucket index to (re)build once the store is finished. */
typedef struct conv_index {
    char *name;
    uint32_t fields[SS_BUCKET_MAX_KEYS];
    size_t nkeys;
    uint64_t resolution;
} conv_index;

struct ss_conv {
    const ss_converter *conv;
    ss_conv_options opts;
    uint64_t commit_bytes;
    int argc; /* the arguments after "convert", for convert.options */
    char **argv;

    char **sources; /* this run's input paths */
    uint32_t nsources, sources_cap;
    uint32_t source_base; /* files recorded in the store before this run (--append) */
    char *old_files;      /* the store's source.files before this run (--append) */
    char *old_options;    /* its convert.options */
    char *old_converter;  /* its convert.converter */
    char **checked;       /* ss_conv_add_checked() files */
    uint32_t nchecked;

    ss_writer *w;
    int began, writer_broken, bad_input;
    uint32_t nfields; /* the converter's fields; `source` is fields[nfields] */
    ss_field fields[SS_MAX_FIELDS];
    uint64_t row_elems[SS_MAX_FIELDS];
    ss_value values[SS_MAX_FIELDS];
    uint64_t start_count; /* examples in the store when this run began */
    uint64_t base;        /* examples before this conversion (0, or an append's old count) */
    ss_resume_rec old;    /* --resume: the interrupted run's record (old.kind NULL: none) */
    uint32_t bad_source;  /* 1-based input at which bad input stopped the run, or 0 */
    uint64_t kill_after;  /* tests: SIGKILL ourselves after this many appends */
    uint64_t *many_src;   /* ss_conv_append_many(): the source field's values */
    uint64_t many_cap;    /* examples many_src holds */
    int old_store_fd;     /* --force, --threads > 1: the replaced store, until freed; or -1 */
    pthread_t later[SS_CONV_LATER]; /* ss_conv_later() threads, joined at the end */
    int nlater;
    int one_thread; /* ss_conv_one_thread(): start no thread */

    /* statistics and progress */
    uint64_t examples, elements, bytes_in, total_bytes;
    unsigned tick;
    int show_progress, drawn;
    double t0, last_draw;

    /* ss_conv_skipped() */
    uint64_t nskipped;
    const char *skipped_what, *skipped_why; /* what NULL: nothing reported */

    /* --skip-bad */
    char **bad;
    uint64_t nbad;

    /* bucket indices built after finishing: --index-by, and with --append the
     * store's existing ones (stale after the append) */
    conv_index *indices;
    uint32_t nindices;
    /* --index-by FIELDS --index-resolution R --index-name NAME (not in
     * ss_conv_options: converters have no use for them) */
    const char *index_by;
    uint64_t index_resolution;
    const char *index_name;

    /* --shard K/N: keep the examples whose first byte lies in the K-th of N
     * equal byte ranges of the sliced inputs taken in order (see convert.h) */
    uint32_t shard_k, shard_n; /* shard_n = 0: no --shard */
    uint64_t *shard_base;      /* per source: offset of its first byte among the sliced
                                  inputs; NULL until computed */
    uint64_t *shard_size;      /* per source: its size in the slicing */
    uint64_t *shard_given;     /* per source: ss_conv_shard_size(), or UINT64_MAX */
    uint32_t shard_given_cap;
    int shard_self;              /* ss_conv_shard_self(): the converter filters bad input */
    int no_store;                /* ss_conv_no_store(): the output is not a store */
    uint64_t shard_lo, shard_hi; /* this shard's byte range [lo, hi) */
    uint64_t shard_skip;         /* --resume: in-shard examples already stored */
};

static int shard_keeps_path(ss_conv *c, const char *file);

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- messages */

static void clear_progress(ss_conv *c) {
    if (c && c->drawn) {
        fputs("\r\033[K", stderr);
        c->drawn = 0;
    }
}

int ss_conv_error(ss_conv *c, const char *fmt, ...) {
    va_list ap;
    clear_progress(c);
    fputs("seqstore convert: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

int ss_conv_ss_error(ss_conv *c, const char *fmt, ...) {
    va_list ap;
    clear_progress(c);
    fputs("seqstore convert: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, ": %s\n", ss_error_message());
    return 1;
}

int ss_conv_usage_error(ss_conv *c, const char *fmt, ...) {
    va_list ap;
    const char *kind = c && c->conv ? c->conv->kind : NULL;
    clear_progress(c);
    fprintf(stderr, "seqstore convert%s%s: ", kind ? " " : "", kind ? kind : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'seqstore convert %s --help')\n", kind ? kind : "");
    return 2;
}

static char *xvasprintf(const char *fmt, va_list ap) {
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) return NULL;
    return s;
}

int ss_conv_bad(ss_conv *c, const char *file, uint64_t location, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    char *msg = NULL;
    int n = location ? asprintf(&msg, "%s:%" PRIu64 ": %s", file, location, what ? what : "?")
                     : asprintf(&msg, "%s: %s", file, what ? what : "?");
    free(what);
    if (n < 0) msg = NULL;
    if (c->shard_n && !c->shard_self &&
        !shard_keeps_path(c, file)) { /* another shard's input: its job reports it */
        free(msg);
        return 0;
    }
    if (!c->opts.skip_bad) {
        for (uint32_t k = 0; k < c->nsources && !c->bad_source; k++)
            if (!strcmp(c->sources[k], file)) c->bad_source = k + 1;
        ss_conv_error(c, "%s", msg ? msg : "bad input (out of memory)");
        free(msg);
        c->bad_input = 1;
        return 1;
    }
    if (c->nbad < SS_CONV_MAX_LISTED) {
        if (!c->bad) c->bad = calloc(SS_CONV_MAX_LISTED, sizeof *c->bad);
        if (c->bad) c->bad[c->nbad] = msg, msg = NULL;
    }
    free(msg);
    c->nbad++;
    return 0;
}

/* ------------------------------------------------------------------ shards */

/* floor(k * total / n) without overflow (k <= n <= 2^32). */
static uint64_t shard_start(uint64_t k, uint64_t n, uint64_t total) {
    return k * (total / n) + k * (total % n) / n;
}

/* The sliced inputs' layout and this shard's byte range [lo, hi): the bytes
 * of every non-auxiliary input concatenated in input order, T in all, cut at
 * b_k = floor(k*T/N). Returns 0 or 1 (error printed). */
static int shard_compute(ss_conv *c) {
    if (c->shard_base) return 0;
    size_t n = c->nsources ? c->nsources : 1;
    c->shard_base = calloc(n, sizeof *c->shard_base);
    c->shard_size = calloc(n, sizeof *c->shard_size);
    int rc = !c->shard_base || !c->shard_size ? ss_conv_error(c, "out of memory") : 0;
    uint64_t total = 0;
    for (uint32_t f = 0; !rc && f < c->nsources; f++) {
        struct stat st;
        c->shard_base[f] = total;
        if (f < c->shard_given_cap && c->shard_given[f] != UINT64_MAX) {
            total += c->shard_size[f] = c->shard_given[f];
            continue;
        }
        if (!strcmp(c->sources[f], "-") || stat(c->sources[f], &st) != 0 || !S_ISREG(st.st_mode))
            rc =
                ss_conv_error(c, "--shard: '%s' is not a regular file (shards slice files by size)",
                              c->sources[f]);
        else
            total += c->shard_size[f] = (uint64_t)st.st_size;
    }
    c->shard_lo = shard_start(c->shard_k, c->shard_n, total);
    c->shard_hi = shard_start(c->shard_k + 1ull, c->shard_n, total);
    if (c->shard_k + 1 == c->shard_n) c->shard_hi = UINT64_MAX; /* past-the-end bytes too */
    if (rc) {
        free(c->shard_base);
        free(c->shard_size);
        c->shard_base = c->shard_size = NULL;
    }
    return rc;
}

int ss_conv_shard_size(ss_conv *c, uint32_t source, uint64_t size) {
    if (source >= c->shard_given_cap) {
        uint32_t cap = source + 16;
        uint64_t *p = realloc(c->shard_given, cap * sizeof *p);
        if (!p) return ss_conv_error(c, "out of memory");
        for (uint32_t k = c->shard_given_cap; k < cap; k++) p[k] = UINT64_MAX;
        c->shard_given = p;
        c->shard_given_cap = cap;
    }
    c->shard_given[source] = size;
    return 0;
}

void ss_conv_shard_self(ss_conv *c) {
    c->shard_self = 1;
}

void ss_conv_shard_spec(const ss_conv *c, uint32_t *k, uint32_t *n) {
    *k = c->shard_k;
    *n = c->shard_n;
}

void ss_conv_no_store(ss_conv *c) {
    c->no_store = 1;
}

int ss_conv_shard_range(ss_conv *c, uint32_t source, uint64_t *lo, uint64_t *hi) {
    *lo = 0;
    *hi = UINT64_MAX;
    if (!c->shard_n) return 1;
    if (shard_compute(c) || source >= c->nsources) return *hi = 0, 0;
    uint64_t b = c->shard_base[source], size = c->shard_size[source];
    if (c->shard_hi <= b || (c->shard_lo >= b + size && size)) return *hi = 0, 0;
    if (!size && c->shard_lo > b) return *hi = 0, 0; /* an empty input: at its offset */
    *lo = c->shard_lo > b ? c->shard_lo - b : 0;
    *hi = c->shard_hi == UINT64_MAX ? UINT64_MAX : c->shard_hi - b;
    return 1;
}

int ss_conv_in_shard_at(ss_conv *c, uint32_t source, uint64_t byte) {
    uint64_t lo, hi;
    if (!ss_conv_shard_range(c, source, &lo, &hi)) return 0;
    return byte >= lo && byte < hi;
}

int ss_conv_in_shard(ss_conv *c, uint32_t source) {
    return ss_conv_in_shard_at(c, source, 0);
}

static int shard_keeps_path(ss_conv *c, const char *file) {
    for (uint32_t k = 0; k < c->nsources; k++)
        if (!strcmp(c->sources[k], file)) return ss_conv_in_shard(c, k);
    return 1; /* not an input (e.g. a vocabulary file): every shard's concern */
}

/* --shard K/N: 0 <= K < N, both decimal; or "auto": K and N are the rank
 * and world size of ss_rank_from_env(). Returns 0 or 2 (usage error). */
static int parse_shard(ss_conv *c, const char *text) {
    if (text && !strcmp(text, "auto")) {
        uint32_t r = SS_RANK_UNSET, w = SS_RANK_UNSET;
        if (ss_rank_from_env(&r, &w, NULL))
            return ss_conv_usage_error(c, "--shard auto: %s", ss_error_message());
        c->shard_k = r;
        c->shard_n = w;
        return 0;
    }
    const char *slash = text ? strchr(text, '/') : NULL;
    uint64_t k, n;
    char kbuf[32];
    if (!slash || (size_t)(slash - text) >= sizeof kbuf)
        return ss_conv_usage_error(c, "--shard needs K/N (0 <= K < N), not '%s'", text ? text : "");
    memcpy(kbuf, text, (size_t)(slash - text));
    kbuf[slash - text] = 0;
    if (ss_conv_parse_u64(c, "--shard N", slash + 1, 1, UINT32_MAX, &n) ||
        ss_conv_parse_u64(c, "--shard K", kbuf, 0, n - 1, &k))
        return 2;
    c->shard_k = (uint32_t)k;
    c->shard_n = (uint32_t)n;
    return 0;
}

/* ----------------------------------------------------------------- options */

const ss_conv_options *ss_conv_opts(const ss_conv *c) {
    return &c->opts;
}

int ss_conv_parse_u64(ss_conv *c, const char *option, const char *text, uint64_t min, uint64_t max,
                      uint64_t *out) {
    if (ss_parse_u64(text, min, max, out)) /* the CLI's one strict parser (cli.c) */
        return ss_conv_usage_error(c, "%s needs an integer in [%" PRIu64 ", %" PRIu64 "], not '%s'",
                                   option, min, max, text ? text : "");
    return 0;
}

uint64_t ss_conv_file_size(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    return (uint64_t)st.st_size;
}

/* ----------------------------------------------------------------- sources */

uint32_t ss_conv_add_source(ss_conv *c, const char *path) {
    if (c->nsources == c->sources_cap) {
        uint32_t cap = c->sources_cap ? 2 * c->sources_cap : 16;
        char **p = realloc(c->sources, cap * sizeof *p);
        if (!p) {
            fputs("seqstore convert: out of memory\n", stderr);
            exit(1);
        }
        c->sources = p;
        c->sources_cap = cap;
    }
    c->sources[c->nsources] = strdup(path);
    if (!c->sources[c->nsources]) {
        fputs("seqstore convert: out of memory\n", stderr);
        exit(1);
    }
    return c->nsources++;
}

void ss_conv_add_checked(ss_conv *c, const char *path) {
    if (c->opts.output && !strcmp(path, c->opts.output)) return;
    char **p = realloc(c->checked, (c->nchecked + 1) * sizeof *p);
    char *copy = strdup(path);
    if (!p || !copy) {
        fputs("seqstore convert: out of memory\n", stderr);
        exit(1);
    }
    c->checked = p;
    c->checked[c->nchecked++] = copy;
}

void ss_conv_set_total(ss_conv *c, uint64_t total_bytes) {
    c->total_bytes = total_bytes;
}

/* ---------------------------------------------------------------- progress */

static void fmt_duration(char *buf, size_t n, double s) {
    if (s < 0 || s > 1e7) {
        snprintf(buf, n, "?");
        return;
    }
    unsigned long t = (unsigned long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%lu:%02lu", t / 60, t % 60);
}

static void draw_progress(ss_conv *c, double t) {
    double el = t - c->t0;
    double mb = (double)c->bytes_in / 1e6;
    double rate = el > 0 ? mb / el : 0;
    char eta[64] = "";
    if (c->total_bytes && rate > 0 && c->bytes_in <= c->total_bytes) {
        char d[24];
        fmt_duration(d, sizeof d, ((double)(c->total_bytes - c->bytes_in) / 1e6) / rate);
        snprintf(eta, sizeof eta, "  %3.0f%%  ETA %s",
                 100.0 * (double)c->bytes_in / (double)c->total_bytes, d);
    }
    fprintf(stderr, "\r\033[K%" PRIu64 " examples  %.1f MB  %.1f MB/s%s", c->examples, mb, rate,
            eta);
    fflush(stderr);
    c->drawn = 1;
    c->last_draw = t;
}

static void tick(ss_conv *c) {
    if (++c->tick < SS_CONV_TICK) return;
    c->tick = 0;
    if (!c->show_progress) return;
    double t = now_seconds();
    if (t - c->last_draw >= SS_CONV_REDRAW) draw_progress(c, t);
}

void ss_conv_progress(ss_conv *c, uint64_t bytes) {
    c->bytes_in += bytes;
    tick(c);
}

void ss_conv_skipped(ss_conv *c, uint64_t n, const char *what, const char *why) {
    c->nskipped = n;
    c->skipped_what = what;
    c->skipped_why = why;
}

/* -------------------------------------------------------------- the store */

/* The store appended to or resumed, if any. Every attribute is checked here,
 * once: the converters then look theirs up as optional (a vocabulary, class
 * names, signal.*), and a damaged one must stop the conversion, naming it,
 * rather than read as absent and be written anew. */
static int open_existing(ss_conv *c, ss_store **out, unsigned flags) {
    *out = NULL;
    int rc = ss_open(out, c->opts.output, flags);
    if (rc == SS_ENOTFOUND) return 0;
    if (rc) return ss_conv_ss_error(c, "cannot open '%s'", c->opts.output);
    for (uint64_t k = 0; k < ss_attr_count(*out); k++) {
        ss_attr a;
        if (ss_attr_at(&a, *out, k) == 0) continue;
        rc = ss_conv_ss_error(c, "cannot read the attributes of '%s'", c->opts.output);
        ss_close(*out);
        *out = NULL;
        return rc;
    }
    return 0;
}

int ss_conv_open_existing(ss_conv *c, ss_store **out) {
    return open_existing(c, out, c->opts.resume ? SS_OPEN_INCOMPLETE : 0);
}

/* A copy of text attribute `name`, NUL-terminated; NULL when missing. */
static char *attr_text(const ss_store *s, const char *name) {
    ss_attr a;
    if (ss_attr_get(&a, s, name) != 0 || a.type != SS_ATTR_TEXT) return NULL;
    char *t = malloc(a.size + 1);
    if (!t) return NULL;
    memcpy(t, a.data, a.size);
    t[a.size] = 0;
    return t;
}

static uint32_t count_lines(const char *t) {
    uint32_t n = 0;
    if (!t || !*t) return 0;
    for (; *t; t++) n += *t == '\n';
    return t[-1] == '\n' ? n : n + 1;
}

static int same_field(const ss_field *a, const ss_field *b) {
    if (strcmp(a->name, b->name) || a->dtype != b->dtype || !a->sequence != !b->sequence ||
        a->ndim != b->ndim)
        return 0;
    for (uint32_t k = 0; k < a->ndim; k++)
        if (a->dims[k] != b->dims[k]) return 0;
    return 1;
}

static void describe_field(char *buf, size_t n, const ss_field *f) {
    int k = snprintf(buf, n, "%s %s%s", ss_dtype_name(f->dtype) ? ss_dtype_name(f->dtype) : "?",
                     f->sequence ? "sequence" : "fixed", f->ndim ? " of [" : "");
    for (uint32_t d = 0; d < f->ndim && k > 0 && (size_t)k < n; d++)
        k += snprintf(buf + k, n - (size_t)k, "%s%" PRIu64, d ? "," : "", f->dims[d]);
    if (f->ndim && k > 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, "]");
}

/* Compare the existing store's schema with ours; print the first difference. */
static int check_schema(ss_conv *c, const ss_store *s, uint32_t nf) {
    const ss_schema *old = ss_store_schema(s);
    char a[128], b[128];
    for (uint32_t k = 0; k < nf || k < old->nfields; k++) {
        if (k >= old->nfields)
            return ss_conv_error(
                c, "schema mismatch: '%s' has no field '%s' (it has %" PRIu32 " fields)",
                c->opts.output, c->fields[k].name, old->nfields);
        if (k >= nf)
            return ss_conv_error(c, "schema mismatch: '%s' has an extra field '%s'", c->opts.output,
                                 old->fields[k].name);
        if (!same_field(&old->fields[k], &c->fields[k])) {
            describe_field(a, sizeof a, &old->fields[k]);
            describe_field(b, sizeof b, &c->fields[k]);
            return ss_conv_error(c,
                                 "schema mismatch: field %" PRIu32 " of '%s' is '%s' (%s), this "
                                 "conversion makes '%s' (%s)",
                                 k, c->opts.output, old->fields[k].name, a, c->fields[k].name, b);
        }
    }
    return 0;
}

static char *join_lines(char **v, uint32_t n) {
    size_t len = 1;
    for (uint32_t k = 0; k < n; k++) len += strlen(v[k]) + 1;
    char *t = malloc(len), *p = t;
    if (!t) return NULL;
    for (uint32_t k = 0; k < n; k++) {
        size_t l = strlen(v[k]);
        memcpy(p, v[k], l);
        p += l;
        *p++ = '\n';
    }
    *p = 0;
    return t;
}

/* "a" + sep + "b", or a copy of whichever is not NULL. */
static char *concat(const char *a, const char *sep, const char *b) {
    char *t = NULL;
    if (asprintf(&t, "%s%s%s", a ? a : "", a && *a ? sep : "", b ? b : "") < 0) return NULL;
    return t;
}

static int set_text(ss_conv *c, const char *name, const char *text) {
    if (!text) return ss_conv_error(c, "out of memory");
    return ss_conv_set_attr(c, name, SS_ATTR_TEXT, text, strlen(text));
}

/* This run's arguments for convert.options and the resume record: without
 * those that cannot change the store (so that its bytes do not depend on the
 * thread count). A --resume records the interrupted run's instead, so that
 * the finished store equals an uninterrupted one. NULL: out of memory. */
static char **own_args(ss_conv *c, uint32_t *n) {
    char **kept = calloc((size_t)c->argc + c->old.nargs + 1, sizeof *kept);
    *n = 0;
    if (kept && c->old.kind) {
        memcpy(kept, c->old.args, c->old.nargs * sizeof *kept);
        *n = c->old.nargs;
        return kept;
    }
    for (int i = 0; kept && i < c->argc; i++) {
        const char *a = c->argv[i];
        if (!strcmp(a, "--quiet") || !strcmp(a, "-q") || !strncmp(a, "--threads=", 10)) continue;
        if (!strcmp(a, "--threads")) {
            i++;
            continue;
        }
        if (!strcmp(a, "--")) {
            for (; i < c->argc; i++) kept[(*n)++] = c->argv[i];
            break;
        }
        kept[(*n)++] = c->argv[i];
    }
    return kept;
}

/* Store the resume record of this conversion (written from the next commit). */
static int set_resume_record(ss_conv *c) {
    ss_resume_rec r = {.kind = c->conv->kind, .base = c->base, .stopped = c->bad_source};
    char **args = own_args(c, &r.nargs);
    r.args = (const char **)args;
    char *text = NULL;
    size_t len = 0;
    if (args && ss_resume_stat(&r.inputs, c->sources, c->nsources) == 0 &&
        ss_resume_stat(&r.files, c->checked, c->nchecked) == 0) {
        r.ninputs = c->nsources;
        r.nfiles = c->nchecked;
        text = ss_resume_encode(&r, &len);
    }
    free(args);
    free(r.inputs);
    free(r.files);
    if (!text) return ss_conv_error(c, "out of memory");
    int rc = ss_writer_set_resume_record(c->w, text, len);
    free(text);
    return rc ? ss_conv_ss_error(c, "cannot record the resume state") : 0;
}

static int write_framework_attrs(ss_conv *c) {
    char *files = join_lines(c->sources, c->nsources);
    uint32_t nkept = 0;
    char **kept = own_args(c, &nkept);
    char *args = kept ? join_lines(kept, nkept) : NULL;
    free(kept);
    char *all_files = concat(c->old_files, "", files);
    char *all_args = concat(c->old_options, "\n", args);
    char *kinds = concat(c->old_converter, "\n", c->conv->kind);
    int rc = set_text(c, "source.files", all_files) || set_text(c, "convert.options", all_args) ||
             set_text(c, "convert.converter", kinds) ||
             set_text(c, "convert.version", ss_version());
    if (!rc && c->shard_n) { /* spec/FORMAT.md §13: `dataset build` checks the set */
        char shard[32];
        snprintf(shard, sizeof shard, "%u/%u", c->shard_k, c->shard_n);
        rc = set_text(c, "source.shard", shard);
    }
    free(files);
    free(args);
    free(all_files);
    free(all_args);
    free(kinds);
    return rc;
}

/* ---------------------------------------------------------- bucket indices */

/* Add (or, for a name already listed, replace) an index to build at finish.
 * Returns 0 or 1 (error printed). */
static int add_index(ss_conv *c, const char *name, const uint32_t *fields, size_t nkeys,
                     uint64_t resolution) {
    conv_index *x = NULL;
    for (uint32_t k = 0; k < c->nindices; k++)
        if (!strcmp(c->indices[k].name, name)) x = &c->indices[k];
    if (!x) {
        conv_index *p = realloc(c->indices, (c->nindices + 1) * sizeof *p);
        char *n = strdup(name);
        if (!p || !n) {
            if (p) c->indices = p;
            free(n);
            return ss_conv_error(c, "out of memory");
        }
        c->indices = p;
        x = &c->indices[c->nindices++];
        x->name = n;
    }
    memcpy(x->fields, fields, nkeys * sizeof *fields);
    x->nkeys = nkeys;
    x->resolution = resolution;
    return 0;
}

/* --append: remember every bucket index of the existing store (its keys and
 * resolution), to rebuild it once the new examples are in. */
static int collect_indices(ss_conv *c, const ss_store *s) {
    size_t plen = strlen(SS_BUCKET_ATTR_PREFIX);
    uint64_t n = ss_attr_count(s);
    for (uint64_t k = 0; k < n; k++) {
        ss_attr a;
        if (ss_attr_at(&a, s, k)) return ss_conv_ss_error(c, "cannot read the attributes");
        if (strncmp(a.name, SS_BUCKET_ATTR_PREFIX, plen) || !a.name[plen]) continue;
        const char *name = a.name + plen;
        ss_bucket *b;
        if (ss_bucket_open(&b, s, name)) { /* e.g. stale already: left as it is */
            clear_progress(c);
            fprintf(stderr,
                    "seqstore convert: warning: bucket index '%s' is not rebuilt (%s); "
                    "rebuild it with 'seqstore index'\n",
                    name, ss_error_message());
            continue;
        }
        uint32_t fields[SS_BUCKET_MAX_KEYS];
        size_t nkeys = ss_bucket_keys(fields, b);
        uint64_t res = ss_bucket_resolution(b);
        ss_bucket_free(b);
        if (add_index(c, name, fields, nkeys, res)) return 1;
    }
    return 0;
}

/* --index-by: the key fields among the converter's sequence fields. Returns 0
 * or 1 (error printed). */
static int resolve_index(ss_conv *c, uint32_t fields[SS_BUCKET_MAX_KEYS], size_t *nkeys) {
    const char *p = c->index_by;
    *nkeys = 0;
    for (;;) {
        size_t len = strcspn(p, ",");
        uint32_t k = 0;
        while (k < c->nfields &&
               (strlen(c->fields[k].name) != len || strncmp(c->fields[k].name, p, len) != 0))
            k++;
        if (len == 0) return ss_conv_error(c, "--index-by: empty field name");
        if (k == c->nfields)
            return ss_conv_error(c, "--index-by: this conversion has no field '%.*s'", (int)len, p);
        if (!c->fields[k].sequence)
            return ss_conv_error(c, "--index-by: field '%s' is not a sequence field",
                                 c->fields[k].name);
        if (*nkeys == SS_BUCKET_MAX_KEYS)
            return ss_conv_error(c, "--index-by takes at most %d fields", SS_BUCKET_MAX_KEYS);
        fields[(*nkeys)++] = k;
        if (!p[len]) break;
        p += len + 1;
    }
    return 0;
}

/* After the store is finished: build and store every listed index. */
static int build_indices(ss_conv *c) {
    for (uint32_t k = 0; k < c->nindices; k++) {
        const conv_index *x = &c->indices[k];
        ss_bucket_options bo = SS_BUCKET_OPTIONS_INIT;
        bo.resolution = x->resolution;
        if (ss_bucket_save(c->opts.output, x->name, x->fields, x->nkeys, &bo))
            return ss_conv_ss_error(c,
                                    "'%s' is complete but its bucket index '%s' could not be "
                                    "built (rebuild it with 'seqstore index')",
                                    c->opts.output, x->name);
    }
    return 0;
}

/* --append: the store must exist, be complete and have our schema. */
static int prepare_append(ss_conv *c, uint32_t nf) {
    ss_store *s = NULL;
    if (open_existing(c, &s, 0)) return 1;
    if (!s)
        return ss_conv_error(c, "--append: '%s' does not exist (omit --append to create it)",
                             c->opts.output);
    int rc = check_schema(c, s, nf);
    if (!rc) rc = collect_indices(c, s);
    if (!rc) {
        c->old_files = attr_text(s, "source.files");
        c->old_options = attr_text(s, "convert.options");
        c->old_converter = attr_text(s, "convert.converter");
        c->source_base = count_lines(c->old_files);
        if (c->old_files && *c->old_files && c->old_files[strlen(c->old_files) - 1] != '\n') {
            char *t = concat(c->old_files, "", "\n");
            free(c->old_files);
            c->old_files = t;
        }
    }
    ss_close(s);
    return rc;
}

/* --resume: returns 1 (error printed), 0 with *exists = whether there is
 * something to resume. An interrupted append (opts.append was set by
 * probe_interrupted_append) is prepared as the append was. */
static int prepare_resume(ss_conv *c, uint32_t nf, int *exists) {
    ss_store *s = NULL;
    *exists = 0;
    if (c->opts.append) {
        if (prepare_append(c, nf)) return 1;
        if (open_existing(c, &s, 0)) return 1;
        c->base = s ? ss_count(s) : 0;
        ss_close(s);
        s = NULL;
    }
    if (open_existing(c, &s, SS_OPEN_INCOMPLETE)) return 1;
    if (!s) return 0;
    ss_store_info info;
    int rc = ss_store_get_info(&info, s);
    if (!rc && info.complete)
        rc = ss_conv_error(c,
                           "--resume: '%s' is complete (%" PRIu64
                           " examples); nothing to resume (--force redoes it, --append adds)",
                           c->opts.output, info.count);
    if (!rc) rc = check_schema(c, s, nf);
    ss_close(s);
    *exists = 1;
    return rc;
}

/* A store written before resume records existed: its source.files must
 * match (the only check possible). */
static int check_legacy_resume(ss_conv *c) {
    ss_store *s = NULL;
    if (open_existing(c, &s, SS_OPEN_INCOMPLETE) || !s) return 1;
    char *old = attr_text(s, "source.files");
    char *now = join_lines(c->sources, c->nsources);
    int rc = 0;
    if (old && now && strcmp(old, now) != 0)
        rc = ss_conv_error(c,
                           "--resume: the input files differ from those of the interrupted "
                           "conversion of '%s' (its source.files attribute)",
                           c->opts.output);
    free(old);
    free(now);
    ss_close(s);
    return rc;
}

/* --resume, the writer open: this run must continue the interrupted one
 * (same converter, inputs, options); its record then supplies the options
 * recorded in convert.options. Returns 0 or 1 (error printed). */
static int check_resume(ss_conv *c) {
    size_t len;
    const void *data = ss_writer_resume_record(c->w, &len);
    char msg[2048];
    if (!data) {
        if (ss_writer_count(c->w) == c->base) return 0; /* nothing of it committed */
        if (c->opts.append)
            return ss_conv_error(c,
                                 "--resume: '%s' has an unfinished append without a resume "
                                 "record; it cannot be continued safely",
                                 c->opts.output);
        return check_legacy_resume(c);
    }
    if (ss_resume_decode(&c->old, data, len, msg, sizeof msg))
        return ss_conv_error(c, "--resume: '%s': %s", c->opts.output, msg);
    ss_resume_rec now = {.kind = c->conv->kind, .base = c->base};
    now.args = (const char **)c->argv;
    now.nargs = (uint32_t)c->argc;
    if (ss_resume_stat(&now.inputs, c->sources, c->nsources) ||
        ss_resume_stat(&now.files, c->checked, c->nchecked)) {
        free(now.inputs);
        return ss_conv_error(c, "out of memory");
    }
    now.ninputs = c->nsources;
    now.nfiles = c->nchecked;
    int rc = ss_resume_check(&c->old, &now, msg, sizeof msg);
    free(now.inputs);
    free(now.files);
    if (rc)
        return ss_conv_error(c, "--resume: %s; the store '%s' is left as it was", msg,
                             c->opts.output);
    return 0;
}

/* --force with --threads > 1: hold the store about to be replaced open, so
 * that unlinking it only removes its name; free_old_store() then closes it
 * on a thread of its own, where the file system frees its blocks and pages
 * (tens of ms for a store of 100 MB) while the conversion goes on. */
static void hold_old_store(ss_conv *c) {
    struct stat st;
    if (c->opts.threads <= 1 || c->one_thread || stat(c->opts.output, &st) != 0 ||
        !S_ISREG(st.st_mode))
        return;
    c->old_store_fd = open(c->opts.output, O_RDONLY | O_CLOEXEC);
}

static void *close_fd(void *arg) {
    close((int)(intptr_t)arg);
    return NULL;
}

static void free_old_store(ss_conv *c) {
    if (c->old_store_fd < 0) return;
    void *fd = (void *)(intptr_t)c->old_store_fd;
    c->old_store_fd = -1;
    ss_conv_later(c, close_fd, fd);
}

void ss_conv_one_thread(ss_conv *c) {
    c->one_thread = 1;
}

void ss_conv_later(ss_conv *c, void *(*fn)(void *), void *arg) {
    if (c->opts.threads > 1 && !c->one_thread && c->nlater < SS_CONV_LATER &&
        pthread_create(&c->later[c->nlater], NULL, fn, arg) == 0)
        c->nlater++;
    else
        fn(arg);
}

int ss_conv_begin(ss_conv *c, const ss_schema *schema, uint64_t *skip) {
    *skip = 0;
    if (c->began) return ss_conv_error(c, "internal error: ss_conv_begin called twice");
    if (schema->nfields + 1 > SS_MAX_FIELDS)
        return ss_conv_error(c, "too many fields (%" PRIu32 ")", schema->nfields);
    c->nfields = schema->nfields;
    for (uint32_t k = 0; k < schema->nfields; k++) {
        c->fields[k] = schema->fields[k];
        if (!strcmp(c->fields[k].name, "source"))
            return ss_conv_error(c, "internal error: the field name 'source' is reserved");
        uint64_t e = 1;
        for (uint32_t d = 0; d < c->fields[k].ndim; d++) e *= c->fields[k].dims[d];
        c->row_elems[k] = e;
    }
    c->fields[c->nfields] =
        (ss_field){.name = "source", .dtype = SS_U64, .sequence = 0, .ndim = 1, .dims = {2}};
    uint32_t nf = c->nfields + 1;
    ss_schema full = {nf, c->fields};
    uint32_t ifields[SS_BUCKET_MAX_KEYS];
    size_t inkeys = 0;
    if (c->index_by && resolve_index(c, ifields, &inkeys)) return 1;
    if (c->shard_n && shard_compute(c)) return 1;

    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_NOSYNC;
    wo.commit_bytes = c->commit_bytes ? c->commit_bytes : SS_CONV_COMMIT_BYTES;
    int rc;
    ss_cli_note_store(c->opts.output, 0); /* its lock file goes when the command ends */
    if (c->opts.append && !c->opts.resume) {
        if (prepare_append(c, nf)) return 1;
        rc = ss_writer_open(&c->w, c->opts.output, &full, &wo);
        if (rc) return ss_conv_ss_error(c, "cannot append to '%s'", c->opts.output);
    } else if (c->opts.resume) {
        int exists;
        if (prepare_resume(c, nf, &exists)) return 1;
        if (exists) {
            wo.flags |= SS_WRITE_RESUME;
            rc = ss_writer_open(&c->w, c->opts.output, &full, &wo);
            if (rc) return ss_conv_ss_error(c, "cannot resume the store");
            if (check_resume(c)) {
                ss_writer_free(c->w);
                c->w = NULL;
                return 1;
            }
            *skip = ss_writer_count(c->w) - c->base;
            /* --shard: the converter's examples include other shards'; the
             * framework skips this shard's stored ones itself */
            if (c->shard_n) c->shard_skip = *skip, *skip = 0;
        } else {
            rc = ss_writer_create(&c->w, c->opts.output, &full, &wo);
            if (rc) return ss_conv_ss_error(c, "cannot create the store");
        }
    } else {
        if (c->opts.force) {
            wo.flags |= SS_WRITE_FORCE;
            hold_old_store(c);
        }
        rc = ss_writer_create(&c->w, c->opts.output, &full, &wo);
        free_old_store(c);
        if (rc == SS_EEXIST)
            return ss_conv_error(c,
                                 "'%s' exists (--force replaces it, --append adds to it, "
                                 "--resume continues an interrupted conversion)",
                                 c->opts.output);
        if (rc) return ss_conv_ss_error(c, "cannot create the store");
    }
    /* after the --append's old indices, so that a name given again is replaced */
    if (c->index_by && add_index(c, c->index_name ? c->index_name : c->index_by, ifields, inkeys,
                                 c->index_resolution))
        return 1;
    c->began = 1;
    c->start_count = ss_writer_count(c->w);
    if (c->opts.append && !c->opts.resume) c->base = c->start_count;
    if (write_framework_attrs(c) || set_resume_record(c)) return 1;
    /* the record is in the store before any example is: whatever is
     * committed later, a --resume can check it continues the same run */
    if (ss_writer_commit(c->w)) {
        c->writer_broken = 1;
        return ss_conv_ss_error(c, "cannot write to '%s'", c->opts.output);
    }
    return 0;
}

int ss_conv_append(ss_conv *c, const ss_value *values, uint32_t source, uint64_t location) {
    return ss_conv_append_at(c, values, source, location, 0);
}

int ss_conv_append_at(ss_conv *c, const ss_value *values, uint32_t source, uint64_t location,
                      uint64_t byte) {
    if (c->shard_n) {
        if (!ss_conv_in_shard_at(c, source, byte)) return 0;
        if (c->shard_skip) {
            c->shard_skip--;
            return 0;
        }
    }
    uint64_t src[2] = {(uint64_t)c->source_base + source + 1, location};
    memcpy(c->values, values, c->nfields * sizeof *values);
    c->values[c->nfields] = (ss_value){src, 1};
    int rc = ss_writer_append(c->w, c->values);
    if (rc) {
        if (rc != SS_EINVAL) c->writer_broken = 1;
        return ss_conv_ss_error(c, "cannot append example %" PRIu64 " to '%s'",
                                ss_writer_count(c->w), c->opts.output);
    }
    c->examples++;
    if (c->kill_after && c->examples == c->kill_after) raise(SIGKILL);
    for (uint32_t k = 0; k < c->nfields; k++)
        c->elements += (c->fields[k].sequence ? values[k].length : 1) * c->row_elems[k];
    tick(c);
    return 0;
}

/* ss_conv_append_many() one by one: --shard (examples dropped or skipped),
 * SS_TEST_KILL_AFTER (a kill after an exact example). */
static int append_each(ss_conv *c, uint64_t n, const void *const *data,
                       const uint64_t *const *lengths, uint32_t source, const uint64_t *locations,
                       uint64_t byte) {
    const unsigned char *at[SS_MAX_FIELDS];
    for (uint32_t f = 0; f < c->nfields; f++) at[f] = data[f];
    ss_value v[SS_MAX_FIELDS];
    for (uint64_t k = 0; k < n; k++) {
        for (uint32_t f = 0; f < c->nfields; f++) {
            uint64_t len = c->fields[f].sequence ? lengths[f][k] : 1;
            v[f] = (ss_value){at[f], len};
            at[f] += len * c->row_elems[f] * ss_dtype_size(c->fields[f].dtype);
        }
        if (ss_conv_append_at(c, v, source, locations[k], byte)) return 1;
    }
    return 0;
}

int ss_conv_append_many(ss_conv *c, uint64_t n, const void *const *data,
                        const uint64_t *const *lengths, uint32_t source, const uint64_t *locations,
                        uint64_t byte) {
    if (c->shard_n || c->kill_after)
        return append_each(c, n, data, lengths, source, locations, byte);
    if (n > c->many_cap) { /* the source field's values: (source, location) pairs */
        uint64_t *p = realloc(c->many_src, n * 2 * sizeof *p);
        if (!p) return ss_conv_error(c, "out of memory");
        c->many_src = p;
        c->many_cap = n;
    }
    uint64_t src = (uint64_t)c->source_base + source + 1;
    for (uint64_t k = 0; k < n; k++) {
        c->many_src[2 * k] = src;
        c->many_src[2 * k + 1] = locations[k];
    }
    const void *d[SS_MAX_FIELDS];
    const uint64_t *l[SS_MAX_FIELDS];
    memcpy(d, data, c->nfields * sizeof *d);
    memcpy(l, lengths, c->nfields * sizeof *l);
    d[c->nfields] = c->many_src;
    l[c->nfields] = NULL;
    uint64_t before = ss_writer_count(c->w);
    int rc = ss__writer_append_many(c->w, n, d, l);
    uint64_t done = ss_writer_count(c->w) - before;
    c->examples += done;
    for (uint32_t f = 0; f < c->nfields; f++) {
        uint64_t rows = done;
        if (c->fields[f].sequence)
            for (uint64_t k = rows = 0; k < done; k++) rows += lengths[f][k];
        c->elements += rows * c->row_elems[f];
    }
    c->tick += (unsigned)(done < SS_CONV_TICK ? done : SS_CONV_TICK);
    tick(c);
    if (rc) {
        if (rc != SS_EINVAL) c->writer_broken = 1;
        return ss_conv_ss_error(c, "cannot append example %" PRIu64 " to '%s'",
                                ss_writer_count(c->w), c->opts.output);
    }
    return 0;
}

int ss_conv_set_attr(ss_conv *c, const char *name, uint32_t type, const void *data, size_t size) {
    if (!c->w) return ss_conv_error(c, "internal error: attribute '%s' set before begin", name);
    if (ss_writer_set_attr(c->w, name, type, data, size))
        return ss_conv_ss_error(c, "cannot set attribute '%s'", name);
    return 0;
}

ss_writer *ss_conv_writer(ss_conv *c) {
    return c->w;
}

/* ------------------------------------------------------------- the command */

static void print_kinds(FILE *out) {
    for (int k = 0; ss_converters[k]; k++)
        fprintf(out, "  %-9s %s\n", ss_converters[k]->kind, ss_converters[k]->summary);
}

static void common_usage(FILE *out) {
    fputs("common options:\n"
          "  -o, --output STORE  the store to write (required)\n"
          "  --force             replace an existing STORE\n"
          "  --append            add to an existing STORE of the same schema\n"
          "  --resume            continue an interrupted conversion or --append after\n"
          "                      its last committed example (same inputs and options;\n"
          "                      refused otherwise; not for standard input)\n"
          "  --skip-bad          skip bad records or files; list them at the end\n"
          "  --quiet             no progress line, no summary\n"
          "  --threads N         decoding threads (default: CPUs, at most 8; convert\n"
          "                      edf decodes in N processes); the store is the same\n"
          "                      whatever N\n"
          "  --commit-bytes N    commit (a --resume point) every N bytes of data\n"
          "                      (default 4 MiB)\n"
          "  --index-by FIELD[,FIELD...]\n"
          "                      also store a bucket index by these sequence fields'\n"
          "                      lengths (the same as 'seqstore index --by' after)\n"
          "  --index-resolution R  its bucket width, R >= 1 (required with --index-by)\n"
          "  --index-name NAME   its name (default: the --index-by text); --append\n"
          "                      also rebuilds the indices the store already has\n"
          "  --shard K/N|auto    write only shard K (0-based) of N: the examples whose\n"
          "                      first byte is in the K-th of N equal byte ranges of\n"
          "                      all inputs (whole files; a large text/jsonl file is\n"
          "                      cut at line boundaries); shards 0..N-1 in order hold\n"
          "                      exactly the examples of one conversion; a word\n"
          "                      vocabulary is counted over every input by every shard\n"
          "                      (auto: K/N = rank/world size from RANK/WORLD_SIZE,\n"
          "                      OMPI_COMM_WORLD_RANK/_SIZE or SLURM_PROCID/NTASKS)\n"
          "  -h, --help          this help\n"
          "exit status: 0 ok, 1 error (bad input, I/O), 2 usage error\n",
          out);
}

static void general_usage(FILE *out) {
    fputs("usage: seqstore convert KIND INPUT... -o STORE [options]\n\nkinds:\n", out);
    print_kinds(out);
    fputc('\n', out);
    common_usage(out);
}

static const ss_converter *find_converter(const char *kind) {
    for (int k = 0; ss_converters[k]; k++)
        if (!strcmp(ss_converters[k]->kind, kind)) return ss_converters[k];
    return NULL;
}

/* Value of an option given as "--opt VALUE" or "--opt=VALUE" (or "-oVALUE"). */
static const char *opt_value(int argc, char **argv, int *i, const char *arg, size_t namelen) {
    if (arg[namelen] == '=') return arg + namelen + 1;
    if (arg[namelen] && arg[1] != '-') return arg + namelen; /* -oSTORE */
    if (*i + 1 >= argc) return NULL;
    return argv[++*i];
}

static int is_opt(const char *arg, const char *name) {
    size_t n = strlen(name);
    return !strncmp(arg, name, n) && (arg[n] == 0 || arg[n] == '=');
}

/* The --index-* options go together; the name must fit an attribute name. */
static int check_index_options(ss_conv *c) {
    const ss_conv *o = c;
    if (!o->index_by && (o->index_resolution || o->index_name))
        return ss_conv_usage_error(c, "--index-resolution and --index-name need --index-by");
    if (o->index_by && !o->index_resolution)
        return ss_conv_usage_error(c, "--index-by needs --index-resolution R (R >= 1)");
    if (!o->index_by) return 0;
    const char *name = o->index_name ? o->index_name : o->index_by;
    if (strlen(SS_BUCKET_ATTR_PREFIX) + strlen(name) > SS_MAX_ATTR_NAME)
        return ss_conv_usage_error(c, "index name '%s' is longer than %zu bytes", name,
                                   (size_t)SS_MAX_ATTR_NAME - strlen(SS_BUCKET_ATTR_PREFIX));
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return ss_conv_usage_error(
                c, "index name '%s' may hold only printable ASCII without spaces", name);
    return 0;
}

/* Remove the common options from argv[2..]; the rest goes to rest[] after KIND. */
static int parse_common(ss_conv *c, int argc, char **argv, char **rest, int *nrest, int *help) {
    int n = 0;
    rest[n++] = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            for (; i < argc; i++) rest[n++] = argv[i];
            break;
        }
        if (is_opt(a, "--output") || !strncmp(a, "-o", 2)) {
            c->opts.output = opt_value(argc, argv, &i, a, a[1] == '-' ? 8 : 2);
            if (!c->opts.output || !*c->opts.output)
                return ss_conv_usage_error(c, "-o/--output needs a STORE path");
        } else if (!strcmp(a, "--force")) {
            c->opts.force = 1;
        } else if (!strcmp(a, "--append")) {
            c->opts.append = 1;
        } else if (!strcmp(a, "--resume")) {
            c->opts.resume = 1;
        } else if (!strcmp(a, "--skip-bad")) {
            c->opts.skip_bad = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            c->opts.quiet = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = 1;
        } else if (is_opt(a, "--threads")) {
            uint64_t v;
            const char *s = opt_value(argc, argv, &i, a, 9);
            if (ss_conv_parse_u64(c, "--threads", s, 1, 256, &v)) return 2;
            c->opts.threads = (int)v;
        } else if (is_opt(a, "--index-by")) {
            c->index_by = opt_value(argc, argv, &i, a, 10);
            if (!c->index_by || !*c->index_by)
                return ss_conv_usage_error(c, "--index-by needs FIELD[,FIELD...]");
        } else if (is_opt(a, "--index-resolution")) {
            const char *s = opt_value(argc, argv, &i, a, 18);
            if (ss_conv_parse_u64(c, "--index-resolution", s, 1, UINT64_MAX, &c->index_resolution))
                return 2;
        } else if (is_opt(a, "--index-name")) {
            c->index_name = opt_value(argc, argv, &i, a, 12);
            if (!c->index_name || !*c->index_name)
                return ss_conv_usage_error(c, "--index-name needs a NAME");
        } else if (is_opt(a, "--shard")) {
            if (parse_shard(c, opt_value(argc, argv, &i, a, 7))) return 2;
        } else if (is_opt(a, "--commit-bytes")) {
            const char *s = opt_value(argc, argv, &i, a, 14);
            if (ss_conv_parse_u64(c, "--commit-bytes", s, 1, UINT64_MAX, &c->commit_bytes))
                return 2;
        } else {
            rest[n++] = argv[i];
        }
    }
    rest[n] = NULL;
    *nrest = n;
    return check_index_options(c);
}

static void print_summary(ss_conv *c) {
    double el = now_seconds() - c->t0;
    double out = (double)ss_conv_file_size(c->opts.output) / 1e6;
    fprintf(stderr,
            "seqstore convert: %" PRIu64 " example%s, %" PRIu64
            " element%s, %.2f MB in, %.2f MB out, %.2f s, %.1f MB/s%s\n",
            c->examples, c->examples == 1 ? "" : "s", c->elements, c->elements == 1 ? "" : "s",
            (double)c->bytes_in / 1e6, out, el, el > 0 ? (double)c->bytes_in / 1e6 / el : 0.0,
            c->start_count ? " (after the examples already in the store)" : "");
    if (c->skipped_what)
        fprintf(stderr, "seqstore convert: skipped %" PRIu64 " %s%s%s%s%s\n", c->nskipped,
                c->skipped_what, c->nskipped == 1 ? "" : "s", c->skipped_why ? " (" : "",
                c->skipped_why ? c->skipped_why : "", c->skipped_why ? ")" : "");
}

static void print_skipped(ss_conv *c) {
    if (!c->nbad) return;
    fprintf(stderr, "seqstore convert: skipped %" PRIu64 " bad input%s:\n", c->nbad,
            c->nbad == 1 ? "" : "s");
    uint64_t listed = c->nbad < SS_CONV_MAX_LISTED ? c->nbad : SS_CONV_MAX_LISTED;
    for (uint64_t k = 0; k < listed; k++)
        fprintf(stderr, "  %s\n", c->bad && c->bad[k] ? c->bad[k] : "(out of memory)");
    if (c->nbad > listed) fprintf(stderr, "  ... and %" PRIu64 " more\n", c->nbad - listed);
}

/* 1 if an input cannot be read a second time (stdin, a pipe). */
static int has_unrepeatable_input(const ss_conv *c) {
    for (uint32_t k = 0; k < c->nsources; k++) {
        struct stat st;
        if (!strcmp(c->sources[k], "-") || stat(c->sources[k], &st) != 0 || !S_ISREG(st.st_mode))
            return 1;
    }
    return 0;
}

/* 1 if the file system holding the store has (next to) no space left: the
 * likely reason a write failed, whatever errno LMDB passed on. */
static int disk_full(const ss_conv *c, const char *msg) {
    if (msg && strstr(msg, "No space left")) return 1;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", c->opts.output);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = 0;
    else
        snprintf(dir, sizeof dir, ".");
    struct statvfs vfs;
    return statvfs(dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < (4u << 20);
}

/* Examples committed to the store (a new writer's count is lost with it). */
static uint64_t committed_count(ss_conv *c) {
    ss_store *s = NULL;
    uint64_t n = 0;
    if (ss_open(&s, c->opts.output, SS_OPEN_INCOMPLETE) == 0) n = ss_count(s);
    ss_close(s);
    return n;
}

/* After a failed run: keep what can be kept, never look complete, and say
 * how to go on. An append leaves the store readable as it was before. */
static void abandon(ss_conv *c) {
    if (!c->w) return;
    const char *why = c->writer_broken ? ss_error_message() : NULL;
    char why_copy[1024];
    snprintf(why_copy, sizeof why_copy, "%s", why ? why : "");
    if (!c->writer_broken && set_resume_record(c) == 0) ss_writer_commit(c->w);
    ss_writer_free(c->w);
    c->w = NULL;
    uint64_t n = committed_count(c);
    uint64_t mine = n > c->base ? n - c->base : 0;
    int full = c->writer_broken && disk_full(c, why_copy);
    int again = has_unrepeatable_input(c);
    clear_progress(c);
    if (full) fprintf(stderr, "seqstore convert: the disk holding '%s' is full\n", c->opts.output);
    const char *next = again  ? "rerun the conversion (its standard input or pipe cannot be read "
                                "again, so --resume cannot continue it)"
                       : full ? "free some space and rerun with --resume"
                              : "fix the problem and rerun with --resume";
    if (c->opts.append)
        fprintf(stderr,
                "seqstore convert: the append to '%s' is unfinished with %" PRIu64
                " of its examples committed; the store reads as it did before the append "
                "(%" PRIu64 " examples); %s\n",
                c->opts.output, mine, c->base, next);
    else
        fprintf(stderr,
                "seqstore convert: '%s' is left incomplete with %" PRIu64
                " committed example%s; %s%s\n",
                c->opts.output, n, n == 1 ? "" : "s", next,
                again ? "" : " (or --force to start over)");
}

static int finish(ss_conv *c) {
    if (c->no_store && !c->began) return 0;
    if (!c->began) return ss_conv_error(c, "%s: no store was written", c->conv->kind);
    if (ss_writer_finish(c->w)) {
        ss_conv_ss_error(c, "cannot finish '%s'", c->opts.output);
        ss_writer_free(c->w);
        c->w = NULL;
        return 1;
    }
    ss_writer_free(c->w);
    c->w = NULL;
    if (build_indices(c)) return 1;
    clear_progress(c);
    print_skipped(c);
    if (!c->opts.quiet) print_summary(c);
    return 0;
}

/* --resume: is it an append that was interrupted (the store still reads as
 * complete, its progress record holds the append)? Then the converter must
 * treat the run as an append (e.g. take the store's vocabulary). */
static int probe_interrupted_append(ss_conv *c) {
    ss_store *s = NULL;
    if (ss_open(&s, c->opts.output, 0) != 0) return 0;
    ss_close(s);
    return 1;
}

static void conv_free(ss_conv *c) {
    if (c->w) ss_writer_free(c->w);
    for (int k = 0; k < c->nlater; k++) pthread_join(c->later[k], NULL);
    free(c->many_src);
    for (uint32_t k = 0; k < c->nsources; k++) free(c->sources[k]);
    free(c->sources);
    if (c->bad)
        for (uint64_t k = 0; k < c->nbad && k < SS_CONV_MAX_LISTED; k++) free(c->bad[k]);
    free(c->bad);
    free(c->old_files);
    free(c->old_options);
    free(c->old_converter);
    ss_resume_rec_free(&c->old);
    for (uint32_t k = 0; k < c->nchecked; k++) free(c->checked[k]);
    free(c->checked);
    for (uint32_t k = 0; k < c->nindices; k++) free(c->indices[k].name);
    free(c->indices);
    free(c->shard_base);
    free(c->shard_size);
    free(c->shard_given);
    free(c);
}

int ss_cmd_convert(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        general_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const ss_converter *conv = find_converter(argv[1]);
    if (!conv) {
        fprintf(stderr, "seqstore convert: unknown kind '%s'; the kinds are:\n", argv[1]);
        print_kinds(stderr);
        return 2;
    }
    ss_conv *c = calloc(1, sizeof *c);
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!c || !rest) {
        free(c);
        free(rest);
        fputs("seqstore convert: out of memory\n", stderr);
        return 1;
    }
    c->conv = conv;
    c->old_store_fd = -1;
    c->argc = argc - 1;
    c->argv = argv + 1;
    /* Tests of interrupted conversions: die by SIGKILL after N examples. */
    const char *kill_env = getenv("SS_TEST_KILL_AFTER");
    if (kill_env) c->kill_after = strtoull(kill_env, NULL, 10);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c->opts.threads = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (int)ncpu;
    int nrest = 0, help = 0;
    int rc = parse_common(c, argc, argv, rest, &nrest, &help);
    if (!rc && help) {
        conv->usage(stdout);
        fputc('\n', stdout);
        common_usage(stdout);
    } else if (!rc) {
        if (!c->opts.output)
            rc = ss_conv_usage_error(c, "no output store (-o STORE)");
        else if (c->opts.force && (c->opts.append || c->opts.resume))
            rc = ss_conv_usage_error(c, "--force excludes --append and --resume");
        else if (c->shard_n && c->opts.append)
            rc = ss_conv_usage_error(c, "--shard writes a new shard store; it excludes --append");
        else if (c->opts.resume)
            c->opts.append = probe_interrupted_append(c);
    }
    if (!rc && !help) {
        c->show_progress = !c->opts.quiet && isatty(2);
        c->t0 = c->last_draw = now_seconds();
        rc = conv->run(c, nrest, rest);
        if (rc == 0)
            rc = finish(c);
        else
            abandon(c);
    }
    clear_progress(c);
    free(rest);
    conv_free(c);
    return rc;
}
