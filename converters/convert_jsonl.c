/* SPDX-License-Identifier: BSD-2-Clause */
/* convert_jsonl.c - `seqstore convert jsonl FILE... -o STORE`: JSON lines
 * (plain or .gz), one example per line, one field per --key (see jsonl.h).
 *
 * Inputs are cut into blocks at line boundaries (the text engine's ss__tx_split);
 * worker threads parse and tokenize blocks, the calling thread appends them
 * in block order, so the store does not depend on the number of threads. */
#include "jsonl.h"
#include "spm_text.h"

#include <jansson.h>
#include <omp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define JL_MAX_KEYS 16

static void jsonl_usage(FILE *out) {
    fputs("usage: seqstore convert jsonl FILE... -o STORE [options]\n"
          "One example per line of JSON (one object per line; blank lines are skipped\n"
          "and counted in the summary; an empty string is an example of length 0);\n"
          "FILE may be '-' (stdin) or *.gz (gzip; concatenated members are read, other\n"
          "trailing bytes are an error). Each --key becomes a field of that name: a\n"
          "string is tokenized, an array of integers is taken as ids already tokenized\n"
          "(stored as given).\n"
          "  --key KEY           the key to read (repeat for several fields; default text)\n"
          "  --tokens KIND       bytes (default) | chars | words | ids (arrays only)\n"
          "  --tokenizer spm:MODEL  SentencePiece ids of strings (as spm_encode); arrays\n"
          "                      must hold ids of the same model\n"
          "  --bos, --eos        add begin / end of sequence tokens to tokenized strings\n"
          "                      (spm: the model's ids; bytes: 256/257; chars:\n"
          "                      0x110000/0x110001; ids: need --vocab-size)\n"
          "  --vocab-size N      ids: every id must be < N; the dtype is the smallest\n"
          "                      that holds N (without it, u32)\n"
          "words (whitespace-separated; one vocabulary for all keys, attribute 'vocab',\n"
          "built in a first pass as by 'convert text'):\n"
          "  --min-count N, --max-vocab N   as for 'convert text'\n"
          "  --vocab FROM        reuse the vocabulary of a store or a one-token-per-line file\n"
          "  --count-only, --counts PATH   shared vocabularies over --shard jobs, as for\n"
          "                      'convert text'\n"
          "A bad line is reported as FILE:LINE with the JSON error or the missing key.\n"
          "Attributes: '<key>.tokens' (the KIND); spm: 'vocab' (the pieces, one per\n"
          "line), '<key>.tokenizer', '<key>.vocab_size', '<key>.bos_id', '.eos_id',\n"
          "'.eod_id', '.unk_id', '.pad_id'.\n",
          out);
}

typedef struct jl_options {
    const char *keys[JL_MAX_KEYS];
    uint32_t nkeys;
    int kind, bos, eos, tokens_given;
    uint64_t vocab_size, min_count, max_vocab;
    const char *spm_model, *vocab_from;
    char **inputs;
    int ninputs;
    int count_only;      /* --count-only: write this shard's word counts */
    const char **counts; /* --counts PATH...: the vocabulary from these counts */
    int ncounts;
    char *counts_options; /* the counts files' options line (wordcounts.c), malloc'ed */
} jl_options;

static int add_key(ss_conv *c, jl_options *o, const char *k) {
    if (!k) return ss__conv_usage_error(c, "--key needs a key");
    if (o->nkeys == JL_MAX_KEYS) return ss__conv_usage_error(c, "at most %d keys", JL_MAX_KEYS);
    if (!*k || strlen(k) > SS_MAX_NAME || !strcmp(k, "source"))
        return ss__conv_usage_error(c, "--key '%s' cannot name a field", k);
    for (uint32_t i = 0; i < o->nkeys; i++)
        if (!strcmp(o->keys[i], k)) return ss__conv_usage_error(c, "--key '%s' given twice", k);
    o->keys[o->nkeys++] = k;
    return 0;
}

