/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_concurrency.c - several threads (sharing one open store and
 * opening their own) and several processes read one store while another
 * process appends to it. Readers opened before the append keep their
 * snapshot (LMDB MVCC) byte for byte; readers opened after the writer
 * finishes see the new examples; readers of the progress record see a
 * growing, always exact prefix. */
#include "testutil.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const ss_field fields[2] = {{"tokens", SS_U16, 1, 0, {0}}, {"label", SS_U32, 0, 0, {0}}};
static const ss_schema schema = {2, fields};

#define N0 20000u         /* examples before the append */
#define N1 50000u         /* examples after it */
#define COMMIT_EVERY 750u /* the writer commits (and pauses) this often */
#define NTHREADS 4
#define NPROCS 3

static uint64_t mix(uint64_t x) {
    uint64_t s = x ^ 0x51ED270B27F1A5C3ull;
    return ss_test_rand(&s);
}
static uint64_t tok_len(uint64_t i) {
    return mix(i) % 200;
}
static uint16_t tok_at(uint64_t i, uint64_t k) {
    return (uint16_t)(mix(i) >> 24) + (uint16_t)(k * 7u);
}
static uint32_t label_of(uint64_t i) {
    return (uint32_t)~i;
}

static int append_to(ss_writer *w, uint64_t last, int pause) {
    uint16_t buf[200];
    for (uint64_t i = ss_writer_count(w); i < last; i++) {
        uint64_t n = tok_len(i);
        for (uint64_t k = 0; k < n; k++) buf[k] = tok_at(i, k);
        uint32_t label = label_of(i);
        ss_value v[2] = {{buf, n}, {&label, 1}};
        int rc = ss_writer_append(w, v);
        if (rc) return rc;
        if (pause && (i + 1) % COMMIT_EVERY == 0) {
            if ((rc = ss_writer_commit(w))) return rc;
            struct timespec ts = {0, 3000000}; /* let readers see this state */
            nanosleep(&ts, NULL);
        }
    }
    return 0;
}

