/* SPDX-License-Identifier: BSD-2-Clause */
/* test_dataset_scale.c - a dataset of shards read as a large job reads it:
 * a bad shard fails once with its name (never a loop of reopenings, under
 * an alarm), `seqstore info` reports a missing shard, the loader plans a
 * token-budget epoch from the stored lengths without opening a shard, and a
 * rank's block-shuffled epoch opens only the shards its positions hold
 * (counted with the dataset's open counter), and a dataset of 10,000 shards
 * is read under `ulimit -n 256`. */
#include "store.h" /* ss__dataset_shard_opens */
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const WORDS[] = {"the", "a", "cat", "sat", "on", "mat", "dog", "ran"};

static void write_text(const char *path, int lines, uint64_t seed) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < lines; i++) {
        int n = 1 + (int)(ss_test_rand(&seed) % 15);
        for (int w = 0; w < n; w++)
            fprintf(f, "%s%s", w ? " " : "", WORDS[ss_test_rand(&seed) % 8]);
        fputc('\n', f);
    }
    fclose(f);
}

/* A text cut into N shards in `dir` (test-sized slices: SS_TEST_BLOCK_BYTES),
 * built into a dataset. */
static void make_dataset(const char *dir, uint32_t n) {
    char err[4096];
    const char *text = ss_test_keep_path("corpus.txt");
    write_text(text, 3000, 5);
    mkdir(dir, 0755);
    for (uint32_t k = 0; k < n; k++)
        CHECK_EXIT(ss_test_cli(err, sizeof err, "SS_TEST_BLOCK_BYTES=500",
                               "convert text %s --tokens bytes -o %s/part-%u.ss --force "
                               "--shard %u/%u --quiet",
                               text, dir, k, k, n),
                   0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", dir), 0, err);
}

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test_dataset_scale: timed out (a loop over a bad shard?)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(3);
}

/* A token-budget loader over `s` (examples of `sel`, or all): its open's
 * return code. */
static int open_token_loader(ss_loader **out, const ss_store *s, ss_sampler_kind kind,
                             uint32_t world, uint32_t rank, const ss_selection *sel) {
    ss_loader_options lo = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    so.kind = kind;
    so.seed = 11;
    so.world_size = world, so.rank = rank;
    if (kind == SS_SAMPLE_BLOCK_SHUFFLE) so.block_size = 40, so.window_blocks = 2;
    bo.max_tokens = 200;
    lo.sampler = &so, lo.batch = &bo, lo.selection = sel;
    return ss_loader_open(out, s, &lo);
}

/* Shard k of example i (first[] the shards' first examples). */
static uint32_t shard_of(const uint64_t *first, uint32_t nshards, uint64_t i) {
    uint32_t k = 0;
    while (k + 1 < nshards && first[k + 1] <= i) k++;
    return k;
}

typedef struct fifo {
    uint32_t ring[64], held, oldest, live;
} fifo;

static int fifo_has(const fifo *f, uint32_t k) {
    for (uint32_t j = 0; j < f->held; j++)
        if (f->ring[(f->oldest + j) % f->live] == k) return 1;
    return k == 0; /* shard 0 is never closed */
}

static void fifo_open(fifo *f, uint32_t k) {
    if (f->held == f->live) f->oldest = (f->oldest + 1) % f->live, f->held--;
    f->ring[(f->oldest + f->held++) % f->live] = k;
}

/* The most opens a dataset whose budget keeps `live` shards open besides
 * shard 0 (closing the one opened longest ago for another) makes for
 * batches whose shards are seq[start[b] .. start[b + 1]), read batch after
 * batch in any order within a batch: at worst a batch opens the shards it
 * lacks first, and then again those of its other shards that this closed. */
