/* SPDX-License-Identifier: BSD-2-Clause */
/* test_lm_threads.c - the LM sample index (seqstore/lm.h) is the same for
 * any thread count: built on 1 thread (the document shuffle, then
 * Megatron's walk for the sample index, statement for statement) and on 2,
 * 3 and 4 (the sample index computed behind the shuffle's front, from each
 * document's tokens before it), the document index, sample index, sample
 * shuffle and split count are equal byte for byte, over empty documents,
 * appended and stored eods, several L, one or more epochs with and without
 * separate_final_epoch. */
#include "testutil.h"
#include "lm_internal.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

static void write_docs(const char *path, uint64_t n, uint64_t *st) {
    ss_field f[1] = {{"tokens", SS_U16, 1, 0, {0}}};
    ss_schema schema = {1, f};
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_FORCE;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &wo));
    uint16_t buf[64];
    for (uint64_t d = 0; d < n; d++) {
        uint64_t len = ss_test_rand(st) % 7 == 0 ? 0 : ss_test_rand(st) % 50;
        for (uint64_t k = 0; k < len; k++) buf[k] = (uint16_t)(5 + ss_test_rand(st) % 1000);
        if (len) buf[len - 1] = 1; /* documents end with eod 1 when kept */
        ss_value v[1] = {{buf, len}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

static ss_lm *built(const ss_store *s, const ss_lm_options *o, int threads) {
    omp_set_num_threads(threads);
    ss_lm *lm;
    CHECK_OK(ss__lm_create(&lm, s, 0, o, 0));
    return lm;
}

int main(void) {
    const char *path = ss_test_path("lm_threads.ss");
    uint64_t st = 11;
    write_docs(path, 70000, &st);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    struct {
        uint64_t L, samples, epochs;
        unsigned flags;
    } cases[] = {
        {7, 0, 1, SS_LM_APPEND_EOD},  {128, 0, 1, SS_LM_APPEND_EOD}, {33, 0, 3, SS_LM_APPEND_EOD},
        {64, 0, 4, 0},                {16, 100000, 0, 0},            {2048, 0, 2, SS_LM_APPEND_EOD},
        {5, 0, 0, SS_LM_APPEND_EOD}, /* and separate_final_epoch: a few samples into epoch 2 */
    };
    int separate_seen = 0, together_seen = 0;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ss_lm_options o = SS_LM_OPTIONS_INIT;
        o.seq_length = cases[c].L, o.num_samples = cases[c].samples, o.num_epochs = cases[c].epochs;
        o.flags = cases[c].flags, o.eod = 1, o.seed = 1000 + c;
        if (c == 6) o.num_samples = 70000 * 25 / 5 + 40; /* a bit past one epoch */
        ss_lm *one = built(s, &o, 1);
        if (one->separate) separate_seen++;
        else if (one->epochs > 1) together_seen++;
        for (int t = 2; t <= 4; t++) {
            ss_lm *many = built(s, &o, t);
            uint64_t S = one->nsamples, nd = one->epochs * one->ndocs;
            CHECK(many->nsamples == S && many->epochs == one->epochs &&
                  many->separate == one->separate);
            CHECK(!memcmp(one->doc, many->doc, nd * sizeof *one->doc));
            for (uint64_t k = 0; k < 2 * (S + 1); k++)
                if (one->sample[k] != many->sample[k]) {
                    fprintf(stderr, "case %zu, %d threads: sample entry %llu of %llu: %lld, not %lld\n",
                            c, t, (unsigned long long)k, (unsigned long long)(2 * (S + 1)),
                            (long long)many->sample[k], (long long)one->sample[k]);
                    CHECK(0);
                }
            CHECK(!memcmp(one->shuffle, many->shuffle, S * sizeof *one->shuffle));
            CHECK_EQ_U64(one->split, many->split);
            ss_lm_free(many);
        }
        ss_lm_free(one);
    }
    CHECK(separate_seen > 0 && together_seen > 0);
    ss_close(s);
    puts("ok");
    return 0;
}
