/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_resume.c - interrupted `seqstore convert idx|npy|edf`: a
 * conversion SIGKILLed part way (SS_TEST_KILL_AFTER=N makes the converter kill
 * itself after N appended examples) leaves a store that readers refuse, whose
 * committed prefix equals the uninterrupted conversion's; `--resume` then
 * completes it into a store identical, example by example, field by field and
 * attribute by attribute, to the uninterrupted one; so does `--force`. The
 * only attribute allowed to differ is convert.options, which records the
 * command line of the run that began the conversion (a --resume keeps it):
 * it may differ in the steering arguments (--force, --commit-bytes).
 * idx: Fashion-MNIST t10k with labels (and the training set killed from
 * outside); npy: 40 files written here, one truncated (--skip-bad: a skipped
 * file must not count as a resumed example); edf: 7 EDF+ recordings written
 * with EDFlib, decoded by 2 threads. Each also has an --append killed part way
 * and resumed into a store identical to an uninterrupted append. */
#include "testutil.h"

#include <edflib.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define FASHION "/usr/share/datasets/fashion-mnist"

static char g_err[1 << 16]; /* stderr of the last run */

/* Run `[SS_TEST_KILL_AFTER=kill] seqstore ARGS` (kill < 0: not set); returns
 * the exit code, or 128 + signal. stderr lands in g_err. */
static int run(long kill, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int run(long kill, const char *fmt, ...) {
    char env[64];
    snprintf(env, sizeof env, "SS_TEST_KILL_AFTER=%ld", kill);
    va_list ap;
    va_start(ap, fmt);
    int rc = ss_test_cli_v(g_err, sizeof g_err, kill >= 0 ? env : NULL, fmt, ap);
    va_end(ap);
    return rc;
}

#define EXPECT_RUN(code, kill, ...) CHECK_EXIT(run((kill), __VA_ARGS__), code, g_err)
#define EXPECT_ERR(text) CHECK_CONTAINS(g_err, text)

/* --------------------------------------------------------------- comparing */

/* convert.options without the arguments that only steer a run (--resume,
 * --force, --commit-bytes N): what must be equal between the runs. */
static char *steering_free(const void *data, uint64_t size) {
    char *t = strndup(data, size), *out = malloc(size + 1);
    size_t n = 0;
    CHECK(t && out);
    int drop_next = 0;
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        if (drop_next) {
            drop_next = 0;
            continue;
        }
        if (!strcmp(line, "--resume") || !strcmp(line, "--force")) continue;
        if (!strcmp(line, "--commit-bytes")) {
            drop_next = 1;
            continue;
        }
        n += (size_t)sprintf(out + n, "%s\n", line);
    }
    out[n] = 0;
    free(t);
    return out;
}

/* Examples [0, n) of `a` and `b`: the same fields, every byte via ss_get. */
static void same_examples(const ss_store *a, const ss_store *b, uint64_t n) {
    CHECK_EQ_U64(ss_field_count(a), ss_field_count(b));
    for (uint32_t f = 0; f < ss_field_count(a); f++) {
        ss_field x, y;
        CHECK_OK(ss_field_info(&x, a, f));
        CHECK_OK(ss_field_info(&y, b, f));
        CHECK(!strcmp(x.name, y.name));
        CHECK_EQ_U64(x.dtype, y.dtype);
        CHECK_EQ_U64(x.sequence, y.sequence);
        CHECK_EQ_U64(x.ndim, y.ndim);
        for (uint32_t d = 0; d < x.ndim; d++) CHECK_EQ_U64(x.dims[d], y.dims[d]);
    }
    for (uint64_t i = 0; i < n; i++)
        for (uint32_t f = 0; f < ss_field_count(a); f++) {
            ss_view u, v;
            CHECK_OK(ss_get(&u, a, f, i));
            CHECK_OK(ss_get(&v, b, f, i));
            CHECK_EQ_U64(u.dtype, v.dtype);
            CHECK_EQ_U64(u.length, v.length);
            CHECK_EQ_U64(u.row_bytes, v.row_bytes);
            if (memcmp(u.data, v.data, u.length * u.row_bytes)) {
                fprintf(stderr, "example %llu field %u differs\n", (unsigned long long)i, f);
                exit(1);
            }
        }
}

