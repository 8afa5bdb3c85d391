/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_cli.c - `seqstore convert lines|text|parallel` end to end: runs
 * the built CLI (SS_CLI) and checks every store against an independent, plain
 * reading of the source files. */
#include "convtest.h"
#include "testutil.h"

#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

extern char **environ;

#define FORTUNES "/usr/share/games/fortunes/fortunes"

/* Run `seqstore ARGS` (a shell command line; stdout to stdout.txt); returns
 * the exit code, or 128 + signal. stderr lands in g_err (convtest.h). */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
    char args[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return run_sh("exec %s %s > %s", SS_CLI, args, ss_test_keep_path("stdout.txt"));
}

#undef EXPECT_RUN
#define EXPECT_RUN(code, ...) CHECK_EXIT(run(__VA_ARGS__), code, g_err)

/* ------------------------------------------------------ independent reading */

typedef struct seg {
    const char *p;
    size_t n;
    uint64_t line; /* 1-based line number of its first line */
} seg;

/* Lines of a buffer, the plain way: one char at a time. */
static seg *naive_lines(const char *d, size_t n, size_t *count) {
    seg *v = malloc((n + 1) * sizeof *v);
    size_t k = 0, start = 0;
    CHECK(v);
    for (size_t i = 0; i < n; i++)
        if (d[i] == '\n') {
            v[k] = (seg){d + start, i - start, k + 1};
            k++;
            start = i + 1;
        }
    if (start < n) {
        v[k] = (seg){d + start, n - start, k + 1};
        k++;
    }
    *count = k;
    return v;
}

/* Documents separated by lines equal to `sep`: the bytes between them. */
static seg *naive_docs(const char *d, size_t n, const char *sep, size_t *count) {
    size_t nl;
    seg *lines = naive_lines(d, n, &nl);
    seg *docs = malloc((nl + 1) * sizeof *docs);
    size_t k = 0;
    int open = 0;
    CHECK(docs);
    for (size_t i = 0; i < nl; i++) {
        int is_sep = lines[i].n == strlen(sep) && !memcmp(lines[i].p, sep, lines[i].n);
        if (is_sep) {
            open = 0;
            continue;
        }
        if (!open) {
            docs[k++] = lines[i];
            open = 1;
        } else {
            docs[k - 1].n = (size_t)(lines[i].p + lines[i].n - docs[k - 1].p);
        }
    }
    free(lines);
    *count = k;
    return docs;
}

static int is_space(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* Whitespace-separated words of a segment, as NUL-terminated copies. */
static size_t naive_words(seg s, char ***out) {
    char **w = malloc((s.n / 2 + 2) * sizeof *w);
    size_t k = 0;
    CHECK(w);
    for (size_t i = 0; i < s.n;) {
        while (i < s.n && is_space(s.p[i])) i++;
        size_t b = i;
        while (i < s.n && !is_space(s.p[i])) i++;
        if (i > b) w[k++] = strndup(s.p + b, i - b);
    }
    *out = w;
    return k;
}

static void free_words(char **w, size_t n) {
    for (size_t i = 0; i < n; i++) free(w[i]);
    free(w);
}

/* ------------------------------------------------------------ store access */

static ss_store *open_store(const char *path) {
    ss_store *s = NULL;
    CHECK_OK(ss_open(&s, path, 0));
    return s;
}

static uint64_t token_at(const ss_view *v, uint64_t i) {
    const unsigned char *p = (const unsigned char *)v->data + i * v->row_bytes;
    switch (v->dtype) {
    case SS_U8:
        return *p;
    case SS_U16:
        return *(const uint16_t *)(const void *)p;
    case SS_U32:
        return *(const uint32_t *)(const void *)p;
    default:
        CHECK(!"unexpected dtype");
        return 0;
    }
}

static void check_source(const ss_store *s, uint64_t i, uint64_t file, uint64_t line) {
    ss_view v;
    uint32_t f = ss_test_field(s, "source");
    CHECK_OK(ss_get(&v, s, (uint32_t)f, i));
    const uint64_t *src = v.data;
    CHECK_EQ_U64(src[0], file);
    CHECK_EQ_U64(src[1], line);
}

static char *attr_string(const ss_store *s, const char *name) {
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, name));
    CHECK(a.type == SS_ATTR_TEXT);
    return strndup(a.data, a.size);
}

