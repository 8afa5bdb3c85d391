/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_spm.c - `--tokenizer spm:MODEL` for `convert text`, `jsonl` and
 * `parallel`: models trained here on fortunes with spm_train (Debian's
 * sentencepiece), and every stored id compared with what `spm_encode
 * --output_format=id` writes for the same lines, exactly. Skipped (77) when
 * the CLI was built without SentencePiece or spm_train is missing. */
#include "convtest.h"

#define FORTUNES "/usr/share/games/fortunes/fortunes"

typedef struct ids {
    uint32_t *v;
    size_t *start, *len, n; /* line k: v[start[k] .. + len[k]) */
} ids;

/* spm_encode's output: one line of space-separated ids per input line. */
static ids read_ids(const char *path) {
    size_t n;
    char *t = ss_test_read_file(path, &n);
    ids r = {malloc((n / 2 + 1) * sizeof *r.v), malloc((n + 1) * sizeof *r.start),
             malloc((n + 1) * sizeof *r.len), 0};
    CHECK(r.v && r.start && r.len);
    size_t k = 0;
    for (char *p = t; *p;) {
        r.start[r.n] = k;
        while (*p && *p != '\n') {
            char *e;
            r.v[k++] = (uint32_t)strtoul(p, &e, 10);
            CHECK(e != p);
            p = e;
            while (*p == ' ') p++;
        }
        r.len[r.n] = k - r.start[r.n];
        r.n++;
        if (*p) p++;
    }
    free(t);
    return r;
}

static void free_ids(ids *r) {
    free(r->v), free(r->start), free(r->len);
}

static uint32_t elem(const ss_view *v, uint64_t j) {
    if (v->dtype == SS_U8) return ((const uint8_t *)v->data)[j];
    if (v->dtype == SS_U16) return ((const uint16_t *)v->data)[j];
    return ((const uint32_t *)v->data)[j];
}

/* Field `field` of example i equals [bos] ids[line] [eos]. */
static void expect_ids(ss_store *s, const char *field, uint64_t i, const ids *r, size_t line,
                       int64_t bos, int64_t eos) {
    ss_view v;
    CHECK_OK(ss_get(&v, s, ss_test_field(s, field), i));
    uint64_t n = r->len[line] + (bos >= 0) + (eos >= 0), j = 0;
    int ok = v.length == n;
    if (ok && bos >= 0) ok = elem(&v, j++) == (uint32_t)bos;
    for (size_t k = 0; ok && k < r->len[line]; k++) ok = elem(&v, j++) == r->v[r->start[line] + k];
    if (ok && eos >= 0) ok = elem(&v, j) == (uint32_t)eos;
    if (!ok) {
        fprintf(stderr, "%s example %" PRIu64 " differs from spm_encode's line %zu\n", field, i,
                line + 1);
        exit(1);
    }
}

static int64_t attr_i64(ss_store *s, const char *name) {
    ss_attr a;
    if (ss_attr_get(&a, s, name)) return -1;
    CHECK(a.type == SS_I64 && a.size == 8);
    return *(const int64_t *)a.data;
}

/* The piece on line id + 1 of spm_train's .vocab file (piece TAB score). */
static int vocab_id(const char *vocab_file, const char *piece) {
    size_t n;
    char *t = ss_test_read_file(vocab_file, &n);
    int id = 0, found = -1;
    for (char *p = t; *p && found < 0; id++) {
        char *tab = strchr(p, '\t');
        CHECK(tab);
        if ((size_t)(tab - p) == strlen(piece) && !memcmp(p, piece, strlen(piece))) found = id;
        p = strchr(p, '\n') + 1;
    }
    free(t);
    return found;
}

/* Attributes: the pieces in id order (the .vocab file's first column) and
 * the special ids where the .vocab file has them. */
static void check_attrs(ss_store *s, const char *model_prefix, const char *field,
                        const char *vocab_attr) {
    char vf[800], name[128];
    snprintf(vf, sizeof vf, "%s.vocab", model_prefix);
    size_t n;
    char *t = ss_test_read_file(vf, &n), *want = malloc(n + 1), *w = want;
    CHECK(want);
    for (char *p = t; *p;) {
        char *tab = strchr(p, '\t');
        memcpy(w, p, (size_t)(tab - p));
        w += tab - p;
        *w++ = '\n';
        p = strchr(p, '\n') + 1;
    }
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, vocab_attr));
    CHECK(a.type == SS_ATTR_TEXT && a.size == (uint64_t)(w - want) &&
          !memcmp(a.data, want, a.size));
    free(t), free(want);
    snprintf(name, sizeof name, "%s.unk_id", field);
    CHECK_EQ_U64(attr_i64(s, name), vocab_id(vf, "<unk>"));
    snprintf(name, sizeof name, "%s.bos_id", field);
    CHECK_EQ_U64(attr_i64(s, name), vocab_id(vf, "<s>"));
    snprintf(name, sizeof name, "%s.eos_id", field);
    CHECK_EQ_U64(attr_i64(s, name), vocab_id(vf, "</s>"));
    snprintf(name, sizeof name, "%s.pad_id", field);
    CHECK_EQ_U64(attr_i64(s, name), (uint64_t)-1); /* spm_train's default: no pad */
    snprintf(name, sizeof name, "%s.eod_id", field);
    int eod = vocab_id(vf, "<eod>");
    CHECK_EQ_U64(attr_i64(s, name), eod >= 0 ? eod : vocab_id(vf, "</s>"));
}

