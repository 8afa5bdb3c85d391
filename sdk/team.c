/* SPDX-License-Identifier: BSD-2-Clause */
/* team.c - persistent worker threads that spin briefly, then sleep (team.h).
 *
 * Every wait is "while this word still holds this value": spin on it, then
 * sleep on the team's condition variable. A thread that changes a word
 * wakes the sleepers only when there are some: the waiter counts itself in
 * `sleepers` and then reads the word, the changer writes the word and then
 * reads `sleepers` (all sequentially consistent), so at least one of them
 * sees the other's write: either the waiter sees the new value and does not
 * sleep, or the changer sees it counted and broadcasts under the mutex the
 * waiter holds until it sleeps. */
#include "team.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ss__team {
    _Alignas(64) atomic_uint gen; /* bumped by the caller to start a run */
    ss__team_fn fn;               /* the run's work, set before gen is bumped */
    void *arg;
    _Alignas(64) atomic_uint done; /* workers that finished the run */
    _Alignas(64) atomic_uint bar_count;
    atomic_uint bar_gen;
    _Alignas(64) atomic_uint sleepers;
    atomic_int stop;
    atomic_int ids; /* the workers' ids, handed out as they start */
    int n;          /* threads, the caller included */
    int nth;        /* worker threads started */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t *th;
};

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait while *w == old: spin for SS_TEAM_SPIN_NS, then yield the core for
 * SS_TEAM_YIELD_NS (the clock read once every 64 spins or each yield), then
 * sleep. The yielding matters when the thread we wait for shares our core
 * (the scheduler put a woken worker next to its waker, on a busy machine):
 * spinning there only delays it, each wait by the whole spin. */
static void wait_while(ss__team *t, atomic_uint *w, unsigned old) {
    if (atomic_load_explicit(w, memory_order_acquire) != old) return;
    uint64_t start = now_ns(), ns = 0;
    for (unsigned i = 1; atomic_load_explicit(w, memory_order_acquire) == old; i++) {
        if (ns < SS_TEAM_SPIN_NS) {
            relax();
            if (i % 64 == 0) ns = now_ns() - start;
        } else if (ns < SS_TEAM_SPIN_NS + SS_TEAM_YIELD_NS) {
            sched_yield();
            ns = now_ns() - start;
        } else {
            pthread_mutex_lock(&t->mu);
            atomic_fetch_add(&t->sleepers, 1);
            while (atomic_load(w) == old) pthread_cond_wait(&t->cv, &t->mu);
            atomic_fetch_sub(&t->sleepers, 1);
            pthread_mutex_unlock(&t->mu);
            return;
        }
    }
}

/* After a sequentially consistent change of a word others may wait on. */
static void wake(ss__team *t) {
    if (atomic_load(&t->sleepers) == 0) return;
    pthread_mutex_lock(&t->mu);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static void *worker(void *p) {
    ss__team *t = p;
    int id = atomic_fetch_add(&t->ids, 1) + 1;
    unsigned seen = 0; /* gen at the start; a run begun before this thread ran is still seen */
    for (;;) {
        wait_while(t, &t->gen, seen);
        seen = atomic_load_explicit(&t->gen, memory_order_acquire);
        if (atomic_load_explicit(&t->stop, memory_order_relaxed)) return NULL;
        t->fn(t->arg, id);
        atomic_fetch_add(&t->done, 1);
        wake(t);
    }
}

int ss__team_size(const ss__team *t) {
    return t->n;
}

void ss__team_run(ss__team *t, ss__team_fn fn, void *arg) {
    t->fn = fn;
    t->arg = arg;
    atomic_store_explicit(&t->done, 0, memory_order_relaxed); /* published by the gen bump */
    atomic_fetch_add(&t->gen, 1);
    wake(t);
    fn(arg, 0);
    unsigned d;
    while ((d = atomic_load_explicit(&t->done, memory_order_acquire)) != (unsigned)(t->n - 1))
        wait_while(t, &t->done, d);
}

void ss__team_barrier(ss__team *t) {
    /* read before arriving: the last to arrive bumps it after every arrival */
    unsigned g = atomic_load_explicit(&t->bar_gen, memory_order_acquire);
    if (atomic_fetch_add(&t->bar_count, 1) + 1 == (unsigned)t->n) {
        atomic_store_explicit(&t->bar_count, 0, memory_order_relaxed);
        atomic_fetch_add(&t->bar_gen, 1);
        wake(t);
        return;
    }
    wait_while(t, &t->bar_gen, g);
}

void ss__team_stop(ss__team *t) {
    if (!t) return;
    atomic_store(&t->stop, 1);
    atomic_fetch_add(&t->gen, 1);
    pthread_mutex_lock(&t->mu); /* unconditionally: a worker may be on its way to sleep */
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    for (int k = 0; k < t->nth; k++) pthread_join(t->th[k], NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->th);
    free(t);
}

int ss__team_start(ss__team **out, int threads) {
    *out = NULL;
    size_t size = (sizeof(ss__team) + 63) / 64 * 64;
    ss__team *t = threads >= 2 ? aligned_alloc(64, size) : NULL;
    if (!t) return -1;
    memset(t, 0, size);
    t->n = threads;
    atomic_init(&t->gen, 0);
    atomic_init(&t->done, 0);
    atomic_init(&t->bar_count, 0);
    atomic_init(&t->bar_gen, 0);
    atomic_init(&t->sleepers, 0);
    atomic_init(&t->stop, 0);
    atomic_init(&t->ids, 0);
    t->th = malloc((size_t)(threads - 1) * sizeof *t->th);
    int mu = t->th ? pthread_mutex_init(&t->mu, NULL) : -1;
    int cv = mu == 0 ? pthread_cond_init(&t->cv, NULL) : -1;
    if (cv) {
        if (mu == 0) pthread_mutex_destroy(&t->mu);
        free(t->th);
        free(t);
        return -1;
    }
    for (; t->nth < threads - 1; t->nth++)
        if (pthread_create(&t->th[t->nth], NULL, worker, t)) break;
    if (t->nth < threads - 1) {
        ss__team_stop(t);
        return -1;
    }
    *out = t;
    return 0;
}
