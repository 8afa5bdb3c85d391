/* SPDX-License-Identifier: BSD-2-Clause */
/* test_select.c - selections: parsing (hand-written cases and errors), index
 * lookup against a naive bitmap, k-fold cover/disjointness, the length filter
 * against a naive filter, named splits in a store and the `split` CLI. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Expect `sel` to be exactly the ranges in `want` ("" for none). */
static void check_text(const ss_selection *sel, const char *want) {
    char buf[4096];
    CHECK_OK(ss_selection_format(buf, sizeof buf, NULL, sel));
    if (strcmp(buf, want) != 0) {
        fprintf(stderr, "selection is '%s', expected '%s'\n", buf, want);
        exit(1);
    }
}

static void check_parse(const char *text, uint64_t total, const char *want, uint64_t count) {
    ss_selection *sel;
    CHECK_OK(ss_selection_parse(&sel, text, total));
    check_text(sel, want);
    CHECK_EQ_U64(ss_selection_count(sel), count);
    CHECK_EQ_U64(ss_selection_total(sel), total);
    ss_selection_free(sel);
}

static void check_parse_fails(const char *text, uint64_t total, int code) {
    ss_selection *sel = (ss_selection *)1;
    CHECK_RC(ss_selection_parse(&sel, text, total), code);
    CHECK(sel == NULL);
    CHECK(strlen(ss_error_message()) > 0);
}

static void test_parse(void) {
    check_parse("0:800,900:1000", 1000, "0:800,900:1000", 900);
    check_parse("900:1000,0:800", 1000, "0:800,900:1000", 900);
    check_parse("-100:", 1000, "900:1000", 100);
    check_parse(":50", 1000, "0:50", 50);
    check_parse("-10:-5", 100, "90:95", 5);
    check_parse("5", 10, "5:6", 1);
    check_parse(" 1:3 , 7 ", 10, "1:3,7:8", 3);
    check_parse("0:5,5:10", 10, "0:10", 10); /* adjacent ranges merge */
    check_parse("all", 7, "0:7", 7);
    check_parse(":", 7, "0:7", 7);
    check_parse("", 7, "", 0);
    check_parse("3:3", 7, "", 0);
    check_parse("0:0", 0, "", 0);
    check_parse_fails("0:2000", 1000, SS_ERANGE);
    check_parse_fails("-1001:", 1000, SS_ERANGE);
    check_parse_fails("1000", 1000, SS_ERANGE);
    check_parse_fails("5:3", 10, SS_EINVAL);
    check_parse_fails("0:10,5:15", 20, SS_EINVAL);
    CHECK(strstr(ss_error_message(), "overlap"));
    check_parse_fails("abc", 10, SS_EINVAL);
    check_parse_fails("1:2:3", 10, SS_EINVAL);
    check_parse_fails("1,,2", 10, SS_EINVAL);
    check_parse_fails("1:x", 10, SS_EINVAL);
    check_parse_fails("99999999999999999999999:", 10, SS_EINVAL);

    ss_range r[2] = {{5, 3}, {0, 1}};
    ss_selection *sel;
    CHECK_RC(ss_selection_create(&sel, r, 2, 10), SS_EINVAL);
    r[0].end = 11;
    CHECK_RC(ss_selection_create(&sel, r, 2, 10), SS_ERANGE);
    char small[4];
    size_t need;
    CHECK_OK(ss_selection_parse(&sel, "0:800,900:1000", 1000));
    CHECK_RC(ss_selection_format(small, sizeof small, &need, sel), SS_EBUFS);
    CHECK_EQ_U64(need, strlen("0:800,900:1000"));
    ss_selection_free(sel);
}

