/* SPDX-License-Identifier: BSD-2-Clause */
/* text_vocab.c - the text engine: word vocabularies, loaded or counted (see text.h). */
#include "internal.h"
#include "internal.h"
#include "memlimit.h"
#include "spm_text.h"
#include "text.h"
#include "text_impl.h"
#include "utf8.h"
#include "words.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <omp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TX_BATCH 32 /* words counted together (ss__vocab_count_batch()) */

/* ------------------------------------------------------------ vocabularies */

int ss__tx_vocab_load(ss_conv *c, ss_vocab **out, const char *from, const char *field) {
    char err[256] = "", name[SS_MAX_NAME + 16];
    ss_store *s = NULL;
    *out = NULL;
    ss__conv_add_checked(c, from); /* --resume: the same vocabulary */
    ss__conv_note_store(c, from);
    int rc = ss_open(&s, from, SS_OPEN_VERIFY);
    if (rc == 0) {
        ss_attr a;
        snprintf(name, sizeof name, "%s.vocab", field);
        int arc = ss_attr_get(&a, s, name);
        if (arc == SS_ENOTFOUND) arc = ss_attr_get(&a, s, "vocab");
        if (arc && arc != SS_ENOTFOUND) { /* damaged: not "no vocabulary" */
            rc = ss__conv_ss_error(c, "cannot read the vocabulary of '%s'", from);
            ss_close(s);
            return rc;
        }
        if (arc || (a.type != SS_ATTR_TEXT && a.type != SS_ATTR_BYTES)) {
            ss_close(s);
            return ss__conv_error(c, "'%s' has no vocabulary (attribute '%s' or 'vocab')", from,
                                  name);
        }
        rc = ss__vocab_parse(out, a.data, (size_t)a.size, err, sizeof err);
        ss_close(s);
        if (rc) return ss__conv_error(c, "vocabulary of '%s': %s", from, err);
        return 0;
    }
    if (rc == SS_ENOTFOUND) return ss__conv_error(c, "vocabulary '%s': no such file", from);
    if (rc != SS_ENOTSTORE) return ss__conv_ss_error(c, "cannot open vocabulary store '%s'", from);
    tx_input in;
    if (ss__tx_input_load(&in, from, err, sizeof err))
        return ss__conv_error(c, "vocabulary '%s': %s", from, err);
    rc = ss__vocab_parse(out, (const char *)in.data, in.size, err, sizeof err);
    ss__tx_input_release(&in);
    if (rc) return ss__conv_error(c, "vocabulary file '%s': %s", from, err);
    return 0;
}

/* Append an example of `words` words from line `first` to bi. 0, or -1 OOM. */
static int push_example(tx_blockids *bi, uint32_t words, uint32_t first) {
    if (bi->nex == bi->nex_cap) {
        size_t n = bi->nex_cap ? 2 * bi->nex_cap : 1024;
        uint32_t *p = realloc(bi->nper, n * sizeof *p);
        if (p) bi->nper = p;
        uint32_t *q = p ? realloc(bi->line, n * sizeof *q) : NULL;
        if (!q) return -1;
        bi->line = q;
        bi->nex_cap = n;
    }
    bi->nper[bi->nex] = words;
    bi->line[bi->nex++] = first;
    return 0;
}

/* Words waiting to be counted together (ss__vocab_count_batch()). */
typedef struct word_batch {
    ss_vocab_key key[TX_BATCH];
    uint32_t entry[TX_BATCH];
    size_t n;
} word_batch;

static int flush_batch(word_batch *b, ss_vocab *v, tx_blockids *bi) {
    uint32_t *to = b->entry;
    if (bi) { /* the entry numbers go straight into the kept words */
        if (bi->ntok + b->n > bi->tok_cap) {
            size_t cap = bi->tok_cap ? 2 * bi->tok_cap : 4096;
            while (cap < bi->ntok + b->n) cap *= 2;
            uint32_t *p = realloc(bi->tok, cap * sizeof *p);
            if (!p) return -1;
            bi->tok = p;
            bi->tok_cap = cap;
        }
        to = bi->tok + bi->ntok;
    }
    if (ss__vocab_count_batch(v, b->n, b->key, to)) return -1;
    if (bi) bi->ntok += b->n;
    b->n = 0;
    return 0;
}

/* Count the words of [pos, end) of `in` into v; with bi, also keep them
 * (see tx_blockids). Sets *oom on failure. */
