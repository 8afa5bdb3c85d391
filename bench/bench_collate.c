/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_collate.c - padded collation throughput against memcpy.
 *
 *   bench_collate [DIR] [--json FILE] [--rounds R] [--torch PYTHON|none] [--markdown]
 *
 * Bytes of batch written per second by ss_collator_collate() at 1 and 2
 * threads, against memcpy() of the same number of bytes in the same run, and
 * memcpy() by 2 threads (the machine's ceiling for the 2-thread figure), and
 * PyTorch's pad_sequence on the same batches (bench/pad_sequence_baseline.py
 * --round, run by PYTHON, default /usr/bin/python3, once per round):
 *  1. tokens: B = 64 examples of 1..512 u16 tokens -> i64, batch-major, right
 *     padding (random batches from a 4096-example store);
 *  2. EEG: B = 32 windows of 2000 x 21 i16 -> f32 with per-channel gain and
 *     offset (EDF digital -> physical), at random offsets of 16 recordings.
 * Then where a second thread starts to pay: token batches of 8 to 128 rows
 * (about 32 KiB to 1 MiB of output) at 1 thread and at 2 with the team
 * forced (parallel_bytes 1), against memcpy by 1 and 2 threads, which sets
 * the collator's default parallel_bytes.
 *
 * The memcpy baseline copies each batch's output size from one buffer to
 * another, both reused and so cache-resident (as the collator's own output
 * buffer is); it reads all those bytes, while collation reads a quarter of
 * the token batch's data bytes (u16 -> i64) and writes padding without
 * reading anything: "the same output bytes", not the same work.
 *
 * R rounds (default 5) alternate memcpy, seqstore and PyTorch; within a
 * round each batch is timed in a few passes over all batches, its best kept,
 * the figure is the sum over the 64 batches; reported are the median and
 * range over the rounds and the load average at the start and end.
 * --markdown prints README's table; --json writes the last round's batch
 * shapes and times for a standalone run of pad_sequence_baseline.py. */
#include <seqstore.h>

#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>

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
    return bench_now();
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

enum { MAX_ROUNDS = 64, NSWEEP = 5, SWEEPMAX = 128 };

static const int sweep_rows[NSWEEP] = {8, 16, 32, 64, 128};

/* One case (tokens or EEG): its collators at 1 and 2 threads, its batches,
 * and per round: memcpy, collate at 1 and 2 threads, and PyTorch. */
typedef struct bench_case {
    const char *name;
    ss_collator *c[2];
    ss_span *const *batches;
    size_t bsize;
    int reps;
    uint64_t parallel_bytes;             /* of the 2-thread collator; 0: the default */
    uint64_t bytes, sizes[NBATCH], maxb; /* bytes: one pass over the batches */
    double memcpy_gbs[MAX_ROUNDS], memcpy2_gbs[MAX_ROUNDS], gbs[2][MAX_ROUNDS], us[2][MAX_ROUNDS];
    double torch_us[MAX_ROUNDS];
} bench_case;

static int case_open(bench_case *k, const ss_store *s, const ss_collate_field *fo) {
    ss_collate_sizes sz;
    k->bytes = k->maxb = 0;
    int rc = 0;
    for (int t = 0; t < 2 && !rc; t++) {
        ss_collator_options opt = SS_COLLATOR_OPTIONS_INIT;
        opt.threads = t + 1;
        opt.parallel_bytes = t ? k->parallel_bytes : 0;
        rc = ss_collator_create(&k->c[t], s, fo, 1, &opt);
    }
    for (int i = 0; i < NBATCH && !rc; i++) {
        rc = ss_collator_sizes(&sz, k->c[0], k->batches[i], k->bsize);
        k->sizes[i] = sz.data_bytes;
        k->bytes += sz.data_bytes;
        if (sz.data_bytes > k->maxb) k->maxb = sz.data_bytes;
    }
    ss_collated_batch b; /* warm up, size the buffers */
    for (int t = 0; t < 2 && !rc; t++)
        for (int i = 0; i < NBATCH && !rc; i++)
            rc = ss_collator_collate(&b, k->c[t], k->batches[i], k->bsize);
    return rc;
}

