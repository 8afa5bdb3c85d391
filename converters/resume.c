/* SPDX-License-Identifier: BSD-2-Clause */
/* resume.c - the resume record of `seqstore convert` (see resume.h). */
#include "resume.h"

#include <errno.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define RESUME_MAGIC "seqstore-resume\t1"

int ss__resume_stat(ss_resume_input **out, char *const *paths, uint32_t n) {
    ss_resume_input *v = calloc(n ? n : 1, sizeof *v);
    if (!v) return -1;
    for (uint32_t k = 0; k < n; k++) {
        struct stat st;
        v[k].path = paths[k];
        v[k].size = -1;
        /* -2: no file of that name: a name such as Megatron's PREFIX, whose
         * files the converter registers with ss__conv_add_checked() */
        if (strcmp(paths[k], "-") != 0 && stat(paths[k], &st) != 0 && errno == ENOENT)
            v[k].size = -2;
        if (strcmp(paths[k], "-") != 0 && stat(paths[k], &st) == 0 && S_ISREG(st.st_mode)) {
            v[k].size = (int64_t)st.st_size;
            v[k].mtime_s = (int64_t)st.st_mtim.tv_sec;
            v[k].mtime_ns = (int64_t)st.st_mtim.tv_nsec;
        }
    }
    *out = v;
    return 0;
}

/* Append formatted text to a growing buffer; -1 out of memory. */
static int put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int put(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return -1;
        if (*buf && *len + (size_t)n < *cap) {
            *len += (size_t)n;
            return 0;
        }
        size_t c = (*cap ? *cap : 256) * 2 + (size_t)n;
        char *p = realloc(*buf, c);
        if (!p) return -1;
        *buf = p;
        *cap = c;
    }
}

/* Arguments and paths may hold any byte but NUL: escape the record's
 * separators ('\\' -> "\\\\", '\n' -> "\\n", '\t' -> "\\t"). NULL: out of memory. */
static char *escape(const char *s) {
    char *t = malloc(2 * strlen(s) + 1), *p = t;
    if (!t) return NULL;
    for (; *s; s++) {
        if (*s == '\\' || *s == '\n' || *s == '\t') *p++ = '\\';
        *p++ = *s == '\n' ? 'n' : *s == '\t' ? 't' : *s;
    }
    *p = 0;
    return t;
}

static void unescape(char *s) {
    char *p = s;
    for (; *s; s++) {
        if (*s == '\\' && s[1]) {
            s++;
            *p++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s;
        } else {
            *p++ = *s;
        }
    }
    *p = 0;
}

/* "key<TAB>[SIZE<TAB>S<TAB>NS<TAB>]escaped text" */
static int put_text(char **b, size_t *n, size_t *cap, const char *key, const ss_resume_input *in,
                    const char *text) {
    char *e = escape(text);
    if (!e) return -1;
    int bad = in ? put(b, n, cap, "%s\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%s\n", key, in->size,
                       in->mtime_s, in->mtime_ns, e)
                 : put(b, n, cap, "%s\t%s\n", key, e);
    free(e);
    return bad;
}

char *ss__resume_encode(const ss_resume_rec *r, size_t *len) {
    char *b = NULL;
    size_t n = 0, cap = 0;
    int bad =
        put(&b, &n, &cap, RESUME_MAGIC "\nkind\t%s\nbase\t%" PRIu64 "\nstopped\t%" PRIu32 "\n",
            r->kind, r->base, r->stopped);
    for (uint32_t k = 0; !bad && k < r->nargs; k++)
        bad = put_text(&b, &n, &cap, "arg", NULL, r->args[k]);
    for (uint32_t k = 0; !bad && k < r->ninputs; k++)
        bad = put_text(&b, &n, &cap, "input", &r->inputs[k], r->inputs[k].path);
    for (uint32_t k = 0; !bad && k < r->nfiles; k++)
        bad = put_text(&b, &n, &cap, "file", &r->files[k], r->files[k].path);
    if (bad) {
        free(b);
        return NULL;
    }
    *len = n;
    return b;
}

void ss__resume_rec_free(ss_resume_rec *r) {
    free(r->args);
    free(r->inputs);
    free(r->files);
    free(r->buf);
    memset(r, 0, sizeof *r);
}

