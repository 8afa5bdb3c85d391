/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_edf_records.c - converters/edf_records.c reads exactly what
 * EDFlib's edfread_digital_samples / edfread_physical_samples read (EDF,
 * EDF+, BDF+; signals of several rates around annotation signals; digital
 * values outside the header's range clamped), and declines files whose size
 * is not the header plus the data records. */
#include "edf_records.h"
#include "testutil.h"

#include <fcntl.h>
#include <math.h>
#include <unistd.h>

#define NSIG 3
#define SECS 7

static const int rates[NSIG] = {250, 500, 250};

static void write_file(const char *path, int type, int dmin, int dmax) {
    int h = edfopen_file_writeonly(path, type, NSIG);
    CHECK(h >= 0);
    for (int k = 0; k < NSIG; k++) {
        char label[16];
        snprintf(label, sizeof label, "EEG C%d", k);
        CHECK(edf_set_samplefrequency(h, k, rates[k]) == 0);
        CHECK(edf_set_physical_maximum(h, k, 400.0 + k) == 0);
        CHECK(edf_set_physical_minimum(h, k, -300.0) == 0);
        CHECK(edf_set_digital_maximum(h, k, dmax) == 0);
        CHECK(edf_set_digital_minimum(h, k, dmin) == 0);
        CHECK(edf_set_label(h, k, label) == 0);
    }
    int buf[500];
    uint64_t seed = 5;
    for (int s = 0; s < SECS; s++)
        for (int k = 0; k < NSIG; k++) {
            for (int i = 0; i < rates[k]; i++)
                buf[i] = dmin + (int)(ss_test_rand(&seed) % (uint64_t)(dmax - dmin + 1));
            CHECK(edfwrite_digital_samples(h, buf) == 0);
        }
    if (type == EDFLIB_FILETYPE_EDFPLUS || type == EDFLIB_FILETYPE_BDFPLUS)
        CHECK(edfwrite_annotation_utf8(h, 10000, -1, "mark") == 0);
    CHECK(edfclose_file(h) == 0);
}

/* Overwrite `n` bytes at `at` (raw samples out of the digital range). */
static void patch(const char *path, long at, const void *bytes, size_t n) {
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, at, SEEK_SET) == 0 && fwrite(bytes, 1, n, f) == n);
    fclose(f);
}

/* Read signals `sig` (of one rate) both ways and compare, digital and
 * physical. */
static void check_same(const char *path, const int *sig, uint32_t nch) {
    struct edf_hdr_struct *h = malloc(sizeof *h);
    CHECK(h && edfopen_file_readonly(path, h, EDFLIB_READ_ALL_ANNOTATIONS) == 0);
    int bdf = h->filetype == EDFLIB_FILETYPE_BDF || h->filetype == EDFLIB_FILETYPE_BDFPLUS;
    long long T = h->signalparam[sig[0]].smp_in_file;
    int fd = open(path, O_RDONLY);
    ss_edf_layout L;
    CHECK(fd >= 0);
    CHECK_EQ_U64(ss_edf_layout_read(&L, fd, h), 0);
    double gain[NSIG + 1], off[NSIG + 1];
    for (uint32_t k = 0; k < nch; k++) {
        const struct edf_param_struct *p = &h->signalparam[sig[k]];
        gain[k] = (p->phys_max - p->phys_min) / (double)(p->dig_max - p->dig_min);
        off[k] = p->phys_max / gain[k] - (double)p->dig_max;
    }
    void *dig = malloc((size_t)T * nch * 4 + 1), *phys = malloc((size_t)T * nch * 4 + 1);
    int *want = malloc((size_t)T * sizeof *want);
    double *want_phys = malloc((size_t)T * sizeof *want_phys);
    unsigned char *buf = NULL;
    size_t cap = 0;
    CHECK(dig && phys && want && want_phys);
    CHECK_OK(ss_edf_read(dig, bdf ? SS_EDF_I32 : SS_EDF_I16, &L, fd, h, sig, nch, gain, off, &buf,
                         &cap));
    CHECK_OK(ss_edf_read(phys, SS_EDF_F32, &L, fd, h, sig, nch, gain, off, &buf, &cap));
    for (uint32_t k = 0; k < nch; k++) {
        CHECK(edfseek(h->handle, sig[k], 0, EDFSEEK_SET) == 0);
        CHECK(edfread_digital_samples(h->handle, sig[k], (int)T, want) == T);
        CHECK(edfseek(h->handle, sig[k], 0, EDFSEEK_SET) == 0);
        CHECK(edfread_physical_samples(h->handle, sig[k], (int)T, want_phys) == T);
        for (long long t = 0; t < T; t++) {
            size_t at = (size_t)t * nch + k;
            int got = bdf ? ((int32_t *)dig)[at] : ((int16_t *)dig)[at];
            if (got != want[t])
                fprintf(stderr, "%s: signal %d sample %lld: %d, EDFlib %d\n", path, sig[k], t, got,
                        want[t]);
            CHECK_EQ_U64((int64_t)got, (int64_t)want[t]);
            CHECK(((float *)phys)[at] == (float)want_phys[t]);
        }
    }
    free(buf);
    free(dig);
    free(phys);
    free(want);
    free(want_phys);
    close(fd);
    edfclose_file(h->handle);
    free(h);
}

