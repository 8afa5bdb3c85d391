/* SPDX-License-Identifier: BSD-2-Clause */
/* testutil.c - temporary directories and a small RNG for tests. */
#include "testutil.h"

#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[512];
static pid_t g_owner;
static int g_failed;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* At exit, the test's directory goes unless a check failed (then it is kept
 * for inspection and named) or SS_TEST_KEEP is set; forked children never
 * remove their parent's directory. */
static void remove_tmpdir(void) {
    if (getpid() != g_owner || !g_dir[0]) return;
    const char *keep = getenv("SS_TEST_KEEP");
    if (g_failed || (keep && *keep)) {
        fprintf(stderr, "test files kept in %s\n", g_dir);
        return;
    }
    nftw(g_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

_Noreturn void ss_test_fail_exit(void) {
    g_failed = 1;
    exit(1);
}

const char *ss_test_tmpdir(void) {
    char *dir = g_dir;
    if (dir[0]) return dir;
    const char *base = getenv("SS_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    mkdir(base, 0755);
    snprintf(dir, sizeof g_dir, "%s/ss-test-XXXXXX", base);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    g_owner = getpid();
    atexit(remove_tmpdir);
    return dir;
}

const char *ss_test_path(const char *name) {
    static char slots[8][768];
    static unsigned next;
    char *p = slots[next++ % 8];
    snprintf(p, sizeof slots[0], "%s/%s", ss_test_tmpdir(), name);
    return p;
}

const char *ss_test_keep_path(const char *name) {
    static char paths[1024][768];
    static unsigned next;
    char p[768];
    snprintf(p, sizeof p, "%s/%s", ss_test_tmpdir(), name);
    for (unsigned i = 0; i < next; i++) /* one slot per name */
        if (strcmp(paths[i], p) == 0) return paths[i];
    CHECK(next < 1024);
    memcpy(paths[next], p, sizeof p);
    return paths[next++];
}

char *ss_test_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    CHECK(f);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    CHECK(buf);
    for (size_t r; (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            CHECK((buf = realloc(buf, 2 * cap + 1)) != NULL);
            cap *= 2;
        }
    }
    CHECK(!ferror(f));
    fclose(f);
    buf[n] = 0;
    *size = n;
    return buf;
}

void ss_test_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f);
    CHECK(fwrite(data, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

void ss_test_flip_attr(const char *path, const char *name, uint64_t at) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, SS_OPEN_NOLOCK));
    ss_attr a;
    const void *base;
    uint64_t size;
    int fd;
    CHECK_OK(ss_attr_get(&a, s, name));
    CHECK_OK(ss_store_map(&base, &size, &fd, s));
    CHECK(at < a.size);
    uint64_t off = (uint64_t)((const unsigned char *)a.data - (const unsigned char *)base) + at;
    ss_close(s);
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, (long)off, SEEK_SET) == 0);
    int c = fgetc(f);
    CHECK(c != EOF && fseek(f, (long)off, SEEK_SET) == 0);
    CHECK(fputc(c ^ 1, f) != EOF && fclose(f) == 0);
}

uint64_t ss_test_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int ss_test_cli_v(char *err, size_t errlen, const char *env, const char *fmt, va_list ap) {
#ifdef SS_CLI
    char args[16384], cmd[20000], errfile[800];
    vsnprintf(args, sizeof args, fmt, ap);
    snprintf(errfile, sizeof errfile, "%s/cli-stderr.txt", ss_test_tmpdir());
    if (env)
        snprintf(cmd, sizeof cmd, "export %s; exec %s %s > /dev/null 2> %s", env, SS_CLI, args,
                 errfile);
    else
        snprintf(cmd, sizeof cmd, "exec %s %s > /dev/null 2> %s", SS_CLI, args, errfile);
    int st = system(cmd);
    FILE *f = fopen(errfile, "r");
    size_t n = f && errlen ? fread(err, 1, errlen - 1, f) : 0;
    if (errlen) err[n] = '\0';
    if (f) fclose(f);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
#else
    (void)err, (void)errlen, (void)env, (void)fmt, (void)ap;
    fprintf(stderr, "ss_test_cli: SS_CLI is not defined for this test\n");
    exit(1);
#endif
}