static uint64_t fifo_opens(const uint32_t *seq, const uint64_t *start, uint64_t nb,
                           uint32_t live) {
    fifo f = {{0}, 0, 0, live};
    uint64_t opens = 0;
    for (uint64_t b = 0; b < nb; b++) {
        char lacking[64] = {0}, seen[64] = {0};
        for (uint64_t i = start[b]; i < start[b + 1]; i++) lacking[seq[i]] = !fifo_has(&f, seq[i]);
        for (int pass = 0; pass < 2; pass++)
            for (uint64_t i = start[b]; i < start[b + 1]; i++) {
                uint32_t k = seq[i];
                if (seen[k] > pass || lacking[k] != !pass) continue;
                seen[k] = (char)(pass + 1);
                if (!fifo_has(&f, k)) opens++, fifo_open(&f, k);
            }
    }
    return opens;
}

/* A rank's fixed-size block-shuffled epoch (4 ranks, every example, one
 * worker) opens exactly the shards its batches hold; under a budget of 16
 * open shards (11 besides shard 0 and the 4 retired ones, whose maps keep a
 * batch's rows from up to 4 shards valid: a window of 2 blocks of 40
 * examples spans at most 4), no more than the budget's rule makes for its
 * batches read in order: a shard is opened again only after 11 others were
 * opened since. */
static void fixed_block_opens(const char *dir, const uint64_t *first, uint32_t nshards,
                              uint32_t rank, const char *budget) {
    if (budget) CHECK(setenv("SS_MAX_OPEN_SHARDS", budget, 1) == 0);
    ss_store *d;
    CHECK_OK(ss_open(&d, dir, 0));
    if (budget) CHECK(unsetenv("SS_MAX_OPEN_SHARDS") == 0);
    uint64_t at_open = ss__dataset_shard_opens(d);
    ss_loader_options lo = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    so.kind = SS_SAMPLE_BLOCK_SHUFFLE, so.seed = 3, so.block_size = 40, so.window_blocks = 2;
    so.world_size = 4, so.rank = rank;
    bo.batch_size = 8;
    lo.sampler = &so, lo.batch = &bo, lo.threads = 1;
    ss_loader *l;
    CHECK_OK(ss_loader_open(&l, d, &lo));
    uint64_t n = ss_count(d), k = 0;
    uint32_t *seq = malloc(n * sizeof *seq);
    uint64_t *start = malloc((n + 1) * sizeof *start), nb = 0;
    char *need = calloc(nshards, 1);
    const ss_loader_batch *b;
    int rc;
    start[0] = 0;
    while ((rc = ss_loader_next(&b, l)) == 0) {
        for (uint64_t i = 0; i < b->rows; i++) {
            CHECK(k < n);
            seq[k] = shard_of(first, nshards, b->indices[i]);
            need[seq[k++]] = 1;
        }
        start[++nb] = k;
    }
    CHECK_RC(rc, SS_ITEROVER);
    uint64_t opens = ss__dataset_shard_opens(d) - at_open, needed = 0;
    for (uint32_t s = 0; s < nshards; s++) needed += need[s] && s != 0;
    if (!budget)
        CHECK_EQ_U64(opens, needed);
    else
        CHECK(opens >= needed && opens <= fifo_opens(seq, start, nb, 11));
    ss_loader_free(l);
    ss_close(d);
    free(seq);
    free(start);
    free(need);
}

/* A shard replaced by a truncated copy: the loader's planning (no stored
 * lengths, so it asks the shards) fails at once naming the shard, after one
 * attempt to open it, and every later read of it fails the same way without
 * a new attempt. */
