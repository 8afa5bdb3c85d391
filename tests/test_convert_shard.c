/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_shard.c - `seqstore convert KIND ... --shard K/N`: for
 * N = 1, 2, 3, 7 the shards, assembled in order, hold exactly the examples
 * (and attributes, vocabulary included) of a single-process conversion:
 * text (bytes, words, documents; one large file cut at line boundaries and
 * several whole files), parallel and jsonl. npy and EDF are checked in their
 * own tests. Shared vocabularies: every shard counts only its
 * slice (`--count-only`), the conversions take the merged counts
 * (`--counts DIR`), and the result is again the single process's. Even
 * shards: with the converter's own block size (1 MiB), a 3 MB file cut N ways
 * for N up to 64 gives N shards whose bytes each lie within one line of T/N
 * (lines), and no empty shard (documents, parallel and JSON lines), their
 * examples again the single process's. */
#include "testutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const WORDS[] = {"the", "a",   "cat", "sat", "on", "mat",
                                    "dog", "ran", "far", "éte", "x",  "yz"};

/* A text file of `lines` lines of 0..12 random words (some blank; some
 * lines "---" as document separators when `docs`). */
static void write_text(const char *path, int lines, uint64_t seed, int docs) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < lines; i++) {
        if (docs && ss_test_rand(&seed) % 5 == 0) {
            fputs("---\n", f);
            continue;
        }
        int n = (int)(ss_test_rand(&seed) % 13);
        for (int w = 0; w < n; w++)
            fprintf(f, "%s%s", w ? " " : "", WORDS[ss_test_rand(&seed) % 12]);
        fputc('\n', f);
    }
    fclose(f);
}

static void write_jsonl(const char *path, int lines, uint64_t seed) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < lines; i++) {
        fputs("{\"text\": \"", f);
        int n = 1 + (int)(ss_test_rand(&seed) % 9);
        for (int w = 0; w < n; w++)
            fprintf(f, "%s%s", w ? " " : "", WORDS[ss_test_rand(&seed) % 12]);
        fputs("\"}\n", f);
    }
    fclose(f);
}

/* Lines {"title": "...", "text": "..."} of random words, some with the
 * escape \u00e9 (the counted word is the decoded one) and some blank. */
static void write_jsonl2(const char *path, int lines, uint64_t seed) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < lines; i++) {
        if (ss_test_rand(&seed) % 17 == 0) {
            fputc('\n', f);
            continue;
        }
        for (int k = 0; k < 2; k++) {
            fputs(k ? ", \"text\": \"" : "{\"title\": \"", f);
            int n = (int)(ss_test_rand(&seed) % (k ? 12 : 4));
            for (int w = 0; w < n; w++)
                fprintf(f, "%s%s%s", w ? " " : "", WORDS[ss_test_rand(&seed) % 12],
                        ss_test_rand(&seed) % 9 ? "" : "\\u00e9");
            fputc('"', f);
        }
        fputs("}\n", f);
    }
    fclose(f);
}

/* Convert ARGS once in one process, then with every --shard split. Small
 * blocks (SS_TEST_BLOCK_BYTES) let the shards cut single files. */
static void check(const char *name, const char *args) {
    char err[4096], single[300];
    snprintf(single, sizeof single, "%s", ss_test_keep_path(name));
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "%s -o %s.ss --force", args, single), 0, err);
    snprintf(single + strlen(single), sizeof single - strlen(single), ".ss");
    ss_test_convert_shards("SS_TEST_BLOCK_BYTES=997", args, single, name);
    fprintf(stderr, "ok: %s\n", name);
}

/* The total of the counts in a counts file (its word lines' last field). */
static uint64_t counts_total(const char *path) {
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[512];
    uint64_t total = 0;
    while (fgets(line, sizeof line, f)) {
        char *tab = strrchr(line, '\t');
        if (line[0] != '\t' && tab && strncmp(line, "input\t", 6) && strncmp(line, "shard\t", 6) &&
            strncmp(line, "options\t", 8))
            total += strtoull(tab + 1, NULL, 10);
    }
    fclose(f);
    return total;
}