int ss_test_cli(char *err, size_t errlen, const char *env, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = ss_test_cli_v(err, errlen, env, fmt, ap);
    va_end(ap);
    return rc;
}

uint32_t ss_test_field(const ss_store *s, const char *name) {
    uint32_t f = SS_FIELD_NONE;
    int rc = ss_field_index(&f, s, name);
    if (rc) {
        fprintf(stderr, "no field '%s': %s\n", name, ss_error_message());
        exit(1);
    }
    return f;
}

/* Fail the test unless attribute `a` of `s` equals the one of the same name
 * in `ref`. */
static void same_attr(const ss_store *s, const ss_store *ref, const ss_attr *a, const char *what) {
    ss_attr b;
    if (ss_attr_get(&b, ref, a->name) || b.type != a->type || b.size != a->size ||
        memcmp(a->data, b.data, a->size)) {
        fprintf(stderr, "%s: attribute '%s' differs from the single-process store's\n", what,
                a->name);
        exit(1);
    }
    (void)s;
}

/* The stored lengths of every sequence field of shard `s` equal the index
 * lengths of its examples in `ref`, which start at `first`. */
static void check_shard_lengths(const ss_store *s, const ss_store *ref, uint64_t first,
                                const char *what) {
    for (uint32_t f = 0; f < ss_field_count(s); f++) {
        ss_field def;
        CHECK_OK(ss_field_info(&def, s, f));
        if (!def.sequence) continue;
        const void *data;
        ss_dtype dt;
        uint64_t n;
        CHECK_OK(ss_lengths_view(&data, &dt, &n, s, f));
        CHECK_EQ_U64(n, ss_count(s));
        for (uint64_t i = 0; i < n; i++) {
            uint64_t got = dt == SS_U8    ? ((const uint8_t *)data)[i]
                           : dt == SS_U16 ? ((const uint16_t *)data)[i]
                           : dt == SS_U32 ? ((const uint32_t *)data)[i]
                                          : ((const uint64_t *)data)[i];
            if (got != ss_length(ref, f, first + i)) {
                fprintf(stderr, "%s: stored length of example %" PRIu64 " field %u differs\n", what,
                        i, f);
                exit(1);
            }
        }
    }
}

void ss_test_check_shards(const char *single, const char *const *shards, uint32_t n) {
    ss_store *ref;
    CHECK_OK(ss_open(&ref, single, 0));
    uint64_t next = 0;
    for (uint32_t k = 0; k < n; k++) {
        ss_store *s;
        CHECK_OK(ss_open(&s, shards[k], 0));
        CHECK_EQ_U64(ss_field_count(s), ss_field_count(ref));
        for (uint32_t f = 0; f < ss_field_count(ref); f++) {
            ss_field a, b;
            CHECK_OK(ss_field_info(&a, s, f));
            CHECK_OK(ss_field_info(&b, ref, f));
            CHECK(!strcmp(a.name, b.name) && a.dtype == b.dtype && a.sequence == b.sequence);
        }
        for (uint64_t i = 0; i < ss_count(s); i++, next++) {
            CHECK(next < ss_count(ref));
            for (uint32_t f = 0; f < ss_field_count(ref); f++) {
                ss_view a, b;
                CHECK_OK(ss_get(&a, s, f, i));
                CHECK_OK(ss_get(&b, ref, f, next));
                if (a.length != b.length || memcmp(a.data, b.data, a.length * a.row_bytes)) {
                    fprintf(stderr,
                            "shard %u/%u example %" PRIu64 " field %u differs from "
                            "example %" PRIu64 " of the single-process store\n",
                            k, n, i, f, next);
                    exit(1);
                }
            }
        }
        /* every attribute but those naming the run's options and shard, and
         * the stored lengths (§7.3), which are the shard's slice of the
         * single store's */
        for (uint64_t j = 0; j < ss_attr_count(s); j++) {
            ss_attr a;
            CHECK_OK(ss_attr_at(&a, s, j));
            if (strcmp(a.name, "convert.options") && strcmp(a.name, "source.shard") &&
                strncmp(a.name, SS_LENGTHS_ATTR_PREFIX, strlen(SS_LENGTHS_ATTR_PREFIX)))
                same_attr(s, ref, &a, shards[k]);
        }
        check_shard_lengths(s, ref, next - ss_count(s), shards[k]);
        CHECK_EQ_U64(ss_attr_count(s), ss_attr_count(ref) + 1); /* + source.shard */
        ss_close(s);
    }
    CHECK_EQ_U64(next, ss_count(ref));
    ss_close(ref);
}

