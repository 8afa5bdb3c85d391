/* SPDX-License-Identifier: BSD-2-Clause */
/* test_dataset_sections.c - a dataset's sections store (spec/FORMAT.md
 * §13.1): global stored lengths written by `seqstore dataset build`, splits
 * and bucket indices made by `seqstore split`/`index` on the dataset, read
 * through ss_attr_get() and the loader exactly as over the merged store
 * (same batches for the same seed, stored buckets and k-fold splits, ranks x
 * workers); kept or dropped on rebuild, refused when stale, checked by
 * verify; the directory stays movable and free of lock files. Many shards:
 * 300 shards of mixed length widths (u8, u16, u32 sections, empty ones) are
 * built under `ulimit -n 64` (each shard open only while checked) and the
 * dataset's lengths are every shard's, in order, in the widest width. */
#include "testutil.h"

#include "seqstore/loader.h"
#include "seqstore/select.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const WORDS[] = {"the", "a", "cat", "sat", "on", "mat", "dog", "ran", "far"};

static void write_text(const char *path, int lines, uint64_t seed) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < lines; i++) {
        int n = (int)(ss_test_rand(&seed) % 40);
        for (int w = 0; w < n; w++)
            fprintf(f, "%s%s", w ? " " : "", WORDS[ss_test_rand(&seed) % 9]);
        fputc('\n', f);
    }
    fclose(f);
}

static void cli(const char *fmt, const char *a, const char *b) {
    char err[4096];
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, fmt, a, b), 0, err);
}

/* The same bytes under the same name in both (a section of the dataset
 * against the merged store's). */
static void same_attr(const ss_store *d, const ss_store *m, const char *name) {
    ss_attr a, b;
    CHECK_OK(ss_attr_get(&a, d, name));
    CHECK_OK(ss_attr_get(&b, m, name));
    CHECK(a.type == b.type && a.size == b.size && !memcmp(a.data, b.data, a.size));
}

/* Two epochs of the loader: mode 0 stored bucket + token budget over a
 * stored split, mode 1 stored bucket + fixed batches, mode 2 shuffle over
 * another stored split. Batches: rows, indices, lengths, token bytes. */
static void collect(ss_test_run *r, const ss_store *s, int mode, uint32_t R, uint32_t rank,
                    uint32_t W, uint32_t worker) {
    ss_loader_options lo = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    so.kind = SS_SAMPLE_SHUFFLE;
    so.seed = 11;
    so.world_size = R, so.rank = rank, so.num_workers = W, so.worker = worker;
    if (mode == 0) bo.max_tokens = 120;
    if (mode != 0) bo.batch_size = 7;
    ss_selection *sel = NULL;
    if (mode != 1) CHECK_OK(ss_split_load(&sel, s, mode == 0 ? "fold1.train" : "fold2.valid"));
    ss_collate_field cf = SS_COLLATE_FIELD_INIT;
    cf.field = ss_test_field(s, "tokens");
    lo.sampler = &so, lo.batch = &bo, lo.fields = &cf, lo.nfields = 1, lo.threads = 2;
    lo.selection = sel;
    lo.bucket = mode == 2 ? NULL : "len";
    ss_loader *l;
    CHECK_OK(ss_loader_open(&l, s, &lo));
    ss_test_run_loader(r, l);
    ss_loader_free(l);
    ss_selection_free(sel);
}

/* Stored global lengths: the merged store's, byte for byte. */
static void check_lengths(const ss_store *d, const ss_store *m) {
    uint32_t f = ss_test_field(d, "tokens");
    const void *a, *b;
    ss_dtype da, db;
    uint64_t na, nb;
    CHECK_OK(ss_lengths_view(&a, &da, &na, d, f));
    CHECK_OK(ss_lengths_view(&b, &db, &nb, m, f));
    CHECK(na == ss_count(d) && na == nb && da == db && da == SS_U8);
    CHECK(!memcmp(a, b, na));
    uint64_t *x = malloc(na * 8), *y = malloc(na * 8);
    CHECK_OK(ss_lengths(x, d, f, 0, na));
    CHECK_OK(ss_lengths(y, m, f, 0, na));
    CHECK(!memcmp(x, y, na * 8));
    for (uint64_t i = 0; i < na; i++) CHECK_EQ_U64(x[i], ((const uint8_t *)a)[i]);
    free(x);
    free(y);
}

