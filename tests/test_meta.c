/* SPDX-License-Identifier: BSD-2-Clause */
/* test_meta.c - typed metadata (seqstore/meta.h) with known values: typed
 * attribute getters and their type, size and range checks; vocabularies and
 * class names as line lists in both layouts (empty entries anywhere, zero
 * bytes); the sample rate and seconds to samples; the
 * window reader's gain/offset from attributes (equal to the same values
 * given as arrays, and to a plain computation), its label dtype, and its
 * version-1 options. */
#include "testutil.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define C 3
#define L 1000
#define NSEQ 4

enum { SIGNAL = 0, LABEL = 1, TOKENS = 2 };

static int16_t val(uint64_t ex, uint64_t t, unsigned c) {
    return (int16_t)((int64_t)((ex * 977 + t * 13 + c * 101) % 4000) - 2000);
}

static const double g_gain[C] = {0.5, 0.25, 2.0};
static const float g_offset[C] = {1.0f, -2.0f, 0.5f};

static ss_store *make_store(void) {
    const char *path = ss_test_path("meta.ss");
    ss_field f[3] = {{"signal", SS_I16, 1, 1, {C, 0, 0, 0}},
                     {"label", SS_U32, 0, 0, {0}},
                     {"tokens", SS_U16, 1, 0, {0}}};
    ss_schema schema = {3, f};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, NULL));
    static int16_t x[L * C];
    for (uint64_t i = 0; i < NSEQ; i++) {
        for (uint64_t t = 0; t < L; t++)
            for (unsigned c = 0; c < C; c++) x[t * C + c] = val(i, t, c);
        uint32_t y = (uint32_t)(i % 3);
        uint16_t tok[2] = {4, 2};
        ss_value v[3] = {{x, L}, {&y, 1}, {tok, 2}};
        CHECK_OK(ss_writer_append(w, v));
    }
    double rate = 256;
    CHECK_OK(ss_writer_set_attr(w, "signal.sample_rate", SS_F64, &rate, 8));
    CHECK_OK(ss_writer_set_attr(w, "signal.gain", SS_F64, g_gain, sizeof g_gain));
    CHECK_OK(ss_writer_set_attr(w, "signal.offset", SS_F32, g_offset, sizeof g_offset));
    const char *names = "rest\nleft hand\nright hand", /* separated, as converters write */
               *vocab = "<pad>\n<unk>\n<bos>\n<eos>\nhello";
    CHECK_OK(ss_writer_set_attr(w, "label.names", SS_ATTR_TEXT, names, strlen(names)));
    CHECK_OK(ss_writer_set_attr(w, "tokens.vocab", SS_ATTR_TEXT, vocab, strlen(vocab)));
    uint64_t big = (1ull << 53) + 1;
    CHECK_OK(ss_writer_set_attr(w, "big", SS_U64, &big, 8));
    int32_t neg = -5;
    CHECK_OK(ss_writer_set_attr(w, "neg", SS_I32, &neg, 4));
    uint32_t shape[2] = {28, 28};
    CHECK_OK(ss_writer_set_attr(w, "image.shape", SS_U32, shape, 8));
    CHECK_OK(ss_writer_set_attr(w, "note", SS_ATTR_TEXT, "hi", 2));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    return s;
}

static void test_typed_attributes(const ss_store *s) {
    double d[3];
    CHECK_OK(ss_attr_get_f64(d, 1, s, "signal.sample_rate"));
    CHECK(d[0] == 256);
    CHECK_OK(ss_attr_get_f64(d, 3, s, "signal.offset")); /* f32, exact */
    CHECK(d[0] == 1 && d[1] == -2 && d[2] == 0.5);
    CHECK_RC(ss_attr_get_f64(d, 2, s, "signal.offset"), SS_EINVAL); /* 3 values, not 2 */
    CHECK(strstr(ss_error_message(), "holds 3 f32 values, 2 were asked for"));
    CHECK_RC(ss_attr_get_f64(d, 1, s, "note"), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "text"));
    CHECK_RC(ss_attr_get_f64(d, 1, s, "missing"), SS_ENOTFOUND);
    CHECK_RC(ss_attr_get_f64(d, 1, s, "big"), SS_ERANGE); /* 2^53 + 1 has no double */
    CHECK_OK(ss_attr_get_f64(d, 1, s, "neg"));
    CHECK(d[0] == -5);

    int64_t i64;
    CHECK_OK(ss_attr_get_i64(&i64, 1, s, "big"));
    CHECK(i64 == (int64_t)(1ull << 53) + 1);
    CHECK_OK(ss_attr_get_i64(&i64, 1, s, "neg"));
    CHECK(i64 == -5);
    CHECK_RC(ss_attr_get_i64(&i64, 1, s, "signal.sample_rate"), SS_EINVAL); /* a float */

    uint32_t u[2];
    CHECK_OK(ss_attr_get_u32(u, 2, s, "image.shape"));
    CHECK(u[0] == 28 && u[1] == 28);
    CHECK_RC(ss_attr_get_u32(u, 1, s, "image.shape"), SS_EINVAL);
    CHECK_RC(ss_attr_get_u32(u, 1, s, "neg"), SS_ERANGE);
    CHECK_RC(ss_attr_get_u32(u, 1, s, "big"), SS_ERANGE);

    uint64_t n;
    CHECK_OK(ss_attr_elements(&n, s, "image.shape"));
    CHECK_EQ_U64(n, 2);
    CHECK_OK(ss_attr_elements(&n, s, "label.names"));
    CHECK_EQ_U64(n, strlen("rest\nleft hand\nright hand"));

    char buf[8];
    size_t len = 99;
    CHECK_OK(ss_attr_get_text(buf, sizeof buf, &len, s, "note"));
    CHECK(strcmp(buf, "hi") == 0 && len == 2);
    CHECK_RC(ss_attr_get_text(buf, 2, &len, s, "note"), SS_EBUFS); /* no room for the NUL */
    CHECK(len == 2 && buf[0] == 0);
    CHECK_RC(ss_attr_get_text(buf, sizeof buf, &len, s, "image.shape"), SS_EINVAL);
}

