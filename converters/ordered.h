/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ordered.h - decode inputs on several threads, emit them in input order.
 *
 * The converters of whole recordings (edf, biosig, audio) decode file i into
 * a slot of their own type and then append it to the store. Appends must
 * come in input order, so that any thread count writes the same store; they
 * run on the calling thread while the decoding threads go on with the next
 * inputs, so no decoder waits for an append (or a commit) to finish.
 */
#ifndef SS_ORDERED_H
#define SS_ORDERED_H

#include <stddef.h>
#include <stdint.h>

/** Decode input `i` into `slot` (buffers reused from an earlier input).
 *  Runs on several threads at once: it may touch only `slot` and what is
 *  read-only during the run; a bad input is recorded in the slot for the
 *  emit to report. */
typedef void (*ss_conv_decode_fn)(void *ctx, void *slot, uint64_t i);
/** Append input `i` from the `slot` its decode filled; called on the calling
 *  thread only, in order of `i`. Nonzero stops the run. */
typedef int (*ss_conv_emit_fn)(void *ctx, void *slot, uint64_t i);

/** The number of slots ss__conv_parallel_ordered() needs for `nthreads`
 *  decoding threads (< 1 means 1): one more than the threads, so that every
 *  decoder has a slot to fill while the input before is being emitted. Each
 *  slot holds a whole decoded input, so this is also the most inputs held
 *  in memory at once. */
int ss__conv_ordered_slots(int nthreads);

/** Decode inputs [0, n) on `nthreads` threads (< 1 means 1) and emit
 *  each on the calling thread in input order, so that any thread count
 *  writes the same store. Input i is decoded into slot i mod
 *  ss__conv_ordered_slots(nthreads), at `slots` + that * `slot_size`; it is
 *  handed to a decoder only after input i - that number has been emitted,
 *  so the slot is free. After an emit returns nonzero no input is handed out
 *  any more (those being decoded finish) and none is emitted.
 *  The decoders are POSIX threads of this call (not OpenMP's): callbacks
 *  that serialize a library's calls use a mutex of their own. With n <= 1
 *  (nothing to overlap), or when no thread can be started or its few bytes
 *  of bookkeeping allocated, everything runs on the calling thread in slot
 *  0.
 *  @param ctx passed to both callbacks; `slots` holds at least
 *  ss__conv_ordered_slots(nthreads) slots (the caller's, not freed here).
 *  @return 0, or 1 if an emit returned nonzero. */
int ss__conv_parallel_ordered(void *ctx, void *slots, size_t slot_size, int nthreads, uint64_t n,
                              ss_conv_decode_fn decode, ss_conv_emit_fn emit);

/** Decode and emit inputs [0, n) one after the other on the calling thread,
 *  all in `slot`; no thread is started. For decoders that are slower in a
 *  process with several threads (EDFlib reads with getc(), which locks the
 *  stream once there is a second thread).
 *  @return 0, or 1 if an emit returned nonzero (no input after it is
 *  decoded). */
int ss__conv_serial_ordered(void *ctx, void *slot, uint64_t n, ss_conv_decode_fn decode,
                            ss_conv_emit_fn emit);

/* ------------------------------------------------ decoder processes */

/* EDFlib reads every sample byte with getc(), which glibc locks only once a
 * process has had a second thread: decoding threads pay that lock on every
 * byte. Decoder processes forked while the process is still single-threaded
 * never do. Their slots live in memory shared with them, mapped before the
 * fork, so every pointer into it means the same in all the processes and a
 * decoded input reaches the emitter without a copy. */

/** Memory to share with the decoder processes of ss__conv_proc_ordered():
 *  `bytes` (> 0) zero-filled, at the same address in every process forked
 *  after this call; pages take memory only once touched (a reservation
 *  sized for the largest input costs address space, not memory). NULL if
 *  it cannot be mapped (the caller then decodes on threads). Free with
 *  ss__conv_shared_free(). */
