/* SPDX-License-Identifier: BSD-2-Clause */
/* seqstore_mpi.c - `mpirun -n N seqstore-mpi convert KIND ARGS... -o DIR`:
 * conversion spread over MPI ranks, each writing one shard of a dataset
 * (spec/FORMAT.md §13), rank 0 writing the manifest once every shard has
 * finished and verified.
 *
 * Rank r runs `seqstore convert KIND ARGS... --shard r/N -o
 * DIR/part-RRRRR-of-NNNNN.ss` (the seqstore program next to this one, or
 * $SEQSTORE) and then opens its shard with SS_OPEN_VERIFY and verifies every
 * checksum. The ranks agree on the outcome with MPI_Allgather: if any failed,
 * every rank exits 1 and rank 0 names the failed ranks (their own messages
 * are on stderr above); the manifest, removed at the start, is not written,
 * so nothing claims a complete dataset. A rank killed outright makes mpirun
 * end the job the same way. With --resume, a rank whose shard is already
 * complete keeps it, and an interrupted shard continues from its last commit
 * (`convert --resume`): rerunning finishes only what is missing.
 *
 * Word vocabularies (`--tokens words` of text, parallel and jsonl, without --vocab)
 * are shared: every rank first counts the words of its own slice
 * (`convert ... --count-only`), the counts are reduced to rank 0 (gathered
 * in rank order and written as DIR/word.counts), and every rank then
 * converts with `--counts DIR/word.counts`: the vocabulary a single process
 * builds, each rank having counted only 1/N of the input. */
#include "seqstore.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* --times: wall seconds of this rank's phases (MPI_Wtime), printed by rank 0
 * as the maximum over the ranks, so that a benchmark can tell the work that
 * scales with 1/N from the fixed costs. */
enum { T_COUNT, T_REDUCE, T_CONVERT, T_VERIFY, T_WAIT, T_MANIFEST, T_ALL, T_CPU, T_N };
static const char *const phase_names[T_N] = {"count", "reduce",   "convert", "verify",
                                             "wait",  "manifest", "total",   "work-cpu"};
static double phase_secs[T_N];

/* CPU seconds (user + sys) of this process, or of its waited-for children:
 * work-cpu is the count and convert processes' plus the verify's, the work
 * a rank does whatever else shares its CPUs. */
static double cpu_secs(int who) {
    struct rusage ru;
    getrusage(who, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* Under AddressSanitizer, no leak report for this driver: Open MPI's
 * MPI_Finalize leaves its plugins' allocations (in libraries it has already
 * unloaded, so no suppression can name them). The seqstore processes it runs
 * are checked as usual. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
    return "detect_leaks=0";
}

#if defined(__SANITIZE_ADDRESS__)
/* ASAN_OPTIONS in the environment (CI sets detect_leaks=1) overrides the
 * default above. Then run this driver once more with leak checks appended
 * as off (ASan takes the last value of a flag), and give the seqstore
 * processes it starts the caller's options back. */
static void asan_no_leak_check_here(char **argv) {
    const char *saved = getenv("SS_MPI_ASAN_OPTIONS");
    if (saved) { /* the second run: options parsed; restore for children */
        setenv("ASAN_OPTIONS", saved, 1);
        unsetenv("SS_MPI_ASAN_OPTIONS");
        return;
    }
    const char *o = getenv("ASAN_OPTIONS");
    if (!o || !strstr(o, "detect_leaks=1")) return;
    char buf[2048];
    if ((size_t)snprintf(buf, sizeof buf, "%s:detect_leaks=0", o) >= sizeof buf) return;
    setenv("SS_MPI_ASAN_OPTIONS", o, 1);
    setenv("ASAN_OPTIONS", buf, 1);
    execv("/proc/self/exe", argv); /* on failure, go on with leak checks */
    unsetenv("SS_MPI_ASAN_OPTIONS");
}
#endif

static void usage(FILE *out) {
    fprintf(out,
            "usage: mpirun -n N seqstore-mpi convert KIND INPUT... [OPTIONS] -o DIR [--resume]\n"
            "       [--times]\n\n"
            "Each of the N ranks converts its slice of the inputs (seqstore convert ...\n"
            "--shard RANK/N) into DIR/part-RRRRR-of-NNNNN.ss and verifies it; rank 0 then\n"
            "writes DIR/dataset.manifest (seqstore dataset build). A failed rank fails the\n"
            "job and no manifest is written. --resume keeps complete shards and continues\n"
            "interrupted ones. OPTIONS are those of `seqstore convert KIND` (--force to\n"
            "replace existing shards). The seqstore program is $SEQSTORE, else the one next\n"
            "to this program. With --tokens words (text, parallel, jsonl; no --vocab) each\n"
            "rank first counts the words of its slice (--count-only); the counts are reduced\n"
            "to DIR/word.counts and every shard is converted with --counts DIR/word.counts:\n"
            "one vocabulary, the single process's. --times: rank 0 prints the seconds of\n"
            "each phase (count, reduce, convert, verify, wait for the slowest rank,\n"
            "manifest, total after MPI_Init) and the CPU seconds of count, convert and\n"
            "verify (work-cpu), each the maximum over the ranks.\n");
}