/* Random selections against a naive bitmap; format/parse round trip. */
static void test_index_property(void) {
    uint64_t rng = 1;
    for (int round = 0; round < 200; round++) {
        uint64_t total = ss_test_rand(&rng) % 500;
        unsigned char *bit = calloc(total + 1, 1);
        ss_range r[64];
        size_t n = 0;
        uint64_t x = 0;
        while (n < 64 && total) {
            x += ss_test_rand(&rng) % 20;
            if (x >= total) break;
            uint64_t e = x + ss_test_rand(&rng) % 30;
            if (e > total) e = total;
            r[n].start = x;
            r[n].end = e;
            for (uint64_t i = x; i < e; i++) bit[i] = 1;
            n++;
            x = e;
        }
        /* shuffle the ranges: create sorts them */
        for (size_t i = n; i > 1; i--) {
            size_t j = ss_test_rand(&rng) % i;
            ss_range t = r[i - 1];
            r[i - 1] = r[j];
            r[j] = t;
        }
        ss_selection *sel;
        CHECK_OK(ss_selection_create(&sel, r, n, total));
        uint64_t k = 0;
        for (uint64_t i = 0; i < total; i++) {
            CHECK_EQ_U64(ss_selection_contains(sel, i), bit[i]);
            if (bit[i]) {
                uint64_t got;
                CHECK_OK(ss_selection_index(&got, sel, k));
                CHECK_EQ_U64(got, i);
                k++;
            }
        }
        CHECK_EQ_U64(ss_selection_count(sel), k);
        uint64_t dummy;
        CHECK_RC(ss_selection_index(&dummy, sel, k), SS_ERANGE);
        CHECK(!ss_selection_contains(sel, total));
        char buf[8192];
        CHECK_OK(ss_selection_format(buf, sizeof buf, NULL, sel));
        ss_selection *back;
        CHECK_OK(ss_selection_parse(&back, buf, total));
        CHECK_EQ_U64(ss_selection_range_count(back), ss_selection_range_count(sel));
        CHECK(memcmp(ss_selection_ranges(back), ss_selection_ranges(sel),
                     ss_selection_range_count(sel) * sizeof(ss_range)) == 0);
        ss_selection_free(back);
        ss_selection_free(sel);
        free(bit);
    }
}

/* Every selected example in exactly one validation fold; train = rest. */
static void check_folds(const ss_selection *sel, uint32_t k, const ss_kfold_options *o) {
    uint64_t total = ss_selection_total(sel), n = ss_selection_count(sel);
    unsigned *seen = calloc(total + 1, sizeof *seen);
    for (uint32_t f = 0; f < k; f++) {
        ss_selection *tr, *va;
        CHECK_OK(ss_selection_kfold(&tr, &va, sel, k, f, o));
        CHECK_EQ_U64(ss_selection_count(va), n * (f + 1) / k - n * f / k);
        CHECK_EQ_U64(ss_selection_count(tr) + ss_selection_count(va), n);
        for (uint64_t i = 0; i < total; i++) {
            int in_sel = ss_selection_contains(sel, i), in_tr = ss_selection_contains(tr, i),
                in_va = ss_selection_contains(va, i);
            CHECK(!(in_tr && in_va));
            CHECK_EQ_U64(in_tr || in_va, in_sel);
            seen[i] += (unsigned)in_va;
        }
        ss_selection_free(tr);
        ss_selection_free(va);
    }
    for (uint64_t i = 0; i < total; i++)
        CHECK_EQ_U64(seen[i], (uint64_t)ss_selection_contains(sel, i));
    free(seen);
}