void *ss__conv_shared_alloc(size_t bytes);
/** Unmap memory from ss__conv_shared_alloc() (NULL: nothing). */
void ss__conv_shared_free(void *p, size_t bytes);

/** A bump allocator over a slot's share of that memory: a decoder in a
 *  process allocates its growing buffers here instead of with realloc(),
 *  whose blocks the emitting process could not see. */
typedef struct ss_conv_arena {
    char *base; /**< `cap` bytes of shared memory */
    size_t cap;
    size_t used; /**< bytes handed out since the last reset */
    void *last;  /**< the block handed out last (grows in place) */
} ss_conv_arena;

/** Forget every block of `a` (at the start of each decode into its slot). */
void ss__conv_arena_reset(ss_conv_arena *a);

/** realloc() in `a`: a block of at least `need` bytes holding the first
 *  `len` bytes of `p` (NULL or a block of `a` since its last reset). The
 *  last block grows in place; another is copied to the end of the arena
 *  (its old bytes stay used until the reset). Blocks are 64-byte aligned.
 *  @return the block, or NULL when `a` has no room left (`p` unchanged). */
void *ss__conv_arena_grow(ss_conv_arena *a, void *p, size_t len, size_t need);

/** Why ss__conv_proc_ordered() returned 2: a decoder process died. */
typedef struct ss_conv_proc_death {
    uint64_t input; /**< the input it was decoding (or being handed) */
    int status;     /**< its waitpid() status (-1: not known) */
} ss_conv_proc_death;

/** "killed by signal 9 (Killed)" or "exited with status 3" for a
 *  ss_conv_proc_death status, into buf[cap]. */
void ss__conv_proc_describe(char *buf, size_t cap, int status);

/** ss__conv_parallel_ordered() with decoder processes instead of threads:
 *  fork `nprocs` (< 1 means 1) single-threaded children, each of which runs
 *  `decode` for the inputs it is handed (into slot i mod
 *  ss__conv_ordered_slots(nprocs) of `slots`, stride `slot_size`), while the
 *  calling process emits in input order; the same slot rules, so the same
 *  store as any other thread count. `slots` (with everything the emit reads
 *  through them) must come from ss__conv_shared_alloc(); whatever else a
 *  decode writes (`ctx`, EDFlib's tables) stays in its own process. The
 *  memory of the slots bounds what is held, as with threads.
 *  Forks only while the process has a single thread (/proc/self/task): a
 *  fork copies no other thread, and a child of a multi-threaded process
 *  could find a lock held forever. Children end with _exit() (no atexit
 *  handlers, no stdio flush, no LMDB environment touched); they die with
 *  the calling process (PR_SET_PDEATHSIG) and are killed and reaped on any
 *  stop, so no zombie stays. Test hook: when the environment variable
 *  SS_TEST_DECODER_DIE holds an input number, the child handed that input
 *  kills itself with SIGKILL before decoding it; when SS_TEST_NO_FORK is
 *  set (non-empty), nothing is forked and -1 is returned, as without
 *  fork() (for the tests of these paths only).
 *  @param[out] died filled when 2 is returned.
 *  @return 0; 1 if an emit returned nonzero; 2 if a decoder process died
 *  (nothing emitted after the input before it); -1 if no process could be
 *  started (more than one thread, no fork, no socket, or n <= 1): nothing
 *  was decoded or emitted, the caller runs another way. */
int ss__conv_proc_ordered(ss_conv_proc_death *died, void *ctx, void *slots, size_t slot_size,
                          int nprocs, uint64_t n, ss_conv_decode_fn decode, ss_conv_emit_fn emit);

/** 1 if the calling process has a single thread and, with glibc, never had
 *  another (glibc's __libc_single_threaded: once a thread has started,
 *  stdio locks every stream for good, and so would the children), per
 *  /proc/self/task; 0 if that cannot be read. */
int ss__conv_single_threaded(void);

#endif /* SS_ORDERED_H */
