/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_events.c - events as labels (`--events-as samples|windows`)
 * from EDF+ annotations written here with EDFlib and from BrainVision / GDF
 * markers (tests/biosig/bv_ref.py, BioSig's save2gdf): per-sample labels
 * against a naive painting of the known events, event windows against the
 * known digital samples, class names, fixed --events, the window reader
 * serving the windows with their labels, 1 and 2 threads giving the same
 * store, and the option errors; recording metadata (--meta header or CSV) per
 * window, and grouped folds that keep each subject inside one fold. */
#include "convtest.h"

#include "seqstore/bptt.h"
#include "seqstore/select.h"

#include <edflib.h>
#include <math.h>

#define RATE 100
#define SECS 10
#define NCH 2
#define REF "/usr/bin/python3 " SS_SOURCE_DIR "/tests/biosig/bv_ref.py"

typedef struct ev {
    double onset, dur; /* seconds; dur < 0: none */
    const char *text;
} ev;

static const ev EV_A[] = {
    {1.0, 0.5, "left"}, {3.0, 1.0, "right"}, {6.0, -1, "left"}, {9.9, 0.2, "rest"}};
static const ev EV_B[] = {{2.0, 0.25, "right"}, {5.0, 0.5, "left"}, {5.2, 0.1, "rest"}};

static int digital(int file, uint64_t t, int k) {
    return (int)((t * 37 + (uint64_t)k * 1000 + (uint64_t)file * 5000) % 20000) - 10000;
}

static void write_edf(const char *path, int file, const ev *e, int n, const char *patient) {
    int h = edfopen_file_writeonly(path, EDFLIB_FILETYPE_EDFPLUS, NCH);
    CHECK(h >= 0);
    for (int k = 0; k < NCH; k++) {
        CHECK(edf_set_samplefrequency(h, k, RATE) == 0);
        CHECK(edf_set_physical_maximum(h, k, 1000) == 0 &&
              edf_set_physical_minimum(h, k, -1000) == 0);
        CHECK(edf_set_digital_maximum(h, k, 32767) == 0 &&
              edf_set_digital_minimum(h, k, -32768) == 0);
        CHECK(edf_set_label(h, k, k ? "C4" : "C3") == 0);
    }
    CHECK(edf_set_patientcode(h, patient) == 0);
    CHECK(edf_set_startdatetime(h, 2001, 2, 3, 4, 5, 6) == 0);
    int buf[RATE];
    for (int s = 0; s < SECS; s++)
        for (int k = 0; k < NCH; k++) {
            for (int i = 0; i < RATE; i++) buf[i] = digital(file, (uint64_t)(s * RATE + i), k);
            CHECK(edfwrite_digital_samples(h, buf) == 0);
        }
    for (int i = 0; i < n; i++)
        CHECK(edfwrite_annotation_utf8(h, llround(e[i].onset * 10000),
                                       e[i].dur < 0 ? -1 : llround(e[i].dur * 10000),
                                       e[i].text) == 0);
    CHECK(edfclose_file(h) == 0);
}

/* class of `text` in the '\n'-separated names attribute */
static uint32_t class_in(const ss_store *s, const char *text) {
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, "label.names"));
    const char *p = a.data, *end = p + a.size;
    for (uint32_t k = 0; p <= end; k++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n == strlen(text) && !memcmp(p, text, n)) return k;
        if (!nl) break;
        p = nl + 1;
    }
    fprintf(stderr, "class '%s' not in label.names '%.*s'\n", text, (int)a.size,
            (const char *)a.data);
    exit(1);
}

static void check_names(const ss_store *s, const char *want) {
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, "label.names"));
    if (a.size != strlen(want) || memcmp(a.data, want, a.size)) {
        fprintf(stderr, "label.names '%.*s', expected '%s'\n", (int)a.size, (const char *)a.data,
                want);
        exit(1);
    }
}

/* Per-sample labels: a naive painting of the events in table order. */
static void check_samples(const ss_store *s, uint64_t ex, const ev *e, int n) {
    uint32_t fl;
    ss_view v;
    CHECK_OK(ss_field_index(&fl, s, "label"));
    CHECK_OK(ss_get(&v, s, fl, ex));
    CHECK(v.dtype == SS_U32);
    CHECK_EQ_U64(v.length, SECS * RATE);
    uint32_t want[SECS * RATE] = {0};
    for (int i = 0; i < n; i++) {
        long a = lround(e[i].onset * RATE), len = e[i].dur < 0 ? 1 : lround(e[i].dur * RATE);
        if (len < 1) len = 1;
        for (long t = a; t < a + len && t < SECS * RATE; t++) want[t] = class_in(s, e[i].text);
    }
    const uint32_t *got = v.data;
    for (int t = 0; t < SECS * RATE; t++)
        if (got[t] != want[t]) {
            fprintf(stderr, "example %" PRIu64 " sample %d: label %u, expected %u\n", ex, t, got[t],
                    want[t]);
            exit(1);
        }
}