/* Two complete stores are the same conversion. `extra` is the argument the
 * second one's last run added to convert.options ("--force"), "" when they
 * may differ only in steering arguments, or NULL when both ran the same
 * command. */
static void same_store(const char *pa, const char *pb, const char *extra) {
    ss_store *a = NULL, *b = NULL;
    CHECK_OK(ss_open(&a, pa, 0));
    CHECK_OK(ss_open(&b, pb, 0));
    CHECK_EQ_U64(ss_count(a), ss_count(b));
    same_examples(a, b, ss_count(a));
    CHECK_EQ_U64(ss_attr_count(a), ss_attr_count(b));
    for (uint64_t k = 0; k < ss_attr_count(a); k++) {
        ss_attr x, y;
        CHECK_OK(ss_attr_at(&x, a, k));
        CHECK_OK(ss_attr_at(&y, b, k));
        CHECK(!strcmp(x.name, y.name));
        CHECK_EQ_U64(x.type, y.type);
        if (!strcmp(x.name, "convert.options")) {
            /* each run records its own command line */
            char *nx = steering_free(x.data, x.size), *ny = steering_free(y.data, y.size);
            CHECK(!strcmp(nx, ny));
            if (!extra) {
                CHECK_EQ_U64(x.size, y.size);
                CHECK(!memcmp(x.data, y.data, x.size));
            }
            const char *t = y.data;
            size_t el = extra ? strlen(extra) : 0, ty = y.size;
            if (ty && t[ty - 1] == '\n') ty--; /* one argument per line */
            CHECK(!el || (ty > el && !memcmp(t + ty - el, extra, el) && t[ty - el - 1] == '\n'));
            free(nx);
            free(ny);
            continue;
        }
        CHECK_EQ_U64(x.size, y.size);
        if (memcmp(x.data, y.data, x.size)) {
            fprintf(stderr, "attribute '%s' differs\n", x.name);
            exit(1);
        }
    }
    ss_close(a);
    ss_close(b);
}

/* The committed prefix of an interrupted store: refused by ss_open and
 * `seqstore info`, and its examples those of the reference. Returns it. */
static uint64_t check_interrupted(const char *ref, const char *out, uint64_t killed_after) {
    ss_store *s = NULL, *r = NULL;
    CHECK_RC(ss_open(&s, out, 0), SS_EINCOMPLETE);
    EXPECT_RUN(1, -1, "info %s", out);
    CHECK_OK(ss_open(&s, out, SS_OPEN_INCOMPLETE));
    CHECK_OK(ss_open(&r, ref, 0));
    uint64_t n = ss_count(s);
    CHECK(n <= killed_after);
    same_examples(r, s, n);
    ss_close(s);
    ss_close(r);
    return n;
}

/* Delete a store and its lock file (the stores here are large). */
static void remove_store(const char *path) {
    char lock[900];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(path);
    unlink(lock);
}

/* ------------------------------------------------------------ the scenario */

/* One converter's interruption cases. `args` are its inputs and options;
 * `kills` the SS_TEST_KILL_AFTER points, each with its --commit-bytes (0:
 * the default); `total` the number of examples. */
typedef struct kill_case {
    long after;
    long commit_bytes;
} kill_case;

static void copy_file(const char *from, const char *to) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && rm -f '%s-lock'", from, to, to);
    CHECK(system(cmd) == 0);
}

/* An --append of the same inputs killed after `after` examples: the store
 * reads as before meanwhile; --resume ends it identical (every attribute
 * too: convert.options keeps the append's own line) to an uninterrupted
 * append. Leaves a complete store of `total` examples at `out`. */
