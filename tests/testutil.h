/* SPDX-License-Identifier: BSD-2-Clause */
/* testutil.h - tiny assertion helpers for seqstore's tests. */
#ifndef SS_TESTUTIL_H
#define SS_TESTUTIL_H

#include "seqstore.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK(%s) failed (last error: %s)\n", __FILE__, __LINE__,      \
                    #cond, ss_error_message());                                                    \
            ss_test_fail_exit();                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
    do {                                                                                           \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                           \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "%s:%d: %s == %s failed: %" PRIu64 " != %" PRIu64 "\n", __FILE__,      \
                    __LINE__, #a, #b, a_, b_);                                                     \
            ss_test_fail_exit();                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "%s:%d: %s returned %d (%s): %s\n", __FILE__, __LINE__, #expr, rc_,    \
                    ss_strerror(rc_), ss_error_message());                                         \
            ss_test_fail_exit();                                                                   \
        }                                                                                          \
    } while (0)

/* An iterator's next call: 1 at SS_ITEROVER, 0 on success; any other code
 * fails the test. Use: if (CHECK_NEXT(ss_window_reader_next(&b, r))) break; */
#define CHECK_NEXT(expr) ss_test_next_((expr), #expr, __FILE__, __LINE__)
int ss_test_next_(int rc, const char *expr, const char *file, int line);

/* Expect a specific error code. */
#define CHECK_RC(expr, code)                                                                       \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != (code)) {                                                                       \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %s: %s\n", __FILE__, __LINE__,   \
                    #expr, rc_, ss_strerror(rc_), #code, ss_error_message());                      \
            ss_test_fail_exit();                                                                   \
        }                                                                                          \
    } while (0)

/* Expect a command's exit code; on failure print `err` (its stderr). */
#define CHECK_EXIT(expr, code, err)                                                                \
    do {                                                                                           \
        int got_ = (expr);                                                                         \
        if (got_ != (code)) {                                                                      \
            fprintf(stderr, "%s:%d: exit %d, expected %d; stderr:\n%s\n", __FILE__, __LINE__,      \
                    got_, (code), (err));                                                          \
            ss_test_fail_exit();                                                                   \
        }                                                                                          \
    } while (0)

/* Expect `text` to contain `part`. */
#define CHECK_CONTAINS(text, part)                                                                 \
    do {                                                                                           \
        if (!strstr((text), (part))) {                                                             \
            fprintf(stderr, "%s:%d: output lacks \"%s\":\n%s\n", __FILE__, __LINE__, (part),       \
                    (text));                                                                       \
            ss_test_fail_exit();                                                                   \
        }                                                                                          \
    } while (0)

/* A fresh, empty temporary directory for this test process (static storage). */
const char *ss_test_tmpdir(void);
/* exit(1) after a failed check: the test's directory is kept (and named). */
_Noreturn void ss_test_fail_exit(void);
/* ss_test_tmpdir() + "/" + name, in a static rotating buffer (8 slots). */
const char *ss_test_path(const char *name);
/* ss_test_tmpdir() + "/" + name in storage of its own that lasts until the
 * process ends, for paths a test keeps (the same name gives the same
 * pointer; at most 1024 names per process). */
const char *ss_test_keep_path(const char *name);
/* The whole file, NUL-terminated (the NUL not counted in *size); the caller
 * frees it. An unreadable file fails the test. */
char *ss_test_read_file(const char *path, size_t *size);
/* Write n bytes to path, replacing it; an error fails the test. */
void ss_test_write_file(const char *path, const void *data, size_t n);
/* Run `[ENV] seqstore ARGS` through the shell (ARGS printf-style; ENV like
 * "SS_TEST_KILL_AFTER=5", or NULL). Its stderr is copied into err (at most
 * errlen - 1 bytes, NUL-terminated); stdout is discarded unless ARGS
 * redirects it. Returns the exit code, or 128 + signal number. */
int ss_test_cli(char *err, size_t errlen, const char *env, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int ss_test_cli_v(char *err, size_t errlen, const char *env, const char *fmt, va_list ap);

/* Flip one bit of byte `at` of the value of attribute `name` (the bytes
 * ss_attr_get() hands out) in the store file at `path`, found through
 * ss_store_map() while no other handle is open, so that its checksum fails.
 * A missing attribute or `at` beyond its value fails the test. */
void ss_test_flip_attr(const char *path, const char *name, uint64_t at);

/* The index of field `name` of `s`; fails the test (exit 1) when there is none. */
uint32_t ss_test_field(const ss_store *s, const char *name);

/* Fail the test unless stores shards[0..n), assembled in order, hold exactly
 * the examples of `single` in order (every field, byte for byte) and every
 * attribute of it (but convert.options, plus their own source.shard). */
void ss_test_check_shards(const char *single, const char *const *shards, uint32_t n);
/* Run `[ENV] seqstore ARGS -o PREFIX-K-of-N.ss --force --shard K/N` for
 * every K < N, N = 1, 2, 3 and 7 (PREFIX a name in the test directory), and
 * ss_test_check_shards() against
 * `single` (converted by the caller with the same ARGS). */
void ss_test_convert_shards(const char *env, const char *args, const char *single,
                            const char *prefix);

/* A growing array of u64 words: what a loader handed out, to compare. */
typedef struct ss_test_run {
    uint64_t n, cap, *v;
} ss_test_run;
/* Append x to r (an allocation failure fails the test). */
void ss_test_run_put(ss_test_run *r, uint64_t x);
/* Two epochs of loader l (epoch 0, then ss_loader_set_epoch(l, 1)) into r:
 * per batch its rows, indices, its first field's lengths and collated bytes. */
void ss_test_run_loader(ss_test_run *r, ss_loader *l);
/* Opens a loader over s for batching mode `mode`, at rank `rank` of R and
 * worker `worker` of W, and records it into r with ss_test_run_loader(). */
typedef void (*ss_test_collect_fn)(ss_test_run *r, const ss_store *s, int mode, uint32_t R,
                                   uint32_t rank, uint32_t W, uint32_t worker);
/* Fail the test unless collect() gives the same, non-empty record over a as
 * over b for every mode < modes and every rank and worker of 1x1, 2x1, 1x3
 * and 2x2 ranks x workers (a dataset against its merged store). */
void ss_test_same_loader_batches(const ss_store *a, const ss_store *b, int modes,
                                 ss_test_collect_fn collect);

/* Deterministic test RNG (splitmix64). */
uint64_t ss_test_rand(uint64_t *state);

#endif