/* The window reader serves per-sample labels: ss_window_reader_targets()
 * slices the `label` sequence beside each window of the signal. */
static void check_sample_targets(const ss_store *s) {
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    ss_window_reader *r;
    uint32_t fl;
    CHECK_OK(ss_field_index(&fl, s, "label"));
    o.field = 0;
    o.window = 100;
    o.lanes = 2;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    uint32_t tgt[2 * 100];
    uint64_t windows = 0;
    for (;;) {
        const ss_window_batch *b;
        if (CHECK_NEXT(ss_window_reader_next(&b, r))) break;
        CHECK_OK(ss_window_reader_targets(tgt, r, b, fl, SS_U32));
        for (uint32_t row = 0; row < b->size; row++) {
            if (!b->mask[row]) continue;
            ss_view v;
            CHECK_OK(ss_get(&v, s, fl, b->example[row]));
            const uint32_t *lab = (const uint32_t *)v.data + b->start[row];
            CHECK(memcmp(tgt + (size_t)row * 100, lab, 100 * sizeof *lab) == 0);
            windows++;
        }
        CHECK_OK(ss_window_reader_register(r, b, NULL));
    }
    CHECK_EQ_U64(windows, 2 * SECS * RATE / 100); /* every sample served once */
    ss_window_reader_free(r);
}

static void test_edf_samples(const char *a, const char *b) {
    const char *st = ss_test_keep_path("samples.ss");
    EXPECT_RUN(0, "convert edf '%s' '%s' --events-as samples -o '%s' --quiet", a, b, st);
    ss_store *s;
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_EQ_U64(ss_count(s), 2);
    check_names(s, "none\nleft\nright\nrest");
    check_samples(s, 0, EV_A, 4);
    check_samples(s, 1, EV_B, 3);
    check_sample_targets(s);
    ss_close(s);
    /* --events fixes the classes and their order; others stay 0 */
    st = ss_test_keep_path("samples_fixed.ss");
    EXPECT_RUN(0, "convert edf '%s' '%s' --events-as samples --events right,left -o '%s' --quiet",
               a, b, st);
    CHECK_OK(ss_open(&s, st, 0));
    check_names(s, "none\nright\nleft");
    const ev a_fixed[] = {EV_A[0], EV_A[1], EV_A[2]}, b_fixed[] = {EV_B[0], EV_B[1]};
    check_samples(s, 0, a_fixed, 3);
    check_samples(s, 1, b_fixed, 2);
    ss_close(s);
}

/* Windows [-0.5 s, 1.0 s) around each event: 150 samples. */
static void check_windows(const ss_store *s, const ev *const *evs, const int *nev) {
    uint32_t fl, fo, fsrc;
    CHECK_OK(ss_field_index(&fl, s, "label"));
    CHECK_OK(ss_field_index(&fo, s, "onset"));
    CHECK_OK(ss_field_index(&fsrc, s, "source"));
    uint64_t ex = 0;
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < nev[f]; i++) {
            long on = lround(evs[f][i].onset * RATE), a = on - 50;
            if (a < 0 || a + 150 > SECS * RATE) continue; /* left out */
            ss_view v;
            CHECK_OK(ss_get(&v, s, 0, ex));
            CHECK(v.dtype == SS_I16);
            CHECK_EQ_U64(v.length, 150);
            const int16_t *x = v.data;
            for (int t = 0; t < 150; t++)
                for (int k = 0; k < NCH; k++)
                    CHECK(x[t * NCH + k] == digital(f, (uint64_t)(a + t), k));
            CHECK_OK(ss_get(&v, s, fl, ex));
            CHECK_EQ_U64(*(const uint32_t *)v.data, class_in(s, evs[f][i].text));
            CHECK_OK(ss_get(&v, s, fo, ex));
            CHECK_EQ_U64(*(const int64_t *)v.data, on);
            CHECK_OK(ss_get(&v, s, fsrc, ex));
            CHECK_EQ_U64(((const uint64_t *)v.data)[0], f + 1);
            CHECK_EQ_U64(((const uint64_t *)v.data)[1], i + 1); /* the event's number */
            ex++;
        }
    CHECK_EQ_U64(ss_count(s), ex);
}

