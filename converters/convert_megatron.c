/* SPDX-License-Identifier: BSD-2-Clause */
/* convert_megatron.c - `seqstore convert megatron PREFIX... -o STORE`:
 * Megatron-LM / fairseq indexed datasets (PREFIX.bin + PREFIX.idx, see
 * megatron.h). Each sequence becomes one example; documents are kept twice:
 * a field `document` (u64, the 0-based document of each sequence, counted on
 * across prefixes) for grouping, and the exact doc_idx as attribute
 * `megatron.doc_idx` (u64 array; several prefixes are joined the way
 * Megatron's merge does) so that `seqstore export megatron` writes the same
 * .idx back. */
#include "convert.h"
#include "megatron.h"
#include "text.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void megatron_usage(FILE *out) {
    fputs("usage: seqstore convert megatron PREFIX... -o STORE\n"
          "Reads PREFIX.idx and PREFIX.bin (Megatron-LM / fairseq MMIDIDX, version 1).\n"
          "Each sequence becomes one example: field 'tokens' (the dataset's dtype) and\n"
          "field 'document' (u64: which document the sequence belongs to, counted on\n"
          "across PREFIXes). Attributes: 'megatron.doc_idx' (u64 array, the document\n"
          "indices, several PREFIXes joined as Megatron's merge does) and\n"
          "'megatron.dtype_code'. 'seqstore export megatron' writes the dataset back.\n",
          out);
}

typedef struct mg_input {
    tx_input idx, bin;
    mg_index x;
    uint32_t source;
    int ok;
} mg_input;

/* Load and check PREFIX.idx / PREFIX.bin. @return 0, or -1 (message in err). */
static int load_prefix(mg_input *in, const char *prefix, char *err, size_t errlen) {
    char path[4096], e[256];
    snprintf(path, sizeof path, "%s.bin", prefix);
    if (ss__tx_input_load(&in->bin, path, e, sizeof e)) {
        snprintf(err, errlen, "%.1024s: %s", path, e);
        return -1;
    }
    snprintf(path, sizeof path, "%s.idx", prefix);
    if (ss__tx_input_load(&in->idx, path, e, sizeof e)) {
        snprintf(err, errlen, "%.1024s: %s", path, e);
        return -1;
    }
    if (ss__mg_index_parse(&in->x, in->idx.data, in->idx.size, in->bin.size, e, sizeof e)) {
        snprintf(err, errlen, "%.1024s.idx: %s", prefix, e);
        return -1;
    }
    return 0;
}

/* doc_idx of all ok inputs, joined: each later input's indices (after its
 * leading 0) shifted by the sequences before it. */
static uint64_t *join_doc_idx(const mg_input *in, int n, size_t *count) {
    size_t total = 1;
    for (int i = 0; i < n; i++)
        if (in[i].ok) total += in[i].x.ndoc - 1;
    uint64_t *d = malloc(total * sizeof *d), base = 0;
    if (!d) return NULL;
    size_t k = 0;
    d[k++] = 0;
    for (int i = 0; i < n; i++) {
        if (!in[i].ok) continue;
        for (uint64_t j = 1; j < in[i].x.ndoc; j++) d[k++] = base + ss__mg_doc(&in[i].x, j);
        base += in[i].x.nseq;
    }
    *count = k;
    return d;
}

/* Append the sequences of one input; *doc counts documents on. */
static int append_input(ss_conv *c, const mg_input *in, uint64_t *skip, uint64_t *doc) {
    const mg_index *x = &in->x;
    uint64_t k = 0; /* doc_idx entry of the current document's start */
    for (uint64_t i = 0; i < x->nseq; i++) {
        while (k + 1 < x->ndoc && ss__mg_doc(x, k + 1) <= i) k++;
        uint64_t d = *doc + k;
        uint64_t len = ss__mg_seq_size(x, i); /* an empty .bin has no mapping */
        ss_value v[2] = {{len ? in->bin.data + ss__mg_seq_pointer(x, i) : NULL, len}, {&d, 1}};
        if (*skip) {
            (*skip)--;
            continue;
        }
        if (ss__conv_append_at(c, v, in->source, i + 1, i)) return 1;
        ss__conv_progress(c, ss__mg_seq_size(x, i) * x->itemsize + 12);
    }
    /* the next input's first document follows this input's last one (its
     * doc_idx ends at its sequence count, ss__mg_index_parse()) */
    *doc += x->ndoc - 1;
    return 0;
}

