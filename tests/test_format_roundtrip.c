/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_roundtrip.c - random schemas written, read back byte for byte,
 * reopened, appended to and read again; the flat view against a naive
 * concatenation. */
#include "testutil.h"

#include <string.h>

/* Example contents are a pure function of (seed, example, field, byte), so the
 * test can regenerate what it wrote without keeping it. */
static unsigned char expected_byte(uint64_t seed, uint64_t example, uint32_t field, uint64_t k) {
    uint64_t st = seed ^ (example * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)field << 56) ^ (k * 31);
    return (unsigned char)ss_test_rand(&st);
}

typedef struct model {
    uint64_t seed;
    ss_schema schema;
    ss_field fields[6];
    char names[6][16];
    uint64_t row_bytes[6];
    uint64_t *lengths[6]; /* lengths[f][i] */
    uint64_t count, cap;
} model;

static void check_stored_lengths(const model *m, const ss_store *s, uint32_t f);
static uint32_t n_sequence_fields(const ss_schema *schema);

static uint64_t random_length(uint64_t *rng, uint64_t chunk_bytes, uint64_t row_bytes) {
    uint64_t r = ss_test_rand(rng) % 100;
    if (r < 10) return 0;
    if (r < 13) return chunk_bytes / row_bytes + 1 + ss_test_rand(rng) % 3000; /* > one chunk */
    if (r < 50) return 1 + ss_test_rand(rng) % 8;
    return 1 + ss_test_rand(rng) % 700;
}

static void random_schema(model *m, uint64_t *rng) {
    static const ss_dtype dtypes[] = {SS_U8,  SS_I8,  SS_U16, SS_I16, SS_U32, SS_I32,
                                      SS_U64, SS_I64, SS_F16, SS_F32, SS_F64, SS_BF16};
    uint32_t n = 1 + (uint32_t)(ss_test_rand(rng) % 5);
    for (uint32_t f = 0; f < n; f++) {
        ss_field *d = &m->fields[f];
        memset(d, 0, sizeof *d);
        snprintf(m->names[f], sizeof m->names[f], "field%u", f);
        d->name = m->names[f];
        d->dtype = dtypes[ss_test_rand(rng) % 12];
        d->sequence = f == 0 || ss_test_rand(rng) % 3 != 0;
        d->ndim = (uint32_t)(ss_test_rand(rng) % 3);
        m->row_bytes[f] = ss_dtype_size(d->dtype);
        for (uint32_t k = 0; k < d->ndim; k++) {
            d->dims[k] = 1 + ss_test_rand(rng) % (k == 0 ? 21 : 3);
            m->row_bytes[f] *= d->dims[k];
        }
    }
    m->schema.nfields = n;
    m->schema.fields = m->fields;
}

static void write_examples(model *m, ss_writer *w, uint64_t n, uint64_t *rng,
                           uint64_t chunk_bytes) {
    ss_value values[6];
    unsigned char *buf[6] = {0};
    for (uint64_t e = 0; e < n; e++) {
        uint64_t i = m->count;
        if (i == m->cap) {
            m->cap = m->cap ? 2 * m->cap : 64;
            for (uint32_t f = 0; f < m->schema.nfields; f++)
                m->lengths[f] = realloc(m->lengths[f], m->cap * sizeof(uint64_t));
        }
        for (uint32_t f = 0; f < m->schema.nfields; f++) {
            uint64_t len =
                m->fields[f].sequence ? random_length(rng, chunk_bytes, m->row_bytes[f]) : 1;
            uint64_t bytes = len * m->row_bytes[f];
            buf[f] = realloc(buf[f], bytes ? bytes : 1);
            for (uint64_t k = 0; k < bytes; k++) buf[f][k] = expected_byte(m->seed, i, f, k);
            values[f].data = len ? buf[f] : NULL;
            values[f].length = len;
            m->lengths[f][i] = len;
        }
        CHECK_OK(ss_writer_append(w, values));
        m->count++;
        CHECK_EQ_U64(ss_writer_count(w), m->count);
    }
    for (uint32_t f = 0; f < m->schema.nfields; f++) free(buf[f]);
}

