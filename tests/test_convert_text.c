/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_text.c - the pieces of the text converters: strict UTF-8
 * decoding, vocabularies, and the block-parallel text engine (whose output
 * must not depend on how the input is cut into blocks). */
#include "../fuzz/text_harness.h"
#include "testutil.h"

/* ------------------------------------------------------------------ UTF-8 */

/* A plain reference decoder: tries every length and checks the rules one by one. */
static int naive_decode(const uint8_t *s, size_t n, uint32_t *out, size_t *nout, size_t *bad) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint8_t b = s[i];
        size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
        uint32_t cp = len == 1 ? b : len == 2 ? (b & 31u) : len == 3 ? (b & 15u) : (b & 7u);
        int ok = len > 0 && i + len <= n;
        for (size_t j = 1; ok && j < len; j++) {
            if ((s[i + j] & 0xC0) != 0x80) ok = 0;
            cp = cp << 6 | (s[i + j] & 63u);
        }
        static const uint32_t min_of_len[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (ok && (cp < min_of_len[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = 0;
        if (!ok) {
            *nout = k;
            *bad = i;
            return -1;
        }
        out[k++] = cp;
        i += len;
    }
    *nout = k;
    return 0;
}

static void test_utf8_vectors(void) {
    static const struct {
        const char *s;
        int ok;
        size_t bad;
    } v[] = {
        {"plain ascii", 1, 0},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 1, 0},
        {"\xc0\xaf", 0, 0},                     /* overlong '/' */
        {"ab\xe0\x80\xaf", 0, 2},               /* overlong, 3 bytes */
        {"\xed\xa0\x80", 0, 0},                 /* surrogate U+D800 */
        {"x\xf4\x90\x80\x80", 0, 1},            /* U+110000 */
        {"\xf0\x9f\x98", 0, 0},                 /* truncated */
        {"abc\x80", 0, 3},                      /* stray continuation */
        {"\xef\xbf\xbf\xf4\x8f\xbf\xbf", 1, 0}, /* U+FFFF, U+10FFFF */
        {"12345678\xff", 0, 8},                 /* after the ASCII fast path */
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        uint32_t out[64];
        size_t n = 0, bad = 99, len = strlen(v[k].s);
        int rc = ss__utf8_decode(out, &n, &bad, (const uint8_t *)v[k].s, len);
        CHECK((rc == 0) == v[k].ok);
        if (!v[k].ok) CHECK_EQ_U64(bad, v[k].bad);
        /* round trip through the encoder */
        if (v[k].ok) {
            char buf[256];
            size_t m = 0;
            for (size_t i = 0; i < n; i++) m += ss__utf8_encode(buf + m, out[i]);
            CHECK(m == len && !memcmp(buf, v[k].s, len));
        }
    }
    char b[4];
    CHECK_EQ_U64(ss__utf8_encode(b, 0xD800), 0);
    CHECK_EQ_U64(ss__utf8_encode(b, 0x110000), 0);
}

/* Random byte strings, biased towards almost-valid UTF-8, against the naive decoder. */
static void test_utf8_random(void) {
    uint64_t rng = 1;
    uint8_t s[80];
    uint32_t a[80], b[80];
    for (int round = 0; round < 200000; round++) {
        size_t n = ss_test_rand(&rng) % 24;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = ss_test_rand(&rng);
            static const uint8_t interesting[] = {0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                                                  0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5,
                                                  0xFF, 0x9F, 0xA0, 0x8F, 0x90, 'a'};
            s[i] = r % 3 ? interesting[(r >> 8) % sizeof interesting] : (uint8_t)(r >> 16);
        }
        size_t na = 0, nb = 0, ba = 0, bb = 0;
        int ra = ss__utf8_decode(a, &na, &ba, s, n), rb = naive_decode(s, n, b, &nb, &bb);
        CHECK(ra == rb);
        CHECK_EQ_U64(na, nb);
        if (ra) CHECK_EQ_U64(ba, bb);
        CHECK(!memcmp(a, b, na * sizeof *a));
    }
}

/* ------------------------------------------------------------ vocabularies */

