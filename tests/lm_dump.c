/* SPDX-License-Identifier: BSD-2-Clause */
/* lm_dump.c - write every LM sample of a store to one file, for
 * tests/lm/megatron_samples.py to compare with Megatron-Core's GPTDataset.
 *
 *   lm_dump STORE FIELD L SEED NUM_SAMPLES FLAGS EOD OUT
 *
 * NUM_SAMPLES "eN" asks for N epochs instead. EOD is an integer or "store"
 * (SS_LM_EOD_FROM_STORE). OUT gets 8 int64 (S, E, T, documents,
 * separate_final_epoch, eod, L, build nanoseconds), then for all S samples
 * in order: tokens (int64, S*L), labels (int64, S*L),
 * loss_mask (float32, S*L), position_ids (int64, S*L), segment_ids (int32,
 * S*L), cu_seqlens (int32, S*(L+1)), nsegments (int32, S). With OUT "-" only
 * the header is printed (a timing run). */
#include <seqstore.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fail(const char *what) {
    fprintf(stderr, "lm_dump: %s: %s\n", what, ss_error_message());
    return 1;
}

static int write_all(FILE *f, const void *p, size_t size, size_t n) {
    return fwrite(p, size, n, f) == n ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc != 9) {
        fputs("usage: lm_dump STORE FIELD L SEED NUM_SAMPLES FLAGS EOD OUT\n", stderr);
        return 2;
    }
    ss_store *s;
    uint32_t field;
    if (ss_open(&s, argv[1], 0) || ss_field_index(&field, s, argv[2])) return fail(argv[1]);
    ss_lm_options o = SS_LM_OPTIONS_INIT;
    o.seq_length = strtoull(argv[3], NULL, 10);
    o.seed = strtoull(argv[4], NULL, 10);
    if (argv[5][0] == 'e')
        o.num_epochs = strtoull(argv[5] + 1, NULL, 10);
    else
        o.num_samples = strtoull(argv[5], NULL, 10);
    o.flags = (unsigned)strtoul(argv[6], NULL, 0);
    if (strcmp(argv[7], "store") != 0) o.eod = strtoll(argv[7], NULL, 10);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ss_lm *lm;
    if (ss_lm_create(&lm, s, field, &o)) return fail("ss_lm_create");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ss_lm_info info;
    ss_lm_get_info(&info, lm);
    int64_t head[8] = {(int64_t)info.num_samples, (int64_t)info.num_epochs,
                       (int64_t)info.tokens_per_epoch, (int64_t)info.documents,
                       info.separate_final_epoch, info.eod, (int64_t)o.seq_length,
                       (int64_t)((t1.tv_sec - t0.tv_sec) * 1000000000ll +
                                 (t1.tv_nsec - t0.tv_nsec))};
    if (strcmp(argv[8], "-") == 0) {
        for (int k = 0; k < 8; k++) printf("%" PRId64 "%c", head[k], k == 7 ? '\n' : ' ');
        ss_lm_free(lm);
        ss_close(s);
        return 0;
    }
    uint64_t S = info.num_samples, L = o.seq_length, n = S * L;
    ss_lm_batch b = {malloc(n * 8 + 8), malloc(n * 8 + 8), malloc(n * 4 + 4), malloc(n * 8 + 8),
                     malloc(n * 4 + 4), malloc(S * (L + 1) * 4 + 4), malloc(S * 4 + 4)};
    uint64_t *idx = malloc(S * 8 + 8);
    if (!b.tokens || !b.labels || !b.loss_mask || !b.position_ids || !b.segment_ids ||
        !b.cu_seqlens || !b.nsegments || !idx)
        return fail("malloc");
    for (uint64_t i = 0; i < S; i++) idx[i] = i;
    if (ss_lm_get(&b, lm, idx, S)) return fail("ss_lm_get");
    FILE *f = fopen(argv[8], "wb");
    if (!f || write_all(f, head, 8, 8) || write_all(f, b.tokens, 8, n) ||
        write_all(f, b.labels, 8, n) || write_all(f, b.loss_mask, 4, n) ||
        write_all(f, b.position_ids, 8, n) || write_all(f, b.segment_ids, 4, n) ||
        write_all(f, b.cu_seqlens, 4, S * (L + 1)) || write_all(f, b.nsegments, 4, S) ||
        fclose(f)) {
        perror(argv[8]);
        return 1;
    }
    free(b.tokens), free(b.labels), free(b.loss_mask), free(b.position_ids);
    free(b.segment_ids), free(b.cu_seqlens), free(b.nsegments), free(idx);
    ss_lm_free(lm);
    ss_close(s);
    return 0;
}