static void test_bad_shard_fails_once(void) {
    const char *dir = ss_test_keep_path("bad.ds");
    make_dataset(dir, 4);
    char sec[4096], part[4096];
    snprintf(sec, sizeof sec, "%s/dataset.sections.ss", dir);
    unlink(sec); /* no stored lengths: the shards are asked */
    snprintf(part, sizeof part, "%s/part-2.ss", dir);
    struct stat st;
    CHECK(stat(part, &st) == 0);
    CHECK(truncate(part, st.st_size / 2) == 0);
    ss_store *d;
    CHECK_OK(ss_open(&d, dir, 0));
    alarm(20);
    ss_loader *l = NULL;
    int rc = open_token_loader(&l, d, SS_SAMPLE_SEQUENTIAL, 1, 0, NULL);
    CHECK(rc != 0 && l == NULL);
    CHECK_CONTAINS(ss_error_message(), "part-2.ss");
    uint64_t opens = ss__dataset_shard_opens(d);
    CHECK(opens <= 4);
    /* the shard's examples: the same failure, no new attempt */
    uint64_t first = 0, len;
    ss_view v;
    while (first < ss_count(d) && ss_get(&v, d, 0, first) == 0) first++;
    CHECK(first < ss_count(d));
    for (uint64_t i = first; i < first + 100 && i < ss_count(d); i++) {
        CHECK(ss_get(&v, d, 0, i) != 0);
        CHECK_CONTAINS(ss_error_message(), "part-2.ss");
        CHECK(ss_lengths(&len, d, 0, i, 1) != 0);
    }
    CHECK_EQ_U64(ss__dataset_shard_opens(d), opens);
    alarm(0);
    ss_close(d);
}

/* `seqstore info` of a dataset with a missing shard names it and exits 1,
 * as `verify` does; with every shard there it exits 0. */
static void test_info_missing_shard(void) {
    const char *dir = ss_test_keep_path("missing.ds");
    make_dataset(dir, 2);
    char err[8192], sh[8192];
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "info %s", dir), 0, err);
    snprintf(sh, sizeof sh, "%s/part-1.ss", dir);
    CHECK(unlink(sh) == 0);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "info %s", dir), 1, err);
    CHECK_CONTAINS(err, "part-1.ss");
    snprintf(sh, sizeof sh, "%s info %s > %s/info.txt 2>/dev/null", SS_CLI, dir, ss_test_tmpdir());
    CHECK(WEXITSTATUS(system(sh)) == 1);
    size_t n;
    char *t = ss_test_read_file(ss_test_path("info.txt"), &n);
    CHECK(strstr(t, ", complete") == NULL);
    CHECK_CONTAINS(t, "1 of 2 shards unreadable");
    free(t);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "info %s --json", dir), 1, err);
    CHECK_CONTAINS(err, "part-1.ss");
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "verify %s", dir), 3, err);
}

/* The shards holding the examples of a rank's epoch. */
static uint32_t shards_needed(const ss_store *d, ss_loader *l, const uint64_t *first,
                              uint32_t nshards) {
    char *need = calloc(nshards, 1);
    const ss_loader_batch *b;
    int rc;
    (void)d;
    while ((rc = ss_loader_next(&b, l)) == 0)
        for (uint64_t i = 0; i < b->rows; i++) {
            uint32_t k = 0;
            while (k + 1 < nshards && first[k + 1] <= b->indices[i]) k++;
            need[k] = 1;
        }
    CHECK_RC(rc, SS_ITEROVER);
    uint32_t n = 0;
    for (uint32_t k = 0; k < nshards; k++) n += need[k];
    free(need);
    return n;
}

/* Every example of the dataset (shards of unequal sizes) through the inline
 * ss_get(), the exported one and ss_length() is the shard's own example. */
static void check_lookup(const char *dir, const uint64_t *first, uint32_t n) {
    ss_store *d, *sh[64];
    CHECK(n <= 64);
    CHECK_OK(ss_open(&d, dir, 0));
    for (uint32_t k = 0; k < n; k++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/part-%u.ss", dir, k);
        CHECK_OK(ss_open(&sh[k], p, 0));
    }
    for (int pass = 0; pass < 2; pass++) /* shards unopened, then open */
        for (uint32_t k = 0; k < n; k++)
            for (uint64_t i = first[k]; i < first[k + 1]; i++) {
                ss_view a, b, c;
                CHECK_OK(ss_get(&a, d, 0, i));
                CHECK_OK((ss_get)(&b, d, 0, i));
                CHECK_OK(ss_get(&c, sh[k], 0, i - first[k]));
                CHECK(a.length == c.length && b.length == c.length);
                CHECK(!memcmp(a.data, c.data, c.length) && !memcmp(b.data, c.data, c.length));
                CHECK_EQ_U64(ss_length(d, 0, i), c.length);
            }
    for (uint32_t k = 0; k < n; k++) ss_close(sh[k]);
    ss_close(d);
}