/* Words of ARGS's inputs counted once per shard, the shards converted with
 * the merged counts: for N = 1, 2, 3, 7 the same examples and vocabulary as
 * one process (`single`), each shard counting only its slice (the counts
 * files' totals add up to the whole's, and with N >= 2 none holds it all). */
static void check_counted(const char *name, const char *args, const char *single) {
    static const uint32_t ns[] = {1, 2, 3, 7};
    const char *env = "SS_TEST_BLOCK_BYTES=997";
    char err[4096], dir[300], file[400];
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        uint32_t n = ns[t];
        snprintf(dir, sizeof dir, "%s", ss_test_keep_path(name));
        snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "-counts-%u", n);
        mkdir(dir, 0777); /* kept from an earlier run: its files are replaced */
        uint64_t totals[7], sum = 0;
        for (uint32_t k = 0; k < n; k++) {
            snprintf(file, sizeof file, "%s/%u.counts", dir, k);
            CHECK_EXIT(ss_test_cli(err, sizeof err, env, "%s --shard %u/%u --count-only -o %s",
                                   args, k, n, file),
                       0, err);
            sum += totals[k] = counts_total(file);
        }
        const char *paths[7];
        char pname[256];
        for (uint32_t k = 0; k < n; k++) {
            snprintf(pname, sizeof pname, "%s-counted-%u-of-%u.ss", name, k, n);
            paths[k] = ss_test_keep_path(pname);
            CHECK_EXIT(ss_test_cli(err, sizeof err, env,
                                   "%s --shard %u/%u --counts %s -o %s --force", args, k, n, dir,
                                   paths[k]),
                       0, err);
            if (n > 1) CHECK(totals[k] < sum);
        }
        ss_test_check_shards(single, paths, n);
        /* without --shard, --count-only counts everything: the same total */
        snprintf(file, sizeof file, "%s/all.txt", dir);
        CHECK_EXIT(ss_test_cli(err, sizeof err, env, "%s --count-only -o %s", args, file), 0, err);
        CHECK_EQ_U64(counts_total(file), sum);
    }
    fprintf(stderr, "ok: %s, counted per shard\n", name);
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = malloc((size_t)size + 1);
    CHECK(t != NULL);
    *n = fread(t, 1, (size_t)size, f);
    t[*n] = 0;
    fclose(f);
    return t;
}