static int parse_jsonl(ss_conv *c, int argc, char **argv, jl_options *o) {
    memset(o, 0, sizeof *o);
    tx_vocab_args va = TX_VOCAB_ARGS(o);
    if (ss__tx_vocab_args_begin(c, &va, &o->inputs, argc)) return 1;
    int only_files = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int k;
        if (only_files || a[0] != '-' || !strcmp(a, "-")) {
            o->inputs[o->ninputs++] = argv[i];
        } else if (!strcmp(a, "--")) {
            only_files = 1;
        } else if (!strcmp(a, "--key")) {
            if (add_key(c, o, v)) return 2;
            i++;
        } else if (!strcmp(a, "--tokens")) {
            o->kind = v ? ss__tx_parse_kind(v) : -1;
            if (o->kind < 0 || o->kind > TX_IDS)
                return ss__conv_usage_error(c, "--tokens needs bytes, chars, words or ids");
            o->tokens_given = 1;
            i++;
        } else if (!strcmp(a, "--tokenizer")) {
            if (ss__tx_spm_option(c, v, &o->spm_model)) return 2;
            i++;
        } else if ((k = ss__tx_vocab_option(c, &va, a, v, &i)) != 0) {
            if (k == 2) return 2;
        } else {
            return ss__conv_usage_error(c, "unknown option '%s'", a);
        }
    }
    if (!o->ninputs) return ss__conv_usage_error(c, "no input file");
    if (!o->nkeys) o->keys[o->nkeys++] = "text";
    if (o->spm_model && o->tokens_given)
        return ss__conv_usage_error(c, "--tokenizer and --tokens exclude each other");
    if (o->spm_model) o->kind = TX_SPM;
    if (o->vocab_size && o->kind != TX_IDS)
        return ss__conv_usage_error(c, "--vocab-size needs --tokens ids");
    if (o->kind != TX_WORDS && (o->vocab_from || o->max_vocab || o->min_count != 1))
        return ss__conv_usage_error(c, "--vocab, --min-count and --max-vocab need --tokens words");
    if (o->vocab_from && (o->max_vocab || o->min_count != 1))
        return ss__conv_usage_error(c, "--vocab excludes --min-count and --max-vocab");
    return ss__tx_check_count_options(c, o->kind == TX_WORDS, o->count_only, o->ncounts,
                                      o->vocab_from != NULL);
}

/* The counts files' options line: the keys in order (a counts file of
 * other keys is refused). NULL when out of memory. */
static char *counts_options(const jl_options *o) {
    size_t n = 32;
    for (uint32_t k = 0; k < o->nkeys; k++) n += strlen(o->keys[k]) + 1;
    char *s = malloc(n);
    if (!s) return NULL;
    strcpy(s, "jsonl\tkeys\t");
    for (uint32_t k = 0; k < o->nkeys; k++) {
        if (k) strcat(s, ",");
        strcat(s, o->keys[k]);
    }
    return s;
}

/* ------------------------------------------------------------- blocks */

typedef struct jl_item {
    uint64_t line; /* 1-based within the block */
    uint32_t bad;  /* 1 + offset of a message in msgs, or 0 */
} jl_item;

/* One processed block; buffers reused from block to block. */
typedef struct jl_slot {
    jl_item *items;
    uint64_t *len; /* [nitems][nkeys] elements */
    size_t nitems, cap;
    jl_buf bufs[JL_MAX_KEYS];
    char *msgs;
    size_t msgn, msgcap;
    uint64_t nlines;
    uint64_t nblank; /* blank lines: no example */
    int oom;
} jl_slot;

static int slot_reserve(jl_slot *s, uint32_t nkeys) {
    if (s->nitems < s->cap) return 0;
    size_t n = s->cap ? 2 * s->cap : 1024;
    jl_item *it = realloc(s->items, n * sizeof *it);
    if (!it) return -1;
    s->items = it;
    uint64_t *len = realloc(s->len, n * nkeys * sizeof *len);
    if (!len) return -1;
    s->len = len;
    s->cap = n;
    return 0;
}

