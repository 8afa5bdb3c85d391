/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_convert_signal.c - `seqstore convert audio` against libsndfile's own
 * read of the same files (WAV and FLAC), and `seqstore convert biosig`
 * against BioSig's own read (sopen + sread of every sample + sclose) of the
 * same BrainVision and GDF files. Each with 1 and with 2 threads on both
 * sides: the baseline reads the files in parallel over OpenMP threads (one
 * file per thread at a time, the libraries' open and close serialized as
 * the converters serialize them), the conversion runs with --threads 1 and
 * --threads 2 (the converters decode on that many threads and append on
 * the main thread).
 *
 * usage: bench_convert_signal [SEQSTORE_CLI] [DIR] [RUNS]
 *   defaults: ./seqstore, /tmp/ss_bench_signal, 7 runs.
 * Inputs, made once in DIR: 16 WAV files (16-bit mono 16 kHz, 60 s each,
 * written with libsndfile), the same samples as 16 FLAC files, 8 BrainVision
 * recordings (32 channels INT_16 at 500 Hz, 120 s, written here from the
 * spec) and their GDF (BioSig's save2gdf). The files stay in the page cache,
 * so this measures CPU cost. Each round runs the baseline and the conversion
 * back to back, alternating which goes first; the figures are medians over
 * RUNS rounds, and the load average is printed with them. Target:
 * conversion >= 0.8x the baseline. BioSig's baseline reads the samples in
 * rows ([T][C], as the store holds them); the line also gives BioSig's
 * read channel by channel ([C][T]), about twice as fast, which the
 * converter uses before turning the block into rows itself.
 * Also timed, as floors for any converter, since an in-process read of
 * cached files pays neither: writing the same bytes to a new file and
 * fdatasync()ing it (a store must be written and made durable), and the
 * start of a seqstore process that does nothing (--version). The best ratio
 * those floors allow is baseline / (baseline + floors), if reading and
 * writing took turns; converters overlap them, so the floors bound less.
 * And the CPU time of both sides (the baseline's threads; the shell and the
 * CLI as children): a conversion cannot finish sooner than its CPU time
 * spread over the CPUs it can keep busy (its decoding threads and the one
 * that appends, at most the machine's), which bounds the ratio too. With 2
 * threads on a 2-CPU machine that bound is what the store's writing costs
 * the decoders: the appends share their CPUs. */
#include <fcntl.h>
#include <unistd.h>
#include <biosig.h>
#include <omp.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "bench_common.h"

#define NWAV 16 /* and as many FLAC files of the same samples */
#define NBV 8
#define BV_CH 32
#define BV_RATE 500
#define BV_SECS 120
/* SS_BENCH_QUICK: files 1/30 as long (the smoke test checks the lines, not the figures) */
static int g_div = 1;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static double fsize(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (double)st.st_size : 0;
}

static int write_wav(const char *path, unsigned seed, int format) {
    SF_INFO info = {0};
    info.samplerate = 16000, info.channels = 1, info.format = format | SF_FORMAT_PCM_16;
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    static short buf[16000];
    if (!sf) return 1;
    for (int s = 0; s < 60 / g_div; s++) {
        for (int i = 0; i < 16000; i++)
            buf[i] = (short)((seed = seed * 1103515245u + 12345u) >> 17);
        sf_writef_short(sf, buf, 16000);
    }
    return sf_close(sf) != 0;
}

static int write_bv(const char *dir, int k) {
    char p[600];
    snprintf(p, sizeof p, "%s/bv%02d.eeg", dir, k);
    FILE *f = fopen(p, "wb");
    static short row[BV_CH];
    unsigned seed = (unsigned)k;
    if (!f) return 1;
    for (int t = 0; t < BV_RATE * BV_SECS / g_div; t++) {
        for (int c = 0; c < BV_CH; c++)
            row[c] = (short)((seed = seed * 1103515245u + 12345u) >> 18);
        fwrite(row, sizeof row, 1, f);
    }
    fclose(f);
    snprintf(p, sizeof p, "%s/bv%02d.vhdr", dir, k);
    if (!(f = fopen(p, "w"))) return 1;
    fprintf(f,
            "Brain Vision Data Exchange Header File Version 1.0\r\n\r\n[Common Infos]\r\n"
            "Codepage=UTF-8\r\nDataFile=bv%02d.eeg\r\nMarkerFile=bv%02d.vmrk\r\n"
            "DataFormat=BINARY\r\nDataOrientation=MULTIPLEXED\r\nNumberOfChannels=%d\r\n"
            "SamplingInterval=%d\r\n\r\n[Binary Infos]\r\nBinaryFormat=INT_16\r\n\r\n"
            "[Channel Infos]\r\n",
            k, k, BV_CH, 1000000 / BV_RATE);
    for (int c = 0; c < BV_CH; c++) fprintf(f, "Ch%d=E%d,,0.1,uV\r\n", c + 1, c + 1);
    fclose(f);
    snprintf(p, sizeof p, "%s/bv%02d.vmrk", dir, k);
    if (!(f = fopen(p, "w"))) return 1;
    fprintf(f,
            "Brain Vision Data Exchange Marker File, Version 1.0\r\n\r\n[Common Infos]\r\n"
            "Codepage=UTF-8\r\nDataFile=bv%02d.eeg\r\n\r\n[Marker Infos]\r\n"
            "Mk1=Stimulus,S  1,1001,1,0\r\n",
            k);
    fclose(f);
    return 0;
}

/* libsndfile's own read of one file: every frame as 16-bit, into a
 * buffer of the thread's own (the converter serializes sf_open too). */
static int read_wav(const char *path, short *buf) {
    SF_INFO info = {0};
    SNDFILE *sf;
#pragma omp critical(bench_sndfile)
    sf = sf_open(path, SFM_READ, &info);
    if (!sf) return 1;
    while (sf_readf_short(sf, buf, (sf_count_t)(65536 / info.channels)) > 0) continue;
    sf_close(sf);
    return 0;
}

static int read_wavs(char **files, int n, int threads) {
    int bad = 0;
#pragma omp parallel num_threads(threads) reduction(| : bad)
    {
        short *buf = malloc(65536 * sizeof *buf);
#pragma omp for schedule(dynamic, 1)
        for (int i = 0; i < n; i++) bad |= !buf || read_wav(files[i], buf);
        free(buf);
    }
    return bad;
}

/* BioSig's own read of one file, digital, with sopen and sclose serialized
 * as the converter does: in rows of samples (`rows`: [T][C], the layout of
 * the store) or channel by channel ([C][T], which BioSig fills about twice
 * as fast, and which the converter reads and turns into rows itself). */
static int read_one_biosig(const char *path, int rows) {
    HDRTYPE *h = constructHDR(0, 0);
    int bad;
    if (rows) biosig_set_flag(h, BIOSIG_FLAG_ROW_BASED_CHANNELS);
    biosig_set_flag(h, BIOSIG_FLAG_UCAL);
#pragma omp critical(bench_biosig)
    {
        h = sopen(path, "r", h);
        bad = !h || serror2(h);
    }
    if (bad) return 1;
    sread(NULL, 0, (size_t)h->NRec, h);
#pragma omp critical(bench_biosig)
    {
        sclose(h);
        destructHDR(h);
    }
    return 0;
}

static int read_biosig_layout(char **files, int n, int threads, int rows) {
    int bad = 0;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) reduction(| : bad)
    for (int i = 0; i < n; i++) bad |= read_one_biosig(files[i], rows);
    return bad;
}

/* the baseline the ratio is of: the samples in the store's layout */
static int read_biosig(char **files, int n, int threads) {
    return read_biosig_layout(files, n, threads, 1);
}

static int read_biosig_channels(char **files, int n, int threads) {
    return read_biosig_layout(files, n, threads, 0);
}

/* The write floor: the input bytes into a new file, fdatasync'ed. */
static char g_floor[700];
static int write_floor(char **files, int n) {
    static char buf[1 << 20];
    int out = open(g_floor, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0) return 1;
    for (int i = 0; i < n; i++) {
        int in = open(files[i], O_RDONLY);
        ssize_t r;
        if (in < 0) return 1;
        while ((r = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)r) != r) return 1;
        close(in);
    }
    int rc = fdatasync(out);
    close(out);
    unlink(g_floor);
    return rc != 0;
}

