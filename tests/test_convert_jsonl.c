/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_jsonl.c - `seqstore convert jsonl` end to end: JSON lines
 * written here with an escaper of our own (raw UTF-8 and \u escapes,
 * surrogate pairs) are converted by the CLI, and every field of every example
 * is compared with the original strings; gzip input (and a truncated .gz),
 * 1 against 2 threads, and one specific error per kind of bad line. */
#include "convtest.h"

#include <zlib.h>

#define FORTUNES "/usr/share/games/fortunes/fortunes"

typedef struct corpus {
    char **lines;
    size_t *len;
    size_t n;
    char *text; /* the fortunes file the lines point into */
} corpus;

/* Fortunes' lines plus lines that stress the escaping. */
static corpus make_corpus(int copies) {
    size_t n;
    char *f = ss_test_read_file(FORTUNES, &n);
    static const char *const extra[] = {"quote \" backslash \\ slash /", "tab\tand\x01control\x1f",
                                        "caf\xc3\xa9 \xe2\x82\xac", "astral \xf0\x9f\x98\x80!", ""};
    corpus c = {NULL, NULL, 0, f};
    size_t cap = (n / 2 + 16) * (size_t)copies;
    c.lines = malloc(cap * sizeof *c.lines);
    c.len = malloc(cap * sizeof *c.len);
    CHECK(c.lines && c.len);
    for (int k = 0; k < copies; k++) {
        for (size_t e = 0; e < sizeof extra / sizeof extra[0]; e++) {
            c.lines[c.n] = (char *)extra[e];
            c.len[c.n++] = strlen(extra[e]);
        }
        for (char *p = f, *end = f + n; p < end;) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
            if (l && !(l == 1 && *p == '%')) { /* the '%' separators would make blank-free lines */
                c.lines[c.n] = p;
                c.len[c.n++] = l;
            }
            p += l + 1;
        }
    }
    return c;
}

/* Decode one UTF-8 sequence (valid input). */
static uint32_t utf8_next(const unsigned char **p) {
    const unsigned char *s = *p;
    uint32_t cp;
    int extra;
    if (s[0] < 0x80)
        cp = s[0], extra = 0;
    else if (s[0] < 0xE0)
        cp = s[0] & 31u, extra = 1;
    else if (s[0] < 0xF0)
        cp = s[0] & 15u, extra = 2;
    else
        cp = s[0] & 7u, extra = 3;
    for (int i = 1; i <= extra; i++) cp = cp << 6 | (s[i] & 63u);
    *p = s + 1 + extra;
    return cp;
}

/* A JSON string literal of [s, s + n); `ascii`: every non-ASCII code point
 * as \uXXXX (surrogate pairs beyond the BMP). */
static size_t json_str(char *out, const char *s, size_t n, int ascii) {
    size_t w = 0;
    out[w++] = '"';
    for (const unsigned char *p = (const unsigned char *)s, *e = p + n; p < e;) {
        if (*p == '"' || *p == '\\') {
            out[w++] = '\\';
            out[w++] = (char)*p++;
        } else if (*p < 0x20) {
            w += (size_t)sprintf(out + w, "\\u%04x", *p++);
        } else if (*p >= 0x80 && ascii) {
            uint32_t cp = utf8_next(&p);
            if (cp >= 0x10000)
                w += (size_t)sprintf(out + w, "\\u%04X\\u%04x", 0xD800 + ((cp - 0x10000) >> 10),
                                     0xDC00 + ((cp - 0x10000) & 0x3FF));
            else
                w += (size_t)sprintf(out + w, "\\u%04x", cp);
        } else {
            out[w++] = (char)*p++;
        }
    }
    out[w++] = '"';
    return w;
}

