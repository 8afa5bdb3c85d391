/* SPDX-License-Identifier: BSD-2-Clause */
/* wordcounts.c - word counts of one shard (`--count-only`) and their merge
 * (`--counts`), so that N jobs converting slices of a corpus share the
 * vocabulary a single process would build.
 *
 * A counts file is text: one or more documents, each
 *
 *   seqstore-counts 1
 *   shard<TAB>K<TAB>N
 *   options<TAB>MODE<TAB>SKIP_EMPTY<TAB>SHARED<TAB>SEP   (text, parallel)
 *   options<TAB>jsonl<TAB>keys<TAB>KEY,KEY...           (jsonl: one shared map)
 *   input<TAB>SIZE<TAB>NAME          (one per input, in order; NAME its basename)
 *   <TAB>SECTION                     (a field name, or "shared")
 *   WORD<TAB>COUNT                   (words hold no whitespace; COUNT >= 1)
 *   ...                              (more sections)
 *
 * Words never contain a tab, so a line starting with one is a section and a
 * line without one in the word part is the next document's first line (the
 * MPI driver concatenates the ranks' documents into one file). Merging
 * checks that every document counted the same inputs with the same options
 * and that together they cover shards 0..N-1 once each; their sums are then
 * the counts of the whole input, and ss__vocab_build() orders words by count
 * and bytes only, so the vocabulary is the single process's. */
#include "text.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COUNTS_MAGIC "seqstore-counts 1"

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static const char *mode_name(int mode) {
    return mode == TX_DOCS_SEP ? "docs-sep" : mode == TX_DOCS_BLANK ? "docs-blank" : "lines";
}

/* The section name of map m. */
static const char *section(const tx_job *j, int shared, int m) {
    return shared ? "shared" : j->field[m];
}

/* The header lines after the magic (shard, options, inputs), malloc'ed. */
static char *header(const tx_job *j, int shared, uint32_t k, uint32_t n) {
    size_t cap = 256 + j->seplen;
    for (uint32_t i = 0; i < j->ninputs; i++) cap += 32 + strlen(base_name(j->inputs[i].path));
    if (j->counts_options) cap += strlen(j->counts_options);
    char *h = malloc(cap);
    if (!h) return NULL;
    size_t at =
        j->counts_options
            ? (size_t)snprintf(h, cap, "shard\t%u\t%u\noptions\t%s\n", k, n, j->counts_options)
            : (size_t)snprintf(h, cap, "shard\t%u\t%u\noptions\t%s\t%d\t%d\t%s\n", k, n,
                               mode_name(j->mode), j->skip_empty, shared, j->sep ? j->sep : "");
    for (uint32_t i = 0; i < j->ninputs; i++)
        at +=
            (size_t)snprintf(h + at, cap - at, "input\t%zu\t%s\n",
                             j->inputs[i].ok ? j->inputs[i].size : 0, base_name(j->inputs[i].path));
    return h;
}

int ss__tx_write_counts(ss_conv *c, tx_job *j, int threads, int shared, const int skip[2]) {
    ss_vocab *counts[2] = {NULL, NULL};
    ss__conv_no_store(c);
    if (ss__tx_shard_blocks(c, j) || ss__tx_count_words(c, j, threads, shared, skip, counts))
        return 1;
    int rc = ss__tx_write_counts_of(c, j, shared, skip, counts);
    ss__vocab_free(counts[0]);
    ss__vocab_free(counts[1]);
    return rc;
}

int ss__tx_write_counts_of(ss_conv *c, const tx_job *j, int shared, const int skip[2],
                           ss_vocab *const counts[2]) {
    const char *out = ss__conv_opts(c)->output;
    if (!ss__conv_opts(c)->force && access(out, F_OK) == 0)
        return ss__conv_error(c, "'%s' exists (--force replaces it)", out);
    uint32_t k, n;
    ss__conv_shard_spec(c, &k, &n);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", out, (long)getpid());
    char *h = header(j, shared, n ? k : 0, n ? n : 1);
    FILE *f = h ? fopen(tmp, "w") : NULL;
    int rc = 0;
    if (!h)
        rc = ss__conv_error(c, "out of memory");
    else if (!f)
        rc = ss__conv_error(c, "cannot write '%s': %s", tmp, strerror(errno));
    else
        fprintf(f, "%s\n%s", COUNTS_MAGIC, h);
    for (int m = 0; m < (shared ? 1 : j->nsides) && !rc; m++) {
        if (skip[m] && !shared) continue;
        size_t size;
        char *text = ss__vocab_counts_text(counts[m], &size);
        if (!text) {
            rc = ss__conv_error(c, "out of memory");
            break;
        }
        fprintf(f, "\t%s\n", section(j, shared, m));
        fwrite(text, 1, size, f);
        free(text);
    }
    if (f && (fflush(f) || ferror(f) || fsync(fileno(f))) && !rc)
        rc = ss__conv_error(c, "cannot write '%s': %s", tmp, strerror(errno));
    if (f && fclose(f) && !rc) rc = ss__conv_error(c, "cannot write '%s': %s", tmp,
                                                   strerror(errno));
    if (!rc && rename(tmp, out))
        rc = ss__conv_error(c, "cannot rename '%s' to '%s': %s", tmp, out, strerror(errno));
    if (rc && f) unlink(tmp);
    free(h);
    return rc;
}