/* memcpy of n bytes by `threads` threads of an OpenMP team, each a half:
 * what the machine gives two threads, the collator's ceiling. */
static void copy_split(unsigned char *dst, const unsigned char *src, uint64_t n, int threads) {
    if (threads == 1) {
        memcpy(dst, src, n);
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        uint64_t k = (uint64_t)omp_get_thread_num(), nt = (uint64_t)omp_get_num_threads();
        uint64_t a = n * k / nt, z = n * (k + 1) / nt;
        memcpy(dst + a, src + a, z - a);
    }
}

/* Seconds of one pass over the batches with collator c (c NULL: memcpy of the
 * same bytes by `threads` threads): `reps` passes over the 64 batches (as before this program
 * took rounds, so that a batch is not timed again right after itself), each
 * batch's best time kept (a batch that lost its core to another process says
 * nothing about collation), summed over the batches. */
static int pass(double *secs, bench_case *k, ss_collator *c, unsigned char *dst,
                const unsigned char *src, int threads) {
    double best[NBATCH];
    for (int i = 0; i < NBATCH; i++) best[i] = 1e30;
    for (int rep = 0; rep < k->reps; rep++)
        for (int i = 0; i < NBATCH; i++) {
            double t0 = now();
            if (c) {
                ss_collated_batch b;
                int rc = ss_collator_collate(&b, c, k->batches[i], k->bsize);
                if (rc) return rc;
            } else {
                copy_split(dst, src, k->sizes[i], threads);
                __asm__ __volatile__("" : : "r"(dst) : "memory");
            }
            double dt = now() - t0;
            if (dt < best[i]) best[i] = dt;
        }
    double total = 0;
    for (int i = 0; i < NBATCH; i++) total += best[i];
    *secs = total;
    return 0;
}

/* Round r: memcpy, then collation at 1 and 2 threads, back to back. */
static int case_round(bench_case *k, int r, unsigned char *dst, const unsigned char *src) {
    double t;
    int rc = pass(&t, k, NULL, dst, src, 1);
    if (rc) return rc;
    k->memcpy_gbs[r] = (double)k->bytes / t / 1e9;
    if ((rc = pass(&t, k, NULL, dst, src, 2))) return rc;
    k->memcpy2_gbs[r] = (double)k->bytes / t / 1e9;
    for (int th = 0; th < 2; th++) {
        if ((rc = pass(&t, k, k->c[th], dst, src, 1))) return rc;
        k->gbs[th][r] = (double)k->bytes / t / 1e9;
        k->us[th][r] = t / NBATCH * 1e6;
    }
    return 0;
}

static void case_close(bench_case *k) {
    ss_collator_free(k->c[0]);
    ss_collator_free(k->c[1]);
}

static void div_rounds(double *out, const double *a, const double *b, int n) {
    for (int r = 0; r < n; r++) out[r] = a[r] / b[r];
}

