/* SPDX-License-Identifier: BSD-2-Clause */
/* env.c - one LMDB environment per store file per process.
 *
 * LMDB's locks are POSIX record locks, which belong to the process and are all
 * released when ANY descriptor of the lock file is closed. Two environments
 * on one file in one process therefore break each other: closing one drops
 * the other's reader lock, another process then resets the reader table, and
 * a writer reuses pages that a live snapshot still points into. LMDB forbids
 * it ("do not open an environment twice in the same process"). So readers of
 * the same file share one environment here, each with its own read
 * transaction (MDB_NOTLS), and a writer refuses to open a file that the
 * process already has open, and vice versa. This registry is the library's
 * only process-wide state; it exists because LMDB's rule is process-wide.
 *
 * The map of a shared read-only environment never moves. LMDB maps a fixed
 * size; when another process's writer grows the file past it, the next read
 * transaction fails with MDB_MAP_RESIZED (mdb_txn_renew0 compares the meta
 * page's last page with me_maxpg) and the only cure is mdb_env_set_mapsize,
 * which munmaps and maps again. That is only legal with no live transaction,
 * and LMDB does not count read transactions (it checks only me_txn, the write
 * transaction): remapping under other handles' snapshots leaves their views
 * and their LMDB cursors pointing at unmapped memory (SIGSEGV/SIGBUS). So:
 *  - readers map far more than the file holds, set before mdb_env_open
 *    (LMDB keeps a configured size for MDB_RDONLY and only raises it to the
 *    file's used size): max(1 TiB, 4 x the file). It is a read-only,
 *    file-backed MAP_SHARED mapping, so it costs address space only: no
 *    memory, no swap or overcommit charge, and page tables only for pages
 *    touched; mmap, madvise and munmap of it take microseconds (measured: an
 *    ss_open + ss_close of a small store, which creates and closes the
 *    environment, takes 51 us with the 1 TiB map against 34 us with a map
 *    of the file's size; 90 against 65 us under ASan). A 47-bit address space
 *    holds about 100 such maps; when the address space is limited (ulimit -v,
 *    many open files) a probe fails and the map falls back to 4 x the file,
 *    then to LMDB's own size.
 *  - a dataset's shards are the exception: complete stores checked against
 *    the manifest, mapped at their size rounded up to 2 MiB, because many
 *    1 TiB maps each cost their own page-table pages on every random read
 *    (ss__env_shard_map_bytes()). A shard that grows anyway is the next case.
 *  - if a snapshot still outgrows the map, ss__env_begin_read() remaps only
 *    when the caller is the environment's sole user in this process (it holds
 *    the registry lock, so nobody can join meanwhile); otherwise the open
 *    fails with SS_EBUSY and every existing handle keeps reading unharmed. */
#include "env.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct ss_env_entry {
    struct ss_env_entry *next;
    dev_t dev;
    ino_t ino;
    MDB_env *env;
    int writer;
    unsigned refs;
} ss_env_entry;

static pthread_mutex_t ss_env_lock = PTHREAD_MUTEX_INITIALIZER;
static ss_env_entry *ss_env_list;
static pthread_once_t ss_env_once = PTHREAD_ONCE_INIT;

/* A forked child must not use its parent's environments (LMDB's rule), and
 * holds none of their locks: forget them, without closing anything. */
static void ss_env_forget_in_child(void) {
    ss_env_list = NULL;
    pthread_mutex_init(&ss_env_lock, NULL);
}

static void ss_env_init(void) {
    pthread_atfork(NULL, NULL, ss_env_forget_in_child);
}

static uint64_t ss_env_map_override;

void ss__env_set_reader_map_bytes(uint64_t bytes) {
    pthread_mutex_lock(&ss_env_lock);
    ss_env_map_override = bytes;
    pthread_mutex_unlock(&ss_env_lock);
}

/* Can `bytes` of address space be reserved now? A PROT_NONE, MAP_NORESERVE
 * probe: it commits nothing and is unmapped at once. */