/* Stored lengths plan the epoch (no shard opened), and a rank's epoch
 * opens only the shards its positions need (counted after the epoch: the
 * workers prefetch as soon as the loader is open): over a selection of a few
 * shards' examples, block-shuffled and sharded over 4 ranks, exactly those
 * of the selected shards that the rank's batches hold. */
static void test_opens_per_rank(void) {
    const char *dir = ss_test_keep_path("ranks.ds");
    enum { N = 16 };
    make_dataset(dir, N);
    uint64_t first[N + 1] = {0};
    for (uint32_t k = 0; k < N; k++) {
        char p[4096];
        ss_store *sh;
        snprintf(p, sizeof p, "%s/part-%u.ss", dir, k);
        CHECK_OK(ss_open(&sh, p, 0));
        first[k + 1] = first[k] + ss_count(sh);
        CHECK(ss_count(sh) > 0);
        ss_close(sh);
    }
    check_lookup(dir, first, N);
    ss_range r[2] = {{first[3], first[6]}, {first[11], first[12]}}; /* 4 of 16 shards */
    ss_selection *sel;
    CHECK_OK(ss_selection_create(&sel, r, 2, first[N]));
    for (uint32_t rank = 0; rank < 4; rank++) {
        ss_store *d;
        CHECK_OK(ss_open(&d, dir, 0));
        uint64_t at_open = ss__dataset_shard_opens(d);
        CHECK(at_open <= 1); /* the first shard, for the attributes */
        ss_loader *l;
        CHECK_OK(open_token_loader(&l, d, SS_SAMPLE_BLOCK_SHUFFLE, 4, rank, sel));
        uint32_t need = shards_needed(d, l, first, N);
        CHECK(need >= 1 && need <= 4);
        CHECK_EQ_U64(ss__dataset_shard_opens(d), need + at_open);
        ss_loader_free(l);
        /* a token-budget epoch of every example is planned without an open:
         * the workers prefetching this rank's first batches (global batches
         * rank, rank + 4, rank + 8 of a sequential order) need only the
         * first two shards, where asking the shards for lengths opens all */
        ss_close(d);
        CHECK_OK(ss_open(&d, dir, 0));
        CHECK_OK(open_token_loader(&l, d, SS_SAMPLE_SEQUENTIAL, 4, rank, NULL));
        CHECK(ss__dataset_shard_opens(d) <= 2);
        ss_loader_free(l);
        ss_close(d);
        fixed_block_opens(dir, first, N, rank, NULL);
        fixed_block_opens(dir, first, N, rank, "16");
    }
    ss_selection_free(sel);
}

/* Many tiny shards: shard k holds 1 + k % 3 examples, example j of it
 * 1 + (k + j) % 3 steps of value k * 7 + j + t. 10,000 of them where a
 * memory file system has room (a shard is a 52 KiB store: 0.5 GB, written
 * in about 6 s; on a disk each takes 5-10 ms for the writer's syncs), else
 * 1,200 in the test directory. */
enum { MANY_SHM = 10000, MANY_DISK = 1200, SHARD_BYTES = 64 * 1024 };
static uint32_t MANY = MANY_DISK;
static const ss_field tiny_field = {"tok", SS_U16, 1, 0, {0}};
static const ss_schema tiny_schema = {1, &tiny_field};