static void report(const bench_case *k, int R, int torch) {
    char b1[96], b2[96];
    double x[MAX_ROUNDS];
    printf("%s: median (range) of %d rounds\n", k->name, R);
    printf("  memcpy of the same bytes: %s GB/s\n",
           bench_fmt(b1, sizeof b1, "%.2f", bench_stats(k->memcpy_gbs, R)));
    div_rounds(x, k->gbs[0], k->memcpy_gbs, R);
    printf("  collate, 1 thread:        %s GB/s = %sx memcpy, %.1f us/batch\n",
           bench_fmt(b1, sizeof b1, "%.2f", bench_stats(k->gbs[0], R)),
           bench_fmt(b2, sizeof b2, "%.2f", bench_stats(x, R)), bench_stats(k->us[0], R).med);
    div_rounds(x, k->gbs[1], k->gbs[0], R);
    printf("  collate, 2 threads:       %s GB/s = %sx the 1-thread figure, %.1f us/batch\n",
           bench_fmt(b1, sizeof b1, "%.2f", bench_stats(k->gbs[1], R)),
           bench_fmt(b2, sizeof b2, "%.2f", bench_stats(x, R)), bench_stats(k->us[1], R).med);
    div_rounds(x, k->memcpy2_gbs, k->memcpy_gbs, R);
    printf("  memcpy, 2 threads:        %s GB/s = %sx the 1-thread memcpy (the machine's "
           "ceiling)\n",
           bench_fmt(b1, sizeof b1, "%.2f", bench_stats(k->memcpy2_gbs, R)),
           bench_fmt(b2, sizeof b2, "%.2f", bench_stats(x, R)));
    if (torch) {
        div_rounds(x, k->torch_us, k->us[0], R);
        printf("  PyTorch pad_sequence, 1 thread: %s us/batch: seqstore (1 thread) %sx faster\n",
               bench_fmt(b1, sizeof b1, "%.1f", bench_stats(k->torch_us, R)),
               bench_fmt(b2, sizeof b2, "%.1f", bench_stats(x, R)));
    }
}

/* Where 2 threads start to pay: one line (plain) or row (Markdown) per
 * batch size. */
static void sweep_report(const bench_case *sw, int R, int markdown) {
    char b1[96], b2[96], b3[96], b4[96];
    double x[MAX_ROUNDS], y[MAX_ROUNDS];
    if (markdown)
        printf("\n| tokens per batch (output) | 1 thread | 2 threads, team forced | 2 vs 1 | "
               "memcpy 2 vs 1 |\n| --- | --- | --- | --- | --- |\n");
    else
        printf("2 threads by batch size (tokens, team forced): median (range) of %d rounds\n", R);
    for (int i = 0; i < NSWEEP; i++) {
        const bench_case *k = &sw[i];
        div_rounds(x, k->gbs[1], k->gbs[0], R);
        div_rounds(y, k->memcpy2_gbs, k->memcpy_gbs, R);
        bench_fmt(b1, sizeof b1, "%.1f", bench_stats(k->us[0], R));
        bench_fmt(b2, sizeof b2, "%.1f", bench_stats(k->us[1], R));
        bench_fmt(b3, sizeof b3, "%.2f", bench_stats(x, R));
        bench_fmt(b4, sizeof b4, "%.2f", bench_stats(y, R));
        if (markdown)
            printf("| %d rows (%.0f KiB) | %s µs | %s µs | **%s×** | %s× |\n", sweep_rows[i],
                   (double)k->bytes / NBATCH / 1024, b1, b2, b3, b4);
        else
            printf("  %3d rows (%4.0f KiB): 1 thread %s us, 2 threads %s us = %sx; memcpy %sx\n",
                   sweep_rows[i], (double)k->bytes / NBATCH / 1024, b1, b2, b3, b4);
    }
}

/* The rows of README's "Collation" table. */
static void markdown_row(const char *label, const bench_case *k, int R, int torch) {
    char b1[96], b2[96], b3[96], b4[96], b5[96];
    double x[MAX_ROUNDS], y[MAX_ROUNDS], z[MAX_ROUNDS];
    div_rounds(x, k->gbs[0], k->memcpy_gbs, R);
    div_rounds(y, k->gbs[1], k->gbs[0], R);
    div_rounds(z, k->memcpy2_gbs, k->memcpy_gbs, R);
    printf("| %s | %s GB/s | %s GB/s = **%s×** memcpy | **%s×** the 1-thread figure (memcpy: "
           "%s×) |",
           label, bench_fmt(b1, sizeof b1, "%.1f", bench_stats(k->memcpy_gbs, R)),
           bench_fmt(b2, sizeof b2, "%.1f", bench_stats(k->gbs[0], R)),
           bench_fmt(b3, sizeof b3, "%.2f", bench_stats(x, R)),
           bench_fmt(b4, sizeof b4, "%.2f", bench_stats(y, R)),
           bench_fmt(b5, sizeof b5, "%.2f", bench_stats(z, R)));
    if (torch) {
        div_rounds(x, k->torch_us, k->us[0], R);
        printf(" %s µs per batch: seqstore **%s×** faster |",
               bench_fmt(b1, sizeof b1, "%.0f", bench_stats(k->torch_us, R)),
               bench_fmt(b2, sizeof b2, "%.1f", bench_stats(x, R)));
    } else {
        printf(" not run |");
    }
    printf("\n");
}