typedef struct wc {
    char w[8];
    uint64_t n;
} wc;

static int wc_cmp(const void *pa, const void *pb) {
    const wc *a = pa, *b = pb;
    if (a->n != b->n) return a->n > b->n ? -1 : 1;
    return strcmp(a->w, b->w);
}

static void test_vocab(void) {
    uint64_t rng = 5;
    for (int round = 0; round < 20; round++) {
        /* random words over a small alphabet, counted naively */
        enum { N = 3000 };
        static char words[N][8];
        wc counts[N];
        size_t nc = 0;
        ss_vocab *v = NULL, *built = NULL;
        CHECK(ss__vocab_new(&v) == 0);
        for (int i = 0; i < N; i++) {
            int len = 1 + (int)(ss_test_rand(&rng) % 3);
            for (int k = 0; k < len; k++) words[i][k] = (char)('a' + ss_test_rand(&rng) % 5);
            words[i][len] = 0;
            if (i % 500 == 0) strcpy(words[i], "<unk>"); /* a reserved token in the text */
            CHECK(ss__vocab_count(v, (const uint8_t *)words[i], strlen(words[i]), 1) == 0);
            size_t j = 0;
            while (j < nc && strcmp(counts[j].w, words[i])) j++;
            if (j == nc) {
                strcpy(counts[nc].w, words[i]);
                counts[nc++].n = 0;
            }
            counts[j].n++;
        }
        uint64_t min_count = 1 + round % 4, max_size = round % 2 ? 4 + ss_test_rand(&rng) % 60 : 0;
        CHECK(ss__vocab_build(&built, v, min_count, max_size) == 0);
        qsort(counts, nc, sizeof *counts, wc_cmp);
        static const char *sp[] = {"<pad>", "<unk>", "<bos>", "<eos>"};
        uint64_t id = 0;
        size_t len;
        for (; id < 4; id++) {
            const uint8_t *t = ss__vocab_token(built, id, &len);
            CHECK(t && len == strlen(sp[id]) && !memcmp(t, sp[id], len));
        }
        for (size_t j = 0; j < nc; j++) {
            if (counts[j].n < min_count || !strcmp(counts[j].w, "<unk>")) continue;
            if (max_size && id == max_size) break;
            const uint8_t *t = ss__vocab_token(built, id, &len);
            CHECK(t && len == strlen(counts[j].w) && !memcmp(t, counts[j].w, len));
            CHECK(ss__vocab_lookup(built, t, len) == (int64_t)id);
            id++;
        }
        CHECK_EQ_U64(ss__vocab_size(built), id);
        /* text round trip */
        size_t tn;
        char *text = ss__vocab_text(built, &tn);
        ss_vocab *again = NULL;
        char err[128];
        CHECK(ss__vocab_parse(&again, text, tn, err, sizeof err) == 0);
        CHECK_EQ_U64(ss__vocab_size(again), ss__vocab_size(built));
        for (uint64_t i = 0; i < ss__vocab_size(built); i++) {
            size_t l1, l2;
            const uint8_t *t1 = ss__vocab_token(built, i, &l1), *t2 = ss__vocab_token(again, i,
                                                                                      &l2);
            CHECK(l1 == l2 && !memcmp(t1, t2, l1));
        }
        free(text);
        ss__vocab_free(again);
        ss__vocab_free(built);
        ss__vocab_free(v);
    }
    /* parse errors name the line */
    ss_vocab *v = NULL;
    char err[128];
    CHECK(ss__vocab_parse(&v, "a\nb\na\n", 6, err, sizeof err) == -1 && !v);
    CHECK(strstr(err, "line 3: duplicate token 'a'"));
    CHECK(ss__vocab_parse(&v, "a\n\nb", 4, err, sizeof err) == -1);
    CHECK(strstr(err, "line 2: empty token"));
    CHECK(ss__vocab_parse(&v, "a b\n", 4, err, sizeof err) == -1);
    CHECK(strstr(err, "line 1: token contains whitespace"));
    CHECK(ss__vocab_parse(&v, "x\r\ny", 4, err, sizeof err) == 0);
    CHECK_EQ_U64(ss__vocab_size(v), 2);
    CHECK(ss__vocab_lookup(v, (const uint8_t *)"x", 1) == 0);
    ss__vocab_free(v);
}

