/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_full_open.c - opening stores on a file system that is already
 * full. LMDB maps its lock file and writes it through the map, so a page it
 * cannot allocate raised SIGBUS in every command, readers too. Now a reader
 * reads (without the lock when no process has the store open, SS_EFULL
 * naming the lock file when one has), and the writing commands (split,
 * index, merge, dataset build) fail with an error naming a file at every
 * amount of free space, leaving the store they append to readable.
 * A small tmpfs is mounted in a private mount namespace of a child process;
 * where that is not allowed (no root), the test says so and is skipped. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[1024], pristine[1024];

static const char *at(const char *name) {
    static char buf[4][1200];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Fill the file system of `dir` until `left` bytes are free (0: none). */
static void fill(uint64_t left) {
    struct statvfs v;
    CHECK(statvfs(dir, &v) == 0);
    uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize;
    int fd = open(at("fill"), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    static char zero[4096];
    while (avail > left) {
        size_t n = avail - left < sizeof zero ? (size_t)(avail - left) : sizeof zero;
        ssize_t w = write(fd, zero, n);
        if (w <= 0) break; /* ENOSPC */
        avail -= (uint64_t)w;
    }
    close(fd);
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Readers on a full disk: the C library and the CLI read, and leave no lock file. */
static void check_readers(void) {
    ss_store *s;
    CHECK_OK(ss_open(&s, at("a.ss"), 0));
    CHECK_EQ_U64(ss_count(s), 3);
    ss_view v;
    CHECK_OK(ss_get(&v, s, 0, 2));
    CHECK(v.length == 16 && memcmp(v.data, "three words here", 16) == 0);
    ss_close(s);
    CHECK(!exists(at("a.ss-lock")));
    char err[4096];
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "info %s > /dev/null", at("a.ss")), 0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "verify %s > /dev/null", at("a.ss")), 0, err);
    char out[1200], cmd[4096];
    snprintf(out, sizeof out, "%s.out", pristine);
    snprintf(cmd, sizeof cmd, "%s cat %s > %s", SS_CLI, at("a.ss"), out);
    CHECK(system(cmd) == 0);
    size_t n;
    char *text = ss_test_read_file(out, &n);
    CHECK_CONTAINS(text, "three words here");
    free(text);
    CHECK(!exists(at("a.ss-lock")));
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "info %s > /dev/null", at("d")), 0, err);

    /* a lock file left behind, unallocated, and no process using it */
    int fd = open(at("a.ss-lock"), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, 65536) == 0);
    close(fd);
    CHECK_OK(ss_open(&s, at("a.ss"), 0));
    ss_close(s);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "info %s > /dev/null", at("a.ss")), 0, err);

    /* another process has the store open: reading without the lock could
     * race its writer, so SS_EFULL naming the lock file */
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t holder = fork();
    CHECK(holder >= 0);
    if (holder == 0) {
        int lfd = open(at("a.ss-lock"), O_RDWR | O_CLOEXEC);
        struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
        char c = fcntl(lfd, F_SETLK, &fl) == 0 ? 'y' : 'n';
        if (write(pipefd[1], &c, 1) != 1) _exit(1);
        pause();
        _exit(0);
    }
    char c = 0;
    CHECK(read(pipefd[0], &c, 1) == 1 && c == 'y');
    CHECK_RC(ss_open(&s, at("a.ss"), 0), SS_EFULL);
    CHECK_CONTAINS(ss_error_message(), "a.ss-lock");
    CHECK_CONTAINS(ss_error_message(), "No space left on device");
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "info %s > /dev/null", at("a.ss")), 1, err);
    CHECK_CONTAINS(err, "a.ss-lock");
    CHECK_OK(ss_open(&s, at("a.ss"), SS_OPEN_NOLOCK)); /* the caller's guarantee */
    ss_close(s);
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    close(pipefd[0]);
    close(pipefd[1]);
    CHECK(unlink(at("a.ss-lock")) == 0);
}

