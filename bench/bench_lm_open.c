/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_lm_open.c - opening a store with a stored LM index (ss_lm_save()):
 * ss_open(), then ss_lm_create() finding the stored index, then the first
 * batch of 8 random samples (which checks the blocks of the index it
 * reaches), each timed on its own, ROUNDS times in one process (each round
 * maps the store afresh; the page cache stays warm).
 *
 *   bench_lm_open STORE FIELD L SEED EOD [ROUNDS]
 *
 * The index must have been stored first (`seqstore index STORE --samples L
 * --by FIELD --seed SEED --eod EOD`); a build instead is an error. */
#include "bench_common.h"

#include <inttypes.h>
#include <seqstore.h>

int main(int argc, char **argv) {
    if (argc < 6) {
        fputs("usage: bench_lm_open STORE FIELD L SEED EOD [ROUNDS]\n", stderr);
        return 2;
    }
    int rounds = bench_rounds(argc > 6 ? atoi(argv[6]) : 0, 11);
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.seq_length = strtoull(argv[3], NULL, 10);
    o.seed = strtoull(argv[4], NULL, 10);
    o.eod = strtoll(argv[5], NULL, 10);
    o.flags = SS_LM_RESET_POSITION_IDS | SS_LM_RESET_ATTENTION_MASK | SS_LM_EOD_MASK_LOSS;
    uint64_t L = o.seq_length, B = 8;
    int64_t *tokens = malloc(B * L * 8), *labels = malloc(B * L * 8), *pos = malloc(B * L * 8);
    int32_t *cu = malloc(B * (L + 1) * 4), *nseg = malloc(B * 4);
    double *t_open = malloc(rounds * sizeof *t_open), *t_lm = malloc(rounds * sizeof *t_lm),
           *t_both = malloc(rounds * sizeof *t_both), *t_first = malloc(rounds * sizeof *t_first);
    if (!tokens || !labels || !pos || !cu || !nseg || !t_open || !t_lm || !t_both || !t_first)
        return 1;
    double load0 = bench_loadavg();
    uint64_t state = 12345, S = 0;
    for (int r = 0; r < rounds; r++) {
        ss_store *s;
        uint32_t field;
        ss_lm *lm;
        ss_lm_info info;
        double a = bench_now();
        if (ss_open(&s, argv[1], 0) || ss_field_index(&field, s, argv[2])) {
            fprintf(stderr, "bench_lm_open: %s\n", ss_error_message());
            return 1;
        }
        double b = bench_now();
        if (ss_lm_create(&lm, s, field, &o) || ss_lm_get_info(&info, lm)) {
            fprintf(stderr, "bench_lm_open: %s\n", ss_error_message());
            return 1;
        }
        double c = bench_now();
        if (!info.stored) {
            fputs("bench_lm_open: no stored index for these options (seqstore index ...)\n",
                  stderr);
            return 1;
        }
        S = info.num_samples;
        uint64_t idx[8];
        for (uint64_t k = 0; k < B; k++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            idx[k] = (state >> 17) % S;
        }
        ss_lm_batch batch = {tokens, labels, NULL, pos, NULL, cu, nseg};
        if (ss_lm_get(&batch, lm, idx, B)) {
            fprintf(stderr, "bench_lm_open: %s\n", ss_error_message());
            return 1;
        }
        double d = bench_now();
        ss_lm_free(lm);
        ss_close(s);
        t_open[r] = 1e3 * (b - a), t_lm[r] = 1e3 * (c - b), t_both[r] = 1e3 * (c - a);
        t_first[r] = 1e3 * (d - c);
    }
    char f1[96], f2[96], f3[96], f4[96];
    printf("%s: %" PRIu64 " samples of L %" PRIu64 "; load %.2f -> %.2f; %d rounds, first round "
           "%.3f ms open + index\n",
           argv[1], S, L, load0, bench_loadavg(), rounds, t_both[0]);
    printf("ss_open %s ms, ss_lm_create (stored) %s ms, both %s ms; first batch of 8 %s ms\n",
           bench_fmt(f1, sizeof f1, "%.3f", bench_stats(t_open, rounds)),
           bench_fmt(f2, sizeof f2, "%.3f", bench_stats(t_lm, rounds)),
           bench_fmt(f3, sizeof f3, "%.3f", bench_stats(t_both, rounds)),
           bench_fmt(f4, sizeof f4, "%.3f", bench_stats(t_first, rounds)));
    return 0;
}