/* The window reader serves each event window once, with its label. */
static void check_window_reader(const ss_store *s) {
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    ss_window_reader *r;
    uint32_t fl;
    CHECK_OK(ss_field_index(&fl, s, "label"));
    o.field = 0;
    o.label_field = fl;
    o.window = 150;
    o.lanes = 2;
    CHECK_OK(ss_window_reader_open(&r, s, &o));
    uint64_t seen = 0;
    for (;;) {
        const ss_window_batch *b;
        if (CHECK_NEXT(ss_window_reader_next(&b, r))) break;
        CHECK(b->label && b->label_dtype == SS_U32);
        for (uint32_t row = 0; row < b->size; row++) {
            if (!b->mask[row]) continue;
            ss_view v;
            CHECK_OK(ss_get(&v, s, fl, b->example[row]));
            CHECK_EQ_U64(((const uint32_t *)b->label)[row], *(const uint32_t *)v.data);
            CHECK_OK(ss_get(&v, s, 0, b->example[row]));
            CHECK(memcmp((const char *)b->data + (size_t)row * 150 * NCH * 2, v.data,
                         150 * NCH * 2) == 0);
            seen++;
        }
        CHECK_OK(ss_window_reader_register(r, b, NULL));
    }
    CHECK_EQ_U64(seen, ss_count(s));
    ss_window_reader_free(r);
}

static void test_edf_windows(const char *a, const char *b) {
    const char *st = ss_test_keep_path("windows.ss"), *st2 = ss_test_keep_path("windows2.ss");
    EXPECT_RUN(0,
               "convert edf '%s' '%s' --events-as windows --window-start -0.5 --window-stop 1.0 "
               "--threads 1 -o '%s'",
               a, b, st);
    EXPECT_ERR("1 event window not inside the recording, left out");
    ss_store *s;
    CHECK_OK(ss_open(&s, st, 0));
    check_names(s, "left\nright\nrest");
    const ev *evs[2] = {EV_A, EV_B};
    const int nev[2] = {4, 3};
    check_windows(s, evs, nev);
    check_window_reader(s);
    ss_close(s);
    { /* --shard K/N: every shard numbers the classes over all inputs, as one
       * run does (b's shard alone would have numbered "right" first) */
        char args[2048];
        snprintf(args, sizeof args,
                 "convert edf '%s' '%s' --events-as windows --window-start -0.5 --window-stop 1.0 "
                 "--quiet",
                 a, b);
        ss_test_convert_shards(NULL, args, st, "windows-shard");
    }
    /* --append continues the classes of the store (its label.names): the
     * same examples as one conversion of both files */
    const char *ap = ss_test_keep_path("windows_append.ss");
    EXPECT_RUN(0,
               "convert edf '%s' --events-as windows --window-start -0.5 --window-stop 1.0 "
               "-o '%s' --quiet",
               b, ap);
    EXPECT_RUN(0,
               "convert edf '%s' --events-as windows --window-start -0.5 --window-stop 1.0 "
               "--append -o '%s' --quiet",
               a, ap);
    CHECK_OK(ss_open(&s, ap, 0));
    check_names(s, "right\nleft\nrest"); /* b's classes first, then a's new ones */
    const ev *evs_ba[2] = {EV_B, EV_A};
    uint64_t ex = 0;
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < (f ? 4 : 3); i++) {
            long on = lround(evs_ba[f][i].onset * RATE);
            if (on - 50 < 0 || on + 100 > SECS * RATE) continue;
            ss_view v;
            uint32_t fl;
            CHECK_OK(ss_field_index(&fl, s, "label"));
            CHECK_OK(ss_get(&v, s, fl, ex));
            CHECK_EQ_U64(*(const uint32_t *)v.data, class_in(s, evs_ba[f][i].text));
            ex++;
        }
    CHECK_EQ_U64(ss_count(s), ex);
    ss_close(s);
    /* two threads decode in parallel: the same store */
    EXPECT_RUN(0,
               "convert edf '%s' '%s' --events-as windows --window-start -0.5 --window-stop 1.0 "
               "--threads 2 -o '%s' --quiet",
               a, b, st2);
    EXPECT_SH(0,
              "%s cat '%s' --with-source > '%s.txt' && %s cat '%s' --with-source | cmp - "
              "'%s.txt'",
              SS_CLI, st, st, SS_CLI, st2, st);
}

