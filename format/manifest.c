/* SPDX-License-Identifier: BSD-2-Clause */
/* manifest.c - the dataset manifest of spec/FORMAT.md §13: a strict
 * line-based text parser (one canonical spelling of every manifest, so
 * format(parse(x)) == x), its writer, and the checks of a shard against it. */
#include "manifest.h"

#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define MAGIC "seqstore-dataset"

/* ------------------------------------------------------------------ parse */

typedef struct cursor {
    const char *text, *p, *end;
    uint64_t line;       /* 1-based number of the line being parsed */
    const char *ls, *le; /* the current line, without its '\n' */
} cursor;

static int bad(const cursor *c, const char *what) {
    return ss__fail(SS_ECORRUPT, "line %llu: %s", (unsigned long long)c->line, what);
}

/* Take the next line; a manifest ends with '\n'. */
static int next_line(cursor *c) {
    c->line++;
    if (c->p >= c->end) return bad(c, "missing (the manifest is truncated)");
    const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
    if (!nl) return bad(c, "no line end (the manifest is truncated)");
    c->ls = c->p;
    c->le = nl;
    c->p = nl + 1;
    return 0;
}

/* The next space-separated token of the line at *q: [*q, token end); *q moves
 * past the one separating space. The last token ends at the line end. */
static int token(const cursor *c, const char **q, const char **tok, size_t *len) {
    const char *sp = memchr(*q, ' ', (size_t)(c->le - *q));
    const char *e = sp ? sp : c->le;
    if (e == *q) return bad(c, "empty token (tokens are separated by one space)");
    *tok = *q;
    *len = (size_t)(e - *q);
    *q = sp ? sp + 1 : c->le;
    return 0;
}

static int parse_u64(const cursor *c, const char *t, size_t n, uint64_t *out) {
    if (n == 0 || n > 20 || (n > 1 && t[0] == '0')) return bad(c, "not a canonical decimal number");
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] < '0' || t[i] > '9') return bad(c, "not a canonical decimal number");
        unsigned d = (unsigned)(t[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return bad(c, "number larger than 2^64-1");
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int parse_hex(const cursor *c, const char *t, size_t n, uint64_t *out) {
    if (n != 16) return bad(c, "a digest is 16 lowercase hex digits");
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = t[i];
        unsigned d = ch >= '0' && ch <= '9'   ? (unsigned)(ch - '0')
                     : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10)
                                              : 16u;
        if (d == 16) return bad(c, "a digest is 16 lowercase hex digits");
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* "KEY VALUE" with a decimal VALUE in [lo, hi]. */
static int keyed_u64(cursor *c, const char *key, uint64_t lo, uint64_t hi, uint64_t *out) {
    if (next_line(c)) return SS_ECORRUPT;
    const char *q = c->ls, *t;
    size_t n;
    char what[96];
    snprintf(what, sizeof what, "expected '%s N'", key);
    if (token(c, &q, &t, &n) || n != strlen(key) || memcmp(t, key, n)) return bad(c, what);
    if (token(c, &q, &t, &n) || q != c->le) return bad(c, what);
    if (parse_u64(c, t, n, out)) return SS_ECORRUPT;
    if (*out < lo || *out > hi) return bad(c, "value out of range");
    return 0;
}

/* Valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). */
static int utf8_ok(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned b = s[i];
        size_t k = b < 0x80             ? 0
                   : (b & 0xE0) == 0xC0 ? 1
                   : (b & 0xF0) == 0xE0 ? 2
                   : (b & 0xF8) == 0xF0 ? 3
                                        : 9;
        if (k == 9 || i + k >= n) return 0; /* bytes i..i+k must exist */
        uint32_t cp = k == 0 ? b : b & (0x3Fu >> k);
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + j] & 0x3Fu);
        }
        static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < min[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += k + 1;
    }
    return 1;
}

/* A NAME or PATH (spec/FORMAT.md §13): 1..max bytes of UTF-8, no control
 * character, no backslash; a path also relative without "." or ".." or
 * empty components. Returns NULL or what is wrong. */
