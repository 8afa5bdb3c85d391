/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_full.c - a disk that fills up while writing: SS_EFULL with a
 * message that says so ("disk full (No space left on device)") and what is
 * left behind, never LMDB's bare "Input/output error"; the store left behind
 * is refused as incomplete (or holds its finished examples) and resumes.
 * A small tmpfs is mounted in a private mount namespace of a child process;
 * where that is not allowed (no root), the test says so and passes. */
#include "testutil.h"

#include <errno.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const ss_field fields[1] = {{"x", SS_U8, 1, 0, {0}}};
static const ss_schema schema = {1, fields};

/* Append 4 KiB examples until the writer fails; returns its code. */
static int fill(ss_writer *w, uint64_t *appended) {
    static unsigned char buf[4096];
    for (uint64_t i = 0; i < 100000; i++) {
        memset(buf, (int)(i & 0xFF), sizeof buf);
        ss_value v = {buf, sizeof buf};
        int rc = ss_writer_append(w, &v);
        if (rc) return rc;
        *appended = i + 1;
    }
    return ss_writer_finish(w);
}

static int expect_full(int rc, const char *left) {
    if (rc != SS_EFULL || !strstr(ss_error_message(), "disk full (No space left on device)") ||
        !strstr(ss_error_message(), left)) {
        fprintf(stderr, "rc %d (%s): %s\n", rc, ss_strerror(rc), ss_error_message());
        return 1;
    }
    printf("%s\n", ss_error_message());
    return 0;
}

static int child(const char *dir) {
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", dir, "tmpfs", 0, "size=2m") != 0) {
        printf("note: cannot mount a small tmpfs here (%s); disk-full test skipped\n",
               strerror(errno));
        return 77;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/full.ss", dir);
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = 4;
    o.commit_bytes = 64 << 10;
    o.map_bytes = 64 << 20;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    uint64_t n = 0;
    int bad = expect_full(fill(w, &n), "the store is left incomplete");
    ss_writer_free(w);
    CHECK(n > 50); /* it did write until the disk was full */
    ss_store *s;
    CHECK_RC(ss_open(&s, path, 0), SS_EINCOMPLETE);
    CHECK_OK(ss_open(&s, path, SS_OPEN_INCOMPLETE));
    CHECK(ss_count(s) <= n);
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);

    /* a finished store, then an append that fills the disk */
    CHECK(unlink(path) == 0);
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    uint64_t m = 0;
    static unsigned char buf[4096];
    for (; m < 100; m++) {
        ss_value v = {buf, sizeof buf};
        CHECK_OK(ss_writer_append(w, &v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    CHECK_OK(ss_writer_open(&w, path, &schema, &o));
    bad |= expect_full(fill(w, &n), "the append is left incomplete");
    ss_writer_free(w);
    CHECK_OK(ss_open(&s, path, 0)); /* the finished examples are intact */
    CHECK_EQ_U64(ss_count(s), 100);
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);
    fflush(stdout);
    return bad;
}

int main(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/small", ss_test_tmpdir());
    CHECK(mkdir(dir, 0755) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(child(dir));
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 77);
    printf("format full: ok\n");
    return 0;
}
