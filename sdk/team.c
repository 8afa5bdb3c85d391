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

/* A worker's place in a run: OPEN (set by the caller before it starts the
 * run), TAKEN by the worker, then DONE; or CLOSED by the caller when the
 * worker had not taken it by the time the caller finished. */
enum { SEAT_OPEN, SEAT_TAKEN, SEAT_DONE, SEAT_CLOSED };
typedef struct seat {
    _Alignas(64) atomic_uint state;
} seat;

typedef struct cpu_slot {
    _Alignas(64) atomic_int cpu;
} cpu_slot;

struct ss__team {
    _Alignas(64) atomic_uint gen; /* bumped by the caller to start a run */
    ss__team_fn fn;               /* the run's work, set before gen is bumped */
    void *arg;
    _Alignas(64) atomic_uint sleepers;
    atomic_int stop;
    atomic_int ids; /* the workers' ids, handed out as they start */
    int n;          /* threads, the caller included */
    int nth;        /* worker threads started */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t *th;
    seat *seats;    /* one per worker */
    cpu_slot *cpus; /* per thread: the CPU it was last seen on, waiting */
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

/* The CPU the calling thread runs on, or -1 where that is not known. */
static int this_cpu(void) {
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
}

/* Another thread of the team last seen on CPU `cpu`. */
static int shares_cpu(ss__team *t, int id, int cpu) {
    for (int k = 0; cpu >= 0 && k < t->n; k++)
        if (k != id && atomic_load_explicit(&t->cpus[k].cpu, memory_order_relaxed) == cpu) return 1;
    return 0;
}

/* Thread id waits while *w == old: spins for SS_TEAM_SPIN_NS, then sleeps.
 * While another thread of the team was last seen on its CPU it yields
 * instead of spinning: the scheduler may put a woken worker on its waker's
 * core (on a busy machine), and a thread spinning there only delays the
 * one it waits for (a 50 us spin at each wait made a 5 us batch take
 * 210 us). The clock and the CPU are read once every 64 spins. */
static void wait_while(ss__team *t, int id, atomic_uint *w, unsigned old) {
    if (atomic_load_explicit(w, memory_order_acquire) != old) return;
    int cpu = this_cpu();
    atomic_store_explicit(&t->cpus[id].cpu, cpu, memory_order_relaxed);
    uint64_t start = now_ns();
    for (unsigned i = 1; atomic_load_explicit(w, memory_order_acquire) == old; i++) {
        int yield = shares_cpu(t, id, cpu);
        if (yield)
            sched_yield();
        else
            relax();
        if (!yield && i % 64 != 0) continue;
        if (now_ns() - start < SS_TEAM_SPIN_NS) {
            cpu = this_cpu();
            atomic_store_explicit(&t->cpus[id].cpu, cpu, memory_order_relaxed);
            continue;
        }
        pthread_mutex_lock(&t->mu);
        atomic_fetch_add(&t->sleepers, 1);
        while (atomic_load(w) == old) pthread_cond_wait(&t->cv, &t->mu);
        atomic_fetch_sub(&t->sleepers, 1);
        pthread_mutex_unlock(&t->mu);
        return;
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
    atomic_uint *state = &t->seats[id - 1].state;
    unsigned seen = 0; /* gen at the start; a run begun before this thread ran is still seen */
    for (;;) {
        wait_while(t, id, &t->gen, seen);
        seen = atomic_load_explicit(&t->gen, memory_order_acquire);
        if (atomic_load_explicit(&t->stop, memory_order_relaxed)) return NULL;
        /* the seat of the run now open, perhaps a later one than gen said:
         * fn and arg were set before it was opened */
        unsigned open = SEAT_OPEN;
        if (!atomic_compare_exchange_strong(state, &open, SEAT_TAKEN)) continue;
        t->fn(t->arg, id);
        atomic_store(state, SEAT_DONE);
        wake(t);
    }
}

int ss__team_size(const ss__team *t) {
    return t->n;
}

void ss__team_wait(ss__team *t, int id, atomic_uint *w, unsigned old) {
    wait_while(t, id, w, old);
}

void ss__team_notify(ss__team *t) {
    wake(t);
}

void ss__team_run(ss__team *t, ss__team_fn fn, void *arg) {
    t->fn = fn;
    t->arg = arg;
    atomic_store_explicit(&t->cpus[0].cpu, this_cpu(), memory_order_relaxed);
    for (int k = 0; k < t->n - 1; k++) atomic_store(&t->seats[k].state, SEAT_OPEN);
    atomic_fetch_add(&t->gen, 1);
    wake(t);
    fn(arg, 0);
    for (int k = 0; k < t->n - 1; k++) {
        atomic_uint *state = &t->seats[k].state;
        unsigned open = SEAT_OPEN;
        if (atomic_compare_exchange_strong(state, &open, SEAT_CLOSED)) continue;
        while (atomic_load(state) == SEAT_TAKEN) wait_while(t, 0, state, SEAT_TAKEN);
    }
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
    free(t->seats);
    free(t->cpus);
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
    atomic_init(&t->sleepers, 0);
    atomic_init(&t->stop, 0);
    atomic_init(&t->ids, 0);
    t->th = malloc((size_t)(threads - 1) * sizeof *t->th);
    t->seats = aligned_alloc(64, (size_t)(threads - 1) * sizeof *t->seats);
    t->cpus = aligned_alloc(64, (size_t)threads * sizeof *t->cpus);
    for (int k = 0; t->cpus && k < threads; k++) atomic_init(&t->cpus[k].cpu, -1);
    for (int k = 0; t->seats && k < threads - 1; k++) atomic_init(&t->seats[k].state, SEAT_CLOSED);
    int mu = t->th && t->seats && t->cpus ? pthread_mutex_init(&t->mu, NULL) : -1;
    int cv = mu == 0 ? pthread_cond_init(&t->cv, NULL) : -1;
    if (cv) {
        if (mu == 0) pthread_mutex_destroy(&t->mu);
        free(t->th);
        free(t->seats);
        free(t->cpus);
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
