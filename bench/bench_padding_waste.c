/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_padding_waste.c - padding waste (pad elements / all elements) of
 * random batching versus bucket batching at resolutions 1, 4 and 16 and
 * with estimated boundaries of at most 4, 8 and 16 buckets.
 *
 * usage: bench_padding_waste [--markdown] STORE FIELD[,FIELD] [BATCH_SIZE [MAX_TOKENS [SEED]]]
 *
 * No timing figure is quoted (the ms column is only the cost of batching),
 * so one run suffices: the waste depends on the seed alone. --markdown
 * prints README's table (with the date) instead of the detailed one.
 *
 * Converts nothing: it reads the length index of an existing store (e.g.
 * `seqstore convert lines` of /usr/share/games/fortunes). Two batchings:
 *  - fixed: BATCH_SIZE examples per batch (default 32);
 *  - tokens: a token budget of MAX_TOKENS padded elements per batch (default
 *    4096, at least the longest example), fairseq's batch_by_size.
 * "random" shuffles all examples, then batches; "bucket R" batches within the
 * buckets of an in-memory bucket index at resolution R (within-bucket
 * shuffle, batch order shuffled); "estim M" the same with estimated
 * boundaries (ss_bucket_options.max_buckets = M). Waste is 1 - real /
 * padded. */
#include "seqstore.h"

#include "bench_common.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int die(const char *what) {
    fprintf(stderr, "bench_padding_waste: %s: %s\n", what, ss_error_message());
    return 1;
}

/* For --markdown: waste per row (random, then the six bucket indexes) and
 * mode (fixed, tokens), and each row's bucket count. */
static int g_markdown, g_row;
static double g_waste[7][2];
static uint64_t g_buckets[7];

static int report(const char *method, uint64_t nbuckets, const char *mode, ss_batcher *b,
                  const ss_store *s, const uint32_t *fields, size_t nf, double secs) {
    uint64_t real, padded;
    if (ss_batcher_padding(&real, &padded, b, s, fields, nf)) return die("padding");
    double waste = padded ? 1.0 - (double)real / (double)padded : 0.0;
    g_waste[g_row][mode[0] == 't'] = waste;
    g_buckets[g_row] = nbuckets;
    if (g_markdown) return 0;
    char nb[24] = "-";
    if (nbuckets) snprintf(nb, sizeof nb, "%" PRIu64, nbuckets);
    printf("| %-10s | %7s | %-6s | %8" PRIu64 " | %12" PRIu64 " | %12" PRIu64
           " | %6.2f%% | %8.1f |\n",
           method, nb, mode, ss_batcher_count(b), real, padded, 100.0 * waste, secs * 1e3);
    return 0;
}

