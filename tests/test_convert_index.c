/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_index.c - `seqstore convert ... --index-by FIELDS --index-resolution R
 * [--index-name NAME]`: the bucket index written by a conversion is the same
 * (byte for byte) as `seqstore index` run afterwards, and the same as a plain
 * sort of the input lines' lengths written here; --append rebuilds the store's
 * existing indices; --resume after a kill gives the same index; bad options
 * fail before anything is written. Runs the built CLI (SS_CLI). */
#include "testutil.h"

#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_out[768], g_err[768]; /* stdout and stderr of the last run */

/* Run `ENV seqstore ARGS`; returns the exit code, or 128 + signal. */
static int run(const char *env, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int run(const char *env, const char *fmt, ...) {
    char args[4096], cmd[6000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    if (!g_out[0]) {
        snprintf(g_out, sizeof g_out, "%s", ss_test_path("stdout.txt"));
        snprintf(g_err, sizeof g_err, "%s", ss_test_path("stderr.txt"));
    }
    snprintf(cmd, sizeof cmd, "exec env %s %s %s > %s 2> %s", env ? env : "", SS_CLI, args, g_out,
             g_err);
    int st = system(cmd);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void print_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char buf[1024];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) fwrite(buf, 1, n, stderr);
    fclose(f);
}

#define EXPECT_RUN(code, env, ...)                                                                 \
    do {                                                                                           \
        int got_ = run(env, __VA_ARGS__);                                                          \
        if (got_ != (code)) {                                                                      \
            fprintf(stderr, "%s:%d: exit %d, expected %d; stderr:\n", __FILE__, __LINE__, got_,    \
                    (code));                                                                       \
            print_file(g_err);                                                                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Write `n` lines of random printable bytes, lengths in [0, maxlen]; the
 * lengths go to len[]. */
static void write_lines(const char *path, uint64_t n, uint64_t maxlen, uint64_t *len,
                        uint64_t *rng) {
    FILE *f = fopen(path, "wb");
    CHECK(f);
    for (uint64_t i = 0; i < n; i++) {
        len[i] = ss_test_rand(rng) % (maxlen + 1);
        for (uint64_t k = 0; k < len[i]; k++) fputc('a' + (int)(ss_test_rand(rng) % 26), f);
        fputc('\n', f);
    }
    CHECK(fclose(f) == 0);
}

static int file_exists(const char *p) {
    return access(p, F_OK) == 0;
}

/* The stored attribute ss.bucket.NAME of the store at `path`, copied. */
static unsigned char *index_bytes(const char *path, const char *name, size_t *size) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    char key[300];
    snprintf(key, sizeof key, "%s%s", SS_BUCKET_ATTR_PREFIX, name);
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, key));
    unsigned char *copy = malloc(a.size);
    CHECK(copy);
    memcpy(copy, a.data, a.size);
    *size = a.size;
    ss_close(s);
    return copy;
}

static void check_same_index(const char *a, const char *b, const char *name) {
    size_t na, nb;
    unsigned char *x = index_bytes(a, name, &na), *y = index_bytes(b, name, &nb);
    CHECK_EQ_U64(na, nb);
    CHECK(memcmp(x, y, na) == 0);
    free(x);
    free(y);
}

/* Naive reference: sort (keys..., index) lexicographically; a bucket starts
 * where floor(key / R) changes in any key; inside a bucket, index order. */
