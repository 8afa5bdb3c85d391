/* SPDX-License-Identifier: BSD-2-Clause */
/* ordered_proc.c - decode inputs in forked processes, emit them in input
 * order in the calling one (ordered.h: ss__conv_proc_ordered).
 *
 * The calling process hands input i to an idle child over that child's
 * socket (8 bytes: i) once the slot of input i is free, as the threads of
 * ordered.c take it; the child decodes into the shared slot and answers
 * with the same 8 bytes. A child whose socket reads EOF has died: the
 * parent knows the input it held, kills and reaps the others, and returns.
 * The parent never waits on anything but those sockets and waitpid(), so a
 * child's death cannot hang it. */
#include "ordered.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
#include <sys/single_threaded.h>
#endif
#include <unistd.h>

#define ARENA_ALIGN 64

typedef struct proc_child {
    pid_t pid;
    int fd;       /* the parent's end of its socket */
    int64_t busy; /* the input it decodes, or -1 */
} proc_child;

typedef struct proc_run {
    void *ctx;
    char *slots;
    size_t slot_size;
    uint64_t nslots, n;
    ss_conv_decode_fn decode;
    proc_child *ch;
    int nch;
    unsigned char *ready; /* per slot: decoded, not yet emitted */
    struct pollfd *pfd;   /* per child */
    uint64_t die_at;      /* SS_TEST_DECODER_DIE, or UINT64_MAX */
} proc_run;

/* ------------------------------------------------------------- memory */