/* The seqstore program: $SEQSTORE, else `seqstore` in this program's directory. */
static void find_seqstore(char *buf, size_t cap) {
    const char *env = getenv("SEQSTORE");
    if (env && *env) {
        snprintf(buf, cap, "%s", env);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(buf, cap, "%s/seqstore", n > 0 ? self : ".");
}

/* Run argv; returns its exit code, or 128 + signal. The child dies with this
 * rank: a rank killed outright (mpirun ending the job, kill -9) must not
 * leave its conversion writing the shard, a second writer beside the one a
 * --resume starts. PR_SET_PDEATHSIG fires when the forking thread ends, and
 * this (main) thread lives as long as the rank; the getppid() test covers a
 * rank that died before the child set it. Between fork and exec only
 * async-signal-safe calls (MPI's threads do not exist in the child). */
static int run(char *const argv[]) {
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        fprintf(stderr, "seqstore-mpi: cannot run '%s': %s\n", argv[0], strerror(errno));
        return 127;
    }
    if (pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
        execve(argv[0], argv, environ);
        static const char msg[] = "seqstore-mpi: cannot run the seqstore program\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return 127;
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

/* Is `path` a complete shard store? */
static int shard_complete(const char *path) {
    ss_store *s;
    if (ss_open(&s, path, SS_OPEN_NOLOCK)) return 0;
    ss_close(s);
    return 1;
}

/* Open with SS_OPEN_VERIFY and recompute every checksum. 0 = sound. */
static int verify_shard(const char *path) {
    ss_store *s;
    uint64_t problems = 0;
    int rc = ss_open(&s, path, SS_OPEN_NOLOCK | SS_OPEN_VERIFY);
    if (!rc) rc = ss_verify(&problems, s, NULL, NULL);
    if (rc) fprintf(stderr, "seqstore-mpi: shard '%s': %s\n", path, ss_error_message());
    ss_close(s);
    return rc;
}

typedef struct job {
    const char *dir;
    int resume;
    char **pass; /* convert KIND ARGS... without -o DIR and --resume */
    int npass;
    int count_words;            /* words counted per rank, then reduced (see above) */
    int times;                  /* --times: print the phases' times */
    char counts[PATH_MAX + 32]; /* DIR/word.counts */
} job;

/* Does the conversion build a word vocabulary that the ranks must share? */
static int needs_word_counts(const job *j) {
    int words = 0;
    if (strcmp(j->pass[1], "text") && strcmp(j->pass[1], "parallel") && strcmp(j->pass[1], "jsonl"))
        return 0;
    for (int i = 2; i < j->npass; i++) {
        const char *a = j->pass[i];
        if (!strcmp(a, "--vocab") || !strcmp(a, "--src-vocab") || !strcmp(a, "--tgt-vocab") ||
            !strcmp(a, "--counts") || !strcmp(a, "--count-only") || !strcmp(a, "--append"))
            return 0;
        if ((!strcmp(a, "--tokens") || !strcmp(a, "--src-tokens") || !strcmp(a, "--tgt-tokens")) &&
            i + 1 < j->npass && !strcmp(j->pass[i + 1], "words"))
            words = 1;
    }
    return words;
}

static int parse(job *j, int argc, char **argv) {
    memset(j, 0, sizeof *j);
    j->pass = calloc((size_t)argc + 8, sizeof *j->pass);
    if (!j->pass) return -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            if (++i >= argc) return -1;
            j->dir = argv[i];
        } else if (!strcmp(argv[i], "--resume")) {
            j->resume = 1;
        } else if (!strcmp(argv[i], "--times")) {
            j->times = 1;
        } else if (!strcmp(argv[i], "--shard")) {
            return -1; /* the driver chooses the shard */
        } else {
            j->pass[j->npass++] = argv[i];
        }
    }
    return j->dir && j->npass >= 2 && !strcmp(j->pass[0], "convert") ? 0 : -1;
}