static void check_no_lock_files(const char *dir) {
    DIR *dd = opendir(dir);
    CHECK(dd != NULL);
    struct dirent *e;
    while ((e = readdir(dd))) CHECK(strstr(e->d_name, "-lock") == NULL);
    closedir(dd);
}

static void copy_file(const char *from, const char *to) {
    size_t n;
    char *data = ss_test_read_file(from, &n);
    ss_test_write_file(to, data, n);
    free(data);
}

/* A wrong global length with a valid checksum: verify names it. */
static void check_verify_lengths(const char *dir) {
    ss_store *d;
    CHECK_OK(ss_open(&d, dir, 0));
    uint64_t n = ss_count(d), problems = 0;
    uint8_t *wrong = malloc(n);
    const void *p;
    ss_dtype dt;
    CHECK_OK(ss_lengths_view(&p, &dt, &n, d, ss_test_field(d, "tokens")));
    memcpy(wrong, p, n);
    CHECK_OK(ss_verify(&problems, d, NULL, NULL));
    ss_close(d);
    wrong[n / 2] ^= 1;
    ss_writer *w;
    CHECK_OK(ss_sections_writer_open(&w, dir));
    CHECK_OK(ss_writer_set_attr(w, "ss.lengths.tokens", SS_U8, wrong, n));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    CHECK_OK(ss_open(&d, dir, 0));
    CHECK_RC(ss_verify(&problems, d, NULL, NULL), SS_ECORRUPT);
    CHECK_EQ_U64(problems, 1);
    CHECK(strstr(ss_error_message(), "ss.lengths.tokens"));
    ss_close(d);
    free(wrong);
}

/* A damaged global lengths section is SS_ECORRUPT from ss_lengths() and
 * ss_lengths_view(), naming the sections store and the attribute, at every
 * call (the shards are not asked instead); a rebuild repairs it. */
static void check_damaged_lengths(const char *dir) {
    char sections[4096], err[4096], want[4200];
    snprintf(sections, sizeof sections, "%s/dataset.sections.ss", dir);
    snprintf(want, sizeof want, "%s: attribute 'ss.lengths.tokens': checksum mismatch", sections);
    ss_test_flip_attr(sections, "ss.lengths.tokens", 1);
    ss_store *d;
    CHECK_OK(ss_open(&d, dir, 0));
    uint32_t f = ss_test_field(d, "tokens");
    uint64_t n = ss_count(d), *lens = malloc(n * 8);
    CHECK(lens);
    for (int again = 0; again < 2; again++) {
        CHECK_RC(ss_lengths(lens, d, f, 0, n), SS_ECORRUPT);
        CHECK(strstr(ss_error_message(), want));
    }
    const void *p;
    ss_dtype dt;
    CHECK_RC(ss_lengths_view(&p, &dt, &n, d, f), SS_ECORRUPT);
    CHECK(strstr(ss_error_message(), want));
    ss_close(d);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "info %s", dir), 1, err);
    CHECK(strstr(err, want));
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", dir), 0, err);
    CHECK_OK(ss_open(&d, dir, 0));
    CHECK_OK(ss_lengths(lens, d, f, 0, ss_count(d)));
    ss_close(d);
    free(lens);
    /* the binding: damaged is said as such, not "another manifest" */
    snprintf(want, sizeof want, "%s: attribute 'dataset.manifest': checksum mismatch", sections);
    ss_test_flip_attr(sections, "dataset.manifest", 3);
    CHECK_RC(ss_open(&d, dir, 0), SS_ECORRUPT);
    CHECK(strstr(ss_error_message(), want) && !strstr(ss_error_message(), "another manifest"));
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", dir), 0, err);
    CHECK_OK(ss_open(&d, dir, 0));
    ss_close(d);
}

