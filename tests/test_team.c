/* SPDX-License-Identifier: BSD-2-Clause */
/* test_team.c - the collator's worker team (sdk/team.h): a run calls its
 * function on the caller and at most once on each worker, with the right
 * ids; work shared by claiming pieces is done exactly once; a run returns
 * only when every worker that joined it has finished; ss__team_wait() and
 * ss__team_notify() hand over between threads. Back to back (the workers
 * spinning), with pauses longer than their spin (asleep), and with workers
 * that stall (a late worker must not hold the caller up, a joined one must
 * be waited for), at 2, 3 and 4 threads. */
#include "team.h"
#include "testutil.h"

#include <string.h>
#include <time.h>

enum { MAXT = 4, PIECES = 64 };

typedef struct job {
    ss__team *t;
    int nth;
    unsigned run;         /* the run's number */
    unsigned calls[MAXT]; /* fn calls per thread id in this run */
    unsigned finished[MAXT];
    atomic_uint next;       /* pieces claimed */
    atomic_uint done;       /* pieces finished */
    atomic_uint flag;       /* thread 0 sets it once every piece is done */
    unsigned piece[PIECES]; /* the run's number, written by whoever ran the piece */
    unsigned hits[PIECES];
    atomic_int bad;
} job;

static void pause_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Work of about `us` microseconds (long enough for the workers to join). */
static void busy_us(double us) {
    double t0 = now_us();
    while (now_us() - t0 < us) {
    }
}

/* Claim pieces until none is left; thread 0 then waits for all of them and
 * raises the flag, which the workers wait for. A worker sometimes stalls
 * before it starts (then it is likely to miss the run) or while it holds a
 * piece (then the caller must wait for it). */
static void job_fn(void *arg, int id) {
    job *j = arg;
    if (id < 0 || id >= j->nth) {
        atomic_store(&j->bad, 1);
        return;
    }
    j->calls[id]++;
    if (id && j->run % 97 == 0) pause_us(200);
    unsigned p;
    while ((p = atomic_fetch_add(&j->next, 1)) < PIECES) {
        if (id && j->run % 89 == 0 && p % 16 == 0) pause_us(100);
        busy_us(0.5);
        j->piece[p] = j->run;
        j->hits[p]++;
        atomic_fetch_add(&j->done, 1);
        ss__team_notify(j->t);
    }
    if (id == 0) {
        unsigned d;
        while ((d = atomic_load(&j->done)) != PIECES) ss__team_wait(j->t, 0, &j->done, d);
        atomic_store(&j->flag, 1);
        ss__team_notify(j->t);
    }
    while (atomic_load(&j->flag) == 0) ss__team_wait(j->t, id, &j->flag, 0);
    j->finished[id]++;
}

static void test_runs(int nth) {
    static job j;
    memset(&j, 0, sizeof j);
    j.nth = nth;
    CHECK(ss__team_start(&j.t, nth) == 0);
    CHECK(ss__team_size(j.t) == nth);
    unsigned joined = 0;
    for (unsigned r = 1; r <= 1000; r++) {
        j.run = r;
        memset(j.calls, 0, sizeof j.calls);
        memset(j.finished, 0, sizeof j.finished);
        memset(j.hits, 0, sizeof j.hits);
        atomic_store(&j.next, 0);
        atomic_store(&j.done, 0);
        atomic_store(&j.flag, 0);
        ss__team_run(j.t, job_fn, &j);
        CHECK(atomic_load(&j.bad) == 0);
        CHECK_EQ_U64(j.calls[0], 1);
        for (int k = 0; k < nth; k++) {
            CHECK(j.calls[k] <= 1);
            CHECK_EQ_U64(j.finished[k], j.calls[k]); /* a worker that joined has finished */
            joined += k > 0 && j.calls[k];
        }
        for (int p = 0; p < PIECES; p++) {
            CHECK_EQ_U64(j.hits[p], 1);
            CHECK_EQ_U64(j.piece[p], r);
        }
        if (r % 250 == 0) pause_us(3 * SS_TEAM_SPIN_NS / 1000);
    }
    printf("%d threads: workers joined %u of %u runs\n", nth, joined, 1000u * (unsigned)(nth - 1));
    ss__team_stop(j.t);
}

/* A team stopped right after it started (workers perhaps not yet waiting)
 * and one stopped while its workers sleep. */
static void test_stop(void) {
    ss__team *t;
    CHECK(ss__team_start(&t, 3) == 0);
    ss__team_stop(t);
    CHECK(ss__team_start(&t, 2) == 0);
    pause_us(3 * SS_TEAM_SPIN_NS / 1000);
    ss__team_stop(t);
    ss__team_stop(NULL);
    CHECK(ss__team_start(&t, 1) != 0 && t == NULL); /* a team has two threads at least */
}

int main(void) {
    for (int nth = 2; nth <= MAXT; nth++) test_runs(nth);
    test_stop();
    printf("test_team: ok\n");
    return 0;
}