/* Counts that do not make up the whole are refused, naming the problem. */
static void check_count_errors(const char *big, const char *docs) {
    char err[4096], c0[300], c1[300], both[300];
    const char *out = ss_test_path("bad.ss");
    snprintf(c0, sizeof c0, "%s", ss_test_path("e0.counts"));
    snprintf(c1, sizeof c1, "%s", ss_test_path("e1.counts"));
    snprintf(both, sizeof both, "%s", ss_test_path("both.counts"));
    for (int k = 0; k < 2; k++)
        CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=997",
                               "convert text %s --tokens words --shard %d/2 --count-only -o %s",
                               big, k, k ? c1 : c0),
                   0, err);
    /* a shard missing */
    CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=997",
                           "convert text %s --tokens words --counts %s -o %s", big, c0, out),
               1, err);
    CHECK_CONTAINS(err, "no counts of shard 1/2");
    /* a shard twice */
    CHECK_EXIT(
        ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=997",
                    "convert text %s --tokens words --counts %s --counts %s --counts %s -o %s", big,
                    c0, c1, c0, out),
        1, err);
    CHECK_CONTAINS(err, "shard 0/2 is counted twice");
    /* counted with other options or inputs */
    CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=997",
                           "convert text %s --tokens words --docs --counts %s --counts %s -o %s",
                           big, c0, c1, out),
               1, err);
    CHECK_CONTAINS(err, "counted other inputs or options");
    CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=997",
                           "convert text %s --tokens words --counts %s --counts %s -o %s", docs, c0,
                           c1, out),
               1, err);
    CHECK_CONTAINS(err, "counted other inputs or options");
    /* one file holding both documents (as seqstore-mpi writes it) is whole */
    size_t n0, n1;
    char *t0 = slurp(c0, &n0), *t1 = slurp(c1, &n1);
    FILE *f = fopen(both, "w");
    CHECK(f != NULL);
    fwrite(t0, 1, n0, f);
    fwrite(t1, 1, n1, f);
    fclose(f);
    CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=997",
                           "convert text %s --tokens words --counts %s -o %s --force", big, both,
                           out),
               0, err);
    /* a damaged count: line 8 (the second word) gets count "x" */
    char *p = t1;
    for (int l = 1; l < 8; l++) p = strchr(p, '\n') + 1;
    *strchr(p, '\t') = 0;
    f = fopen(c1, "w");
    CHECK(f != NULL);
    fprintf(f, "%s\tx\n%s", t1, strchr(p + strlen(p) + 1, '\n') + 1);
    fclose(f);
    free(t0);
    free(t1);
    CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=997",
                           "convert text %s --tokens words --counts %s --counts %s -o %s", big, c0,
                           c1, out),
               1, err);
    CHECK_CONTAINS(err, "line 8: bad count");
    /* usage */
    CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=997",
                           "convert text %s --count-only -o %s", big, c0),
               2, err);
    CHECK_CONTAINS(err, "need --tokens words");
    CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=997",
                           "convert text %s --tokens words --counts %s -o %s --append", big, both,
                           out),
               2, err);
    CHECK_CONTAINS(err, "--counts excludes --append");
    fprintf(stderr, "ok: counts errors\n");
}

/* jsonl counts files name their keys: counts of other keys, or of `convert
 * text`, are refused; --count-only needs --tokens words. */
static void check_jsonl_count_errors(const char *jl, const char *big) {
    char err[4096], c0[300], t0[300];
    const char *out = ss_test_path("bad.ss"), *env = "SS_TEST_BLOCK_BYTES=997";
    snprintf(c0, sizeof c0, "%s", ss_test_path("j0.counts"));
    snprintf(t0, sizeof t0, "%s", ss_test_path("t0.counts"));
    CHECK_EXIT(ss_test_cli(err, sizeof err, env,
                           "convert jsonl %s --key title --key text --tokens words --count-only "
                           "-o %s",
                           jl, c0),
               0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, env,
                           "convert jsonl %s --key text --key title --tokens words --counts %s "
                           "-o %s",
                           jl, c0, out),
               1, err);
    CHECK_CONTAINS(err, "counted other inputs or options");
    CHECK_EXIT(ss_test_cli(err, sizeof err, env,
                           "convert text %s --tokens words --count-only -o %s", big, t0),
               0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, env,
                           "convert jsonl %s --key text --tokens words --counts %s -o %s", big, t0,
                           out),
               1, err);
    CHECK_CONTAINS(err, "counted other inputs or options");
    CHECK_EXIT(ss_test_cli(err, sizeof err, env,
                           "convert jsonl %s --key text --tokens words --counts %s -o %s "
                           "--force",
                           jl, c0, out),
               1, err);
    CHECK_CONTAINS(err, "counted other inputs or options");
    CHECK_EXIT(ss_test_cli(err, sizeof err, env, "convert jsonl %s --count-only -o %s", jl, c0), 2,
               err);
    CHECK_CONTAINS(err, "need --tokens words");
    fprintf(stderr, "ok: jsonl counts errors\n");
}

/* `args` (one input of `total` bytes) cut n ways with the default block
 * size: the shards assembled are the single conversion `single`; none is
 * empty; with `maxline` (bytes mode, one example per line), each shard's
 * bytes (its lines and their '\n') lie within maxline of total/n. */
