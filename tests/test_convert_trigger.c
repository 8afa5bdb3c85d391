/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_trigger.c - events from an event channel (`convert edf
 * --events-from status|channel:NAME`, --trigger-mask): BDF+ files written
 * here with EDFlib carry a BioSemi-style "Status" channel (trigger codes in
 * the low 16 bits, changing high bits above them, bit 23 set at times, a
 * code repeated after a return to zero, a direct change between codes, a
 * code at the first and at the last sample). Per-sample labels and event
 * windows are compared with a naive reference computed here, the event list
 * with MNE-Python's mne.find_events on the same files; --shard, --append,
 * 1 vs 2 threads; an EDF+ trigger channel with a negative code; the option
 * and input errors. */
#include "convtest.h"

#include <edflib.h>
#include <math.h>

#define RATE 100
#define SECS 50 /* T > EDF_CHUNK (4096): the channel is read in several chunks */
#define T (RATE * SECS)
#define NCH 2 /* signal channels; the Status channel comes third */
#define NFILES 2

typedef struct seg {
    int start, code; /* code from `start` to the next segment's start */
} seg;

static const seg SEG_A[] = {{0, 0},    {20, 5},   {30, 0},   {150, 65}, {180, 0},
                            {300, 65}, {320, 66}, {340, 12}, {360, 0},  {500, 65},
                            {510, 0},  {4095, 8}, {4097, 0}, {T - 1, 7}};
static const seg SEG_B[] = {{0, 3},   {10, 0},  {400, 66}, {430, 0},
                            {600, 9}, {650, 0}, {900, 3},  {950, 0}};
static const seg *SEGS[NFILES] = {SEG_A, SEG_B};
static const int NSEG[NFILES] = {14, 8};

static int digital(int file, int t, int k) {
    return (t * 37 + k * 1000 + file * 5000) % 20000 - 10000;
}

/* The 24-bit status word at t: the code, and high bits (16..23) that change
 * on their own, as BioSemi's CMS/battery/epoch bits do. */
static uint32_t status_word(int file, int t) {
    int code = 0;
    for (int i = 0; i < NSEG[file]; i++)
        if (SEGS[file][i].start <= t) code = SEGS[file][i].code;
    uint32_t hi = ((uint32_t)(t / 7 % 5) << 17) | ((t / 11) % 2 ? 0x800000u : 0) |
                  ((t / 13) % 2 ? 0x10000u : 0);
    return hi | (uint32_t)code;
}

/* As a BDF digital value: the word sign-extended from 24 bits. */
static int status_digital(int file, int t) {
    uint32_t w = status_word(file, t);
    return w & 0x800000u ? (int)w - 0x1000000 : (int)w;
}

static void write_bdf(const char *path, int file, int status_spr) {
    int h = edfopen_file_writeonly(path, EDFLIB_FILETYPE_BDFPLUS, NCH + 1);
    CHECK(h >= 0);
    for (int k = 0; k <= NCH; k++) {
        CHECK(edf_set_samplefrequency(h, k, k == NCH ? status_spr : RATE) == 0);
        CHECK(edf_set_physical_maximum(h, k, k == NCH ? 8388607 : 1000) == 0 &&
              edf_set_physical_minimum(h, k, k == NCH ? -8388608 : -1000) == 0);
        CHECK(edf_set_digital_maximum(h, k, 8388607) == 0 &&
              edf_set_digital_minimum(h, k, -8388608) == 0);
        CHECK(edf_set_label(h, k, k == NCH ? "Status" : k ? "C4" : "C3") == 0);
    }
    int buf[2 * RATE];
    for (int s = 0; s < SECS; s++)
        for (int k = 0; k <= NCH; k++) {
            int n = k == NCH ? status_spr : RATE;
            for (int i = 0; i < n; i++)
                buf[i] =
                    k == NCH ? status_digital(file, s * RATE + i) : digital(file, s * RATE + i, k);
            CHECK(edfwrite_digital_samples(h, buf) == 0);
        }
    CHECK(edfclose_file(h) == 0);
}

