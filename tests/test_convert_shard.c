/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_shard.c - `seqstore convert KIND ... --shard K/N`: for
 * N = 1, 2, 3, 7 the shards, assembled in order, hold exactly the examples
 * (and attributes, vocabulary included) of a single-process conversion:
 * text (bytes, words, documents; one large file cut at line boundaries and
 * several whole files), parallel and jsonl. npy and EDF are checked in their
 * own tests. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(void) {
    const char *big = ss_test_keep_path("big.txt"), *src = ss_test_keep_path("src.txt");
    const char *tgt = ss_test_keep_path("tgt.txt"), *j1 = ss_test_keep_path("a.jsonl");
    const char *docs = ss_test_keep_path("docs.txt");
    char args[4096], small[3][256];
    write_text(big, 3000, 1, 0);
    write_text(docs, 2000, 2, 1);
    write_text(src, 1500, 3, 0);
    write_text(tgt, 1500, 4, 0);
    write_jsonl(j1, 1200, 5);
    for (int i = 0; i < 3; i++) {
        snprintf(small[i], sizeof small[i], "%s",
                 ss_test_keep_path(i ? i == 1 ? "s1" : "s2" : "s0"));
        write_text(small[i], 100 + 150 * i, 10 + (uint64_t)i, 0);
    }

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
