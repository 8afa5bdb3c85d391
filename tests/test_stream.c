/* SPDX-License-Identifier: BSD-2-Clause */
/* test_stream.c - parallel streams: 1..10 in 3 streams written out by hand,
 * random stores, options and thread counts against a naive reference built
 * from a plain concatenation, and bad parameters. */
#include "seqstore.h"
#include "testutil.h"

#include <stdlib.h>
#include <stddef.h>
#include <string.h>

static const ss_dtype all_dtypes[] = {SS_U8,  SS_I8,  SS_U16, SS_I16, SS_U32, SS_I32,
                                      SS_U64, SS_I64, SS_F16, SS_F32, SS_F64, SS_BF16};

/* ------------------------------------------------------------ by hand */

/* One field "tok" (i32): examples [1 2 3] [4 5 6 7] [] [8 9 10]; one fixed
 * field "label". */
static ss_store *ten_store(void) {
    ss_field fields[2] = {{"tok", SS_I32, 1, 0, {0}}, {"label", SS_U8, 0, 0, {0}}};
    ss_schema schema = {2, fields};
    static int made; /* a new file per call */
    char name[32];
    snprintf(name, sizeof name, "ten%d.ss", made++);
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, ss_test_path(name), &schema, NULL));
    int32_t v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    uint64_t first[4] = {0, 3, 7, 7}, len[4] = {3, 4, 0, 3};
    for (int i = 0; i < 4; i++) {
        uint8_t label = (uint8_t)i;
        ss_value val[2] = {{v + first[i], len[i]}, {&label, 1}};
        CHECK_OK(ss_writer_append(w, val));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, ss_test_path(name), 0));
    return s;
}

static void check_i32(const void *data, const int32_t *want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int32_t x;
        memcpy(&x, (const unsigned char *)data + 4 * i, 4);
        if (x != want[i]) fprintf(stderr, "element %zu: %d, expected %d\n", i, x, want[i]);
        CHECK(x == want[i]);
    }
}

/* torchnet's test_sequencebatchdataset.lua, SequenceBatch_Policy, through
 * an input-only stream (shift 0, T = 1: one batch per torchnet sample): the
 * source 1..14 with batchsize 13, skip-remainder gives one sample 1..13;
 * pad-remainder with pad 0 gives two: 1 3 .. 13 then six 0s, and 2 4 .. 14
 * then six 0s. And batchsize 2N over N elements: one sample of 2N elements
 * with pad-remainder, none with skip-remainder. */
static void test_torchnet_sequence_batch(void) {
    ss_field fields[1] = {{"x", SS_F64, 1, 0, {0}}};
    ss_schema schema = {1, fields};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, ss_test_path("tn14.ss"), &schema, NULL));
    double v[14];
    for (int i = 0; i < 14; i++) v[i] = i + 1;
    ss_value a = {v, 5}, c = {v + 5, 9}; /* two examples: the flat stream is 1..14 */
    CHECK_OK(ss_writer_append(w, &a));
    CHECK_OK(ss_writer_append(w, &c));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, ss_test_path("tn14.ss"), 0));
    ss_stream_options o = SS_STREAM_OPTIONS_INIT;
    o.batch = 13;
    o.steps = 1;
    o.shift = 0;
    ss_stream *st;
    ss_stream_batch b;
    CHECK_OK(ss_stream_create(&st, s, 0, &o)); /* skip-remainder */
    CHECK_EQ_U64(ss_stream_count(st), 1);
    CHECK_OK(ss_stream_read(&b, st, 0));
    CHECK(b.target == NULL);
    for (int i = 0; i < 13; i++) CHECK(((const double *)b.input)[i] == i + 1);
    ss_stream_free(st);
    o.tail = SS_STREAM_TAIL_PAD;
    o.pad_value = 0;
    CHECK_OK(ss_stream_create(&st, s, 0, &o)); /* pad-remainder */
    CHECK_EQ_U64(ss_stream_count(st), 2);
    for (uint64_t k = 0; k < 2; k++) {
        CHECK_OK(ss_stream_read(&b, st, k));
        for (int i = 0; i < 13; i++) {
            double want = i < 7 ? (double)(2 * i + 1 + (int)k) : 0.0;
            CHECK(((const double *)b.input)[i] == want);
            CHECK_EQ_U64(b.mask[i], i < 7);
        }
    }
    ss_stream_free(st);
    o.batch = 28;
    CHECK_OK(ss_stream_create(&st, s, 0, &o));
    CHECK_EQ_U64(ss_stream_count(st), 1);
    CHECK_OK(ss_stream_read(&b, st, 0));
    CHECK_EQ_U64(b.data_bytes, 28 * 8);
    ss_stream_free(st);
    o.tail = SS_STREAM_TAIL_DROP;
    CHECK_OK(ss_stream_create(&st, s, 0, &o));
    CHECK_EQ_U64(ss_stream_count(st), 0);
    ss_stream_free(st);
    ss_close(s);
}