static void check_even(const char *name, const char *args, const char *single, uint32_t n,
                       uint64_t total, uint64_t maxline) {
    char err[4096], pname[256];
    const char *paths[64];
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t k = 0; k < n; k++) {
        snprintf(pname, sizeof pname, "even-%s-%u-of-%u.ss", name, k, n);
        paths[k] = ss_test_keep_path(pname);
        CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "%s -o %s --force --shard %u/%u --quiet",
                               args, paths[k], k, n),
                   0, err);
        ss_store *s;
        CHECK_OK(ss_open(&s, paths[k], 0));
        uint64_t bytes = ss_count(s), count = ss_count(s);
        for (uint64_t i = 0; maxline && i < count; i++) {
            ss_view v;
            CHECK_OK(ss_get(&v, s, 0, i));
            bytes += v.length;
        }
        ss_close(s);
        if (!count) fprintf(stderr, "%s: shard %u of %u is empty\n", name, k, n);
        CHECK(count > 0);
        if (maxline && (bytes + maxline < total / n || bytes > total / n + 1 + maxline))
            fprintf(stderr, "%s: shard %u of %u holds %" PRIu64 " bytes, not about %" PRIu64 "\n",
                    name, k, n, bytes, total / n);
        if (maxline) CHECK(bytes + maxline >= total / n && bytes <= total / n + 1 + maxline);
        lo = count < lo ? count : lo;
        hi = count > hi ? count : hi;
    }
    ss_test_check_shards(single, paths, n);
    fprintf(stderr, "ok: even %s, %u shards of %" PRIu64 "..%" PRIu64 " examples\n", name, n, lo,
            hi);
}

static uint64_t file_size(const char *path) {
    struct stat st;
    CHECK(stat(path, &st) == 0);
    return (uint64_t)st.st_size;
}

/* The longest line of a file, with its '\n'. */
static uint64_t longest_line(const char *path) {
    size_t n;
    char *t = ss_test_read_file(path, &n);
    uint64_t best = 0, run = 0;
    for (size_t i = 0; i < n; i++) {
        run++;
        if (t[i] == '\n') best = run > best ? run : best, run = 0;
    }
    free(t);
    return run > best ? run : best;
}

static void check_even_all(void) {
    const char *text = ss_test_keep_path("even.txt"), *docs = ss_test_keep_path("even-docs.txt");
    const char *src = ss_test_keep_path("even-src.txt"), *tgt = ss_test_keep_path("even-tgt.txt");
    const char *jl = ss_test_keep_path("even.jsonl");
    write_text(text, 100000, 21, 0); /* about 3 MB: three of the converter's blocks */
    write_text(docs, 100000, 22, 1);
    write_text(src, 60000, 23, 0);
    write_text(tgt, 60000, 24, 0);
    write_jsonl(jl, 60000, 25);
    static const uint32_t ns[] = {2, 3, 5, 16, 64};
    char args[4096], err[4096], single[300];
    struct {
        const char *name, *fmt, *a, *b;
        uint64_t total;
        int lines;
    } cases[] = {
        {"bytes", "convert text %s --tokens bytes", text, NULL, file_size(text), 1},
        {"docs", "convert text %s --tokens bytes --docs --doc-sep --- --skip-empty", docs, NULL,
         0, 0},
        {"blank-docs", "convert text %s --tokens words --docs", docs, NULL, 0, 0},
        {"parallel", "convert parallel %s %s --tokens words", src, tgt, 0, 0},
        {"jsonl", "convert jsonl %s --key text --tokens bytes", jl, NULL, 0, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        snprintf(args, sizeof args, cases[c].fmt, cases[c].a, cases[c].b);
        snprintf(single, sizeof single, "%s", ss_test_keep_path("even-single.ss"));
        CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "%s -o %s --force --quiet", args, single), 0,
                   err);
        uint64_t maxline = cases[c].lines ? longest_line(cases[c].a) : 0;
        for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++)
            if (cases[c].lines || ns[t] == 16)
                check_even(cases[c].name, args, single, ns[t], cases[c].total, maxline);
    }
}