/* The vocabulary attribute split into tokens. */
static size_t vocab_of(const ss_store *s, const char *name, char ***out) {
    char *t = attr_string(s, name);
    seg sg = {t, strlen(t), 0};
    size_t n = naive_words(sg, out); /* tokens have no whitespace */
    free(t);
    return n;
}

static int64_t find_token(char **vocab, size_t n, const char *w) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(vocab[i], w)) return (int64_t)i;
    return -1;
}

/* Every example of field 0 equals the bytes of segs[k]. */
static void check_bytes(const ss_store *s, const seg *segs, size_t n, uint64_t file) {
    CHECK_EQ_U64(ss_count(s), n);
    for (size_t k = 0; k < n; k++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, k));
        CHECK(v.dtype == SS_U8);
        CHECK_EQ_U64(v.length, segs[k].n);
        CHECK(!memcmp(v.data, segs[k].p, segs[k].n));
        check_source(s, k, file, segs[k].line);
    }
}

/* ------------------------------------------------------------------ tests */

static void test_lines(void) {
    size_t n, nl;
    char *d = ss_test_read_file(FORTUNES, &n);
    seg *lines = naive_lines(d, n, &nl);
    const char *out = ss_test_keep_path("lines.ss");
    EXPECT_RUN(0, "convert lines %s -o %s", FORTUNES, out);
    EXPECT_ERR("seqstore convert: ");
    EXPECT_ERR(" examples, ");
    CHECK(!strchr(g_err, '\r')); /* no progress line: stderr is not a terminal */
    ss_store *s = open_store(out);
    check_bytes(s, lines, nl, 1);
    char *files = attr_string(s, "source.files"), *kind = attr_string(s, "convert.converter");
    char *ver = attr_string(s, "convert.version"), *tok = attr_string(s, "tokens.tokens");
    CHECK(!strcmp(files, FORTUNES "\n"));
    CHECK(!strcmp(kind, "lines"));
    CHECK(!strcmp(ver, ss_version()));
    CHECK(!strcmp(tok, "bytes"));
    free(files);
    free(kind);
    free(ver);
    free(tok);
    ss_close(s);

    /* never overwritten without --force; --quiet prints nothing */
    EXPECT_RUN(1, "convert lines %s -o %s", FORTUNES, out);
    EXPECT_ERR("exists");
    EXPECT_RUN(0, "convert lines %s -o %s --force --quiet", FORTUNES, out);
    CHECK(g_err[0] == 0);
    /* cat --with-source shows FILE:LINE */
    EXPECT_RUN(0, "cat %s --range 2:3 --with-source", out);
    size_t on;
    char *o = ss_test_read_file(ss_test_keep_path("stdout.txt"), &on);
    CHECK(strstr(o, FORTUNES ":3"));
    free(o);
    free(lines);
    free(d);
}