/* 1 when the reader declines `path` after `grow` bytes were appended to it
 * (EDFlib, which checks the size, has opened it before). */
static int declined(const char *path, int grow) {
    struct edf_hdr_struct *h = malloc(sizeof *h);
    ss_edf_layout L;
    CHECK(h && edfopen_file_readonly(path, h, EDFLIB_DO_NOT_READ_ANNOTATIONS) == 0);
    FILE *f = fopen(path, "ab");
    for (int i = 0; i < grow; i++) CHECK(f && fputc(0, f) == 0);
    fclose(f);
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    int rc = ss_edf_layout_read(&L, fd, h);
    close(fd);
    edfclose_file(h->handle);
    free(h);
    return rc == 1;
}

int main(void) {
    char path[600];
    static const int pair[2] = {2, 0}, one[1] = {1}, annot[1] = {3};
    snprintf(path, sizeof path, "%s", ss_test_path("plus.edf"));
    write_file(path, EDFLIB_FILETYPE_EDFPLUS, -32768, 32767);
    check_same(path, pair, 2);
    check_same(path, one, 1);
    /* plain EDF (EDFlib writes EDF+ only: the reserved field blanked), where
     * "EDF Annotations" is an ordinary signal */
    snprintf(path, sizeof path, "%s", ss_test_path("plain.edf"));
    write_file(path, EDFLIB_FILETYPE_EDFPLUS, -2048, 2047);
    patch(path, 192, "     ", 5);
    check_same(path, pair, 2);
    check_same(path, one, 1);
    check_same(path, annot, 1);
    snprintf(path, sizeof path, "%s", ss_test_path("plus.bdf"));
    write_file(path, EDFLIB_FILETYPE_BDFPLUS, -8388608, 8388607);
    check_same(path, pair, 2);

    /* raw samples beyond the digital range: EDFlib clamps them */
    snprintf(path, sizeof path, "%s", ss_test_path("clamp.edf"));
    write_file(path, EDFLIB_FILETYPE_EDFPLUS, -100, 100);
    const unsigned char big[4] = {0x30, 0x75, 0xd0, 0x8a}; /* 30000, -30000 */
    long data = 256 * (NSIG + 2);                          /* + the annotation signal */
    patch(path, data, big, 4);                             /* signal 0, record 0 */
    patch(path, data + 2 * 250 + 6, big, 4);               /* signal 1 */
    check_same(path, pair, 2);
    check_same(path, one, 1);
    snprintf(path, sizeof path, "%s", ss_test_path("clamp.bdf"));
    write_file(path, EDFLIB_FILETYPE_BDFPLUS, -1000, 1000);
    const unsigned char big3[6] = {0xff, 0xff, 0x7f, 0x00, 0x00, 0x80};
    patch(path, 256 * (NSIG + 2) + 3 * (250 + 500) + 30, big3, 6); /* signal 2 */
    check_same(path, pair, 2);
    check_same(path, one, 1);

    /* a file that grew after EDFlib checked its size: declined (the caller
     * reads through EDFlib) */
    snprintf(path, sizeof path, "%s", ss_test_path("plus.edf"));
    CHECK(!declined(path, 0));
    CHECK(declined(path, 1));
    return 0;
}