/* An EDF+ file whose third channel "TRIG" holds 16-bit codes (one negative). */
static void write_edf_trig(const char *path) {
    int h = edfopen_file_writeonly(path, EDFLIB_FILETYPE_EDFPLUS, NCH + 1);
    CHECK(h >= 0);
    for (int k = 0; k <= NCH; k++) {
        CHECK(edf_set_samplefrequency(h, k, RATE) == 0);
        CHECK(edf_set_physical_maximum(h, k, 32767) == 0 &&
              edf_set_physical_minimum(h, k, -32768) == 0);
        CHECK(edf_set_digital_maximum(h, k, 32767) == 0 &&
              edf_set_digital_minimum(h, k, -32768) == 0);
        CHECK(edf_set_label(h, k, k == NCH ? "TRIG" : k ? "C4" : "C3") == 0);
    }
    int buf[RATE];
    for (int s = 0; s < SECS; s++)
        for (int k = 0; k <= NCH; k++) {
            for (int i = 0; i < RATE; i++) {
                int t = s * RATE + i;
                buf[i] = k < NCH               ? digital(0, t, k)
                         : t >= 200 && t < 220 ? 4
                         : t >= 500 && t < 540 ? -3
                                               : 0;
            }
            CHECK(edfwrite_digital_samples(h, buf) == 0);
        }
    CHECK(edfclose_file(h) == 0);
}

/* ------------------------------------------------------ naive reference */

typedef struct ref {
    char names[64][16]; /* class k's text; names[0] = "none" for samples */
    int nnames;
    int onset[NFILES][T], code[NFILES][T], nev[NFILES];
    uint32_t label[NFILES][T]; /* per-sample class */
} ref;

static int class_of(ref *r, const char *text) {
    for (int k = 0; k < r->nnames; k++)
        if (!strcmp(r->names[k], text)) return k;
    CHECK(r->nnames < 64);
    snprintf(r->names[r->nnames], sizeof r->names[0], "%s", text);
    return r->nnames++;
}

/* Events: every sample whose masked code is nonzero and differs from the
 * sample before (none before t = 0); labels: each sample's masked code. */
static void naive(ref *r, uint32_t mask, int samples) {
    memset(r, 0, sizeof *r);
    if (samples) class_of(r, "none");
    for (int f = 0; f < NFILES; f++)
        for (int t = 0; t < T; t++) {
            uint32_t m = status_word(f, t) & mask, prev = t ? status_word(f, t - 1) & mask : 0;
            char text[16];
            snprintf(text, sizeof text, "%u", m);
            if (m && m != prev) {
                r->onset[f][r->nev[f]] = t;
                r->code[f][r->nev[f]++] = (int)m;
                class_of(r, text); /* numbered by first appearance */
            }
            r->label[f][t] = m ? (uint32_t)class_of(r, text) : 0;
        }
}

static void check_names(const ss_store *s, const ref *r) {
    char want[1024] = "";
    size_t n = 0;
    for (int k = 0; k < r->nnames; k++)
        n += (size_t)snprintf(want + n, sizeof want - n, "%s%s", k ? "\n" : "", r->names[k]);
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, "label.names"));
    if (a.size != n || memcmp(a.data, want, n)) {
        fprintf(stderr, "label.names '%.*s', expected '%s'\n", (int)a.size, (const char *)a.data,
                want);
        exit(1);
    }
}

static void check_samples(const char *st, const ref *r) {
    ss_store *s;
    uint32_t fl;
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_EQ_U64(ss_count(s), NFILES);
    check_names(s, r);
    CHECK_OK(ss_field_index(&fl, s, "label"));
    for (int f = 0; f < NFILES; f++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, (uint64_t)f));
        CHECK(v.dtype == SS_I32 && v.length == T && v.row_bytes == NCH * 4);
        for (int t = 0; t < T; t++)
            for (int k = 0; k < NCH; k++)
                CHECK(((const int32_t *)v.data)[t * NCH + k] == digital(f, t, k));
        CHECK_OK(ss_get(&v, s, fl, (uint64_t)f));
        CHECK(v.dtype == SS_U32 && v.length == T);
        for (int t = 0; t < T; t++)
            if (((const uint32_t *)v.data)[t] != r->label[f][t]) {
                fprintf(stderr, "file %d sample %d: label %u, expected %u\n", f, t,
                        ((const uint32_t *)v.data)[t], r->label[f][t]);
                exit(1);
            }
    }
    ss_close(s);
}