/* A reader of the dataset keeps its snapshot of the sections while `seqstore
 * split` rewrites them three times (a writer that reused the pages the
 * reader maps would change its views): every view it holds stays byte for
 * byte what it was, and a new reader sees the new splits. */
static void check_reader_snapshot(const char *dir) {
    static const char *const names[] = {"ss.split.fold0.train", "ss.split.fold0.valid",
                                        "ss.split.fold1.train", "ss.split.fold1.valid",
                                        "ss.split.fold2.train", "ss.split.fold2.valid",
                                        "ss.bucket.len",        "ss.lengths.tokens"};
    enum { N = sizeof names / sizeof *names };
    ss_store *d;
    CHECK_OK(ss_open(&d, dir, 0));
    ss_attr held[N];
    void *copy[N];
    for (int k = 0; k < N; k++) {
        CHECK_OK(ss_attr_get(&held[k], d, names[k]));
        copy[k] = malloc(held[k].size + 1);
        CHECK(copy[k] != NULL);
        memcpy(copy[k], held[k].data, held[k].size);
    }
    for (int seed = 5; seed < 8; seed++) {
        char err[4096];
        CHECK_EXIT(ss_test_cli(err, sizeof err, NULL,
                               "split kfold %s 3 --shuffle --seed %d --force", dir, seed),
                   0, err);
    }
    for (int k = 0; k < N; k++) CHECK(!memcmp(held[k].data, copy[k], held[k].size));
    ss_store *now;
    CHECK_OK(ss_open(&now, dir, 0));
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, now, names[0]));
    CHECK(a.size != held[0].size || memcmp(a.data, copy[0], a.size));
    ss_close(now);
    for (int k = 0; k < N; k++) free(copy[k]);
    ss_close(d);
}

/* Writers of the sections take turns, each on the one before's result:
 * eight `seqstore split add` at once leave eight splits. A writer freed
 * unfinished leaves the store as it was and no temporary file. */
static void check_writers_take_turns(const char *dir) {
    char sh[8192];
    int n = snprintf(sh, sizeof sh, "set -e; ");
    for (int k = 0; k < 8; k++)
        n += snprintf(sh + n, sizeof sh - (size_t)n, "%s split add %s turn%d 0:%d & ", SS_CLI, dir,
                      k, k + 1);
    snprintf(sh + n, sizeof sh - (size_t)n, "wait");
    CHECK(system(sh) == 0);
    ss_store *d;
    CHECK_OK(ss_open(&d, dir, 0));
    for (int k = 0; k < 8; k++) {
        char name[32];
        snprintf(name, sizeof name, "turn%d", k);
        ss_selection *sel;
        CHECK_OK(ss_split_load(&sel, d, name));
        CHECK_EQ_U64(ss_selection_count(sel), (uint64_t)k + 1);
        ss_selection_free(sel);
    }
    ss_close(d);
    ss_writer *w;
    CHECK_OK(ss_sections_writer_open(&w, dir));
    CHECK_OK(ss_writer_set_attr(w, "ss.split.never", SS_U64, (uint64_t[2]){0, 1}, 16));
    ss_writer_free(w);
    CHECK_OK(ss_open(&d, dir, 0));
    ss_attr a;
    CHECK_RC(ss_attr_get(&a, d, "ss.split.never"), SS_ENOTFOUND);
    ss_close(d);
    DIR *dd = opendir(dir);
    CHECK(dd != NULL);
    struct dirent *e;
    while ((e = readdir(dd))) CHECK(strstr(e->d_name, ".tmp") == NULL);
    closedir(dd);
}

/* Shard k of `n`: k % 5 examples, of lengths up to 200 (u8), 300 (u16) or
 * one of 70000 (u32) by k % 3; source.shard k/n. */
