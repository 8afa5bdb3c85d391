/* SPDX-License-Identifier: BSD-2-Clause */
/* test_dataset.c - a dataset of shards (spec/FORMAT.md §13) opened with
 * ss_open() as one store: `seqstore convert --shard K/N` + `seqstore dataset
 * build`, then every reading function against the single-process store
 * (examples, ranges, lengths across shard boundaries, the flat view,
 * attributes), the loader's batches in fixed-size, token-budget and
 * block-shuffle modes with ranks x workers, the window reader, merge, moved
 * and read-only directories,
 * and a changed or missing shard reported by name. */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const WORDS[] = {"the", "a", "cat", "sat", "on", "mat", "dog", "ran"};

static void write_text(const char *path, int lines, uint64_t seed) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < lines; i++) {
        int n = (int)(ss_test_rand(&seed) % 15);
        for (int w = 0; w < n; w++)
            fprintf(f, "%s%s", w ? " " : "", WORDS[ss_test_rand(&seed) % 8]);
        fputc('\n', f);
    }
    fclose(f);
}

/* Convert `text` once and as N shards into `dir`, build the dataset. */
static void make_dataset(const char *text, const char *single, const char *dir, uint32_t n) {
    char err[4096];
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "convert text %s --tokens words -o %s --force",
                           text, single),
               0, err);
    mkdir(dir, 0755);
    for (uint32_t k = 0; k < n; k++)
        CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=500",
                               "convert text %s --tokens words -o %s/part-%u.ss --force "
                               "--shard %u/%u",
                               text, dir, k, k, n),
                   0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", dir), 0, err);
}

/* Every example, range, length and flat position of `d` equals `s`'s. */
static void check_same_reads(const ss_store *d, const ss_store *s) {
    CHECK_EQ_U64(ss_count(d), ss_count(s));
    CHECK_EQ_U64(ss_field_count(d), ss_field_count(s));
    uint64_t n = ss_count(s);
    for (uint32_t f = 0; f < ss_field_count(s); f++) {
        CHECK_EQ_U64(ss_field_row_bytes(d, f), ss_field_row_bytes(s, f));
        CHECK_EQ_U64(ss_flat_size(d, f), ss_flat_size(s, f));
        for (uint64_t i = 0; i < n; i++) {
            ss_view a, b;
            CHECK_OK(ss_get(&a, d, f, i));
            CHECK_OK(ss_get(&b, s, f, i));
            CHECK(a.length == b.length && a.dtype == b.dtype && a.row_bytes == b.row_bytes);
            CHECK(memcmp(a.data, b.data, a.length * a.row_bytes) == 0);
            CHECK_EQ_U64(ss_length(d, f, i), b.length);
            if (b.length >= 2) {
                CHECK_OK(ss_get_range(&a, d, f, i, 1, b.length));
                CHECK(a.length == b.length - 1 &&
                      !memcmp(a.data, (const char *)b.data + b.row_bytes, a.length * a.row_bytes));
            }
        }
        /* lengths over every window of 1..300 examples: they cross shards */
        uint64_t *la = malloc(n * 8), *lb = malloc(n * 8);
        CHECK(la && lb);
        for (uint64_t first = 0; first < n; first += 97) {
            uint64_t m = n - first < 300 ? n - first : 300;
            CHECK_OK(ss_lengths(la, d, f, first, m));
            CHECK_OK(ss_lengths(lb, s, f, first, m));
            CHECK(memcmp(la, lb, m * 8) == 0);
        }
        CHECK_OK(ss_lengths(la, d, f, 0, n));
        CHECK_OK(ss_lengths(lb, s, f, 0, n));
        CHECK(memcmp(la, lb, n * 8) == 0);
        CHECK_RC(ss_lengths(la, d, f, n, 1), SS_ERANGE);
        free(la);
        free(lb);
        /* the flat view: every position's example and offset, and a read across shards */
        uint64_t rows = ss_flat_size(s, f);
        for (uint64_t p = 0; p < rows; p += 7) {
            uint64_t ea, oa, eb, ob;
            CHECK_OK(ss_flat_locate(&ea, &oa, d, f, p));
            CHECK_OK(ss_flat_locate(&eb, &ob, s, f, p));
            CHECK(ea == eb && oa == ob);
        }
        size_t bytes = (size_t)(rows * ss_field_row_bytes(s, f));
        char *fa = malloc(bytes + 1), *fb = malloc(bytes + 1);
        CHECK(fa && fb);
        CHECK_OK(ss_flat_read(fa, d, f, 0, rows));
        CHECK_OK(ss_flat_read(fb, s, f, 0, rows));
        CHECK(memcmp(fa, fb, bytes) == 0);
        free(fa);
        free(fb);
    }
    ss_view v;
    CHECK_RC(ss_get(&v, d, 0, n), SS_ERANGE);
    CHECK_RC(ss_get(&v, d, ss_field_count(s), 0), SS_ERANGE);
}

