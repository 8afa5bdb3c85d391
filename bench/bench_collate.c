/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_collate.c - padded collation throughput against memcpy.
 *
 *   bench_collate [DIR] [--json FILE]
 *
 * Bytes of batch written per second by ss_collator_collate() at 1 and 2
 * threads, against memcpy() of the same number of bytes in the same run:
 *  1. tokens: B = 64 examples of 1..512 u16 tokens -> i64, batch-major, right
 *     padding (a fresh random batch each time, from a 4096-example store);
 *  2. EEG: B = 32 windows of 2000 x 21 i16 -> f32 with per-channel gain and
 *     offset (EDF digital -> physical), at random offsets of 16 recordings.
 * Each batch is timed many times and its best time kept (shared, noisy
 * machines); the figures are the sum over the batches of those best times.
 * With --json, writes the batches' shapes and the times for
 * bench/pad_sequence_baseline.py (PyTorch's pad_sequence on the same batches). */
#include <seqstore.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    NTOK = 4096,
    TOKB = 64,
    TOKMAX = 512,
    NREC = 16,
    RECLEN = 60000,
    C = 21,
    EEGB = 32,
    WIN = 2000,
    NBATCH = 64
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int die(int rc) {
    fprintf(stderr, "bench_collate: %s: %s\n", ss_strerror(rc), ss_error_message());
    return 1;
}

static int make_tokens(const char *path) {
    ss_field f[1] = {{"tok", SS_U16, 1, 0, {0}}};
    ss_schema schema = {1, f};
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    int rc = ss_writer_create(&w, path, &schema, &wo);
    if (rc) return rc;
    uint16_t buf[TOKMAX];
    uint64_t s = 1;
    for (int i = 0; i < NTOK && !rc; i++) {
        uint64_t len = 1 + rnd(&s) % TOKMAX;
        for (uint64_t k = 0; k < len; k++) buf[k] = (uint16_t)rnd(&s);
        ss_value v = {buf, len};
        rc = ss_writer_append(w, &v);
    }
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    return rc;
}

static int make_eeg(const char *path) {
    ss_field f[1] = {{"eeg", SS_I16, 1, 1, {C, 0, 0, 0}}};
    ss_schema schema = {1, f};
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    int rc = ss_writer_create(&w, path, &schema, &wo);
    if (rc) return rc;
    int16_t *x = malloc((size_t)RECLEN * C * sizeof *x);
    for (int i = 0; i < NREC && !rc; i++) {
        for (uint64_t k = 0; k < (uint64_t)RECLEN * C; k++)
            x[k] = (int16_t)((k * 31 + (uint64_t)i * 7) % 4000 - 2000);
        ss_value v = {x, RECLEN};
        rc = ss_writer_append(w, &v);
    }
    free(x);
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    return rc;
}

typedef struct result {
    double memcpy_gbs, gbs[2], us_per_batch[2];
    uint64_t bytes; /* per round */
} result;

/* Time every batch `reps` times and keep each batch's best time: the machines
 * here are shared, and a batch that lost its core to another process says
 * nothing about collation. Sum of the best times = one pass over the batches.
 * The same for memcpy of the same bytes, batch by batch. */
static int measure(const ss_store *s, const ss_collate_field *fo, ss_span *const *batches,
                   size_t bsize, int reps, result *res) {
    memset(res, 0, sizeof *res);
    ss_collate_sizes sz;
    uint64_t maxb = 0, sizes[NBATCH];
    ss_collator *c;
    int rc = ss_collator_create(&c, s, fo, 1, NULL);
    for (int i = 0; i < NBATCH && !rc; i++) {
        rc = ss_collator_sizes(&sz, c, batches[i], bsize);
        sizes[i] = sz.data_bytes;
        res->bytes += sz.data_bytes;
        if (sz.data_bytes > maxb) maxb = sz.data_bytes;
    }
    ss_collator_free(c);
    if (rc) return rc;
    double best[NBATCH];
    for (int t = 0; t < 2; t++) {
        ss_collator_options opt = SS_COLLATOR_OPTIONS_INIT;
        opt.threads = t + 1;
        if ((rc = ss_collator_create(&c, s, fo, 1, &opt))) return rc;
        ss_collated_batch b;
        for (int i = 0; i < NBATCH && !rc; i++) {
            rc = ss_collator_collate(&b, c, batches[i], bsize); /* warm up, size buffers */
            best[i] = 1e30;
        }
        for (int rep = 0; rep < reps && !rc; rep++)
            for (int i = 0; i < NBATCH && !rc; i++) {
                double t0 = now();
                rc = ss_collator_collate(&b, c, batches[i], bsize);
                double dt = now() - t0;
                if (dt < best[i]) best[i] = dt;
            }
        ss_collator_free(c);
        if (rc) return rc;
        double total = 0;
        for (int i = 0; i < NBATCH; i++) total += best[i];
        res->gbs[t] = (double)res->bytes / total / 1e9;
        res->us_per_batch[t] = total / NBATCH * 1e6;
    }
    unsigned char *src = malloc(maxb), *dst = malloc(maxb);
    if (!src || !dst) return SS_ENOMEM;
    memset(src, 1, maxb);
    memset(dst, 2, maxb);
    for (int i = 0; i < NBATCH; i++) best[i] = 1e30;
    for (int rep = 0; rep < reps; rep++)
        for (int i = 0; i < NBATCH; i++) {
            double t0 = now();
            memcpy(dst, src, sizes[i]);
            __asm__ __volatile__("" : : "r"(dst) : "memory");
            double dt = now() - t0;
            if (dt < best[i]) best[i] = dt;
        }
    free(src);
    free(dst);
    double total = 0;
    for (int i = 0; i < NBATCH; i++) total += best[i];
    res->memcpy_gbs = (double)res->bytes / total / 1e9;
    return 0;
}

static void report(const char *name, const result *r) {
    printf("%s\n", name);
    printf("  memcpy of the same bytes: %7.2f GB/s\n", r->memcpy_gbs);
    printf("  collate, 1 thread:        %7.2f GB/s  (%.2fx memcpy)  %8.1f us/batch\n", r->gbs[0],
           r->gbs[0] / r->memcpy_gbs, r->us_per_batch[0]);
    printf("  collate, 2 threads:       %7.2f GB/s  (%.2fx the 1-thread figure)  %8.1f us/batch\n",
           r->gbs[1], r->gbs[1] / r->gbs[0], r->us_per_batch[1]);
}

int main(int argc, char **argv) {
    const char *dir = "/tmp", *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else
            dir = argv[i];
    }
    char tpath[1024], epath[1024];
    snprintf(tpath, sizeof tpath, "%s/bench_collate_tokens.ss", dir);
    snprintf(epath, sizeof epath, "%s/bench_collate_eeg.ss", dir);
    int rc = make_tokens(tpath);
    if (!rc) rc = make_eeg(epath);
    if (rc) return die(rc);
    ss_store *ts, *es;
    if ((rc = ss_open(&ts, tpath, 0)) || (rc = ss_open(&es, epath, 0))) return die(rc);

    /* token batches: 64 random examples each */
    static ss_span tok[NBATCH][TOKB], eeg[NBATCH][EEGB];
    ss_span *tb[NBATCH], *eb[NBATCH];
    uint64_t s = 7;
    for (int i = 0; i < NBATCH; i++) {
        for (int k = 0; k < TOKB; k++) tok[i][k] = (ss_span){rnd(&s) % NTOK, 0, SS_SPAN_END};
        for (int k = 0; k < EEGB; k++) {
            uint64_t t0 = rnd(&s) % (RECLEN - WIN);
            eeg[i][k] = (ss_span){rnd(&s) % NREC, t0, t0 + WIN};
        }
        tb[i] = tok[i];
        eb[i] = eeg[i];
    }
    ss_collate_field tf = SS_COLLATE_FIELD_INIT;
    tf.field = 0; /* "tok", the only field of its store */
    tf.dtype = SS_I64;
    ss_collate_field ef = SS_COLLATE_FIELD_INIT;
    double gain[C], off[C];
    for (int c = 0; c < C; c++) {
        gain[c] = 0.0305 + 0.001 * c;
        off[c] = -0.5 * c;
    }
    ef.field = 0; /* "eeg" */
    ef.dtype = SS_F32;
    ef.scale = gain;
    ef.offset = off;

    result rt, re;
    if ((rc = measure(ts, &tf, tb, TOKB, 40, &rt))) return die(rc);
    if ((rc = measure(es, &ef, eb, EEGB, 8, &re))) return die(rc);
    report("tokens: B=64, lengths 1..512, u16 -> i64, padded batch-major", &rt);
    report("EEG: B=32 windows x 2000 x 21, i16 -> f32 with gain and offset", &re);

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f,
                "{\"tokens\": {\"us_per_batch\": [%.3f, %.3f], \"memcpy_gbs\": %.3f, "
                "\"batches\": [",
                rt.us_per_batch[0], rt.us_per_batch[1], rt.memcpy_gbs);
        for (int i = 0; i < NBATCH; i++) {
            fprintf(f, "%s[", i ? ", " : "");
            for (int k = 0; k < TOKB; k++)
                fprintf(f, "%s%llu", k ? ", " : "",
                        (unsigned long long)ss_length(ts, 0, tok[i][k].example));
            fprintf(f, "]");
        }
        fprintf(f,
                "]},\n \"eeg\": {\"us_per_batch\": [%.3f, %.3f], \"memcpy_gbs\": %.3f, "
                "\"batch\": %d, \"steps\": %d, \"channels\": %d, \"nbatch\": %d}}\n",
                re.us_per_batch[0], re.us_per_batch[1], re.memcpy_gbs, EEGB, WIN, C, NBATCH);
        fclose(f);
    }
    ss_close(ts);
    ss_close(es);
    remove(tpath);
    remove(epath);
    return 0;
}
