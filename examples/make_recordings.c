/* SPDX-License-Identifier: BSD-2-Clause */
/* make_recordings.c - `make_recordings DIR N LABELS.csv`: N small synthetic
 * EDF+ recordings (DIR/rec001.edf ..., 60 s, six "EEG Xx" channels at 256 Hz,
 * one annotation each, written with EDFlib) and a labels file naming each
 * recording's class: the data README's EDF commands run on, for trying them
 * without a clinical data set.
 *
 * `make_recordings --bptt DIR N LABELS.csv`: N recordings for truncated BPTT
 * (train_bptt.py, rnn_bptt.c's task): 12 s, channels "EEG Fp1" and "EEG Fp2"
 * at 100 Hz, noise in both and, in Fp1, a burst of +-0.8 uV every 90 samples
 * whose sign is the recording's class ("pos" / "neg" in LABELS.csv): further
 * apart than a short window, so a model must carry its state to see it. */
#include <edflib.h>
#include <math.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const LABELS[] = {"EEG Fp1", "EEG Fp2", "EEG F3", "EEG F4", "EEG C3", "EEG C4"};
#define NCH 6
#define RATE 256

static int write_rec(const char *path, int n) {
    int h = edfopen_file_writeonly(path, EDFLIB_FILETYPE_EDFPLUS, NCH);
    if (h < 0) return 1;
    for (int k = 0; k < NCH; k++)
        if (edf_set_samplefrequency(h, k, RATE) || edf_set_physical_maximum(h, k, 500) ||
            edf_set_physical_minimum(h, k, -500) || edf_set_digital_maximum(h, k, 32767) ||
            edf_set_digital_minimum(h, k, -32768) || edf_set_label(h, k, LABELS[k]) ||
            edf_set_physical_dimension(h, k, "uV"))
            return 1;
    double buf[RATE];
    for (int s = 0; s < 60; s++)
        for (int k = 0; k < NCH; k++) {
            for (int i = 0; i < RATE; i++)
                buf[i] = 100 * sin(0.05 * (s * RATE + i) * (k + 1) + n) + 10 * cos(0.3 * i);
            if (edfwrite_physical_samples(h, buf)) return 1;
        }
    if (edfwrite_annotation_utf8(h, 10000 * (5 + n), 20000, n % 2 ? "eyes closed" : "eyes open"))
        return 1;
    return edfclose_file(h) != 0;
}

/* A deterministic standard normal (xorshift64* and Box-Muller). */
static double normal(unsigned long long *z) {
    double u[2];
    for (int k = 0; k < 2; k++) {
        *z ^= *z >> 12, *z ^= *z << 25, *z ^= *z >> 27;
        u[k] = ((double)((*z * 2685821657736338717ull) >> 11) + 0.5) / 9007199254740992.0;
    }
    return sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

#define B_RATE 100
#define B_SECONDS 12
#define B_PERIOD 90

/* Recording n of the BPTT task (class n % 2) through EDFlib. */
static int write_bptt(const char *path, int n) {
    int h = edfopen_file_writeonly(path, EDFLIB_FILETYPE_EDFPLUS, 2);
    if (h < 0) return 1;
    for (int k = 0; k < 2; k++)
        if (edf_set_samplefrequency(h, k, B_RATE) || edf_set_physical_maximum(h, k, 4) ||
            edf_set_physical_minimum(h, k, -4) || edf_set_digital_maximum(h, k, 32767) ||
            edf_set_digital_minimum(h, k, -32768) || edf_set_label(h, k, LABELS[k]) ||
            edf_set_physical_dimension(h, k, "uV"))
            return 1;
    unsigned long long z = 0x9E3779B97F4A7C15ull * (unsigned long long)(n + 1);
    int phase = (int)(z % B_PERIOD);
    double sign = n % 2 ? 0.8 : -0.8, buf[B_RATE];
    for (int s = 0; s < B_SECONDS; s++)
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < B_RATE; i++) {
                int t = s * B_RATE + i;
                buf[i] = (k ? 0.5 : 0.3) * normal(&z);
                if (k == 0 && ((t - phase) % B_PERIOD + B_PERIOD) % B_PERIOD < 6) buf[i] += sign;
            }
            if (edfwrite_physical_samples(h, buf)) return 1;
        }
    return edfclose_file(h) != 0;
}

int main(int argc, char **argv) {
    int bptt = argc == 5 && strcmp(argv[1], "--bptt") == 0;
    if (bptt) argv++, argc--;
    if (argc != 4) {
        fprintf(stderr, "usage: make_recordings [--bptt] DIR N LABELS.csv\n");
        return 2;
    }
    char *end;
    long n = strtol(argv[2], &end, 10);
    if (*end || n < 1 || n > 999) {
        fprintf(stderr, "make_recordings: N must be 1..999, not '%s'\n", argv[2]);
        return 2;
    }
    if (mkdir(argv[1], 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "make_recordings: cannot create %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    FILE *labels = fopen(argv[3], "w");
    if (!labels) {
        fprintf(stderr, "make_recordings: cannot write %s: %s\n", argv[3], strerror(errno));
        return 1;
    }
    fprintf(labels, "path,label\n");
    for (int i = 1; i <= (int)n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rec%03d.edf", argv[1], i);
        if (bptt ? write_bptt(path, i) : write_rec(path, i)) {
            fprintf(stderr, "make_recordings: cannot write %s\n", path);
            return 1;
        }
        if (bptt)
            fprintf(labels, "rec%03d.edf,%s\n", i, i % 2 ? "pos" : "neg");
        else
            fprintf(labels, "rec%03d.edf,%s\n", i, i % 3 ? "normal" : "abnormal");
    }
    return fclose(labels) != 0;
}