static void append_case(const char *kind, const char *args, uint64_t total, long after,
                        const char *out) {
    char name[64];
    snprintf(name, sizeof name, "%s-base.ss", kind);
    const char *base = ss_test_keep_path(name);
    snprintf(name, sizeof name, "%s-ref-append.ss", kind);
    const char *ref = ss_test_keep_path(name);
    EXPECT_RUN(0, -1, "convert %s %s -o %s -q --force", kind, args, out);
    copy_file(out, base);
    EXPECT_RUN(0, -1, "convert %s %s -o %s -q --append --commit-bytes 1", kind, args, out);
    CHECK(rename(out, ref) == 0);
    copy_file(base, out);
    EXPECT_RUN(128 + SIGKILL, after, "convert %s %s -o %s -q --append --commit-bytes 1", kind, args,
               out);
    ss_store *s = NULL;
    CHECK_OK(ss_open(&s, out, 0));
    CHECK_EQ_U64(ss_count(s), total);
    ss_close(s);
    CHECK_OK(ss_open(&s, out, SS_OPEN_INCOMPLETE));
    fprintf(stderr, "%s: append killed after %ld examples: %llu of them committed\n", kind, after,
            (unsigned long long)(ss_count(s) - total));
    ss_close(s);
    EXPECT_RUN(0, -1, "convert %s %s -o %s -q --resume", kind, args, out);
    same_store(ref, out, NULL);
    EXPECT_RUN(0, -1, "verify %s", out);
    CHECK_OK(ss_open(&s, out, 0));
    CHECK_EQ_U64(ss_count(s), 2 * total);
    ss_close(s);
    remove_store(ref);
    remove_store(base);
    EXPECT_RUN(0, -1, "convert %s %s -o %s -q --force", kind, args, out);
}

static void scenario(const char *kind, const char *args, uint64_t total, const kill_case *kills,
                     int nkills) {
    char name[64], cb[64];
    int resumed_none = 0, resumed_some = 0;
    snprintf(name, sizeof name, "%s-ref.ss", kind);
    const char *ref = ss_test_keep_path(name);
    snprintf(name, sizeof name, "%s.ss", kind);
    const char *out = ss_test_keep_path(name);

    /* uninterrupted, written under the same name as the others (the name is
     * in convert.options), then moved aside */
    EXPECT_RUN(0, -1, "convert %s %s -o %s -q", kind, args, out);
    CHECK(rename(out, ref) == 0);
    {
        ss_store *s = NULL;
        CHECK_OK(ss_open(&s, ref, 0));
        CHECK_EQ_U64(ss_count(s), total);
        ss_close(s);
    }
    EXPECT_RUN(0, -1, "verify %s", ref);

    for (int k = 0; k < nkills; k++) {
        const kill_case *kc = &kills[k];
        cb[0] = 0;
        if (kc->commit_bytes) snprintf(cb, sizeof cb, "--commit-bytes %ld", kc->commit_bytes);
        EXPECT_RUN(128 + SIGKILL, kc->after, "convert %s %s -o %s -q --force %s", kind, args, out,
                   cb);
        uint64_t n = check_interrupted(ref, out, (uint64_t)kc->after);
        /* the writer commits whole data chunks (1 MiB): with the default
         * --commit-bytes (64 MiB) the first example is never committed */
        if (kc->commit_bytes == 0 && kc->after == 1) CHECK_EQ_U64(n, 0);
        resumed_none += n == 0;
        resumed_some += n > 0 && n < total;
        fprintf(stderr, "%s: killed after %ld examples: %llu committed\n", kind, kc->after,
                (unsigned long long)n);
        /* an existing store is not replaced without --force/--resume */
        EXPECT_RUN(1, -1, "convert %s %s -o %s -q", kind, args, out);
        EXPECT_ERR("exists");
        if (k == nkills - 1) {
            /* a clean restart instead */
            EXPECT_RUN(0, -1, "convert %s %s -o %s -q --force", kind, args, out);
            same_store(ref, out, "--force");
        } else {
            EXPECT_RUN(0, -1, "convert %s %s -o %s -q %s --resume", kind, args, out, cb);
            same_store(ref, out, "");
        }
        EXPECT_RUN(0, -1, "verify %s", out);
        EXPECT_RUN(0, -1, "info %s", out);
    }
    /* the cases really resumed from scratch and from the middle */
    CHECK(resumed_none > 0 && resumed_some > 0);
    append_case(kind, args, total, kills[1].after, out);
    /* nothing to resume in a complete store; it is left as it was */
    EXPECT_RUN(1, -1, "convert %s %s -o %s -q --resume", kind, args, out);
    EXPECT_ERR("is complete");
    EXPECT_ERR("nothing to resume");
    same_store(ref, out, "--force");
    remove_store(ref);
    remove_store(out);
}

