/* SPDX-License-Identifier: BSD-2-Clause */
/* team.h - a small team of persistent worker threads for work of a few
 * microseconds; not installed.
 *
 * A collation of a few hundred KiB takes 3-10 us. Starting an OpenMP team
 * for it costs about 0.9 us, each OpenMP barrier about 0.4 us more (libgomp
 * makes a futex system call at every barrier, waiting or not), which ate
 * most of what a second thread saved. Here a thread that waits (a worker
 * for the next run, a thread at a barrier) spins for SS_TEAM_SPIN_NS, then
 * yields its core for SS_TEAM_YIELD_NS, then sleeps on a condition
 * variable: back-to-back runs hand over through one cache line (0.09 us for
 * a start and a join), and a thread that changes what others wait for makes
 * no system call unless one of them sleeps. Yielding after a short spin
 * matters on a busy machine, where the scheduler may put a woken worker on
 * its waker's core: a thread spinning there only delays the one it waits
 * for (a 50 us spin at each of a batch's four waits made a 5 us batch take
 * 210 us). An idle team sleeps and costs nothing.
 *
 * Only C11 atomics and POSIX threads; the spin hint is a pause instruction
 * where there is one. */
#ifndef SS_TEAM_H
#define SS_TEAM_H

/* How long a waiting thread spins, then yields, before it sleeps (ns). */
#define SS_TEAM_SPIN_NS 5000
#define SS_TEAM_YIELD_NS 50000

typedef struct ss__team ss__team;

/* The work of a run: called once per thread with its id (0 = the caller,
 * 1 .. threads - 1 the workers). */
typedef void (*ss__team_fn)(void *arg, int id);

/* Start a team of `threads` >= 2 threads: the caller of ss__team_run() and
 * threads - 1 workers. Returns 0, or nonzero when a thread or memory could
 * not be had (nothing to free then; *out is NULL). */
int ss__team_start(ss__team **out, int threads);

/* Stop and join the workers and free the team. Accepts NULL. */
void ss__team_stop(ss__team *t);

/* Threads of the team, the caller included. */
int ss__team_size(const ss__team *t);

/* Run fn(arg, id) on every thread of the team, the caller as id 0; return
 * when every thread has returned from it (its writes are then visible to the
 * caller). One run at a time: a team belongs to one caller at a time. */
void ss__team_run(ss__team *t, ss__team_fn fn, void *arg);

/* Inside a run: wait until every thread of the team has reached this
 * barrier; writes before it are visible to every thread after it. Every
 * thread must call it the same number of times in a run. */
void ss__team_barrier(ss__team *t);

#endif /* SS_TEAM_H */