/* ------------------------------------------------------------- merging */

typedef struct merge {
    ss_conv *c;
    const tx_job *j;
    int shared;
    const int *skip;
    ss_vocab **counts;
    char *expect;     /* header() of shard 0 of N, from "options" on */
    uint32_t n;       /* N of the first document, 0 before it */
    uint8_t *seen;    /* [n]: shard k merged */
    const char *path; /* the file being read */
    uint64_t line;    /* its current line */
} merge;

/* [a, e) as the next line from *pos. */
static int next(const char *d, size_t size, size_t *pos, const char **a, size_t *len) {
    if (*pos >= size) return 0;
    const char *nl = memchr(d + *pos, '\n', size - *pos);
    *a = d + *pos;
    *len = nl ? (size_t)(nl - *a) : size - *pos;
    *pos += *len + (nl != NULL);
    return 1;
}

static int bad(merge *g, const char *what) {
    return ss__conv_error(g->c, "counts file '%s', line %" PRIu64 ": %s", g->path, g->line, what);
}

/* One document's header from its "shard" line: checks it against the job. */
static int doc_header(merge *g, const char *d, size_t size, size_t *pos, uint32_t *k) {
    const char *a;
    size_t len;
    unsigned long long kk, nn;
    char tail;
    g->line++;
    if (!next(d, size, pos, &a, &len) || len > 64) return bad(g, "expected 'shard\\tK\\tN'");
    char buf[80];
    memcpy(buf, a, len);
    buf[len] = 0;
    if (sscanf(buf, "shard\t%llu\t%llu%c", &kk, &nn, &tail) != 2 || !nn || kk >= nn ||
        nn > UINT32_MAX)
        return bad(g, "expected 'shard\\tK\\tN' with 0 <= K < N");
    if (!g->n) {
        g->n = (uint32_t)nn;
        g->seen = calloc(nn, 1);
        if (!g->seen) return ss__conv_error(g->c, "out of memory");
    } else if (nn != g->n) {
        char m[96];
        snprintf(m, sizeof m, "counted as shard %llu of %llu, the other files of %u shards", kk, nn,
                 g->n);
        return bad(g, m);
    }
    if (g->seen[kk]) {
        char m[64];
        snprintf(m, sizeof m, "shard %llu/%llu is counted twice", kk, nn);
        return bad(g, m);
    }
    *k = (uint32_t)kk;
    /* the rest of the header must be this job's, byte for byte */
    size_t elen = strlen(g->expect);
    if (size - *pos < elen || memcmp(d + *pos, g->expect, elen))
        return ss__conv_error(g->c,
                              "counts file '%s' (shard %llu/%llu) counted other inputs or "
                              "options; expected:\n%s",
                              g->path, kk, nn, g->expect);
    for (size_t i = 0; i < elen; i++) g->line += g->expect[i] == '\n';
    *pos += elen;
    return 0;
}

/* A word line "WORD\tCOUNT" into map v. */
static int word_line(merge *g, ss_vocab *v, const char *a, size_t len) {
    const char *tab = memchr(a, '\t', len);
    if (!tab || tab == a) return bad(g, "expected 'WORD\\tCOUNT'");
    uint64_t n = 0;
    const char *p = tab + 1, *e = a + len;
    if (p == e) return bad(g, "missing count");
    for (; p < e; p++) {
        if (*p < '0' || *p > '9' || n > (UINT64_MAX - 9) / 10) return bad(g, "bad count");
        n = n * 10 + (uint64_t)(*p - '0');
    }
    if (!n) return bad(g, "a count of 0");
    if (ss__vocab_count(v, (const uint8_t *)a, (size_t)(tab - a), n))
        return ss__conv_error(g->c, "out of memory");
    return 0;
}