/* Windows [-0.5 s, 1.0 s) = 150 samples around each event inside. */
static void check_windows(const char *st, const ref *r, const int *order) {
    ss_store *s;
    uint32_t fl, fo, fsrc;
    uint64_t ex = 0;
    CHECK_OK(ss_open(&s, st, 0));
    check_names(s, r);
    CHECK_OK(ss_field_index(&fl, s, "label"));
    CHECK_OK(ss_field_index(&fo, s, "onset"));
    CHECK_OK(ss_field_index(&fsrc, s, "source"));
    for (int j = 0; j < NFILES; j++) {
        int f = order[j];
        for (int i = 0; i < r->nev[f]; i++) {
            int on = r->onset[f][i], a = on - 50;
            if (a < 0 || a + 150 > T) continue; /* left out */
            ss_view v;
            char text[16];
            CHECK_OK(ss_get(&v, s, 0, ex));
            CHECK(v.dtype == SS_I32 && v.length == 150);
            for (int t = 0; t < 150; t++)
                for (int k = 0; k < NCH; k++)
                    CHECK(((const int32_t *)v.data)[t * NCH + k] == digital(f, a + t, k));
            CHECK_OK(ss_get(&v, s, fl, ex));
            snprintf(text, sizeof text, "%d", r->code[f][i]);
            CHECK_EQ_U64(*(const uint32_t *)v.data, class_of((ref *)r, text));
            CHECK_OK(ss_get(&v, s, fo, ex));
            CHECK_EQ_U64(*(const int64_t *)v.data, on);
            CHECK_OK(ss_get(&v, s, fsrc, ex));
            CHECK_EQ_U64(((const uint64_t *)v.data)[0], j + 1);
            CHECK_EQ_U64(((const uint64_t *)v.data)[1], i + 1); /* the event's number */
            ex++;
        }
    }
    CHECK_EQ_U64(ss_count(s), ex);
    ss_close(s);
}

/* MNE-Python's find_events on the same BDF: the same onsets and codes. */
static void check_mne(const char *bdf, int f, const ref *r, uint32_t mask) {
    const char *py = ss_test_keep_path("mne_events.py"), *out = ss_test_keep_path("mne.txt");
    const char *src = "import sys, mne\n"
                      "raw = mne.io.read_raw_bdf(sys.argv[1], preload=True, verbose='error')\n"
                      "ev = mne.find_events(raw, stim_channel='Status', consecutive=True,\n"
                      "    initial_event=True, mask=int(sys.argv[2], 0), mask_type='and',\n"
                      "    shortest_event=1, verbose='error')\n"
                      "for on, _, code in ev: print(on, code)\n";
    ss_test_write_file(py, src, strlen(src));
    EXPECT_SH(0, "/usr/bin/python3 '%s' '%s' 0x%x > '%s'", py, bdf, mask, out);
    char want[8192] = "";
    size_t n = 0, len;
    for (int i = 0; i < r->nev[f]; i++)
        n += (size_t)snprintf(want + n, sizeof want - n, "%d %d\n", r->onset[f][i], r->code[f][i]);
    char *got = ss_test_read_file(out, &len);
    if (len != n || memcmp(got, want, n)) {
        fprintf(stderr, "%s: mne.find_events gave\n%s\nthe reference\n%s\n", bdf, got, want);
        exit(1);
    }
    free(got);
}

static void same_store(const char *a, const char *b) {
    EXPECT_SH(0,
              "%s cat '%s' --with-source > '%s.txt' && %s cat '%s' --with-source | cmp - '%s.txt'",
              SS_CLI, a, a, SS_CLI, b, a);
}

#define WIN "--events-as windows --window-start -0.5 --window-stop 1.0"