/* CPU seconds (user + system) of this process (`who` RUSAGE_SELF, every
 * thread) or of its waited-for children (RUSAGE_CHILDREN) so far. */
static double cpu_seconds(int who) {
    struct rusage ru;
    getrusage(who, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int run(const char *cmd) {
    int rc = system(cmd);
    return !WIFEXITED(rc) || WEXITSTATUS(rc) != 0;
}

/* The start of a seqstore process that does nothing (--version): part of
 * every conversion's time, never of the in-process baseline. */
static double start_seconds(const char *cli, int runs) {
    char cmd[700];
    double *t = calloc((size_t)runs, sizeof *t), m;
    snprintf(cmd, sizeof cmd, "%s --version > /dev/null", cli);
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        if (run(cmd)) exit(1);
        t[r] = now() - t0;
    }
    m = median(t, runs);
    free(t);
    return m;
}

static double g_start; /* start_seconds(), measured once */

/* The write floor of `files` (BrainVision: the sample bytes in NAME.eeg),
 * median over `runs`; *bytes gets their input size. */
static double floor_seconds(char **files, int n, int runs, double *bytes) {
    char *data[64];
    double *tf = calloc((size_t)runs, sizeof *tf), m;
    *bytes = 0;
    for (int i = 0; i < n && i < 64; i++) {
        size_t l = strlen(files[i]);
        data[i] = strdup(files[i]);
        *bytes += fsize(files[i]);
        if (l > 5 && !strcmp(files[i] + l - 5, ".vhdr")) {
            strcpy(data[i] + l - 5, ".eeg");
            *bytes += fsize(data[i]);
        }
    }
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        if (write_floor(data, n)) exit(1);
        tf[r] = now() - t0;
    }
    for (int i = 0; i < n && i < 64; i++) free(data[i]);
    m = median(tf, runs);
    free(tf);
    return m;
}

