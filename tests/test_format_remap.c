/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_remap.c - the file outgrows a reader's map while it reads.
 *
 * One process holds a store open (several handles, several threads reading)
 * while another process appends until the file is larger than the map LMDB
 * would give a reader by default (the writer's map size recorded in the meta
 * page: 128 MiB here). Then the reading process opens the file again. Once
 * that open remapped the shared environment under the live
 * readers (SIGSEGV/SIGBUS or wrong bytes); now readers map far beyond the file
 * and never remap under each other. Each scenario runs in a forked child so
 * that a crash is reported as a failure. Part B forces a small reader map
 * (the test hook of env.h) to check the fallbacks: a shared environment that
 * must grow gives a clean SS_EBUSY, a sole user remaps. Part C limits the
 * address space: the map falls back to what fits. */
#include "env.h"
#include "store.h"
#include "testutil.h"

#include <pthread.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SS_ASAN_CLANG 1
#endif
#endif

static const ss_field byte_field = {"bytes", SS_U8, 1, 0, {0}};
static const ss_schema schema = {1, &byte_field};

#define N0 64u /* examples before the append (about 4 MiB) */
#define EX_MAX 65536u
#define NTHREADS 4

static uint64_t ex_len(uint64_t i) {
    return EX_MAX - (i % 7) * 512;
}
static unsigned char ex_byte(uint64_t i, uint64_t k) {
    return (unsigned char)(i * 131 + k * 7 + (k >> 8));
}

static int append_until(const char *path, uint64_t count, int create) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_NOSYNC | (create ? SS_WRITE_FORCE : 0);
    o.map_bytes = 1u << 20; /* grows to 128 MiB at the first commit, then doubles */
    o.commit_bytes = 8u << 20;
    ss_writer *w;
    int rc = create ? ss_writer_create(&w, path, &schema, &o) : ss_writer_open(&w, path, NULL, &o);
    if (rc) return rc;
    static unsigned char buf[EX_MAX];
    for (uint64_t i = ss_writer_count(w); rc == 0 && i < count; i++) {
        for (uint64_t k = 0; k < ex_len(i); k++) buf[k] = ex_byte(i, k);
        ss_value v = {buf, ex_len(i)};
        rc = ss_writer_append(w, &v);
    }
    if (rc == 0) rc = ss_writer_finish(w);
    ss_writer_free(w);
    return rc;
}

/* 0 if example i of `s` holds exactly what was written (no exit: threads). */
static int example_bad(const ss_store *s, uint64_t i) {
    ss_view v;
    if (ss_get(&v, s, 0, i) || v.length != ex_len(i)) return 1;
    const unsigned char *b = v.data;
    for (uint64_t k = 0; k < v.length; k++)
        if (b[k] != ex_byte(i, k)) return 1;
    return 0;
}

static void check_all(const ss_store *s, uint64_t count) {
    CHECK_EQ_U64(ss_count(s), count);
    for (uint64_t i = 0; i < count; i++)
        if (example_bad(s, i)) {
            fprintf(stderr, "example %llu of %llu differs\n", (unsigned long long)i,
                    (unsigned long long)count);
            exit(1);
        }
}

/* An appender process, waiting for a byte on `go` before it starts. */
static pid_t spawn_appender(const char *path, uint64_t count, int *go) {
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(fds[1]);
        char c;
        if (read(fds[0], &c, 1) != 1) _exit(2);
        int rc = append_until(path, count, 0);
        if (rc) fprintf(stderr, "appender: %s\n", ss_error_message());
        _exit(rc ? 1 : 0);
    }
    close(fds[0]);
    *go = fds[1];
    return pid;
}