/* The dataset's attributes: the first shard's, which equal the single
 * store's but for the options line (and source.shard, hidden). */
static void check_attrs(const ss_store *d, const ss_store *s) {
    CHECK_EQ_U64(ss_attr_count(d), ss_attr_count(s));
    for (uint64_t k = 0; k < ss_attr_count(d); k++) {
        ss_attr a, b;
        CHECK_OK(ss_attr_at(&a, d, k));
        CHECK_OK(ss_attr_at(&b, s, k));
        CHECK(!strcmp(a.name, b.name));
        if (strcmp(a.name, "convert.options"))
            CHECK(a.type == b.type && a.size == b.size && !memcmp(a.data, b.data, a.size));
    }
    ss_attr a;
    CHECK_RC(ss_attr_get(&a, d, "source.shard"), SS_ENOTFOUND);
    CHECK_OK(ss_attr_get(&a, d, "vocab"));
}

static void collect(ss_test_run *r, const ss_store *s, int mode, uint32_t R, uint32_t rank,
                    uint32_t W, uint32_t worker) {
    ss_loader_options lo = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    so.kind = mode == 2 ? SS_SAMPLE_BLOCK_SHUFFLE : SS_SAMPLE_SHUFFLE;
    so.seed = 7;
    so.world_size = R, so.rank = rank, so.num_workers = W, so.worker = worker;
    if (mode == 2) so.block_bytes = 400, so.store = s;
    if (mode == 1)
        bo.max_tokens = 60;
    else
        bo.batch_size = 9;
    uint32_t tok = ss_test_field(s, "tokens");
    ss_collate_field cf = SS_COLLATE_FIELD_INIT;
    cf.field = tok;
    lo.sampler = &so, lo.batch = &bo, lo.fields = &cf, lo.nfields = 1, lo.threads = 2;
    ss_loader *l;
    CHECK_OK(ss_loader_open(&l, s, &lo));
    ss_test_run_loader(r, l);
    ss_loader_free(l);
}

/* The window reader (truncated BPTT, sequential with carried state, and
 * random windows) hands out the same batches over the dataset as over the
 * single store. */
static void window_run(ss_test_run *r, const ss_store *s, ss_window_mode mode) {
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.field = ss_test_field(s, "tokens");
    o.window = 6, o.overlap = 1, o.lanes = 5, o.mode = mode, o.seed = 3, o.shuffle = 1;
    o.state_size = mode == SS_WINDOW_RANDOM ? 0 : 8;
    o.epoch_windows = 300;
    ss_window_reader *w;
    CHECK_OK(ss_window_reader_open(&w, s, &o));
    unsigned char states[5 * 8] = {0};
    for (int k = 0; k < 400; k++) {
        const ss_window_batch *b;
        if (CHECK_NEXT(ss_window_reader_next(&b, w))) {
            ss_test_run_put(r, UINT64_MAX); /* the end of an epoch */
            continue;
        }
        ss_test_run_put(r, b->size);
        ss_test_run_put(r, b->epoch);
        const unsigned char *p = b->data;
        for (uint64_t i = 0; i < (uint64_t)b->size * b->window * b->channels; i++)
            ss_test_run_put(r, p[i]);
        CHECK_OK(ss_window_reader_register(w, b, o.state_size ? states : NULL));
    }
    ss_window_reader_free(w);
}

