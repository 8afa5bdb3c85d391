/* SPDX-License-Identifier: BSD-2-Clause */
/* make_recordings.c - `make_recordings DIR N LABELS.csv`: N small synthetic
 * EDF+ recordings (DIR/rec001.edf ..., 60 s, six "EEG Xx" channels at 256 Hz,
 * one annotation each, written with EDFlib) and a labels file naming each
 * recording's class: the data README's EDF commands run on, for trying them
 * without a clinical data set. */
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

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: make_recordings DIR N LABELS.csv\n");
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
        if (write_rec(path, i)) {
            fprintf(stderr, "make_recordings: cannot write %s\n", path);
            return 1;
        }
        fprintf(labels, "rec%03d.edf,%s\n", i, i % 3 ? "normal" : "abnormal");
    }
    return fclose(labels) != 0;
}
