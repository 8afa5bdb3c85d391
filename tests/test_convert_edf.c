/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_edf.c - `seqstore convert edf` against EDFlib.
 *
 * The recordings are written here with EDFlib's writer (21 channels at
 * 250 Hz, a few minutes each, EDF+ and BDF+, with annotations), plus broken
 * ones (truncated, a header lying about its record count, mixed sample
 * rates, a missing channel). Every converted value is checked against
 * EDFlib's own edfread_physical_samples of the source file. */
#include "testutil.h"

#include <edflib.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define NCH 21
static const char *const LABELS[NCH] = {"Fp1", "Fp2", "F3", "F4", "C3", "C4", "P3",
                                        "P4",  "O1",  "O2", "F7", "F8", "T3", "T4",
                                        "T5",  "T6",  "Fz", "Cz", "Pz", "A1", "A2"};

static char dir[512];

static const char *path_of(const char *name) {
    static char buf[8][600];
    static int slot;
    slot = (slot + 1) % 8;
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", dir, name);
    return buf[slot];
}

static int run_cli(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int run_cli(char *err, size_t errlen, const char *fmt, ...) {
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return ss_test_cli(err, errlen, NULL, "%s --quiet", args);
}

/* ------------------------------------------------------ test recordings */

typedef struct rec_spec {
    int bdf, nch, seconds;
    int odd_rate_channel; /* -1, or a channel sampled at 500 Hz */
    int first_label;      /* LABELS[first_label + k] for channel k */
} rec_spec;

static double phys_range(int k) {
    return 300.0 + 10.0 * k;
}

/* Write a recording with EDFlib; annotations at 1.5 s, 10.25 s and near the end. */
static void write_rec(const char *path, const rec_spec *r, uint64_t seed) {
    int h = edfopen_file_writeonly(path, r->bdf ? EDFLIB_FILETYPE_BDFPLUS : EDFLIB_FILETYPE_EDFPLUS,
                                   r->nch);
    CHECK(h >= 0);
    for (int k = 0; k < r->nch; k++) {
        int rate = k == r->odd_rate_channel ? 500 : 250;
        CHECK(edf_set_samplefrequency(h, k, rate) == 0);
        CHECK(edf_set_physical_maximum(h, k, phys_range(k)) == 0);
        CHECK(edf_set_physical_minimum(h, k, -phys_range(k)) == 0);
        CHECK(edf_set_digital_maximum(h, k, r->bdf ? 8388607 : 32767) == 0);
        CHECK(edf_set_digital_minimum(h, k, r->bdf ? -8388608 : -32768) == 0);
        CHECK(edf_set_label(h, k, LABELS[(r->first_label + k) % NCH]) == 0);
        CHECK(edf_set_physical_dimension(h, k, "uV") == 0);
    }
    CHECK(edf_set_startdatetime(h, 2021, 3, 4, 5, 6, 7) == 0);
    double buf[500];
    for (int s = 0; s < r->seconds; s++)
        for (int k = 0; k < r->nch; k++) {
            int rate = k == r->odd_rate_channel ? 500 : 250;
            for (int i = 0; i < rate; i++) {
                double t = s + (double)i / rate;
                double noise = (double)(ss_test_rand(&seed) % 1000) / 1000.0 - 0.5;
                buf[i] = 0.6 * phys_range(k) * sin(2 * M_PI * (1 + k) * t) + 20 * noise;
            }
            CHECK(edfwrite_physical_samples(h, buf) == 0);
        }
    CHECK(edfwrite_annotation_utf8(h, 15000, 5000, "eyes closed") == 0);
    CHECK(edfwrite_annotation_utf8(h, 102500, -1, "spike\tburst") == 0);
    CHECK(edfwrite_annotation_utf8(h, (long long)(r->seconds - 1) * 10000, 10000, "end") == 0);
    CHECK(edfclose_file(h) == 0);
}

static void copy_file(const char *from, const char *to, long cut, long patch_at,
                      const char *patch) {
    FILE *f = fopen(from, "rb");
    CHECK(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n);
    CHECK(b && fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    if (patch) memcpy(b + patch_at, patch, strlen(patch));
    f = fopen(to, "wb");
    CHECK(f && fwrite(b, 1, (size_t)(n - cut), f) == (size_t)(n - cut));
    fclose(f);
    free(b);
}

/* ------------------------------------------------------------- checks */

static const void *attr_of(const ss_store *s, const char *name, uint32_t type, uint64_t *size) {
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, name));
    CHECK_EQ_U64(a.type, type);
    *size = a.size;
    return a.data;
}