static void check_windows(const ss_store *d, const ss_store *s) {
    for (int m = 0; m < 2; m++) {
        ss_window_mode mode = m ? SS_WINDOW_RANDOM : SS_WINDOW_SEQUENTIAL;
        ss_test_run a = {0, 0, NULL}, b = {0, 0, NULL};
        window_run(&a, d, mode);
        window_run(&b, s, mode);
        CHECK(a.n > 400 && a.n == b.n && !memcmp(a.v, b.v, a.n * 8));
        free(a.v);
        free(b.v);
    }
}

/* No lock file appears anywhere in `dir` while a dataset is read. */
static void check_no_lock_files(const char *dir) {
    DIR *dd = opendir(dir);
    CHECK(dd != NULL);
    struct dirent *e;
    while ((e = readdir(dd))) CHECK(strstr(e->d_name, "-lock") == NULL);
    closedir(dd);
}

int main(void) {
    const char *text = ss_test_keep_path("corpus.txt"), *single = ss_test_keep_path("single.ss");
    const char *dir = ss_test_keep_path("ds"), *moved = ss_test_keep_path("moved");
    write_text(text, 4000, 3);
    make_dataset(text, single, dir, 7);
    ss_store *s, *d;
    CHECK_OK(ss_open(&s, single, 0));
    CHECK_OK(ss_open(&d, dir, 0));
    CHECK(ss_count(d) > 0);
    check_same_reads(d, s);
    check_attrs(d, s);
    ss_test_same_loader_batches(d, s, 3, collect);
    check_windows(d, s);
    ss_store_info in;
    CHECK_OK(ss_store_get_info(&in, d));
    CHECK(in.complete && in.count == ss_count(s) && in.data_chunks >= 7);
    uint64_t problems = 9;
    CHECK_OK(ss_verify(&problems, d, NULL, NULL));
    CHECK_EQ_U64(problems, 0);
    ss_close(d);
    check_no_lock_files(dir);
    /* the CLI reads it as a store: cat prints the same text, info names the shards */
    char err[4096], sh[4096];
    snprintf(sh, sizeof sh,
             "%s cat %s --with-source > %s/a.txt && %s cat %s --with-source > %s/b.txt && "
             "%s info %s > %s/i.txt",
             SS_CLI, dir, ss_test_tmpdir(), SS_CLI, single, ss_test_tmpdir(), SS_CLI, dir,
             ss_test_tmpdir());
    CHECK(system(sh) == 0);
    size_t na, nb;
    char *ta = ss_test_read_file(ss_test_path("a.txt"), &na);
    char *tb = ss_test_read_file(ss_test_path("b.txt"), &nb);
    CHECK(na == nb && na > 1000 && !memcmp(ta, tb, na));
    free(ta);
    free(tb);
    ta = ss_test_read_file(ss_test_path("i.txt"), &na);
    CHECK_CONTAINS(ta, "dataset     7 shards");
    free(ta);
    /* merge: one store with the same examples and attributes */
    const char *merged = ss_test_keep_path("merged.ss");
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "merge %s -o %s", dir, merged), 0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "merge %s -o %s", dir, merged), 1, err);
    CHECK_CONTAINS(err, "exists");
    CHECK_OK(ss_open(&d, merged, 0));
    check_same_reads(d, s);
    check_attrs(d, s);
    ss_close(d);

    /* moved whole (relative paths), opened by its manifest file, read-only */
    char cmd[2048], manifest[1024];
    snprintf(cmd, sizeof cmd, "mv %s %s && chmod -R a-w %s", dir, moved, moved);
    CHECK(system(cmd) == 0);
    snprintf(manifest, sizeof manifest, "%s/dataset.manifest", moved);
    CHECK_OK(ss_open(&d, manifest, 0));
    check_same_reads(d, s);
    ss_close(d);
    check_no_lock_files(moved);
    snprintf(cmd, sizeof cmd, "chmod -R u+w %s", moved);
    CHECK(system(cmd) == 0);

    /* a shard changed after the build: found on first touch, by name */
    char part[1200];
    snprintf(part, sizeof part, "%s/part-3.ss", moved);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL,
                           "convert text %s --tokens words -o %s --force --shard 2/7", text, part),
               0, err);
    CHECK_OK(ss_open(&d, moved, 0));
    ss_view v;
    CHECK_OK(ss_get(&v, d, 0, 0)); /* shard 0 is fine */
    int rc = 0;
    for (uint64_t i = 0; i < ss_count(d) && !rc; i++) rc = ss_get(&v, d, 0, i);
    CHECK_RC(rc, SS_ECORRUPT);
    CHECK_CONTAINS(ss_error_message(), "shard 3 'part-3.ss'");
    CHECK_RC(ss_verify(&problems, d, NULL, NULL), SS_ECORRUPT);
    CHECK_EQ_U64(problems, 1);
    ss_close(d);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "verify %s", moved), 3, err);
    CHECK_CONTAINS(err, "part-3.ss");
    /* dataset build refuses two shards 2/7 */
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", moved), 1, err);
    CHECK_CONTAINS(err, "not exactly 0/7 .. 6/7");
    /* a missing shard */
    unlink(part);
    CHECK_OK(ss_open(&d, moved, 0));
    rc = 0;
    for (uint64_t i = 0; i < ss_count(d) && !rc; i++) rc = ss_get(&v, d, 0, i);
    CHECK_RC(rc, SS_ENOTFOUND);
    CHECK_CONTAINS(ss_error_message(), "part-3.ss");
    ss_close(d);
    /* explicit shard order (no source.shard needed): the single store twice */
    const char *two = ss_test_keep_path("two");
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s %s/x.ss && cp %s %s/y.ss", two, single, two,
             single, two);
    CHECK(system(cmd) == 0);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", two), 1, err);
    CHECK_CONTAINS(err, "has no source.shard K/N");
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s y.ss x.ss --verify", two), 0,
               err);
    CHECK_OK(ss_open(&d, two, 0));
    CHECK_EQ_U64(ss_count(d), 2 * ss_count(s));
    ss_view a;
    CHECK_OK(ss_get(&v, d, 0, ss_count(s) + 5));
    CHECK_OK(ss_get(&a, s, 0, 5));
    CHECK(v.length == a.length && !memcmp(v.data, a.data, a.length * a.row_bytes));
    ss_close(d);
    /* shards that disagree: another vocabulary, another tokenization */
    snprintf(cmd, sizeof cmd, "%s/y.ss", two);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL,
                           "convert text %s --tokens words --max-vocab 5 -o %s --force", text, cmd),
               0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s x.ss y.ss", two), 1, err);
    CHECK_CONTAINS(err, "shard 'y.ss': attribute 'vocab' differs from shard 'x.ss'");
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "convert text %s --tokens bytes -o %s --force",
                           text, cmd),
               0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s x.ss y.ss", two), 1, err);
    CHECK_CONTAINS(err, "shard 'y.ss'");
    /* a damaged manifest */
    snprintf(cmd, sizeof cmd, "sed -i 's/^examples /examples 1/' %s", manifest);
    CHECK(system(cmd) == 0);
    CHECK_RC(ss_open(&d, moved, 0), SS_ECORRUPT);
    CHECK_CONTAINS(ss_error_message(), "dataset.manifest");
    ss_close(s);
    puts("ok");
    return 0;
}