/* {"id": k, "text": ..., "title": <text reversed by words? no: "#k">, "input_ids": [bytes]} */
static char *make_jsonl(const corpus *c, size_t *size) {
    size_t cap = 64;
    for (size_t i = 0; i < c->n; i++) cap += c->len[i] * 12 + 128;
    char *out = malloc(cap), *w = out;
    CHECK(out);
    for (size_t i = 0; i < c->n; i++) {
        w += sprintf(w, "{\"id\": %zu, \"text\": ", i);
        w += json_str(w, c->lines[i], c->len[i], (int)(i & 1));
        w += sprintf(w, ", \"title\": \"#%zu\", \"input_ids\": [", i);
        for (size_t k = 0; k < c->len[i]; k++)
            w += sprintf(w, "%s%u", k ? ", " : "", (unsigned char)c->lines[i][k]);
        w += sprintf(w, "]}\n");
        if (i % 97 == 5) w += sprintf(w, "  \n"); /* blank lines are skipped */
    }
    *size = (size_t)(w - out);
    return out;
}

static void expect_field(ss_store *s, const char *field, uint64_t i, ss_dtype dtype,
                         const void *want, uint64_t n) {
    uint32_t f = ss_test_field(s, field);
    ss_view v;
    CHECK_OK(ss_get(&v, s, (uint32_t)f, i));
    CHECK(v.dtype == dtype);
    if (v.length != n || memcmp(v.data, want, n * v.row_bytes)) {
        fprintf(stderr, "example %" PRIu64 " field %s: %" PRIu64 " elements, want %" PRIu64 "\n", i,
                field, v.length, n);
        exit(1);
    }
}

static void check_store(const char *path, const corpus *c, const char *mode) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_EQ_U64(ss_count(s), c->n);
    uint32_t *cp = malloc(4096 * sizeof *cp);
    uint8_t *u16 = malloc(8192);
    CHECK(cp && u16);
    for (uint64_t i = 0; i < c->n; i++) {
        const char *l = c->lines[i];
        size_t n = c->len[i];
        if (!strcmp(mode, "bytes")) {
            expect_field(s, "text", i, SS_U8, l, n);
            char title[32];
            int tn = sprintf(title, "#%" PRIu64, i);
            expect_field(s, "title", i, SS_U8, title, (uint64_t)tn);
        } else if (!strcmp(mode, "chars")) {
            size_t k = 0;
            for (const unsigned char *p = (const unsigned char *)l;
                 p < (const unsigned char *)l + n;)
                cp[k++] = utf8_next(&p);
            expect_field(s, "text", i, SS_U32, cp, k);
        } else if (!strcmp(mode, "ids")) {
            expect_field(s, "input_ids", i, SS_U8, l, n);
        } else { /* bos/eos bytes: u16 256, bytes, 257 */
            uint16_t *w = (uint16_t *)(void *)u16;
            w[0] = 256;
            for (size_t k = 0; k < n; k++) w[k + 1] = (unsigned char)l[k];
            w[n + 1] = 257;
            expect_field(s, "text", i, SS_U16, w, n + 2);
        }
        /* provenance: line numbers count the blank lines */
        ss_view v;
        CHECK_OK(ss_get(&v, s, ss_test_field(s, "source"), i));
        uint64_t want_line = i + 1 + (i > 5 ? (i - 6) / 97 + 1 : 0);
        CHECK_EQ_U64(((const uint64_t *)v.data)[1], want_line);
    }
    free(cp);
    free(u16);
    ss_close(s);
}

static void test_fields(const char *jsonl, const corpus *c) {
    const char *st = ss_test_keep_path("j.ss");
    EXPECT_RUN(0, "convert jsonl %s --key text --key title -o %s --force --quiet", jsonl, st);
    check_store(st, c, "bytes");
    EXPECT_RUN(0, "convert jsonl %s --tokens chars -o %s --force --quiet", jsonl, st);
    check_store(st, c, "chars");
    EXPECT_RUN(0,
               "convert jsonl %s --key input_ids --tokens ids --vocab-size 256 -o %s --force "
               "--quiet",
               jsonl, st);
    check_store(st, c, "ids");
    EXPECT_RUN(0, "convert jsonl %s --bos --eos -o %s --force --quiet", jsonl, st);
    check_store(st, c, "bos_eos");
}