/* This rank's conversion and check; 0 = its shard is complete and sound. */
static int convert_rank(const job *j, const char *prog, int rank, int size, const char *shard) {
    if (j->resume && shard_complete(shard)) return verify_shard(shard);
    char spec[64], kill_after[64];
    snprintf(spec, sizeof spec, "%d/%d", rank, size);
    char **argv = calloc((size_t)j->npass + 10, sizeof *argv);
    if (!argv) return 1;
    int n = 0;
    argv[n++] = (char *)prog;
    for (int i = 0; i < j->npass; i++) argv[n++] = j->pass[i];
    argv[n++] = "--shard", argv[n++] = spec, argv[n++] = "-o", argv[n++] = (char *)shard;
    argv[n++] = "--quiet";
    if (j->count_words) argv[n++] = "--counts", argv[n++] = (char *)j->counts;
    struct stat st;
    if (j->resume && stat(shard, &st) == 0) argv[n++] = "--resume";
    /* tests: SS_MPI_TEST_KILL=RANK:N kills that rank mid-way (SIGKILL after
     * N examples), the rank dying with its conversion */
    const char *kill = getenv("SS_MPI_TEST_KILL");
    int victim = kill && atoi(kill) == rank && strchr(kill, ':');
    if (victim) {
        snprintf(kill_after, sizeof kill_after, "%s", strchr(kill, ':') + 1);
        setenv("SS_TEST_KILL_AFTER", kill_after, 1);
    }
    double t0 = MPI_Wtime(), c0 = cpu_secs(RUSAGE_CHILDREN);
    int rc = run(argv);
    free(argv);
    phase_secs[T_CONVERT] = MPI_Wtime() - t0;
    phase_secs[T_CPU] += cpu_secs(RUSAGE_CHILDREN) - c0;
    if (victim && rc == 128 + SIGKILL) raise(SIGKILL);
    if (rc) {
        fprintf(stderr, "seqstore-mpi: rank %d: seqstore convert exited with %d\n", rank, rc);
        return rc;
    }
    t0 = MPI_Wtime(), c0 = cpu_secs(RUSAGE_SELF);
    rc = verify_shard(shard);
    phase_secs[T_VERIFY] = MPI_Wtime() - t0;
    phase_secs[T_CPU] += cpu_secs(RUSAGE_SELF) - c0;
    return rc;
}