static void check_line(const ss_lines *l, uint64_t k, const char *want) {
    size_t len;
    const char *p;
    CHECK_OK(ss_lines_get(&p, &len, l, k));
    CHECK(p && len == strlen(want) && memcmp(p, want, len) == 0);
}

static void test_lines(const ss_store *s) {
    ss_lines *l;
    CHECK_OK(ss_lines_open(&l, s, TOKENS, "vocab")); /* no final newline */
    CHECK_EQ_U64(ss_lines_count(l), 5);
    check_line(l, 0, "<pad>");
    check_line(l, 3, "<eos>");
    check_line(l, 4, "hello");
    size_t len = 9;
    const char *p = "x";
    CHECK_RC(ss_lines_get(&p, &len, l, 5), SS_ERANGE);
    CHECK(p == NULL && len == 0);
    CHECK_RC(ss_lines_get(NULL, &len, l, 0), SS_EINVAL);
    ss_lines_free(l);
    CHECK_OK(ss_lines_open(&l, s, LABEL, "names"));
    CHECK_EQ_U64(ss_lines_count(l), 3);
    check_line(l, 1, "left hand");
    check_line(l, 2, "right hand");
    ss_lines_free(l);
    CHECK_OK(ss_lines_open(&l, s, SS_FIELD_NONE, "label.names")); /* by attribute name */
    CHECK_EQ_U64(ss_lines_count(l), 3);
    ss_lines_free(l);
    l = (ss_lines *)1;
    CHECK_RC(ss_lines_open(&l, s, SIGNAL, "vocab"), SS_ENOTFOUND);
    CHECK(l == NULL && strstr(ss_error_message(), "signal.vocab"));
    CHECK_RC(ss_lines_open(&l, s, 7, "vocab"), SS_ERANGE);
    CHECK_RC(ss_lines_open(&l, s, SS_FIELD_NONE, "signal.gain"), SS_EINVAL); /* not text */
    ss_lines_free(NULL);
}

/* Line lists in both layouts of spec/FORMAT.md 7.1, the layout given by the
 * attribute's name: separated lists (split at every LF: k LFs are k + 1
 * entries, zero bytes one empty entry) and terminated ones (the
 * vocabularies, source.files, convert.options: LF after every entry), with
 * empty entries at the start, in the middle and at the end. */
typedef struct list_case {
    const char *name, *text;
    uint64_t n;
    const char *want[3];
} list_case;

static const list_case LISTS[] = {
    {"subject.names", "", 1, {""}}, /* a recording without a patient code */
    {"session.names", "P01\n", 2, {"P01", ""}},
    {"recording.names", "\nP01", 2, {"", "P01"}},
    {"label.names", "a\n\nb", 3, {"a", "", "b"}},
    {"signal.labels", "\n", 2, {"", ""}},
    {"signal.units", "uV\nuV", 2, {"uV", "uV"}},
    {"convert.converter", "edf", 1, {"edf"}},
    {"mine", "x\n", 2, {"x", ""}}, /* a name of no layout in 7.1: separated */
    {"vocab", "", 0, {NULL}},
    {"src.vocab", "a\n", 1, {"a"}},
    {"tgt.vocab", "\na\n", 2, {"", "a"}},
    {"x.vocab", "a\n\nb\n", 3, {"a", "", "b"}},
    {"y.vocab", "a\n\n", 2, {"a", ""}},
    {"source.files", "\n", 1, {""}},
    {"convert.options", "a\nb", 2, {"a", "b"}}, /* a last entry without its LF */
};