static void test_kfold(void) {
    ss_selection *sel, *tr, *va;
    CHECK_OK(ss_selection_all(&sel, 10));
    const char *want_va[3] = {"0:3", "3:6", "6:10"};
    const char *want_tr[3] = {"3:10", "0:3,6:10", "0:6"};
    for (uint32_t f = 0; f < 3; f++) {
        CHECK_OK(ss_selection_kfold(&tr, &va, sel, 3, f, NULL));
        check_text(va, want_va[f]);
        check_text(tr, want_tr[f]);
        ss_selection_free(tr);
        ss_selection_free(va);
    }
    CHECK_RC(ss_selection_kfold(&tr, &va, sel, 1, 0, NULL), SS_EINVAL);
    CHECK_RC(ss_selection_kfold(&tr, &va, sel, 3, 3, NULL), SS_EINVAL);
    CHECK_RC(ss_selection_kfold(&tr, &va, sel, 11, 0, NULL), SS_EINVAL);
    CHECK(tr == NULL && va == NULL);
    ss_selection_free(sel);

    /* Folds follow selection order across gaps. */
    CHECK_OK(ss_selection_parse(&sel, "0:4,10:16", 20));
    CHECK_OK(ss_selection_kfold(&tr, &va, sel, 2, 0, NULL));
    check_text(va, "0:4,10:11");
    check_text(tr, "11:16");
    ss_selection_free(tr);
    ss_selection_free(va);
    ss_selection_free(sel);

    /* Property: random selections, contiguous and shuffled. */
    uint64_t rng = 7;
    for (int round = 0; round < 30; round++) {
        uint64_t total = 5 + ss_test_rand(&rng) % 300;
        char text[64];
        uint64_t a = ss_test_rand(&rng) % (total / 2);
        snprintf(text, sizeof text, "0:%llu,%llu:", (unsigned long long)a,
                 (unsigned long long)(a + 2));
        CHECK_OK(ss_selection_parse(&sel, text, total));
        uint32_t k = 2 + (uint32_t)(ss_test_rand(&rng) % 6);
        if (k > ss_selection_count(sel)) k = 2;
        ss_kfold_options o = SS_KFOLD_OPTIONS_INIT;
        check_folds(sel, k, &o);
        o.shuffle = 1;
        o.seed = round;
        check_folds(sel, k, &o);
        ss_selection_free(sel);
    }

    /* Shuffled folds: deterministic per seed, different across seeds, not contiguous. */
    CHECK_OK(ss_selection_all(&sel, 1000));
    ss_kfold_options o = SS_KFOLD_OPTIONS_INIT;
    o.shuffle = 1;
    o.seed = 42;
    ss_selection *v1, *v2, *v3;
    CHECK_OK(ss_selection_kfold(NULL, &v1, sel, 5, 2, &o));
    CHECK_OK(ss_selection_kfold(NULL, &v2, sel, 5, 2, &o));
    o.seed = 43;
    CHECK_OK(ss_selection_kfold(NULL, &v3, sel, 5, 2, &o));
    CHECK_EQ_U64(ss_selection_count(v1), 200);
    CHECK(ss_selection_range_count(v1) > 50);
    CHECK_EQ_U64(ss_selection_range_count(v1), ss_selection_range_count(v2));
    CHECK(memcmp(ss_selection_ranges(v1), ss_selection_ranges(v2),
                 ss_selection_range_count(v1) * sizeof(ss_range)) == 0);
    CHECK(ss_selection_range_count(v1) != ss_selection_range_count(v3) ||
          memcmp(ss_selection_ranges(v1), ss_selection_ranges(v3),
                 ss_selection_range_count(v1) * sizeof(ss_range)) != 0);
    ss_selection_free(v1);
    ss_selection_free(v2);
    ss_selection_free(v3);
    ss_selection_free(sel);
}

/* A store with two u16 sequence fields "src" and "tgt" of known lengths. */
static uint64_t src_len(uint64_t i) {
    return (i * 7) % 23;
}
static uint64_t tgt_len(uint64_t i) {
    return (i * 5 + 3) % 17;
}