/* The word part of a document: sections until the next document or the end. */
static int doc_words(merge *g, const char *d, size_t size, size_t *pos) {
    int nmaps = g->shared ? 1 : g->j->nsides, got[2] = {0, 0};
    ss_vocab *v = NULL;
    const char *a;
    size_t len, save = *pos;
    while (next(d, size, pos, &a, &len)) {
        g->line++;
        if (len && a[0] == '\t') {
            v = NULL;
            for (int m = 0; m < nmaps; m++) {
                const char *s = section(g->j, g->shared, m);
                if ((g->shared || !g->skip[m]) && strlen(s) == len - 1 &&
                    !memcmp(s, a + 1, len - 1)) {
                    if (got[m]++) return bad(g, "a section given twice");
                    v = g->counts[m];
                }
            }
            if (!v) return bad(g, "a section this conversion does not count");
        } else if (len && !memchr(a, '\t', len)) {
            if (len != strlen(COUNTS_MAGIC) || memcmp(a, COUNTS_MAGIC, len))
                return bad(g, "expected 'WORD\\tCOUNT'");
            *pos = save; /* the next document */
            g->line--;
            break;
        } else if (!v) {
            return bad(g, "a word before the first section");
        } else if (word_line(g, v, a, len)) {
            return 1;
        }
        save = *pos;
    }
    for (int m = 0; m < nmaps; m++)
        if ((g->shared || !g->skip[m]) && !got[m]) return bad(g, "a section is missing");
    return 0;
}

static int merge_file(merge *g, const char *path) {
    tx_input in;
    char err[256];
    g->path = path;
    g->line = 0;
    if (ss__tx_input_load(&in, path, err, sizeof err))
        return ss__conv_error(g->c, "counts file '%s': %s", path, err);
    const char *d = (const char *)in.data, *a;
    size_t pos = 0, len;
    int rc = 0, docs = 0;
    while (!rc && next(d, in.size, &pos, &a, &len)) {
        g->line++;
        uint32_t k = 0;
        if (len != strlen(COUNTS_MAGIC) || memcmp(a, COUNTS_MAGIC, len)) {
            rc = bad(g, "not a counts file of `convert --count-only` (" COUNTS_MAGIC ")");
            break;
        }
        rc = doc_header(g, d, in.size, &pos, &k);
        if (!rc) rc = doc_words(g, d, in.size, &pos);
        if (!rc) g->seen[k] = 1;
        docs++;
    }
    if (!rc && !docs) rc = ss__conv_error(g->c, "counts file '%s' is empty", path);
    ss__tx_input_release(&in);
    return rc;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory: merge its files named *.counts, in name order. */
static int merge_dir(merge *g, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return ss__conv_error(g->c, "counts directory '%s': %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len <= 7 || strcmp(e->d_name + len - 7, ".counts")) continue;
        if (n == cap) {
            char **g2 = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
            if (!g2) {
                rc = ss__conv_error(g->c, "out of memory");
                break;
            }
            names = g2;
        }
        if (asprintf(&names[n], "%s/%s", dir, e->d_name) < 0)
            rc = ss__conv_error(g->c, "out of memory");
        else
            n++;
    }
    closedir(d);
    if (!rc && !n) rc = ss__conv_error(g->c, "counts directory '%s' has no *.counts file", dir);
    if (names) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n && !rc; i++) rc = merge_file(g, names[i]);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

int ss__tx_read_counts(ss_conv *c, const tx_job *j, int shared, const int skip[2],
                       const char *const *paths, int npaths, ss_vocab *counts[2]) {
    merge g = {c, j, shared, skip, counts, NULL, 0, NULL, NULL, 0};
    counts[0] = counts[1] = NULL;
    char *h = header(j, shared, 0, 1);
    char *nl = h ? strchr(h, '\n') : NULL; /* from "options" on */
    int rc = 0;
    if (!nl || ss__vocab_new(&counts[0]) || (!shared && j->nsides > 1 && ss__vocab_new(&counts[1])))
        rc = ss__conv_error(c, "out of memory");
    g.expect = nl ? nl + 1 : NULL;
    for (int i = 0; i < npaths && !rc; i++) {
        struct stat st;
        int dir = stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode);
        rc = dir ? merge_dir(&g, paths[i]) : merge_file(&g, paths[i]);
    }
    for (uint32_t k = 0; k < g.n && !rc; k++)
        if (!g.seen[k])
            rc = ss__conv_error(c, "the counts files given have no counts of shard %u/%u", k, g.n);
    free(h);
    free(g.seen);
    if (rc) {
        ss__vocab_free(counts[0]);
        ss__vocab_free(counts[1]);
        counts[0] = counts[1] = NULL;
    }
    return rc;
}