/* The default open-shard budget B (ss_open()): half the soft limit of open
 * files, at least 64. */
static uint64_t default_budget(void) {
    struct rlimit rl;
    uint64_t b = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                     ? rl.rlim_cur / 2 : 1u << 20;
    return b < 64 ? 64 : b;
}

static void make_many(const char *dir) {
    mkdir(dir, 0755);
    char path[4096], err[4096];
    for (uint32_t k = 0; k < MANY; k++) {
        snprintf(path, sizeof path, "%s/s%05u.ss", dir, k);
        ss_writer_options o = SS_WRITER_OPTIONS_INIT;
        o.flags = SS_WRITE_NOSYNC | SS_WRITE_FORCE;
        ss_writer *w;
        CHECK_OK(ss_writer_create(&w, path, &tiny_schema, &o));
        for (uint32_t j = 0; j < 1 + k % 3; j++) {
            uint16_t buf[3];
            for (uint32_t t = 0; t < 3; t++) buf[t] = (uint16_t)(k * 7 + j + t);
            ss_value v = {buf, 1 + (k + j) % 3};
            CHECK_OK(ss_writer_append(w, &v));
        }
        CHECK_OK(ss_writer_finish(w));
        ss_writer_free(w);
        /* the writer's lock file: readers of a dataset take none */
        char lock[4200];
        snprintf(lock, sizeof lock, "%s-lock", path);
        unlink(lock);
    }
    /* the shards in name order: a list file would be long, the shell globs them */
    char sh[8192];
    snprintf(sh, sizeof sh, "cd %s && %s dataset build . $(ls s*.ss) > /dev/null", dir, SS_CLI);
    CHECK(system(sh) == 0);
    (void)err;
}

/* Under a limit of 256 open files, every example of the dataset of MANY
 * shards read by the loader (a shuffled epoch, two workers) in this process,
 * checked against its value. */
static void read_many_limited(const char *dir) {
    struct rlimit rl = {256, 256};
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    ss_store *d;
    CHECK_OK(ss_open(&d, dir, 0));
    uint64_t n = ss_count(d), at = 0;
    uint32_t *shard = malloc(n * sizeof *shard), *local = malloc(n * sizeof *local);
    char *seen = calloc(n, 1);
    for (uint32_t k = 0; k < MANY; k++)
        for (uint32_t j = 0; j < 1 + k % 3; j++) shard[at] = k, local[at++] = j;
    CHECK_EQ_U64(at, n);
    ss_loader_options lo = SS_LOADER_OPTIONS_INIT;
    ss_sampler_options so = SS_SAMPLER_OPTIONS_INIT;
    ss_batch_options bo = SS_BATCH_OPTIONS_INIT;
    so.kind = SS_SAMPLE_SHUFFLE;
    bo.batch_size = 16;
    lo.sampler = &so, lo.batch = &bo, lo.threads = 2;
    ss_loader *l;
    CHECK_OK(ss_loader_open(&l, d, &lo));
    const ss_loader_batch *b;
    int rc;
    while ((rc = ss_loader_next(&b, l)) == 0) {
        const ss_collated *c = &b->data.fields[0];
        const uint16_t *v = c->data;
        for (uint64_t r = 0; r < b->rows; r++) {
            uint64_t i = b->indices[r];
            uint32_t k = shard[i], j = local[i];
            CHECK(!seen[i]);
            seen[i] = 1;
            CHECK_EQ_U64(c->lengths[r], 1 + (k + j) % 3);
            for (uint32_t t = 0; t < c->lengths[r]; t++)
                CHECK_EQ_U64(v[r * c->steps + t], (uint16_t)(k * 7 + j + t));
        }
    }
    CHECK_RC(rc, SS_ITEROVER);
    for (uint64_t i = 0; i < n; i++) CHECK(seen[i]);
    ss_loader_free(l);
    ss_close(d);
    free(shard);
    free(local);
    free(seen);
}