static void write_width_shard(const char *path, uint32_t k, uint32_t n) {
    ss_field f = {"tokens", SS_U8, 1, 0, {0}};
    ss_schema sc = {1, &f};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &sc, &o));
    static uint8_t buf[70000];
    for (uint32_t i = 0; i < k % 5; i++) {
        uint64_t len = k % 3 == 2 && i == 0 ? 70000 : 1 + (k * 31 + i * 7) % (k % 3 ? 300 : 200);
        ss_value v = {buf, len};
        CHECK_OK(ss_writer_append(w, &v));
    }
    char spec[32];
    snprintf(spec, sizeof spec, "%u/%u", k, n);
    CHECK_OK(ss_writer_set_attr(w, "source.shard", SS_ATTR_TEXT, spec, strlen(spec)));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    char lock[1200];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(lock);
}

static void check_many_shards(void) {
    enum { N = 300 };
    const char *dir = ss_test_keep_path("many");
    char path[1100], cmd[4096];
    mkdir(dir, 0755);
    for (uint32_t k = 0; k < N; k++) {
        snprintf(path, sizeof path, "%s/part-%05u.ss", dir, k);
        write_width_shard(path, k, N);
    }
    snprintf(cmd, sizeof cmd, "ulimit -n 64 && exec %s dataset build %s > /dev/null", SS_CLI, dir);
    CHECK(system(cmd) == 0);
    ss_store *d;
    CHECK_OK(ss_open(&d, dir, SS_OPEN_NOLOCK));
    const void *all;
    ss_dtype dtype;
    uint64_t count, at = 0;
    CHECK_OK(ss_lengths_view(&all, &dtype, &count, d, 0));
    CHECK(dtype == SS_U32);
    CHECK_EQ_U64(count, ss_count(d));
    for (uint32_t k = 0; k < N; k++) {
        ss_store *s;
        snprintf(path, sizeof path, "%s/part-%05u.ss", dir, k);
        CHECK_OK(ss_open(&s, path, SS_OPEN_NOLOCK));
        for (uint64_t i = 0; i < ss_count(s); i++, at++)
            CHECK_EQ_U64(((const uint32_t *)all)[at], ss_length(s, 0, i));
        ss_close(s);
    }
    CHECK_EQ_U64(at, count);
    ss_close(d);
    fprintf(stderr, "ok: %u shards under ulimit -n 64, %llu lengths\n", (unsigned)N,
            (unsigned long long)count);
}

