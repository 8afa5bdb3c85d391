/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_text.c - libFuzzer target for the text converters' parsers: line and
 * document splitting, UTF-8 decoding, word and id tokenization
 * (converters/text_*.c, utf8.c, vocab.c).
 *
 * The first input byte chooses the tokens, the boundaries and the options;
 * the rest is the text. Checks: (1) cutting the input into blocks of any size
 * gives exactly the examples and errors of one whole block (the property the
 * parallel converter relies on); (2) decoded UTF-8 re-encodes to the same
 * bytes; (3) with byte tokens, one example per line, the examples are the
 * lines. */
#include "text_harness.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ss_vocab *fuzz_vocab(void) {
    static ss_vocab *v;
    if (!v) {
        ss_vocab *counts = NULL;
        if (ss__vocab_new(&counts)) abort();
        ss__vocab_count(counts, (const uint8_t *)"a", 1, 5);
        ss__vocab_count(counts, (const uint8_t *)"bb", 2, 2);
        if (ss__vocab_build(&v, counts, 1, 0)) abort();
        ss__vocab_free(counts);
    }
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    uint8_t opt = data[0], cut = data[1];
    data += 2;
    size -= 2;

    /* UTF-8: decode, re-encode */
    uint32_t *cps = malloc((size + 1) * sizeof *cps);
    size_t n = 0, bad = 0;
    if (!cps) return 0;
    if (ss__utf8_decode(cps, &n, &bad, data, size) == 0) {
        char *back = malloc(4 * n + 1);
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            size_t k = ss__utf8_encode(back + m, cps[i]);
            if (!k) abort();
            m += k;
        }
        if (m != size || memcmp(back, data, size)) abort();
        free(back);
    } else if (bad >= size || n > bad) {
        abort();
    }
    free(cps);

    /* the engine, on two inputs (the text cut at a point chosen by `cut`) */
    size_t split = size ? (size_t)cut * size / 255 : 0;
    tx_input in[2];
    memset(in, 0, sizeof in);
    in[0] = (tx_input){.path = "a", .data = data, .size = split, .ok = 1};
    in[1] = (tx_input){.path = "b", .data = data + split, .size = size - split, .ok = 1};
    tx_job j;
    memset(&j, 0, sizeof j);
    j.nsides = 1;
    j.field[0] = "tokens";
    j.mode = (opt >> 2) % 3;
    j.sep = "%";
    j.seplen = 1;
    j.skip_empty = (opt >> 4) & 1;
    j.tok[0].kind = opt & 3;
    j.tok[0].bos_on = (opt >> 5) & 1;
    j.tok[0].eos_on = (opt >> 6) & 1;
    j.tok[0].vocab_size = (opt >> 7) ? 1000 : 0;
    if (j.tok[0].kind == TX_IDS && !j.tok[0].vocab_size) j.tok[0].bos_on = j.tok[0].eos_on = 0;
    j.tok[0].vocab = fuzz_vocab();
    j.inputs = in;
    j.ninputs = 2;
    if (ss__tx_prepare_tokens(NULL, &j.tok[0], "tokens")) abort();
    harness_out whole = {0}, pieces = {0};
    if (harness_run(&j, SIZE_MAX / 4, &whole)) abort();
    if (harness_run(&j, 1 + cut % 17, &pieces)) abort();
    if (whole.n != pieces.n || (whole.n && memcmp(whole.buf, pieces.buf, whole.n))) abort();
    if (j.tok[0].kind == TX_BYTES && j.mode == TX_LINES && !j.skip_empty && !j.tok[0].bos_on &&
        !j.tok[0].eos_on) {
        size_t off = 0;
        for (int f = 0; f < 2; f++) {
            uint64_t line = 0;
            for (size_t a = 0; a < in[f].size;) {
                const uint8_t *nl = memchr(in[f].data + a, '\n', in[f].size - a);
                size_t e = nl ? (size_t)(nl - in[f].data) : in[f].size;
                uint64_t got[2];
                if (off + 16 > whole.n) abort();
                memcpy(got, whole.buf + off, 16);
                if (got[0] != ++line || got[1] != e - a) abort();
                if (memcmp(whole.buf + off + 16, in[f].data + a, e - a)) abort();
                off += 16 + (e - a);
                a = e + 1;
            }
        }
        if (off != whole.n) abort();
    }
    free(whole.buf);
    free(pieces.buf);
    free(j.blocks);
    return 0;
}