static void print_markdown(uint64_t bs, uint64_t max_tokens) {
    static const char *const name[7] = {"random",
                                        "bucket, resolution 1",
                                        "bucket, resolution 4",
                                        "bucket, resolution 16",
                                        "estimated boundaries, 4 buckets",
                                        "estimated boundaries, 8 buckets",
                                        "estimated boundaries, 16 buckets"};
    char d[16];
    printf("%s; no timing, so no load:\n\n", bench_date(d, sizeof d));
    printf("| batching | buckets | fixed batch of %" PRIu64 " | token budget %" PRIu64
           " |\n| --- | ---: | ---: | ---: |\n",
           bs, max_tokens);
    for (int r = 0; r < 7; r++) {
        char nb[24] = "–";
        if (r) snprintf(nb, sizeof nb, "%" PRIu64, g_buckets[r]);
        printf("| %s | %s | %.1f%% | %.1f%% |\n", name[r], nb, 100 * g_waste[r][0],
               100 * g_waste[r][1]);
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--markdown") == 0) {
        g_markdown = 1;
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: %s STORE FIELD[,FIELD] [BATCH_SIZE [MAX_TOKENS [SEED]]]\n",
                argv[0]);
        return 2;
    }
    uint64_t bs = argc > 3 ? strtoull(argv[3], NULL, 10) : 32;
    uint64_t max_tokens = argc > 4 ? strtoull(argv[4], NULL, 10) : 4096;
    uint64_t seed = argc > 5 ? strtoull(argv[5], NULL, 10) : 1;
    ss_store *s;
    if (ss_open(&s, argv[1], 0)) return die(argv[1]);
    uint32_t fields[SS_BUCKET_MAX_KEYS];
    size_t nf = 0;
    char names[512];
    snprintf(names, sizeof names, "%s", argv[2]);
    for (char *sv = NULL, *t = strtok_r(names, ",", &sv); t && nf < SS_BUCKET_MAX_KEYS;
         t = strtok_r(NULL, ",", &sv)) {
        if (ss_field_index(&fields[nf], s, t)) return die(t);
        nf++;
    }
    uint64_t n = ss_count(s);
    uint64_t *order = malloc((n ? n : 1) * sizeof *order), *len = malloc((n ? n : 1) * sizeof *len);
    if (!order || !len) return die("out of memory");
    ss_selection *all;
    if (ss_selection_all(&all, n)) return die("selection");
    uint64_t longest = 0;
    for (uint64_t i = 0; i < n; i++) {
        order[i] = i;
        if (ss_lengths_gather(&len[i], s, fields, nf, &order[i], 1)) return die("lengths");
        if (len[i] > longest) longest = len[i];
    }
    if (max_tokens < longest) max_tokens = longest;
    if (!g_markdown) {
        printf("store %s, field %s: %" PRIu64 " examples, longest %" PRIu64 "; fixed batch %" PRIu64
               ", token budget %" PRIu64 ", seed %" PRIu64 "\n\n",
               argv[1], argv[2], n, longest, bs, max_tokens, seed);
        printf("| %-10s | %7s | %-6s | %8s | %12s | %12s | %7s | %8s |\n", "batching", "buckets",
               "mode", "batches", "real", "padded", "waste", "ms");
        printf(
            "|------------|---------|--------|----------|--------------|--------------|---------|"
            "----------|\n");
    }

    ss_batch_options fixed = SS_BATCH_OPTIONS_INIT, tokens = SS_BATCH_OPTIONS_INIT;
    fixed.batch_size = bs;
    tokens.max_tokens = max_tokens;
    const ss_batch_options *modes[2] = {&fixed, &tokens};
    const char *mode_names[2] = {"fixed", "tokens"};

    /* random: a shuffled order, then batches */
    for (int m = 0; m < 2; m++) {
        double t0 = now();
        ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
        so.kind = SS_SAMPLE_SHUFFLE;
        so.seed = seed;
        ss_sampler *sp;
        size_t got;
        if (ss_sampler_create(&sp, all, &so) || ss_sampler_next(order, (size_t)n, &got, sp))
            return die("sampler");
        ss_sampler_free(sp);
        if (ss_lengths_gather(len, s, fields, nf, order, n)) return die("lengths");
        ss_batcher *b;
        if (ss_batcher_create(&b, order, len, n, modes[m])) return die("batcher");
        double t1 = now();
        g_row = 0;
        if (report("random", 0, mode_names[m], b, s, fields, nf, t1 - t0)) return 1;
        ss_batcher_free(b);
    }
    const uint64_t res[6] = {1, 4, 16, 4, 8, 16};
    for (int r = 0; r < 6; r++) {
        double t0 = now();
        ss_bucket *bk;
        ss_bucket_options bo = SS_BUCKET_OPTIONS_INIT;
        if (r < 3)
            bo.resolution = res[r];
        else
            bo.max_buckets = res[r];
        if (ss_bucket_create(&bk, s, fields, nf, &bo)) return die("bucket index");
        double t1 = now();
        g_row = r + 1;
        char name[32];
        snprintf(name, sizeof name, "%s %" PRIu64, r < 3 ? "bucket" : "estim", res[r]);
        for (int m = 0; m < 2; m++) {
            double t2 = now();
            ss_batcher *b;
            if (ss_bucket_batches(&b, bk, s, NULL, modes[m], 1, seed, 0)) return die("bucket");
            double t3 = now();
            if (report(name, ss_bucket_count(bk), mode_names[m], b, s, fields, nf,
                       (t1 - t0) + (t3 - t2)))
                return 1;
            ss_batcher_free(b);
        }
        ss_bucket_free(bk);
    }
    if (g_markdown) print_markdown(bs, tokens.max_tokens);
    ss_selection_free(all);
    free(order);
    free(len);
    ss_close(s);
    return 0;
}