static uint32_t fixed_u32(const ss_store *s, const char *field, uint64_t ex);
static void check_attr_text(const ss_store *s, const char *name, const char *want);

/* BrainVision markers through BioSig, and the GDF save2gdf makes of them. */
static void test_biosig(void) {
    const char *dir = ss_test_keep_path("bv"), *vhdr = ss_test_keep_path("bv/rec.vhdr"),
               *gdf = ss_test_keep_path("bv/rec.gdf"), *st = ss_test_keep_path("bv.ss");
    EXPECT_SH(0, "mkdir -p '%s' && " REF " make '%s' 1000 250 0", dir, dir);
    EXPECT_SH(0, "save2gdf '%s' '%s' > /dev/null", vhdr, gdf);
    EXPECT_RUN(0,
               "convert biosig '%s' '%s' --events-as windows --window-start -0.2 --window-stop "
               "0.4 -o '%s' --quiet",
               vhdr, gdf, st);
    size_t n;
    int16_t *x = (int16_t *)ss_test_read_file(ss_test_keep_path("bv/rec.int16"), &n);
    char *evtext = ss_test_read_file(ss_test_keep_path("bv/rec.events"), &n);
    ss_store *s;
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_EQ_U64(ss_count(s), 8); /* 4 markers in each of the two files */
    uint32_t fl, fo;
    CHECK_OK(ss_field_index(&fl, s, "label"));
    CHECK_OK(ss_field_index(&fo, s, "onset"));
    for (uint64_t ex = 0; ex < 8; ex++) {
        /* rec.events: "POSITION\tTYPE/DESCRIPTION" per marker */
        const char *line = evtext;
        for (uint64_t k = 0; k < ex % 4; k++) line = strchr(line, '\n') + 1;
        long pos = strtol(line, NULL, 10);
        char desc[64];
        const char *slash = strchr(line, '/'), *nl = strchr(line, '\n');
        snprintf(desc, sizeof desc, "%.*s", (int)(nl - slash - 1), slash + 1);
        ss_view v;
        CHECK_OK(ss_get(&v, s, fo, ex));
        CHECK_EQ_U64(*(const int64_t *)v.data, pos);
        CHECK_OK(ss_get(&v, s, fl, ex));
        CHECK_EQ_U64(*(const uint32_t *)v.data, class_in(s, desc));
        CHECK_OK(ss_get(&v, s, 0, ex));
        CHECK_EQ_U64(v.length, 150);
        CHECK(memcmp(v.data, x + (pos - 50) * 3, 150 * 3 * 2) == 0);
    }
    check_names(s, "S  1\nS  2\nR  1");
    ss_close(s);
    /* decoded in parallel: the same store as one thread */
    const char *st1 = ss_test_keep_path("bv1.ss"), *st2 = ss_test_keep_path("bv2.ss");
    EXPECT_RUN(0,
               "convert biosig '%s' '%s' '%s' '%s' --events-as samples --threads 1 -o '%s' "
               "--quiet",
               vhdr, gdf, vhdr, gdf, st1);
    EXPECT_RUN(0,
               "convert biosig '%s' '%s' '%s' '%s' --events-as samples --threads 2 -o '%s' "
               "--quiet",
               vhdr, gdf, vhdr, gdf, st2);
    EXPECT_SH(0,
              "%s cat '%s' --with-source > '%s.txt' && %s cat '%s' --with-source | cmp - "
              "'%s.txt'",
              SS_CLI, st1, st1, SS_CLI, st2, st1);
    /* --meta from a CSV: the windows of both files carry the file's ids */
    const char *csv = ss_test_keep_path("bv.csv"), *rows = "path,subject,session\n"
                                                           "rec.vhdr,s1,a\nrec.gdf,s1,b\n";
    ss_test_write_file(csv, rows, strlen(rows));
    EXPECT_RUN(0,
               "convert biosig '%s' '%s' --events-as windows --window-start -0.2 --window-stop "
               "0.4 --meta '%s' -o '%s' --quiet --force",
               vhdr, gdf, csv, st);
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_EQ_U64(ss_count(s), 8);
    check_attr_text(s, "recording.names", "rec.vhdr\nrec.gdf");
    check_attr_text(s, "session.names", "a\nb");
    for (uint64_t ex = 0; ex < 8; ex++) {
        CHECK_EQ_U64(fixed_u32(s, "subject", ex), 0);
        CHECK_EQ_U64(fixed_u32(s, "session", ex), ex / 4);
        CHECK_EQ_U64(fixed_u32(s, "recording", ex), ex / 4);
    }
    ss_close(s);
    /* --meta header: no session (zero bytes of session.names are one empty
     * name, id 0), kept through --append */
    EXPECT_RUN(0, "convert biosig '%s' --meta header -o '%s' --quiet --force", vhdr, st);
    EXPECT_RUN(0, "convert biosig '%s' --meta header --append -o '%s' --quiet", gdf, st);
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_EQ_U64(ss_count(s), 2);
    check_attr_text(s, "session.names", "");
    check_attr_text(s, "recording.names", "rec.vhdr\nrec.gdf");
    ss_lines *l;
    CHECK_OK(ss_lines_open(&l, s, SS_FIELD_NONE, "session.names"));
    CHECK_EQ_U64(ss_lines_count(l), 1);
    ss_lines_free(l);
    for (uint64_t ex = 0; ex < 2; ex++) {
        CHECK_EQ_U64(fixed_u32(s, "session", ex), 0);
        CHECK_EQ_U64(fixed_u32(s, "recording", ex), ex);
    }
    ss_close(s);
    /* per-sample: each marker covers its one sample (size 1) */
    st = ss_test_keep_path("bvs.ss");
    EXPECT_RUN(0, "convert biosig '%s' --events-as samples -o '%s' --quiet", vhdr, st);
    CHECK_OK(ss_open(&s, st, 0));
    ss_view v;
    CHECK_OK(ss_field_index(&fl, s, "label"));
    CHECK_OK(ss_get(&v, s, fl, 0));
    CHECK_EQ_U64(v.length, 1000);
    const uint32_t *lab = v.data;
    uint64_t nz = 0;
    for (int t = 0; t < 1000; t++) nz += lab[t] != 0;
    CHECK_EQ_U64(nz, 4);
    CHECK(lab[100] == 1 && lab[350] == 2 && lab[600] == 3 && lab[900] == 1);
    ss_close(s);
    /* a 'New Segment' marker without its date (BioSig 2.5 mis-read the
     * markers after it): every marker where it is, the samples unchanged */
    const char *seg = ss_test_keep_path("seg");
    EXPECT_SH(0, "mkdir -p '%s' && " REF " make '%s' 1000 250 1", seg, seg);
    EXPECT_RUN(0, "convert biosig '%s/rec.vhdr' --events-as samples -o '%s' --quiet --force", seg,
               st);
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_OK(ss_get(&v, s, fl, 0));
    lab = v.data;
    nz = 0;
    for (int t = 0; t < 1000; t++) nz += lab[t] != 0;
    CHECK_EQ_U64(nz, 5);
    CHECK(lab[0] == 1 && lab[100] == 2 && lab[350] == 3 && lab[600] == 4 && lab[900] == 2);
    check_names(s, "none\nstart of a new segment (after a break)\nS  1\nS  2\nR  1");
    CHECK_OK(ss_get(&v, s, 0, 0));
    CHECK(v.length == 1000 && memcmp(v.data, x, 1000 * 3 * 2) == 0);
    ss_close(s);
    free(x);
    free(evtext);
}