/* Fortunes, one per example (--doc-sep %), as words, through the vocabulary. */
static void test_words_docs(void) {
    size_t n, nd;
    char *d = ss_test_read_file(FORTUNES, &n);
    seg *docs = naive_docs(d, n, "%", &nd);
    const char *out = ss_test_keep_path("words.ss");
    EXPECT_RUN(0, "convert text --tokens words --doc-sep %% --min-count 2 --bos --eos %s -o %s -q",
               FORTUNES, out);
    ss_store *s = open_store(out);
    CHECK_EQ_U64(ss_count(s), nd);
    char **vocab;
    size_t nv = vocab_of(s, "vocab", &vocab);
    CHECK(nv > 4);
    CHECK(!strcmp(vocab[0], "<pad>") && !strcmp(vocab[1], "<unk>"));
    CHECK(!strcmp(vocab[2], "<bos>") && !strcmp(vocab[3], "<eos>"));

    /* naive counts: every word of every document */
    size_t total = 0, cap = 1 << 12;
    char **all = malloc(cap * sizeof *all);
    for (size_t k = 0; k < nd; k++) {
        char **w;
        size_t nw = naive_words(docs[k], &w);
        for (size_t i = 0; i < nw; i++) {
            if (total == cap) all = realloc(all, (cap *= 2) * sizeof *all);
            all[total++] = w[i];
        }
        free(w);
    }
    /* each kept word: count >= 2; order: count desc, then bytes */
    uint64_t prev_count = UINT64_MAX;
    const char *prev = NULL;
    for (size_t id = 4; id < nv; id++) {
        uint64_t cnt = 0;
        for (size_t i = 0; i < total; i++) cnt += !strcmp(all[i], vocab[id]);
        CHECK(cnt >= 2);
        CHECK(cnt <= prev_count);
        if (cnt == prev_count) CHECK(strcmp(prev, vocab[id]) < 0);
        prev_count = cnt;
        prev = vocab[id];
    }
    /* every word seen twice is in the vocabulary */
    for (size_t i = 0; i < total; i++) {
        uint64_t cnt = 0;
        for (size_t j = 0; j < total && cnt < 2; j++) cnt += !strcmp(all[i], all[j]);
        CHECK((cnt >= 2) == (find_token(vocab, nv, all[i]) >= 0));
    }
    /* every document, token by token */
    ss_field f;
    CHECK_OK(ss_field_info(&f, s, 0));
    CHECK(f.dtype == (nv <= 256 ? SS_U8 : nv <= 65536 ? SS_U16 : SS_U32));
    for (size_t k = 0; k < nd; k++) {
        char **w;
        size_t nw = naive_words(docs[k], &w);
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, k));
        CHECK_EQ_U64(v.length, nw + 2);
        CHECK_EQ_U64(token_at(&v, 0), 2);
        CHECK_EQ_U64(token_at(&v, nw + 1), 3);
        for (size_t i = 0; i < nw; i++) {
            int64_t id = find_token(vocab, nv, w[i]);
            CHECK_EQ_U64(token_at(&v, i + 1), id < 0 ? 1 : (uint64_t)id);
        }
        check_source(s, k, 1, docs[k].line);
        free_words(w, nw);
    }
    ss_close(s);

    /* a second corpus reuses the vocabulary (store and text file) */
    const char *valid = ss_test_keep_path("valid.ss"), *valid2 = ss_test_keep_path("valid2.ss");
    const char *vfile = ss_test_keep_path("vocab.txt");
    EXPECT_RUN(0, "convert text --tokens words --vocab %s %s/riddles -o %s -q", out,
               "/usr/share/games/fortunes", valid);
    FILE *vf = fopen(vfile, "w");
    for (size_t i = 0; i < nv; i++) fprintf(vf, "%s\n", vocab[i]);
    fclose(vf);
    EXPECT_RUN(0, "convert text --tokens words --vocab %s %s/riddles -o %s -q", vfile,
               "/usr/share/games/fortunes", valid2);
    ss_store *a = open_store(valid), *b = open_store(valid2);
    char **va;
    size_t nva = vocab_of(a, "vocab", &va);
    CHECK_EQ_U64(nva, nv);
    for (size_t i = 0; i < nv; i++) CHECK(!strcmp(va[i], vocab[i]));
    CHECK_EQ_U64(ss_count(a), ss_count(b));
    for (uint64_t i = 0; i < ss_count(a); i++) {
        ss_view x, y;
        CHECK_OK(ss_get(&x, a, 0, i));
        CHECK_OK(ss_get(&y, b, 0, i));
        CHECK_EQ_U64(x.length, y.length);
        for (uint64_t t = 0; t < x.length; t++) CHECK_EQ_U64(token_at(&x, t), token_at(&y, t));
    }
    free_words(va, nva);
    ss_close(a);
    ss_close(b);
    free_words(vocab, nv);
    for (size_t i = 0; i < total; i++) free(all[i]);
    free(all);
    free(docs);
    free(d);
}

