/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_sync_order.c - the order of LMDB's writes and flushes that
 * finish a store: the meta page that makes the complete header visible is
 * written only after every data page is durable (an fdatasync after the last
 * data write), and is itself flushed before ss_writer_finish returns. A
 * system crash between the two could otherwise leave a store that says
 * "complete" over pages that never reached the disk. A SIGKILL test cannot
 * see this (the page cache survives a killed process), so this test records
 * the system calls: it defines writev, pwrite, fdatasync... itself, and the
 * shared LMDB library calls these instead of libc's. Checked with and
 * without SS_WRITE_NOSYNC (the converters' mode), for create and append,
 * and with commits in the background (ss__writer_background(): the
 * converters with --threads > 1), one of which may be writing when the
 * finish begins: its meta page is an intermediate commit's, written without
 * a flush as those before the finish are, but its data pages, like theirs,
 * must be flushed before the finish's meta page is written. */
#include "testutil.h"

#include "internal.h"

#include <pthread.h>

#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

enum { EV_DATA, EV_META, EV_SYNC, EV_HINT };
typedef struct event {
    int kind;
    int fd;
    int finishing; /* written by the thread calling ss_writer_finish */
} event;

static event events[1 << 16];
static size_t nevents;
static int recording;
static pthread_t finisher;
static pthread_mutex_t events_mu = PTHREAD_MUTEX_INITIALIZER; /* the committer writes too */

static void set_recording(int on) {
    pthread_mutex_lock(&events_mu);
    recording = on;
    finisher = pthread_self();
    if (on) nevents = 0;
    pthread_mutex_unlock(&events_mu);
}

/* LMDB writes its two meta pages (pages 0 and 1) with pwrite at an offset
 * below two pages; everything else is data. */
static void note(int kind, int fd) {
    pthread_mutex_lock(&events_mu);
    if (recording && nevents < sizeof events / sizeof events[0])
        events[nevents++] = (event){kind, fd, pthread_equal(pthread_self(), finisher)};
    pthread_mutex_unlock(&events_mu);
}

static void note_write(int fd, long long offset, size_t len) {
    int meta = offset >= 0 && offset < 2 * 4096 && len < 4096;
    note(meta ? EV_META : EV_DATA, fd);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off);
ssize_t writev(int fd, const struct iovec *iov, int cnt);
int fdatasync(int fd);
int fsync(int fd);
int sync_file_range(int fd, off_t off, off_t n, unsigned flags);

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    note_write(fd, (long long)off, n);
    return syscall(SYS_pwrite64, fd, buf, n, off);
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
    return pwrite(fd, buf, n, off);
}
/* LMDB seeks, then writes data pages with writev: never a meta page. */
ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    note_write(fd, -1, 0);
    return syscall(SYS_writev, fd, iov, cnt);
}
int fdatasync(int fd) {
    note(EV_SYNC, fd);
    return (int)syscall(SYS_fdatasync, fd);
}
int fsync(int fd) {
    note(EV_SYNC, fd);
    return (int)syscall(SYS_fsync, fd);
}
/* A write-back hint, never a flush: it must not count as one. */
int sync_file_range(int fd, off_t off, off_t n, unsigned flags) {
    note(EV_HINT, fd);
    return (int)syscall(SYS_sync_file_range, fd, off, n, flags);
}

static const ss_field fields[1] = {{"tokens", SS_U32, 1, 0, {0}}};
static const ss_schema schema = {1, fields};

static void append_n(ss_writer *w, uint64_t n) {
    uint32_t buf[300];
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = i % 300;
        for (uint64_t k = 0; k < len; k++) buf[k] = (uint32_t)(i * 31 + k);
        ss_value v = {buf, len};
        CHECK_OK(ss_writer_append(w, &v));
    }
}

/* The events of ss_writer_finish on the store's file: each meta write comes
 * after a flush that follows every data write before it, no data write
 * follows the last meta write, and a flush follows that. */
static void check_finish_order(const char *what) {
    int fd = -1;
    for (size_t i = 0; i < nevents && fd < 0; i++)
        if (events[i].kind == EV_META) fd = events[i].fd;
    if (fd < 0) {
        fprintf(stderr, "%s: no meta page write recorded\n", what);
        ss_test_fail_exit();
    }
    int dirty = 0, metas = 0;
    size_t last_meta = 0;
    for (size_t i = 0; i < nevents; i++) {
        if (events[i].fd != fd) continue;
        switch (events[i].kind) {
        case EV_DATA:
            dirty = 1;
            if (metas) {
                fprintf(stderr, "%s: a data write after the meta page\n", what);
                ss_test_fail_exit();
            }
            break;
        case EV_META:
            if (!events[i].finishing) break; /* an intermediate commit in the background */
            if (dirty) {
                fprintf(stderr, "%s: meta page written before the data pages were flushed\n", what);
                ss_test_fail_exit();
            }
            metas++;
            last_meta = i;
            break;
        case EV_SYNC:
            dirty = 0;
            break;
        default:
            break;
        }
    }
    int flushed = 0;
    for (size_t i = last_meta + 1; i < nevents; i++)
        if (events[i].fd == fd && events[i].kind == EV_SYNC) flushed = 1;
    if (!flushed) {
        fprintf(stderr, "%s: the meta page is not flushed before finish returns\n", what);
        ss_test_fail_exit();
    }
}

static void run(unsigned flags, int append, int background, const char *what) {
    const char *path = ss_test_path("sync_order.ss");
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = flags | SS_WRITE_FORCE;
    o.chunk_pages = 4;
    o.commit_bytes = 64 << 10; /* many intermediate commits before finish */
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    if (background) CHECK_OK(ss__writer_background(w));
    append_n(w, 3000);
    if (append) {
        CHECK_OK(ss_writer_finish(w));
        ss_writer_free(w);
        o.flags = flags;
        CHECK_OK(ss_writer_open(&w, path, &schema, &o));
        if (background) CHECK_OK(ss__writer_background(w));
        append_n(w, 2000);
    }
    CHECK_OK(ss_writer_set_attr(w, "note", SS_ATTR_TEXT, "x", 1));
    set_recording(1);
    CHECK_OK(ss_writer_finish(w));
    set_recording(0);
    ss_writer_free(w);
    check_finish_order(what);
    /* and the store is what was written */
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    CHECK_EQ_U64(ss_count(s), append ? 5000 : 3000);
    ss_view v;
    CHECK_OK(ss_get(&v, s, 0, 2999));
    CHECK_EQ_U64(v.length, 2999 % 300);
    CHECK_EQ_U64(((const uint32_t *)v.data)[1], 2999 * 31 + 1);
    ss_close(s);
}

int main(void) {
    run(0, 0, 0, "create");
    run(SS_WRITE_NOSYNC, 0, 0, "create, NOSYNC");
    run(0, 1, 0, "append");
    run(SS_WRITE_NOSYNC, 1, 0, "append, NOSYNC");
    run(SS_WRITE_NOSYNC, 0, 1, "create, NOSYNC, background");
    run(SS_WRITE_NOSYNC, 1, 1, "append, NOSYNC, background");
    printf("ok\n");
    return 0;
}