/* A dataset of more shards than open files allowed (ulimit -n 256) is read
 * by `seqstore cat` and `info` in a shell under that limit, and by the
 * loader in a child process under it: shards are closed to stay within the
 * budget and reopened on demand. */
static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char shm[] = "/dev/shm/ss-many-XXXXXX";

/* The shards in memory go at exit, a failed check's too (0.5 GB of RAM). */
static void remove_shm(void) {
    char rm[4200];
    snprintf(rm, sizeof rm, "rm -rf %s", shm);
    if (system(rm) != 0) fprintf(stderr, "test_dataset_scale: could not remove %s\n", shm);
}

static void test_many_shards(void) {
    const char *dir = ss_test_keep_path("many.ds");
    struct statvfs fs;
    if (statvfs("/dev/shm", &fs) == 0 &&
        (uint64_t)fs.f_bavail * fs.f_frsize > (uint64_t)MANY_SHM * SHARD_BYTES * 5 / 4 &&
        mkdtemp(shm)) {
        dir = shm;
        MANY = MANY_SHM;
        atexit(remove_shm);
    } else {
        printf("test_dataset_scale: /dev/shm lacks %u MB: %u shards on disk, not %u\n",
               MANY_SHM * (SHARD_BYTES / 1024) * 5 / 4 / 1024, MANY_DISK, MANY_SHM);
    }
    double t0 = seconds();
    make_many(dir);
    printf("test_dataset_scale: %u shards written and built in %.1f s\n", MANY,
           seconds() - t0);
    char sh[8192];
    snprintf(sh, sizeof sh,
             "ulimit -n 256 && %s cat %s > %s/many.txt && %s info %s > /dev/null && "
             "SS_MAX_OPEN_SHARDS=8 %s cat %s > %s/many8.txt",
             SS_CLI, dir, ss_test_tmpdir(), SS_CLI, dir, SS_CLI, dir, ss_test_tmpdir());
    CHECK(system(sh) == 0);
    size_t n, n8;
    char *t = ss_test_read_file(ss_test_path("many.txt"), &n);
    char *t8 = ss_test_read_file(ss_test_path("many8.txt"), &n8);
    uint64_t lines = 0;
    for (size_t i = 0; i < n; i++) lines += t[i] == '\n';
    uint64_t examples = 0;
    for (uint32_t k = 0; k < MANY; k++) examples += 1 + k % 3;
    CHECK_EQ_U64(lines, examples);
    CHECK(n == n8 && !memcmp(t, t8, n));
    free(t);
    free(t8);
    /* more shards than the budget: views are valid for a while only */
    ss_store *d, *shard;
    CHECK_OK(ss_open(&d, dir, 0));
    CHECK(ss_views_stable(d) == (MANY <= default_budget() - default_budget() / 4));
    ss_close(d);
    CHECK(setenv("SS_MAX_OPEN_SHARDS", "100000", 1) == 0);
    CHECK_OK(ss_open(&d, dir, 0));
    CHECK(ss_views_stable(d) == 1);
    ss_close(d);
    CHECK(setenv("SS_MAX_OPEN_SHARDS", "8", 1) == 0);
    CHECK_OK(ss_open(&d, dir, 0));
    CHECK(ss_views_stable(d) == 0);
    ss_close(d);
    CHECK(unsetenv("SS_MAX_OPEN_SHARDS") == 0);
    char one[4096];
    snprintf(one, sizeof one, "%s/s00001.ss", dir);
    CHECK_OK(ss_open(&shard, one, 0));
    CHECK(ss_views_stable(shard) == 1 && ss_views_stable(NULL) == 0);
    ss_close(shard);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        read_many_limited(dir);
        _exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
    signal(SIGALRM, on_alarm);
    test_bad_shard_fails_once();
    test_info_missing_shard();
    test_opens_per_rank();
    test_many_shards();
    return 0;
}
