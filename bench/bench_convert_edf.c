/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_convert_edf.c - `seqstore convert edf` against merely reading the same
 * files with EDFlib, with 1 and 2 threads.
 *
 * usage: bench_convert_edf [SEQSTORE_CLI] [DIR] [FILES] [MINUTES]
 *   defaults: ./seqstore, /tmp/ss_bench_edf, 24 files, 10 minutes each
 *   (21 channels at 250 Hz, EDF+, written here with EDFlib's writer).
 * Both sides read every sample of every channel with edfread_digital_samples
 * in the same order: whole data records of each channel in turn, as many
 * as fit in stdio's 4 KiB buffer (convert edf's order; 4096 samples of each
 * channel in turn cost both a read() of 4 KiB per channel and record), files
 * in parallel over OpenMP threads (EDFlib's open/close serialized). The
 * converter decodes in processes when it has several (EDFlib's getc() then
 * takes no stream lock); the peer is one process, as a user's would be. The files stay in the page
 * cache, so this measures CPU cost, not the disk. Target: conversion >= 0.8x the read-only MB/s. */
#include <edflib.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#define NCH 21
#define CHUNK 4096

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int write_file(const char *path, int minutes, unsigned seed) {
    int h = edfopen_file_writeonly(path, EDFLIB_FILETYPE_EDFPLUS, NCH);
    double buf[250];
    if (h < 0) return 1;
    for (int k = 0; k < NCH; k++) {
        char label[16];
        snprintf(label, sizeof label, "EEG%02d", k);
        edf_set_samplefrequency(h, k, 250);
        edf_set_physical_maximum(h, k, 500);
        edf_set_physical_minimum(h, k, -500);
        edf_set_digital_maximum(h, k, 32767);
        edf_set_digital_minimum(h, k, -32768);
        edf_set_label(h, k, label);
        edf_set_physical_dimension(h, k, "uV");
    }
    for (int s = 0; s < minutes * 60; s++)
        for (int k = 0; k < NCH; k++) {
            for (int i = 0; i < 250; i++) {
                seed = seed * 1103515245u + 12345u;
                buf[i] = 300 * sin(0.01 * (s * 250 + i) * (k + 1)) + (double)(seed >> 20) / 64.0;
            }
            if (edfwrite_physical_samples(h, buf)) return 1;
        }
    edfwrite_annotation_utf8(h, 10000, -1, "start");
    return edfclose_file(h) != 0;
}

/* Read every sample of every signal of `path`; returns samples read. */
static long long read_file(const char *path, struct edf_hdr_struct *hdr, int *buf) {
    int rc;
    long long total = 0;
#pragma omp critical(ss_edflib)
    rc = edfopen_file_readonly(path, hdr, EDFLIB_READ_ALL_ANNOTATIONS);
    if (rc) return -1;
    long long spr = hdr->signalparam[0].smp_in_datarecord, rec = 0, step = CHUNK;
    for (int k = 0; k < hdr->edfsignals; k++) rec += 2 * hdr->signalparam[k].smp_in_datarecord;
    if (spr > 0 && spr < CHUNK && rec > 0) { /* whole records that fit in 4 KiB, at least one */
        long long m = rec < 4096 ? 4096 / rec : 1;
        step = (m < CHUNK / spr ? m : CHUNK / spr) * spr;
    }
    for (long long t0 = 0; t0 < hdr->signalparam[0].smp_in_file; t0 += step)
        for (int k = 0; k < hdr->edfsignals; k++) {
            if (edfseek(hdr->handle, k, t0, EDFSEEK_SET) != t0) return -1;
            int n = edfread_digital_samples(hdr->handle, k, (int)step, buf + k * CHUNK);
            if (n < 0) return -1;
            total += n;
        }
#pragma omp critical(ss_edflib)
    edfclose_file(hdr->handle);
    return total;
}

static double read_all(char **files, int n, int threads) {
    double t0 = now();
    int bad = 0;
#pragma omp parallel num_threads(threads)
    {
        struct edf_hdr_struct *hdr = malloc(sizeof *hdr);
        int *buf = malloc(sizeof(int) * CHUNK * EDFLIB_MAXSIGNALS);
#pragma omp for schedule(dynamic, 1)
        for (int i = 0; i < n; i++)
            if (!hdr || !buf || read_file(files[i], hdr, buf) < 0) {
#pragma omp atomic write
                bad = 1;
            }
        free(hdr);
        free(buf);
    }
    return bad ? -1 : now() - t0;
}

int main(int argc, char **argv) {
    const char *cli = argc > 1 ? argv[1] : "./seqstore";
    const char *dir = argc > 2 ? argv[2] : "/tmp/ss_bench_edf";
    int nfiles = argc > 3 ? atoi(argv[3]) : 24, minutes = argc > 4 ? atoi(argv[4]) : 10;
    const char *quick = getenv("SS_BENCH_QUICK"); /* the smoke tests: 2 files of 1 minute */
    if (quick && *quick && strcmp(quick, "0") != 0) nfiles = nfiles > 2 ? 2 : nfiles, minutes = 1;
    char **files = calloc((size_t)nfiles, sizeof *files);
    char *cmd = malloc(64 + (size_t)nfiles * 300), list[512], store[512];
    double bytes = 0;
    struct stat st;
    if (!files || !cmd || nfiles < 1 || minutes < 1) return 2;
    mkdir(dir, 0755);
    snprintf(list, sizeof list, "%s/files.txt", dir);
    snprintf(store, sizeof store, "%s/bench.ss", dir);
    FILE *lf = fopen(list, "w");
    if (!lf) return 1;
    for (int i = 0; i < nfiles; i++) {
        files[i] = malloc(300);
        snprintf(files[i], 300, "%s/rec%03d.edf", dir, i);
        if (stat(files[i], &st) != 0 && write_file(files[i], minutes, (unsigned)i)) {
            fprintf(stderr, "cannot write %s\n", files[i]);
            return 1;
        }
        stat(files[i], &st);
        bytes += (double)st.st_size;
        fprintf(lf, "%s\n", files[i]);
    }
    fclose(lf);
    read_all(files, nfiles, 2); /* warm the page cache */
    printf("%d EDF+ files x %d min, %d channels at 250 Hz: %.1f MB\n", nfiles, minutes, NCH,
           bytes / 1e6);
    for (int threads = 1; threads <= 2; threads++) {
        double rd = 1e9, cv = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            double t = read_all(files, nfiles, threads);
            if (t < 0) return 1;
            if (t < rd) rd = t;
            snprintf(cmd, 64 + (size_t)nfiles * 300,
                     "%s convert edf --list %s -o %s --force --quiet --threads %d", cli, list,
                     store, threads);
            double t0 = now();
            int rc = system(cmd);
            t = now() - t0;
            if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
                fprintf(stderr, "failed: %s\n", cmd);
                return 1;
            }
            if (t < cv) cv = t;
        }
        printf("  %d thread%s: EDFlib read only %7.1f MB/s (%.3f s); convert %7.1f MB/s "
               "(%.3f s); ratio %.2f (target >= 0.8)\n",
               threads, threads > 1 ? "s" : " ", bytes / 1e6 / rd, rd, bytes / 1e6 / cv, cv,
               rd / cv);
    }
    remove(store);
    snprintf(store, sizeof store, "%s/bench.ss-lock", dir);
    remove(store);
    return 0;
}