int main(void) {
    const char *big = ss_test_keep_path("big.txt"), *src = ss_test_keep_path("src.txt");
    const char *tgt = ss_test_keep_path("tgt.txt"), *j1 = ss_test_keep_path("a.jsonl");
    const char *j2 = ss_test_keep_path("b.jsonl");
    const char *docs = ss_test_keep_path("docs.txt");
    char args[4096], small[3][256];
    write_text(big, 3000, 1, 0);
    write_text(docs, 2000, 2, 1);
    write_text(src, 1500, 3, 0);
    write_text(tgt, 1500, 4, 0);
    write_jsonl(j1, 1200, 5);
    write_jsonl2(j2, 1500, 6);
    for (int i = 0; i < 3; i++) {
        snprintf(small[i], sizeof small[i], "%s",
                 ss_test_keep_path(i ? i == 1 ? "s1" : "s2" : "s0"));
        write_text(small[i], 100 + 150 * i, 10 + (uint64_t)i, 0);
    }

    check_even_all();

    /* one large file, cut at line boundaries */
    snprintf(args, sizeof args, "convert text %s --tokens bytes", big);
    check("bytes", args);
    snprintf(args, sizeof args, "convert text %s --tokens words", big);
    check("words", args); /* every shard counts every input: the same vocabulary */
    snprintf(args, sizeof args, "convert text %s --tokens bytes --docs --doc-sep --- --skip-empty",
             docs);
    check("docs", args);
    /* several files plus the large one: whole small files, the large one cut */
    snprintf(args, sizeof args, "convert text %s %s %s %s --tokens words --min-count 2", small[0],
             big, small[1], small[2]);
    check("files", args);
    snprintf(args, sizeof args, "convert parallel %s %s --tokens words", src, tgt);
    check("parallel", args);
    snprintf(args, sizeof args, "convert jsonl %s --key text --tokens bytes", j1);
    check("jsonl", args);

    /* shared vocabularies: counts per shard, merged */
    snprintf(args, sizeof args, "convert text %s --tokens words", big);
    check_counted("words", args, ss_test_keep_path("words.ss"));
    snprintf(args, sizeof args, "convert text %s %s %s %s --tokens words --min-count 2", small[0],
             big, small[1], small[2]);
    check_counted("files", args, ss_test_keep_path("files.ss"));
    snprintf(args, sizeof args, "convert text %s --tokens words --docs --doc-sep --- --skip-empty",
             docs);
    check("docs-words", args);
    check_counted("docs-words", args, ss_test_keep_path("docs-words.ss"));
    snprintf(args, sizeof args, "convert parallel %s %s --tokens words", src, tgt);
    check_counted("parallel", args, ss_test_keep_path("parallel.ss"));
    snprintf(args, sizeof args,
             "convert parallel %s %s --tokens words --shared-vocab --max-vocab 9", src, tgt);
    check("parallel-shared", args);
    check_counted("parallel-shared", args, ss_test_keep_path("parallel-shared.ss"));
    /* jsonl: one vocabulary over all keys */
    snprintf(args, sizeof args, "convert jsonl %s --key text --tokens words", j1);
    check("jsonl-words", args);
    check_counted("jsonl-words", args, ss_test_keep_path("jsonl-words.ss"));
    snprintf(args, sizeof args,
             "convert jsonl %s --key title --key text --tokens words --min-count 2 --bos", j2);
    check("jsonl-keys", args);
    check_counted("jsonl-keys", args, ss_test_keep_path("jsonl-keys.ss"));
    check_count_errors(big, docs);
    check_jsonl_count_errors(j2, big);

    /* usage errors */
    char err[4096];
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "convert text %s -o %s --shard 3/3", big,
                           ss_test_path("bad.ss")),
               2, err);
    CHECK_CONTAINS(err, "--shard K");
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "convert text %s -o %s --shard 1", big,
                           ss_test_path("bad.ss")),
               2, err);
    CHECK_CONTAINS(err, "K/N");
    return 0;
}
