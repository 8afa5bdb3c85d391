/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_crash.c - a writer killed with SIGKILL at random moments never
 * leaves a store that lies: it opens complete with an earlier finished state,
 * or is refused as incomplete; its committed prefix reads back exactly, and
 * SS_WRITE_RESUME finishes it with identical content. Both for creating a
 * store and for appending to a finished one. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Example i: "tokens" (u16 sequence) and "label" (u32 fixed), a pure
 * function of i so that any reader can check any prefix. */
static const ss_field fields[2] = {{"tokens", SS_U16, 1, 0, {0}}, {"label", SS_U32, 0, 0, {0}}};
static const ss_schema schema = {2, fields};

#define N_FINAL 60000u    /* examples a writer child writes in all */
#define N_BASE 20000u     /* examples of the finished store appended to */
#define COMMIT_EVERY 997u /* explicit commits, reported to the parent */

static uint64_t mix(uint64_t x) {
    uint64_t s = x;
    return ss_test_rand(&s);
}
static uint64_t tok_len(uint64_t i) {
    return mix(i) % 160; /* includes empty examples */
}
static uint16_t tok_at(uint64_t i, uint64_t k) {
    return (uint16_t)(mix(i) >> 16) ^ (uint16_t)(k * 40503u);
}
static uint32_t label_of(uint64_t i) {
    return (uint32_t)(i * 2654435761u) ^ 0xA5A5A5A5u;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static ss_writer_options writer_options(int sync) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = 3;
    o.commit_bytes = 24 << 10; /* many small transactions */
    o.map_bytes = 1 << 20;     /* the map grows while the child writes */
    o.flags = sync ? 0 : SS_WRITE_NOSYNC;
    return o;
}

/* Append examples [w's count, last); report each explicit commit on `fd`
 * (when fd >= 0) as the count it made durable. */
static int append_to(ss_writer *w, uint64_t last, int fd) {
    uint16_t buf[160];
    for (uint64_t i = ss_writer_count(w); i < last; i++) {
        uint64_t n = tok_len(i);
        for (uint64_t k = 0; k < n; k++) buf[k] = tok_at(i, k);
        uint32_t label = label_of(i);
        ss_value v[2] = {{buf, n}, {&label, 1}};
        int rc = ss_writer_append(w, v);
        if (rc) return rc;
        if ((i + 1) % COMMIT_EVERY == 0) {
            if ((rc = ss_writer_commit(w))) return rc;
            uint64_t done = i + 1;
            if (fd >= 0 && write(fd, &done, sizeof done) != sizeof done) return SS_EIO;
        }
    }
    return 0;
}

/* Reported by the child: a count, or these markers. */
#define MSG_CREATED (UINT64_MAX - 1)
#define MSG_FINISHED UINT64_MAX

/* The child: create (or open for append) and write up to N_FINAL. */
static void child_write(const char *path, int append, int sync, int fd) {
    ss_writer_options o = writer_options(sync);
    ss_writer *w;
    int rc =
        append ? ss_writer_open(&w, path, &schema, &o) : ss_writer_create(&w, path, &schema, &o);
    uint64_t msg = MSG_CREATED;
    if (rc == 0 && write(fd, &msg, sizeof msg) != sizeof msg) rc = SS_EIO;
    if (rc == 0) rc = append_to(w, N_FINAL, fd);
    if (rc == 0) rc = ss_writer_set_attr(w, "source", SS_ATTR_TEXT, "crash", 5);
    if (rc == 0) rc = ss_writer_finish(w);
    msg = MSG_FINISHED;
    if (rc == 0 && write(fd, &msg, sizeof msg) != sizeof msg) rc = SS_EIO;
    if (rc) fprintf(stderr, "child: %s\n", ss_error_message());
    ss_writer_free(w);
    _exit(rc ? 1 : 0);
}

/* What the parent learned from a killed child. */
typedef struct outcome {
    int created;      /* the writer's create/open returned */
    int finished;     /* ss_writer_finish returned 0 */
    uint64_t durable; /* the last count an explicit commit made durable */
    int exited;       /* the child ran to the end before the kill */
} outcome;

