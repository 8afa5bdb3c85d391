/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_fifo.c - a FIFO where a store, a shard, a manifest or a lock
 * file is expected: refused at once with a message naming it, never a wait
 * for a writer that never comes (opening a FIFO for reading blocks). The
 * test process is killed by alarm() and every command by timeout(1) if
 * anything hangs. */
#include "testutil.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void expect_refused(const char *path, int code, const char *part) {
    ss_store *s = NULL;
    CHECK_RC(ss_open(&s, path, 0), code);
    CHECK_CONTAINS(ss_error_message(), part);
    CHECK(s == NULL);
}

/* `seqstore ARGS` exits 1 within 10 s (timeout(1) would give 124), its
 * stderr naming `part`. */
static void expect_cli_refused(const char *part, const char *args) {
    char cmd[8192];
    const char *errfile = ss_test_path("stderr.txt");
    snprintf(cmd, sizeof cmd, "timeout 10 %s %s > /dev/null 2> %s", SS_CLI, args, errfile);
    int st = system(cmd);
    size_t n;
    char *err = ss_test_read_file(errfile, &n);
    CHECK_EXIT(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 1, err);
    CHECK_CONTAINS(err, part);
    free(err);
}

int main(void) {
    alarm(30);
    char err[4096];
    const char *txt = ss_test_keep_path("a.txt"), *txt2 = ss_test_keep_path("b.txt");
    ss_test_write_file(txt, "one two\nthree four five\n", 24);
    ss_test_write_file(txt2, "six seven\neight nine ten\n", 25);
    const char *fifo = ss_test_keep_path("fifo.ss");
    CHECK(mkfifo(fifo, 0644) == 0);

    /* a FIFO as the store */
    expect_refused(fifo, SS_ENOTSTORE, "not a regular file: a FIFO");
    expect_refused(fifo, SS_ENOTSTORE, "fifo.ss");
    static const char *const readers[] = {"info", "cat", "verify", "split list", "index list",
                                          "attr list"};
    ss_writer *w = NULL;
    CHECK_RC(ss_writer_open(&w, fifo, NULL, NULL), SS_ENOTSTORE);
    CHECK_CONTAINS(ss_error_message(), "not a regular file");
    CHECK(w == NULL);
    char args[4096];
    for (size_t i = 0; i < sizeof readers / sizeof *readers; i++) {
        snprintf(args, sizeof args, "%s %s", readers[i], fifo);
        expect_cli_refused("a FIFO", args);
    }
    snprintf(args, sizeof args, "merge %s -o %s", fifo, ss_test_path("m.ss"));
    expect_cli_refused("a FIFO", args);
    snprintf(args, sizeof args, "convert text %s -o %s --resume", txt, fifo);
    expect_cli_refused("a FIFO", args);

    /* a dataset whose shard is a FIFO: the open reads the manifest and the
     * first shard; the FIFO shard is refused when it is first read */
    const char *dir = ss_test_keep_path("d");
    CHECK(mkdir(dir, 0755) == 0);
    for (int k = 0; k < 2; k++)
        CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "convert text --quiet %s %s -o %s/s%d.ss --shard %d/2",
                               txt, txt2, dir, k, k),
                   0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s", dir), 0, err);
    char shard[2048], moved[2048];
    snprintf(shard, sizeof shard, "%s/s1.ss", dir);
    snprintf(moved, sizeof moved, "%s/s1.keep", dir);
    CHECK(rename(shard, moved) == 0 && mkfifo(shard, 0644) == 0);
    ss_store *s;
    CHECK_OK(ss_open(&s, dir, 0));
    CHECK_EQ_U64(ss_count(s), 4);
    ss_view v;
    CHECK_OK(ss_get(&v, s, 0, 1));
    CHECK_RC(ss_get(&v, s, 0, 2), SS_ENOTSTORE);
    CHECK_CONTAINS(ss_error_message(), "s1.ss");
    CHECK_CONTAINS(ss_error_message(), "a FIFO");
    ss_close(s);
    snprintf(args, sizeof args, "verify %s", dir);
    expect_cli_refused("a FIFO", args);
    snprintf(args, sizeof args, "dataset build %s", dir);
    expect_cli_refused("a FIFO", args);
    CHECK(unlink(shard) == 0 && rename(moved, shard) == 0);

    /* a dataset whose manifest is a FIFO */
    char manifest[2048], kept[2048];
    snprintf(manifest, sizeof manifest, "%s/dataset.manifest", dir);
    snprintf(kept, sizeof kept, "%s/manifest.keep", dir);
    CHECK(rename(manifest, kept) == 0 && mkfifo(manifest, 0644) == 0);
    expect_refused(dir, SS_ENOTSTORE, "dataset.manifest");
    expect_refused(dir, SS_ENOTSTORE, "a FIFO");
    expect_refused(manifest, SS_ENOTSTORE, "a FIFO");
    snprintf(args, sizeof args, "info %s", dir);
    expect_cli_refused("a FIFO", args);
    CHECK(unlink(manifest) == 0 && rename(kept, manifest) == 0);
    CHECK_OK(ss_open(&s, dir, 0));
    ss_close(s);

    /* a FIFO as a store's lock file */
    char lock[2048];
    snprintf(lock, sizeof lock, "%s/s0.ss-lock", dir);
    unlink(lock);
    CHECK(mkfifo(lock, 0644) == 0);
    snprintf(shard, sizeof shard, "%s/s0.ss", dir);
    expect_refused(shard, SS_EIO, "s0.ss-lock': LMDB's lock file is not a regular file");
    CHECK_OK(ss_open(&s, shard, SS_OPEN_NOLOCK));
    ss_close(s);
    printf("format fifo: ok\n");
    return 0;
}