void *ss__conv_shared_alloc(size_t bytes) {
    if (bytes == 0) return NULL;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void ss__conv_shared_free(void *p, size_t bytes) {
    if (p) munmap(p, bytes);
}

void ss__conv_arena_reset(ss_conv_arena *a) {
    a->used = 0;
    a->last = NULL;
}

void *ss__conv_arena_grow(ss_conv_arena *a, void *p, size_t len, size_t need) {
    if (p && p == a->last) { /* the last block: grow in place */
        size_t at = (size_t)((char *)p - a->base);
        if (need > a->cap - at) return NULL;
        if (at + need > a->used) a->used = at + need;
        return p;
    }
    size_t at = (a->used + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (at > a->cap || need > a->cap - at) return NULL;
    if (p && len) memmove(a->base + at, p, len < need ? len : need);
    a->used = at + need;
    a->last = a->base + at;
    return a->last;
}

/* ------------------------------------------------------------ plumbing */

int ss__conv_single_threaded(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    /* false for good once a thread was started, even one that has ended:
     * glibc's stdio then locks every stream for good too, in a child as well */
    if (!__libc_single_threaded) return 0;
#endif
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    if (!d) return 0;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n == 1;
}

/* 8 bytes over a socket: 1, or 0 at EOF / on an error (the peer is gone). */
static int recv_u64(int fd, uint64_t *v) {
    size_t got = 0;
    while (got < sizeof *v) {
        ssize_t k = recv(fd, (char *)v + got, sizeof *v - got, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return 0;
        got += (size_t)k;
    }
    return 1;
}

/* MSG_NOSIGNAL: a dead peer is an EPIPE to report, not a SIGPIPE. */
static int send_u64(int fd, uint64_t v) {
    size_t put = 0;
    while (put < sizeof v) {
        ssize_t k = send(fd, (const char *)&v + put, sizeof v - put, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return 0;
        put += (size_t)k;
    }
    return 1;
}

static void *slot_of(const proc_run *r, uint64_t i) {
    return r->slots + (size_t)(i % r->nslots) * r->slot_size;
}

void ss__conv_proc_describe(char *buf, size_t cap, int status) {
    if (status != -1 && WIFSIGNALED(status))
        snprintf(buf, cap, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else if (status != -1 && WIFEXITED(status))
        snprintf(buf, cap, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(buf, cap, "ended");
}

/* ------------------------------------------------------------ children */

/* A child: decode what it is handed until its socket closes. Never returns:
 * _exit() leaves the parent's atexit handlers, stdio buffers and LMDB
 * environment alone. */
static void child_main(const proc_run *r, int fd, pid_t parent) {
    uint64_t i;
    /* die with the parent, even if it is killed before it can kill us */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    while (recv_u64(fd, &i) && i < r->n) {
        if (i == r->die_at) raise(SIGKILL); /* test hook (ordered.h) */
        r->decode(r->ctx, slot_of(r, i), i);
        if (!send_u64(fd, i)) break;
    }
    _exit(0);
}

/* Fork up to r->nch children; the number started (0: none). */
static int start_children(proc_run *r) {
    pid_t parent = getpid();
    int started = 0;
    for (; started < r->nch; started++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) break;
        fflush(NULL); /* nothing buffered twice, should a child ever flush */
        pid_t pid = fork();
        if (pid < 0) {
            close(sv[0]);
            close(sv[1]);
            break;
        }
        if (pid == 0) {
            for (int k = 0; k < started; k++) close(r->ch[k].fd);
            close(sv[0]);
            child_main(r, sv[1], parent);
        }
        close(sv[1]);
        r->ch[started] = (proc_child){pid, sv[0], -1};
    }
    return started;
}

/* Close every socket (idle children then exit), kill the children still
 * working if `kill_all`, and reap them all. */
static void stop_children(proc_run *r, int kill_all) {
    for (int k = 0; k < r->nch; k++) {
        if (r->ch[k].fd >= 0) close(r->ch[k].fd);
        r->ch[k].fd = -1;
        if (kill_all && r->ch[k].pid > 0) kill(r->ch[k].pid, SIGKILL);
    }
    for (int k = 0; k < r->nch; k++) {
        if (r->ch[k].pid <= 0) continue;
        while (waitpid(r->ch[k].pid, NULL, 0) < 0 && errno == EINTR) continue;
        r->ch[k].pid = 0;
    }
}

/* Child k is gone (its socket failed): reap it into `died`. */
static void child_died(proc_run *r, int k, uint64_t input, ss_conv_proc_death *died) {
    int status = -1;
    /* its socket failed, so it has exited (SIGKILL leaves a zombie's status
     * alone) or broke the protocol: never wait on a live child */
    kill(r->ch[k].pid, SIGKILL);
    while (waitpid(r->ch[k].pid, &status, 0) < 0 && errno == EINTR) continue;
    r->ch[k].pid = 0;
    died->input = input;
    died->status = status;
}

/* ------------------------------------------------------------- parent */

/* Hand out inputs [*next, emitted + nslots) to idle children. 0, or 2 when
 * a child was found dead. */
static int hand_out(proc_run *r, uint64_t *next, uint64_t emitted, ss_conv_proc_death *died) {
    for (int k = 0; k < r->nch && *next < r->n && *next < emitted + r->nslots; k++) {
        if (r->ch[k].busy >= 0) continue;
        if (!send_u64(r->ch[k].fd, *next)) {
            child_died(r, k, *next, died);
            return 2;
        }
        r->ch[k].busy = (int64_t)(*next)++;
    }
    return 0;
}

/* Wait until at least one busy child answers; mark its slot ready. 0, or 2
 * when a child died. */
static int wait_decoded(proc_run *r, ss_conv_proc_death *died) {
    struct pollfd *pfd = r->pfd;
    int np = 0;
    for (int k = 0; k < r->nch; k++)
        if (r->ch[k].busy >= 0) pfd[np++] = (struct pollfd){r->ch[k].fd, POLLIN, 0};
    if (np == 0) return 0; /* cannot happen: the input to emit is out */
    while (poll(pfd, (nfds_t)np, -1) < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == ENOMEM) continue;
        for (int k = 0; k < r->nch; k++) /* cannot wait for them: give up */
            if (r->ch[k].busy >= 0) return child_died(r, k, (uint64_t)r->ch[k].busy, died), 2;
    }
    for (int k = 0, p = 0; k < r->nch; k++) {
        if (r->ch[k].busy < 0) continue;
        if (pfd[p++].revents == 0) continue;
        uint64_t i;
        if (!recv_u64(r->ch[k].fd, &i) || i != (uint64_t)r->ch[k].busy) {
            child_died(r, k, (uint64_t)r->ch[k].busy, died);
            return 2;
        }
        r->ready[i % r->nslots] = 1;
        r->ch[k].busy = -1;
    }
    return 0;
}

/* Emit inputs in order as they come back; 0, 1 (an emit stopped), 2 (a
 * child died). */
static int parent_loop(proc_run *r, ss_conv_emit_fn emit, ss_conv_proc_death *died) {
    uint64_t next = 0, emitted = 0;
    int rc = 0;
    while (rc == 0 && emitted < r->n) {
        rc = hand_out(r, &next, emitted, died);
        if (rc) break;
        if (!r->ready[emitted % r->nslots]) {
            rc = wait_decoded(r, died);
            continue;
        }
        r->ready[emitted % r->nslots] = 0;
        if (emit(r->ctx, slot_of(r, emitted), emitted)) rc = 1;
        emitted++;
    }
    return rc;
}

int ss__conv_proc_ordered(ss_conv_proc_death *died, void *ctx, void *slots, size_t slot_size,
                          int nprocs, uint64_t n, ss_conv_decode_fn decode, ss_conv_emit_fn emit) {
    if (nprocs < 1) nprocs = 1;
    proc_run r = {.ctx = ctx,
                  .slots = slots,
                  .slot_size = slot_size,
                  .nslots = (uint64_t)ss__conv_ordered_slots(nprocs),
                  .n = n,
                  .decode = decode,
                  .nch = nprocs,
                  .die_at = UINT64_MAX};
    const char *die = getenv("SS_TEST_DECODER_DIE");
    if (die && *die) r.die_at = strtoull(die, NULL, 10);
    died->input = 0;
    died->status = -1;
    const char *no_fork = getenv("SS_TEST_NO_FORK");
    if (n <= 1 || (no_fork && *no_fork) || !ss__conv_single_threaded()) return -1;
    r.ready = calloc(r.nslots, 1);
    r.ch = calloc((size_t)nprocs, sizeof *r.ch);
    r.pfd = calloc((size_t)nprocs, sizeof *r.pfd);
    int rc = -1;
    if (r.ready && r.ch && r.pfd && (r.nch = start_children(&r)) > 0) {
        rc = parent_loop(&r, emit, died);
        stop_children(&r, rc != 0);
    }
    free(r.ready);
    free(r.ch);
    free(r.pfd);
    return rc;
}