static outcome run_child(const char *path, int append, int sync, double delay) {
    int p[2];
    CHECK(pipe(p) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        child_write(path, append, sync, p[1]);
    }
    close(p[1]);
    if (delay >= 0) {
        struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        kill(pid, SIGKILL);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    outcome o = {0, 0, 0, WIFEXITED(status)};
    if (o.exited)
        CHECK(WEXITSTATUS(status) == 0);
    else
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    uint64_t msg;
    while (read(p[0], &msg, sizeof msg) == sizeof msg) {
        if (msg == MSG_CREATED)
            o.created = 1;
        else if (msg == MSG_FINISHED)
            o.finished = 1;
        else
            o.durable = msg;
    }
    close(p[0]);
    return o;
}

/* Every example of the open store holds exactly what was written for it. */
static void check_exact(const ss_store *s, uint64_t count) {
    CHECK_EQ_U64(ss_count(s), count);
    for (uint64_t i = 0; i < count; i++) {
        ss_view v;
        CHECK_OK(ss_get(&v, s, 0, i));
        if (v.length != tok_len(i)) {
            fprintf(stderr, "example %llu: length %llu, wrote %llu\n", (unsigned long long)i,
                    (unsigned long long)v.length, (unsigned long long)tok_len(i));
            exit(1);
        }
        const uint16_t *t = v.data;
        for (uint64_t k = 0; k < v.length; k++)
            if (t[k] != tok_at(i, k)) {
                fprintf(stderr, "example %llu token %llu differs\n", (unsigned long long)i,
                        (unsigned long long)k);
                exit(1);
            }
        CHECK_OK(ss_get(&v, s, 1, i));
        CHECK(*(const uint32_t *)v.data == label_of(i));
    }
}

static void check_final(const char *path) {
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    check_exact(s, N_FINAL);
    ss_attr a;
    CHECK_OK(ss_attr_get(&a, s, "source"));
    CHECK(a.size == 5 && memcmp(a.data, "crash", 5) == 0);
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);
}

/* Continue an interrupted write to N_FINAL in this process. */
static void resume(const char *path, unsigned flags, uint64_t expect_count) {
    ss_writer_options o = writer_options(0);
    o.flags |= flags;
    ss_writer *w;
    CHECK_OK(ss_writer_open(&w, path, &schema, &o));
    CHECK_EQ_U64(ss_writer_count(w), expect_count);
    CHECK_OK(append_to(w, N_FINAL, -1));
    CHECK_OK(ss_writer_set_attr(w, "source", SS_ATTR_TEXT, "crash", 5));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
    check_final(path);
}

typedef struct tally {
    int trials, killed, incomplete, complete_old, complete_new, not_created;
} tally;

static void trial_create(const char *path, int sync, double delay, tally *t) {
    char lock[1100];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(path);
    unlink(lock);
    outcome o = run_child(path, 0, sync, delay);
    t->trials++;
    t->killed += !o.exited;
    ss_store *s;
    int rc = ss_open(&s, path, 0);
    if (rc == 0) { /* only a finished store opens: it must be all there */
        check_exact(s, N_FINAL);
        ss_close(s);
        t->complete_new++;
        check_final(path);
        return;
    }
    CHECK(s == NULL);
    CHECK(!o.finished);
    if (!o.created) {
        /* killed inside ss_writer_create: no file, an empty file, or an LMDB
         * file whose first transaction never committed */
        if (rc == SS_ENOTFOUND || rc == SS_ENOTSTORE) {
            if (getenv("SS_CRASH_VERBOSE")) printf("not created: %s\n", ss_error_message());
            t->not_created++;
            ss_writer *w;
            CHECK(ss_writer_open(&w, path, &schema, NULL) < 0 && w == NULL);
            ss_writer_options wo = writer_options(0);
            wo.flags |= SS_WRITE_FORCE;
            CHECK_OK(ss_writer_create(&w, path, &schema, &wo));
            CHECK_OK(append_to(w, N_FINAL, -1));
            CHECK_OK(ss_writer_set_attr(w, "source", SS_ATTR_TEXT, "crash", 5));
            CHECK_OK(ss_writer_finish(w));
            ss_writer_free(w);
            check_final(path);
            return;
        }
    }
    CHECK_RC(rc, SS_EINCOMPLETE);
    t->incomplete++;
    /* the committed prefix: at least what the child knew was durable */
    CHECK_OK(ss_open(&s, path, SS_OPEN_INCOMPLETE));
    uint64_t k = ss_count(s);
    CHECK(k >= o.durable && k <= N_FINAL);
    ss_store_info info;
    CHECK_OK(ss_store_get_info(&info, s));
    CHECK(info.complete == 0);
    check_exact(s, k);
    ss_close(s);
    ss_writer *w;
    CHECK_RC(ss_writer_open(&w, path, &schema, NULL), SS_EINCOMPLETE);
    resume(path, SS_WRITE_RESUME, k);
}