/* 0 if example i of `s` is exactly what was written, else 1 (no exit: threads). */
static int example_bad(const ss_store *s, uint64_t i) {
    ss_view v;
    if (ss_get(&v, s, 0, i) || v.length != tok_len(i)) return 1;
    const uint16_t *t = v.data;
    for (uint64_t k = 0; k < v.length; k++)
        if (t[k] != tok_at(i, k)) return 1;
    if (ss_get(&v, s, 1, i) || *(const uint32_t *)v.data != label_of(i)) return 1;
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

/* Check a random sample plus the newest examples (those in the chunk the
 * writer keeps rewriting). */
static int sample_bad(const ss_store *s, uint64_t count, uint64_t *rng) {
    for (int j = 0; j < 300; j++)
        if (example_bad(s, ss_test_rand(rng) % count)) return 1;
    for (uint64_t i = count > 100 ? count - 100 : 0; i < count; i++)
        if (example_bad(s, i)) return 1;
    return 0;
}

/* --------------------------------------------------------------- processes */

static void wait_go(int fd) {
    char c;
    if (read(fd, &c, 1) != 1) _exit(3);
}

static void writer_process(const char *path, int go) {
    wait_go(go);
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = 2;
    o.commit_bytes = 32 << 10;
    o.map_bytes = 1 << 20; /* the map must grow while readers hold it */
    o.flags = SS_WRITE_NOSYNC;
    ss_writer *w;
    int rc = ss_writer_open(&w, path, &schema, &o);
    if (rc == 0) rc = append_to(w, N1, 1);
    if (rc == 0) rc = ss_writer_finish(w);
    if (rc) fprintf(stderr, "writer: %s\n", ss_error_message());
    ss_writer_free(w);
    _exit(rc ? 1 : 0);
}

/* Open and reopen until the finished append is visible. Reports on `out`:
 * opens, opens that saw a state strictly between N0 and N1. */
static void reader_process(const char *path, int go, int out, uint64_t seed) {
    wait_go(go);
    uint64_t rng = seed, opens = 0, between = 0, last_k = N0;
    for (;;) {
        ss_store *s;
        if (ss_open(&s, path, 0)) {
            fprintf(stderr, "reader: %s\n", ss_error_message());
            _exit(1);
        }
        uint64_t n = ss_count(s);
        if ((n != N0 && n != N1) || sample_bad(s, n, &rng)) {
            fprintf(stderr, "reader: finished state of %llu examples is wrong\n",
                    (unsigned long long)n);
            _exit(1);
        }
        ss_close(s);
        opens++;
        if (n == N1) break;
        if (ss_open(&s, path, SS_OPEN_INCOMPLETE)) {
            fprintf(stderr, "reader (progress): %s\n", ss_error_message());
            _exit(1);
        }
        uint64_t k = ss_count(s);
        if (k < last_k || k > N1 || sample_bad(s, k, &rng)) {
            fprintf(stderr, "reader: progress of %llu examples (after %llu) is wrong\n",
                    (unsigned long long)k, (unsigned long long)last_k);
            _exit(1);
        }
        between += k > N0 && k < N1;
        last_k = k;
        ss_close(s);
        opens++;
    }
    uint64_t report[2] = {opens, between};
    if (write(out, report, sizeof report) != sizeof report) _exit(2);
    _exit(0);
}

/* ----------------------------------------------------------------- threads */

typedef struct thread_arg {
    const ss_store *shared; /* opened before the append: sees N0 throughout */
    const char *path;
    int id;
    atomic_int *writer_done;
    int own_opens; /* also open (and close) stores of its own */
    uint64_t reads, opens, saw_new;
    int failed;
} thread_arg;

static void thread_fail(thread_arg *a, const char *what) {
    fprintf(stderr, "thread %d: %s (last error: %s)\n", a->id, what, ss_error_message());
    a->failed = 1;
}

static void *reader_thread(void *p) {
    thread_arg *a = p;
    uint64_t rng = 1000 + (uint64_t)a->id;
    char want[64];
    snprintf(want, sizeof want, "example %llu is out of range", (unsigned long long)(N0 + a->id));
    int opened_after = 0; /* a store of its own opened after the append finished */
    for (int round = 0;; round++) {
        int done = atomic_load(a->writer_done);
        if (ss_count(a->shared) != N0 || sample_bad(a->shared, N0, &rng))
            thread_fail(a, "the snapshot opened before the append changed");
        a->reads += 400;
        /* each thread's error message is its own */
        ss_view v;
        if (ss_get(&v, a->shared, 0, N0 + (uint64_t)a->id) != SS_ERANGE)
            thread_fail(a, "no SS_ERANGE");
        sched_yield();
        if (!strstr(ss_error_message(), want)) thread_fail(a, "error message not thread-local");
        /* a store of its own, opened now; once more after the append finished,
         * whatever the round (the check that new opens see it needs one) */
        if (a->own_opens && (round % 8 == 0 || (done && !opened_after))) {
            ss_store *s;
            if (ss_open(&s, a->path, 0)) {
                thread_fail(a, "ss_open failed");
            } else {
                uint64_t n = ss_count(s);
                if ((n != N0 && n != N1) || sample_bad(s, n, &rng))
                    thread_fail(a, "a store opened during the append is wrong");
                a->saw_new += n == N1;
                ss_close(s);
                a->opens++;
            }
            opened_after |= done;
        }
        if (a->failed || (done && round > 16 && (opened_after || !a->own_opens))) break;
    }
    return NULL;
}

static void make_base(const char *path) {
    ss_writer *w;
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = 2;
    o.flags = SS_WRITE_NOSYNC | SS_WRITE_FORCE;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    CHECK_OK(append_to(w, N0, 0));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

/* Phase 1: reader processes and threads sharing one store opened before the
 * append, while a writer process appends. Phase 2 (own_opens): the threads
 * also open and close stores of their own in this process. */
static int run_phase(const char *path, int own_opens) {
    make_base(path);
    /* Processes first (nothing is open yet: no store crosses a fork). */
    int go[2], rep[2];
    CHECK(pipe(go) == 0 && pipe(rep) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t writer = fork();
    CHECK(writer >= 0);
    if (writer == 0) writer_process(path, go[0]);
    pid_t readers[NPROCS];
    for (int r = 0; r < NPROCS; r++) {
        readers[r] = fork();
        CHECK(readers[r] >= 0);
        if (readers[r] == 0) reader_process(path, go[0], rep[1], 77 + (uint64_t)r);
    }
    close(go[0]);
    close(rep[1]);

    /* The shared store, opened before the append starts. */
    ss_store *old;
    CHECK_OK(ss_open(&old, path, 0));
    check_all(old, N0);
    ss_view last_before;
    CHECK_OK(ss_get(&last_before, old, 0, N0 - 1));

    atomic_int writer_done = 0;
    thread_arg args[NTHREADS];
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        args[t] = (thread_arg){old, path, t, &writer_done, own_opens, 0, 0, 0, 0};
        CHECK(pthread_create(&th[t], NULL, reader_thread, &args[t]) == 0);
    }
    char gobytes[NPROCS + 1];
    memset(gobytes, 'g', sizeof gobytes);
    CHECK(write(go[1], gobytes, sizeof gobytes) == (ssize_t)sizeof gobytes);
    close(go[1]);

    int status, failed = 0;
    CHECK(waitpid(writer, &status, 0) == writer);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    atomic_store(&writer_done, 1);
    uint64_t reads = 0, opens = 0, saw_new = 0;
    for (int t = 0; t < NTHREADS; t++) {
        CHECK(pthread_join(th[t], NULL) == 0);
        failed |= args[t].failed;
        reads += args[t].reads;
        opens += args[t].opens;
        saw_new += args[t].saw_new;
    }
    uint64_t proc_opens = 0, proc_between = 0;
    for (int r = 0; r < NPROCS; r++) {
        CHECK(waitpid(readers[r], &status, 0) == readers[r]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            failed = 1;
            continue;
        }
        uint64_t report[2];
        CHECK(read(rep[0], report, sizeof report) == sizeof report);
        proc_opens += report[0];
        proc_between += report[1];
    }
    close(rep[0]);
    printf("phase %d: %d threads read %llu examples and opened %llu stores; %d processes "
           "opened %llu stores, %llu of them mid-append\n",
           1 + own_opens, NTHREADS, (unsigned long long)reads, (unsigned long long)opens, NPROCS,
           (unsigned long long)proc_opens, (unsigned long long)proc_between);
    if (failed) {
        ss_close(old);
        return 1;
    }
    /* the readers really ran during the append */
    CHECK(proc_between > 0);
    /* stores opened after the finish see the new examples */
    if (own_opens) CHECK(saw_new > 0);

    /* The old snapshot is intact although the append rewrote its last chunk
     * and index segment; the pointer taken before is still valid. */
    check_all(old, N0);
    ss_view again;
    CHECK_OK(ss_get(&again, old, 0, N0 - 1));
    CHECK(again.data == last_before.data && again.length == tok_len(N0 - 1));
    CHECK_OK(ss_verify(NULL, old, NULL, NULL));
    ss_close(old);

    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));
    check_all(s, N1);
    CHECK_OK(ss_verify(NULL, s, NULL, NULL));
    ss_close(s);
    return 0;
}