static void make_store(const char *path, uint64_t n) {
    ss_field f[2] = {{"src", SS_U16, 1, 0, {0}}, {"tgt", SS_U16, 1, 0, {0}}};
    ss_schema sc = {2, f};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &sc, NULL));
    uint16_t buf[64] = {0};
    for (uint64_t i = 0; i < n; i++) {
        ss_value v[2] = {{buf, src_len(i)}, {buf, tgt_len(i)}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

static void test_filter_and_splits(void) {
    const char *path = ss_test_path("split.ss");
    const uint64_t n = 300;
    make_store(path, n);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_selection *sel, *flt;
    CHECK_OK(ss_selection_parse(&sel, "10:250,-20:", n));
    uint32_t both[2] = {0, 1};
    struct {
        size_t nf;
        uint64_t lo, hi;
    } cases[] = {{1, 5, 10}, {2, 3, 12}, {1, 0, 0}, {2, 20, 0}, {1, 22, 22}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        CHECK_OK(
            ss_selection_filter_length(&flt, s, sel, both, cases[c].nf, cases[c].lo, cases[c].hi));
        uint64_t hi = cases[c].hi ? cases[c].hi : UINT64_MAX, cnt = 0;
        for (uint64_t i = 0; i < n; i++) {
            int keep = ss_selection_contains(sel, i) && src_len(i) >= cases[c].lo &&
                       src_len(i) <= hi &&
                       (cases[c].nf < 2 || (tgt_len(i) >= cases[c].lo && tgt_len(i) <= hi));
            CHECK_EQ_U64(ss_selection_contains(flt, i), keep);
            cnt += (uint64_t)keep;
        }
        CHECK_EQ_U64(ss_selection_count(flt), cnt);
        ss_selection_free(flt);
    }
    uint32_t bad = 2;
    CHECK_RC(ss_selection_filter_length(&flt, s, sel, &bad, 1, 0, 0), SS_ERANGE);
    CHECK_RC(ss_selection_filter_length(&flt, s, sel, both, 0, 0, 0), SS_EINVAL);
    CHECK_RC(ss_selection_filter_length(&flt, s, sel, both, 1, 9, 3), SS_EINVAL);
    ss_close(s);

    /* Named splits round-trip through the store. */
    CHECK_OK(ss_split_save(path, "train", sel));
    ss_selection *big;
    CHECK_OK(ss_selection_parse(&big, "0:400", 400));
    CHECK_RC(ss_split_save(path, "toolong", big), SS_ERANGE);
    CHECK_RC(ss_split_save(path, "bad name", sel), SS_EINVAL);
    CHECK_RC(ss_split_save(path, "", sel), SS_EINVAL);
    ss_selection_free(big);
    CHECK_OK(ss_open(&s, path, 0));
    ss_selection *back;
    CHECK_OK(ss_split_load(&back, s, "train"));
    check_text(back, "10:250,280:300");
    CHECK_EQ_U64(ss_selection_total(back), n);
    ss_selection_free(back);
    CHECK_RC(ss_split_load(&back, s, "nope"), SS_ENOTFOUND);
    CHECK(strstr(ss_error_message(), "nope"));
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, "ss.split.train"));
    CHECK_EQ_U64(a.type, SS_U64);
    CHECK_EQ_U64(a.size, 32);
    const unsigned char *p = a.data; /* little-endian pairs: 10, 250, 280, 300 */
    CHECK(p[0] == 10 && p[8] == 250 && p[16] == 24 && p[17] == 1 && p[24] == 44 && p[25] == 1);
    ss_close(s);
    ss_selection_free(sel);
}

