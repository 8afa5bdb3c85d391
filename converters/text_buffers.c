/* SPDX-License-Identifier: BSD-2-Clause */
/* text_buffers.c - the text engine's memory: buffers that grow, and the word
 * ids pass 1 keeps per block (see text.h, text_impl.h). */
#include "text_impl.h"

#include <stdlib.h>

int ss__tx_reserve(uint8_t **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : (size_t)1 << 16;
    while (n < need) n *= 2;
    void *p = realloc(*buf, n);
    if (!p) return -1;
    *buf = p;
    *cap = n;
    return 0;
}

void ss__tx_blockids_drop(tx_blockids *bi) {
    free(bi->tok);
    free(bi->nper);
    free(bi->line);
    bi->tok = bi->nper = bi->line = NULL;
    bi->ntok = bi->nex = bi->tok_cap = bi->nex_cap = 0;
}

void ss__tx_wordids_free(tx_job *j) {
    tx_wordids *w = j->ids;
    if (!w) return;
    for (size_t k = 0; w->blocks && k < 2 * j->nblocks; k++) ss__tx_blockids_drop(&w->blocks[k]);
    for (int k = 0; w->remap && k < w->nmaps; k++) free(w->remap[k]);
    free(w->blocks);
    free(w->remap);
    free(w->nremap);
    free(w);
    j->ids = NULL;
}