static void check_store(const model *m, const char *path) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_EQ_U64(ss_count(s), m->count);
    CHECK_EQ_U64(ss_field_count(s), m->schema.nfields);
    for (uint32_t f = 0; f < m->schema.nfields; f++) {
        ss_field info;
        CHECK_OK(ss_field_info(&info, s, f));
        CHECK(strcmp(info.name, m->fields[f].name) == 0);
        CHECK(info.dtype == m->fields[f].dtype && info.sequence == m->fields[f].sequence);
        uint32_t fi;
        CHECK_OK(ss_field_index(&fi, s, m->fields[f].name));
        CHECK_EQ_U64(fi, f);
        uint64_t flat_total = 0;
        for (uint64_t i = 0; i < m->count; i++) {
            ss_view v;
            CHECK_OK(ss_get(&v, s, f, i));
            CHECK_EQ_U64(v.length, m->lengths[f][i]);
            CHECK_EQ_U64(ss_length(s, f, i), m->lengths[f][i]);
            CHECK_EQ_U64(v.row_bytes, m->row_bytes[f]);
            CHECK((uintptr_t)v.data % ss_dtype_size(v.dtype) == 0);
            const unsigned char *d = v.data;
            for (uint64_t k = 0; k < v.length * v.row_bytes; k++)
                if (d[k] != expected_byte(m->seed, i, f, k)) {
                    fprintf(stderr, "field %u example %llu byte %llu differs\n", f,
                            (unsigned long long)i, (unsigned long long)k);
                    exit(1);
                }
            flat_total += v.length;
            if (v.length >= 2) { /* a sub-range is the same bytes, zero-copy */
                ss_view r;
                CHECK_OK(ss_get_range(&r, s, f, i, 1, v.length));
                CHECK(r.data == (const unsigned char *)v.data + v.row_bytes);
                CHECK_EQ_U64(r.length, v.length - 1);
            }
        }
        CHECK_EQ_U64(ss_flat_size(s, f), flat_total);
        uint64_t *lens = malloc((m->count + 1) * sizeof *lens);
        CHECK_OK(ss_lengths(lens, s, f, 0, m->count));
        for (uint64_t i = 0; i < m->count; i++) CHECK_EQ_U64(lens[i], m->lengths[f][i]);
        free(lens);
        check_stored_lengths(m, s, f);
    }
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);
}

/* The stored lengths section (spec/FORMAT.md §7.3) of field `f` against the
 * model: same values, narrowest type, read in place. */
static void check_stored_lengths(const model *m, const ss_store *s, uint32_t f) {
    const void *data;
    ss_dtype dt;
    uint64_t n, longest = 0;
    if (!m->fields[f].sequence) {
        CHECK_RC(ss_lengths_view(&data, &dt, &n, s, f), SS_EINVAL);
        return;
    }
    CHECK_OK(ss_lengths_view(&data, &dt, &n, s, f));
    CHECK_EQ_U64(n, m->count);
    CHECK((uintptr_t)data % 8 == 0);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t got = dt == SS_U8    ? ((const uint8_t *)data)[i]
                       : dt == SS_U16 ? ((const uint16_t *)data)[i]
                       : dt == SS_U32 ? ((const uint32_t *)data)[i]
                                      : ((const uint64_t *)data)[i];
        CHECK_EQ_U64(got, m->lengths[f][i]);
        if (got > longest) longest = got;
    }
    CHECK(dt == (longest <= 255 ? SS_U8 : longest <= 65535 ? SS_U16 : SS_U32));
}

static uint32_t n_sequence_fields(const ss_schema *schema) {
    uint32_t n = 0;
    for (uint32_t f = 0; f < schema->nfields; f++) n += schema->fields[f].sequence != 0;
    return n;
}

/* The flat view against a naive concatenation of every example. */
static void check_flat(const model *m, const char *path, uint64_t *rng) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    for (uint32_t f = 0; f < m->schema.nfields; f++) {
        uint64_t total = ss_flat_size(s, f), rb = m->row_bytes[f];
        unsigned char *naive = malloc(total * rb + 1);
        uint64_t *owner = malloc((total + 1) * sizeof *owner),
                 *off = malloc((total + 1) * sizeof *off);
        uint64_t pos = 0;
        for (uint64_t i = 0; i < m->count; i++) {
            ss_view v;
            CHECK_OK(ss_get(&v, s, f, i));
            memcpy(naive + pos * rb, v.data, v.length * rb);
            for (uint64_t t = 0; t < v.length; t++) owner[pos + t] = i, off[pos + t] = t;
            pos += v.length;
        }
        CHECK_EQ_U64(pos, total);
        for (int trial = 0; trial < 200 && total; trial++) {
            uint64_t p = ss_test_rand(rng) % total, q = p + ss_test_rand(rng) % (total - p + 1);
            uint64_t ex, o;
            CHECK_OK(ss_flat_locate(&ex, &o, s, f, p));
            CHECK_EQ_U64(ex, owner[p]);
            CHECK_EQ_U64(o, off[p]);
            unsigned char *buf = malloc((q - p) * rb + 1);
            CHECK_OK(ss_flat_read(buf, s, f, p, q));
            CHECK(memcmp(buf, naive + p * rb, (q - p) * rb) == 0);
            free(buf);
        }
        uint64_t ex, o;
        CHECK_RC(ss_flat_locate(&ex, &o, s, f, total), SS_ERANGE);
        free(naive);
        free(owner);
        free(off);
    }
    ss_close(s);
}