static uint32_t fixed_u32(const ss_store *s, const char *field, uint64_t ex) {
    uint32_t f;
    ss_view v;
    CHECK_OK(ss_field_index(&f, s, field));
    CHECK_OK(ss_get(&v, s, f, ex));
    CHECK(v.dtype == SS_U32);
    return *(const uint32_t *)v.data;
}

static void check_attr_text(const ss_store *s, const char *name, const char *want) {
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, name));
    if (a.size != strlen(want) || memcmp(a.data, want, a.size)) {
        fprintf(stderr, "%s '%.*s', expected '%s'\n", name, (int)a.size, (const char *)a.data,
                want);
        exit(1);
    }
}

/* Grouped k-fold on `subject`: no subject in both train and valid, the
 * folds cover every window once. */
static void check_grouped_folds(const ss_store *s, uint32_t k) {
    uint64_t n = ss_count(s), covered = 0;
    uint32_t fs;
    ss_selection *all;
    CHECK_OK(ss_field_index(&fs, s, "subject"));
    CHECK_OK(ss_selection_all(&all, n));
    int64_t *g = malloc(n * sizeof *g);
    CHECK(g);
    CHECK_OK(ss_selection_field_values(g, s, all, fs));
    for (uint64_t i = 0; i < n; i++) CHECK_EQ_U64(g[i], fixed_u32(s, "subject", i));
    ss_kfold_options o = SS_KFOLD_OPTIONS_INIT;
    o.groups = g;
    for (uint32_t f = 0; f < k; f++) {
        ss_selection *tr, *va;
        CHECK_OK(ss_selection_kfold(&tr, &va, all, k, f, &o));
        covered += ss_selection_count(va);
        for (uint64_t i = 0; i < ss_selection_count(va); i++) {
            uint64_t x;
            CHECK_OK(ss_selection_index(&x, va, i));
            for (uint64_t j = 0; j < ss_selection_count(tr); j++) {
                uint64_t y;
                CHECK_OK(ss_selection_index(&y, tr, j));
                CHECK(g[x] != g[y]);
            }
        }
        ss_selection_free(tr);
        ss_selection_free(va);
    }
    CHECK_EQ_U64(covered, n);
    free(g);
    ss_selection_free(all);
}

