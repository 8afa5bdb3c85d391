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
 * only process-wide state; it exists because LMDB's rule is process-wide. */
#include "env.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>

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

static ss_env_entry *ss_env_find(dev_t dev, ino_t ino) {
    for (ss_env_entry *e = ss_env_list; e; e = e->next)
        if (e->dev == dev && e->ino == ino) return e;
    return NULL;
}

int ss_env_acquire(MDB_env **out, const char *path, int writer, ss_env_open_fn open_fn, void *ctx) {
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

void ss_env_release(MDB_env *env) {
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

int ss_env_check_size(MDB_env *env, const char *path) {
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
