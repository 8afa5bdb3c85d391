/* SPDX-License-Identifier: BSD-2-Clause */
/* convert_parallel.c - `seqstore convert parallel SRC TGT -o STORE`: two
 * line-aligned files (machine translation) become fields `src` and `tgt` of
 * one example per line pair. */
#include "spm_text.h"
#include "text.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void parallel_usage(FILE *out) {
    fputs("usage: seqstore convert parallel SRC TGT -o STORE [options]\n"
          "Line k of SRC and line k of TGT become fields 'src' and 'tgt' of example k;\n"
          "the files must have the same number of lines. The source of an example is\n"
          "SRC:LINE.\n"
          "  --tokens KIND       bytes | chars | words | ids, both sides (default bytes)\n"
          "  --src-tokens KIND, --tgt-tokens KIND   per side\n"
          "  --tokenizer spm:MODEL   SentencePiece ids, both sides (one model; its\n"
          "                      pieces in 'src.vocab' and 'tgt.vocab')\n"
          "  --bos, --eos        add begin / end of sequence tokens (both sides)\n"
          "words (each side has its own vocabulary, attributes 'src.vocab' and\n"
          "'tgt.vocab', unless --shared-vocab: one vocabulary 'vocab' for both):\n"
          "  --shared-vocab      one vocabulary built from both sides\n"
          "  --min-count N, --max-vocab N   as for 'convert text'\n"
          "  --src-vocab FROM, --tgt-vocab FROM, --vocab FROM (both)\n"
          "                      reuse a vocabulary (store or one-token-per-line file)\n"
          "  --count-only, --counts PATH   shared vocabularies over --shard jobs, as for\n"
          "                      'convert text'\n"
          "ids:\n"
          "  --vocab-size N      every id must be < N (both sides)\n",
          out);
}

typedef struct par_options {
    int kind[2], bos, eos, shared;
    uint64_t min_count, max_vocab, vocab_size;
    const char *vocab_from[2];
    const char *files[2];
    const char *spm_model; /* --tokenizer spm:MODEL */
    int tokens_given;
    int count_only;      /* --count-only */
    const char **counts; /* --counts PATH... */
    int ncounts;
} par_options;

static int parse_par(ss_conv *c, int argc, char **argv, par_options *o) {
    int nfiles = 0, only_files = 0;
    memset(o, 0, sizeof *o);
    o->min_count = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int k;
        if (only_files || a[0] != '-' || !strcmp(a, "-")) {
            if (nfiles == 2) return ss__conv_usage_error(c, "more than two input files");
            o->files[nfiles++] = a;
        } else if (!strcmp(a, "--")) {
            only_files = 1;
        } else if (!strcmp(a, "--tokens") || !strcmp(a, "--src-tokens") ||
                   !strcmp(a, "--tgt-tokens")) {
            if (!v || (k = ss__tx_parse_kind(v)) < 0)
                return ss__conv_usage_error(c, "%s needs bytes, chars, words or ids", a);
            if (strcmp(a, "--tgt-tokens")) o->kind[0] = k;
            if (strcmp(a, "--src-tokens")) o->kind[1] = k;
            o->tokens_given = 1;
            i++;
        } else if (!strcmp(a, "--tokenizer")) {
            if (ss__tx_spm_option(c, v, &o->spm_model)) return 2;
            o->kind[0] = o->kind[1] = TX_SPM;
            i++;
        } else if (!strcmp(a, "--bos")) {
            o->bos = 1;
        } else if (!strcmp(a, "--eos")) {
            o->eos = 1;
        } else if (!strcmp(a, "--shared-vocab")) {
            o->shared = 1;
        } else if ((k = ss__tx_parse_count_option(c, a, v, &o->min_count, &o->max_vocab,
                                                  &o->vocab_size)) != 0) {
            if (k == 2) return 2;
            i++;
        } else if (!strcmp(a, "--vocab") || !strcmp(a, "--src-vocab") ||
                   !strcmp(a, "--tgt-vocab")) {
            if (!v) return ss__conv_usage_error(c, "%s needs a store or a file", a);
            if (strcmp(a, "--tgt-vocab")) o->vocab_from[0] = v;
            if (strcmp(a, "--src-vocab")) o->vocab_from[1] = v;
            i++;
        } else if (!strcmp(a, "--count-only")) {
            o->count_only = 1;
        } else if (!strcmp(a, "--counts")) {
            if (!v) return ss__conv_usage_error(c, "--counts needs a counts file or directory");
            if (!o->counts && !(o->counts = calloc((size_t)argc, sizeof *o->counts)))
                return ss__conv_error(c, "out of memory");
            o->counts[o->ncounts++] = v;
            i++;
        } else {
            return ss__conv_usage_error(c, "unknown option '%s'", a);
        }
    }
    if (nfiles != 2) return ss__conv_usage_error(c, "needs two input files, SRC and TGT");
    if (o->spm_model && o->tokens_given)
        return ss__conv_usage_error(c, "--tokenizer and --tokens exclude each other");
    for (int s = 0; s < 2; s++) {
        if (o->kind[s] != TX_WORDS && o->vocab_from[s])
            return ss__conv_usage_error(c, "--vocab needs --tokens words");
        if (o->kind[s] == TX_IDS && (o->bos || o->eos) && !o->vocab_size)
            return ss__conv_usage_error(c, "--bos/--eos with --tokens ids need --vocab-size");
    }
    if (o->shared && (o->kind[0] != TX_WORDS || o->kind[1] != TX_WORDS))
        return ss__conv_usage_error(c, "--shared-vocab needs --tokens words on both sides");
    if (o->shared && o->vocab_from[0] != o->vocab_from[1])
        return ss__conv_usage_error(c, "--shared-vocab takes --vocab FROM, not --src/--tgt-vocab");
    return ss__tx_check_count_options(c, o->kind[0] == TX_WORDS || o->kind[1] == TX_WORDS,
                                      o->count_only, o->ncounts,
                                      o->vocab_from[0] || o->vocab_from[1]);
}