static uint32_t slot_msg(jl_slot *s, const char *m) {
    size_t n = strlen(m) + 1;
    if (s->msgn + n > s->msgcap) {
        size_t c = s->msgcap ? 2 * s->msgcap : 4096;
        while (c < s->msgn + n) c *= 2;
        char *p = realloc(s->msgs, c);
        if (!p || c > UINT32_MAX - 1) {
            if (p) s->msgs = p;
            s->oom = 1;
            return 0;
        }
        s->msgs = p;
        s->msgcap = c;
    }
    memcpy(s->msgs + s->msgn, m, n);
    uint32_t off = (uint32_t)s->msgn + 1;
    s->msgn += n;
    return off;
}

static void process_block(const jl_spec *sp, const tx_input *in, const tx_block *b, jl_slot *s) {
    s->nitems = s->msgn = 0;
    s->nlines = s->nblank = 0;
    s->oom = 0;
    for (uint32_t k = 0; k < sp->nkeys; k++) s->bufs[k].n = 0;
    if (b->other_shard) { /* --shard: count its lines only (ss__tx_shard_blocks()) */
        if (b->other_shard != TX_UNREAD)
            s->nlines = ss__tx_count_lines(in->data + b->start[0], b->end[0] - b->start[0]);
        return;
    }
    size_t pos = b->start[0], end = b->end[0];
    char err[512];
    while (pos < end) {
        const uint8_t *d = in->data + pos;
        const uint8_t *nl = memchr(d, '\n', end - pos);
        size_t n = nl ? (size_t)(nl - d) : end - pos;
        pos += n + (nl != NULL);
        s->nlines++;
        if (slot_reserve(s, sp->nkeys)) {
            s->oom = 1;
            return;
        }
        int r = ss__jl_parse_line(sp, d, n, s->bufs, s->len + s->nitems * sp->nkeys, err,
                                  sizeof err);
        if (r == 1) {
            s->nblank++;
            continue;
        }
        if (r == -2) {
            s->oom = 1;
            return;
        }
        jl_item *it = &s->items[s->nitems++];
        it->line = s->nlines;
        it->bad = r ? slot_msg(s, err) : 0;
        if (s->oom) return;
    }
}

static void slot_free(jl_slot *s) {
    free(s->items);
    free(s->len);
    free(s->msgs);
    for (int k = 0; k < JL_MAX_KEYS; k++) free(s->bufs[k].data);
}

/* ------------------------------------------------------------- the run */

typedef struct jl_run {
    ss_conv *c;
    const jl_spec *sp;
    tx_job *j;
    uint64_t skip, base_line;
    uint32_t input;
    uint64_t blank; /* blank lines skipped */
} jl_run;

/* Append the items of one processed block, in order. */
static int consume(jl_run *r, const tx_block *b, const jl_slot *s) {
    if (s->oom) return ss__conv_error(r->c, "out of memory");
    const tx_input *in = &r->j->inputs[b->input];
    if (b->input != r->input) {
        r->input = b->input;
        r->base_line = 0;
    }
    ss_value values[JL_MAX_KEYS];
    size_t off[JL_MAX_KEYS] = {0};
    uint32_t nk = r->sp->nkeys, es = r->sp->tok->esize;
    for (size_t n = 0; n < s->nitems; n++) {
        const jl_item *it = &s->items[n];
        uint64_t line = r->base_line + it->line;
        if (it->bad) {
            if (ss__conv_bad(r->c, in->path, line, "%s", s->msgs + it->bad - 1)) return 1;
            continue;
        }
        for (uint32_t k = 0; k < nk; k++) {
            values[k].length = s->len[n * nk + k];
            /* no buffer yet when every value so far was empty */
            values[k].data = values[k].length ? s->bufs[k].data + off[k] * es : NULL;
            off[k] += values[k].length;
        }
        if (r->skip) {
            r->skip--;
            continue;
        }
        if (ss__conv_append_at(r->c, values, in->source, line, b->start[0])) return 1;
    }
    r->base_line += s->nlines;
    r->blank += s->nblank;
    ss__conv_progress(r->c, b->end[0] - b->start[0]);
    return 0;
}

