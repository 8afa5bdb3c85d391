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

/** The number of slots ss_conv_parallel_ordered() needs for `nthreads`
 *  decoding threads (< 1 means 1): one more than the threads, so that every
 *  decoder has a slot to fill while the input before is being emitted. Each
 *  slot holds a whole decoded input, so this is also the most inputs held
 *  in memory at once. */
int ss_conv_ordered_slots(int nthreads);

/** Decode inputs [0, n) on `nthreads` threads (< 1 means 1) and emit
 *  each on the calling thread in input order, so that any thread count
 *  writes the same store. Input i is decoded into slot i mod
 *  ss_conv_ordered_slots(nthreads), at `slots` + that * `slot_size`; it is
 *  handed to a decoder only after input i - that number has been emitted,
 *  so the slot is free. After an emit returns nonzero no input is handed out
 *  any more (those being decoded finish) and none is emitted.
 *  The decoders are POSIX threads of this call (not OpenMP's): callbacks
 *  that serialize a library's calls use a mutex of their own. With n <= 1
 *  (nothing to overlap), or when no thread can be started or its few bytes
 *  of bookkeeping allocated, everything runs on the calling thread in slot
 *  0.
 *  @param ctx passed to both callbacks; `slots` holds at least
 *  ss_conv_ordered_slots(nthreads) slots (the caller's, not freed here).
 *  @return 0, or 1 if an emit returned nonzero. */
int ss_conv_parallel_ordered(void *ctx, void *slots, size_t slot_size, int nthreads, uint64_t n,
                             ss_conv_decode_fn decode, ss_conv_emit_fn emit);

/** Decode and emit inputs [0, n) one after the other on the calling thread,
 *  all in `slot`; no thread is started. For decoders that are slower in a
 *  process with several threads (EDFlib reads with getc(), which locks the
 *  stream once there is a second thread).
 *  @return 0, or 1 if an emit returned nonzero (no input after it is
 *  decoded). */
int ss_conv_serial_ordered(void *ctx, void *slot, uint64_t n, ss_conv_decode_fn decode,
                           ss_conv_emit_fn emit);

#endif /* SS_ORDERED_H */