static void test_list_layouts(void) {
    const char *path = ss_test_path("lists.ss");
    ss_field f[1] = {{"x", SS_U8, 0, 0, {0}}};
    ss_schema schema = {1, f};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, NULL));
    size_t ncase = sizeof LISTS / sizeof LISTS[0];
    for (size_t i = 0; i < ncase; i++)
        CHECK_OK(ss_writer_set_attr(w, LISTS[i].name, SS_ATTR_TEXT, LISTS[i].text,
                                    strlen(LISTS[i].text)));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    for (size_t i = 0; i < ncase; i++) {
        ss_lines *l;
        CHECK_OK(ss_lines_open(&l, s, SS_FIELD_NONE, LISTS[i].name));
        if (ss_lines_count(l) != LISTS[i].n) {
            fprintf(stderr, "%s '%s': %llu entries, expected %llu\n", LISTS[i].name,
                    LISTS[i].text, (unsigned long long)ss_lines_count(l),
                    (unsigned long long)LISTS[i].n);
            exit(1);
        }
        for (uint64_t k = 0; k < LISTS[i].n; k++) check_line(l, k, LISTS[i].want[k]);
        size_t len = 9;
        const char *p = "x";
        CHECK_RC(ss_lines_get(&p, &len, l, LISTS[i].n), SS_ERANGE);
        CHECK(p == NULL && len == 0);
        ss_lines_free(l);
    }
    ss_close(s);
}

static void test_rate(const ss_store *s) {
    double r;
    CHECK_OK(ss_sample_rate(&r, s, SIGNAL));
    CHECK(r == 256);
    CHECK_RC(ss_sample_rate(&r, s, TOKENS), SS_ENOTFOUND);
    uint64_t n;
    CHECK_OK(ss_seconds_to_samples(&n, s, SIGNAL, 2.0));
    CHECK_EQ_U64(n, 512);
    CHECK_OK(ss_seconds_to_samples(&n, s, SIGNAL, 0.5));
    CHECK_EQ_U64(n, 128);
    CHECK_OK(ss_seconds_to_samples(&n, s, SIGNAL, 0.1171875)); /* 30 samples exactly */
    CHECK_EQ_U64(n, 30);
    CHECK_RC(ss_seconds_to_samples(&n, s, SIGNAL, 0.1), SS_EINVAL); /* 25.6 samples */
    CHECK(strstr(ss_error_message(), "25.6"));
    CHECK_RC(ss_seconds_to_samples(&n, s, SIGNAL, -1), SS_EINVAL);
}

/* One batch of the reader: data copied out, label dtype. */
static void first_batch(const ss_store *s, const ss_window_options *o, float *data,
                        ss_dtype *label_dtype) {
    ss_window_reader *r;
    CHECK_OK(ss_window_reader_open(&r, s, o));
    const ss_window_batch *b;
    CHECK_OK(ss_window_reader_next(&b, r));
    CHECK(b->size == NSEQ && b->dtype == SS_F32);
    memcpy(data, b->data, NSEQ * b->window * C * sizeof *data);
    *label_dtype = b->label_dtype;
    for (uint32_t row = 0; row < b->size; row++) /* a plain computation, in double */
        for (uint64_t t = 0; t < b->window; t++)
            for (unsigned c = 0; c < C; c++) {
                double want = val(b->example[row], b->start[row] + t, c) * g_gain[c] + g_offset[c];
                CHECK(fabs(data[(row * b->window + t) * C + c] - want) <= 1e-3);
            }
    ss_window_reader_free(r);
}