static void write_json(const char *json, const bench_case *tk, const bench_case *ek,
                       const ss_store *ts, ss_span tok[][TOKB], int r) {
    FILE *f = fopen(json, "w");
    if (!f) {
        perror(json);
        exit(1);
    }
    fprintf(f,
            "{\"tokens\": {\"us_per_batch\": [%.3f, %.3f], \"memcpy_gbs\": %.3f, "
            "\"batches\": [",
            tk->us[0][r], tk->us[1][r], tk->memcpy_gbs[r]);
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
            ek->us[0][r], ek->us[1][r], ek->memcpy_gbs[r], EEGB, WIN, C, NBATCH);
    if (fclose(f)) {
        perror(json);
        exit(1);
    }
}

/* PyTorch's pad_sequence on the same batches, one round in its own process
 * (bench/pad_sequence_baseline.py --round): µs per batch at 1 thread, or -1. */
static int run_torch(const char *python, const char *json, int reps, double *tok_us,
                     double *eeg_us) {
    char script[4096], cmd[9000];
    snprintf(script, sizeof script, "%s/pad_sequence_baseline.py", SS_BENCH_DIR);
    if (snprintf(cmd, sizeof cmd, "'%s' '%s' --round %d '%s'", python, script, reps, json) < 0)
        return -1;
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    int got = 0;
    while (fgets(line, sizeof line, p)) {
        got += sscanf(line, "tokens_us %lf", tok_us) == 1;
        got += sscanf(line, "eeg_us %lf", eeg_us) == 1;
    }
    return pclose(p) == 0 && got == 2 ? 0 : -1;
}