typedef int (*read_fn)(char **files, int n, int threads);

/* Baseline `base` (and `alt`, another way of reading, when not NULL) on
 * `threads` threads and `cmd` with --threads `threads`, rotating which goes
 * first, RUNS rounds; prints one line. */
static void bench(const char *what, char **files, int n, read_fn base, read_fn alt,
                  const char *cmd0, int threads, int runs, double bytes, double fl) {
    double *t[3], *cpu[2], load[3], m[3], mc[2];
    int sides = alt ? 3 : 2;
    char cmd[8300];
    for (int k = 0; k < 3; k++) t[k] = calloc((size_t)runs, sizeof *t[k]);
    for (int k = 0; k < 2; k++) cpu[k] = calloc((size_t)runs, sizeof *cpu[k]);
    snprintf(cmd, sizeof cmd, "%s --threads %d", cmd0, threads);
    base(files, n, threads), run(cmd); /* warm the page cache */
    for (int r = 0; r < runs; r++)
        for (int side = 0; side < sides; side++) {
            int k = (side + r) % sides; /* 0 base, 1 convert, 2 alt */
            int who = k == 1 ? RUSAGE_CHILDREN : RUSAGE_SELF; /* the shell and the CLI */
            double t0 = now(), c0 = cpu_seconds(who);
            if (k == 1 ? run(cmd) : (k ? alt : base)(files, n, threads)) {
                fprintf(stderr, "failed: %s\n", k == 1 ? cmd : "baseline");
                exit(1);
            }
            t[k][r] = now() - t0;
            if (k < 2) cpu[k][r] = cpu_seconds(who) - c0;
        }
    for (int k = 0; k < sides; k++) m[k] = median(t[k], runs);
    for (int k = 0; k < 2; k++) mc[k] = median(cpu[k], runs);
    /* the converter's decoders and its appending thread can keep at most
     * min(CPUs, threads + 1) CPUs busy: no schedule finishes sooner than its
     * CPU time spread over them */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int usable = ncpu > 0 && ncpu < threads + 1 ? (int)ncpu : threads + 1;
    double b = m[0], c = m[1];
    getloadavg(load, 3);
    printf("%-24s %5.1f MB, %d thread%s each: own read %7.1f MB/s (%.3f s), convert %6.1f MB/s "
           "(%.3f s), ratio %.2f (target >= 0.8); ",
           what, bytes / 1e6, threads, threads > 1 ? "s" : " ", bytes / 1e6 / b, b, bytes / 1e6 / c,
           c, b / c);
    if (alt) printf("read channel by channel %.3f s (ratio %.2f); ", m[2], m[2] / c);
    printf("floors: write+fdatasync %.3f s, process start %.3f s (best ratio they allow %.2f); "
           "CPU: own read %.3f s, convert %.3f s (best ratio it allows on %d CPU%s %.2f); "
           "median of %d alternating runs, load %.2f %.2f %.2f\n",
           fl, g_start, b / (b + fl + g_start), mc[0], mc[1], usable, usable > 1 ? "s:" : ":",
           b / (mc[1] / usable), runs, load[0], load[1], load[2]);
    for (int k = 0; k < 3; k++) free(t[k]);
    for (int k = 0; k < 2; k++) free(cpu[k]);
}