/* The words of d[a, e) the plain way: offsets and lengths into w[]. */
static size_t naive_words(const uint8_t *d, size_t a, size_t e, size_t *w) {
    size_t n = 0;
    for (size_t i = a; i < e;) {
        while (i < e && ss_is_ws(d[i])) i++;
        if (i >= e) break;
        w[2 * n] = i;
        while (i < e && !ss_is_ws(d[i])) i++;
        w[2 * n + 1] = i - w[2 * n];
        n++;
    }
    return n;
}

/* ss_wordscan (64 bytes at a time) finds the words a byte loop finds: words
 * across and ending on 64-byte boundaries, longer than 64, at the very end
 * of the buffer (allocated to its exact size: reading past it fails under
 * the sanitizers), every whitespace byte and the bytes next to them. */
static void test_wordscan(void) {
    static const uint8_t alphabet[] = {' ', '\t', '\n', '\v', '\f', '\r', 0x08, 0x0e, 0x1f,
                                       '!', 'a',  0,    0x80, 0xff, 0xa0, 0x85, 0x89};
    uint64_t rng = 11;
    size_t *want = malloc(2 * 600 * sizeof *want);
    CHECK(want != NULL);
    for (int round = 0; round < 3000; round++) {
        size_t size = ss_test_rand(&rng) % 600;
        uint8_t *d = malloc(size ? size : 1);
        CHECK(d != NULL);
        int spaces = 1 + (int)(ss_test_rand(&rng) % 40); /* 1: long words */
        for (size_t i = 0; i < size; i++) {
            uint64_t r = ss_test_rand(&rng);
            d[i] = r % 41 < (uint64_t)spaces ? alphabet[(r >> 8) % 6]
                                             : alphabet[6 + (r >> 8) % (sizeof alphabet - 6)];
        }
        size_t a = size ? ss_test_rand(&rng) % (size + 1) : 0;
        size_t e = a + (size > a ? ss_test_rand(&rng) % (size - a + 1) : 0);
        if (round % 4 == 0) e = size; /* words ending at the buffer's end */
        size_t n = naive_words(d, a, e, want), got = 0, w, len;
        ss_wordscan ws;
        ss_wordscan_init(&ws, d, a, e, size);
        while (ss_wordscan_next(&ws, &w, &len)) {
            CHECK(got < n && w == want[2 * got] && len == want[2 * got + 1]);
            got++;
        }
        CHECK_EQ_U64(got, n);
        CHECK(!ss_wordscan_next(&ws, &w, &len)); /* stays at the end */
        free(d);
    }
    free(want);
}

/* Words longer than 8 bytes: the table tells words apart by their first 8
 * bytes and length, then (longer than 8) by their last 8, then (longer than
 * 16) by the bytes between. Words over two letters (and NUL) of 1 to 40
 * bytes, a third with the first 8 bytes fixed and a third with the last 8
 * as well, share all of these but one, often; each must get its own entry,
 * the same one every time, through ss__vocab_count_batch() with keys read
 * 8 bytes at a time (ss_vocab_key_fast) and ss__vocab_count(), and be found
 * again in a vocabulary built from the counts; merged into another map
 * (ss__vocab_merge_at()) and built with ids (ss__vocab_build_ids()), the
 * entry numbers and ids given must be those of the same words. */
