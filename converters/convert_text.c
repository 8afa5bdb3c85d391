/* SPDX-License-Identifier: BSD-2-Clause */
/* convert_text.c - `seqstore convert text`, on the text engine (see text.h). */
#include "internal.h"
#include "internal.h"
#include "memlimit.h"
#include "spm_text.h"
#include "text.h"
#include "utf8.h"
#include "words.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* ------------------------------------------------------- convert text */

/* The inputs freed (j->inputs taken). */
typedef struct tx_inputs {
    tx_input *inputs;
    uint32_t n;
    int trim; /* on a thread of its own: also malloc_trim() */
} tx_inputs;

static void *free_inputs(void *arg) {
    tx_inputs *in = arg;
    int trim = in->trim;
    for (uint32_t i = 0; i < in->n; i++) ss__tx_input_release(&in->inputs[i]);
    free(in->inputs);
    free(in);
#ifdef __GLIBC__
    /* the heap the passes freed (words kept, maps merged), given back here
     * rather than torn down when the process exits: -4 ms at the end of
     * 100 MB of words on 2 threads */
    if (trim) malloc_trim(0);
#else
    (void)trim;
#endif
    return NULL;
}

/* Free j's inputs after a conversion, with --threads > 1 while the store is
 * finished (ss__conv_later()): unmapping 100 MB of text takes ~5 ms. */
static void release_inputs(ss_conv *c, tx_job *j) {
    tx_inputs *in = malloc(sizeof *in);
    if (in) *in = (tx_inputs){j->inputs, j->ninputs, ss__conv_opts(c)->threads > 1};
    if (in) ss__conv_later(c, free_inputs, in);
    for (uint32_t i = 0; !in && i < j->ninputs; i++) ss__tx_input_release(&j->inputs[i]);
    if (!in) free(j->inputs);
    j->inputs = NULL;
    j->ninputs = 0;
}

int ss__tx_text_convert(ss_conv *c, const tx_text_options *o) {
    tx_job j;
    memset(&j, 0, sizeof j);
    j.nsides = 1;
    j.field[0] = "tokens";
    j.mode = o->mode;
    j.sep = o->sep;
    j.seplen = o->sep ? strlen(o->sep) : 0;
    j.skip_empty = o->skip_empty;
    j.tok[0].kind = o->kind;
    j.tok[0].bos_on = o->bos;
    j.tok[0].eos_on = o->eos;
    j.tok[0].vocab_size = o->vocab_size;
    j.vocab_attr[0] = "vocab";
    int rc = 1;
    ss_vocab *vocab = NULL;
    ss_spm *spm = NULL;
    if (o->kind == TX_SPM && ss__tx_spm_load(c, &spm, o->spm_model)) return 1;
    j.tok[0].spm = spm;
    j.tok[0].spm_model = o->spm_model;
    j.inputs = calloc((size_t)o->ninputs, sizeof *j.inputs);
    if (!j.inputs) {
        ss__spm_free(spm);
        return ss__conv_error(c, "out of memory");
    }
    j.ninputs = (uint32_t)o->ninputs;
    for (int i = 0; i < o->ninputs; i++) {
        char err[256];
        uint32_t src = ss__conv_add_source(c, o->inputs[i]);
        if (ss__tx_input_load(&j.inputs[i], o->inputs[i], err, sizeof err)) {
            j.inputs[i].path = o->inputs[i];
            if (ss__conv_bad(c, o->inputs[i], 0, "%s", err)) goto done;
            continue;
        }
        j.inputs[i].source = src;
        j.inputs[i].ok = 1;
    }
    if (ss__tx_split_shard(c, &j)) {
        rc = ss__conv_error(c, "out of memory");
        goto done;
    }
    if (o->count_only) {
        int skip[2] = {0, 1};
        rc = ss__tx_write_counts(c, &j, ss__conv_opts(c)->threads, 0, skip);
        goto done;
    }
    if (o->kind == TX_WORDS) {
        if (o->ncounts) {
            ss_vocab *counts[2], *v[2];
            int skip[2] = {0, 1};
            if (ss__tx_read_counts(c, &j, 0, skip, o->counts, o->ncounts, counts)) goto done;
            int r = ss__tx_vocabs_from_counts(c, counts, o->min_count, o->max_vocab, 0, skip, v);
            ss__vocab_free(counts[0]);
            ss__vocab_free(counts[1]);
            if (r) goto done;
            vocab = v[0];
        } else if (o->vocab_from) {
            if (ss__tx_vocab_load(c, &vocab, o->vocab_from, "tokens")) goto done;
        } else if (ss__conv_opts(c)->append) {
            if (ss__tx_vocab_load(c, &vocab, ss__conv_opts(c)->output, "tokens")) goto done;
        } else {
            ss_vocab *v[2];
            int skip[2] = {0, 1};
            if (ss__tx_build_vocabs(c, &j, ss__conv_opts(c)->threads, o->min_count, o->max_vocab, 0,
                                    skip, v))
                goto done;
            vocab = v[0];
        }
        j.tok[0].vocab = vocab;
    }
    rc = ss__tx_prepare_tokens(c, &j.tok[0], "tokens");
    if (!rc) rc = ss__tx_run(c, &j);
done:
    release_inputs(c, &j);
    ss__tx_wordids_free(&j);
    free(j.blocks);
    ss__vocab_free(vocab);
    ss__spm_free(spm);
    return rc;
}