static int run_inputs(ss_conv *c, mg_input *in, int n) {
    int first = -1;
    for (int i = 0; i < n; i++) {
        if (!in[i].ok) continue;
        if (first < 0) first = i;
        if (in[i].x.code != in[first].x.code)
            return ss__conv_error(c, "the datasets differ in dtype: code %u and code %u",
                                  in[first].x.code, in[i].x.code);
    }
    if (first < 0) return ss__conv_error(c, "no readable dataset");
    ss_field f[2] = {{.name = "tokens", .dtype = in[first].x.dtype, .sequence = 1},
                     {.name = "document", .dtype = SS_U64, .sequence = 0}};
    ss_schema schema = {2, f};
    uint64_t skip = 0, doc = 0, total = 0;
    if (ss__conv_begin(c, &schema, &skip)) return 1;
    size_t nd;
    uint64_t *d = join_doc_idx(in, n, &nd);
    if (!d) return ss__conv_error(c, "out of memory");
    int rc = ss__conv_set_attr(c, "megatron.doc_idx", SS_U64, d, nd * sizeof *d);
    free(d);
    uint8_t code = in[first].x.code;
    if (rc || ss__conv_set_attr(c, "megatron.dtype_code", SS_U8, &code, 1)) return 1;
    for (int i = 0; i < n; i++) total += in[i].ok ? in[i].bin.size + in[i].idx.size : 0;
    ss__conv_set_total(c, total);
    for (int i = 0; i < n; i++)
        if (in[i].ok && append_input(c, &in[i], &skip, &doc)) return 1;
    return 0;
}

static int run_megatron(ss_conv *c, int argc, char **argv) {
    int n = 0, only = 0;
    for (int i = 1; i < argc; i++) {
        if (!only && !strcmp(argv[i], "--")) {
            only = 1;
            continue;
        }
        if (!only && argv[i][0] == '-')
            return ss__conv_usage_error(c, "unknown option '%s'", argv[i]);
        argv[1 + n++] = argv[i];
    }
    if (!n) return ss__conv_usage_error(c, "no dataset PREFIX");
    mg_input *in = calloc((size_t)n, sizeof *in);
    if (!in) return ss__conv_error(c, "out of memory");
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        char err[1536];
        in[i].source = ss__conv_add_source(c, argv[1 + i]);
        char path[4096];
        snprintf(path, sizeof path, "%s.idx", argv[1 + i]); /* --resume: the same files */
        ss__conv_add_checked(c, path);
        snprintf(path, sizeof path, "%s.bin", argv[1 + i]);
        ss__conv_add_checked(c, path);
        if (load_prefix(&in[i], argv[1 + i], err, sizeof err)) {
            rc = ss__conv_bad(c, argv[1 + i], 0, "%s", err);
            continue;
        }
        in[i].ok = 1;
    }
    /* --shard: an input is sliced by sequence number (monotone, unlike .bin
     * offsets a writer may have reordered) */
    for (int i = 0; i < n && !rc; i++)
        rc = ss__conv_shard_size(c, in[i].source, in[i].ok ? in[i].x.nseq : 0);
    if (!rc) rc = run_inputs(c, in, n);
    for (int i = 0; i < n; i++) {
        ss__tx_input_release(&in[i].idx);
        ss__tx_input_release(&in[i].bin);
    }
    free(in);
    return rc;
}

const ss_converter ss__converter_megatron = {
    "megatron", "Megatron-LM / fairseq indexed datasets (PREFIX.bin + PREFIX.idx)", run_megatron,
    megatron_usage};