static void gz_write(const char *path, const char *data, size_t n) {
    gzFile g = gzopen(path, "wb");
    CHECK(g);
    CHECK(gzwrite(g, data, (unsigned)n) == (int)n);
    CHECK(gzclose(g) == Z_OK);
}

/* .gz input; a truncated .gz is an error naming the file (text and jsonl:
 * before the fix both took the truncated data as the whole input). */
static void test_gzip(const char *data, size_t n, const corpus *c) {
    const char *gz = ss_test_keep_path("c.jsonl.gz"), *st = ss_test_keep_path("gz.ss");
    gz_write(gz, data, n);
    EXPECT_RUN(0, "convert jsonl %s --key text --key title -o %s --quiet", gz, st);
    check_store(st, c, "bytes");
    size_t gn;
    char *g = ss_test_read_file(gz, &gn);
    const char *cut = ss_test_keep_path("cut.jsonl.gz");
    ss_test_write_file(cut, g, gn / 2);
    free(g);
    EXPECT_RUN(1, "convert jsonl %s -o %s --force --quiet", cut, st);
    EXPECT_ERR("cut.jsonl.gz: gzip error after");
    EXPECT_ERR("unexpected end of file");
    EXPECT_RUN(1, "convert text %s -o %s --force --quiet", cut, st);
    EXPECT_ERR("unexpected end of file");
}

/* Two stores hold the same examples of field `fa` resp. `fb` and the same
 * attribute `attr`. */
static void same_stores(const char *a, const char *fa, const char *b, const char *fb,
                        const char *attr) {
    ss_store *x, *y;
    CHECK_OK(ss_open(&x, a, 0));
    CHECK_OK(ss_open(&y, b, 0));
    CHECK_EQ_U64(ss_count(x), ss_count(y));
    uint32_t ix = ss_test_field(x, fa), iy = ss_test_field(y, fb);
    for (uint64_t i = 0; i < ss_count(x); i++) {
        ss_view u, v;
        CHECK_OK(ss_get(&u, x, (uint32_t)ix, i));
        CHECK_OK(ss_get(&v, y, (uint32_t)iy, i));
        CHECK(u.dtype == v.dtype && u.length == v.length);
        CHECK(!memcmp(u.data, v.data, u.length * u.row_bytes));
    }
    ss_attr p, q;
    CHECK_OK(ss_attr_get(&p, x, attr));
    CHECK_OK(ss_attr_get(&q, y, attr));
    CHECK(p.size == q.size && !memcmp(p.data, q.data, p.size));
    ss_close(x);
    ss_close(y);
}

/* --tokens words: the same ids and vocabulary as `convert text --tokens
 * words` on the same lines (whose words are checked against a plain
 * implementation in test_convert_cli), counted on 1 and 2 threads; --vocab
 * reuses a vocabulary. */
static void test_words(const char *jsonl, const corpus *c) {
    const char *txt = ss_test_keep_path("w.txt"), *ts = ss_test_keep_path("wt.ss"),
               *js = ss_test_keep_path("wj.ss");
    FILE *f = fopen(txt, "wb");
    CHECK(f);
    for (size_t i = 0; i < c->n; i++) {
        CHECK(fwrite(c->lines[i], 1, c->len[i], f) == c->len[i]);
        fputc('\n', f);
    }
    CHECK(fclose(f) == 0);
    for (int threads = 1; threads <= 2; threads++) {
        EXPECT_RUN(0, "convert text %s --tokens words --min-count 2 --bos -o %s --force --quiet",
                   txt, ts);
        EXPECT_RUN(0,
                   "convert jsonl %s --tokens words --min-count 2 --bos --threads %d -o %s "
                   "--force --quiet",
                   jsonl, threads, js);
        same_stores(ts, "tokens", js, "text", "vocab");
    }
    EXPECT_RUN(0, "convert jsonl %s --tokens words --vocab %s -o %s --force --quiet", jsonl, ts,
               js);
    const char *ts2 = ss_test_keep_path("wt2.ss");
    EXPECT_RUN(0, "convert text %s --tokens words --vocab %s -o %s --force --quiet", txt, ts, ts2);
    same_stores(ts2, "tokens", js, "text", "vocab");
}

