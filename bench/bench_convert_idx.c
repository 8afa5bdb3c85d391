/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_convert_idx.c - `seqstore convert idx` on Fashion-MNIST train (60,000
 * images of 28x28), against merely decompressing the same files with zlib.
 *
 * usage: bench_convert_idx [SEQSTORE_CLI] [OUT_DIR]
 *   SEQSTORE_CLI defaults to ./seqstore, OUT_DIR to /tmp. Target: < 1 s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <zlib.h>

#define FM "/usr/share/datasets/fashion-mnist/"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double gunzip_seconds(const char *path, size_t *bytes) {
    static char buf[1 << 18];
    double t0 = now();
    gzFile gz = gzopen(path, "rb");
    int r;
    *bytes = 0;
    if (!gz) return -1;
    while ((r = gzread(gz, buf, sizeof buf)) > 0) *bytes += (size_t)r;
    gzclose(gz);
    return now() - t0;
}

int main(int argc, char **argv) {
    const char *cli = argc > 1 ? argv[1] : "./seqstore";
    const char *out = argc > 2 ? argv[2] : "/tmp";
    char cmd[2048];
    double best = 1e9, base = 1e9;
    size_t ib = 0, lb = 0;
    for (int rep = 0; rep < 3; rep++) {
        double a = gunzip_seconds(FM "train-images-idx3-ubyte.gz", &ib);
        double b = gunzip_seconds(FM "train-labels-idx1-ubyte.gz", &lb);
        if (a < 0 || b < 0) {
            fprintf(stderr, "cannot read %s\n", FM);
            return 1;
        }
        if (a + b < base) base = a + b;
    }
    snprintf(cmd, sizeof cmd,
             "%s convert idx " FM "train-images-idx3-ubyte.gz --labels " FM
             "train-labels-idx1-ubyte.gz -o %s/bench_fmnist.ss --force --quiet",
             cli, out);
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now();
        int st = system(cmd);
        double t = now() - t0;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "failed: %s\n", cmd);
            return 1;
        }
        if (t < best) best = t;
    }
    double mb = (double)(ib + lb) / 1e6;
    printf("fashion-mnist train: 60000 images, %.1f MB decompressed\n", mb);
    printf("  gunzip only (zlib):       %.3f s  %7.1f MB/s\n", base, mb / base);
    printf("  seqstore convert idx:     %.3f s  %7.1f MB/s  (target < 1 s: %s)\n", best, mb / best,
           best < 1.0 ? "met" : "MISSED");
    snprintf(cmd, sizeof cmd, "%s/bench_fmnist.ss", out);
    remove(cmd);
    snprintf(cmd, sizeof cmd, "%s/bench_fmnist.ss-lock", out);
    remove(cmd);
    return 0;
}
