/* SPDX-License-Identifier: BSD-2-Clause */
/* convtest.h - helpers shared by the jsonl, SentencePiece and Megatron
 * converter tests: paths in the test directory, whole-file I/O, running the
 * CLI or another program with its stderr captured. Include once per test. */
#ifndef SS_CONVTEST_H
#define SS_CONVTEST_H

#include "testutil.h"

#include <stdarg.h>
#include <sys/wait.h>

static char g_err[1 << 16]; /* stderr of the last run */

/* Run a shell command line; stderr lands in g_err. Returns the exit code,
 * or 128 + signal. */
static int run_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_sh(const char *fmt, ...) {
    char args[16384], cmd[17000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    const char *errf = ss_test_keep_path("stderr.txt");
    snprintf(cmd, sizeof cmd, "( %s ) 2> %s", args, errf);
    int st = system(cmd);
    size_t n;
    char *e = ss_test_read_file(errf, &n);
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