static const char *text_problem(const char *s, size_t n, size_t max, int path) {
    if (n == 0 || n > max)
        return path ? "path length is not 1..4095 bytes" : "name length is not 1..47 bytes";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7F || ch == '\\') return "control character or backslash";
    }
    if (!utf8_ok((const unsigned char *)s, n)) return "not UTF-8";
    if (!path) return NULL;
    if (s[0] == '/') return "absolute path (shard paths are relative to the dataset directory)";
    for (size_t i = 0; i <= n;) {
        size_t j = i;
        while (j < n && s[j] != '/') j++;
        size_t len = j - i;
        if (len == 0) return "empty path component";
        if ((len == 1 && s[i] == '.') || (len == 2 && s[i] == '.' && s[i + 1] == '.'))
            return "'.' or '..' path component";
        i = j + 1;
    }
    return NULL;
}

static int parse_field(cursor *c, ss_manifest *m, uint32_t k) {
    if (next_line(c)) return SS_ECORRUPT;
    const char *q = c->ls, *t;
    size_t n;
    if (token(c, &q, &t, &n) || n != 5 || memcmp(t, "field", 5))
        return bad(c, "expected 'field DTYPE KIND NDIM DIM... NAME'");
    ss_field *f = &m->fields[k];
    char dt[8] = {0};
    if (token(c, &q, &t, &n)) return SS_ECORRUPT;
    if (n >= sizeof dt) return bad(c, "unknown dtype");
    memcpy(dt, t, n);
    if (ss_dtype_parse(&f->dtype, dt) != 0 || strcmp(ss_dtype_name(f->dtype), dt))
        return bad(c, "unknown dtype");
    if (token(c, &q, &t, &n)) return SS_ECORRUPT;
    if (n == 8 && !memcmp(t, "sequence", 8))
        f->sequence = 1;
    else if (n == 5 && !memcmp(t, "fixed", 5))
        f->sequence = 0;
    else
        return bad(c, "field kind is not 'sequence' or 'fixed'");
    uint64_t v;
    if (token(c, &q, &t, &n) || parse_u64(c, t, n, &v)) return SS_ECORRUPT;
    if (v > SS_MAX_DIMS) return bad(c, "ndim larger than 4");
    f->ndim = (uint32_t)v;
    for (uint32_t d = 0; d < f->ndim; d++) {
        if (token(c, &q, &t, &n) || parse_u64(c, t, n, &f->dims[d])) return SS_ECORRUPT;
        if (f->dims[d] == 0) return bad(c, "a dimension is 0");
    }
    if (q >= c->le) return bad(c, "no field name");
    const char *why = text_problem(q, (size_t)(c->le - q), SS_MAX_NAME, 0);
    if (why) return bad(c, why);
    memcpy(m->names[k], q, (size_t)(c->le - q));
    m->names[k][c->le - q] = 0;
    f->name = m->names[k];
    for (uint32_t j = 0; j < k; j++)
        if (!strcmp(m->names[j], m->names[k])) return bad(c, "duplicate field name");
    return 0;
}

static int parse_shard(cursor *c, ss_manifest *m, uint32_t k, uint64_t *sum, uint64_t *rows_sum) {
    if (next_line(c)) return SS_ECORRUPT;
    const char *q = c->ls, *t;
    size_t n;
    ss_manifest_shard *s = &m->shards[k];
    if (token(c, &q, &t, &n) || n != 5 || memcmp(t, "shard", 5))
        return bad(c, "expected 'shard COUNT DIGEST ROWS... PATH'");
    if (token(c, &q, &t, &n) || parse_u64(c, t, n, &s->count)) return SS_ECORRUPT;
    if (token(c, &q, &t, &n) || parse_hex(c, t, n, &s->digest)) return SS_ECORRUPT;
    s->rows = calloc(m->nfields, sizeof *s->rows);
    if (!s->rows) return ss__fail(SS_ENOMEM, "out of memory");
    for (uint32_t f = 0; f < m->nfields; f++) {
        if (token(c, &q, &t, &n) || parse_u64(c, t, n, &s->rows[f])) return SS_ECORRUPT;
        if (!m->fields[f].sequence && s->rows[f] != s->count)
            return bad(c, "the rows of a fixed field differ from the count");
        if (rows_sum[f] > UINT64_MAX - s->rows[f]) return bad(c, "a field's rows overflow");
        rows_sum[f] += s->rows[f];
    }
    if (q >= c->le) return bad(c, "no shard path");
    const char *why = text_problem(q, (size_t)(c->le - q), SS_MANIFEST_MAX_PATH, 1);
    if (why) return bad(c, why);
    if (*sum > UINT64_MAX - s->count) return bad(c, "the shards' counts overflow");
    *sum += s->count;
    s->path = strndup(q, (size_t)(c->le - q));
    return s->path ? 0 : ss__fail(SS_ENOMEM, "out of memory");
}

