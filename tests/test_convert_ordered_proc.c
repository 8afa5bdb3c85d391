/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_ordered_proc.c - converters/ordered_proc.c: inputs decoded in
 * forked processes reach the emitter in input order, each from the shared
 * slot its decode filled; a failed emit stops the run; a decoder that dies
 * is reported with its input and never hangs the run; no child is left
 * behind; a process with a second thread forks nothing; the arena. */
#include "ordered.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXN 100

typedef struct slot {
    uint64_t input; /* what the decode wrote */
    pid_t pid;      /* the process that decoded it */
    char *buf;      /* from the slot's arena: input * 1000 bytes of (char)input */
    ss_conv_arena arena;
} slot;

typedef struct run {
    char *mem;
    size_t stride;
    int nslots;
    uint64_t nemitted, fail_at;
    int order_ok, slot_ok, data_ok, other_pid;
    uint64_t decoded_here; /* decodes that wrote this copy of the context (must stay 0) */
} run;

static void decode(void *ctx, void *sl, uint64_t i) {
    run *r = ctx;
    slot *s = sl;
    struct timespec ts = {0, (long)((i * 7919) % 5) * 200000}; /* out of order */
    nanosleep(&ts, NULL);
    r->decoded_here++; /* the child's copy: the parent's stays 0 */
    ss__conv_arena_reset(&s->arena);
    s->buf = ss__conv_arena_grow(&s->arena, NULL, 0, (size_t)i * 1000 + 1);
    if (s->buf) memset(s->buf, (char)i, (size_t)i * 1000 + 1);
    s->input = i;
    s->pid = getpid();
}

static int emit(void *ctx, void *sl, uint64_t i) {
    run *r = ctx;
    slot *s = sl;
    if (i != r->nemitted || s->input != i) r->order_ok = 0;
    if ((char *)s != r->mem + (i % (uint64_t)r->nslots) * r->stride) r->slot_ok = 0;
    if (!s->buf || s->buf[0] != (char)i || s->buf[i * 1000] != (char)i) r->data_ok = 0;
    if (s->pid != getpid()) r->other_pid = 1;
    r->nemitted++;
    return i == r->fail_at;
}

/* No child of this process is left, running or a zombie. */
static void check_no_children(void) {
    CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
}

static int run_once(run *r, ss_conv_proc_death *died, int nprocs, uint64_t n, uint64_t fail_at) {
    r->nslots = ss__conv_ordered_slots(nprocs);
    r->stride = 4096 + (size_t)MAXN * 1000 + 64;
    r->mem = ss__conv_shared_alloc(r->stride * (size_t)r->nslots);
    CHECK(r->mem != NULL);
    for (int k = 0; k < r->nslots; k++) {
        slot *s = (slot *)(r->mem + (size_t)k * r->stride);
        s->arena = (ss_conv_arena){(char *)s + 4096, r->stride - 4096, 0, NULL};
    }
    r->nemitted = 0, r->fail_at = fail_at;
    r->order_ok = r->slot_ok = r->data_ok = 1, r->other_pid = 0, r->decoded_here = 0;
    int rc = ss__conv_proc_ordered(died, r, r->mem, r->stride, nprocs, n, decode, emit);
    ss__conv_shared_free(r->mem, r->stride * (size_t)r->nslots);
    check_no_children();
    return rc;
}

static void *wait_pipe(void *arg) {
    char c;
    return read(*(int *)arg, &c, 1) < 0 ? NULL : arg;
}

static void test_arena(void) {
    char mem[1024];
    ss_conv_arena a = {mem, sizeof mem, 0, NULL};
    char *p = ss__conv_arena_grow(&a, NULL, 0, 10);
    CHECK(p == mem);
    memcpy(p, "abcdefghij", 10);
    CHECK(ss__conv_arena_grow(&a, p, 10, 100) == p && a.used == 100); /* last: in place */
    char *q = ss__conv_arena_grow(&a, NULL, 0, 10);
    CHECK(q == mem + 128 && a.used == 138);        /* 64-byte aligned */
    char *p2 = ss__conv_arena_grow(&a, p, 10, 200); /* not last: copied */
    CHECK(p2 == mem + 192 && memcmp(p2, "abcdefghij", 10) == 0);
    CHECK(ss__conv_arena_grow(&a, p2, 200, 1024) == NULL && a.used == 392); /* full */
    CHECK(ss__conv_arena_grow(&a, NULL, 0, 700) == NULL);
    ss__conv_arena_reset(&a);
    CHECK(ss__conv_arena_grow(&a, NULL, 0, 1024) == mem);
}

int main(void) {
    run r;
    ss_conv_proc_death died;
    char how[128];
    test_arena();
    CHECK(ss__conv_single_threaded());
    /* 1 to 3 processes, inputs fewer and more than the slots: in order,
     * decoded elsewhere, the data through the shared arena */
    for (int np = 1; np <= 3; np++) {
        for (uint64_t n = 2; n <= MAXN; n += 49) {
            CHECK_EQ_U64(run_once(&r, &died, np, n, UINT64_MAX), 0);
            CHECK_EQ_U64(r.nemitted, n);
            CHECK(r.order_ok && r.slot_ok && r.data_ok && r.other_pid && r.decoded_here == 0);
        }
    }
    /* a failed emit stops the run: nothing after it is emitted */
    CHECK_EQ_U64(run_once(&r, &died, 2, MAXN, 10), 1);
    CHECK_EQ_U64(r.nemitted, 11);
    /* a decoder that dies: its input is reported, nothing emitted past the
     * inputs before it, no child left */
    setenv("SS_TEST_DECODER_DIE", "37", 1);
    CHECK_EQ_U64(run_once(&r, &died, 3, MAXN, UINT64_MAX), 2);
    unsetenv("SS_TEST_DECODER_DIE");
    CHECK_EQ_U64(died.input, 37);
    CHECK(WIFSIGNALED(died.status) && WTERMSIG(died.status) == SIGKILL);
    CHECK(r.nemitted <= 37 && r.order_ok);
    ss__conv_proc_describe(how, sizeof how, died.status);
    CHECK(strncmp(how, "killed by signal 9 (", 20) == 0);
    ss__conv_proc_describe(how, sizeof how, 3 << 8);
    CHECK(strcmp(how, "exited with status 3") == 0);
    /* the test hook: as if fork() failed */
    setenv("SS_TEST_NO_FORK", "1", 1);
    CHECK_EQ_U64(run_once(&r, &died, 2, 10, UINT64_MAX), (uint64_t)-1);
    unsetenv("SS_TEST_NO_FORK");
    CHECK_EQ_U64(r.nemitted, 0);
    /* n <= 1: nothing to overlap, the caller runs it */
    CHECK_EQ_U64(run_once(&r, &died, 2, 1, UINT64_MAX), (uint64_t)-1);
    CHECK_EQ_U64(r.nemitted, 0);
    /* a second thread: no fork (it would not be copied, its locks could be) */
    int fds[2];
    pthread_t th;
    CHECK(pipe(fds) == 0);
    CHECK(pthread_create(&th, NULL, wait_pipe, &fds[0]) == 0);
    CHECK(!ss__conv_single_threaded());
    CHECK_EQ_U64(run_once(&r, &died, 2, 10, UINT64_MAX), (uint64_t)-1);
    CHECK_EQ_U64(r.nemitted, 0);
    CHECK(write(fds[1], "x", 1) == 1);
    pthread_join(th, NULL);
    close(fds[0]);
    close(fds[1]);
    printf("test_convert_ordered_proc: ok\n");
    return 0;
}