static void run_trial(uint64_t seed) {
    uint64_t rng = seed;
    model m;
    memset(&m, 0, sizeof m);
    m.seed = seed;
    random_schema(&m, &rng);
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = 1 + (uint32_t)(ss_test_rand(&rng) % 4); /* small chunks: many boundaries */
    o.commit_bytes = 1 + ss_test_rand(&rng) % 200000;
    o.map_bytes = 1 << 20; /* forces the map to grow */
    o.flags = SS_WRITE_NOSYNC;
    uint64_t chunk_bytes = (uint64_t)o.chunk_pages * 4096 - 32;
    char name[64];
    snprintf(name, sizeof name, "rt-%llu.ss", (unsigned long long)seed);
    const char *path = ss_test_path(name);

    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &m.schema, &o));
    write_examples(&m, w, 50 + ss_test_rand(&rng) % 250, &rng, chunk_bytes);
    CHECK_OK(ss_writer_set_attr(w, "note", SS_ATTR_TEXT, "hello", 5));
    double gains[3] = {0.5, 1.5, -2.0};
    CHECK_OK(ss_writer_set_attr(w, "gain", SS_F64, gains, sizeof gains));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    check_store(&m, path);
    check_flat(&m, path, &rng);

    /* append to the finished store, possibly twice */
    for (int round = 0; round < 2; round++) {
        CHECK_OK(ss_writer_open(&w, path, &m.schema, &o));
        CHECK_EQ_U64(ss_writer_count(w), m.count);
        write_examples(&m, w, ss_test_rand(&rng) % 120, &rng, chunk_bytes);
        CHECK_OK(ss_writer_finish(w));
        ss_writer_free(w);
        check_store(&m, path);
    }
    check_flat(&m, path, &rng);

    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, "note"));
    CHECK(a.type == SS_ATTR_TEXT && a.size == 5 && memcmp(a.data, "hello", 5) == 0);
    CHECK_OK(ss_attr_get(&a, s, "gain"));
    CHECK(a.type == SS_F64 && a.size == sizeof gains && (uintptr_t)a.data % 8 == 0);
    CHECK(((const double *)a.data)[2] == -2.0);
    CHECK_RC(ss_attr_get(&a, s, "missing"), SS_ENOTFOUND);
    CHECK_EQ_U64(ss_attr_count(s), 2 + n_sequence_fields(&m.schema)); /* + ss.lengths.* */
    ss_view v;
    CHECK_RC(ss_get(&v, s, 0, m.count), SS_ERANGE);
    CHECK_RC(ss_get(&v, s, m.schema.nfields, 0), SS_ERANGE);
    uint32_t fi;
    CHECK_RC(ss_field_index(&fi, s, "nope"), SS_ENOTFOUND);
    ss_close(s);
    for (uint32_t f = 0; f < m.schema.nfields; f++) free(m.lengths[f]);
}

int main(void) {
    for (uint64_t seed = 1; seed <= 24; seed++) run_trial(seed);
    /* an empty store is a valid store */
    ss_field tok = {"tokens", SS_U16, 1, 0, {0}};
    ss_schema sc = {1, &tok};
    ss_writer *w;
    const char *path = ss_test_path("empty.ss");
    CHECK_OK(ss_writer_create(&w, path, &sc, NULL));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_EQ_U64(ss_count(s), 0);
    CHECK_EQ_U64(ss_flat_size(s, 0), 0);
    ss_close(s);
    CHECK_RC(ss_writer_create(&w, path, &sc, NULL), SS_EEXIST);
    CHECK(w == NULL);
    printf("format round trip: ok\n");
    return 0;
}
