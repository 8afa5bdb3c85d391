/* convtest.h - helpers shared by the jsonl, SentencePiece and Megatron
 * converter tests: paths in the test directory, whole-file I/O, running the
 * CLI or another program with its stderr captured. Include once per test. */
#ifndef SS_CONVTEST_H
#define SS_CONVTEST_H

#include "testutil.h"

#include <stdarg.h>
#include <sys/wait.h>

static char g_err[1 << 16]; /* stderr of the last run */

/* A path in the test's directory (a copy: ss_test_path() rotates its buffers). */
static const char *tp(const char *name) {
    static char paths[512][768];
    static int next;
    CHECK(next < 512);
    snprintf(paths[next], sizeof paths[0], "%s", ss_test_path(name));
    return paths[next++];
}

static char *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    CHECK(f);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    CHECK(buf);
    for (size_t r; (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            buf = realloc(buf, 2 * cap + 1);
            CHECK(buf);
            cap *= 2;
        }
    }
    fclose(f);
    buf[n] = 0;
    *size = n;
    return buf;
}

static void write_all(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f);
    CHECK(fwrite(data, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

/* Run a shell command line; stderr lands in g_err. Returns the exit code,
 * or 128 + signal. */
static int run_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_sh(const char *fmt, ...) {
    char args[16384], cmd[17000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    const char *errf = tp("stderr.txt");
    snprintf(cmd, sizeof cmd, "( %s ) 2> %s", args, errf);
    int st = system(cmd);
    size_t n;
    char *e = read_all(errf, &n);
    snprintf(g_err, sizeof g_err, "%s", e);
    free(e);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define EXPECT_SH(code, ...) CHECK_EXIT(run_sh(__VA_ARGS__), code, g_err)
/* `seqstore ARGS` (stdout discarded) */
#define EXPECT_RUN(code, fmt, ...) EXPECT_SH(code, "%s " fmt " > /dev/null", SS_CLI, __VA_ARGS__)
#define EXPECT_ERR(text) CHECK_CONTAINS(g_err, text)

#endif