static int parse_body(cursor *c, ss_manifest *m) {
    uint64_t v, sum = 0, rows_sum[SS_MAX_FIELDS] = {0};
    if (next_line(c)) return SS_ECORRUPT;
    size_t ml = strlen(MAGIC);
    if ((size_t)(c->le - c->ls) <= ml + 1 || memcmp(c->ls, MAGIC " ", ml + 1))
        return ss__fail(SS_ECORRUPT, "not a seqstore dataset manifest (no '" MAGIC "' line)");
    if (parse_u64(c, c->ls + ml + 1, (size_t)(c->le - c->ls) - ml - 1, &v)) return SS_ECORRUPT;
    if (v == 0) return bad(c, "dataset version 0");
    if (v > SS_MANIFEST_VERSION)
        return ss__fail(SS_EVERSION, "dataset version %llu is newer than this library's %d",
                        (unsigned long long)v, SS_MANIFEST_VERSION);
    m->version = (uint32_t)v;
    if (keyed_u64(c, "examples", 0, UINT64_MAX, &m->examples)) return SS_ECORRUPT;
    if (keyed_u64(c, "fields", 1, SS_MAX_FIELDS, &v)) return SS_ECORRUPT;
    m->nfields = (uint32_t)v;
    for (uint32_t k = 0; k < m->nfields; k++)
        if (parse_field(c, m, k)) return SS_ECORRUPT;
    if (keyed_u64(c, "shards", 1, SS_MANIFEST_MAX_SHARDS, &v)) return SS_ECORRUPT;
    /* a shard line takes at least 26 + 2 x fields bytes ("shard 0 DIGEST 0 ... P\n"):
     * allocate only what the text can hold */
    if (v > (uint64_t)(c->end - c->p) / (26 + 2 * m->nfields))
        return bad(c, "more shards than lines follow");
    m->shards = calloc((size_t)v, sizeof *m->shards);
    if (!m->shards) return ss__fail(SS_ENOMEM, "out of memory");
    m->nshards = (uint32_t)v;
    for (uint32_t k = 0; k < m->nshards; k++) {
        int rc = parse_shard(c, m, k, &sum, rows_sum);
        if (rc) return rc;
    }
    if (sum != m->examples) return bad(c, "'examples' is not the sum of the shards' counts");
    return 0;
}

static int parse_checksum(cursor *c, uint64_t *checksum) {
    if (next_line(c)) return SS_ECORRUPT;
    const char *q = c->ls, *t;
    size_t n;
    uint64_t want;
    if (token(c, &q, &t, &n) || n != 8 || memcmp(t, "checksum", 8))
        return bad(c, "expected 'checksum DIGEST'");
    if (token(c, &q, &t, &n) || q != c->le || parse_hex(c, t, n, &want)) return SS_ECORRUPT;
    if (c->p != c->end) return bad(c, "text after the checksum line");
    if (XXH3_64bits(c->text, (size_t)(c->ls - c->text)) != want)
        return ss__fail(SS_ECORRUPT, "manifest checksum mismatch");
    *checksum = want;
    return 0;
}

int ss__manifest_parse(ss_manifest *out, const char *text, size_t len) {
    if (!out || (!text && len)) return ss__fail(SS_EINVAL, "ss__manifest_parse: NULL argument");
    memset(out, 0, sizeof *out);
    cursor c = {text, text, text + len, 0, NULL, NULL};
    int rc = parse_body(&c, out);
    if (!rc) rc = parse_checksum(&c, &out->checksum);
    if (rc) ss__manifest_free(out);
    return rc;
}