static int ss_env_map_fits(uint64_t bytes) {
    if (bytes > SIZE_MAX / 2) return 0;
    void *p =
        mmap(NULL, (size_t)bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return 0;
    munmap(p, (size_t)bytes);
    return 1;
}

/* Called with the registry lock held: from an open_fn or a remap. */
uint64_t ss__env_reader_map_bytes(uint64_t file_bytes) {
    if (ss_env_map_override) return ss_env_map_override;
    uint64_t big = SS_READER_MAP_MIN;
    uint64_t room = file_bytes > UINT64_MAX / 4 ? UINT64_MAX : file_bytes * 4;
    if (room > big) big = room;
    if (ss_env_map_fits(big)) return big;
    if (ss_env_map_fits(room)) return room;
    return 0; /* LMDB's own choice: the writer's last map size, at least the file */
}

uint64_t ss__env_shard_map_bytes(uint64_t file_bytes) {
    const uint64_t unit = 2u << 20;
    if (ss_env_map_override) return ss_env_map_override;
    return file_bytes > UINT64_MAX - unit ? 0 : (file_bytes + unit - 1) / unit * unit;
}

static ss_env_entry *ss_env_find(dev_t dev, ino_t ino) {
    for (ss_env_entry *e = ss_env_list; e; e = e->next)
        if (e->dev == dev && e->ino == ino) return e;
    return NULL;
}

int ss__env_acquire(MDB_env **out, const char *path, int writer, ss_env_open_fn open_fn,
                    void *ctx) {
    *out = NULL;
    pthread_once(&ss_env_once, ss_env_init);
    pthread_mutex_lock(&ss_env_lock);
    struct stat st;
    int have_file = stat(path, &st) == 0;
    ss_env_entry *e = have_file ? ss_env_find(st.st_dev, st.st_ino) : NULL;
    if (e && (writer || e->writer)) {
        pthread_mutex_unlock(&ss_env_lock);
        return ss__fail(SS_EBUSY,
                        "%s: already open %s in this process; LMDB allows one environment per "
                        "file per process: close the %s first",
                        path, e->writer ? "for writing" : "for reading",
                        e->writer ? "writer" : "readers");
    }
    if (e) {
        e->refs++;
        *out = e->env;
        pthread_mutex_unlock(&ss_env_lock);
        return 0;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&ss_env_lock);
        return ss__fail(SS_ENOMEM, "%s: out of memory", path);
    }
    int rc = open_fn(&e->env, ctx);
    if (rc == 0 && stat(path, &st) != 0) rc = ss__fail(SS_EIO, "%s: vanished while opening", path);
    if (rc) {
        if (e->env) mdb_env_close(e->env);
        free(e);
        pthread_mutex_unlock(&ss_env_lock);
        return rc;
    }
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->writer = writer;
    e->refs = 1;
    e->next = ss_env_list;
    ss_env_list = e;
    *out = e->env;
    pthread_mutex_unlock(&ss_env_lock);
    return 0;
}

void ss__env_release(MDB_env *env) {
    if (!env) return;
    pthread_mutex_lock(&ss_env_lock);
    for (ss_env_entry **p = &ss_env_list; *p; p = &(*p)->next) {
        ss_env_entry *e = *p;
        if (e->env != env) continue;
        if (--e->refs == 0) {
            *p = e->next;
            mdb_env_close(e->env);
            free(e);
        }
        break;
    }
    pthread_mutex_unlock(&ss_env_lock);
}

/* Remap `env` (registry lock held) if the caller is its only user. */
static int ss_env_remap_locked(MDB_env *env, const char *path) {
    ss_env_entry *e = ss_env_list;
    while (e && e->env != env) e = e->next;
    MDB_envinfo info;
    mdb_env_info(env, &info);
    if (!e || e->refs != 1)
        return ss__fail(SS_EBUSY,
                        "%s: the file grew past this process's %llu-byte map of it while other "
                        "handles of it are open, and remapping would pull their data away: "
                        "close them and open it again",
                        path, (unsigned long long)info.me_mapsize);
    int fd;
    struct stat st;
    if (mdb_env_get_fd(env, &fd) != 0 || fstat(fd, &st) != 0)
        return ss__fail(SS_EIO, "%s: cannot stat the data file", path);
    /* On failure LMDB leaves the environment unmapped: the caller's open
     * fails and its release closes it; nobody else holds it. */
    int rc = mdb_env_set_mapsize(env, (size_t)ss__env_reader_map_bytes((uint64_t)st.st_size));
    return rc ? ss__lmdb_fail(rc, path) : 0;
}