static void test_vocab_long_words(void) {
    enum { N = 4000 };
    static uint8_t text[N * 48];
    static size_t off[N], len[N];
    uint64_t rng = 3;
    size_t at = 0;
    for (int i = 0; i < N; i++) {
        len[i] = 1 + ss_test_rand(&rng) % 40;
        off[i] = at;
        int same = (int)(ss_test_rand(&rng) % 3); /* 'a': 1 the first 8, 2 and the last 8 */
        for (size_t k = 0; k < len[i]; k++) {
            uint64_t r = ss_test_rand(&rng);
            int fixed = (same && k < 8) || (same == 2 && k + 8 >= len[i]);
            text[at++] = fixed ? 'a' : r % 50 == 0 ? 0 : (uint8_t)('a' + r % 2);
        }
        text[at++] = ' ';
    }
    ss_vocab *v = NULL, *built = NULL;
    CHECK(ss__vocab_new(&v) == 0);
    static uint32_t ent[N];
    for (int i = 0; i < N; i += 20) {
        ss_vocab_key keys[20];
        for (int k = 0; k < 20; k++) keys[k] = ss_vocab_key_fast(text + off[i + k], len[i + k]);
        CHECK(ss__vocab_count_batch(v, 20, keys, ent + i) == 0);
    }
    uint64_t distinct = 0;
    for (int i = 0; i < N; i++) {
        int first = 1;
        for (int k = 0; k < i && first; k++)
            if (len[k] == len[i] && !memcmp(text + off[k], text + off[i], len[i])) {
                CHECK_EQ_U64(ent[k], ent[i]);
                first = 0;
            } else if (ent[k] == ent[i]) {
                CHECK(!"two words in one entry");
            }
        if (first) CHECK_EQ_U64(ent[i], distinct++);
        size_t el;
        const uint8_t *e = ss__vocab_entry(v, ent[i], &el);
        CHECK(e && el == len[i] && !memcmp(e, text + off[i], el));
    }
    CHECK_EQ_U64(ss__vocab_entries(v), distinct);
    for (int i = 0; i < N; i++) /* counted again one by one: no new entry */
        CHECK(ss__vocab_count(v, text + off[i], len[i], 1) == 0);
    CHECK_EQ_U64(ss__vocab_entries(v), distinct);
    CHECK(ss__vocab_build(&built, v, 1, 0) == 0);
    CHECK_EQ_U64(ss__vocab_size(built), distinct + SS_VOCAB_NSPECIAL);
    for (int i = 0; i < N; i++) {
        int64_t id = ss__vocab_lookup(built, text + off[i], len[i]);
        size_t tl;
        const uint8_t *t = id >= 0 ? ss__vocab_token(built, (uint64_t)id, &tl) : NULL;
        CHECK(t && tl == len[i] && !memcmp(t, text + off[i], tl));
    }
    ss__vocab_free(built);
    /* merged into another map, each entry's new number is that word's */
    ss_vocab *into = NULL;
    static uint32_t moved[N];
    CHECK(ss__vocab_new(&into) == 0);
    CHECK(ss__vocab_count(into, text + off[N - 1], len[N - 1], 5) == 0);
    CHECK(ss__vocab_count(into, (const uint8_t *)"<eos>", 5, 1) == 0);
    CHECK(ss__vocab_merge_at(into, v, moved) == 0);
    for (uint64_t k = 0; k < distinct; k++) {
        size_t l1, l2;
        const uint8_t *a = ss__vocab_entry(v, k, &l1), *b = ss__vocab_entry(into, moved[k], &l2);
        CHECK(a && b && l1 == l2 && !memcmp(a, b, l1));
    }
    /* the ids ss__vocab_build_ids() gives are those lookups find, <unk> for
     * words dropped (--min-count 3: counted twice above; --max-vocab),
     * reserved ids for '<eos>' */
    static uint32_t ids[N + 2];
    for (int round = 0; round < 2; round++) {
        CHECK(ss__vocab_build_ids(&built, into, 3, round ? 40 : 0, ids) == 0);
        uint64_t unk = 0;
        for (uint64_t k = 0; k < ss__vocab_entries(into); k++) {
            size_t l;
            const uint8_t *w = ss__vocab_entry(into, k, &l);
            int64_t id = ss__vocab_lookup(built, w, l);
            CHECK_EQ_U64(ids[k], id < 0 ? SS_VOCAB_UNK : (uint64_t)id);
            unk += id < 0;
        }
        CHECK(unk > 0 && ids[1] == SS_VOCAB_EOS);
        ss__vocab_free(built);
    }
    ss__vocab_free(into);
    ss__vocab_free(v);
}

/* ------------------------------------------------------------ the engine */