static const uint64_t *const *g_keys;
static size_t g_nkeys;
static int cmp_ix(const void *pa, const void *pb) {
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    for (size_t k = 0; k < g_nkeys; k++)
        if (g_keys[k][a] != g_keys[k][b]) return g_keys[k][a] < g_keys[k][b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int cmp_u64(const void *pa, const void *pb) {
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

static void check_against_naive(const char *path, const char *name, const uint64_t *const *keys,
                                size_t nkeys, uint64_t n, uint64_t R) {
    uint64_t *perm = malloc(n * sizeof *perm), *starts = malloc((n + 1) * sizeof *starts);
    CHECK(perm && starts);
    for (uint64_t i = 0; i < n; i++) perm[i] = i;
    g_keys = keys;
    g_nkeys = nkeys;
    qsort(perm, n, sizeof *perm, cmp_ix);
    uint64_t nb = 0;
    for (uint64_t i = 0; i < n; i++) {
        int cut = i == 0;
        for (size_t k = 0; k < nkeys && !cut; k++)
            cut = keys[k][perm[i]] / R != keys[k][perm[i - 1]] / R;
        if (cut) starts[nb++] = i;
    }
    starts[nb] = n;
    for (uint64_t q = 0; q < nb; q++) /* store index order inside a bucket */
        qsort(perm + starts[q], starts[q + 1] - starts[q], sizeof *perm, cmp_u64);

    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_bucket *b;
    CHECK_OK(ss_bucket_open(&b, s, name));
    CHECK_EQ_U64(ss_bucket_size(b), n);
    CHECK_EQ_U64(ss_bucket_count(b), nb);
    CHECK_EQ_U64(ss_bucket_resolution(b), R);
    CHECK_EQ_U64(ss_bucket_keys(NULL, b), nkeys);
    const uint64_t *p = ss_bucket_permutation(b), *st = ss_bucket_starts(b);
    for (uint64_t i = 0; i < n; i++) CHECK_EQ_U64(p[i], perm[i]);
    for (uint64_t q = 0; q <= nb; q++) CHECK_EQ_U64(st[q], starts[q]);
    ss_bucket_free(b);
    ss_close(s);
    free(perm);
    free(starts);
}

/* One key: lines converter, convert --index-by vs convert + `seqstore index`. */
static void test_one_key(void) {
    uint64_t rng = 11, n = 700, len[700];
    const char *in = ss_test_keep_path("one.txt");
    write_lines(in, n, 60, len, &rng);
    const char *a = ss_test_keep_path("one_a.ss"), *b = ss_test_keep_path("one_b.ss");
    EXPECT_RUN(0, NULL, "convert lines %s -o %s -q --index-by tokens --index-resolution 8", in, a);
    EXPECT_RUN(0, NULL, "convert lines %s -o %s -q", in, b);
    EXPECT_RUN(0, NULL, "index %s --by tokens --resolution 8", b);
    check_same_index(a, b, "tokens");
    const uint64_t *keys[1] = {len};
    check_against_naive(a, "tokens", keys, 1, n, 8);

    /* the conversion's other content is unchanged by the option: same examples */
    ss_store *s;
    CHECK_OK(ss_open(&s, a, 0));
    CHECK_EQ_U64(ss_count(s), n);
    for (uint64_t i = 0; i < n; i++) CHECK_EQ_U64(ss_length(s, 0, i), len[i]);
    ss_close(s);

    /* resolution 1 (exact lengths), a name, --opt=value spelling */
    const char *c = ss_test_keep_path("one_c.ss");
    EXPECT_RUN(0, NULL,
               "convert lines %s -o %s -q --index-by=tokens --index-resolution=1 "
               "--index-name=exact",
               in, c);
    EXPECT_RUN(0, NULL, "index %s --by tokens --resolution 1 --name exact", b);
    check_same_index(c, b, "exact");
    check_against_naive(c, "exact", keys, 1, n, 1);
}

/* Two keys: the parallel converter's src,tgt. */
static void test_two_keys(void) {
    uint64_t rng = 23, n = 500, ls[500], lt[500];
    const char *src = ss_test_keep_path("src.txt"), *tgt = ss_test_keep_path("tgt.txt");
    write_lines(src, n, 9, ls, &rng); /* short: many ties in the first key */
    write_lines(tgt, n, 40, lt, &rng);
    const char *a = ss_test_keep_path("two_a.ss"), *b = ss_test_keep_path("two_b.ss");
    EXPECT_RUN(0, NULL,
               "convert parallel %s %s -o %s -q --index-by src,tgt --index-resolution 5 "
               "--index-name pair --threads 2",
               src, tgt, a);
    EXPECT_RUN(0, NULL, "convert parallel %s %s -o %s -q", src, tgt, b);
    EXPECT_RUN(0, NULL, "index %s --by src,tgt --resolution 5 --name pair", b);
    check_same_index(a, b, "pair");
    const uint64_t *keys[2] = {ls, lt};
    check_against_naive(a, "pair", keys, 2, n, 5);
}

/* --append rebuilds the existing indices (and --index-by replaces its own). */
static void test_append(void) {
    uint64_t rng = 37, n1 = 300, n2 = 250, len[550];
    const char *in1 = ss_test_keep_path("app1.txt"), *in2 = ss_test_keep_path("app2.txt");
    write_lines(in1, n1, 50, len, &rng);
    write_lines(in2, n2, 80, len + n1, &rng);
    const char *a = ss_test_keep_path("app.ss");
    EXPECT_RUN(0, NULL, "convert lines %s -o %s -q --index-by tokens --index-resolution 4", in1, a);
    EXPECT_RUN(0, NULL, "index %s --by tokens --resolution 16 --name coarse", a);
    const uint64_t *keys[1] = {len};
    check_against_naive(a, "tokens", keys, 1, n1, 4);
    check_against_naive(a, "coarse", keys, 1, n1, 16);

    /* a plain --append: both indices are rebuilt, with their own resolutions */
    EXPECT_RUN(0, NULL, "convert lines %s -o %s -q --append", in2, a);
    check_against_naive(a, "tokens", keys, 1, n1 + n2, 4);
    check_against_naive(a, "coarse", keys, 1, n1 + n2, 16);

    /* the same as `seqstore index` on the appended store */
    const char *b = ss_test_keep_path("app_b.ss");
    EXPECT_RUN(0, NULL, "convert lines %s -o %s -q", in1, b);
    EXPECT_RUN(0, NULL, "convert lines %s -o %s -q --append", in2, b);
    EXPECT_RUN(0, NULL, "index %s --by tokens --resolution 4", b);
    EXPECT_RUN(0, NULL, "index %s --by tokens --resolution 16 --name coarse", b);
    check_same_index(a, b, "tokens");
    check_same_index(a, b, "coarse");

    /* --append --index-by with an existing name replaces its resolution */
    EXPECT_RUN(0, NULL,
               "convert lines %s -o %s -q --append --index-by tokens --index-resolution 2 "
               "--index-name coarse",
               in1, a);
    uint64_t all[850];
    memcpy(all, len, sizeof len);
    memcpy(all + n1 + n2, len, n1 * sizeof *len);
    const uint64_t *keys2[1] = {all};
    check_against_naive(a, "coarse", keys2, 1, n1 + n2 + n1, 2);
    check_against_naive(a, "tokens", keys2, 1, n1 + n2 + n1, 4);
}

/* A conversion killed mid-way and resumed writes the same index. */
static void test_resume(void) {
    uint64_t rng = 41, n = 3000, len[3000];
    const char *in = ss_test_keep_path("res.txt");
    write_lines(in, n, 30, len, &rng);
    const char *a = ss_test_keep_path("res.ss"), *b = ss_test_keep_path("res_b.ss");
    const char *opts = "--index-by tokens --index-resolution 3 --commit-bytes 512";
    EXPECT_RUN(128 + 9, "SS_TEST_KILL_AFTER=1700", "convert lines %s -o %s -q %s", in, a, opts);
    ss_store *s;
    CHECK(ss_open(&s, a, 0) != 0); /* incomplete */
    EXPECT_RUN(0, NULL, "convert lines %s -o %s -q --resume %s", in, a, opts);
    EXPECT_RUN(0, NULL, "convert lines %s -o %s -q", in, b);
    EXPECT_RUN(0, NULL, "index %s --by tokens --resolution 3", b);
    check_same_index(a, b, "tokens");
    const uint64_t *keys[1] = {len};
    check_against_naive(a, "tokens", keys, 1, n, 3);
}

/* Bad options: usage errors (2) or, for a field the conversion lacks, a runtime
 * error (1); no store is created either way. */
static void test_errors(void) {
    uint64_t rng = 5, len[10];
    const char *in = ss_test_keep_path("err.txt"), *o = ss_test_keep_path("err.ss");
    write_lines(in, 10, 5, len, &rng);
    EXPECT_RUN(2, NULL, "convert lines %s -o %s --index-by tokens", in, o);
    EXPECT_RUN(2, NULL, "convert lines %s -o %s --index-resolution 4", in, o);
    EXPECT_RUN(2, NULL, "convert lines %s -o %s --index-by tokens --index-resolution 0", in, o);
    EXPECT_RUN(2, NULL, "convert lines %s -o %s --index-by tokens --index-resolution x", in, o);
    EXPECT_RUN(2, NULL, "convert lines %s -o %s --index-name n --index-resolution 3", in, o);
    EXPECT_RUN(2, NULL,
               "convert lines %s -o %s --index-by tokens --index-resolution 3 "
               "--index-name 'a b'",
               in, o);
    CHECK(!file_exists(o));
    EXPECT_RUN(1, NULL, "convert lines %s -o %s --index-by tgt --index-resolution 3", in, o);
    CHECK(!file_exists(o));
    EXPECT_RUN(1, NULL, "convert lines %s -o %s --index-by source --index-resolution 3", in, o);
    CHECK(!file_exists(o));
    EXPECT_RUN(1, NULL,
               "convert lines %s -o %s --index-by tokens,tokens,tokens,tokens,tokens "
               "--index-resolution 3",
               in, o);
    CHECK(!file_exists(o));
}

int main(void) {
    test_one_key();
    test_two_keys();
    test_append();
    test_resume();
    test_errors();
    printf("test_convert_index: ok\n");
    return 0;
}