static int convert_parallel(ss_conv *c, const par_options *op) {
    par_options o = *op;
    int rc;
    static const char *const names[2] = {"src", "tgt"};
    tx_input in[2];
    tx_job j;
    ss_vocab *vocab[2] = {NULL, NULL};
    ss_spm *spm = NULL;
    if (o.spm_model && ss__tx_spm_load(c, &spm, o.spm_model)) return 1;
    memset(in, 0, sizeof in);
    memset(&j, 0, sizeof j);
    j.nsides = 2;
    j.mode = TX_LINES;
    j.inputs = in;
    j.ninputs = 2;
    rc = 1;
    for (int s = 0; s < 2; s++) {
        char err[256];
        uint32_t src = ss__conv_add_source(c, o.files[s]);
        if (ss__tx_input_load(&in[s], o.files[s], err, sizeof err)) {
            ss__conv_error(c, "%s: %s", o.files[s], err);
            goto done;
        }
        in[s].source = src;
        in[s].ok = 1;
        j.field[s] = names[s];
        j.tok[s].kind = o.kind[s];
        j.tok[s].bos_on = o.bos;
        j.tok[s].eos_on = o.eos;
        j.tok[s].vocab_size = o.kind[s] == TX_IDS ? o.vocab_size : 0;
        j.tok[s].spm = spm;
        j.tok[s].spm_model = o.spm_model;
        j.vocab_attr[s] = o.shared ? (s ? NULL : "vocab") : (s ? "tgt.vocab" : "src.vocab");
    }
    uint64_t n0 = ss__tx_count_lines(in[0].data, in[0].size);
    uint64_t n1 = ss__tx_count_lines(in[1].data, in[1].size);
    if (n0 != n1) {
        ss__conv_error(
            c, "the files are not aligned: '%s' has %" PRIu64 " lines, '%s' has %" PRIu64 " lines",
            o.files[0], n0, o.files[1], n1);
        goto done;
    }
    if (ss__tx_split_shard(c, &j)) {
        ss__conv_error(c, "out of memory");
        goto done;
    }
    int need_count[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
        if (o.kind[s] != TX_WORDS) continue;
        if (o.vocab_from[s]) {
            if (o.shared && s) continue;
            if (ss__tx_vocab_load(c, &vocab[s], o.vocab_from[s], o.shared ? names[0] : names[s]))
                goto done;
        } else if (ss__conv_opts(c)->append) {
            if (o.shared && s) continue;
            if (ss__tx_vocab_load(c, &vocab[s], ss__conv_opts(c)->output,
                                  o.shared ? names[0] : names[s]))
                goto done;
        } else {
            need_count[s] = 1;
        }
    }
    if (o.count_only) {
        int skip[2] = {!need_count[0], !need_count[1]};
        rc = ss__tx_write_counts(c, &j, ss__conv_opts(c)->threads, o.shared, skip);
        goto done;
    }
    if (need_count[0] || need_count[1]) {
        ss_vocab *built[2], *counts[2];
        int skip[2] = {!need_count[0], !need_count[1]};
        if (o.ncounts) {
            if (ss__tx_read_counts(c, &j, o.shared, skip, o.counts, o.ncounts, counts)) goto done;
            int r = ss__tx_vocabs_from_counts(c, counts, o.min_count, o.max_vocab, o.shared, skip,
                                              built);
            ss__vocab_free(counts[0]);
            ss__vocab_free(counts[1]);
            if (r) goto done;
        } else if (ss__tx_build_vocabs(c, &j, ss__conv_opts(c)->threads, o.min_count, o.max_vocab,
                                       o.shared, skip, built)) {
            goto done;
        }
        for (int s = 0; s < 2; s++)
            if (need_count[s] && !(o.shared && s)) vocab[s] = built[s];
    }
    for (int s = 0; s < 2; s++) {
        j.tok[s].vocab = o.shared ? vocab[0] : vocab[s];
        if (ss__tx_prepare_tokens(c, &j.tok[s], names[s])) goto done;
    }
    rc = ss__tx_run(c, &j);
done:
    ss__tx_input_release(&in[0]);
    ss__tx_input_release(&in[1]);
    ss__tx_wordids_free(&j);
    free(j.blocks);
    ss__vocab_free(vocab[0]);
    ss__vocab_free(vocab[1]);
    ss__spm_free(spm);
    return rc;
}

static int run_parallel(ss_conv *c, int argc, char **argv) {
    par_options o;
    int rc = parse_par(c, argc, argv, &o);
    if (!rc) rc = convert_parallel(c, &o);
    free(o.counts);
    return rc;
}

const ss_converter ss__converter_parallel = {
    "parallel", "parallel corpora: two line-aligned files become fields src and tgt", run_parallel,
    parallel_usage};