/* Example `ex` of `s` (channels `sig` of the file) against EDFlib's physical
 * samples of `path`. */
static void check_example(const ss_store *s, uint64_t ex, const char *path, const int *sig,
                          int nsig, int physical) {
    struct edf_hdr_struct *hdr = malloc(sizeof *hdr);
    ss_view v;
    uint64_t sz;
    CHECK(hdr);
    CHECK(edfopen_file_readonly(path, hdr, EDFLIB_READ_ALL_ANNOTATIONS) == 0);
    CHECK_OK(ss_get(&v, s, 0, ex));
    const long long T = hdr->signalparam[sig[0]].smp_in_file;
    CHECK_EQ_U64(v.length, (uint64_t)T);
    CHECK_EQ_U64(v.row_bytes, (uint64_t)nsig * ss_dtype_size(v.dtype));
    const double *gain = NULL, *offset = NULL, *edf_offset = NULL;
    if (!physical) {
        gain = attr_of(s, "signal.gain", SS_F64, &sz);
        CHECK_EQ_U64(sz, 8 * (uint64_t)nsig);
        offset = attr_of(s, "signal.offset", SS_F64, &sz);
        edf_offset = attr_of(s, "signal.edf_offset", SS_F64, &sz);
    }
    double *phys = malloc((size_t)T * sizeof *phys);
    CHECK(phys);
    for (int k = 0; k < nsig; k++) {
        const struct edf_param_struct *p = &hdr->signalparam[sig[k]];
        double tol = (p->phys_max - p->phys_min) * 1e-6; /* float32 precision of the range */
        CHECK(edfseek(hdr->handle, sig[k], 0, EDFSEEK_SET) == 0); /* sig may repeat */
        CHECK(edfread_physical_samples(hdr->handle, sig[k], (int)T, phys) == T);
        for (long long t = 0; t < T; t++) {
            double got;
            size_t at = (size_t)t * (size_t)nsig + (size_t)k;
            if (physical) {
                CHECK_EQ_U64(v.dtype, SS_F32);
                float f = ((const float *)v.data)[at];
                CHECK(f == (float)phys[t]);
                continue;
            }
            long d = v.dtype == SS_I16 ? ((const int16_t *)v.data)[at]
                                       : (long)((const int32_t *)v.data)[at];
            got = (double)d * gain[k] + offset[k];
            if (fabs(got - phys[t]) > tol) {
                fprintf(stderr, "%s ch %d t %lld: %.9g vs EDFlib %.9g\n", path, k, t, got, phys[t]);
                exit(1);
            }
            /* EDFlib's own form is bit-exact */
            CHECK(gain[k] * (edf_offset[k] + (double)d) == phys[t]);
        }
    }
    /* annotations: EDFlib's list, as text lines */
    ss_view a;
    char want[4096];
    size_t n = 0;
    CHECK_OK(ss_get(&a, s, 1, ex));
    for (long long i = 0; i < hdr->annotations_in_file; i++) {
        struct edf_annotation_struct an;
        CHECK(edf_get_annotation(hdr->handle, (int)i, &an) == 0);
        for (char *c = an.annotation; *c; c++)
            if (*c == '\t') *c = ' ';
        char dur[48] = "";
        if (an.duration_l >= 0)
            snprintf(dur, sizeof dur, "%lld.%07lld", an.duration_l / EDFLIB_TIME_DIMENSION,
                     an.duration_l % EDFLIB_TIME_DIMENSION);
        n += (size_t)snprintf(want + n, sizeof want - n, "%lld.%07lld\t%s\t%s\n",
                              an.onset / EDFLIB_TIME_DIMENSION, an.onset % EDFLIB_TIME_DIMENSION,
                              dur, an.annotation);
    }
    CHECK_EQ_U64(a.length, n);
    CHECK(memcmp(a.data, want, n) == 0);
    CHECK(strstr(want, "1.5000000\t0.5000000\teyes closed\n"));
    CHECK(strstr(want, "\n10.2500000\t\tspike"));
    /* start time and duration */
    struct tm tm = {
        .tm_year = 121, .tm_mon = 2, .tm_mday = 4, .tm_hour = 5, .tm_min = 6, .tm_sec = 7};
    CHECK_OK(ss_get(&a, s, 2, ex));
    CHECK(*(const int64_t *)a.data == (int64_t)timegm(&tm) * EDFLIB_TIME_DIMENSION);
    CHECK_OK(ss_get(&a, s, 3, ex));
    CHECK(*(const int64_t *)a.data == hdr->file_duration);
    free(phys);
    edfclose_file(hdr->handle);
    free(hdr);
}