static void test_meta(const char *a, const char *b, const char *c) {
    const char *st = ss_test_keep_path("meta.ss"), *csv = ss_test_keep_path("meta.csv");
    EXPECT_RUN(0,
               "convert edf '%s' '%s' '%s' --events-as windows --window-start -0.5 --window-stop "
               "1.0 --meta header -o '%s' --quiet",
               a, b, c, st);
    ss_store *s;
    CHECK_OK(ss_open(&s, st, 0));
    /* a: 3 windows (subjA), b: 3 (subjB), c: 3 (subjA again) */
    CHECK_EQ_U64(ss_count(s), 9);
    check_attr_text(s, "subject.names", "subjA\nsubjB");
    check_attr_text(s, "recording.names", "a.edf\nb.edf\nc.edf");
    check_attr_text(s, "session.names", "2001-02-03");
    const uint32_t subj[9] = {0, 0, 0, 1, 1, 1, 0, 0, 0}, rec[9] = {0, 0, 0, 1, 1, 1, 2, 2, 2};
    for (uint64_t i = 0; i < 9; i++) {
        CHECK_EQ_U64(fixed_u32(s, "subject", i), subj[i]);
        CHECK_EQ_U64(fixed_u32(s, "recording", i), rec[i]);
        CHECK_EQ_U64(fixed_u32(s, "session", i), 0);
    }
    check_grouped_folds(s, 2);
    ss_close(s);
    /* a CSV overrides: subject and session per path; recording from the name */
    const char *rows = "path,subject,session\na.edf,p7,s1\nb.edf,p9,s1\nc.edf,p9,s2\n";
    ss_test_write_file(csv, rows, strlen(rows));
    EXPECT_RUN(0, "convert edf '%s' '%s' '%s' --meta '%s' -o '%s' --quiet --force", a, b, c, csv,
               st);
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_EQ_U64(ss_count(s), 3);
    check_attr_text(s, "subject.names", "p7\np9");
    check_attr_text(s, "session.names", "s1\ns2");
    const uint32_t subj2[3] = {0, 1, 1}, ses2[3] = {0, 0, 1};
    for (uint64_t i = 0; i < 3; i++) {
        CHECK_EQ_U64(fixed_u32(s, "subject", i), subj2[i]);
        CHECK_EQ_U64(fixed_u32(s, "session", i), ses2[i]);
        CHECK_EQ_U64(fixed_u32(s, "recording", i), i);
    }
    check_grouped_folds(s, 2);
    ss_close(s);
    /* a file without a row, a CSV without the columns */
    ss_test_write_file(csv, "path,subject\na.edf,p7\n", 22);
    EXPECT_RUN(1, "convert edf '%s' '%s' --meta '%s' -o '%s' --quiet --force", a, b, csv, st);
    EXPECT_ERR("b.edf: no row for this file in ");
    ss_test_write_file(csv, "path,who\na.edf,p7\n", 18);
    EXPECT_RUN(1, "convert edf '%s' --meta '%s' -o '%s' --quiet --force", a, csv, st);
    EXPECT_ERR("meta.csv:1: the header line must name `path` and at least one of subject, "
               "session, recording");
    ss_test_write_file(csv, "path,subject\na.edf,p7,x\n", 24);
    EXPECT_RUN(1, "convert edf '%s' --meta '%s' -o '%s' --quiet --force", a, csv, st);
    EXPECT_ERR("meta.csv:2: 3 cells, the header has 2");
}