static void test_status(const char *a, const char *b) {
    ref r;
    const char *st = ss_test_keep_path("samples.ss"), *st2 = ss_test_keep_path("samples2.ss");
    const int ab[2] = {0, 1}, ba[2] = {1, 0};
    /* per-sample labels, default mask 0xFFFF; 1 and 2 threads */
    naive(&r, 0xFFFF, 1);
    check_mne(a, 0, &r, 0xFFFF);
    check_mne(b, 1, &r, 0xFFFF);
    EXPECT_RUN(0,
               "convert edf '%s' '%s' --events-as samples --events-from status --threads 1 "
               "-o '%s' --quiet",
               a, b, st);
    check_samples(st, &r);
    EXPECT_RUN(0,
               "convert edf '%s' '%s' --events-as samples --events-from status --threads 2 "
               "-o '%s' --quiet",
               a, b, st2);
    same_store(st, st2);
    /* another mask: bit 16 (changing on its own here) joins the code */
    naive(&r, 0x1FFFF, 1);
    check_mne(a, 0, &r, 0x1FFFF);
    EXPECT_RUN(0,
               "convert edf '%s' '%s' --events-as samples --events-from status "
               "--trigger-mask 0x1FFFF -o '%s' --quiet --force",
               a, b, st);
    check_samples(st, &r);
    /* windows: 1 and 2 threads, --shard, --append (b first, then a) */
    naive(&r, 0xFFFF, 0);
    st = ss_test_keep_path("windows.ss"), st2 = ss_test_keep_path("windows2.ss");
    EXPECT_RUN(0, "convert edf '%s' '%s' " WIN " --events-from status --threads 1 -o '%s'", a, b,
               st);
    EXPECT_ERR("3 event windows not inside the recording, left out"); /* a: 20, T-1; b: 0 */
    check_windows(st, &r, ab);
    EXPECT_RUN(0, "convert edf '%s' '%s' " WIN " --events-from status --threads 2 -o '%s' --quiet",
               a, b, st2);
    same_store(st, st2);
    char args[2048];
    snprintf(args, sizeof args, "convert edf '%s' '%s' " WIN " --events-from status --quiet", a, b);
    ss_test_convert_shards(NULL, args, st, "windows-shard");
    const char *ap = ss_test_keep_path("append.ss");
    EXPECT_RUN(0, "convert edf '%s' " WIN " --events-from status -o '%s' --quiet", b, ap);
    EXPECT_RUN(0, "convert edf '%s' " WIN " --events-from status --append -o '%s' --quiet", a, ap);
    ref rba; /* classes by first appearance with b first */
    memset(&rba, 0, sizeof rba);
    for (int j = 0; j < NFILES; j++)
        for (int i = 0; i < r.nev[ba[j]]; i++) {
            char text[16];
            snprintf(text, sizeof text, "%d", r.code[ba[j]][i]);
            class_of(&rba, text);
        }
    memcpy(rba.onset, r.onset, sizeof r.onset), memcpy(rba.code, r.code, sizeof r.code);
    memcpy(rba.nev, r.nev, sizeof r.nev);
    check_windows(ap, &rba, ba);
    /* --events fixes the classes: only codes 65 and 3, in that order */
    EXPECT_RUN(0,
               "convert edf '%s' '%s' --events-as samples --events-from status --events 65,3 "
               "-o '%s' --quiet --force",
               a, b, st);
    naive(&r, 0xFFFF, 1);
    ref fixed;
    memset(&fixed, 0, sizeof fixed);
    class_of(&fixed, "none"), class_of(&fixed, "65"), class_of(&fixed, "3");
    for (int f = 0; f < NFILES; f++)
        for (int t = 0; t < T; t++) {
            const char *name = r.names[r.label[f][t]];
            fixed.label[f][t] = !strcmp(name, "65") ? 1 : !strcmp(name, "3") ? 2 : 0;
        }
    check_samples(st, &fixed);
}

/* An EDF+ trigger channel by name: unmasked 16-bit values, -3 stays "-3". */
static void test_channel(const char *e) {
    const char *st = ss_test_keep_path("edf_trig.ss");
    EXPECT_RUN(0, "convert edf '%s' " WIN " --events-from channel:trig -o '%s' --quiet", e, st);
    ss_store *s;
    uint32_t fl, fo;
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_EQ_U64(ss_count(s), 2);
    ss_attr at;
    CHECK_OK(ss_attr_get(&at, s, "label.names"));
    CHECK(at.size == 4 && !memcmp(at.data, "4\n-3", 4));
    CHECK_OK(ss_attr_get(&at, s, "signal.labels")); /* TRIG left out */
    CHECK(at.size == 5 && !memcmp(at.data, "C3\nC4", 5));
    CHECK_OK(ss_field_index(&fl, s, "label"));
    CHECK_OK(ss_field_index(&fo, s, "onset"));
    const int64_t on[2] = {200, 500};
    for (uint64_t i = 0; i < 2; i++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, fl, i));
        CHECK_EQ_U64(*(const uint32_t *)v.data, i);
        CHECK_OK(ss_get(&v, s, fo, i));
        CHECK_EQ_U64(*(const int64_t *)v.data, on[i]);
        CHECK_OK(ss_get(&v, s, 0, i));
        CHECK(v.dtype == SS_I16 && v.length == 150);
        CHECK(((const int16_t *)v.data)[1] == digital(0, (int)on[i] - 50, 1));
    }
    ss_close(s);
    /* named in --channels, the event channel stays in the signal too */
    EXPECT_RUN(0,
               "convert edf '%s' " WIN " --events-from channel:TRIG --channels C3,TRIG -o '%s' "
               "--quiet --force",
               e, st);
    CHECK_OK(ss_open(&s, st, 0));
    ss_view v;
    CHECK_OK(ss_get(&v, s, 0, 0));
    CHECK(v.row_bytes == 4 && ((const int16_t *)v.data)[2 * 50 + 1] == 4);
    ss_close(s);
}