static void check_common_attrs(const ss_store *s, int nsig, const char *const *labels) {
    uint64_t sz;
    char want[512];
    size_t n = 0;
    for (int k = 0; k < nsig; k++)
        n += (size_t)snprintf(want + n, sizeof want - n, "%s%s", k ? "\n" : "", labels[k]);
    const char *t = attr_of(s, "signal.labels", SS_ATTR_TEXT, &sz);
    CHECK(sz == n && memcmp(t, want, n) == 0);
    t = attr_of(s, "signal.units", SS_ATTR_TEXT, &sz);
    CHECK(sz == 3 * (uint64_t)nsig - 1 && memcmp(t, "uV\nuV", 5) == 0);
    const double *rate = attr_of(s, "signal.sample_rate", SS_F64, &sz);
    CHECK(sz == 8 && *rate == 250.0);
}

/* Two stores hold the same fields and attributes. */
static void check_same(const char *a, const char *b) {
    ss_store *x, *y;
    CHECK_OK(ss_open(&x, a, 0));
    CHECK_OK(ss_open(&y, b, 0));
    CHECK_EQ_U64(ss_count(x), ss_count(y));
    CHECK_EQ_U64(ss_field_count(x), ss_field_count(y));
    for (uint32_t f = 0; f < ss_field_count(x); f++)
        for (uint64_t e = 0; e < ss_count(x); e++) {
            ss_view u, v;
            CHECK_OK(ss_get(&u, x, f, e));
            CHECK_OK(ss_get(&v, y, f, e));
            CHECK(u.length == v.length && u.row_bytes == v.row_bytes);
            CHECK(memcmp(u.data, v.data, u.length * u.row_bytes) == 0);
        }
    CHECK_EQ_U64(ss_attr_count(x), ss_attr_count(y));
    for (uint64_t k = 0; k < ss_attr_count(x); k++) {
        ss_attr u, v;
        CHECK_OK(ss_attr_at(&u, x, k));
        CHECK_OK(ss_attr_at(&v, y, k));
        CHECK(!strcmp(u.name, v.name) && u.size == v.size);
        if (strcmp(u.name, "convert.options")) CHECK(memcmp(u.data, v.data, u.size) == 0);
    }
    ss_close(x);
    ss_close(y);
}

/* `msg` with every occurrence of `store` replaced by "STORE". */
static void mask_store(char *msg, const char *store) {
    size_t n = strlen(store);
    char *p;
    while (n && (p = strstr(msg, store)) != NULL) {
        memmove(p + 5, p + n, strlen(p + n) + 1);
        memcpy(p, "STORE", 5);
    }
}

/* `ARGS --threads 2` and `--threads 3` (decoder processes, ordered.h) do
 * what `--threads 1` does: the same exit status, the same messages (a bad
 * file's error text comes from the decoder unchanged) and the same store. */