static int run_serial(jl_run *r) {
    jl_slot s;
    memset(&s, 0, sizeof s);
    int rc = 0;
    const tx_job *j = r->j;
    for (size_t i = 0; i < j->nblocks && !rc; i++) {
        process_block(r->sp, &j->inputs[j->blocks[i].input], &j->blocks[i], &s);
        rc = consume(r, &j->blocks[i], &s);
    }
    slot_free(&s);
    return rc;
}

/* Worker threads tokenize blocks into a ring of 2 x threads slots; the
 * calling thread appends the slots in block order as they complete, so the
 * writer overlaps the tokenizing. (Plain threads rather than OpenMP, whose
 * idle threads spin while the writer works.) */
typedef struct jl_pool {
    const jl_run *r;
    jl_slot *slots;
    size_t nslots, next, *block;
    int *state; /* 0 free, 1 busy, 2 done */
    int stop;
    pthread_mutex_t mu;
    pthread_cond_t done, freed;
} jl_pool;

static void *worker(void *arg) {
    jl_pool *p = arg;
    const tx_job *j = p->r->j;
    pthread_mutex_lock(&p->mu);
    while (!p->stop && p->next < j->nblocks) {
        size_t i = p->next, k = i % p->nslots;
        if (p->state[k] != 0) {
            pthread_cond_wait(&p->freed, &p->mu);
            continue;
        }
        p->next++;
        p->state[k] = 1;
        p->block[k] = i;
        pthread_mutex_unlock(&p->mu);
        process_block(p->r->sp, &j->inputs[j->blocks[i].input], &j->blocks[i], &p->slots[k]);
        pthread_mutex_lock(&p->mu);
        p->state[k] = 2;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static int consume_in_order(jl_run *r, jl_pool *p) {
    int rc = 0;
    for (size_t i = 0; i < r->j->nblocks && !rc; i++) {
        size_t k = i % p->nslots;
        pthread_mutex_lock(&p->mu);
        while (!(p->state[k] == 2 && p->block[k] == i)) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
        rc = consume(r, &r->j->blocks[i], &p->slots[k]);
        pthread_mutex_lock(&p->mu);
        p->state[k] = 0;
        pthread_cond_broadcast(&p->freed);
        pthread_mutex_unlock(&p->mu);
    }
    return rc;
}

static int run_blocks(jl_run *r, int threads) {
    if (threads <= 1 || r->j->nblocks <= 1) return run_serial(r);
    jl_pool p;
    memset(&p, 0, sizeof p);
    p.r = r;
    p.nslots = 2 * (size_t)threads;
    p.slots = calloc(p.nslots, sizeof *p.slots);
    p.block = calloc(p.nslots, sizeof *p.block);
    p.state = calloc(p.nslots, sizeof *p.state);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    int started = 0, rc = 0;
    if (!p.slots || !p.block || !p.state || !tid) rc = ss__conv_error(r->c, "out of memory");
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.done, NULL);
    pthread_cond_init(&p.freed, NULL);
    for (; !rc && started < threads; started++)
        if (pthread_create(&tid[started], NULL, worker, &p)) break;
    if (!rc && !started) rc = ss__conv_error(r->c, "cannot start threads");
    if (!rc) rc = consume_in_order(r, &p);
    pthread_mutex_lock(&p.mu);
    p.stop = 1;
    pthread_cond_broadcast(&p.freed);
    pthread_mutex_unlock(&p.mu);
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    for (size_t k = 0; p.slots && k < p.nslots; k++) slot_free(&p.slots[k]);
    pthread_cond_destroy(&p.done);
    pthread_cond_destroy(&p.freed);
    pthread_mutex_destroy(&p.mu);
    free(p.slots), free(p.block), free(p.state), free(tid);
    return rc;
}

static int write_attrs(ss_conv *c, const jl_options *o, const tx_tok *t) {
    for (uint32_t k = 0; k < o->nkeys; k++)
        if (ss__tx_field_attrs(c, t, o->keys[k], k ? NULL : "vocab", o->spm_model)) return 1;
    return 0;
}

/* Count the words of every block (in parallel; per-thread maps merged) into
 * *out; with `mine`, only this --shard's blocks. @return 0, or 1 (printed). */
static int count_words(ss_conv *c, const jl_spec *sp, const tx_job *j, int mine, ss_vocab **out) {
    int threads = ss__conv_opts(c)->threads, oom = 0;
    ss_vocab **maps = calloc((size_t)threads, sizeof *maps);
    jl_arena *arenas = calloc((size_t)threads, sizeof *arenas);
    *out = NULL;
    if (!maps || !arenas) oom = 1;
    for (int t = 0; t < threads && !oom; t++)
        if (ss__vocab_new(&maps[t])) oom = 1;
    if (!oom) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (size_t b = 0; b < j->nblocks; b++) {
            int t = omp_get_thread_num();
            const tx_block *bl = &j->blocks[b];
            const uint8_t *d = j->inputs[bl->input].data;
            if (mine && bl->other_shard) continue;
            for (size_t pos = bl->start[0]; pos < bl->end[0];) {
                const uint8_t *nl = memchr(d + pos, '\n', bl->end[0] - pos);
                size_t n = nl ? (size_t)(nl - d) - pos : bl->end[0] - pos;
                if (ss__jl_count_line(sp, d + pos, n, maps[t], &arenas[t])) {
#pragma omp atomic write
                    oom = 1;
                    break;
                }
                pos += n + 1;
            }
        }
    }
    for (int t = 1; t < threads && !oom; t++)
        if (ss__vocab_merge(maps[0], maps[t])) oom = 1;
    for (int t = 0; maps && arenas && t < threads; t++) {
        if (t || oom) ss__vocab_free(maps[t]); /* merge copied the words: arenas may go */
        ss__jl_arena_free(&arenas[t]);
    }
    if (!oom) *out = maps[0];
    free(maps);
    free(arenas);
    return oom ? ss__conv_error(c, "out of memory while counting words") : 0;
}