void ss__manifest_free(ss_manifest *m) {
    if (!m) return;
    for (uint32_t k = 0; m->shards && k < m->nshards; k++) {
        free(m->shards[k].path);
        free(m->shards[k].rows);
    }
    free(m->shards);
    memset(m, 0, sizeof *m);
}

/* ----------------------------------------------------------------- format */

int ss__manifest_format(const ss_manifest *m, char **out, size_t *len) {
    if (!out || !len || !m) return ss__fail(SS_EINVAL, "ss__manifest_format: NULL argument");
    *out = NULL;
    *len = 0;
    for (uint32_t k = 0; k < m->nfields; k++) {
        const char *why =
            text_problem(m->fields[k].name, strlen(m->fields[k].name), SS_MAX_NAME, 0);
        if (why) return ss__fail(SS_EINVAL, "field '%s': %s", m->fields[k].name, why);
    }
    for (uint32_t k = 0; k < m->nshards; k++) {
        const char *p = m->shards[k].path;
        const char *why = text_problem(p, strlen(p), SS_MANIFEST_MAX_PATH, 1);
        if (why) return ss__fail(SS_EINVAL, "shard %u '%s': %s", k, p, why);
    }
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f) return ss__fail(SS_ENOMEM, "out of memory");
    fprintf(f, MAGIC " %u\nexamples %llu\nfields %u\n",
            m->version ? m->version : SS_MANIFEST_VERSION, (unsigned long long)m->examples,
            m->nfields);
    for (uint32_t k = 0; k < m->nfields; k++) {
        const ss_field *fd = &m->fields[k];
        fprintf(f, "field %s %s %u", ss_dtype_name(fd->dtype), fd->sequence ? "sequence" : "fixed",
                fd->ndim);
        for (uint32_t d = 0; d < fd->ndim; d++)
            fprintf(f, " %llu", (unsigned long long)fd->dims[d]);
        fprintf(f, " %s\n", fd->name);
    }
    fprintf(f, "shards %u\n", m->nshards);
    for (uint32_t k = 0; k < m->nshards; k++) {
        fprintf(f, "shard %llu %016llx", (unsigned long long)m->shards[k].count,
                (unsigned long long)m->shards[k].digest);
        for (uint32_t fd = 0; fd < m->nfields; fd++)
            fprintf(f, " %llu", (unsigned long long)m->shards[k].rows[fd]);
        fprintf(f, " %s\n", m->shards[k].path);
    }
    if (fflush(f) != 0) {
        fclose(f);
        free(buf);
        return ss__fail(SS_ENOMEM, "out of memory");
    }
    fprintf(f, "checksum %016llx\n", (unsigned long long)XXH3_64bits(buf, size));
    if (fclose(f) != 0) {
        free(buf);
        return ss__fail(SS_ENOMEM, "out of memory");
    }
    *out = buf;
    *len = size;
    return 0;
}

/* ------------------------------------------------------------ build, check */

void ss__manifest_init(ss_manifest *m, const ss_store *s) {
    memset(m, 0, sizeof *m);
    m->version = SS_MANIFEST_VERSION;
    m->nfields = ss_field_count(s);
    for (uint32_t k = 0; k < m->nfields; k++) {
        ss_field_info(&m->fields[k], s, k);
        snprintf(m->names[k], sizeof m->names[k], "%s", m->fields[k].name);
        m->fields[k].name = m->names[k];
    }
}