/* ----------------------------------------------------------------- inputs */

/* A version 1.0 .npy file of T x 3 float32, little- or big-endian. */
static void write_npy(const char *path, uint64_t T, int big, uint64_t *rng) {
    char hdr[128];
    int n =
        snprintf(hdr, sizeof hdr, "{'descr': '%cf4', 'fortran_order': False, 'shape': (%llu, 3), }",
                 big ? '>' : '<', (unsigned long long)T);
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)n + pad + 1;
    size_t size = 10 + hlen + T * 12;
    unsigned char *b = malloc(size);
    CHECK(b);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)(hlen & 0xff);
    b[9] = (unsigned char)(hlen >> 8);
    memcpy(b + 10, hdr, (size_t)n);
    memset(b + 10 + n, ' ', pad);
    b[10 + hlen - 1] = '\n';
    for (uint64_t i = 0; i < T * 3; i++) {
        float v = (float)(ss_test_rand(rng) % 100000) / 7.0f - 5000.0f;
        unsigned char *p = b + 10 + hlen + 4 * i;
        memcpy(p, &v, 4);
        if (big) {
            unsigned char t = p[0];
            p[0] = p[3], p[3] = t, t = p[1], p[1] = p[2], p[2] = t;
        }
    }
    ss_test_write_file(path, b, size);
    free(b);
}

static void write_edf(const char *path, int nch, int seconds, uint64_t seed) {
    static const char *const labels[] = {"Fp1", "Fp2", "C3", "C4", "O1", "O2"};
    int h = edfopen_file_writeonly(path, EDFLIB_FILETYPE_EDFPLUS, nch);
    CHECK(h >= 0);
    for (int k = 0; k < nch; k++) {
        CHECK(edf_set_samplefrequency(h, k, 256) == 0);
        CHECK(edf_set_physical_maximum(h, k, 200.0 + k) == 0);
        CHECK(edf_set_physical_minimum(h, k, -200.0 - k) == 0);
        CHECK(edf_set_digital_maximum(h, k, 32767) == 0);
        CHECK(edf_set_digital_minimum(h, k, -32768) == 0);
        CHECK(edf_set_label(h, k, labels[k]) == 0);
        CHECK(edf_set_physical_dimension(h, k, "uV") == 0);
    }
    CHECK(edf_set_startdatetime(h, 2020, 1 + (int)(seed % 12), 3, 4, 5, 6) == 0);
    double buf[256];
    for (int s = 0; s < seconds; s++)
        for (int k = 0; k < nch; k++) {
            for (int i = 0; i < 256; i++)
                buf[i] = 100.0 * sin(0.05 * (s * 256 + i) * (k + 1)) +
                         (double)(ss_test_rand(&seed) % 1000) / 50.0 - 10.0;
            CHECK(edfwrite_physical_samples(h, buf) == 0);
        }
    CHECK(edfwrite_annotation_utf8(h, 5000, 2000, "stim") == 0);
    CHECK(edfwrite_annotation_utf8(h, (long long)(seconds - 1) * 10000, -1, "end") == 0);
    CHECK(edfclose_file(h) == 0);
}

/* ------------------------------------------------------------------ tests */

static void test_idx(void) {
    char args[2048];
    snprintf(args, sizeof args,
             "%s/t10k-images-idx3-ubyte.gz --labels %s/t10k-labels-idx1-ubyte.gz "
             "--label-names a,b,c,d,e,f,g,h,i,j",
             FASHION, FASHION);
    const kill_case kills[] = {
        {1, 0},        /* nothing committed yet */
        {4321, 4096},  /* mid-way, examples since the last commit lost */
        {9999, 1},     /* one before the end */
        {10000, 4096}, /* after the last example, before finishing */
        {6000, 4096},  /* then restarted with --force */
    };
    scenario("idx", args, 10000, kills, 5);
}

