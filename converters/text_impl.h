/* SPDX-License-Identifier: BSD-2-Clause */
/* text_impl.h - what the text engine's files (text_*.c) share among
 * themselves; the converters on the engine use text.h alone. */
#ifndef SS_TEXT_IMPL_H
#define SS_TEXT_IMPL_H

#include "text.h"

/* The next example [*a, *e) of j's mode from *pos (< end) in d: counts the
 * lines read into *lines, sets *first to the line it starts on and adds the
 * blank or separator lines passed over to *skipped (text_split.c).
 * @return 1, or 0 at the end. */
int ss__tx_next_example(const tx_job *j, const uint8_t *d, size_t *pos, size_t end, uint64_t *lines,
                        size_t *a, size_t *e, uint64_t *first, uint64_t *skipped);
/* The input block b reads on side sd (text_split.c). */
const tx_input *ss__tx_side_input(const tx_job *j, const tx_block *b, int sd);
/* Grow *buf (of *cap bytes) to hold `need` bytes, doubling (text_buffers.c).
 * @return 0, or -1 out of memory (*buf unchanged). */
int ss__tx_reserve(uint8_t **buf, size_t *cap, size_t need);
/* Free bi's arrays and empty it (text_buffers.c). */
void ss__tx_blockids_drop(tx_blockids *bi);

/* The map's key of word d[w, w + len), d[0, dsize) readable. */
static inline ss_vocab_key tx_word_key(const uint8_t *d, size_t w, size_t len, size_t dsize) {
    return dsize - w >= 8 ? ss_vocab_key_fast(d + w, len) : ss_vocab_key_of(d + w, len);
}

#endif