static void test_ten(void) {
    ss_store *s = ten_store();
    ss_stream_options o = SS_STREAM_OPTIONS_INIT;
    o.batch = 3;
    o.steps = 2;
    o.pad_value = -1;
    ss_stream *st;
    ss_stream_batch b;

    /* DROP: [1 2 3] [4 5 6] [7 8 9] */
    CHECK_OK(ss_stream_create(&st, s, 0, &o));
    uint64_t total;
    CHECK_EQ_U64(ss_stream_length(&total, st), 3);
    CHECK_EQ_U64(total, 10);
    CHECK_EQ_U64(ss_stream_count(st), 1);
    CHECK_OK(ss_stream_read(&b, st, 0));
    CHECK(b.ndim == 2 && b.shape[0] == 3 && b.shape[1] == 2 && b.steps == 2);
    check_i32(b.input, (const int32_t[]){1, 2, 4, 5, 7, 8}, 6);
    check_i32(b.target, (const int32_t[]){2, 3, 5, 6, 8, 9}, 6);
    CHECK(memcmp(b.mask, "\1\1\1\1\1\1", 6) == 0);
    CHECK(memcmp(b.starts, "\1\0\1\0\0\1", 6) == 0); /* 1, 4 and 8 begin examples */
    CHECK_RC(ss_stream_read(&b, st, 1), SS_ERANGE);
    ss_stream_free(st);

    /* T = 1: two batches */
    o.steps = 1;
    CHECK_OK(ss_stream_create(&st, s, 0, &o));
    CHECK_EQ_U64(ss_stream_count(st), 2);
    CHECK_OK(ss_stream_read(&b, st, 1));
    check_i32(b.input, (const int32_t[]){2, 5, 8}, 3);
    check_i32(b.target, (const int32_t[]){3, 6, 9}, 3);
    ss_stream_free(st);

    /* PAD: [1 2 3 4] [5 6 7 8] [9 10] */
    o.steps = 2;
    o.tail = SS_STREAM_TAIL_PAD;
    CHECK_OK(ss_stream_create(&st, s, 0, &o));
    CHECK_EQ_U64(ss_stream_length(NULL, st), 4);
    CHECK_EQ_U64(ss_stream_count(st), 2);
    CHECK_OK(ss_stream_read(&b, st, 0));
    check_i32(b.input, (const int32_t[]){1, 2, 5, 6, 9, -1}, 6);
    check_i32(b.target, (const int32_t[]){2, 3, 6, 7, 10, -1}, 6);
    CHECK(memcmp(b.mask, "\1\1\1\1\1\0", 6) == 0);
    CHECK(memcmp(b.starts, "\1\0\0\0\0\0", 6) == 0);
    CHECK_OK(ss_stream_read(&b, st, 1));
    check_i32(b.input, (const int32_t[]){3, -1, 7, -1, -1, -1}, 6);
    check_i32(b.target, (const int32_t[]){4, -1, 8, -1, -1, -1}, 6);
    CHECK(memcmp(b.mask, "\1\0\1\0\0\0", 6) == 0);
    ss_stream_free(st);

    /* PAD, time-major: [T][B] */
    o.time_major = 1;
    CHECK_OK(ss_stream_create(&st, s, 0, &o));
    CHECK_OK(ss_stream_read(&b, st, 0));
    CHECK(b.shape[0] == 2 && b.shape[1] == 3);
    check_i32(b.input, (const int32_t[]){1, 5, 9, 2, 6, -1}, 6);
    check_i32(b.target, (const int32_t[]){2, 6, 10, 3, 7, -1}, 6);
    CHECK(memcmp(b.mask, "\1\1\1\1\1\0", 6) == 0);
    CHECK(memcmp(b.starts, "\1\0\0\0\0\0", 6) == 0);
    ss_stream_free(st);
    o.time_major = 0;

    /* SHORT: [1 2 3] [4 5 6] [7 8 9], T = 3: one batch of 2 steps */
    o.tail = SS_STREAM_TAIL_SHORT;
    o.steps = 3;
    CHECK_OK(ss_stream_create(&st, s, 0, &o));
    CHECK_EQ_U64(ss_stream_count(st), 1);
    CHECK_OK(ss_stream_read(&b, st, 0));
    CHECK(b.steps == 2 && b.shape[1] == 2);
    check_i32(b.input, (const int32_t[]){1, 2, 4, 5, 7, 8}, 6);
    ss_stream_free(st);

    /* <eos> = 0 after every example (the empty one too):
     * 1 2 3 0 4 5 6 7 0 0 8 9 10 0, B = 2, k = 2: [1 2 3 0 4 5 6] [7 0 0 8 9 10 0] */
    o.tail = SS_STREAM_TAIL_DROP;
    o.eos = 1;
    o.eos_value = 0;
    o.batch = 2;
    o.steps = 2;
    o.shift = 2;
    CHECK_OK(ss_stream_create(&st, s, 0, &o));
    CHECK_EQ_U64(ss_stream_length(&total, st), 7);
    CHECK_EQ_U64(total, 14);
    CHECK_EQ_U64(ss_stream_count(st), 2);
    CHECK_OK(ss_stream_read(&b, st, 1));
    check_i32(b.input, (const int32_t[]){3, 0, 0, 8}, 4);
    check_i32(b.target, (const int32_t[]){4, 5, 9, 10}, 4);
    CHECK(memcmp(b.starts, "\0\0\1\1", 4) == 0); /* the empty example's <eos>, then 8 */
    ss_stream_free(st);

    /* a selection, in its own order: examples 3 then 0: 8 9 10 1 2 3 */
    uint64_t sel[2] = {3, 0};
    o.eos = 0;
    o.shift = 1;
    o.batch = 2;
    o.steps = 2;
    o.examples = sel;
    o.n_examples = 2;
    o.dtype = SS_F32;
    CHECK_OK(ss_stream_create(&st, s, 0, &o));
    CHECK_OK(ss_stream_read(&b, st, 0));
    const float *fi = b.input, *ft = b.target;
    CHECK(b.dtype == SS_F32);
    CHECK(fi[0] == 8 && fi[1] == 9 && fi[2] == 1 && fi[3] == 2);
    CHECK(ft[0] == 9 && ft[1] == 10 && ft[2] == 2 && ft[3] == 3);
    ss_stream_free(st);
    ss_close(s);
}