/* The smallest case of phase 2: open the store twice in this process, close
 * one, and let another process append. The other store's snapshot must not
 * change (LMDB's lock on the lock file must survive the close). */
static int double_open(const char *path) {
    make_base(path);
    ss_store *a, *b;
    CHECK_OK(ss_open(&a, path, 0));
    CHECK_OK(ss_open(&b, path, 0));
    check_all(b, N0);
    ss_close(b);
    int go[2];
    CHECK(pipe(go) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t writer = fork();
    CHECK(writer >= 0);
    if (writer == 0) writer_process(path, go[0]);
    close(go[0]);
    CHECK(write(go[1], "g", 1) == 1);
    close(go[1]);
    int status;
    CHECK(waitpid(writer, &status, 0) == writer);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    uint64_t bad = 0;
    for (uint64_t i = 0; i < N0; i++) bad += (uint64_t)example_bad(a, i);
    ss_close(a);
    if (bad)
        fprintf(stderr,
                "FAIL: %llu examples of a snapshot changed under it after the same store was "
                "opened and closed again in this process while another process appended\n",
                (unsigned long long)bad);
    return bad != 0;
}

int main(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s", ss_test_path("shared.ss"));
    int failures = 0;
    if (run_phase(path, 0)) {
        fprintf(stderr, "FAIL: phase 1 (one store per process)\n");
        failures++;
    }
    if (double_open(path)) failures++;
    if (run_phase(path, 1)) {
        fprintf(stderr, "FAIL: phase 2 (threads also open stores of their own)\n");
        failures++;
    }
    if (failures) return 1;
    printf("concurrency: ok\n");
    return 0;
}