/* --count-only: this shard's counts as a counts file (no store). */
static int write_counts(ss_conv *c, const jl_spec *sp, tx_job *j) {
    ss_vocab *counts[2] = {NULL, NULL};
    int skip[2] = {0, 1};
    ss__conv_no_store(c);
    if (ss__tx_shard_blocks(c, j) || count_words(c, sp, j, 1, &counts[0])) return 1;
    int rc = ss__tx_write_counts_of(c, j, 1, skip, counts);
    ss__vocab_free(counts[0]);
    return rc;
}

static int load_vocab(ss_conv *c, const jl_spec *sp, const tx_job *j, const jl_options *o,
                      ss_vocab **out) {
    ss_vocab *counts[2] = {NULL, NULL};
    int skip[2] = {0, 1};
    *out = NULL;
    if (o->vocab_from) return ss__tx_vocab_load(c, out, o->vocab_from, o->keys[0]);
    if (ss__conv_opts(c)->append) return ss__tx_vocab_load(c, out, ss__conv_opts(c)->output,
                                                           o->keys[0]);
    if (o->ncounts ? ss__tx_read_counts(c, j, 1, skip, o->counts, o->ncounts, counts)
                   : count_words(c, sp, j, 0, &counts[0]))
        return 1;
    int rc = ss__vocab_build(out, counts[0], o->min_count, o->max_vocab);
    ss__vocab_free(counts[0]);
    ss__vocab_free(counts[1]);
    return rc ? ss__conv_error(c, "out of memory while building the vocabulary") : 0;
}