/* A naive UTF-8 encoder, independent of converters/utf8.c. */
static size_t enc(char *o, uint32_t c) {
    if (c < 0x80) return o[0] = (char)c, 1;
    if (c < 0x800) return o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 63)), 2;
    if (c < 0x10000)
        return o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | (c >> 6 & 63)),
               o[2] = (char)(0x80 | (c & 63)), 3;
    return o[0] = (char)(0xF0 | c >> 18), o[1] = (char)(0x80 | (c >> 12 & 63)),
           o[2] = (char)(0x80 | (c >> 6 & 63)), o[3] = (char)(0x80 | (c & 63)), 4;
}

static uint32_t random_cp(uint64_t *rng) {
    for (;;) {
        uint64_t r = ss_test_rand(rng);
        uint32_t c = r % 4 == 0 ? (uint32_t)(r >> 8) % 0x110000 : (uint32_t)(r >> 8) % 0x800;
        if (c != '\n' && (c < 0xD800 || c > 0xDFFF)) return c;
    }
}

static void test_chars(void) {
    uint64_t rng = 7;
    enum { LINES = 300 };
    uint32_t *cps[LINES];
    size_t lens[LINES], n = 0;
    char *buf = malloc(LINES * 64 * 4 + LINES);
    for (int k = 0; k < LINES; k++) {
        lens[k] = ss_test_rand(&rng) % 64;
        cps[k] = malloc((lens[k] + 1) * sizeof **cps);
        for (size_t i = 0; i < lens[k]; i++) n += enc(buf + n, cps[k][i] = random_cp(&rng));
        buf[n++] = '\n';
    }
    const char *in = ss_test_keep_path("chars.txt"), *out = ss_test_keep_path("chars.ss");
    ss_test_write_file(in, buf, n);
    EXPECT_RUN(0, "convert text --tokens chars --bos --eos %s -o %s -q", in, out);
    ss_store *s = open_store(out);
    CHECK_EQ_U64(ss_count(s), LINES);
    for (int k = 0; k < LINES; k++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, (uint64_t)k));
        CHECK(v.dtype == SS_U32);
        CHECK_EQ_U64(v.length, lens[k] + 2);
        CHECK_EQ_U64(token_at(&v, 0), 0x110000);
        CHECK_EQ_U64(token_at(&v, lens[k] + 1), 0x110001);
        for (size_t i = 0; i < lens[k]; i++) CHECK_EQ_U64(token_at(&v, i + 1), cps[k][i]);
        check_source(s, (uint64_t)k, 1, (uint64_t)k + 1);
        free(cps[k]);
    }
    ss_close(s);
    free(buf);
}

static void test_ids(void) {
    uint64_t rng = 11;
    enum { LINES = 200 };
    char *buf = malloc(LINES * 40 * 8);
    uint32_t ids[LINES][40];
    size_t lens[LINES], n = 0;
    for (int k = 0; k < LINES; k++) {
        lens[k] = ss_test_rand(&rng) % 40;
        for (size_t i = 0; i < lens[k]; i++) {
            ids[k][i] = (uint32_t)(ss_test_rand(&rng) % 1000);
            n += (size_t)sprintf(buf + n, i ? (i % 7 ? " %u" : "\t %u") : "%u", ids[k][i]);
        }
        buf[n++] = '\n';
    }
    const char *in = ss_test_keep_path("ids.txt"), *out = ss_test_keep_path("ids.ss");
    const char *out2 = ss_test_keep_path("ids32.ss");
    ss_test_write_file(in, buf, n);
    EXPECT_RUN(0, "convert text --tokens ids --vocab-size 1000 --eos %s -o %s -q", in, out);
    EXPECT_RUN(0, "convert text --tokens ids %s -o %s -q", in, out2);
    ss_store *s = open_store(out), *s2 = open_store(out2);
    CHECK_EQ_U64(ss_count(s), LINES);
    for (int k = 0; k < LINES; k++) {
        ss_view v, w;
        CHECK_OK(ss_get(&v, s, 0, (uint64_t)k));
        CHECK_OK(ss_get(&w, s2, 0, (uint64_t)k));
        CHECK(v.dtype == SS_U16 && w.dtype == SS_U32);
        CHECK_EQ_U64(v.length, lens[k] + 1);
        CHECK_EQ_U64(w.length, lens[k]);
        for (size_t i = 0; i < lens[k]; i++) {
            CHECK_EQ_U64(token_at(&v, i), ids[k][i]);
            CHECK_EQ_U64(token_at(&w, i), ids[k][i]);
        }
        CHECK_EQ_U64(token_at(&v, lens[k]), 1000); /* <eos> = vocab size */
    }
    ss_close(s);
    ss_close(s2);
    free(buf);
}

