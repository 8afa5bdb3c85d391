/* SPDX-License-Identifier: BSD-2-Clause */
/* team.h - a small team of persistent worker threads for work of a few
 * microseconds; not installed.
 *
 * A collation of a few hundred KiB takes 3-10 us. Starting an OpenMP team
 * for it costs about 0.9 us, each OpenMP barrier about 0.4 us more (libgomp
 * makes a futex system call at every barrier, waiting or not), which ate
 * most of what a second thread saved. Here a thread that waits (a worker
 * for the next run, the caller for a piece a worker holds) spins for up to
 * SS_TEAM_SPIN_NS, then sleeps on a condition variable: back-to-back runs
 * hand over through one cache line (0.09 us for a start and a join), and a
 * thread that changes what others wait for makes no system call unless one
 * of them sleeps. An idle team sleeps and costs nothing.
 *
 * On a machine whose cores are busy with other programs a worker may run
 * late or share its caller's core. So nobody waits for a worker that has
 * not started: a run's work is claimed in pieces, a late worker leaves its
 * share to the others and skips the run (with OpenMP's barriers a 5 us
 * batch took 100-800 us on average on this 2-core machine at load 5-8; with
 * claiming it takes about what one thread takes), and a thread that waits
 * while another of the team was last seen on its core yields the core
 * instead of spinning (spinning there only delays the one it waits for: a
 * 50 us spin at each of a batch's waits made 5 us batches take 210 us).
 *
 * Only C11 atomics and POSIX threads; the spin hint is a pause instruction
 * where there is one. */
#ifndef SS_TEAM_H
#define SS_TEAM_H

#include <stdatomic.h>

/* How long a waiting thread spins (or yields) before it sleeps (ns). */
#define SS_TEAM_SPIN_NS 50000

typedef struct ss__team ss__team;

/* The work of a run: called with the thread's id (0 = the caller, 1 ..
 * threads - 1 the workers). */
typedef void (*ss__team_fn)(void *arg, int id);

/* Start a team of `threads` >= 2 threads: the caller of ss__team_run() and
 * threads - 1 workers. Returns 0, or nonzero when a thread or memory could
 * not be had (nothing to free then; *out is NULL). */
int ss__team_start(ss__team **out, int threads);

/* Stop and join the workers and free the team. Accepts NULL. */
void ss__team_stop(ss__team *t);

/* Threads of the team, the caller included. */
int ss__team_size(const ss__team *t);

/* Run fn(arg, 0) on the caller and fn(arg, id) on each worker that joins
 * the run before the caller, back from fn, closes it; return when every
 * worker that joined has returned from fn (its writes are then visible to
 * the caller). A worker that is late (asleep, or without a core on a busy
 * machine) does not join, so fn must share its work by claiming pieces of it
 * (a counter per share), never wait for a given thread, and leave nothing
 * for the caller's return undone. One run at a time. */
void ss__team_run(ss__team *t, ss__team_fn fn, void *arg);

/* Inside fn on thread id: wait while *w == old (spinning, or yielding,
 * then sleeping, as the workers do between runs). */
void ss__team_wait(ss__team *t, int id, atomic_uint *w, unsigned old);

/* After a sequentially consistent change of a word that threads may be
 * waiting on with ss__team_wait(): wake them if they sleep (a load when
 * none does). */
void ss__team_notify(ss__team *t);

#endif /* SS_TEAM_H */