static int run(const char *cmd) {
    int st = system(cmd);
    CHECK(st != -1 && WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void test_cli(void) {
    const char *path = ss_test_path("cli.ss");
    make_store(path, 100);
    const char *out = ss_test_path("out.txt");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s split --help > %s", SS_CLI, out);
    CHECK_EQ_U64(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s split add %s valid -10: > %s 2>&1", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s split add %s valid 0:5 > %s 2>&1", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 1); /* exists */
    snprintf(cmd, sizeof cmd, "%s split add %s train 0:90 > %s 2>&1", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s split add %s x 0:500 2> %s", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 2); /* outside the store: a usage error, as cat --range */
    snprintf(cmd, sizeof cmd, "grep -q '^seqstore split: ' %s", out);
    CHECK_EQ_U64(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s split add %s > %s 2>&1", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s split frob %s > %s 2>&1", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s split list %s --json > %s", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "grep -q '\"name\": \"valid\"' %s && grep -q '\"count\": 90' %s", out,
             out);
    CHECK_EQ_U64(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s split show %s valid > %s", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "grep -qx '90:100' %s", out);
    CHECK_EQ_U64(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s split show %s missing 2> %s", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 1);
    snprintf(cmd, sizeof cmd, "%s split kfold %s 4 --shuffle --seed 3 > %s", SS_CLI, path, out);
    CHECK_EQ_U64(run(cmd), 0);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_selection *sel;
    CHECK_OK(ss_split_load(&sel, s, "valid"));
    check_text(sel, "90:100");
    ss_selection_free(sel);
    uint64_t covered = 0;
    for (int f = 0; f < 4; f++) {
        char name[32];
        snprintf(name, sizeof name, "fold%d.valid", f);
        CHECK_OK(ss_split_load(&sel, s, name));
        covered += ss_selection_count(sel);
        ss_selection_free(sel);
    }
    CHECK_EQ_U64(covered, 100);
    ss_close(s);
}

/* ------------------------------------------- set operations, folds (v2) */

/* A random selection of `total` and its bitmap. */
static ss_selection *random_sel(uint64_t *rng, uint64_t total, unsigned char *bit) {
    ss_range r[64];
    size_t n = 0;
    memset(bit, 0, total + 1);
    for (uint64_t x = ss_test_rand(rng) % 5; n < 64 && x < total;) {
        uint64_t e = x + 1 + ss_test_rand(rng) % 20;
        if (e > total) e = total;
        r[n++] = (ss_range){x, e};
        for (uint64_t i = x; i < e; i++) bit[i] = 1;
        x = e + 1 + ss_test_rand(rng) % 20;
    }
    ss_selection *sel;
    CHECK_OK(ss_selection_create(&sel, r, n, total));
    return sel;
}

/* Union, intersection and difference against bitmaps. */
static void test_set_ops(void) {
    uint64_t rng = 5;
    unsigned char a[600], b[600];
    for (int round = 0; round < 300; round++) {
        uint64_t total = ss_test_rand(&rng) % 500;
        ss_selection *x = random_sel(&rng, total, a), *y = random_sel(&rng, total, b);
        for (int op = 0; op < 3; op++) {
            ss_selection *z;
            if (op == 0) CHECK_OK(ss_selection_union(&z, x, y));
            if (op == 1) CHECK_OK(ss_selection_intersect(&z, x, y));
            if (op == 2) CHECK_OK(ss_selection_minus(&z, x, y));
            CHECK_EQ_U64(ss_selection_total(z), total);
            uint64_t count = 0;
            for (uint64_t i = 0; i < total; i++) {
                int want = op == 0 ? a[i] || b[i] : op == 1 ? a[i] && b[i] : a[i] && !b[i];
                CHECK_EQ_U64(ss_selection_contains(z, i), want);
                count += (uint64_t)want;
            }
            CHECK_EQ_U64(ss_selection_count(z), count);
            /* ranges stay sorted, non-empty and non-adjacent */
            const ss_range *r = ss_selection_ranges(z);
            for (size_t i = 0; i < ss_selection_range_count(z); i++) {
                CHECK(r[i].start < r[i].end);
                CHECK(i == 0 || r[i - 1].end < r[i].start);
            }
            ss_selection_free(z);
        }
        ss_selection_free(x);
        ss_selection_free(y);
    }
    ss_selection *x, *y, *z;
    CHECK_OK(ss_selection_all(&x, 10));
    CHECK_OK(ss_selection_all(&y, 11));
    CHECK_RC(ss_selection_union(&z, x, y), SS_EINVAL);
    CHECK(z == NULL && strstr(ss_error_message(), "10 and 11"));
    CHECK_RC(ss_selection_intersect(&z, x, NULL), SS_EINVAL);
    ss_selection_free(x);
    ss_selection_free(y);
}

/* Fuel's cross_validation(scheme, num_examples, num_folds, strict): fold i
 * validates [n*i//k, n*(i+1)//k) and trains on the rest; strict=True raises
 * when k does not divide n. */
static void test_kfold_strict(void) {
    ss_selection *sel, *tr, *va;
    CHECK_OK(ss_selection_all(&sel, 10));
    ss_kfold_options o = SS_KFOLD_OPTIONS_INIT;
    o.strict = 1;
    for (uint32_t f = 0; f < 5; f++) {
        CHECK_OK(ss_selection_kfold(&tr, &va, sel, 5, f, &o));
        char want[64];
        snprintf(want, sizeof want, "%u:%u", 2 * f, 2 * f + 2);
        check_text(va, want);
        CHECK_EQ_U64(ss_selection_count(tr), 8);
        ss_selection_free(tr);
        ss_selection_free(va);
    }
    CHECK_RC(ss_selection_kfold(&tr, &va, sel, 3, 0, &o), SS_EINVAL);
    CHECK(tr == NULL && va == NULL && strstr(ss_error_message(), "strict"));
    o.strict = 0; /* Fuel's strict=False: 0:3, 3:6, 6:10 */
    const char *want3[3] = {"0:3", "3:6", "6:10"};
    for (uint32_t f = 0; f < 3; f++) {
        CHECK_OK(ss_selection_kfold(NULL, &va, sel, 3, f, &o));
        check_text(va, want3[f]);
        ss_selection_free(va);
    }
    ss_kfold_options v1 = {1, 0, 0, 1, NULL, NULL}; /* version 1 ends at seed */
    CHECK_OK(ss_selection_kfold(NULL, &va, sel, 3, 0, &v1));
    ss_selection_free(va);
    ss_selection_free(sel);
}

/* The documented grouped assignment, naively: groups by decreasing size,
 * ties by first position; each to the least-loaded fold (lowest on ties). */
static void naive_groups(const int64_t *g, uint64_t n, uint32_t k, uint32_t *fold_of) {
    unsigned char *done = calloc(n + 1, 1);
    uint64_t load[16] = {0};
    for (;;) {
        uint64_t best = n, best_size = 0;
        for (uint64_t i = 0; i < n; i++) {
            if (done[i]) continue;
            int first = 1; /* first position of its group? */
            for (uint64_t j = 0; j < i && first; j++) first = g[j] != g[i];
            if (!first) continue;
            uint64_t size = 0;
            for (uint64_t j = i; j < n; j++) size += g[j] == g[i];
            if (size > best_size) best = i, best_size = size;
        }
        if (best == n) break;
        uint32_t f = 0;
        for (uint32_t q = 1; q < k; q++)
            if (load[q] < load[f]) f = q;
        load[f] += best_size;
        for (uint64_t j = best; j < n; j++)
            if (g[j] == g[best]) fold_of[j] = f, done[j] = 1;
    }
    free(done);
}

/* Grouped and stratified folds over a selection with holes: exact against
 * naive references, and their properties (groups whole, label counts
 * floor/ceil of c/k, disjoint folds covering the selection). */
static void test_kfold_grouped_stratified(void) {
    uint64_t rng = 77;
    unsigned char bit[600];
    for (int round = 0; round < 60; round++) {
        uint64_t total = 20 + ss_test_rand(&rng) % 400;
        ss_selection *sel = random_sel(&rng, total, bit);
        uint64_t n = ss_selection_count(sel);
        uint32_t k = 2 + (uint32_t)(ss_test_rand(&rng) % 5);
        if (n < 2 * k) {
            ss_selection_free(sel);
            continue;
        }
        int64_t keys[600];
        int64_t span = 1 + (int64_t)(ss_test_rand(&rng) % 12) + k;
        for (uint64_t i = 0; i < n; i++) keys[i] = (int64_t)(ss_test_rand(&rng) % span) - 3;
        uint32_t want[600], cnt[32][8] = {{0}};
        uint64_t idx[600];
        for (uint64_t i = 0; i < n; i++) CHECK_OK(ss_selection_index(&idx[i], sel, i));
        for (int mode = 0; mode < 2; mode++) {
            ss_kfold_options o = SS_KFOLD_OPTIONS_INIT;
            if (mode == 0) {
                o.groups = keys;
                naive_groups(keys, n, k, want);
            } else {
                o.labels = keys;
                /* naive: by (label, position), round-robin */
                uint64_t j = 0;
                for (int64_t lab = -3; lab < span; lab++)
                    for (uint64_t i = 0; i < n; i++)
                        if (keys[i] == lab) want[i] = (uint32_t)(j++ % k);
            }
            unsigned seen[600] = {0};
            for (uint32_t f = 0; f < k; f++) {
                ss_selection *tr, *va;
                int rc = ss_selection_kfold(&tr, &va, sel, k, f, &o);
                if (rc == SS_EINVAL && mode == 0) { /* fewer groups than folds */
                    CHECK(strstr(ss_error_message(), "groups"));
                    break;
                }
                CHECK_OK(rc);
                for (uint64_t i = 0; i < n; i++) {
                    int in_va = ss_selection_contains(va, idx[i]);
                    CHECK_EQ_U64(in_va, want[i] == f);
                    CHECK_EQ_U64(ss_selection_contains(tr, idx[i]), !in_va);
                    seen[i] += (unsigned)in_va;
                    if (in_va && mode == 1) cnt[keys[i] + 3][f]++;
                }
                ss_selection_free(tr);
                ss_selection_free(va);
            }
            if (mode == 1)
                for (int64_t lab = 0; lab < span + 3; lab++) {
                    uint64_t c = 0;
                    for (uint32_t f = 0; f < k; f++) c += cnt[lab][f];
                    for (uint32_t f = 0; f < k; f++)
                        CHECK(cnt[lab][f] == c / k || cnt[lab][f] == (c + k - 1) / k);
                }
            for (uint64_t i = 0; i < n && (mode == 1 || seen[0]); i++) CHECK_EQ_U64(seen[i], 1);
            if (mode == 0) /* a group never spans two folds */
                for (uint64_t i = 0; i < n; i++)
                    for (uint64_t j = 0; j < n; j++)
                        if (keys[i] == keys[j]) CHECK_EQ_U64(want[i], want[j]);
        }
        ss_selection_free(sel);
    }
    ss_selection *sel, *va;
    CHECK_OK(ss_selection_all(&sel, 6));
    int64_t g[6] = {1, 1, 1, 2, 2, 2};
    ss_kfold_options o = SS_KFOLD_OPTIONS_INIT;
    o.groups = g;
    CHECK_RC(ss_selection_kfold(NULL, &va, sel, 3, 0, &o), SS_EINVAL); /* 2 groups, 3 folds */
    o.strict = 1;
    CHECK_RC(ss_selection_kfold(NULL, &va, sel, 2, 0, &o), SS_EINVAL);
    o.strict = 0;
    o.labels = g;
    CHECK_RC(ss_selection_kfold(NULL, &va, sel, 2, 0, &o), SS_EINVAL);
    ss_selection_free(sel);
}

/* Group ids from a fixed field and from an attribute array. */
static void test_values(void) {
    const char *path = ss_test_path("values.ss");
    ss_field f[2] = {{"x", SS_U16, 1, 0, {0}}, {"subject", SS_I16, 0, 0, {0}}};
    ss_schema sc = {2, f};
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &sc, NULL));
    uint16_t buf[4] = {0};
    uint32_t rec[8];
    for (int i = 0; i < 8; i++) {
        int16_t subj = (int16_t)(i / 3 - 1);
        rec[i] = (uint32_t)(100 + i % 2);
        ss_value v[2] = {{buf, 2}, {&subj, 1}};
        CHECK_OK(ss_writer_append(w, v));
    }
    CHECK_OK(ss_writer_set_attr(w, "recording", SS_U32, rec, sizeof rec));
    CHECK_OK(ss_writer_set_attr(w, "short", SS_U32, rec, 4));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    ss_selection *sel;
    CHECK_OK(ss_selection_parse(&sel, "1:3,5:8", 8));
    int64_t v[5];
    CHECK_OK(ss_selection_field_values(v, s, sel, 1));
    int64_t want[5] = {-1, -1, 0, 1, 1};
    for (int i = 0; i < 5; i++) CHECK(v[i] == want[i]);
    CHECK_OK(ss_selection_attr_values(v, s, sel, "recording"));
    int64_t want2[5] = {101, 100, 101, 100, 101};
    for (int i = 0; i < 5; i++) CHECK(v[i] == want2[i]);
    CHECK_RC(ss_selection_field_values(v, s, sel, 0), SS_EINVAL); /* a sequence */
    CHECK_RC(ss_selection_field_values(v, s, sel, 2), SS_ERANGE);
    CHECK_RC(ss_selection_attr_values(v, s, sel, "short"), SS_EINVAL);
    CHECK_RC(ss_selection_attr_values(v, s, sel, "nope"), SS_ENOTFOUND);
    ss_selection_free(sel);
    ss_close(s);
}

int main(void) {
    test_parse();
    test_index_property();
    test_kfold();
    test_set_ops();
    test_kfold_strict();
    test_kfold_grouped_stratified();
    test_values();
    test_filter_and_splits();
    test_cli();
    printf("test_select: ok\n");
    return 0;
}