/* A conversion killed part way and resumed gives the uninterrupted store
 * (words: the vocabulary is counted again, the same). */
static void test_resume(const char *jsonl) {
    const char *full = ss_test_keep_path("rfull.ss"), *part = ss_test_keep_path("rpart.ss");
    const char *opts = "--key text --key title --tokens words --threads 2 --quiet";
    EXPECT_RUN(0, "convert jsonl %s %s -o %s", jsonl, opts, full);
    int rc = run_sh("SS_TEST_KILL_AFTER=300 %s convert jsonl %s %s --commit-bytes 500 -o %s",
                    SS_CLI, jsonl, opts, part);
    CHECK_EXIT(rc, 128 + 9, g_err);
    EXPECT_RUN(1, "info %s", part); /* incomplete */
    EXPECT_RUN(0, "convert jsonl %s %s --resume -o %s", jsonl, opts, part);
    same_stores(full, "text", part, "text", "vocab");
    same_stores(full, "title", part, "title", "vocab");
    same_stores(full, "source", part, "source", "vocab");
}

/* The store does not depend on the number of threads (a > 1 MiB input has
 * several blocks). */
static void test_threads(void) {
    corpus big = make_corpus(150);
    size_t n;
    char *data = make_jsonl(&big, &n);
    CHECK(n > 3u << 20);
    const char *in = ss_test_keep_path("big.jsonl"), *a = ss_test_keep_path("t1.ss"),
               *b = ss_test_keep_path("t2.ss");
    ss_test_write_file(in, data, n);
    EXPECT_RUN(0, "convert jsonl %s --key text --key title --threads 1 -o %s --quiet", in, a);
    EXPECT_RUN(0, "convert jsonl %s --key text --key title --threads 2 -o %s --quiet", in, b);
    check_store(a, &big, "bytes");
    check_store(b, &big, "bytes");
    free(data);
    free(big.lines);
    free(big.len);
    free(big.text);
}

/* Each bad line: exit 1, "FILE:LINE: <specific message>"; with --skip-bad all
 * are listed and the good lines kept. */