/* Class names with an empty one through --append (an annotation without
 * text): label.names is a separated line list (spec/FORMAT.md 7.1), so the
 * store "left" LF holds two classes, and the appended file's new class
 * "right" must come after them, not take the empty name's id. */
static const ev EV_E1[] = {{1.0, 0.5, "left"}, {3.0, 0.5, ""}};
static const ev EV_E2[] = {{2.0, 0.5, "right"}, {4.0, 0.5, ""}, {6.0, 0.5, "left"}};
static const ev EV_E0[] = {{2.0, 0.5, ""}};

static void check_labels(const ss_store *s, const uint32_t *want, uint64_t n) {
    uint32_t fl;
    CHECK_OK(ss_field_index(&fl, s, "label"));
    CHECK_EQ_U64(ss_count(s), n);
    for (uint64_t i = 0; i < n; i++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, fl, i));
        CHECK_EQ_U64(*(const uint32_t *)v.data, want[i]);
    }
}

static void test_empty_label_append(void) {
    const char *f1 = ss_test_keep_path("e1.edf"), *f2 = ss_test_keep_path("e2.edf"),
               *f0 = ss_test_keep_path("e0.edf"), *f3 = ss_test_keep_path("e3.edf"),
               *st = ss_test_keep_path("empty_label.ss"),
               *win = "--events-as windows --window-start -0.5 --window-stop 1.0";
    write_edf(f1, 0, EV_E1, 2, "s");
    write_edf(f2, 1, EV_E2, 3, "s");
    write_edf(f0, 2, EV_E0, 1, "s");
    write_edf(f3, 3, EV_E1, 0, "s"); /* no annotations */
    ss_store *s;
    EXPECT_RUN(0, "convert edf '%s' %s -o '%s' --quiet", f1, win, st);
    CHECK_OK(ss_open(&s, st, 0));
    check_names(s, "left\n");
    ss_close(s);
    EXPECT_RUN(0, "convert edf '%s' %s --append -o '%s' --quiet", f2, win, st);
    CHECK_OK(ss_open(&s, st, 0));
    check_names(s, "left\n\nright");
    const uint32_t want[5] = {0, 1, 2, 1, 0}; /* left, "", right, "", left */
    check_labels(s, want, 5);
    ss_close(s);
    /* zero bytes are one empty name: "right" appended is class 1 */
    EXPECT_RUN(0, "convert edf '%s' %s -o '%s' --quiet --force", f0, win, st);
    CHECK_OK(ss_open(&s, st, 0));
    check_names(s, "");
    ss_close(s);
    EXPECT_RUN(0, "convert edf '%s' %s --append -o '%s' --quiet", f2, win, st);
    CHECK_OK(ss_open(&s, st, 0));
    check_names(s, "\nright\nleft");
    const uint32_t want0[4] = {0, 1, 0, 2};
    check_labels(s, want0, 4);
    ss_close(s);
    /* a store without events (and so without examples) has no classes: the
     * appended file numbers them as one conversion of it would */
    EXPECT_RUN(0, "convert edf '%s' %s -o '%s' --quiet --force", f3, win, st);
    CHECK_OK(ss_open(&s, st, 0));
    check_names(s, "");
    CHECK_EQ_U64(ss_count(s), 0);
    ss_close(s);
    EXPECT_RUN(0, "convert edf '%s' %s --append -o '%s' --quiet", f1, win, st);
    CHECK_OK(ss_open(&s, st, 0));
    check_names(s, "left\n");
    const uint32_t want3[2] = {0, 1};
    check_labels(s, want3, 2);
    ss_close(s);
}

/* --meta header through --append: subject.names is a separated line list, so
 * a recording without a patient code after P01 makes "P01" LF (P01 and the
 * empty name), and P02 appended must be the third subject; each example keeps
 * its subject's name, read back through ss_lines, `cat` and `export`. */