int ss__manifest_add(ss_manifest *m, const char *path, uint64_t count, uint64_t digest,
                     const uint64_t *rows) {
    const char *why = text_problem(path, strlen(path), SS_MANIFEST_MAX_PATH, 1);
    if (why) return ss__fail(SS_EINVAL, "shard path '%s': %s", path, why);
    if (m->nshards >= SS_MANIFEST_MAX_SHARDS)
        return ss__fail(SS_EINVAL, "more than %u shards", SS_MANIFEST_MAX_SHARDS);
    if (m->examples > UINT64_MAX - count) return ss__fail(SS_EINVAL, "the shards' counts overflow");
    for (uint32_t f = 0; f < m->nfields; f++)
        if (!m->fields[f].sequence && rows[f] != count)
            return ss__fail(SS_EINVAL, "shard '%s': fixed field '%s' has %llu rows, not %llu", path,
                            m->fields[f].name, (unsigned long long)rows[f],
                            (unsigned long long)count);
    ss_manifest_shard *grown = realloc(m->shards, (m->nshards + 1) * sizeof *grown);
    if (!grown) return ss__fail(SS_ENOMEM, "out of memory");
    m->shards = grown;
    char *copy = strdup(path);
    uint64_t *r = malloc((m->nfields ? m->nfields : 1) * sizeof *r);
    if (!copy || !r) {
        free(copy);
        free(r);
        return ss__fail(SS_ENOMEM, "out of memory");
    }
    memcpy(r, rows, m->nfields * sizeof *r);
    m->shards[m->nshards++] = (ss_manifest_shard){copy, count, digest, r};
    m->examples += count;
    return 0;
}

int ss__store_header_digest(uint64_t *out, const ss_store *s) {
    if (s->ds) return ss__fail(SS_EINVAL, "'%s' is a dataset, not a shard store", s->path);
    MDB_val key = {1, (void *)"H"}, v;
    int rc = mdb_get(s->txn, s->dbi, &key, &v);
    if (rc) return ss__context(ss__lmdb_fail(rc, "read the header"), "'%s'", s->path);
    if (v.mv_size < SS_BLOCK_HDR || ss_le64((const char *)v.mv_data + 8) > v.mv_size - SS_BLOCK_HDR)
        return ss__fail(SS_ECORRUPT, "'%s': header block length out of range", s->path);
    *out = XXH3_64bits((const char *)v.mv_data + SS_BLOCK_HDR,
                       (size_t)ss_le64((const char *)v.mv_data + 8));
    return 0;
}

int ss__store_has_content_digest(const ss_store *s) {
    return !s->ds && (s->h.compat_flags & SS_COMPAT_CONTENT) != 0;
}

static int same_field(const ss_field *a, const ss_field *b) {
    if (strcmp(a->name, b->name) || a->dtype != b->dtype || !a->sequence != !b->sequence ||
        a->ndim != b->ndim)
        return 0;
    for (uint32_t d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d]) return 0;
    return 1;
}

int ss__manifest_check_shard(const ss_manifest *m, uint32_t k, const ss_store *s) {
    const char *p = m->shards[k].path;
    if (ss_field_count(s) != m->nfields)
        return ss__fail(SS_ESCHEMA, "shard %u '%s': %u fields, the manifest has %u", k, p,
                        ss_field_count(s), m->nfields);
    for (uint32_t f = 0; f < m->nfields; f++) {
        ss_field got;
        ss_field_info(&got, s, f);
        if (!same_field(&got, &m->fields[f]))
            return ss__fail(SS_ESCHEMA,
                            "shard %u '%s': field %u '%s' differs from the manifest's '%s'", k, p,
                            f, got.name, m->fields[f].name);
    }
    if (ss_count(s) != m->shards[k].count)
        return ss__fail(SS_ECORRUPT, "shard %u '%s': %llu examples, the manifest says %llu", k, p,
                        (unsigned long long)ss_count(s), (unsigned long long)m->shards[k].count);
    for (uint32_t f = 0; f < m->nfields; f++)
        if (ss_flat_size(s, f) != m->shards[k].rows[f])
            return ss__fail(SS_ECORRUPT,
                            "shard %u '%s': field '%s' has %llu rows, the manifest "
                            "says %llu",
                            k, p, m->fields[f].name, (unsigned long long)ss_flat_size(s, f),
                            (unsigned long long)m->shards[k].rows[f]);
    uint64_t digest;
    int rc = ss__store_header_digest(&digest, s);
    if (rc) return rc;
    if (digest != m->shards[k].digest)
        return ss__fail(
            SS_ECORRUPT,
            "shard %u '%s': header digest %016llx, the manifest says %016llx (the shard "
            "was changed after the dataset was built)",
            k, p, (unsigned long long)digest, (unsigned long long)m->shards[k].digest);
    return 0;
}

/* -------------------------------------------------------------- the file */