int main(int argc, char **argv) {
    const char *dir = "/tmp", *json = NULL;
    /* SS_BENCH_QUICK: no PyTorch peer unless asked (importing torch takes seconds) */
    const char *python =
        access("/usr/bin/python3", X_OK) == 0 && !bench_quick() ? "/usr/bin/python3" : "none";
    int rounds = 0, markdown = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--torch") == 0 && i + 1 < argc)
            python = argv[++i];
        else if (strcmp(argv[i], "--markdown") == 0)
            markdown = 1;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: bench_collate [DIR] [--json FILE] [--rounds R] "
                            "[--torch PYTHON|none] [--markdown]\n");
            return 2;
        } else
            dir = argv[i];
    }
    int R = bench_rounds(rounds, 5), quick = bench_quick();
    if (R > MAX_ROUNDS) return 2;
    double load0 = bench_loadavg();
    char tpath[1024], epath[1024], jtmp[1100];
    snprintf(tpath, sizeof tpath, "%s/bench_collate_tokens_%d.ss", dir, (int)getpid());
    snprintf(epath, sizeof epath, "%s/bench_collate_eeg_%d.ss", dir, (int)getpid());
    snprintf(jtmp, sizeof jtmp, "%s/bench_collate_%d.json", dir, (int)getpid());
    int rc = make_tokens(tpath);
    if (!rc) rc = make_eeg(epath);
    if (rc) return die(rc);
    ss_store *ts, *es;
    if ((rc = ss_open(&ts, tpath, 0)) || (rc = ss_open(&es, epath, 0))) return die(rc);

    /* token batches: 64 random examples each */
    static ss_span tok[NBATCH][TOKB], eeg[NBATCH][EEGB], swp[NSWEEP][NBATCH][SWEEPMAX];
    ss_span *tb[NBATCH], *eb[NBATCH], *sb[NSWEEP][NBATCH];
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
    for (int j = 0; j < NSWEEP; j++) /* drawn after the above: those batches stay as they were */
        for (int i = 0; i < NBATCH; i++) {
            for (int k = 0; k < sweep_rows[j]; k++)
                swp[j][i][k] = (ss_span){rnd(&s) % NTOK, 0, SS_SPAN_END};
            sb[j][i] = swp[j][i];
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

    static bench_case tk, ek;
    tk.name = "tokens: B=64, lengths 1..512, u16 -> i64, padded batch-major";
    tk.batches = tb;
    tk.bsize = TOKB;
    tk.reps = quick ? 2 : 8;
    ek.name = "EEG: B=32 windows x 2000 x 21, i16 -> f32 with gain and offset";
    ek.batches = eb;
    ek.bsize = EEGB;
    ek.reps = quick ? 1 : 2;
    if ((rc = case_open(&tk, ts, &tf)) || (rc = case_open(&ek, es, &ef))) return die(rc);
    uint64_t maxb = tk.maxb > ek.maxb ? tk.maxb : ek.maxb;
    static bench_case sw[NSWEEP];
    for (int j = 0; j < NSWEEP; j++) {
        sw[j].name = "tokens by batch size";
        sw[j].batches = sb[j];
        sw[j].bsize = (size_t)sweep_rows[j];
        sw[j].reps = quick ? 2 : 8;
        sw[j].parallel_bytes = 1;
        if ((rc = case_open(&sw[j], ts, &tf))) return die(rc);
        if (sw[j].maxb > maxb) maxb = sw[j].maxb;
    }
    unsigned char *src = malloc(maxb), *dst = malloc(maxb);
    if (!src || !dst) return die(SS_ENOMEM);
    memset(src, 1, maxb);
    memset(dst, 2, maxb);
    int torch = strcmp(python, "none") != 0;
    for (int r = 0; r < R; r++) { /* alternate: memcpy, seqstore, PyTorch, memcpy, ... */
        if ((rc = case_round(&tk, r, dst, src)) || (rc = case_round(&ek, r, dst, src)))
            return die(rc);
        for (int j = 0; j < NSWEEP; j++)
            if ((rc = case_round(&sw[j], r, dst, src))) return die(rc);
        if (torch) {
            write_json(jtmp, &tk, &ek, ts, tok, r);
            if (run_torch(python, jtmp, quick ? 1 : 2, &tk.torch_us[r], &ek.torch_us[r])) {
                fprintf(stderr,
                        "bench_collate: PyTorch's pad_sequence did not run (%s, "
                        "python3-torch missing?): its column is left out\n",
                        python);
                torch = 0;
            }
        }
    }
    remove(jtmp);
    double load1 = bench_loadavg();
    if (markdown) {
        bench_md_header(load0, load1, R, "alternating memcpy, seqstore and PyTorch");
        printf("| case | memcpy | collate 1 thread | 2 threads | PyTorch `pad_sequence`, 1 thread "
               "|\n| --- | --- | --- | --- | --- |\n");
        markdown_row("tokens: B=64, lengths 1–512, u16 → i64, padded", &tk, R, torch);
        markdown_row("EEG: B=32 windows × 2000 × 21, i16 → f32 × gain + offset", &ek, R, torch);
        sweep_report(sw, R, 1);
    } else {
        report(&tk, R, torch);
        report(&ek, R, torch);
        sweep_report(sw, R, 0);
        printf("load average: %.2f at the start, %.2f at the end\n", load0, load1);
    }
    if (json) write_json(json, &tk, &ek, ts, tok, R - 1);
    case_close(&tk);
    case_close(&ek);
    for (int j = 0; j < NSWEEP; j++) case_close(&sw[j]);
    free(src);
    free(dst);
    ss_close(ts);
    ss_close(es);
    char lock[1100];
    for (int k = 0; k < 2; k++) { /* the stores and their LMDB lock files */
        snprintf(lock, sizeof lock, "%s-lock", k ? epath : tpath);
        remove(k ? epath : tpath);
        remove(lock);
    }
    return 0;
}