static void text_usage(FILE *out) {
    fputs("usage: seqstore convert text FILE... -o STORE [options]\n"
          "One example per line (default) or per document; FILE may be '-' (stdin) or\n"
          "*.gz. Lines end at '\\n'.\n"
          "  --tokens KIND     bytes (u8, default) | chars (Unicode code points, u32) |\n"
          "                    words (whitespace-separated, vocabulary built in a first\n"
          "                    pass) | ids (integer token ids, e.g. from BPE)\n"
          "  --tokenizer spm:MODEL  subword ids of a SentencePiece model (as spm_encode);\n"
          "                    --bos/--eos use the model's ids; attribute 'vocab' holds\n"
          "                    its pieces, 'tokens.eod_id' etc. its special ids\n"
          "  --docs            one example per document: documents are separated by\n"
          "                    one or more blank lines\n"
          "  --doc-sep LINE    every line equal to LINE ends a document, so two in a\n"
          "                    row make an empty one (kept); the last document needs\n"
          "                    no LINE after it (e.g. --doc-sep % for fortune files)\n"
          "  --skip-empty      skip blank (empty or whitespace-only) lines or\n"
          "                    documents; the summary says how many\n"
          "  --bos, --eos      add a begin / end of sequence token to every example\n"
          "                    (bytes: 256/257 and u16; chars: 0x110000/0x110001;\n"
          "                    ids: vocab-size and after; words: <bos>/<eos>)\n"
          "words:\n"
          "  --min-count N     keep words seen at least N times (default 1)\n"
          "  --max-vocab N     at most N tokens including <pad>=0 <unk>=1 <bos>=2 <eos>=3\n"
          "  --vocab FROM      reuse the vocabulary of store FROM (attribute 'vocab') or\n"
          "                    of a text file with one token per line (id = line - 1)\n"
          "  --count-only      write the word counts of this --shard K/N (all without\n"
          "                    --shard) to -o FILE instead of a store (job arrays:\n"
          "                    -o counts/K.counts)\n"
          "  --counts PATH     build the vocabulary from the counts files PATH (a file,\n"
          "                    or a directory: its *.counts files; repeatable) instead\n"
          "                    of counting: they must cover shards 0..N-1 of these\n"
          "                    inputs and options, and the vocabulary (with --min-count,\n"
          "                    --max-vocab) is then that of a single-process run\n"
          "ids:\n"
          "  --vocab-size N    every id must be < N; the dtype is the smallest that\n"
          "                    holds N (plus --bos/--eos); without it, u32\n"
          "The store gets field 'tokens' and attributes 'tokens.tokens' (the KIND),\n"
          "'vocab' (words: one token per line in id order), 'tokens.bos'/'tokens.eos'.\n",
          out);
}

/* Parse the options of `convert text`; returns 0 or 2. */
static int parse_text_options(ss_conv *c, int argc, char **argv, tx_text_options *o) {
    memset(o, 0, sizeof *o);
    tx_vocab_args va = TX_VOCAB_ARGS(o);
    if (ss__tx_vocab_args_begin(c, &va, &o->inputs, argc)) return 1;
    int only_files = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int k;
        if (only_files || a[0] != '-' || !strcmp(a, "-")) {
            o->inputs[o->ninputs++] = argv[i];
        } else if (!strcmp(a, "--")) {
            only_files = 1;
        } else if (!strcmp(a, "--tokens")) {
            if (!v || (o->kind = ss__tx_parse_kind(v)) < 0)
                return ss__conv_usage_error(c, "--tokens needs bytes, chars, words or ids");
            i++;
        } else if (!strcmp(a, "--tokenizer")) {
            if (ss__tx_spm_option(c, v, &o->spm_model)) return 2;
            o->kind = TX_SPM;
            i++;
        } else if (!strcmp(a, "--docs")) {
            o->mode = TX_DOCS_BLANK;
        } else if (!strcmp(a, "--doc-sep")) {
            if (!v) return ss__conv_usage_error(c, "--doc-sep needs a separator line");
            o->mode = *v ? TX_DOCS_SEP : TX_DOCS_BLANK;
            o->sep = v;
            if (strchr(v, '\n')) return ss__conv_usage_error(c, "--doc-sep: one line only");
            i++;
        } else if (!strcmp(a, "--skip-empty")) {
            o->skip_empty = 1;
        } else if ((k = ss__tx_vocab_option(c, &va, a, v, &i)) != 0) {
            if (k == 2) return 2;
        } else {
            return ss__conv_usage_error(c, "unknown option '%s'", a);
        }
    }
    if (!o->ninputs) return ss__conv_usage_error(c, "no input file");
    if (o->spm_model && o->kind != TX_SPM)
        return ss__conv_usage_error(c, "--tokenizer and --tokens exclude each other");
    if (o->kind != TX_WORDS && (o->vocab_from || o->max_vocab || o->min_count != 1))
        return ss__conv_usage_error(c, "--vocab, --min-count and --max-vocab need --tokens words");
    if (o->kind != TX_IDS && o->vocab_size)
        return ss__conv_usage_error(c, "--vocab-size needs --tokens ids");
    if (o->vocab_from && (o->max_vocab || o->min_count != 1))
        return ss__conv_usage_error(c, "--vocab excludes --min-count and --max-vocab");
    if (o->kind == TX_IDS && (o->bos || o->eos) && !o->vocab_size)
        return ss__conv_usage_error(c, "--bos/--eos with --tokens ids need --vocab-size");
    return ss__tx_check_count_options(c, o->kind == TX_WORDS, o->count_only, o->ncounts,
                                      o->vocab_from != NULL);
}

static int run_text(ss_conv *c, int argc, char **argv) {
    tx_text_options o;
    int rc = parse_text_options(c, argc, argv, &o);
    if (!rc) rc = ss__tx_text_convert(c, &o);
    free(o.inputs);
    free(o.counts);
    return rc;
}

const ss_converter ss__converter_text = {
    "text", "text corpora: one example per line or document; bytes, chars, words or ids", run_text,
    text_usage};