static void test_npy(void) {
    enum { NFILES = 40, BAD = 17 };
    static char args[NFILES * 800];
    size_t n = 0;
    uint64_t rng = 42;
    for (int i = 0; i < NFILES; i++) {
        char name[32];
        snprintf(name, sizeof name, "a%02d.npy", i);
        const char *p = ss_test_keep_path(name);
        uint64_t T = i == 5 ? 0 : i % 7 == 3 ? 100000 : ss_test_rand(&rng) % 60000;
        write_npy(p, T, i % 3 == 0, &rng);
        if (i == BAD) { /* truncated: skipped, and not counted by --resume */
            FILE *f = fopen(p, "r+b");
            CHECK(f);
            CHECK(ftruncate(fileno(f), 100) == 0);
            fclose(f);
        }
        n += (size_t)snprintf(args + n, sizeof args - n, "%s ", p);
    }
    snprintf(args + n, sizeof args - n, "--field x --skip-bad");
    const kill_case kills[] = {
        {1, 0}, {BAD, 1}, {BAD + 1, 1}, {25, 2000}, {NFILES - 2, 1}, {NFILES - 1, 1}, {20, 1},
    };
    scenario("npy", args, NFILES - 1, kills, 7);
}

static void test_edf(void) {
    enum { NFILES = 7 };
    static char args[NFILES * 800];
    size_t n = 0;
    for (int i = 0; i < NFILES; i++) {
        char name[32];
        snprintf(name, sizeof name, "r%d.edf", i);
        const char *p = ss_test_keep_path(name);
        write_edf(p, 6, 60 + 70 * i, (uint64_t)i + 100);
        n += (size_t)snprintf(args + n, sizeof args - n, "%s ", p);
    }
    snprintf(args + n, sizeof args - n, "--threads 2");
    const kill_case kills[] = {{1, 0}, {3, 1}, {4, 50000}, {NFILES - 1, 1}, {NFILES, 1}, {2, 1}};
    scenario("edf", args, NFILES, kills, 6);
}

/* A real SIGKILL from outside, at an arbitrary moment, of the 60000-image
 * training set, then --resume. */
static void test_idx_external_kill(void) {
    const char *ref = ss_test_keep_path("train-ref.ss"), *out = ss_test_keep_path("train.ss");
    const char *img = FASHION "/train-images-idx3-ubyte.gz",
               *lab = FASHION "/train-labels-idx1-ubyte.gz";
    EXPECT_RUN(0, -1, "convert idx %s --labels %s -o %s -q --commit-bytes 4096", img, lab, out);
    CHECK(rename(out, ref) == 0);
    char *argv[] = {SS_CLI, "convert",   "idx", (char *)img,      "--labels", (char *)lab,
                    "-o",   (char *)out, "-q",  "--commit-bytes", "4096",     NULL};
    pid_t pid;
    CHECK(posix_spawn(&pid, SS_CLI, NULL, NULL, argv, environ) == 0);
    /* wait until a few chunks are in the file (several commits happened) */
    for (int i = 0; i < 200000; i++) {
        struct stat sb;
        if (stat(out, &sb) == 0 && sb.st_size > (12 << 20)) break;
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    ss_store *done = NULL;
    int complete = ss_open(&done, out, 0) == 0;
    ss_close(done);
    if (!complete) {
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        uint64_t n = check_interrupted(ref, out, 60000);
        fprintf(stderr, "idx train: killed from outside with %llu examples committed\n",
                (unsigned long long)n);
        EXPECT_RUN(0, -1, "convert idx %s --labels %s -o %s -q --resume", img, lab, out);
        same_store(ref, out, "");
    } else {
        fprintf(stderr, "note: the conversion finished before SIGKILL arrived\n");
        CHECK(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 0));
        same_store(ref, out, NULL);
    }
    EXPECT_RUN(0, -1, "verify %s", out);
    remove_store(ref);
    remove_store(out);
}

int main(void) {
    test_idx();
    test_idx_external_kill();
    test_npy();
    test_edf();
    printf("test_convert_resume: ok\n");
    return 0;
}