static size_t random_text(uint64_t *rng, uint8_t *buf, size_t max) {
    static const char *pieces[] = {"a",     "bb",       " ",    "\n",   "\n\n", "%\n", "\t", "12",
                                   "99999", "\xc3\xa9", "\xff", "\r\n", "word", "7 8", "x"};
    size_t n = 0;
    while (n + 8 < max) {
        uint64_t r = ss_test_rand(rng);
        if (r % 50 == 0) break;
        const char *p = pieces[(r >> 8) % (sizeof pieces / sizeof *pieces)];
        memcpy(buf + n, p, strlen(p));
        n += strlen(p);
    }
    return n;
}

static void setup_job(tx_job *j, tx_input *in, int kind, int mode, int flags, const ss_vocab *v) {
    memset(j, 0, sizeof *j);
    j->nsides = 1;
    j->field[0] = "tokens";
    j->mode = mode;
    j->sep = "%";
    j->seplen = 1;
    j->skip_empty = flags & 1;
    j->tok[0].kind = kind;
    j->tok[0].bos_on = (flags >> 1) & 1;
    j->tok[0].eos_on = (flags >> 2) & 1;
    j->tok[0].vocab_size = kind == TX_IDS && (flags & 8) ? 100 : 0;
    if (kind == TX_IDS && !j->tok[0].vocab_size) j->tok[0].bos_on = j->tok[0].eos_on = 0;
    j->tok[0].vocab = v;
    j->inputs = in;
    j->ninputs = 2;
    CHECK(ss__tx_prepare_tokens(NULL, &j->tok[0], "tokens") == 0);
}

/* Whatever the block size, the same examples, lines and errors. */
static void test_block_invariance(void) {
    uint64_t rng = 9;
    static uint8_t data[2][6000];
    ss_vocab *counts = NULL, *vocab = NULL;
    CHECK(ss__vocab_new(&counts) == 0);
    CHECK(ss__vocab_count(counts, (const uint8_t *)"word", 4, 3) == 0);
    CHECK(ss__vocab_count(counts, (const uint8_t *)"bb", 2, 1) == 0);
    CHECK(ss__vocab_build(&vocab, counts, 1, 0) == 0);
    for (int round = 0; round < 400; round++) {
        tx_input in[2];
        memset(in, 0, sizeof in);
        for (int f = 0; f < 2; f++) {
            in[f].data = data[f];
            in[f].size = random_text(&rng, data[f], sizeof data[f]);
            in[f].ok = 1;
            in[f].path = f ? "b" : "a";
        }
        tx_job j;
        int kind = round % 4, mode = (round / 4) % 3, flags = (int)(ss_test_rand(&rng) % 16);
        setup_job(&j, in, kind, mode, flags, vocab);
        harness_out whole = {0}, cut = {0};
        CHECK(harness_run(&j, SIZE_MAX / 4, &whole) == 0);
        size_t bs = 1 + ss_test_rand(&rng) % 200;
        CHECK(harness_run(&j, bs, &cut) == 0);
        CHECK(whole.n == cut.n && (whole.n == 0 || !memcmp(whole.buf, cut.buf, whole.n)));
        /* bytes, one per line: exactly the lines, read the plain way */
        if (kind == TX_BYTES && mode == TX_LINES && !(flags & 7)) {
            size_t off = 0;
            for (int f = 0; f < 2; f++) {
                uint64_t line = 0;
                for (size_t a = 0; a < in[f].size;) {
                    size_t e = a;
                    while (e < in[f].size && in[f].data[e] != '\n') e++;
                    uint64_t got_line, got_len;
                    memcpy(&got_line, whole.buf + off, 8);
                    memcpy(&got_len, whole.buf + off + 8, 8);
                    CHECK_EQ_U64(got_line, ++line);
                    CHECK_EQ_U64(got_len, e - a);
                    CHECK(!memcmp(whole.buf + off + 16, in[f].data + a, e - a));
                    off += 16 + (e - a);
                    a = e + 1;
                }
            }
            CHECK_EQ_U64(off, whole.n);
        }
        free(whole.buf);
        free(cut.buf);
        free(j.blocks);
    }
    ss__vocab_free(vocab);
    ss__vocab_free(counts);
}