/* The whole of `path` in *out (malloc'ed), its size in *n. 0 or -1. */
static int slurp(const char *path, char **out, long *n) {
    FILE *f = fopen(path, "rb");
    *out = NULL;
    if (!f) return -1;
    int rc = fseek(f, 0, SEEK_END) || (*n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ? -1 : 0;
    if (!rc && (*n > INT_MAX || !(*out = malloc((size_t)*n + 1)))) rc = -1;
    if (!rc && fread(*out, 1, (size_t)*n, f) != (size_t)*n) rc = -1;
    fclose(f);
    if (rc) free(*out), *out = NULL;
    return rc;
}

/* Every rank counts the words of its slice; the counts are gathered to rank
 * 0 in rank order and written as j->counts (a counts file of N documents,
 * read by `convert --counts`). Collective; 0 on every rank if all went well. */
static int reduce_word_counts(const job *j, const char *prog, int rank, int size) {
    char spec[64], mine[PATH_MAX + 64];
    snprintf(spec, sizeof spec, "%d/%d", rank, size);
    snprintf(mine, sizeof mine, "%s/word-%05d-of-%05d.counts.tmp", j->dir, rank, size);
    char **argv = calloc((size_t)j->npass + 10, sizeof *argv);
    int n = 0, status = argv ? 0 : 1;
    if (argv) {
        argv[n++] = (char *)prog;
        for (int i = 0; i < j->npass; i++) argv[n++] = j->pass[i];
        argv[n++] = "--shard", argv[n++] = spec, argv[n++] = "--count-only";
        argv[n++] = "-o", argv[n++] = mine, argv[n++] = "--quiet";
        double t0 = MPI_Wtime(), c0 = cpu_secs(RUSAGE_CHILDREN);
        status = run(argv);
        phase_secs[T_COUNT] = MPI_Wtime() - t0;
        phase_secs[T_CPU] += cpu_secs(RUSAGE_CHILDREN) - c0;
        free(argv);
    }
    double t0 = MPI_Wtime();
    char *text = NULL;
    long len = 0;
    if (!status && slurp(mine, &text, &len)) {
        fprintf(stderr, "seqstore-mpi: rank %d: cannot read '%s'\n", rank, mine);
        status = 1;
    }
    unlink(mine);
    /* the reduce: sizes, then the counts themselves, to rank 0 */
    int mylen = status ? -1 : (int)len, *lens = calloc((size_t)size, sizeof *lens);
    int *offs = calloc((size_t)size, sizeof *offs);
    MPI_Gather(&mylen, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    long total = 0;
    int ok = lens && offs;
    for (int r = 0; rank == 0 && r < size; r++) {
        if (lens[r] < 0) ok = 0;
        offs[r] = (int)total;
        total += lens[r] > 0 ? lens[r] : 0;
        if (total > INT_MAX) ok = 0; /* MPI counts are int */
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *all = rank == 0 && ok ? malloc((size_t)total + 1) : NULL;
    if (ok) {
        MPI_Gatherv(text, mylen, MPI_CHAR, all, lens, offs, MPI_CHAR, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            FILE *f = fopen(j->counts, "wb");
            ok = f && fwrite(all, 1, (size_t)total, f) == (size_t)total && !fflush(f) &&
                 !fsync(fileno(f));
            if (f && fclose(f)) ok = 0;
            if (!ok) fprintf(stderr, "seqstore-mpi: cannot write '%s'\n", j->counts);
        }
        MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    } else if (rank == 0) {
        fprintf(stderr, "seqstore-mpi: counting words failed (or the counts exceed 2 GiB); no "
                        "shard converted\n");
    }
    free(all);
    free(text);
    free(lens);
    free(offs);
    phase_secs[T_REDUCE] = MPI_Wtime() - t0;
    return ok ? 0 : 1;
}

/* --times: rank 0 prints each phase's maximum over the ranks. Collective. */
static void print_times(int rank, int size) {
    double max[T_N];
    MPI_Reduce(phase_secs, max, T_N, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank) return;
    fprintf(stderr, "seqstore-mpi: %d ranks, seconds (max over ranks):", size);
    for (int p = 0; p < T_N; p++) fprintf(stderr, " %s %.3f", phase_names[p], max[p]);
    fputc('\n', stderr);
}

/* Rank 0: `seqstore dataset build DIR part-0 ... part-N-1`, in order. */
static int build_manifest(const char *prog, const char *dir, int size) {
    char **argv = calloc((size_t)size + 6, sizeof *argv);
    if (!argv) return 1;
    int n = 0, rc = 0;
    argv[n++] = (char *)prog, argv[n++] = "dataset", argv[n++] = "build", argv[n++] = (char *)dir;
    for (int r = 0; r < size && !rc; r++)
        if (asprintf(&argv[n++], "part-%05d-of-%05d.ss", r, size) < 0) rc = 1;
    if (!rc) rc = run(argv);
    for (int i = 4; i < n; i++) free(argv[i]);
    free(argv);
    return rc;
}

int main(int argc, char **argv) {
#if defined(__SANITIZE_ADDRESS__)
    asan_no_leak_check_here(argv);
#endif
    MPI_Init(&argc, &argv);
    double start = MPI_Wtime();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    job j;
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        if (rank == 0) usage(stdout);
        MPI_Finalize();
        return 0;
    }
    if (parse(&j, argc, argv)) {
        if (rank == 0) usage(stderr);
        MPI_Finalize();
        return 2;
    }
    char prog[PATH_MAX + 16], shard[PATH_MAX + 64], manifest[PATH_MAX + 32];
    find_seqstore(prog, sizeof prog);
    snprintf(shard, sizeof shard, "%s/part-%05d-of-%05d.ss", j.dir, rank, size);
    snprintf(manifest, sizeof manifest, "%s/dataset.manifest", j.dir);
    int ok = 1;
    if (rank == 0) { /* no manifest claims completeness until this run's is written */
        if (mkdir(j.dir, 0777) != 0 && errno != EEXIST) ok = 0;
        if (unlink(manifest) != 0 && errno != ENOENT) ok = 0;
        if (!ok) fprintf(stderr, "seqstore-mpi: '%s': %s\n", j.dir, strerror(errno));
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    j.count_words = needs_word_counts(&j);
    snprintf(j.counts, sizeof j.counts, "%s/word.counts", j.dir);
    if (ok && j.count_words && reduce_word_counts(&j, prog, rank, size)) ok = 0;
    int status = ok ? convert_rank(&j, prog, rank, size, shard) : 1;
    int *all = malloc((size_t)size * sizeof *all);
    double t0 = MPI_Wtime();
    MPI_Allgather(&status, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    phase_secs[T_WAIT] = MPI_Wtime() - t0; /* for the slowest rank */
    int failed = 0;
    for (int r = 0; r < size; r++) failed += all[r] != 0;
    int rc = failed ? 1 : 0;
    if (rank == 0 && failed) {
        fprintf(stderr, "seqstore-mpi: %d of %d ranks failed (", failed, size);
        for (int r = 0, k = 0; r < size; r++)
            if (all[r]) fprintf(stderr, "%srank %d", k++ ? ", " : "", r);
        fprintf(stderr, "); no manifest written: rerun with --resume\n");
    }
    t0 = MPI_Wtime();
    if (rank == 0 && !failed) rc = build_manifest(prog, j.dir, size) ? 1 : 0;
    phase_secs[T_MANIFEST] = MPI_Wtime() - t0;
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    phase_secs[T_ALL] = MPI_Wtime() - start;
    if (j.times) print_times(rank, size);
    free(all);
    free(j.pass);
    MPI_Finalize();
    return rc;
}