int main(void) {
    const char *text = ss_test_keep_path("corpus.txt"), *dir = ss_test_keep_path("ds");
    const char *merged = ss_test_keep_path("merged.ss"), *moved = ss_test_keep_path("moved");
    const char *saved = ss_test_keep_path("saved-sections.ss");
    char err[4096], path[4096];
    check_many_shards();
    write_text(text, 3000, 5);
    mkdir(dir, 0755);
    for (uint32_t k = 0; k < 5; k++) {
        char err2[4096];
        CHECK_EXIT(ss_test_cli(err2, sizeof err2, "SS_TEST_BLOCK_BYTES=500",
                               "convert text %s --tokens words -o %s/part-%u.ss --force "
                               "--shard %u/5",
                               text, dir, k, k),
                   0, err2);
    }
    cli("dataset build %s%s", dir, "");
    cli("merge %s -o %s --force", dir, merged);
    /* the same splits and bucket index, made on each */
    const char *targets[2] = {dir, merged};
    for (int t = 0; t < 2; t++) {
        cli("split kfold %s 3 --shuffle --seed 4%s", targets[t], "");
        cli("index %s --by tokens --resolution 4 --name len%s", targets[t], "");
    }
    check_no_lock_files(dir);

    ss_store *d, *m;
    CHECK_OK(ss_open(&d, dir, 0));
    CHECK_OK(ss_open(&m, merged, 0));
    CHECK_EQ_U64(ss_count(d), ss_count(m));
    check_lengths(d, m);
    same_attr(d, m, "ss.bucket.len");
    same_attr(d, m, "ss.split.fold0.train");
    same_attr(d, m, "ss.split.fold2.valid");
    CHECK_EQ_U64(ss_attr_count(d), ss_attr_count(m)); /* nothing hidden, nothing extra */
    ss_attr a;
    CHECK_RC(ss_attr_get(&a, d, "dataset.manifest"), SS_ENOTFOUND); /* the store's own */
    ss_test_same_loader_batches(d, m, 3, collect);
    uint64_t problems = 9;
    CHECK_OK(ss_verify(&problems, d, NULL, NULL));
    CHECK_EQ_U64(problems, 0);
    ss_close(d);
    ss_close(m);
    check_no_lock_files(dir);
    check_reader_snapshot(dir);
    check_writers_take_turns(dir);
    check_no_lock_files(dir);

    /* movable: the sections travel with the directory */
    CHECK(rename(dir, moved) == 0);
    CHECK_OK(ss_open(&d, moved, 0));
    ss_selection *sel;
    CHECK_OK(ss_split_load(&sel, d, "fold1.valid"));
    ss_selection_free(sel);
    ss_close(d);
    CHECK(rename(moved, dir) == 0);

    /* lengths come from the section without opening the shards: move the
     * last shard away; the lengths of its examples are still there */
    snprintf(path, sizeof path, "%s/part-4.ss", dir);
    CHECK(rename(path, moved) == 0);
    CHECK_OK(ss_open(&d, dir, 0));
    uint64_t n = ss_count(d), *lens = malloc(n * 8);
    CHECK_OK(ss_lengths(lens, d, ss_test_field(d, "tokens"), 0, n));
    ss_view v;
    CHECK(ss_get(&v, d, 0, n - 1) != 0);
    ss_close(d);
    free(lens);
    CHECK(rename(moved, path) == 0);

    /* a rebuild with the same shards keeps the splits and the index */
    snprintf(path, sizeof path, "%s/dataset.sections.ss", dir);
    copy_file(path, saved);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", dir), 0, err);
    CHECK_OK(ss_open(&d, dir, 0));
    CHECK_OK(ss_attr_get(&a, d, "ss.split.fold2.train"));
    CHECK_OK(ss_attr_get(&a, d, "ss.bucket.len"));
    ss_close(d);
    /* other shards: they number other examples, dropped with a note */
    CHECK_EXIT(
        ss_test_cli(err, sizeof err, NULL, "dataset build %s part-0.ss part-1.ss part-2.ss", dir),
        0, err);
    CHECK(strstr(err, "dropped 15")); /* 6 folds, the index, 8 turns */
    CHECK_OK(ss_open(&d, dir, 0));
    CHECK_RC(ss_attr_get(&a, d, "ss.split.fold2.train"), SS_ENOTFOUND);
    CHECK_OK(ss_attr_get(&a, d, "ss.lengths.tokens"));
    CHECK_EQ_U64(a.size, ss_count(d)); /* the three shards' lengths, u8 */
    ss_close(d);
    /* a stale sections store (the old manifest's) is refused, not trusted */
    copy_file(saved, path);
    CHECK_RC(ss_open(&d, dir, 0), SS_ECORRUPT);
    CHECK(strstr(ss_error_message(), "another manifest"));
    /* a dataset built before sections: readable; splits need a rebuild */
    CHECK(remove(path) == 0);
    CHECK_OK(ss_open(&d, dir, 0));
    const void *p;
    ss_dtype dt;
    CHECK_RC(ss_lengths_view(&p, &dt, &n, d, ss_test_field(d, "tokens")), SS_ENOTFOUND);
    ss_close(d);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "split add %s x 0:3", dir), 1, err);
    CHECK(strstr(err, "dataset build"));
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", dir), 0, err);
    check_no_lock_files(dir);
    check_verify_lengths(dir); /* (its writer, not the CLI, leaves LMDB's lock file) */
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", dir), 0, err);
    check_damaged_lengths(dir);
    puts("test_dataset_sections: ok");
    return 0;
}