static void train(const char *prefix, int vocab, const char *extra) {
    EXPECT_SH(0,
              "spm_train --input=%s --model_prefix=%s --vocab_size=%d --minloglevel=2 %s "
              "> /dev/null",
              FORTUNES, prefix, vocab, extra);
}

static void test_text(const char *m, int vocab, ss_dtype dtype, const char *lines, int threads) {
    const char *st = ss_test_keep_path("text.ss"), *enc = ss_test_keep_path("enc.txt");
    EXPECT_SH(0, "spm_encode --model=%s.model --output_format=id < %s > %s", m, lines, enc);
    ids r = read_ids(enc);
    for (int be = 0; be < 2; be++) {
        EXPECT_RUN(0,
                   "convert text %s --tokenizer spm:%s.model %s --threads %d -o %s --force --quiet",
                   lines, m, be ? "--bos --eos" : "", threads, st);
        ss_store *s;
        CHECK_OK(ss_open(&s, st, 0));
        CHECK_EQ_U64(ss_count(s), r.n);
        ss_field f;
        CHECK_OK(ss_field_info(&f, s, 0));
        CHECK(f.dtype == dtype);
        int64_t bos = be ? attr_i64(s, "tokens.bos_id") : -1;
        int64_t eos = be ? attr_i64(s, "tokens.eos_id") : -1;
        for (uint64_t i = 0; i < r.n; i++) expect_ids(s, "tokens", i, &r, (size_t)i, bos, eos);
        check_attrs(s, m, "tokens", "vocab");
        ss_attr a;
        CHECK_OK(ss_attr_get(&a, s, "tokens.vocab_size"));
        CHECK_EQ_U64(*(const uint64_t *)a.data, (uint64_t)vocab);
        ss_close(s);
    }
    free_ids(&r);
}

/* JSON lines whose "text" is line k of `lines`: a string on even lines, on
 * odd lines the ids spm_encode gave (pre-tokenized input). */
static void test_jsonl(const char *m, const char *lines) {
    const char *enc = ss_test_keep_path("jenc.txt"), *js = ss_test_keep_path("in.jsonl"),
               *st = ss_test_keep_path("j.ss");
    EXPECT_SH(0, "spm_encode --model=%s.model --output_format=id < %s > %s", m, lines, enc);
    ids r = read_ids(enc);
    size_t n;
    char *t = ss_test_read_file(lines, &n), *out = malloc(8 * n + 64 * r.n + 64), *w = out;
    CHECK(out);
    size_t line = 0;
    for (char *p = t; *p; line++) {
        char *nl = strchr(p, '\n');
        CHECK(nl);
        if (line % 2) {
            w += sprintf(w, "{\"text\": [");
            for (size_t k = 0; k < r.len[line]; k++)
                w += sprintf(w, "%s%u", k ? "," : "", r.v[r.start[line] + k]);
            w += sprintf(w, "]}\n");
        } else {
            w += sprintf(w, "{\"text\": \"");
            for (; p < nl; p++) {
                if (*p == '"' || *p == '\\') *w++ = '\\';
                if ((unsigned char)*p < 0x20)
                    w += sprintf(w, "\\u%04x", *p);
                else
                    *w++ = *p;
            }
            w += sprintf(w, "\"}\n");
        }
        p = nl + 1;
    }
    ss_test_write_file(js, out, (size_t)(w - out));
    EXPECT_RUN(0, "convert jsonl %s --tokenizer spm:%s.model -o %s --force --quiet", js, m, st);
    ss_store *s;
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_EQ_U64(ss_count(s), r.n); /* fortunes has no blank lines */
    for (uint64_t i = 0; i < r.n; i++) expect_ids(s, "text", i, &r, (size_t)i, -1, -1);
    check_attrs(s, m, "text", "vocab");
    ss_close(s);
    free(t), free(out);
    free_ids(&r);
}