/* Restore the store and the dataset from `pristine`, and drop every output. */
static void reset(void) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf %s/* && cp -r %s/. %s/", dir, pristine, dir);
    CHECK(system(cmd) == 0);
}

static const char *const writers[] = {
    "split add %s/a.ss tr 0:2 --force",
    "index %s/a.ss --by tokens --resolution 2 --force",
    "merge %s/d -o %s/m.ss --force",
    "dataset build %s/d",
};

/* Every writing command at every amount of free space: exit 0 or 1 (no
 * signal); an error names a file of the full file system; the store it
 * appended to still opens and verifies. */
static void check_writers(void) {
    static const uint64_t left_kib[] = {0, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 80, 96, 128, 192};
    unsigned failed = 0, ok = 0;
    for (size_t w = 0; w < sizeof writers / sizeof *writers; w++) {
        for (size_t k = 0; k < sizeof left_kib / sizeof *left_kib; k++) {
            reset();
            fill(left_kib[k] << 10);
            char err[4096];
            char cmd[4096];
            snprintf(cmd, sizeof cmd, writers[w], dir, dir);
            int rc = ss_test_cli(err, sizeof err, NULL, "%s > /dev/null", cmd);
            if (rc != 0 && (rc != 1 || !strstr(err, dir))) {
                fprintf(stderr, "%s with %llu KiB free: exit %d; stderr:\n%s\n", cmd,
                        (unsigned long long)left_kib[k], rc, err);
                ss_test_fail_exit();
            }
            rc ? failed++ : ok++;
            unlink(at("fill"));
            ss_store *s;
            CHECK_OK(ss_open(&s, at("a.ss"), SS_OPEN_VERIFY));
            CHECK_OK(ss_verify(NULL, s, NULL, NULL));
            ss_close(s);
        }
    }
    printf("writing commands on a nearly full disk: %u failed cleanly, %u succeeded\n", failed, ok);
    CHECK(failed > 0);
}

static int child(void) {
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", dir, "tmpfs", 0, "size=2m") != 0) {
        printf("SKIPPED: cannot mount a small tmpfs here (%s); the full-disk open test needs "
               "root\n",
               strerror(errno));
        return 77;
    }
    char err[4096];
    const char *txt = ss_test_path("a.txt");
    ss_test_write_file(txt, "one two\nfour five six seven\nthree words here\n", 45);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "convert text --quiet %s -o %s", txt,
                           at("a.ss")),
               0, err);
    CHECK(mkdir(at("d"), 0755) == 0);
    for (int k = 0; k < 2; k++)
        CHECK_EXIT(ss_test_cli(err, sizeof err, NULL,
                               "convert text --quiet %s -o %s/d/s%d.ss --shard %d/2", txt, dir, k,
                               k),
                   0, err);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "dataset build %s/d > /dev/null", dir), 0, err);
    /* LMDB wants no more lock file than the library allocates: a larger one
     * would be mapped with pages beyond the allocated blocks */
    ss_store *s;
    CHECK_OK(ss_open(&s, at("a.ss"), 0));
    struct stat st;
    CHECK(stat(at("a.ss-lock"), &st) == 0);
    CHECK_EQ_U64(st.st_size, 65536);
    CHECK((uint64_t)st.st_blocks * 512 >= 65536);
    ss_close(s);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -f %s/*-lock %s/d/*-lock; cp -r %s/. %s/", dir, dir, dir,
             pristine);
    CHECK(system(cmd) == 0);
    fill(0);
    check_readers();
    check_writers();
    fflush(stdout);
    return 0;
}

int main(void) {
    snprintf(dir, sizeof dir, "%s/small", ss_test_tmpdir());
    snprintf(pristine, sizeof pristine, "%s/pristine", ss_test_tmpdir());
    CHECK(mkdir(dir, 0755) == 0 && mkdir(pristine, 0755) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(child());
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "the test process died of signal %d\n", WTERMSIG(status));
        return 1;
    }
    CHECK(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) return 77;
    CHECK(WEXITSTATUS(status) == 0);
    printf("format full open: ok\n");
    return 0;
}