/* Word tokens and ids against values worked out by hand. */
static void test_tokens_by_hand(void) {
    const char *text = "word bb zz\n\n%\n12 7\t99\nword\n%\n";
    tx_input in[2];
    memset(in, 0, sizeof in);
    in[0].data = (const uint8_t *)text;
    in[0].size = strlen(text);
    in[0].ok = 1;
    ss_vocab *counts = NULL, *vocab = NULL;
    CHECK(ss__vocab_new(&counts) == 0);
    CHECK(ss__vocab_count(counts, (const uint8_t *)"word", 4, 3) == 0);
    CHECK(ss__vocab_count(counts, (const uint8_t *)"bb", 2, 1) == 0);
    CHECK(ss__vocab_build(&vocab, counts, 1, 0) == 0); /* word=4 bb=5 */
    tx_job j;
    setup_job(&j, in, TX_WORDS, TX_DOCS_SEP, 2 | 4, vocab);
    j.ninputs = 1;
    harness_out o = {0};
    CHECK(harness_run(&j, 5, &o) == 0);
    CHECK(j.tok[0].dtype == SS_U8);
    /* doc 1 (line 1): <bos> word bb <unk> <eos>; doc 2 (line 4): <bos> <unk> x3, word <eos> */
    static const uint8_t want[] = {1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 2, 4, 5, 1, 3, 4,
                                   0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 2, 1, 1, 1, 4, 3};
    CHECK(o.n == sizeof want && !memcmp(o.buf, want, sizeof want));
    free(j.blocks);

    /* ids with a vocabulary size: a bad record names the byte offset */
    setup_job(&j, in, TX_IDS, TX_LINES, 8 | 1, NULL);
    j.ninputs = 1;
    j.tok[0].vocab_size = 50;
    CHECK(harness_run(&j, 3, &o) == 0);
    CHECK(memmem(o.buf, o.n, "'word' is not a token id (byte offset 0)", 40));
    CHECK(
        memmem(o.buf, o.n, "token id 99 is out of range: --vocab-size is 50 (byte offset 19)", 64));
    free(j.blocks);
    free(o.buf);
    ss__vocab_free(vocab);
    ss__vocab_free(counts);
}

/* --tokens words: pass 2 maps the words pass 1 kept (tx_blockids) unless
 * the memory budget ($SS_TEST_WORD_IDS_BYTES) is spent, then looks them up
 * again. Kept for every block, for none (budget 0) or for some (1 byte: the
 * blocks begun before the first one ends), with 1 to 3 threads and small
 * blocks, text and parallel corpora give the same examples and vocabularies
 * as the lookup-only run. The words: many rare ones (entry numbers past a
 * map's first growth), '<unk>' and '<eos>' in the text (reserved ids),
 * blank and whitespace-only lines, --min-count dropping words to <unk>. */