static void test_parallel(const char *m, const char *lines) {
    const char *rev = ss_test_keep_path("rev.txt"), *e1 = ss_test_keep_path("p1.txt"),
               *e2 = ss_test_keep_path("p2.txt"), *st = ss_test_keep_path("p.ss");
    EXPECT_SH(0, "tac %s > %s", lines, rev);
    EXPECT_SH(0, "spm_encode --model=%s.model --output_format=id < %s > %s", m, lines, e1);
    EXPECT_SH(0, "spm_encode --model=%s.model --output_format=id < %s > %s", m, rev, e2);
    EXPECT_RUN(0, "convert parallel %s %s --tokenizer spm:%s.model --eos -o %s --force --quiet",
               lines, rev, m, st);
    ids a = read_ids(e1), b = read_ids(e2);
    ss_store *s;
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_EQ_U64(ss_count(s), a.n);
    int64_t eos = attr_i64(s, "src.eos_id");
    for (uint64_t i = 0; i < a.n; i++) {
        expect_ids(s, "src", i, &a, (size_t)i, -1, eos);
        expect_ids(s, "tgt", i, &b, (size_t)i, -1, eos);
    }
    check_attrs(s, m, "src", "src.vocab");
    check_attrs(s, m, "tgt", "tgt.vocab");
    ss_close(s);
    free_ids(&a), free_ids(&b);
}

static void test_errors(const char *lines) {
    const char *bad = ss_test_keep_path("bad.model"), *st = ss_test_keep_path("e.ss");
    ss_test_write_file(bad, "not a model\n", 12);
    EXPECT_RUN(1, "convert text %s --tokenizer spm:%s -o %s --force", lines, bad, st);
    EXPECT_ERR("bad.model: not a SentencePiece model");
    EXPECT_RUN(1, "convert text %s --tokenizer spm:%s -o %s --force", lines,
               ss_test_keep_path("nope.model"), st);
    EXPECT_ERR("nope.model: not a SentencePiece model");
    const char *nobos = ss_test_keep_path("nobos");
    train(nobos, 150, "--bos_id=-1");
    EXPECT_RUN(1, "convert text %s --tokenizer spm:%s.model --bos -o %s --force", lines, nobos, st);
    EXPECT_ERR("--bos, but the SentencePiece model has no BOS id");
    EXPECT_RUN(0, "convert text %s --tokenizer spm:%s.model --eos -o %s --force --quiet", lines,
               nobos, st);
    const char *js = ss_test_keep_path("oob.jsonl");
    ss_test_write_file(js, "{\"text\": [1, 150]}\n", 19);
    EXPECT_RUN(1, "convert jsonl %s --tokenizer spm:%s.model -o %s --force", js, nobos, st);
    EXPECT_ERR("oob.jsonl:1: key 'text': element 1, id 150, is out of range [0, 150) (the model");
    EXPECT_RUN(2, "convert text %s --tokenizer spm: -o %s --force", lines, st);
    EXPECT_ERR("--tokenizer needs spm:MODEL");
    EXPECT_RUN(2, "convert text %s --tokenizer spm:x --tokens words -o %s --force", lines, st);
    EXPECT_ERR("exclude each other");
}

int main(void) {
    EXPECT_SH(0,
              "%s convert text --tokenizer spm:/nonexistent %s -o %s --force > /dev/null || "
              "true",
              SS_CLI, FORTUNES, ss_test_keep_path("probe.ss"));
    if (strstr(g_err, "built without SentencePiece") ||
        run_sh("command -v spm_train > /dev/null") != 0) {
        printf("skipped: no SentencePiece\n");
        return 77;
    }
    /* fortunes' lines, and 60 copies (> 1 MiB: several blocks, 2 threads) */
    const char *lines = ss_test_keep_path("lines.txt"), *big = ss_test_keep_path("big.txt");
    EXPECT_SH(0, "cp %s %s && for i in $(seq 60); do cat %s; done > %s", FORTUNES, lines, FORTUNES,
              big);
    const char *m200 = ss_test_keep_path("m200"), *m1000 = ss_test_keep_path("m1000");
    train(m200, 200, "--model_type=unigram");
    train(m1000, 1000, "--model_type=bpe '--user_defined_symbols=<eod>'");
    test_text(m200, 200, SS_U8, lines, 1);
    test_text(m1000, 1000, SS_U16, lines, 1);
    test_jsonl(m1000, lines);
    test_parallel(m200, lines);
    test_text(m1000, 1000, SS_U16, big, 1);
    test_text(m1000, 1000, SS_U16, big, 2);
    test_errors(lines);
    printf("ok\n");
    return 0;
}