static void test_bad_inputs(void) {
    const char *bad = ss_test_keep_path("bad.txt"), *out = ss_test_keep_path("bad.ss");
    ss_test_write_file(bad, "hello\nwor\xffld\nok\n", 16);
    /* invalid UTF-8: file, line, byte offset; the store is left incomplete */
    EXPECT_RUN(1, "convert text --tokens chars %s -o %s", bad, out);
    EXPECT_ERR("bad.txt:2: invalid UTF-8 at byte offset 9 (byte 0xff)");
    ss_store *s = NULL;
    CHECK_RC(ss_open(&s, out, 0), SS_EINCOMPLETE);
    /* --skip-bad: converted, and the skipped record listed */
    EXPECT_RUN(0, "convert text --tokens chars %s -o %s --force --skip-bad", bad, out);
    EXPECT_ERR("skipped 1 bad input:\n  ");
    EXPECT_ERR("bad.txt:2: invalid UTF-8 at byte offset 9");
    s = open_store(out);
    CHECK_EQ_U64(ss_count(s), 2);
    check_source(s, 0, 1, 1);
    check_source(s, 1, 1, 3);
    ss_close(s);
    /* the bytes are fine as bytes */
    EXPECT_RUN(0, "convert lines %s -o %s --force -q", bad, out);

    const char *ids = ss_test_keep_path("badids.txt");
    ss_test_write_file(ids, "1 2 3\n4 x 5\n 99\n7 4294967296\n", 29);
    EXPECT_RUN(1, "convert text --tokens ids %s -o %s --force", ids, out);
    EXPECT_ERR("badids.txt:2: 'x' is not a token id (byte offset 8)");
    EXPECT_RUN(0, "convert text --tokens ids --vocab-size 10 %s -o %s --force --skip-bad -q", ids,
               out);
    EXPECT_ERR("skipped 3 bad inputs");
    EXPECT_ERR("badids.txt:3: token id 99 is out of range: --vocab-size is 10 (byte offset 13)");
    EXPECT_ERR("badids.txt:4: token id 4294967296 is out of range");
    s = open_store(out);
    CHECK_EQ_U64(ss_count(s), 1);
    ss_close(s);

    /* a missing input: an error before anything is created; --skip-bad skips it */
    const char *nf = ss_test_keep_path("nofile.txt"), *out2 = ss_test_keep_path("none.ss");
    EXPECT_RUN(1, "convert lines %s -o %s", nf, out2);
    EXPECT_ERR("nofile.txt: cannot open: No such file or directory");
    CHECK(access(out2, F_OK) != 0);
    EXPECT_RUN(0, "convert lines %s %s -o %s --skip-bad -q", nf, bad, out2);
    EXPECT_ERR("nofile.txt: cannot open");
    s = open_store(out2);
    CHECK_EQ_U64(ss_count(s), 3);
    check_source(s, 0, 2, 1); /* file numbers follow the command line */
    ss_close(s);

    /* parallel corpora must be aligned */
    const char *a = ss_test_keep_path("a.txt"), *b = ss_test_keep_path("b.txt");
    ss_test_write_file(a, "x\ny\nz\n", 6);
    ss_test_write_file(b, "1\n2\n", 4);
    EXPECT_RUN(1, "convert parallel %s %s -o %s", a, b, ss_test_keep_path("p.ss"));
    EXPECT_ERR("a.txt' has 3 lines");
    EXPECT_ERR("b.txt' has 2 lines");

    /* a vocabulary file with a duplicate */
    const char *vf = ss_test_keep_path("dup.txt");
    ss_test_write_file(vf, "<pad>\n<unk>\nthe\nthe\n", 21);
    EXPECT_RUN(1, "convert text --tokens words --vocab %s %s -o %s", vf, a,
               ss_test_keep_path("v.ss"));
    EXPECT_ERR("line 4: duplicate token 'the'");
    ss_test_write_file(vf, "<pad>\nthe\n", 10);
    EXPECT_RUN(1, "convert text --tokens words --vocab %s %s -o %s", vf, a,
               ss_test_keep_path("v.ss"));
    EXPECT_ERR("no <unk> token");

    /* --append with another schema */
    EXPECT_RUN(1, "convert text --tokens chars %s -o %s --append", a, out);
    EXPECT_ERR("schema mismatch: field 0 of");
    EXPECT_ERR("(u8 sequence)");
    EXPECT_ERR("(u32 sequence)");
    EXPECT_RUN(1, "convert lines %s -o %s --append", a, ss_test_keep_path("absent.ss"));
    EXPECT_ERR("does not exist");

    /* usage errors: exit 2 */
    EXPECT_RUN(2, "convert text %s", a);
    EXPECT_ERR("no output store");
    EXPECT_RUN(2, "convert text --bogus %s -o %s", a, out);
    EXPECT_ERR("unknown option '--bogus'");
    EXPECT_RUN(2, "convert nosuchkind %s -o %s", a, out);
    EXPECT_RUN(2, "convert lines %s -o %s --force --append", a, out);
    EXPECT_RUN(2, "convert text --vocab %s %s -o %s", vf, a, out);
    EXPECT_RUN(2, "convert text --tokens ids --bos %s -o %s", a, out);
    EXPECT_RUN(2, "convert text --tokens words --max-vocab 3 %s -o %s", a, out);
    EXPECT_RUN(2, "convert lines -o %s", out);
    EXPECT_RUN(2, "convert lines %s -o %s --threads 0", a, out);
    EXPECT_RUN(0, "convert text --help");
    EXPECT_RUN(2, "convert");
}

