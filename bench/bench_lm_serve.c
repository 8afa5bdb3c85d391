/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_lm_serve.c - serving LM batches (seqstore/lm.h): batches of 8 rows
 * of L tokens (int64 tokens, labels and position ids, int32 cu_seqlens and
 * nsegments: Megatron's layout with its three resets) at random sample
 * indices through ss_lm_get() into buffers made once, against memcpy() of
 * the same bytes from a 256 MiB source (each batch from a new place, so
 * that neither comes from the cache). Rounds alternate; medians of the
 * thread's CPU time per batch, which a loaded machine disturbs less than
 * the wall clock, and of the wall time.
 *
 *   bench_lm_serve STORE FIELD L EOD [ROUNDS [BATCHES]] */
#include "bench_common.h"

#include <inttypes.h>
#include <seqstore.h>

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fputs("usage: bench_lm_serve STORE FIELD L EOD [ROUNDS [BATCHES]]\n", stderr);
        return 2;
    }
    int rounds = bench_rounds(argc > 5 ? atoi(argv[5]) : 0, 7);
    int nb = argc > 6 ? atoi(argv[6]) : bench_quick() ? 20 : 400;
    ss_store *s;
    uint32_t field;
    ss_lm *lm;
    ss_lm_info info;
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.seq_length = strtoull(argv[3], NULL, 10);
    o.eod = strtoll(argv[4], NULL, 10);
    o.seed = 1234;
    o.flags = SS_LM_RESET_POSITION_IDS | SS_LM_RESET_ATTENTION_MASK | SS_LM_EOD_MASK_LOSS;
    if (ss_open(&s, argv[1], 0) || ss_field_index(&field, s, argv[2]) ||
        ss_lm_create(&lm, s, field, &o) || ss_lm_get_info(&info, lm)) {
        fprintf(stderr, "bench_lm_serve: %s\n", ss_error_message());
        return 1;
    }
    const uint64_t B = 8, L = o.seq_length, S = info.num_samples;
    int64_t *tokens = malloc(B * L * 8), *labels = malloc(B * L * 8), *pos = malloc(B * L * 8);
    int32_t *cu = malloc(B * (L + 1) * 4), *nseg = malloc(B * 4);
    size_t nbytes = 3 * B * L * 8 + B * (L + 1) * 4 + B * 4, src_bytes = (size_t)256 << 20;
    unsigned char *src = malloc(src_bytes), *dst = malloc(nbytes);
    uint64_t *idx = malloc(B * sizeof *idx);
    double *c_ss = malloc(rounds * sizeof(double)), *c_mc = malloc(rounds * sizeof(double)),
           *w_ss = malloc(rounds * sizeof(double)), *w_mc = malloc(rounds * sizeof(double));
    if (!tokens || !labels || !pos || !cu || !nseg || !src || !dst || !idx || !c_ss || !c_mc ||
        !w_ss || !w_mc)
        return 1;
    for (size_t k = 0; k < src_bytes; k++) src[k] = (unsigned char)(k * 2654435761u >> 13);
    memset(dst, 0, nbytes);
    ss_lm_batch b = {tokens, labels, NULL, pos, NULL, cu, nseg};
    uint64_t state = 7;
    size_t at = 0;
    double load0 = bench_loadavg();
    for (int r = 0; r < rounds; r++) {
        double w0 = bench_now(), c0 = cpu_now();
        for (int k = 0; k < nb; k++) {
            for (uint64_t j = 0; j < B; j++) {
                state = state * 6364136223846793005ull + 1442695040888963407ull;
                idx[j] = (state >> 17) % S;
            }
            if (ss_lm_get(&b, lm, idx, B)) {
                fprintf(stderr, "bench_lm_serve: %s\n", ss_error_message());
                return 1;
            }
        }
        c_ss[r] = 1e6 * (cpu_now() - c0) / nb, w_ss[r] = 1e6 * (bench_now() - w0) / nb;
        w0 = bench_now(), c0 = cpu_now();
        for (int k = 0; k < nb; k++) {
            if (at + nbytes > src_bytes) at = 0;
            memcpy(dst, src + at, nbytes);
            at += nbytes;
            __asm__ volatile("" : : "r"(dst) : "memory");
        }
        c_mc[r] = 1e6 * (cpu_now() - c0) / nb, w_mc[r] = 1e6 * (bench_now() - w0) / nb;
    }
    bench_mr css = bench_stats(c_ss, rounds), cmc = bench_stats(c_mc, rounds);
    bench_mr wss = bench_stats(w_ss, rounds), wmc = bench_stats(w_mc, rounds);
    char f1[96], f2[96], f3[96], f4[96];
    printf("%s: %" PRIu64 " samples, batches of %" PRIu64 " x %" PRIu64 " (%zu bytes); load %.2f "
           "-> %.2f; %d rounds of %d batches\n",
           argv[1], S, B, L, nbytes, load0, bench_loadavg(), rounds, nb);
    printf("ss_lm_get: %s us CPU, %s us wall per batch\n",
           bench_fmt(f1, sizeof f1, "%.1f", css), bench_fmt(f2, sizeof f2, "%.1f", wss));
    printf("memcpy:    %s us CPU, %s us wall per batch\n",
           bench_fmt(f3, sizeof f3, "%.1f", cmc), bench_fmt(f4, sizeof f4, "%.1f", wmc));
    printf("ss_lm_get / memcpy speed: %.2fx (CPU), %.2fx (wall)\n", cmc.med / css.med,
           wmc.med / wss.med);
    ss_lm_free(lm);
    ss_close(s);
    return 0;
}
