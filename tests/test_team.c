/* SPDX-License-Identifier: BSD-2-Clause */
/* test_team.c - the collator's worker team (sdk/team.h): every thread runs
 * every run once with its own id, a run returns only when all have
 * finished, barriers order the writes around them; back to back (the
 * workers spinning) and with pauses longer than the spin (the workers
 * asleep, woken by the next run), at 2, 3 and 4 threads. */
#include "team.h"
#include "testutil.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

enum { MAXT = 4, PHASES = 3 };

typedef struct job {
    ss__team *t;
    int nth;
    unsigned run;                /* the run's number */
    unsigned seen[MAXT];         /* each thread writes its run number here */
    unsigned cell[PHASES][MAXT]; /* phase p: thread i writes cell[p][i] */
    atomic_int bad;              /* a thread saw a peer's write missing */
} job;

/* Each thread writes its cell of a phase, passes a barrier, then checks
 * every peer's cell of that phase. */
static void job_fn(void *arg, int id) {
    job *j = arg;
    if (id < 0 || id >= j->nth) {
        atomic_store(&j->bad, 1);
        return;
    }
    j->seen[id] = j->run;
    for (int p = 0; p < PHASES; p++) {
        j->cell[p][id] = j->run * 16 + (unsigned)p;
        ss__team_barrier(j->t);
        for (int k = 0; k < j->nth; k++)
            if (j->cell[p][k] != j->run * 16 + (unsigned)p) atomic_store(&j->bad, 1);
    }
}

static void pause_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void test_runs(int nth) {
    job j;
    memset(&j, 0, sizeof j);
    atomic_init(&j.bad, 0);
    j.nth = nth;
    CHECK(ss__team_start(&j.t, nth) == 0);
    CHECK(ss__team_size(j.t) == nth);
    for (unsigned r = 1; r <= 1000; r++) {
        j.run = r;
        ss__team_run(j.t, job_fn, &j);
        /* every thread ran this run, and had finished when run() returned */
        for (int k = 0; k < nth; k++) CHECK_EQ_U64(j.seen[k], r);
        CHECK(atomic_load(&j.bad) == 0);
        if (r % 250 == 0)
            pause_us(3 * (SS_TEAM_SPIN_NS + SS_TEAM_YIELD_NS) / 1000); /* let the workers sleep */
    }
    ss__team_stop(j.t);
}

/* A team stopped right after it started (workers perhaps not yet waiting)
 * and one stopped while its workers sleep. */
static void test_stop(void) {
    ss__team *t;
    CHECK(ss__team_start(&t, 3) == 0);
    ss__team_stop(t);
    CHECK(ss__team_start(&t, 2) == 0);
    pause_us(3 * (SS_TEAM_SPIN_NS + SS_TEAM_YIELD_NS) / 1000);
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