static void check_threads_agree(const char *env, const char *args, const char *name) {
    char one[600], many[600], e1[16384], en[16384];
    snprintf(one, sizeof one, "%s", path_of("agree1.ss"));
    int r1 = run_cli(e1, sizeof e1, "%s -o %s --force --threads 1", args, one);
    mask_store(e1, one);
    for (int t = 2; t <= 3; t++) {
        snprintf(many, sizeof many, "%s/agree%d.ss", dir, t);
        int rn =
            ss_test_cli(en, sizeof en, env, "%s -o %s --force --threads %d --quiet", args, many, t);
        mask_store(en, many);
        if (r1 != rn || strcmp(e1, en))
            fprintf(stderr, "%s, %d threads: status %d, 1 thread %d\n%s\n-- 1 thread:\n%s\n", name,
                    t, rn, r1, en, e1);
        CHECK_EQ_U64(rn, r1);
        CHECK(strcmp(e1, en) == 0);
        if (r1 == 0) check_same(one, many);
    }
}

int main(void) {
    char err[16384];
    snprintf(dir, sizeof dir, "%s", ss_test_tmpdir());
    const rec_spec e1 = {0, NCH, 180, -1, 0}, e2 = {0, NCH, 150, -1, 0}, e3 = {0, NCH, 200, -1, 0};
    const rec_spec b1 = {1, NCH, 120, -1, 0}, odd = {0, NCH, 30, 5, 0}, few = {0, 19, 30, -1, 0};
    char E1[600], E2[600], E3[600], B1[600], ODD[600], FEW[600], TR[600], LIE[600], S1[600],
        S2[600], S[600];
    snprintf(E1, sizeof E1, "%s", path_of("e1.edf"));
    snprintf(E2, sizeof E2, "%s", path_of("e2.edf"));
    snprintf(E3, sizeof E3, "%s", path_of("e3.edf"));
    snprintf(B1, sizeof B1, "%s", path_of("b1.bdf"));
    snprintf(ODD, sizeof ODD, "%s", path_of("odd.edf"));
    snprintf(FEW, sizeof FEW, "%s", path_of("few.edf"));
    snprintf(TR, sizeof TR, "%s", path_of("truncated.edf"));
    snprintf(LIE, sizeof LIE, "%s", path_of("lying.edf"));
    snprintf(S1, sizeof S1, "%s", path_of("t1.ss"));
    snprintf(S2, sizeof S2, "%s", path_of("t2.ss"));
    snprintf(S, sizeof S, "%s", path_of("s.ss"));
    write_rec(E1, &e1, 1);
    write_rec(E2, &e2, 2);
    write_rec(E3, &e3, 3);
    write_rec(B1, &b1, 4);
    write_rec(ODD, &odd, 5);
    write_rec(FEW, &few, 6);
    copy_file(E1, TR, 1000, 0, NULL);
    copy_file(E1, LIE, 0, 236, "181     "); /* header field "number of data records" */

    int all[NCH];
    for (int k = 0; k < NCH; k++) all[k] = k;

    /* EDF+, digital values, 2 threads and 1 thread: identical stores */
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s %s %s -o %s --threads 2", E1, E2, E3, S2),
                 0);
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s %s %s -o %s --threads 1", E1, E2, E3, S1),
                 0);
    check_same(S1, S2);
    { /* More inputs than slots, so that each slot is reused (3 threads: 4
       * slots; the same file may be listed twice): identical stores */
        char T3[600], T1[600], args[8192];
        snprintf(T3, sizeof T3, "%s", path_of("t7x3.ss"));
        snprintf(T1, sizeof T1, "%s", path_of("t7x1.ss"));
        snprintf(args, sizeof args, "convert edf %s %s %s %s %s %s %s", E1, E2, E3, E2, E1, E3, E1);
        CHECK_EQ_U64(run_cli(err, sizeof err, "%s -o %s --threads 3", args, T3), 0);
        CHECK_EQ_U64(run_cli(err, sizeof err, "%s -o %s --threads 1", args, T1), 0);
        check_same(T1, T3);
    }
    { /* decoder processes against one thread: more files than slots, bad
       * files in the middle (reported as with one thread, skipped with
       * --skip-bad), f32, events, windows, --meta, and recordings larger
       * than a shared slot (decoded again in the parent; the slots made
       * small by a test hook) */
        char args[8192];
        snprintf(args, sizeof args, "convert edf %s %s %s %s %s %s %s --physical f32", E1, E2, E3,
                 E2, E1, E3, E1);
        check_threads_agree(NULL, args, "f32");
        snprintf(args, sizeof args, "convert edf %s %s %s %s %s", E1, E2, FEW, E3, E1);
        check_threads_agree(NULL, args, "bad in the middle");
        /* and threads, when no process can be forked (test hook) */
        check_threads_agree("SS_TEST_NO_FORK=1", args, "threads, bad in the middle");
        snprintf(args, sizeof args, "convert edf %s %s %s %s %s %s %s", E1, E2, E3, E2, E1, E3, E1);
        check_threads_agree("SS_TEST_NO_FORK=1", args, "threads");
        snprintf(args, sizeof args, "convert edf %s %s %s %s %s %s %s --skip-bad", E1, TR, E2, FEW,
                 E3, LIE, E1);
        check_threads_agree(NULL, args, "--skip-bad");
        snprintf(args, sizeof args,
                 "convert edf %s %s %s %s --events-as windows --window-start -1 --window-stop 2",
                 E1, E2, E3, E2);
        check_threads_agree(NULL, args, "windows");
        snprintf(args, sizeof args, "convert edf %s %s %s %s --events-as samples --meta header", E3,
                 E2, E1, E3);
        check_threads_agree(NULL, args, "samples, meta");
        snprintf(args, sizeof args, "convert edf %s %s %s %s", E3, E1, E2, E1);
        check_threads_agree("SS_TEST_EDF_ARENA=2500000", args, "too large for a slot");
        /* a decoder process that dies (test hook, ordered.h): an error naming
         * its file, no hang */
        CHECK_EQ_U64(ss_test_cli(err, sizeof err, "SS_TEST_DECODER_DIE=2",
                                 "convert edf %s %s %s %s -o %s --force --threads 2 --quiet", E1,
                                 E2, E3, E1, S),
                     1);
        CHECK(strstr(err, E3) && strstr(err, "decoder process killed by signal 9"));
        /* the same over a store that exists: --force must not start a
         * thread (to close the old store) before the decoders fork, or
         * they would run as threads and the hook would not fire */
        CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s %s -o %s --force --quiet", E1, E2, S),
                     0);
        CHECK_EQ_U64(ss_test_cli(err, sizeof err, "SS_TEST_DECODER_DIE=1",
                                 "convert edf %s %s %s -o %s --force --threads 2 --quiet", E1, E2,
                                 E3, S),
                     1);
        CHECK(strstr(err, E2) && strstr(err, "decoder process killed by signal 9"));
    }
    { /* --shard K/N: the shards in order hold the same examples (whole files) */
        char args[2048];
        snprintf(args, sizeof args, "convert edf %s %s %s", E1, E2, E3);
        CHECK_EQ_U64(run_cli(err, sizeof err, "%s -o %s --force", args, S), 0);
        ss_test_convert_shards(NULL, args, S, "edf-shard");
    }
    ss_store *s;
    ss_field fi;
    CHECK_OK(ss_open(&s, S2, 0));
    CHECK_EQ_U64(ss_count(s), 3);
    CHECK_OK(ss_field_info(&fi, s, 0));
    CHECK(!strcmp(fi.name, "signal") && fi.dtype == SS_I16 && fi.ndim == 1 && fi.dims[0] == NCH);
    CHECK_EQ_U64(ss_length(s, 0, 0), 180 * 250);
    check_common_attrs(s, NCH, LABELS);
    check_example(s, 0, E1, all, NCH, 0);
    check_example(s, 1, E2, all, NCH, 0);
    check_example(s, 2, E3, all, NCH, 0);
    ss_close(s);

    /* BDF+: i32 digital samples */
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s -o %s --force", B1, S), 0);
    CHECK_OK(ss_open(&s, S, 0));
    CHECK_OK(ss_field_info(&fi, s, 0));
    CHECK(fi.dtype == SS_I32);
    check_example(s, 0, B1, all, NCH, 0);
    ss_close(s);

    /* --physical f32, EDF and BDF mixed */
    CHECK_EQ_U64(
        run_cli(err, sizeof err, "convert edf %s %s -o %s --force --physical f32", E2, B1, S), 0);
    CHECK_OK(ss_open(&s, S, 0));
    check_example(s, 0, E2, all, NCH, 1);
    check_example(s, 1, B1, all, NCH, 1);
    ss_close(s);

    /* --channels: case-insensitive, trimmed, in the order given */
    CHECK_EQ_U64(run_cli(err, sizeof err,
                         "convert edf %s %s -o %s --force --channels ' fp2, C3 ,o1'", E1, E3, S),
                 0);
    {
        const int sel[3] = {1, 4, 8};
        const char *const names[3] = {"Fp2", "C3", "O1"};
        CHECK_OK(ss_open(&s, S, 0));
        check_common_attrs(s, 3, names);
        check_example(s, 0, E1, sel, 3, 0);
        check_example(s, 1, E3, sel, 3, 0);
        ss_close(s);
    }

    /* a channel named twice is stored twice (each read starts at its sample) */
    CHECK_EQ_U64(run_cli(err, sizeof err,
                         "convert edf %s %s -o %s --force --channels Fp2,O1,fp2 --threads 2", E1,
                         E3, S),
                 0);
    {
        const int sel[3] = {1, 8, 1};
        CHECK_OK(ss_open(&s, S, 0));
        check_example(s, 0, E1, sel, 3, 0);
        check_example(s, 1, E3, sel, 3, 0);
        ss_close(s);
    }

    /* --channels Fp1 finds an EDF+ "EEG Fp1"; an exact label wins; ambiguity is an error */
    {
        const char *typed = path_of("typed.edf");
        const char *const tl[4] = {"EEG Fp1", "EEG Fp2", "EOG Fp2", "Fp2"};
        int h = edfopen_file_writeonly(typed, EDFLIB_FILETYPE_EDFPLUS, 4);
        CHECK(h >= 0);
        for (int k = 0; k < 4; k++) {
            CHECK(edf_set_samplefrequency(h, k, 10) == 0);
            CHECK(edf_set_physical_maximum(h, k, 100) == 0 &&
                  edf_set_physical_minimum(h, k, -100) == 0);
            CHECK(edf_set_digital_maximum(h, k, 32767) == 0 &&
                  edf_set_digital_minimum(h, k, -32768) == 0);
            CHECK(edf_set_label(h, k, tl[k]) == 0);
        }
        double buf[10];
        for (int s2 = 0; s2 < 2; s2++)
            for (int k = 0; k < 4; k++) {
                for (int i = 0; i < 10; i++) buf[i] = 10.0 * k + i;
                CHECK(edfwrite_physical_samples(h, buf) == 0);
            }
        CHECK(edfclose_file(h) == 0);
        /* fp1 -> "EEG Fp1" (signal 0); Fp2 -> the exact "Fp2" (signal 3), not "EEG/EOG Fp2" */
        CHECK_EQ_U64(
            run_cli(err, sizeof err, "convert edf %s -o %s --force --channels fp1,Fp2", typed, S),
            0);
        CHECK_OK(ss_open(&s, S, 0));
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, 0));
        const int16_t *d = v.data; /* [T][2]: physical 10k + i at sample i */
        CHECK(v.length == 20 && d[0] < d[1] && d[2] > d[0]);
        uint64_t sz;
        const char *labs = attr_of(s, "signal.labels", SS_ATTR_TEXT, &sz);
        CHECK(sz >= 11 && strncmp(labs, "EEG Fp1\nFp2", 11) == 0);
        ss_close(s);
        /* with only "EEG Fp2" and "EOG Fp2", a bare Fp2 names neither */
        const char *amb = path_of("ambiguous.edf");
        h = edfopen_file_writeonly(amb, EDFLIB_FILETYPE_EDFPLUS, 2);
        CHECK(h >= 0);
        for (int k = 0; k < 2; k++) {
            CHECK(edf_set_samplefrequency(h, k, 10) == 0);
            CHECK(edf_set_physical_maximum(h, k, 100) == 0 &&
                  edf_set_physical_minimum(h, k, -100) == 0);
            CHECK(edf_set_digital_maximum(h, k, 32767) == 0 &&
                  edf_set_digital_minimum(h, k, -32768) == 0);
            CHECK(edf_set_label(h, k, tl[k + 1]) == 0);
        }
        for (int k = 0; k < 2; k++) CHECK(edfwrite_physical_samples(h, buf) == 0);
        CHECK(edfclose_file(h) == 0);
        CHECK_EQ_U64(
            run_cli(err, sizeof err, "convert edf %s -o %s --force --channels Fp2", amb, S), 1);
        CHECK(strstr(err, "channel 'Fp2' is ambiguous"));
    }

    /* --labels: a label field and label.names (matched by file name) */
    {
        FILE *f = fopen(path_of("labels.csv"), "w");
        CHECK(f);
        fprintf(f, "path,label\n/elsewhere/e1.edf,normal\ne2.edf,abnormal\n%s,normal\n", E3);
        fclose(f);
        CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s %s %s -o %s --force --labels %s", E1,
                             E2, E3, S, path_of("labels.csv")),
                     0);
        CHECK_OK(ss_open(&s, S, 0));
        uint32_t fl = ss_test_field(s, "label");
        const uint32_t want[3] = {0, 1, 0};
        for (uint64_t e = 0; e < 3; e++) {
            ss_view v;
            CHECK_OK(ss_get(&v, s, (uint32_t)fl, e));
            CHECK_EQ_U64(*(const uint32_t *)v.data, want[e]);
        }
        uint64_t sz;
        const char *t = attr_of(s, "label.names", SS_ATTR_TEXT, &sz);
        CHECK(sz == 15 && !memcmp(t, "normal\nabnormal", 15));
        ss_close(s);
        /* a recording without a row is bad input */
        CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s %s -o %s --force --labels %s", E1, B1,
                             S, path_of("labels.csv")),
                     1);
        CHECK(strstr(err, B1) && strstr(err, "no row for this file"));
    }

    /* a missing channel names the file and lists its labels */
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s -o %s --force --channels Fp1,XYZ", E1, S),
                 1);
    CHECK(strstr(err, E1) && strstr(err, "no channel 'XYZ'; the file has: Fp1, Fp2, F3"));

    /* mixed sample rates: an error listing them, fine when not selected */
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s -o %s --force", ODD, S), 1);
    CHECK(strstr(err, ODD) && strstr(err, "different sample rates") && strstr(err, "C4 500 Hz") &&
          strstr(err, "Fp1 250 Hz"));
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s -o %s --force --channels Fp1,O2", ODD, S),
                 0);

    /* files that do not match the first: rejected, or skipped with --skip-bad */
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s %s -o %s --force", E1, FEW, S), 1);
    CHECK(strstr(err, FEW) && strstr(err, "19 channels selected, the store has 21"));
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s %s -o %s --force", E1, B1, S), 1);
    CHECK(strstr(err, B1) && strstr(err, "BDF (24-bit) file cannot join"));
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s %s %s %s %s -o %s --force --skip-bad", E1,
                         FEW, TR, E2, LIE, S),
                 0);
    CHECK(strstr(err, FEW) && strstr(err, TR) && strstr(err, LIE));
    CHECK_OK(ss_open(&s, S, 0));
    CHECK_EQ_U64(ss_count(s), 2);
    check_example(s, 1, E2, all, NCH, 0);
    ss_close(s);

    /* truncated file, and a header lying about its record count */
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s -o %s --force", TR, S), 1);
    CHECK(strstr(err, TR) && strstr(err, "does not match the header's record count"));
    CHECK(strstr(err, "file is "));
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s %s -o %s --force", E1, LIE, S), 1);
    CHECK(strstr(err, LIE) && strstr(err, "EDFlib"));

    /* --append: a matching file joins, a mismatching one is refused */
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s -o %s --append", E3, S1), 0);
    CHECK_OK(ss_open(&s, S1, 0));
    CHECK_EQ_U64(ss_count(s), 4);
    check_example(s, 3, E3, all, NCH, 0);
    ss_close(s);
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s -o %s --append", FEW, S1), 1);
    CHECK(strstr(err, "19 channels selected, the store has 21"));

    /* usage errors */
    CHECK_EQ_U64(run_cli(err, sizeof err, "convert edf %s -o %s --force --physical f64", E1, S), 2);
    printf("test_convert_edf: ok\n");
    return 0;
}