int main(int argc, char **argv) {
    const char *cli = argc > 1 ? argv[1] : "./seqstore";
    const char *dir = argc > 2 ? argv[2] : "/tmp/ss_bench_signal";
    int runs = argc > 3 ? atoi(argv[3]) : 7;
    char *wav[NWAV], *flac[NWAV], *vhdr[NBV], *gdf[NBV], cmd[8192], list[600];
    if (runs < 1) return 2;
    if (bench_quick()) g_div = 30;
    mkdir(dir, 0755);
    snprintf(g_floor, sizeof g_floor, "%s/floor.bin", dir);
    for (int i = 0; i < NWAV; i++) {
        wav[i] = malloc(600);
        snprintf(wav[i], 600, "%s/a%02d.wav", dir, i);
        if (!exists(wav[i]) && write_wav(wav[i], (unsigned)i, SF_FORMAT_WAV)) return 1;
        flac[i] = malloc(600);
        snprintf(flac[i], 600, "%s/a%02d.flac", dir, i);
        if (!exists(flac[i]) && write_wav(flac[i], (unsigned)i, SF_FORMAT_FLAC)) return 1;
    }
    for (int k = 0; k < NBV; k++) {
        vhdr[k] = malloc(600), gdf[k] = malloc(600);
        snprintf(vhdr[k], 600, "%s/bv%02d.vhdr", dir, k);
        snprintf(gdf[k], 600, "%s/bv%02d.gdf", dir, k);
        if (!exists(vhdr[k]) && write_bv(dir, k)) return 1;
        snprintf(cmd, sizeof cmd, "save2gdf '%s' '%s' > /dev/null 2>&1", vhdr[k], gdf[k]);
        if (!exists(gdf[k]) && run(cmd)) return 1;
    }
    const char *kinds[4] = {"audio", "audio", "biosig", "biosig"};
    char **sets[4] = {wav, flac, vhdr, gdf};
    const int ns[4] = {NWAV, NWAV, NBV, NBV};
    const char *names[4] = {"audio WAV (libsndfile)", "audio FLAC (libsndfile)",
                            "BrainVision (BioSig)", "GDF (BioSig)"};
    g_start = start_seconds(cli, runs < 5 ? 5 : runs);
    for (int s = 0; s < 4; s++) {
        snprintf(list, sizeof list, "%s/list%d.txt", dir, s);
        FILE *f = fopen(list, "w");
        if (!f) return 1;
        for (int i = 0; i < ns[s]; i++) fprintf(f, "%s\n", sets[s][i]);
        fclose(f);
        snprintf(cmd, sizeof cmd, "%s convert %s --list %s -o %s/out.ss --force --quiet", cli,
                 kinds[s], list, dir);
        double bytes, fl = floor_seconds(sets[s], ns[s], runs, &bytes);
        for (int threads = 1; threads <= 2; threads++)
            bench(names[s], sets[s], ns[s], s > 1 ? read_biosig : read_wavs,
                  s > 1 ? read_biosig_channels : NULL, cmd, threads, runs, bytes, fl);
    }
    snprintf(cmd, sizeof cmd, "rm -f %s/out.ss %s/out.ss-lock", dir, dir);
    return run(cmd);
}