static void count_range(const tx_job *j, const tx_input *in, size_t pos, size_t end, ss_vocab *v,
                        tx_blockids *bi, int *oom) {
    const uint8_t *d = in->data;
    size_t a, e;
    uint64_t lines = 0, first, skipped = 0;
    word_batch b;
    b.n = 0;
    if (bi && !bi->tok) { /* room for the most words [pos, end) can hold: no
                           * growing copies; the pages never written are never
                           * touched, and the array is cut to size at the end */
        size_t most = (end - pos) / 2 + 1;
        if ((bi->tok = malloc(most * sizeof *bi->tok))) bi->tok_cap = most;
    }
    while (ss__tx_next_example(j, d, &pos, end, &lines, &a, &e, &first, &skipped)) {
        uint64_t words = 0;
        ss_wordscan ws;
        size_t w, len;
        ss_wordscan_init(&ws, d, a, e, in->size);
        while (ss_wordscan_next(&ws, &w, &len)) {
            if (len > UINT32_MAX) { /* the map refuses such words */
                *oom = 1;
                return;
            }
            b.key[b.n++] = tx_word_key(d, w, len, in->size);
            words++;
            if (b.n == TX_BATCH && flush_batch(&b, v, bi)) {
                *oom = 1;
                return;
            }
        }
        if (bi && (words > UINT32_MAX || first > UINT32_MAX)) { /* look them up in pass 2 */
            if (b.n && flush_batch(&b, v, bi)) {
                *oom = 1;
                return;
            }
            ss__tx_blockids_drop(bi);
            bi = NULL;
        }
        if (bi && push_example(bi, (uint32_t)words, (uint32_t)first)) {
            *oom = 1;
            return;
        }
    }
    if (b.n && flush_batch(&b, v, bi)) *oom = 1;
    if (!bi) return;
    bi->nlines = lines;
    bi->nskipped = skipped;
    uint32_t *cut = bi->ntok < bi->tok_cap ? realloc(bi->tok, (bi->ntok + 1) * sizeof *cut) : NULL;
    if (cut) {
        bi->tok = cut;
        bi->tok_cap = bi->ntok + 1;
    }
}

/* Bytes of kept words (tx_blockids) a job may hold: a quarter of the
 * memory the process may use, its cgroup's limit included (memlimit.h;
 * tests: $SS_TEST_WORD_IDS_BYTES). */
static size_t ids_budget(void) {
    const char *t = getenv("SS_TEST_WORD_IDS_BYTES");
    if (t && *t) return (size_t)strtoull(t, NULL, 10);
    uint64_t q = ss__memory_limit() / 4;
    return q < SIZE_MAX ? (size_t)q : SIZE_MAX;
}

/* Merge the per-thread maps ([2 * threads]) into maps 0 and 1. With `ids`,
 * ids->remap[k] of each merged map k gets the entry number in the map it
 * went into of each of its entries (maps 0 and 1 keep theirs), and
 * ids->nremap[k] their number. 0, or -1 out of memory. */
static int merge_maps(ss_vocab **maps, int threads, int nmaps, tx_wordids *ids) {
    int oom = 0;
    for (int m = 0; m < nmaps && !oom; m++)
        for (int t = 1; t < threads && !oom; t++) {
            int k = 2 * t + m;
            uint64_t n = ss__vocab_entries(maps[k]);
            uint32_t *to = ids ? malloc((n ? n : 1) * sizeof *to) : NULL;
            if (ids && !(ids->remap[k] = to)) oom = 1;
            if (ids) ids->nremap[k] = n;
            if (!oom && ss__vocab_merge_at(maps[m], maps[k], to)) oom = 1;
        }
    return oom ? -1 : 0;
}

/* ss__tx_count_words(); with `ids`, also keep the words of blocks while their
 * size stays within ids_budget(), as entry numbers of per-thread maps: map
 * 2t + m of thread t; ids->remap (allocated here) then holds where those
 * of maps 2t + m, t > 0, went in counts[m] (merge_maps()). */
static int count_words(ss_conv *c, const tx_job *j, int threads, int shared, const int skip[2],
                       ss_vocab *counts[2], tx_wordids *ids) {
    int nmaps = shared ? 1 : j->nsides, oom = 0;
    ss_vocab **maps = calloc((size_t)threads * 2, sizeof *maps);
    size_t budget = ids ? ids_budget() : 0, kept = 0;
    counts[0] = counts[1] = NULL;
    if (ids && maps) {
        ids->nmaps = 2 * threads;
        ids->remap = calloc((size_t)ids->nmaps, sizeof *ids->remap);
        ids->nremap = calloc((size_t)ids->nmaps, sizeof *ids->nremap);
    }
    if (!maps || (ids && (!ids->remap || !ids->nremap))) {
        free(maps);
        return ss__conv_error(c, "out of memory");
    }
    for (int t = 0; t < threads; t++)
        for (int m = 0; m < nmaps; m++)
            if (ss__vocab_new(&maps[2 * t + m])) oom = 1;
    if (!oom) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (size_t b = 0; b < j->nblocks; b++) {
            int t = omp_get_thread_num();
            const tx_block *bl = &j->blocks[b];
            if (bl->other_shard) continue; /* --count-only: this shard's words */
            for (int sd = 0; sd < j->nsides; sd++) {
                if (skip[sd]) continue;
                int o = 0, m = 2 * t + (shared ? 0 : sd);
                size_t sofar;
#pragma omp atomic read
                sofar = kept;
                tx_blockids *bi = ids && sofar < budget ? &ids->blocks[2 * b + (size_t)sd] : NULL;
                if (bi) bi->map = m;
                count_range(j, ss__tx_side_input(j, bl, sd), bl->start[sd], bl->end[sd], maps[m],
                            bi, &o);
                if (bi) {
                    size_t add = (bi->tok_cap + 2 * bi->nex_cap) * sizeof(uint32_t);
#pragma omp atomic update
                    kept += add;
                }
                if (o) {
#pragma omp atomic write
                    oom = 1;
                }
            }
        }
    }
    if (!oom && merge_maps(maps, threads, nmaps, ids)) oom = 1;
    for (int k = 0; k < 2 * threads; k++)
        if (oom || k >= nmaps) {
            ss__vocab_free(maps[k]);
            maps[k] = NULL;
        }
    counts[0] = maps[0];
    counts[1] = maps[1];
    free(maps);
    return oom ? ss__conv_error(c, "out of memory while counting words") : 0;
}

