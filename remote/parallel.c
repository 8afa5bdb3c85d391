/* SPDX-License-Identifier: BSD-2-Clause */
/* parallel.c - jobs on a few threads (transfers at once). */
#include "remote_impl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct par {
    int (*job)(void *, size_t);
    void *ctx;
    size_t n;
    atomic_size_t next;
    atomic_int failed;
    pthread_mutex_t lock;
    int rc;
    char msg[1024];
} par;

static void *par_run(void *vp) {
    par *p = vp;
    for (;;) {
        if (atomic_load(&p->failed)) break;
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n) break;
        int rc = p->job(p->ctx, i);
        if (rc) {
            pthread_mutex_lock(&p->lock);
            if (!p->rc) p->rc = rc, snprintf(p->msg, sizeof p->msg, "%s", ss__rmessage());
            pthread_mutex_unlock(&p->lock);
            atomic_store(&p->failed, 1);
        }
    }
    return NULL;
}

int ss__parallel(unsigned threads, size_t n, int (*job)(void *ctx, size_t i), void *ctx) {
    par p = {.job = job, .ctx = ctx, .n = n};
    pthread_mutex_init(&p.lock, NULL);
    if (threads > n) threads = (unsigned)n;
    if (threads == 0) threads = 1;
    pthread_t *t = calloc(threads, sizeof *t);
    unsigned started = 0;
    for (unsigned k = 1; t && k < threads; k++, started++)
        if (pthread_create(&t[k], NULL, par_run, &p) != 0) break;
    par_run(&p); /* the calling thread works too */
    for (unsigned k = 1; k <= started; k++) pthread_join(t[k], NULL);
    free(t);
    pthread_mutex_destroy(&p.lock);
    if (p.rc) return ss__rfail(p.rc, "%s", p.msg);
    return 0;
}