/* ------------------------------------------------------------ random */

typedef struct rs {
    ss_store *s;
    ss_field f;
    uint64_t count;
} rs;

static void make_store(rs *r, const char *name, uint64_t *rng) {
    memset(r, 0, sizeof *r);
    r->f.name = "x";
    r->f.dtype = all_dtypes[ss_test_rand(rng) % 12];
    r->f.sequence = 1;
    r->f.ndim = (uint32_t)(ss_test_rand(rng) % 2);
    if (r->f.ndim) r->f.dims[0] = 1 + ss_test_rand(rng) % 3;
    ss_schema schema = {1, &r->f};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, ss_test_path(name), &schema, NULL));
    r->count = 1 + ss_test_rand(rng) % 120;
    uint64_t rb = ss_dtype_size(r->f.dtype) * (r->f.ndim ? r->f.dims[0] : 1);
    unsigned char buf[200 * 8 * 3];
    for (uint64_t e = 0; e < r->count; e++) {
        uint64_t len = ss_test_rand(rng) % 5 == 0 ? 0 : ss_test_rand(rng) % 200;
        for (uint64_t k = 0; k < len * rb; k++) buf[k] = (unsigned char)ss_test_rand(rng);
        ss_value v = {buf, len};
        CHECK_OK(ss_writer_append(w, &v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    CHECK_OK(ss_open(&r->s, ss_test_path(name), 0));
}

static void test_random(void) {
    uint64_t rng = 99;
    int cases = 0, parallel = 0;
    for (int k = 0; k < 8; k++) {
        rs r;
        char name[32];
        snprintf(name, sizeof name, "stream%d.ss", k);
        make_store(&r, name, &rng);
        uint64_t E = r.f.ndim ? r.f.dims[0] : 1;
        for (int trial = 0; trial < 10; trial++) {
            ss_stream_options o = SS_STREAM_OPTIONS_INIT;
            o.batch = 1 + ss_test_rand(&rng) % 9;
            o.steps = 1 + ss_test_rand(&rng) % 40;
            if (trial % 4 == 0) { /* many steps per batch */
                o.batch = 16;
                o.steps = 300 + ss_test_rand(&rng) % 300;
            }
            o.shift = ss_test_rand(&rng) % 3; /* 0: input only */
            o.dtype = ss_test_rand(&rng) % 3 ? all_dtypes[ss_test_rand(&rng) % 12] : (ss_dtype)0;
            o.eos = ss_test_rand(&rng) % 2;
            o.eos_value = (double)(ss_test_rand(&rng) % 7);
            o.tail = (ss_stream_tail)(ss_test_rand(&rng) % 3);
            ss_dtype pad_out = o.dtype ? o.dtype : r.f.dtype;
            o.pad_value =
                pad_out == SS_U8 || pad_out == SS_U16 || pad_out == SS_U32 || pad_out == SS_U64
                    ? 3
                    : -3;
            o.parallel_bytes = trial == 1 ? 1 : 0; /* small batches in parallel too */
            uint64_t sel[100];
            if (ss_test_rand(&rng) % 2) {
                o.n_examples = ss_test_rand(&rng) % 100;
                for (uint64_t j = 0; j < o.n_examples; j++) sel[j] = ss_test_rand(&rng) % r.count;
                o.examples = sel;
            }
            ss_dtype out = o.dtype ? o.dtype : r.f.dtype;
            uint64_t es = ss_dtype_size(out), rb = E * es;
            /* the reference: the virtual stream written out plainly */
            uint64_t n_ex = o.examples ? o.n_examples : r.count, N = 0;
            for (uint64_t j = 0; j < n_ex; j++)
                N += ss_length(r.s, 0, o.examples ? sel[j] : j) + (o.eos ? 1 : 0);
            unsigned char *flat = malloc(N * rb + 1), *fstart = malloc(N + 1);
            unsigned char eosr[8], padr[8];
            CHECK_OK(ss_cast_rows(eosr, out, &o.eos_value, SS_F64, 1, 1, NULL, NULL));
            CHECK_OK(ss_cast_rows(padr, out, &o.pad_value, SS_F64, 1, 1, NULL, NULL));
            uint64_t at = 0;
            for (uint64_t j = 0; j < n_ex; j++) {
                ss_view v;
                CHECK_OK(ss_get(&v, r.s, 0, o.examples ? sel[j] : j));
                for (uint64_t t = 0; t < v.length; t++, at++) {
                    CHECK_OK(ss_cast_rows(flat + at * rb, out,
                                          (const unsigned char *)v.data + t * v.row_bytes,
                                          r.f.dtype, 1, E, NULL, NULL));
                    fstart[at] = t == 0;
                }
                if (o.eos) {
                    for (uint64_t e = 0; e < E; e++) memcpy(flat + at * rb + e * es, eosr, es);
                    fstart[at] = v.length == 0;
                    at++;
                }
            }
            CHECK_EQ_U64(at, N);
            uint64_t B = o.batch, T = o.steps, sh = o.shift;
            uint64_t S = o.tail == SS_STREAM_TAIL_PAD ? (N + B - 1) / B : N / B;
            uint64_t usable = S > sh ? S - sh : 0;
            uint64_t nb = o.tail == SS_STREAM_TAIL_DROP ? usable / T : (usable + T - 1) / T;
            for (int tm = 0; tm < 2; tm++) {
                o.time_major = tm;
                for (int th = 1; th <= 4; th *= 2) {
                    o.threads = th;
                    ss_stream *st;
                    CHECK_OK(ss_stream_create(&st, r.s, 0, &o));
                    CHECK_EQ_U64(ss_stream_length(NULL, st), S);
                    CHECK_EQ_U64(ss_stream_count(st), nb);
                    for (uint64_t i = 0; i < nb; i++) {
                        if (i == 20 && nb > 40) i = nb - 20; /* the first and last 20 */
                        ss_stream_batch b;
                        CHECK_OK(ss_stream_read(&b, st, i));
                        uint64_t Tb = T;
                        if (o.tail == SS_STREAM_TAIL_SHORT && usable - i * T < T)
                            Tb = usable - i * T;
                        CHECK_EQ_U64(b.steps, Tb);
                        parallel +=
                            th > 1 && B > 1 &&
                            2 * B * Tb * rb >= (o.parallel_bytes ? o.parallel_bytes : 1u << 20);
                        CHECK_EQ_U64(b.data_bytes, B * Tb * rb);
                        for (uint64_t s = 0; s < B; s++) {
                            uint64_t first = s * S;
                            uint64_t len = first >= N ? 0 : (N - first < S ? N - first : S);
                            for (uint64_t q = 0; q < Tb; q++) {
                                uint64_t jj = i * T + q; /* step in the stream */
                                int real = jj + sh < len;
                                uint64_t pos = tm ? q * B + s : s * Tb + q;
                                const unsigned char *gi = (const unsigned char *)b.input + pos * rb;
                                const unsigned char *gt =
                                    sh ? (const unsigned char *)b.target + pos * rb : NULL;
                                CHECK((b.target == NULL) == (sh == 0));
                                CHECK_EQ_U64(b.mask[pos], real);
                                if (real) {
                                    CHECK(memcmp(gi, flat + (first + jj) * rb, rb) == 0);
                                    CHECK(!gt ||
                                          memcmp(gt, flat + (first + jj + sh) * rb, rb) == 0);
                                    CHECK_EQ_U64(b.starts[pos], fstart[first + jj]);
                                } else {
                                    for (uint64_t e = 0; e < E; e++) {
                                        CHECK(memcmp(gi + e * es, padr, es) == 0);
                                        CHECK(!gt || memcmp(gt + e * es, padr, es) == 0);
                                    }
                                    CHECK_EQ_U64(b.starts[pos], 0);
                                }
                            }
                        }
                    }
                    CHECK_RC(ss_stream_read(&(ss_stream_batch){0}, st, nb), SS_ERANGE);
                    ss_stream_free(st);
                    cases++;
                }
            }
            free(flat);
            free(fstart);
        }
        ss_close(r.s);
    }
    printf("random: %d cases, %d parallel reads\n", cases, parallel);
    CHECK(parallel > 10);
}

static void test_errors(void) {
    ss_store *s;
    CHECK_OK(ss_open(&s, ss_test_path("ten0.ss"), 0));
    ss_stream *st = (ss_stream *)1;
    ss_stream_options o = SS_STREAM_OPTIONS_INIT;
    o.batch = 2;
    o.steps = 2;
    CHECK_RC(ss_stream_create(&st, s, 2, &o), SS_ERANGE); /* fields are 0 (tok) and 1 (label) */
    CHECK(st == NULL && strstr(ss_error_message(), "field 2") != NULL);
    CHECK_RC(ss_stream_create(&st, s, 1, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "fixed field") != NULL);
    o.batch = 0;
    CHECK_RC(ss_stream_create(&st, s, 0, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "batch") != NULL);
    o.batch = 2;
    o.steps = 0;
    CHECK_RC(ss_stream_create(&st, s, 0, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "steps") != NULL);
    o.steps = 2;
    o.dtype = (ss_dtype)55;
    CHECK_RC(ss_stream_create(&st, s, 0, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "dtype") != NULL);
    o.dtype = (ss_dtype)0;
    uint64_t sel[2] = {0, 4};
    o.examples = sel;
    o.n_examples = 2;
    CHECK_RC(ss_stream_create(&st, s, 0, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "examples[1] = 4") != NULL);
    o.examples = NULL;
    o.n_examples = 0;
    o.tail = (ss_stream_tail)7;
    CHECK_RC(ss_stream_create(&st, s, 0, &o), SS_EINVAL);
    o.tail = SS_STREAM_TAIL_DROP;
    o.version = 5;
    CHECK_RC(ss_stream_create(&st, s, 0, &o), SS_EINVAL);
    o.version = SS_STREAM_OPTIONS_VERSION;
    /* too little data: no batch at all */
    o.batch = 20;
    CHECK_OK(ss_stream_create(&st, s, 0, &o));
    CHECK_EQ_U64(ss_stream_count(st), 0);
    ss_stream_batch b;
    CHECK_RC(ss_stream_read(&b, st, 0), SS_ERANGE);
    ss_stream_free(st);
    ss_stream_free(NULL);
    ss_close(s);
}

/* <eos> and pad as integers (every uint64 value; a
 * double would round UINT64_MAX to 2^64), refused when the output dtype
 * cannot hold them, and version-1 options (which end at parallel_bytes)
 * still read, from a buffer of exactly their size. */
static void test_integer_values(void) {
    ss_store *s = ten_store(); /* [1 2 3] [4 5 6 7] [] [8 9 10] */
    ss_stream_options o = SS_STREAM_OPTIONS_INIT;
    o.batch = 1;
    o.steps = 16;
    o.shift = 0;
    o.eos = 1;
    o.tail = SS_STREAM_TAIL_PAD;
    o.dtype = SS_U64;
    o.eos_kind = SS_VALUE_U64;
    o.eos_u64 = UINT64_MAX;
    o.pad_kind = SS_VALUE_U64;
    o.pad_u64 = UINT64_MAX - 1;
    ss_stream *st;
    ss_stream_batch b;
    CHECK_OK(ss_stream_create(&st, s, 0, &o));
    CHECK_OK(ss_stream_read(&b, st, 0));
    const uint64_t E = UINT64_MAX, P = UINT64_MAX - 1;
    const uint64_t want[16] = {1, 2, 3, E, 4, 5, 6, 7, E, E, 8, 9, 10, E, P, P};
    CHECK(b.steps == 16 && memcmp(b.input, want, sizeof want) == 0);
    ss_stream_free(st);

    o.dtype = SS_U16; /* -1 has no u16: refused, not wrapped to 65535 */
    o.eos_kind = SS_VALUE_F64;
    o.eos_value = -1;
    CHECK_RC(ss_stream_create(&st, s, 0, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "<eos> -1 has no exact u16") != NULL);
    o.eos_value = 65535;
    o.pad_kind = SS_VALUE_I64;
    o.pad_i64 = 65536;
    CHECK_RC(ss_stream_create(&st, s, 0, &o), SS_EINVAL);
    CHECK(strstr(ss_error_message(), "pad 65536 has no exact u16") != NULL);

    /* version 1: the struct up to parallel_bytes, read by its own size */
    size_t v1 = offsetof(ss_stream_options, eos_kind);
    unsigned char *buf = malloc(v1);
    CHECK(buf != NULL);
    const ss_stream_options *old = (const void *)buf;
    unsigned version = 1;
    o.dtype = SS_I32;
    o.eos_value = -5;
    o.pad_value = -9;
    memcpy(buf, &o, v1);
    memcpy(buf + offsetof(ss_stream_options, version), &version, sizeof version);
    CHECK_OK(ss_stream_create(&st, s, 0, old));
    CHECK_OK(ss_stream_read(&b, st, 0));
    check_i32(b.input, (const int32_t[]){1, 2, 3, -5, 4, 5, 6, 7, -5, -5, 8, 9, 10, -5, -9, -9},
              16);
    ss_stream_free(st);
    version = 3;
    memcpy(buf + offsetof(ss_stream_options, version), &version, sizeof version);
    CHECK_RC(ss_stream_create(&st, s, 0, old), SS_EINVAL);
    free(buf);
    ss_close(s);
}

int main(void) {
    test_torchnet_sequence_batch();
    test_ten();
    test_errors();
    test_random();
    test_integer_values();
    printf("test_stream: ok\n");
    return 0;
}