/* --append: A then B equals A and B at once (examples and sources). */
static void test_append(void) {
    const char *fa = "/usr/share/games/fortunes/riddles", *fb = FORTUNES;
    const char *ab = ss_test_keep_path("ab.ss"), *both = ss_test_keep_path("both.ss");
    EXPECT_RUN(0, "convert text --tokens words %s -o %s -q", fa, ab);
    EXPECT_RUN(0, "convert text --tokens words %s -o %s -q --append", fb, ab);
    EXPECT_RUN(0, "convert text --tokens words --vocab %s %s %s -o %s -q", ab, fa, fb, both);
    ss_store *x = open_store(ab), *y = open_store(both);
    CHECK_EQ_U64(ss_count(x), ss_count(y));
    for (uint64_t i = 0; i < ss_count(x); i++) {
        for (uint32_t f = 0; f < 2; f++) {
            ss_view u, v;
            CHECK_OK(ss_get(&u, x, f, i));
            CHECK_OK(ss_get(&v, y, f, i));
            CHECK_EQ_U64(u.length, v.length);
            CHECK(!memcmp(u.data, v.data, u.length * u.row_bytes));
        }
    }
    char *fx = attr_string(x, "source.files"), *fy = attr_string(y, "source.files");
    CHECK(!strcmp(fx, fy));
    free(fx);
    free(fy);
    ss_close(x);
    ss_close(y);
}

/* A few MB of text, so that conversions span many blocks and chunks. */
static const char *big_corpus(void) {
    static char path[768];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s", ss_test_keep_path("big.txt"));
    FILE *f = fopen(path, "w");
    uint64_t rng = 3;
    static const char *words[] = {"the", "a", "seq",  "store", "token", "ünïcödé",
                                  "語",  "%", "data", "of",    "to",    "x"};
    for (int line = 0; line < 60000; line++) {
        int nw = (int)(ss_test_rand(&rng) % 14);
        if (line % 9 == 0) nw = 0; /* blank lines: document breaks */
        for (int w = 0; w < nw; w++)
            fprintf(f, "%s%s", w ? " " : "", words[ss_test_rand(&rng) % 12]);
        fputc('\n', f);
    }
    fclose(f);
    return path;
}