static void test_bad_lines(void) {
    static const struct {
        const char *name, *line, *opts, *expect;
    } cases[] = {
        {"truncated", "{\"text\": \"a\"", "", "invalid JSON at column"},
        {"array", "[\"a\"]", "", "the line is an array, not a JSON object"},
        {"nokey", "{\"txt\": \"a\"}", "", "no key 'text'"},
        {"int", "{\"text\": 5}", "", "key 'text' is an integer, not a string or an array of ids"},
        {"null", "{\"text\": null}", "", "key 'text' is null, not a string"},
        {"ids_bytes", "{\"text\": [1, 2]}", "", "key 'text' is an array of ids: use --tokens ids"},
        {"str_ids", "{\"text\": \"a\"}", "--tokens ids", "key 'text' is a string; --tokens ids"},
        {"float", "{\"text\": [1, 2.5]}", "--tokens ids", "element 1 is a number, not a token id"},
        {"range", "{\"text\": [1, 10]}", "--tokens ids --vocab-size 10",
         "element 1, id 10, is out of range [0, 10) (--vocab-size)"},
        {"negative", "{\"text\": [-3]}", "--tokens ids", "element 0, id -3, is out of range"},
        {"big", "{\"text\": [4294967296]}", "--tokens ids", "id 4294967296, is out of range"},
        {"utf8", "{\"text\": \"\xff\"}", "", "invalid JSON at column"},
        {"nul", "{\"text\": \"a\\u0000b\"}", "", "NUL"},
        {"second", "{\"text\": \"a\", \"title\": 1}", "--key text --key title",
         "key 'title' is an integer"},
    };
    char all[4096] = "{\"text\": \"good\", \"title\": \"t\"}\n";
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char name[64], body[512];
        snprintf(name, sizeof name, "bad_%s.jsonl", cases[k].name);
        const char *f = ss_test_keep_path(name);
        int m = snprintf(body, sizeof body, "{\"text\": %s, \"title\": \"t\"}\n\n%s\n",
                         strstr(cases[k].opts, "ids") ? "[1]" : "\"ok\"", cases[k].line);
        ss_test_write_file(f, body, (size_t)m);
        EXPECT_RUN(1, "convert jsonl %s %s -o %s --force --quiet", f, cases[k].opts,
                   ss_test_keep_path("b.ss"));
        char where[700];
        snprintf(where, sizeof where, "%s:3: ", f);
        EXPECT_ERR(where);
        EXPECT_ERR(cases[k].expect);
        if (!*cases[k].opts) {
            strcat(all, cases[k].line);
            strcat(all, "\n");
        }
    }
    strcat(all, "{\"text\": \"last\"}\n");
    const char *f = ss_test_keep_path("bad_all.jsonl"), *st = ss_test_keep_path("skip.ss");
    ss_test_write_file(f, all, strlen(all));
    EXPECT_RUN(0, "convert jsonl %s --skip-bad -o %s --force", f, st);
    EXPECT_ERR("skipped 8 bad inputs");
    EXPECT_ERR("bad_all.jsonl:7: key 'text' is an array of ids");
    ss_store *s;
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_EQ_U64(ss_count(s), 2);
    expect_field(s, "text", 1, SS_U8, "last", 4);
    ss_close(s);
}

static void test_usage(void) {
    const char *in = ss_test_keep_path("u.jsonl"), *st = ss_test_keep_path("u.ss");
    ss_test_write_file(in, "{}\n", 3);
    EXPECT_RUN(2, "convert jsonl %s --key source -o %s", in, st);
    EXPECT_ERR("--key 'source' cannot name a field");
    EXPECT_RUN(2, "convert jsonl %s --key a --key a -o %s", in, st);
    EXPECT_ERR("given twice");
    EXPECT_RUN(2, "convert jsonl %s --tokens spm -o %s", in, st);
    EXPECT_ERR("--tokens needs bytes, chars, words or ids");
    EXPECT_RUN(2, "convert jsonl %s --min-count 2 -o %s", in, st);
    EXPECT_ERR("need --tokens words");
    EXPECT_RUN(2, "convert jsonl %s --vocab-size 5 -o %s", in, st);
    EXPECT_ERR("--vocab-size needs --tokens ids");
    EXPECT_RUN(2, "convert jsonl %s --tokenizer spm:x --tokens bytes -o %s", in, st);
    EXPECT_ERR("exclude each other");
    EXPECT_RUN(2, "convert jsonl %s --tokenizer bpe:x -o %s", in, st);
    EXPECT_ERR("--tokenizer needs spm:MODEL");
    EXPECT_RUN(2, "convert jsonl -o %s", st);
    EXPECT_ERR("no input file");
}

/* The number of examples of store `path`. */
static uint64_t count_of(const char *path) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    uint64_t n = ss_count(s);
    ss_close(s);
    return n;
}

/* What `gzip -t` refuses is an error naming the file, for jsonl and text
 * alike: a gzip stream followed by other bytes (before: the bytes were
 * ignored), a plain file named .gz (before: read as plain text), an empty
 * one. What gzip reads is read whole: concatenated members (each one's
 * lines), and zero bytes padding the end, as gzip allows. */