static int parse_i64(const char *s, char **end, int64_t *out) {
    *out = (int64_t)strtoll(s, end, 10);
    return *end == s;
}

/* One "input" line's value: SIZE TAB S TAB NS TAB PATH. */
static int decode_input(ss_resume_input *in, char *v) {
    char *e;
    if (parse_i64(v, &e, &in->size) || *e != '\t') return -1;
    if (parse_i64(e + 1, &e, &in->mtime_s) || *e != '\t') return -1;
    if (parse_i64(e + 1, &e, &in->mtime_ns) || *e != '\t') return -1;
    in->path = e + 1;
    unescape(e + 1);
    return 0;
}

int ss__resume_decode(ss_resume_rec *r, const void *data, size_t len, char *msg, size_t n) {
    memset(r, 0, sizeof *r);
    r->buf = malloc(len + 1);
    uint32_t lines = 0;
    for (size_t k = 0; k < len; k++) lines += ((const char *)data)[k] == '\n';
    r->args = calloc(lines + 1, sizeof *r->args);
    r->inputs = calloc(lines + 1, sizeof *r->inputs);
    r->files = calloc(lines + 1, sizeof *r->files);
    if (!r->buf || !r->args || !r->inputs || !r->files) {
        ss__resume_rec_free(r);
        snprintf(msg, n, "out of memory");
        return -1;
    }
    memcpy(r->buf, data, len);
    r->buf[len] = 0;
    size_t ml = strlen(RESUME_MAGIC);
    int ok = len > ml && !memcmp(r->buf, RESUME_MAGIC, ml) && r->buf[ml] == '\n';
    char *p = r->buf + ml + 1;
    while (ok && *p) {
        char *nl = strchr(p, '\n'), *tab = strchr(p, '\t'), *e;
        if (!nl || !tab || tab > nl) {
            ok = 0;
            break;
        }
        *nl = 0;
        *tab = 0;
        char *v = tab + 1;
        if (!strcmp(p, "kind"))
            r->kind = v;
        else if (!strcmp(p, "base"))
            r->base = strtoull(v, &e, 10), ok = e != v && !*e;
        else if (!strcmp(p, "stopped"))
            r->stopped = (uint32_t)strtoul(v, &e, 10), ok = e != v && !*e;
        else if (!strcmp(p, "arg"))
            unescape(v), r->args[r->nargs++] = v;
        else if (!strcmp(p, "input"))
            ok = decode_input(&r->inputs[r->ninputs++], v) == 0;
        else if (!strcmp(p, "file"))
            ok = decode_input(&r->files[r->nfiles++], v) == 0;
        /* other keys: from a later version, not needed */
        p = nl + 1;
    }
    if (!ok || !r->kind) {
        ss__resume_rec_free(r);
        snprintf(msg, n, "its resume record is damaged");
        return -1;
    }
    return 0;
}

/* Arguments that only steer a run (those with a value take the next one). */
static int steering(const char *a, int *takes_value) {
    static const char *const flags[] = {"--quiet",  "-q",      "--skip-bad", "--resume",
                                        "--append", "--force", NULL};
    static const char *const valued[] = {"--threads", "--commit-bytes", "--output", "-o", NULL};
    *takes_value = 0;
    for (int k = 0; flags[k]; k++)
        if (!strcmp(a, flags[k])) return 1;
    for (int k = 0; valued[k]; k++) {
        size_t l = strlen(valued[k]);
        if (!strcmp(a, valued[k])) return *takes_value = 1;
        if (!strncmp(a, valued[k], l) && (a[l] == '=' || (l == 2 && a[l]))) return 1;
    }
    return 0;
}

/* The next argument at or after *i that can change the store, or NULL. */
static const char *next_arg(const char *const *args, uint32_t n, uint32_t *i) {
    while (*i < n) {
        int value;
        const char *a = args[(*i)++];
        if (!strcmp(a, "--")) return a; /* the rest are inputs */
        if (!steering(a, &value)) return a;
        if (value) (*i)++;
    }
    return NULL;
}