void ss_test_convert_shards(const char *env, const char *args, const char *single,
                            const char *prefix) {
    static const uint32_t ns[] = {1, 2, 3, 7};
    char err[4096];
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        const char *paths[7];
        char name[256];
        for (uint32_t k = 0; k < ns[t]; k++) {
            snprintf(name, sizeof name, "%s-%u-of-%u.ss", prefix, k, ns[t]);
            paths[k] = ss_test_keep_path(name);
            int rc = ss_test_cli(err, sizeof err, env, "%s -o %s --force --shard %u/%u", args,
                                 paths[k], k, ns[t]);
            CHECK_EXIT(rc, 0, err);
        }
        ss_test_check_shards(single, paths, ns[t]);
        uint32_t nonempty = 0; /* the split is real: at least two shards hold examples */
        for (uint32_t k = 0; k < ns[t]; k++) {
            ss_store *s;
            CHECK_OK(ss_open(&s, paths[k], 0));
            nonempty += ss_count(s) > 0;
            ss_close(s);
        }
        CHECK(nonempty >= (ns[t] < 2 ? ns[t] : 2));
    }
}

void ss_test_run_put(ss_test_run *r, uint64_t x) {
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 4096;
        r->v = realloc(r->v, r->cap * 8);
        CHECK(r->v != NULL);
    }
    r->v[r->n++] = x;
}

void ss_test_run_loader(ss_test_run *r, ss_loader *l) {
    for (int epoch = 0; epoch < 2; epoch++) {
        if (epoch) CHECK_OK(ss_loader_set_epoch(l, (uint64_t)epoch));
        const ss_loader_batch *b;
        int rc;
        while ((rc = ss_loader_next(&b, l)) == 0) {
            ss_test_run_put(r, b->rows);
            for (uint64_t i = 0; i < b->rows; i++) ss_test_run_put(r, b->indices[i]);
            const ss_collated *c = &b->data.fields[0];
            for (uint64_t i = 0; i < b->rows; i++) ss_test_run_put(r, (uint64_t)c->lengths[i]);
            const unsigned char *p = c->data;
            for (uint64_t i = 0; i < c->data_bytes; i++) ss_test_run_put(r, p[i]);
        }
        CHECK_RC(rc, SS_ITEROVER);
    }
}

void ss_test_same_loader_batches(const ss_store *a, const ss_store *b, int modes,
                                 ss_test_collect_fn collect) {
    const uint32_t conf[4][2] = {{1, 1}, {2, 1}, {1, 3}, {2, 2}};
    for (int mode = 0; mode < modes; mode++)
        for (int c = 0; c < 4; c++)
            for (uint32_t rank = 0; rank < conf[c][0]; rank++)
                for (uint32_t w = 0; w < conf[c][1]; w++) {
                    ss_test_run ra = {0, 0, NULL}, rb = {0, 0, NULL};
                    collect(&ra, a, mode, conf[c][0], rank, conf[c][1], w);
                    collect(&rb, b, mode, conf[c][0], rank, conf[c][1], w);
                    CHECK(ra.n > 0);
                    CHECK_EQ_U64(ra.n, rb.n);
                    CHECK(memcmp(ra.v, rb.v, ra.n * 8) == 0);
                    free(ra.v);
                    free(rb.v);
                }
}

int ss_test_next_(int rc, const char *expr, const char *file, int line) {
    if (rc == SS_ITEROVER) return 1;
    if (rc != 0) {
        fprintf(stderr, "%s:%d: %s returned %d (%s): %s\n", file, line, expr, rc, ss_strerror(rc),
                ss_error_message());
        ss_test_fail_exit();
    }
    return 0;
}