static void run_appender(pid_t pid, int go) {
    CHECK(write(go, "x", 1) == 1);
    close(go);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

typedef struct reader {
    const char *path;
    const ss_store *s; /* NULL: open and close its own handles in a loop */
    atomic_int *stop;
    int busy_ok; /* part B: an open refused with SS_EBUSY is expected */
    uint64_t reads, bad;
} reader;

static void *read_loop(void *arg) {
    reader *r = arg;
    uint64_t seed = (uint64_t)(uintptr_t)arg;
    while (!atomic_load(r->stop)) {
        ss_store *own = NULL;
        const ss_store *s = r->s;
        if (!s) {
            int rc = ss_open(&own, r->path, 0);
            if (rc) {
                r->bad += !(r->busy_ok && rc == SS_EBUSY);
                continue;
            }
            s = own;
        }
        for (int k = 0; k < 50; k++, __atomic_add_fetch(&r->reads, 1, __ATOMIC_RELAXED))
            r->bad += (uint64_t)example_bad(s, ss_test_rand(&seed) % ss_count(s));
        ss_close(own);
    }
    return NULL;
}

typedef struct readers {
    pthread_t th[NTHREADS];
    reader r[NTHREADS];
    atomic_int stop;
} readers;

/* Threads 0 and 1 share handle a, thread 2 reads b, thread 3 opens its own. */
static void readers_start(readers *rs, const char *path, const ss_store *a, const ss_store *b,
                          int busy_ok) {
    atomic_init(&rs->stop, 0);
    const ss_store *which[NTHREADS] = {a, a, b, NULL};
    for (int t = 0; t < NTHREADS; t++) {
        rs->r[t] = (reader){path, which[t], &rs->stop, busy_ok, 0, 0};
        CHECK(pthread_create(&rs->th[t], NULL, read_loop, &rs->r[t]) == 0);
    }
    /* every thread reads before anything grows the file: on a loaded machine
     * the thread that opens its own handle could otherwise first run after
     * the growth, when its every open is (rightly) refused, and read nothing */
    for (int t = 0; t < NTHREADS; t++)
        while (__atomic_load_n(&rs->r[t].reads, __ATOMIC_RELAXED) == 0) usleep(1000);
}

static void readers_stop(readers *rs) {
    usleep(200000); /* let them read on after the last event */
    atomic_store(&rs->stop, 1);
    for (int t = 0; t < NTHREADS; t++) {
        CHECK(pthread_join(rs->th[t], NULL) == 0);
        CHECK_EQ_U64(rs->r[t].bad, 0);
        CHECK(rs->r[t].reads > 0);
    }
}

static uint64_t map_size(const ss_store *s) {
    MDB_envinfo info;
    mdb_env_info(s->env, &info);
    return info.me_mapsize;
}

static uint64_t file_size(const char *path) {
    struct stat st;
    CHECK(stat(path, &st) == 0);
    return (uint64_t)st.st_size;
}

/* Part A, the default policy: append ~150 MiB under two handles and four
 * threads, then open again. */
static void scenario_default(const char *path) {
    const uint64_t n1 = N0 + 2400;
    CHECK_OK(append_until(path, N0, 1));
    int go;
    pid_t pid = spawn_appender(path, n1, &go);
    ss_store *a, *b, *c;
    CHECK_OK(ss_open(&a, path, 0));
    CHECK_OK(ss_open(&b, path, SS_OPEN_RANDOM));
    CHECK(map_size(a) >= SS_READER_MAP_MIN);
    readers rs;
    readers_start(&rs, path, a, b, 0);
    run_appender(pid, go);
    CHECK(file_size(path) > (140u << 20)); /* past the 128 MiB map LMDB would choose */
    CHECK_OK(ss_open(&c, path, 0));
    check_all(c, n1);
    check_all(a, N0);
    readers_stop(&rs);
    check_all(b, N0);
    ss_close(a);
    ss_close(b);
    ss_close(c);
}

static int open_min_map(MDB_env **env, void *ctx) {
    int rc = mdb_env_create(env);
    if (rc == 0) rc = mdb_env_set_mapsize(*env, 1); /* LMDB raises it to the file's pages */
    if (rc == 0) rc = mdb_env_open(*env, ctx, MDB_RDONLY | MDB_NOSUBDIR | MDB_NOTLS, 0644);
    return rc ? ss__lmdb_fail(rc, ctx) : 0;
}

/* Part B: maps as small as the file, so that growth must be handled. */
static void scenario_small_map(const char *path) {
    ss__env_set_reader_map_bytes(1);
    CHECK_OK(append_until(path, N0, 1));
    int go;
    pid_t pid = spawn_appender(path, N0 + 100, &go);
    ss_store *a, *b;
    CHECK_OK(ss_open(&a, path, 0));
    uint64_t small = map_size(a);
    CHECK(small < file_size(path) + (1u << 20));
    readers rs;
    readers_start(&rs, path, a, a, 1);
    run_appender(pid, go);
    CHECK(file_size(path) > small);
    /* The shared environment would have to remap under live readers. */
    CHECK_RC(ss_open(&b, path, 0), SS_EBUSY);
    CHECK_CONTAINS(ss_error_message(), "grew past");
    readers_stop(&rs);
    check_all(a, N0);
    ss_close(a);
    CHECK_OK(ss_open(&b, path, 0)); /* alone now: a fresh environment */
    check_all(b, N0 + 100);
    ss_close(b);

    /* A sole user whose map is outgrown (the race between mapping and the
     * first transaction) remaps. */
    MDB_env *env;
    CHECK_OK(ss__env_acquire(&env, path, 0, open_min_map, (void *)path));
    pid = spawn_appender(path, N0 + 200, &go);
    run_appender(pid, go);
    MDB_txn *txn;
    CHECK_RC(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), MDB_MAP_RESIZED);
    CHECK_OK(ss__env_begin_read(env, path, &txn));
    MDB_envinfo info;
    mdb_env_info(env, &info);
    CHECK(info.me_mapsize >= file_size(path) - (1u << 20));
    mdb_txn_abort(txn);
    ss__env_release(env);
    ss__env_set_reader_map_bytes(0);
}

/* Part C: with the address space limited (ulimit -v), the map falls back to
 * a size that fits instead of failing the open. */
static void scenario_limited(const char *path) {
    CHECK_OK(append_until(path, N0, 1));
    struct rlimit lim = {4ull << 30, 4ull << 30};
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    CHECK(map_size(s) < SS_READER_MAP_MIN);
    CHECK(map_size(s) >= file_size(path));
    check_all(s, N0);
    ss_close(s);
}

static void run_forked(void (*scenario)(const char *), const char *path, const char *name) {
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        scenario(path);
        exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "%s: the reading process died of signal %d (%s)\n", name, WTERMSIG(status),
                strsignal(WTERMSIG(status)));
        exit(1);
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char lock[4096];
    snprintf(lock, sizeof lock, "%s-lock", path);
    remove(path);
    remove(lock);
}

int main(void) {
    run_forked(scenario_default, ss_test_path("remap-default.ss"), "default map");
    run_forked(scenario_small_map, ss_test_path("remap-small.ss"), "small map");
#if !defined(__SANITIZE_ADDRESS__) && !defined(SS_ASAN_CLANG)
    /* ASan reserves terabytes of shadow: it cannot run under ulimit -v. */
    run_forked(scenario_limited, ss_test_path("remap-limited.ss"), "limited address space");
#endif
    printf("ok\n");
    return 0;
}