static int convert(ss_conv *c, const jl_options *o, tx_job *j, tx_tok *t, ss_vocab **vocab) {
    for (int i = 0; i < o->ninputs; i++) {
        char err[256];
        uint32_t src = ss__conv_add_source(c, o->inputs[i]);
        if (ss__tx_input_load(&j->inputs[i], o->inputs[i], err, sizeof err)) {
            j->inputs[i].path = o->inputs[i];
            if (ss__conv_bad(c, o->inputs[i], 0, "%s", err)) return 1;
            continue;
        }
        j->inputs[i].source = src;
        j->inputs[i].ok = 1;
    }
    if (ss__tx_split_shard(c, j)) return ss__conv_error(c, "out of memory");
    jl_spec sp = {o->nkeys, o->keys, t, ss__tx_spm_tokenize};
    j->counts_options = o->counts_options;
    if (o->count_only) return write_counts(c, &sp, j);
    if (t->kind == TX_WORDS) {
        if (load_vocab(c, &sp, j, o, vocab)) return 1;
        t->vocab = *vocab;
    }
    if (ss__tx_prepare_tokens(c, t, o->keys[0])) return 1;
    ss_field fields[JL_MAX_KEYS];
    for (uint32_t k = 0; k < o->nkeys; k++)
        fields[k] = (ss_field){.name = o->keys[k], .dtype = t->dtype, .sequence = 1};
    ss_schema schema = {o->nkeys, fields};
    jl_run r = {c, &sp, j, 0, 0, UINT32_MAX, 0};
    if (ss__tx_shard_blocks(c, j) || ss__conv_begin(c, &schema, &r.skip) || write_attrs(c, o, t))
        return 1;
    uint64_t total = 0;
    for (uint32_t i = 0; i < j->ninputs; i++) total += j->inputs[i].ok ? j->inputs[i].size : 0;
    ss__conv_set_total(c, total);
    json_object_seed(0); /* once, before the threads create objects */
    if (run_blocks(&r, ss__conv_opts(c)->threads)) return 1;
    if (r.blank) ss__conv_skipped(c, r.blank, "blank line", NULL);
    return 0;
}

static int run_jsonl(ss_conv *c, int argc, char **argv) {
    jl_options o;
    int rc = parse_jsonl(c, argc, argv, &o);
    if (!rc && !(o.counts_options = counts_options(&o))) rc = ss__conv_error(c, "out of memory");
    if (rc) {
        free(o.inputs);
        free(o.counts);
        free(o.counts_options);
        return rc;
    }
    tx_job j;
    memset(&j, 0, sizeof j);
    j.nsides = 1;
    j.mode = TX_LINES;
    tx_tok t = {.kind = o.kind, .bos_on = o.bos, .eos_on = o.eos, .vocab_size = o.vocab_size};
    ss_spm *spm = NULL;
    ss_vocab *vocab = NULL;
    j.inputs = calloc((size_t)o.ninputs, sizeof *j.inputs);
    j.ninputs = (uint32_t)o.ninputs;
    if (!j.inputs) {
        rc = ss__conv_error(c, "out of memory");
    } else if (o.kind == TX_SPM && ss__tx_spm_load(c, &spm, o.spm_model)) {
        rc = 1;
    } else {
        t.spm = spm;
        t.spm_model = o.spm_model;
        rc = convert(c, &o, &j, &t, &vocab);
    }
    for (uint32_t i = 0; i < j.ninputs; i++) ss__tx_input_release(&j.inputs[i]);
    free(j.inputs);
    free(j.blocks);
    free(o.inputs);
    free(o.counts);
    free(o.counts_options);
    ss__spm_free(spm);
    ss__vocab_free(vocab);
    return rc;
}

const ss_converter ss__converter_jsonl = {
    "jsonl", "JSON lines (plain or .gz): --key fields, bytes/chars/ids or SentencePiece ids",
    run_jsonl, jsonl_usage};