/* BioSig 2.5 on the same BDF: it leaves Status out of the signal and makes
 * events of it itself ("TYP 0x0041"), but not find_events' (the changing
 * bits above the 16 trigger bits shift and drop some): why `convert edf
 * --events-from status` reads the channel through EDFlib and `convert
 * biosig` refuses --events-from. If this starts failing, BioSig changed. */
static void test_biosig_status(const char *a) {
    const char *st = ss_test_keep_path("biosig.ss");
    EXPECT_RUN(0, "convert biosig '%s' -o '%s' --quiet", a, st);
    ss_store *s;
    ss_attr at;
    ss_view v;
    uint32_t fa;
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_OK(ss_attr_get(&at, s, "signal.labels"));
    CHECK(at.size == 5 && !memcmp(at.data, "C3\nC4", 5));
    CHECK_OK(ss_field_index(&fa, s, "annotations"));
    CHECK_OK(ss_get(&v, s, fa, 0));
    char got[4096] = "", want[4096] = "", *save = NULL;
    size_t n = 0, m = 0;
    snprintf(got, sizeof got, "%.*s", (int)v.length, (const char *)v.data);
    for (char *line = strtok_r(got, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        double on, dur;
        unsigned code;
        CHECK(sscanf(line, "%lf\t%lf\tTYP 0x%x", &on, &dur, &code) == 3);
        n += (size_t)snprintf(got + 2048 + n, 2048 - n, "%ld %u\n", lround(on * RATE), code);
    }
    ref r;
    naive(&r, 0xFFFF, 0);
    for (int i = 0; i < r.nev[0]; i++)
        m += (size_t)snprintf(want + m, sizeof want - m, "%d %d\n", r.onset[0][i], r.code[0][i]);
    CHECK(n > 0 && (n != m || memcmp(got + 2048, want, m)));
    ss_close(s);
    /* so `convert biosig --events-as` refuses a BDF rather than give wrong labels */
    EXPECT_RUN(1, "convert biosig '%s' --events-as samples -o '%s' --quiet --force", a, st);
    EXPECT_ERR("a.bdf: --events-as on a BDF file: BioSig 2.5 mis-reads the Status channel's "
               "events; use convert edf --events-from status (or annotations)");
}

/* The same fields (cat's text of each) and attributes in stores a and b. */
static void same_fields(const char *a, const char *b, const char *fields) {
    EXPECT_SH(0, "%s cat '%s' %s > '%s.txt' && %s cat '%s' %s | cmp - '%s.txt'", SS_CLI, a, fields,
              a, SS_CLI, b, fields, a);
    const char *attrs[] = {"label.names", "signal.labels", "signal.sample_rate"};
    for (int k = 0; k < 3; k++)
        EXPECT_SH(0, "%s attr get '%s' %s > '%s.txt' && %s attr get '%s' %s | cmp - '%s.txt'",
                  SS_CLI, a, attrs[k], a, SS_CLI, b, attrs[k], a);
}

/* `convert biosig --events-from channel:NAME` on the GDF that BioSig's own
 * save2gdf makes of trig.edf gives the events, labels, windows and digital
 * signal that `convert edf` reads from the EDF through EDFlib (checked above
 * against the naive reference): two independent readers of one recording. */
static void test_biosig_channel(const char *e) {
    const char *gdf = ss_test_keep_path("trig.gdf"), *x = ss_test_keep_path("bs_edf.ss"),
               *y = ss_test_keep_path("bs_gdf.ss");
    EXPECT_SH(0, "save2gdf '%s' '%s' > /dev/null", e, gdf);
    const char *modes[] = {"--events-as samples", WIN, "--events-as samples --trigger-mask 0x4",
                           WIN " --physical f32"};
    const char *fields[] = {"--field signal --field label",
                            "--field signal --field label "
                            "--field onset",
                            "--field signal --field label", "--field label --field onset"};
    for (int m = 0; m < 4; m++) {
        EXPECT_RUN(0, "convert edf '%s' %s --events-from channel:trig -o '%s' --quiet --force", e,
                   modes[m], x);
        EXPECT_RUN(0, "convert biosig '%s' %s --events-from channel:trig -o '%s' --quiet --force",
                   gdf, modes[m], y);
        same_fields(x, y, fields[m]);
    }
    ss_store *s;
    CHECK_OK(ss_open(&s, y, 0));
    CHECK_EQ_U64(ss_count(s), 2); /* codes 4 and -3: two windows */
    ss_close(s);
    /* the channel must exist; BioSig's codes cannot follow --resample */
    EXPECT_RUN(1, "convert biosig '%s' --events-as samples --events-from channel:STIM -o '%s'", gdf,
               y);
    EXPECT_ERR("trig.gdf: no channel 'STIM' for --events-from; the file has: C3, C4, TRIG");
    EXPECT_RUN(2,
               "convert biosig '%s' --events-as samples --events-from channel:TRIG --resample 50 "
               "-o '%s'",
               gdf, y);
    EXPECT_ERR("--events-from channel:NAME cannot be combined with --resample");
}

static void test_errors(const char *a, const char *e, const char *odd) {
    const char *st = ss_test_keep_path("err.ss");
    EXPECT_RUN(1, "convert edf '%s' --events-as samples --events-from channel:STIM -o '%s'", a, st);
    EXPECT_ERR("a.bdf: no channel 'STIM' for --events-from; the file has: C3, C4, Status");
    EXPECT_RUN(2,
               "convert edf '%s' --events-as samples --events-from status --trigger-mask 0xZZ "
               "-o '%s'",
               a, st);
    EXPECT_ERR("--trigger-mask: '0xZZ' is not a bit mask (a nonzero number of at most 32 bits, "
               "such as 0xFFFF or 255)");
    EXPECT_RUN(2,
               "convert edf '%s' --events-as samples --events-from status --trigger-mask 0 "
               "-o '%s'",
               a, st);
    EXPECT_ERR("--trigger-mask: '0' is not a bit mask");
    EXPECT_RUN(2, "convert edf '%s' --events-as samples --events-from stim -o '%s'", a, st);
    EXPECT_ERR("--events-from takes annotations, status or channel:NAME, not 'stim'");
    EXPECT_RUN(2, "convert edf '%s' --events-from status -o '%s'", a, st);
    EXPECT_ERR("--events-from needs --events-as samples or windows");
    EXPECT_RUN(2, "convert edf '%s' --events-as samples --trigger-mask 0xFF -o '%s'", a, st);
    EXPECT_ERR("--trigger-mask needs --events-from status or channel:NAME");
    EXPECT_RUN(1, "convert edf '%s' --events-as samples --events-from status -o '%s'", e, st);
    EXPECT_ERR("trig.edf: --events-from status reads a BDF 'Status' channel and this is an EDF "
               "file; name its trigger channel with --events-from channel:NAME");
    EXPECT_RUN(1, "convert edf '%s' --events-as samples --events-from status -o '%s'", odd, st);
    EXPECT_ERR("odd.bdf: event channel 'Status' has 200 Hz, the signal 100 Hz (no resampling)");
    EXPECT_RUN(2, "convert biosig '%s' --events-as samples --events-from status -o '%s'", a, st);
    EXPECT_ERR("convert biosig reads no BDF Status channel (BioSig 2.5 mis-reads it); use convert "
               "edf --events-from status");
}

int main(void) {
    const char *a = ss_test_keep_path("a.bdf"), *b = ss_test_keep_path("b.bdf"),
               *e = ss_test_keep_path("trig.edf"), *odd = ss_test_keep_path("odd.bdf");
    write_bdf(a, 0, RATE);
    write_bdf(b, 1, RATE);
    write_bdf(odd, 0, 2 * RATE);
    write_edf_trig(e);
    test_status(a, b);
    test_channel(e);
    test_biosig_status(a);
    test_biosig_channel(e);
    test_errors(a, e, odd);
    return 0;
}