static void test_kept_words(void) {
    const char *text = ss_test_keep_path("kept.txt"), *tgt = ss_test_keep_path("kept-tgt.txt");
    uint64_t rng = 5;
    for (int f = 0; f < 2; f++) {
        FILE *o = fopen(f ? tgt : text, "w");
        CHECK(o != NULL);
        for (int i = 0; i < 4000; i++) {
            int n = (int)(ss_test_rand(&rng) % 14);
            for (int w = 0; w < n; w++) {
                uint64_t r = ss_test_rand(&rng);
                const char *sep = w ? (r & 1 ? " " : " \t ") : (r & 2 ? "" : "  ");
                if (r % 97 == 0)
                    fprintf(o, "%s%s", sep, r & 4 ? "<unk>" : "<eos>");
                else if (r % 3 == 0)
                    fprintf(o, "%sr%llu", sep, (unsigned long long)(r >> 8) % 20000);
                else
                    fprintf(o, "%sw%llu", sep, (unsigned long long)(r >> 8) % 40);
            }
            fputs(i % 50 == 7 ? " \r\n" : "\n", o);
        }
        fclose(o);
    }
    static const char *const jobs[] = {
        "convert text %s --tokens words --min-count 2 --bos --eos",
        "convert text %s --tokens words --docs --skip-empty",
        "convert parallel %s %s --tokens words --max-vocab 30",
        "convert parallel %s %s --tokens words --shared-vocab --eos",
    };
    static const char *const budgets[] = {"0", "1", "100000000"};
    char err[4096], args[1024], ref[300], out[300], env[200];
    for (size_t k = 0; k < sizeof jobs / sizeof *jobs; k++) {
        snprintf(args, sizeof args, jobs[k], text, tgt);
        snprintf(ref, sizeof ref, "%s", ss_test_keep_path("kept-ref.ss"));
        CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_WORD_IDS_BYTES=0",
                               "%s --threads 1 -o %s --force", args, ref),
                   0, err);
        for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b++)
            for (int th = 1; th <= 3; th++) {
                snprintf(out, sizeof out, "%s", ss_test_keep_path("kept.ss"));
                snprintf(env, sizeof env, "SS_TEST_BLOCK_BYTES=%d SS_TEST_WORD_IDS_BYTES=%s",
                         th == 2 ? 100000 : 3000, budgets[b]);
                CHECK_EXIT(ss_test_cli(err, sizeof err, env,
                                       "%s --threads %d -o %s --force --shard 0/1", args, th, out),
                           0, err);
                const char *p = out;
                ss_test_check_shards(ref, &p, 1);
            }
    }
}

/* --------------------------------------------------- empty documents, lines */

/* The examples of field `tokens` of store `path` are exactly want[0..n). */
static void expect_texts(const char *path, const char *const *want, uint64_t n) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_EQ_U64(ss_count(s), n);
    uint32_t f = ss_test_field(s, "tokens");
    for (uint64_t i = 0; i < n; i++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, f, i));
        if (v.length != strlen(want[i]) || memcmp(v.data, want[i], v.length)) {
            fprintf(stderr, "%s: example %" PRIu64 " is '%.*s', want '%s'\n", path, i,
                    (int)v.length, (const char *)v.data, want[i]);
            exit(1);
        }
    }
    ss_close(s);
}

/* --doc-sep: every separator line ends a document, so consecutive, leading
 * and trailing separators give empty documents, which are examples like any
 * other (before: dropped without a word); a last document without a
 * separator after it counts. The documents worked out by hand, and their
 * number as awk splits records at the separator; the same with small blocks
 * on 1 and 2 threads and sliced into shards. --skip-empty drops the blank
 * ones (empty or whitespace only) and the summary says how many. */