static void test_meta_append(void) {
    const char *p1 = ss_test_keep_path("p01.edf"), *x = ss_test_keep_path("x.edf"),
               *p2 = ss_test_keep_path("p02.edf"), *st = ss_test_keep_path("meta_append.ss"),
               *out = ss_test_keep_path("meta_append.txt");
    write_edf(p1, 0, EV_A, 0, "P01");
    write_edf(x, 1, EV_A, 0, ""); /* EDF+ writes "X": no patient code */
    write_edf(p2, 2, EV_A, 0, "P02");
    EXPECT_RUN(0, "convert edf '%s' '%s' --meta header -o '%s' --quiet", p1, x, st);
    ss_store *s;
    CHECK_OK(ss_open(&s, st, 0));
    check_attr_text(s, "subject.names", "P01\n");
    ss_close(s);
    EXPECT_RUN(0, "convert edf '%s' --meta header --append -o '%s' --quiet", p2, st);
    CHECK_OK(ss_open(&s, st, 0));
    check_attr_text(s, "subject.names", "P01\n\nP02");
    check_attr_text(s, "recording.names", "p01.edf\nx.edf\np02.edf");
    uint32_t fs;
    ss_lines *l;
    CHECK_OK(ss_field_index(&fs, s, "subject"));
    CHECK_OK(ss_lines_open(&l, s, fs, "names"));
    CHECK_EQ_U64(ss_lines_count(l), 3);
    const char *const want[3] = {"P01", "", "P02"};
    for (uint64_t i = 0; i < 3; i++) {
        size_t n;
        const char *name;
        CHECK_OK(ss_lines_get(&name, &n, l, fixed_u32(s, "subject", i)));
        CHECK(name && n == strlen(want[i]) && !memcmp(name, want[i], n));
        CHECK_EQ_U64(fixed_u32(s, "recording", i), i);
    }
    ss_lines_free(l);
    ss_close(s);
    /* the CLI prints the same ids */
    EXPECT_SH(0, "%s cat '%s' --field subject --with-source > '%s'", SS_CLI, st, out);
    size_t n;
    char *text = ss_test_read_file(out, &n);
    char lines[2048];
    snprintf(lines, sizeof lines, "%s:1\t0\n%s:1\t1\n%s:1\t2\n", p1, x, p2);
    CHECK(!strcmp(text, lines));
    free(text);
    EXPECT_SH(0, "%s export '%s' --format jsonl --field subject -o '%s' --force", SS_CLI, st, out);
    text = ss_test_read_file(out, &n);
    CHECK(!strcmp(text, "{\"index\":0,\"subject\":0}\n{\"index\":1,\"subject\":1}\n"
                        "{\"index\":2,\"subject\":2}\n"));
    free(text);
}

static void test_errors(const char *a) {
    const char *st = ss_test_keep_path("err.ss"), *csv = ss_test_keep_path("lab.csv");
    EXPECT_RUN(2, "convert edf '%s' --events-as trials -o '%s'", a, st);
    EXPECT_ERR("--events-as takes samples or windows, not 'trials'");
    EXPECT_RUN(2, "convert edf '%s' --events-as windows --window-start 0 -o '%s'", a, st);
    EXPECT_ERR("--events-as windows needs --window-start S --window-stop S");
    EXPECT_RUN(2, "convert edf '%s' --window-start 0 --window-stop 1 -o '%s'", a, st);
    EXPECT_ERR("--window-start/--window-stop need --events-as windows");
    EXPECT_RUN(2, "convert edf '%s' --events-as windows --window-start 1 --window-stop 0.5 -o '%s'",
               a, st);
    EXPECT_ERR("--window-stop (0.5) must be after --window-start (1)");
    EXPECT_RUN(2, "convert edf '%s' --events-as windows --window-start x --window-stop 1 -o '%s'",
               a, st);
    EXPECT_ERR("--window-start: 'x' is not a number of seconds");
    EXPECT_RUN(2, "convert edf '%s' --events left -o '%s'", a, st);
    EXPECT_ERR("--events needs --events-as samples or windows");
    ss_test_write_file(csv, "path,label\na.edf,x\n", 19);
    EXPECT_RUN(2, "convert edf '%s' --events-as samples --labels '%s' -o '%s'", a, csv, st);
    EXPECT_ERR("--labels and --events-as both make the field `label`");
    EXPECT_RUN(2, "convert biosig '%s' --events-as samples --events , -o '%s'", a, st);
    EXPECT_ERR("--events: empty event name");
}

int main(void) {
    const char *a = ss_test_keep_path("a.edf"), *b = ss_test_keep_path("b.edf");
    write_edf(a, 0, EV_A, 4, "subjA");
    write_edf(b, 1, EV_B, 3, "subjB");
    test_edf_samples(a, b);
    test_edf_windows(a, b);
    test_biosig();
    const char *c = ss_test_keep_path("c.edf");
    write_edf(c, 2, EV_B, 3, "subjA");
    test_meta(a, b, c);
    test_empty_label_append();
    test_meta_append();
    test_errors(a);
    return 0;
}