static void describe_time(char *buf, size_t n, int64_t s, int64_t ns) {
    struct tm tm;
    time_t t = (time_t)s;
    if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, n, "%" PRId64, s);
    size_t l = strlen(buf);
    snprintf(buf + l, n - l, ".%09" PRId64 " UTC", ns);
}

/* The input of the same number in both runs. */
static int check_input(const ss_resume_input *o, const ss_resume_input *w, uint32_t k,
                       int may_change, char *msg, size_t n) {
    if (w->size < 0 && !strcmp(w->path, "-"))
        return snprintf(msg, n,
                        "input %" PRIu32 " is standard input, which cannot be read again; "
                        "rerun with --force",
                        k + 1),
               -1;
    if (strcmp(o->path, w->path))
        return snprintf(msg, n,
                        "input %" PRIu32 " '%s' differs from the interrupted conversion's '%s' "
                        "(size %" PRId64 " vs %" PRId64 ")",
                        k + 1, w->path, o->path, w->size, o->size),
               -1;
    if (w->size == -1 && o->size == -1 && !may_change)
        return snprintf(msg, n,
                        "input %" PRIu32 " '%s' is not a regular file: it cannot be checked, so "
                        "the conversion cannot be resumed; rerun with --force",
                        k + 1, w->path),
               -1;
    if (may_change) return 0;
    if (o->size != w->size)
        return snprintf(msg, n,
                        "input %" PRIu32 " '%s' has changed since the interrupted conversion "
                        "(size %" PRId64 " vs %" PRId64 ")",
                        k + 1, w->path, w->size, o->size),
               -1;
    if (o->mtime_s != w->mtime_s || o->mtime_ns != w->mtime_ns) {
        char a[64], b[64];
        describe_time(a, sizeof a, w->mtime_s, w->mtime_ns);
        describe_time(b, sizeof b, o->mtime_s, o->mtime_ns);
        return snprintf(msg, n,
                        "input %" PRIu32 " '%s' has changed since the interrupted conversion "
                        "(modified %s vs %s)",
                        k + 1, w->path, a, b),
               -1;
    }
    return 0;
}

int ss__resume_check(const ss_resume_rec *old, const ss_resume_rec *now, char *msg, size_t n) {
    if (strcmp(old->kind, now->kind))
        return snprintf(msg, n, "the interrupted conversion was 'convert %s', not 'convert %s'",
                        old->kind, now->kind),
               -1;
    if (old->base != now->base)
        return snprintf(msg, n,
                        "the interrupted conversion began with %" PRIu64
                        " examples in the store, not %" PRIu64,
                        old->base, now->base),
               -1;
    for (uint32_t k = 0; k < now->ninputs && k < old->ninputs; k++)
        if (check_input(&old->inputs[k], &now->inputs[k], k, old->stopped && k + 1 >= old->stopped,
                        msg, n))
            return -1;
    if (old->ninputs != now->ninputs)
        return snprintf(msg, n,
                        "the interrupted conversion had %" PRIu32 " input%s, this one has %" PRIu32,
                        old->ninputs, old->ninputs == 1 ? "" : "s", now->ninputs),
               -1;
    for (uint32_t k = 0; k < now->nfiles && k < old->nfiles; k++) {
        const ss_resume_input *o = &old->files[k], *w = &now->files[k];
        if (!strcmp(o->path, w->path) && o->size == w->size && o->mtime_s == w->mtime_s &&
            o->mtime_ns == w->mtime_ns)
            continue;
        return snprintf(msg, n,
                        "'%s' (read besides the inputs) differs from the interrupted "
                        "conversion's '%s' (size %" PRId64 " vs %" PRId64 ", or modified since)",
                        w->path, o->path, w->size, o->size),
               -1;
    }
    uint32_t i = 0, j = 0;
    for (;;) {
        const char *a = next_arg(old->args, old->nargs, &i);
        const char *b = next_arg(now->args, now->nargs, &j);
        if (!a && !b) return 0;
        if (!a || !b || strcmp(a, b))
            return snprintf(msg, n,
                            "the options differ from the interrupted conversion's: '%s' where it "
                            "had '%s'",
                            b ? b : "(nothing)", a ? a : "(nothing)"),
                   -1;
    }
}