static void test_gzip_strict(void) {
    const char *st = ss_test_keep_path("gzs.ss");
    const char *one = ss_test_keep_path("one.jsonl.gz"), *two = ss_test_keep_path("two.jsonl.gz");
    const char *junk = ss_test_keep_path("junk.jsonl.gz"), *pad = ss_test_keep_path("pad.jsonl.gz");
    const char *plain = ss_test_keep_path("plain.jsonl.gz");
    const char *nil = ss_test_keep_path("nil.jsonl.gz");
    const char *line = "{\"text\": \"abc\"}\n";
    gz_write(one, line, strlen(line));
    EXPECT_SH(0, "cat %s %s %s > %s && gzip -t %s", one, one, one, two, two);
    EXPECT_RUN(0, "convert jsonl %s -o %s --force --quiet", two, st);
    CHECK_EQ_U64(count_of(st), 3);
    EXPECT_SH(0, "cp %s %s && head -c 1000 /dev/zero >> %s && gzip -t %s", one, pad, pad, pad);
    EXPECT_RUN(0, "convert jsonl %s -o %s --force --quiet", pad, st);
    CHECK_EQ_U64(count_of(st), 1);
    EXPECT_SH(0, "cat %s %s > %s && printf 'garbage' >> %s && ! gzip -t %s 2>/dev/null", one, one,
              junk, junk, junk);
    ss_test_write_file(plain, line, strlen(line));
    ss_test_write_file(nil, "", 0);
    EXPECT_SH(1, "gzip -t %s 2>/dev/null", plain);
    EXPECT_SH(1, "gzip -t %s 2>/dev/null", nil);
    const char *kinds[] = {"jsonl", "text", "lines"};
    for (int k = 0; k < 3; k++) {
        EXPECT_RUN(1, "convert %s %s -o %s --force --quiet", kinds[k], junk, st);
        EXPECT_ERR("junk.jsonl.gz: not gzip: 7 bytes after the end of gzip member 2 (at byte ");
        EXPECT_RUN(1, "convert %s %s -o %s --force --quiet", kinds[k], plain, st);
        EXPECT_ERR("plain.jsonl.gz: not gzip: it does not start with the gzip magic bytes");
        EXPECT_RUN(1, "convert %s %s -o %s --force --quiet", kinds[k], nil, st);
        EXPECT_ERR("nil.jsonl.gz: not gzip: the file is empty");
    }
}

/* Blank lines are no examples, and the summary counts them; an empty string
 * is an example of length 0. */
static void test_blank_and_empty(void) {
    const char *in = ss_test_keep_path("blank.jsonl"), *st = ss_test_keep_path("blank.ss");
    const char *text = "{\"text\": \"\"}\n\n{\"text\": \"a\"}\n \t\n";
    ss_test_write_file(in, text, strlen(text));
    EXPECT_RUN(0, "convert jsonl %s -o %s --force", in, st);
    EXPECT_ERR("skipped 2 blank lines\n");
    ss_store *s;
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_EQ_U64(ss_count(s), 2);
    expect_field(s, "text", 0, SS_U8, "", 0);
    expect_field(s, "text", 1, SS_U8, "a", 1);
    ss_close(s);
}

int main(void) {
    test_gzip_strict();
    test_blank_and_empty();
    corpus c = make_corpus(1);
    size_t n;
    char *data = make_jsonl(&c, &n);
    const char *jsonl = ss_test_keep_path("c.jsonl");
    ss_test_write_file(jsonl, data, n);
    test_fields(jsonl, &c);
    test_words(jsonl, &c);
    test_resume(jsonl);
    test_gzip(data, n, &c);
    test_threads();
    test_bad_lines();
    test_usage();
    free(data);
    free(c.lines);
    free(c.len);
    free(c.text);
    printf("ok\n");
    return 0;
}