static void test_window_attrs(const ss_store *s) {
    uint64_t W;
    CHECK_OK(ss_seconds_to_samples(&W, s, SIGNAL, 0.25)); /* 64 samples */
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.field = SIGNAL;
    o.label_field = LABEL;
    o.window = W;
    o.lanes = NSEQ;
    o.out_dtype = SS_F32;
    o.gain_attr = "signal.gain";
    o.offset_attr = "signal.offset";
    static float a[NSEQ * 64 * C], b[NSEQ * 64 * C];
    ss_dtype ld = 0;
    first_batch(s, &o, a, &ld);
    CHECK(ld == SS_U32);
    double off[C] = {g_offset[0], g_offset[1], g_offset[2]};
    ss_window_options e = o; /* the same values as arrays */
    e.gain_attr = e.offset_attr = NULL;
    e.gain = g_gain;
    e.offset = off;
    e.n_gain = e.n_offset = C;
    e.label_field = SS_FIELD_NONE;
    first_batch(s, &e, b, &ld);
    CHECK(ld == 0);
    CHECK(memcmp(a, b, sizeof a) == 0);

    /* version-1 options (no gain_attr): exactly their size, nothing after */
    size_t v1 = offsetof(ss_window_options, gain_attr);
    unsigned char *old = malloc(v1);
    CHECK(old);
    memcpy(old, &e, v1);
    unsigned version = 1; /* the first member */
    memcpy(old, &version, sizeof version);
    first_batch(s, (const ss_window_options *)(void *)old, b, &ld);
    CHECK(memcmp(a, b, sizeof a) == 0);
    version = SS_WINDOW_OPTIONS_VERSION + 1; /* a version from the future */
    memcpy(old, &version, sizeof version);
    ss_window_reader *r;
    CHECK_RC(ss_window_reader_open(&r, s, (const ss_window_options *)(void *)old), SS_EINVAL);
    free(old);

    e.gain_attr = "signal.gain"; /* both */
    CHECK_RC(ss_window_reader_open(&r, s, &e), SS_EINVAL);
    o.gain_attr = "image.shape"; /* 2 values for 3 channels */
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "image.shape"));
    o.gain_attr = "missing";
    CHECK_RC(ss_window_reader_open(&r, s, &o), SS_ENOTFOUND);
}

/* Every typed getter, line list, rate and window reader over an attribute
 * whose checksum fails returns SS_ECORRUPT with a message naming the store
 * and the attribute, never SS_ENOTFOUND; the other attributes still read. */
static void expect_damaged(int rc, const char *attr) {
    CHECK_RC(rc, SS_ECORRUPT);
    char want[600];
    snprintf(want, sizeof want, "%s: attribute '%s': checksum mismatch",
             ss_test_path("damaged.ss"), attr);
    CHECK(strstr(ss_error_message(), want));
}

static void test_damaged(void) {
    size_t n;
    char *image = ss_test_read_file(ss_test_path("meta.ss"), &n);
    const char *path = ss_test_path("damaged.ss");
    ss_test_write_file(path, image, n);
    free(image);
    const char *names[] = {"tokens.vocab", "label.names", "signal.sample_rate", "signal.gain",
                           "note", "image.shape"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        ss_test_flip_attr(path, names[k], 1);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_attr a;
    expect_damaged(ss_attr_get(&a, s, "tokens.vocab"), "tokens.vocab");
    CHECK(strcmp(a.name, "tokens.vocab") == 0 && a.data == NULL && a.size == 0);
    ss_lines *l = (ss_lines *)1;
    expect_damaged(ss_lines_open(&l, s, TOKENS, "vocab"), "tokens.vocab");
    CHECK(l == NULL);
    expect_damaged(ss_lines_open(&l, s, LABEL, "names"), "label.names");
    double d[3] = {0};
    expect_damaged(ss_attr_get_f64(d, 3, s, "signal.gain"), "signal.gain");
    int64_t i64;
    expect_damaged(ss_attr_get_i64(&i64, 1, s, "note"), "note");
    uint32_t u[2];
    expect_damaged(ss_attr_get_u32(u, 2, s, "image.shape"), "image.shape");
    uint64_t count;
    expect_damaged(ss_attr_elements(&count, s, "note"), "note");
    char buf[8];
    expect_damaged(ss_attr_get_text(buf, sizeof buf, NULL, s, "note"), "note");
    expect_damaged(ss_sample_rate(d, s, SIGNAL), "signal.sample_rate");
    expect_damaged(ss_seconds_to_samples(&count, s, SIGNAL, 1.0), "signal.sample_rate");
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.field = SIGNAL;
    o.window = 64;
    o.lanes = NSEQ;
    o.out_dtype = SS_F32;
    o.gain_attr = "signal.gain";
    ss_window_reader *r;
    expect_damaged(ss_window_reader_open(&r, s, &o), "signal.gain");
    uint64_t damaged = 0;
    for (uint64_t k = 0; k < ss_attr_count(s); k++) {
        int rc = ss_attr_at(&a, s, k);
        CHECK(rc == 0 || rc == SS_ECORRUPT);
        damaged += rc != 0;
    }
    CHECK_EQ_U64(damaged, sizeof names / sizeof names[0]);
    CHECK_OK(ss_attr_get_f64(d, 3, s, "signal.offset")); /* untouched: reads as before */
    CHECK(d[0] == 1 && d[1] == -2 && d[2] == 0.5);
    ss_close(s);
}

int main(void) {
    ss_store *s = make_store();
    test_typed_attributes(s);
    test_lines(s);
    test_list_layouts();
    test_rate(s);
    test_window_attrs(s);
    ss_close(s);
    test_damaged();
    printf("test_meta: ok\n");
    return 0;
}