static void trial_append(const char *base, const char *path, int sync, double delay, int mode,
                         tally *t) {
    char lock[1100];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(lock);
    { /* a fresh copy of the finished base store */
        FILE *in = fopen(base, "rb"), *out = fopen(path, "wb");
        CHECK(in && out);
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, in)) > 0) CHECK(fwrite(buf, 1, n, out) == n);
        fclose(in);
        CHECK(fclose(out) == 0);
    }
    outcome o = run_child(path, 1, sync, delay);
    t->trials++;
    t->killed += !o.exited;
    /* a finished store stays readable as complete: the old or the new state */
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    uint64_t n = ss_count(s);
    CHECK(n == N_BASE || n == N_FINAL);
    if (o.finished) CHECK_EQ_U64(n, N_FINAL);
    ss_store_info info;
    CHECK_OK(ss_store_get_info(&info, s));
    CHECK(info.complete == 1);
    check_exact(s, n);
    ss_close(s);
    if (n == N_FINAL) {
        t->complete_new++;
        check_final(path);
        return;
    }
    t->complete_old++;
    /* the progress of the interrupted append */
    CHECK_OK(ss_open(&s, path, SS_OPEN_INCOMPLETE));
    uint64_t k = ss_count(s);
    CHECK(k >= N_BASE && k >= o.durable && k <= N_FINAL);
    check_exact(s, k);
    ss_close(s);
    if (mode == 0)
        resume(path, SS_WRITE_RESUME, k);
    else
        resume(path, 0, N_BASE); /* a plain append starts over from the finished state */
}

int main(void) {
    char path[1024], base[1024];
    snprintf(path, sizeof path, "%s", ss_test_path("crash.ss"));
    snprintf(base, sizeof base, "%s", ss_test_path("base.ss"));

    /* calibrate: how long a child takes to write everything */
    double t0 = now();
    outcome o = run_child(path, 0, 0, -1);
    double full = now() - t0;
    CHECK(o.exited && o.finished && o.durable == N_FINAL / COMMIT_EVERY * COMMIT_EVERY);
    check_final(path);

    ss_writer *w;
    ss_writer_options wo = writer_options(0);
    CHECK_OK(ss_writer_create(&w, base, &schema, &wo));
    CHECK_OK(append_to(w, N_BASE, -1));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);

    const char *env = getenv("SS_CRASH_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    uint64_t rng = seed;
    /* trials until about 20 s are spent, at least 30 and at most 60 */
    int trials = (int)(16.0 / (3.0 * full + 0.01));
    if (trials < 30) trials = 30;
    if (trials > 60) trials = 60;
    printf("crash test: seed %llu, full write %.3f s, %d trials\n", (unsigned long long)seed, full,
           trials);
    tally tc = {0}, ta = {0};
    double start = now();
    for (int i = 0; i < trials; i++) {
        double delay = full * 1.1 * (double)(ss_test_rand(&rng) % 10000) / 10000.0;
        if (ss_test_rand(&rng) % 8 == 0) /* now and then, during creation itself */
            delay = 0.002 * (double)(ss_test_rand(&rng) % 1000) / 1000.0;
        int sync = ss_test_rand(&rng) % 4 == 0;
        if (i % 2 == 0)
            trial_create(path, sync, delay, &tc);
        else
            trial_append(base, path, sync, delay * (1.0 - (double)N_BASE / N_FINAL), i % 4 == 1,
                         &ta);
    }
    printf("create: %d trials, %d killed: %d refused as incomplete (resumed), %d not yet a store, "
           "%d complete\n",
           tc.trials, tc.killed, tc.incomplete, tc.not_created, tc.complete_new);
    printf("append: %d trials, %d killed: %d kept the old finished state (resumed), %d complete\n",
           ta.trials, ta.killed, ta.complete_old, ta.complete_new);
    printf("crash test: ok (%.1f s)\n", now() - start);
    CHECK(tc.incomplete > 0 && ta.complete_old > 0); /* the kills did land mid-write */
    return 0;
}