int ss__tx_count_words(ss_conv *c, const tx_job *j, int threads, int shared, const int skip[2],
                       ss_vocab *counts[2]) {
    return count_words(c, j, threads, shared, skip, counts, NULL);
}

/* ss__tx_vocabs_from_counts(); with `ids`, ids[m] (allocated here) also gets the
 * id of each entry of counts[m] (ss__vocab_build_ids()), NULL for the maps
 * not built. */
static int build_vocabs(ss_conv *c, ss_vocab *counts[2], uint64_t min_count, uint64_t max_vocab,
                        int shared, const int skip[2], ss_vocab *vocab[2], uint32_t *ids[2]) {
    int nmaps = shared ? 1 : 2, oom = 0;
    vocab[0] = vocab[1] = NULL;
    for (int m = 0; m < nmaps && !oom; m++) {
        if ((skip[m] && !shared) || !counts[m]) continue;
        uint64_t n = ss__vocab_entries(counts[m]);
        if (ids && !(ids[m] = malloc((n ? n : 1) * sizeof *ids[m])))
            oom = 1;
        else if (ss__vocab_build_ids(&vocab[m], counts[m], min_count, max_vocab,
                                     ids ? ids[m] : NULL))
            oom = 1;
    }
    if (!oom) return 0;
    ss__vocab_free(vocab[0]);
    ss__vocab_free(vocab[1]);
    vocab[0] = vocab[1] = NULL;
    return ss__conv_error(c, "out of memory while building the vocabulary");
}

int ss__tx_vocabs_from_counts(ss_conv *c, ss_vocab *counts[2], uint64_t min_count,
                              uint64_t max_vocab, int shared, const int skip[2],
                              ss_vocab *vocab[2]) {
    return build_vocabs(c, counts, min_count, max_vocab, shared, skip, vocab, NULL);
}

/* ids->remap[k] for every map k (2t + m of thread t): entry number -> id in
 * the vocabulary of map m (a side, or 0 when shared), <unk> for words the
 * vocabulary dropped: the ids of counts[m]'s entries (ss__vocab_build_ids(),
 * taken over), and for t > 0 those of the entries the merge put each word
 * into. No word is looked up. */
static void remap_maps(tx_wordids *ids, uint32_t *built[2]) {
    for (int m = 0; m < 2; m++) {
        free(ids->remap[m]);
        ids->remap[m] = built[m];
    }
    for (int k = 2; k < ids->nmaps; k++) {
        uint32_t *to = ids->remap[k];
        const uint32_t *id = ids->remap[k % 2];
        if (!to) continue;
        if (!id) { /* a side not counted */
            free(to);
            ids->remap[k] = NULL;
            continue;
        }
        uint64_t n = ids->nremap[k];
        for (uint64_t e = 0; e < n; e++) to[e] = id[to[e]];
    }
}

int ss__tx_build_vocabs(ss_conv *c, tx_job *j, int threads, uint64_t min_count, uint64_t max_vocab,
                        int shared, const int skip[2], ss_vocab *vocab[2]) {
    ss_vocab *counts[2];
    uint32_t *built[2] = {NULL, NULL};
    vocab[0] = vocab[1] = NULL;
    ss__tx_wordids_free(j);
    j->ids = calloc(1, sizeof *j->ids);
    if (!j->ids || !(j->ids->blocks = calloc(2 * j->nblocks + 1, sizeof *j->ids->blocks))) {
        ss__tx_wordids_free(j);
        return ss__conv_error(c, "out of memory");
    }
    int rc = count_words(c, j, threads, shared, skip, counts, j->ids);
    if (!rc) rc = build_vocabs(c, counts, min_count, max_vocab, shared, skip, vocab, built);
    if (!rc) {
        remap_maps(j->ids, built);
    } else {
        free(built[0]);
        free(built[1]);
        ss__tx_wordids_free(j);
    }
    ss__vocab_free(counts[0]);
    ss__vocab_free(counts[1]);
    return rc;
}