static int same_file(const char *a, const char *b) {
    size_t na, nb;
    char *x = ss_test_read_file(a, &na), *y = ss_test_read_file(b, &nb);
    int same = na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

/* The store's bytes do not depend on the number of threads. */
static void test_threads(void) {
    const char *in = big_corpus();
    static const char *modes[] = {"--tokens bytes", "--tokens chars --docs", "--tokens words --bos",
                                  "--tokens words --docs --skip-empty"};
    for (int m = 0; m < 4; m++) {
        const char *one = ss_test_keep_path("t1.ss"), *many = ss_test_keep_path("t.ss");
        EXPECT_RUN(0, "convert text %s %s -o %s -q --threads 1 --force", modes[m], in, one);
        rename(one, ss_test_keep_path("t1.keep"));
        for (int t = 2; t <= 5; t += 3) {
            EXPECT_RUN(0, "convert text %s %s -o %s -q --threads %d --force", modes[m], in, one, t);
            rename(one, many);
            CHECK(same_file(ss_test_keep_path("t1.keep"), many));
        }
    }
}

static void check_same_examples(const char *pa, const char *pb) {
    ss_store *a = open_store(pa), *b = open_store(pb);
    CHECK_EQ_U64(ss_count(a), ss_count(b));
    CHECK_EQ_U64(ss_field_count(a), ss_field_count(b));
    for (uint64_t i = 0; i < ss_count(a); i++)
        for (uint32_t f = 0; f < ss_field_count(a); f++) {
            ss_view u, v;
            CHECK_OK(ss_get(&u, a, f, i));
            CHECK_OK(ss_get(&v, b, f, i));
            CHECK_EQ_U64(u.length, v.length);
            CHECK(!memcmp(u.data, v.data, u.length * u.row_bytes));
        }
    ss_close(a);
    ss_close(b);
}

static uint64_t committed(const char *path) {
    ss_store *s = NULL;
    if (ss_open(&s, path, SS_OPEN_INCOMPLETE)) return 0;
    uint64_t n = ss_count(s);
    ss_close(s);
    return n;
}

/* SIGKILL during a conversion, then --resume: the same examples as an
 * uninterrupted conversion. */
static void test_resume(void) {
    const char *in = big_corpus(), *ref = ss_test_keep_path("ref.ss"),
               *out = ss_test_keep_path("k.ss");
    EXPECT_RUN(0, "convert text --tokens chars %s -o %s -q", in, ref);
    uint64_t total;
    {
        ss_store *s = open_store(ref);
        total = ss_count(s);
        ss_close(s);
    }
    /* deterministic: the converter SIGKILLs itself after 40000 examples */
    {
        char cmd[2048];
        snprintf(cmd, sizeof cmd,
                 "SS_TEST_KILL_AFTER=40000 exec %s convert text --tokens chars "
                 "%s -o %s -q --commit-bytes 4096 --force",
                 SS_CLI, in, out);
        int st = system(cmd);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    }
    ss_store *s = NULL;
    CHECK_RC(ss_open(&s, out, 0), SS_EINCOMPLETE);
    uint64_t n = committed(out);
    CHECK(n > 0 && n <= 40000 && n < total);
    EXPECT_RUN(1, "convert text --tokens chars %s -o %s -q", in, out); /* exists */
    EXPECT_RUN(0, "convert text --tokens chars %s -o %s -q --resume", in, out);
    check_same_examples(ref, out);
    EXPECT_RUN(1, "convert text --tokens chars %s -o %s -q --resume", in, out);
    EXPECT_ERR("nothing to resume");

    /* a real external SIGKILL at an arbitrary moment */
    char *argv[] = {SS_CLI,           "convert", "text",      "--tokens", "chars",
                    (char *)in,       "-o",      (char *)out, "-q",       "--force",
                    "--commit-bytes", "4096",    "--threads", "1",        NULL};
    pid_t pid;
    unlink(out);
    CHECK(posix_spawn(&pid, SS_CLI, NULL, NULL, argv, environ) == 0);
    /* wait until the file holds a few chunks (several commits happened) */
    for (int i = 0; i < 200000; i++) {
        struct stat sb;
        if (stat(out, &sb) == 0 && sb.st_size > (3 << 20)) break;
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    ss_store *done = NULL;
    int complete = ss_open(&done, out, 0) == 0;
    ss_close(done);
    if (!complete) {
        CHECK(WIFSIGNALED(st));
        fprintf(stderr, "note: killed with %llu examples committed\n",
                (unsigned long long)committed(out));
        EXPECT_RUN(0, "convert text --tokens chars %s -o %s -q --resume", in, out);
    } else {
        fprintf(stderr, "note: the conversion finished before SIGKILL arrived\n");
        CHECK(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 0));
    }
    check_same_examples(ref, out);
}

static void test_parallel(void) {
    const char *src = ss_test_keep_path("src.txt"), *tgt = ss_test_keep_path("tgt.txt");
    const char *out = ss_test_keep_path("par.ss");
    ss_test_write_file(src, "the cat sat\nthe dog\n\nhello world\n", 33);
    ss_test_write_file(tgt, "le chat\nle chien dort\nvide\nbonjour le monde", 43);
    EXPECT_RUN(0, "convert parallel --tokens words --eos %s %s -o %s -q", src, tgt, out);
    ss_store *s = open_store(out);
    CHECK_EQ_U64(ss_count(s), 4);
    CHECK(ss_test_field(s, "src") == 0 && ss_test_field(s, "tgt") == 1);
    char **vs, **vt;
    size_t ns = vocab_of(s, "src.vocab", &vs), nt = vocab_of(s, "tgt.vocab", &vt);
    CHECK_EQ_U64(ns, 4 + 6);
    CHECK_EQ_U64(nt, 4 + 7);
    CHECK(!strcmp(vs[4], "the")); /* most frequent first */
    CHECK(!strcmp(vt[4], "le"));
    size_t nl[2];
    char *d[2];
    size_t dn[2];
    d[0] = ss_test_read_file(src, &dn[0]);
    d[1] = ss_test_read_file(tgt, &dn[1]);
    seg *l0 = naive_lines(d[0], dn[0], &nl[0]), *l1 = naive_lines(d[1], dn[1], &nl[1]);
    for (uint64_t i = 0; i < 4; i++) {
        for (int side = 0; side < 2; side++) {
            char **w;
            size_t nw = naive_words(side ? l1[i] : l0[i], &w);
            ss_view v;
            CHECK_OK(ss_get(&v, s, (uint32_t)side, i));
            CHECK_EQ_U64(v.length, nw + 1);
            for (size_t k = 0; k < nw; k++)
                CHECK_EQ_U64(token_at(&v, k),
                             (uint64_t)find_token(side ? vt : vs, side ? nt : ns, w[k]));
            CHECK_EQ_U64(token_at(&v, nw), 3);
            free_words(w, nw);
        }
        check_source(s, i, 1, i + 1);
    }
    ss_close(s);
    free_words(vs, ns);
    free_words(vt, nt);
    free(l0);
    free(l1);
    free(d[0]);
    free(d[1]);
}

/* gzip-compressed input gives the same store content. */
static void test_gzip(void) {
    size_t n;
    char *d = ss_test_read_file(FORTUNES, &n);
    const char *gz = ss_test_keep_path("f.txt.gz"), *out = ss_test_keep_path("gz.ss");
    gzFile g = gzopen(gz, "wb");
    CHECK(g && gzwrite(g, d, (unsigned)n) == (int)n && gzclose(g) == Z_OK);
    EXPECT_RUN(0, "convert lines %s -o %s -q", gz, out);
    size_t nl;
    seg *lines = naive_lines(d, n, &nl);
    ss_store *s = open_store(out);
    check_bytes(s, lines, nl, 1);
    ss_close(s);
    free(lines);
    free(d);
}

int main(void) {
    test_lines();
    test_words_docs();
    test_chars();
    test_ids();
    test_bad_inputs();
    test_append();
    test_parallel();
    test_gzip();
    test_threads();
    test_resume();
    printf("test_convert_cli: ok\n");
    return 0;
}