int ss__env_begin_read(MDB_env *env, const char *path, MDB_txn **txn) {
    int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, txn);
    if (rc != MDB_MAP_RESIZED) return rc ? ss__lmdb_fail(rc, path) : 0;
    *txn = NULL;
    pthread_mutex_lock(&ss_env_lock);
    rc = ss_env_remap_locked(env, path);
    pthread_mutex_unlock(&ss_env_lock);
    if (rc) return rc;
    rc = mdb_txn_begin(env, NULL, MDB_RDONLY, txn);
    return rc ? ss__lmdb_fail(rc, path) : 0;
}

int ss__env_check_size(MDB_env *env, const char *path) {
    MDB_envinfo info;
    MDB_stat st;
    struct stat fst;
    int fd;
    /* Read the meta page first, the file size second: the file only grows. */
    mdb_env_info(env, &info);
    mdb_env_stat(env, &st);
    if (mdb_env_get_fd(env, &fd) != 0 || fstat(fd, &fst) != 0)
        return ss__fail(SS_EIO, "%s: cannot stat the data file", path);
    uint64_t need = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
    if ((uint64_t)fst.st_size < need)
        return ss__fail(SS_ECORRUPT, "%s: file is truncated (%llu bytes, needs %llu)", path,
                        (unsigned long long)fst.st_size, (unsigned long long)need);
    return 0;
}

/* The lock file on a full disk. A reader may go without it when no process
 * has the store open: every LMDB environment holds a shared fcntl lock on
 * byte 0 of the lock file while it is open (and one without a lock file
 * holds none), so an exclusive lock granted on it, or no lock file at all,
 * means no writer is running. A writer that starts later needs the lock
 * file's blocks too and fails with SS_EFULL while the disk stays full;
 * only if space is freed during the read can a writer start without
 * seeing this reader, as with SS_OPEN_NOLOCK. Otherwise SS_EFULL. The
 * registry guarantees that this process has no environment of the file,
 * so closing `fd` drops no lock of ours. */
static int ss_env_lock_full(const char *lock, int fd, int created, int writer, int err,
                            int *nolock) {
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    int unused = fd < 0 || fcntl(fd, F_SETLK, &fl) == 0;
    if (unused && created) unlink(lock); /* ours, empty or partial: leave nothing behind */
    if (unused && !writer) {
        *nolock = 1;
        return 0;
    }
    return ss__fail(SS_EFULL,
                    "'%s': cannot allocate LMDB's lock file (%d bytes): %s%s", lock,
                    SS_ENV_LOCK_BYTES, strerror(err),
                    writer ? ""
                           : "; another process has the store open, so reading without the "
                             "lock is unsafe: free some space, or open with SS_OPEN_NOLOCK "
                             "(--nolock) once no process writes the store");
}

int ss__env_lock_prepare(const char *path, int writer, int *nolock) {
    *nolock = 0;
    char lock[4096];
    if (snprintf(lock, sizeof lock, "%s-lock", path) >= (int)sizeof lock) return 0;
    int created = 0;
    /* O_NONBLOCK: a FIFO in its place must not hang the open */
    int fd = open(lock, O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) {
        fd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NONBLOCK, 0644);
        if (fd >= 0)
            created = 1;
        else if (errno == EEXIST)
            fd = open(lock, O_RDWR | O_CLOEXEC | O_NONBLOCK);
    }
    if (fd < 0) {
        int e = errno;
        if (e == ENOSPC || e == EDQUOT) return ss_env_lock_full(lock, -1, 0, writer, e, nolock);
        return 0; /* read-only media, no permission: mdb_env_open reports it */
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        rc = ss__fail(SS_EIO, "'%s': %s", lock, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = ss__fail(SS_EIO, "'%s': LMDB's lock file is not a regular file", lock);
    } else {
        /* Linux's fallocate, not posix_fallocate: where the file system
         * cannot, glibc's emulation writes zero bytes into a file that other
         * processes may be writing through their maps. Such file systems
         * keep LMDB's own behaviour. An existing larger file is covered
         * whole: LMDB then maps all of it. */
        off_t want = st.st_size > SS_ENV_LOCK_BYTES ? st.st_size : SS_ENV_LOCK_BYTES;
        int e = fallocate(fd, 0, 0, want) != 0 ? errno : 0;
        if (e == ENOSPC || e == EDQUOT) rc = ss_env_lock_full(lock, fd, created, writer, e, nolock);
    }
    close(fd);
    return rc;
}