static char *join(const char *dir, const char *name) {
    char *s = NULL;
    return asprintf(&s, "%s/%s", dir, name) < 0 ? NULL : s;
}

int ss__manifest_locate(const char *path, char **file, char **dir) {
    *file = *dir = NULL;
    struct stat st;
    if (!path || !*path) return ss__fail(SS_EINVAL, "empty dataset path");
    if (stat(path, &st) != 0)
        return ss__fail(errno == ENOENT ? SS_ENOTFOUND : SS_EIO, "dataset '%s': %s", path,
                        strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        *dir = strdup(path);
        *file = join(path, SS_MANIFEST_NAME);
    } else {
        const char *slash = strrchr(path, '/');
        *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
        *file = strdup(path);
    }
    if (*file && *dir) return 0;
    free(*file);
    free(*dir);
    *file = *dir = NULL;
    return ss__fail(SS_ENOMEM, "out of memory");
}

static int read_all(const char *file, char **out, size_t *len) {
    int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not hang it */
    if (fd < 0)
        return ss__fail(errno == ENOENT ? SS_ENOTFOUND : SS_EIO, "'%s': %s%s", file,
                        strerror(errno),
                        errno == ENOENT ? " (not a dataset, or its build did not finish)" : "");
    struct stat st;
    int rc = 0;
    char *buf = NULL;
    if (fstat(fd, &st) != 0)
        rc = ss__fail(SS_EIO, "'%s': %s", file, strerror(errno));
    else if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > SS_MANIFEST_MAX_BYTES)
        rc = ss__fail(SS_ECORRUPT, "'%s': not a regular file of at most 64 MiB", file);
    else if (!(buf = malloc((size_t)st.st_size + 1)))
        rc = ss__fail(SS_ENOMEM, "out of memory");
    size_t got = 0;
    while (!rc && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            rc = ss__fail(SS_EIO, "read '%s': %s", file, n ? strerror(errno) : "file shrank");
        else
            got += (size_t)n;
    }
    close(fd);
    if (rc)
        free(buf);
    else
        *out = buf, *len = got;
    return rc;
}

int ss__manifest_read(ss_manifest *out, const char *path) {
    memset(out, 0, sizeof *out);
    char *file, *dir, *text = NULL;
    size_t len = 0;
    int rc = ss__manifest_locate(path, &file, &dir);
    if (rc) return rc;
    rc = read_all(file, &text, &len);
    if (!rc) {
        rc = ss__manifest_parse(out, text, len);
        if (rc) ss__context(rc, "dataset manifest '%s'", file);
    }
    free(text);
    free(file);
    free(dir);
    return rc;
}

static int io_fail(const char *what, const char *file) {
    int e = errno;
    return ss__fail(e == ENOSPC || e == EDQUOT ? SS_EFULL : SS_EIO, "%s '%s': %s", what, file,
                    strerror(e));
}

static int write_file(const char *tmp, const char *text, size_t len) {
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return io_fail("create", tmp);
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int rc = io_fail("write", tmp);
            close(fd);
            return rc;
        }
        done += (size_t)n;
    }
    if (fsync(fd) != 0) {
        int rc = io_fail("fsync", tmp);
        close(fd);
        return rc;
    }
    return close(fd) != 0 ? io_fail("close", tmp) : 0;
}

int ss__manifest_write(const ss_manifest *m, const char *dir) {
    char *text = NULL, *file = join(dir, SS_MANIFEST_NAME), *tmp = NULL;
    size_t len = 0;
    int rc = ss__manifest_format(m, &text, &len);
    if (!rc &&
        (!file || asprintf(&tmp, "%s/.%s.%ld.tmp", dir, SS_MANIFEST_NAME, (long)getpid()) < 0))
        rc = ss__fail(SS_ENOMEM, "out of memory"), tmp = NULL;
    if (!rc) rc = write_file(tmp, text, len);
    if (!rc && rename(tmp, file) != 0) rc = io_fail("rename to", file);
    if (rc && tmp) unlink(tmp);
    if (!rc) { /* make the rename durable */
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) fsync(fd), close(fd);
    }
    free(text);
    free(file);
    free(tmp);
    return rc;
}