static void test_empty_documents(void) {
    const char *txt = ss_test_keep_path("empty-docs.txt"), *st = ss_test_keep_path("empty-docs.ss");
    const char *ref = ss_test_keep_path("empty-docs-ref.ss");
    static const char text[] = "%\nA\n%\n%\nB b\n \n%\n  \n%\r\n%\nC";
    ss_test_write_file(txt, text, strlen(text));
    static const char *const docs[] = {"", "A", "", "B b\n ", "  ", "", "C"};
    char err[4096], cmd[2000];
    snprintf(cmd, sizeof cmd, "test \"$(awk 'BEGIN{RS=\"%%\\r?\\n\"} END{print NR}' %s)\" = 7",
             txt);
    CHECK(system(cmd) == 0);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL,
                           "convert text --doc-sep %% %s -o %s --force --threads 1", txt, ref),
               0, err);
    expect_texts(ref, docs, 7);
    CHECK(!strstr(err, "skipped"));
    for (int th = 1; th <= 2; th++) {
        CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=3",
                               "convert text --doc-sep %% %s -o %s --force -q --threads %d", txt,
                               st, th),
                   0, err);
        expect_texts(st, docs, 7);
    }
    snprintf(cmd, sizeof cmd, "convert text --doc-sep %% %s -q", txt);
    ss_test_convert_shards("SS_TEST_BLOCK_BYTES=3", cmd, ref, "empty-docs");
    static const char *const kept[] = {"A", "B b\n ", "C"};
    for (int th = 1; th <= 2; th++) {
        CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=3",
                               "convert text --doc-sep %% %s -o %s --force --threads %d "
                               "--skip-empty",
                               txt, st, th),
                   0, err);
        expect_texts(st, kept, 3);
        CHECK_CONTAINS(err, "skipped 4 blank documents (--skip-empty)");
        /* words: counted from the words pass 1 kept, or found again */
        for (int kept_words = 0; kept_words < 2; kept_words++) {
            CHECK_EXIT(ss_test_cli(err, sizeof err,
                                   kept_words ? "SS_TEST_BLOCK_BYTES=3"
                                              : "SS_TEST_BLOCK_BYTES=3 SS_TEST_WORD_IDS_BYTES=0",
                                   "convert text --doc-sep %% %s -o %s --force --threads %d "
                                   "--skip-empty --tokens words",
                                   txt, st, th),
                       0, err);
            CHECK_CONTAINS(err, "3 examples");
            CHECK_CONTAINS(err, "skipped 4 blank documents (--skip-empty)");
        }
    }
    /* --tokens words: pass 1 keeps the words of each document, empty ones too */
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL,
                           "convert text --doc-sep %% --tokens words --eos %s -o %s --force -q",
                           txt, st),
               0, err);
    ss_store *s;
    CHECK_OK(ss_open(&s, st, 0));
    CHECK_EQ_U64(ss_count(s), 7);
    static const uint64_t nwords[] = {1, 2, 1, 3, 1, 1, 2}; /* with <eos> */
    for (uint64_t i = 0; i < 7; i++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, i));
        CHECK_EQ_U64(v.length, nwords[i]);
    }
    ss_close(s);
}

/* Empty lines are examples of `convert lines` and `convert parallel` (both
 * sides, whatever the other side holds), with small blocks on 1 and 2
 * threads; lines --skip-empty drops the blank ones and counts them. */
static void test_empty_lines(void) {
    const char *txt = ss_test_keep_path("empty-lines.txt"), *st = ss_test_keep_path("el.ss");
    const char *tgt = ss_test_keep_path("empty-lines-tgt.txt");
    ss_test_write_file(txt, "a\n\n \n\nb\n\n", 9);
    ss_test_write_file(tgt, "\n1\n\n2\n\n\n", 8);
    static const char *const lines[] = {"a", "", " ", "", "b", ""}, *const kept[] = {"a", "b"};
    static const char *const tlines[] = {"", "1", "", "2", "", ""};
    char err[4096];
    for (int th = 1; th <= 2; th++) {
        CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=2",
                               "convert lines %s -o %s --force -q --threads %d", txt, st, th),
                   0, err);
        expect_texts(st, lines, 6);
        CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=2",
                               "convert lines %s -o %s --force --skip-empty --threads %d", txt, st,
                               th),
                   0, err);
        expect_texts(st, kept, 2);
        CHECK_CONTAINS(err, "skipped 4 blank lines (--skip-empty)");
        CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=2",
                               "convert parallel %s %s -o %s --force -q --threads %d", txt, tgt, st,
                               th),
                   0, err);
        ss_store *s;
        CHECK_OK(ss_open(&s, st, 0));
        CHECK_EQ_U64(ss_count(s), 6);
        for (uint64_t i = 0; i < 6; i++) {
            ss_view v, w;
            CHECK_OK(ss_get(&v, s, ss_test_field(s, "src"), i));
            CHECK_OK(ss_get(&w, s, ss_test_field(s, "tgt"), i));
            CHECK(v.length == strlen(lines[i]) && !memcmp(v.data, lines[i], v.length));
            CHECK(w.length == strlen(tlines[i]) && !memcmp(w.data, tlines[i], w.length));
        }
        ss_close(s);
    }
}

int main(void) {
    test_empty_lines();
    test_empty_documents();
    test_kept_words();
    test_utf8_vectors();
    test_utf8_random();
    test_vocab();
    test_wordscan();
    test_vocab_long_words();
    test_tokens_by_hand();
    test_block_invariance();
    printf("test_convert_text: ok\n");
    return 0;
}
