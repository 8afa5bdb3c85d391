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
 * (`convert ... --count-only`), the counts are reduced by hash partition of
 * the words (see reduce_word_counts()) into one document, DIR/word.counts,
 * and every rank then converts with `--counts DIR/word.counts`: the
 * vocabulary a single process builds, each rank having counted only 1/N of
 * the input.
 *
 * -o s3://BUCKET/PREFIX writes the dataset to object storage (spec/FORMAT.md
 * §14): rank r's conversion is `seqstore convert ... -o
 * URL/part-RRRRR-of-NNNNN.ss --scratch SCRATCH`, which writes the shard in
 * the local directory SCRATCH, verifies it and uploads it (deleting the
 * manifest object first), and rank 0, once every rank succeeded, runs
 * `seqstore dataset build URL ... --scratch SCRATCH`, which uploads the
 * sections store and, last, the manifest. Rank 0 builds the manifest from
 * the shard files: those its SCRATCH lacks (ranks on other nodes with a
 * node-local SCRATCH) it downloads from their objects first, so a directory
 * every rank shares saves that transfer. With --resume a shard already
 * uploaded is neither converted nor uploaded again. */
#include "seqstore.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
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
enum { T_COUNT, T_REDUCE, T_CONVERT, T_VERIFY, T_WAIT, T_MANIFEST, T_ALL, T_CPU, T_RCPU, T_N };
static const char *const phase_names[T_N] = {"count", "reduce",   "convert",  "verify",    "wait",
                                             "manifest", "total", "work-cpu", "reduce-cpu"};
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
            "       [--times]\n"
            "       mpirun -n N seqstore-mpi convert KIND INPUT... [OPTIONS] -o s3://BUCKET/PREFIX\n"
            "       --scratch DIR [--resume] [--times]\n\n"
            "Each of the N ranks converts its slice of the inputs (seqstore convert ...\n"
            "--shard RANK/N) into DIR/part-RRRRR-of-NNNNN.ss and verifies it; rank 0 then\n"
            "writes DIR/dataset.manifest (seqstore dataset build). A failed rank fails the\n"
            "job and no manifest is written. --resume keeps complete shards and continues\n"
            "interrupted ones. OPTIONS are those of `seqstore convert KIND` (--force to\n"
            "replace existing shards). The seqstore program is $SEQSTORE, else the one next\n"
            "to this program. With --tokens words (text, parallel, jsonl; no --vocab) each\n"
            "rank first counts the words of its slice (--count-only); the counts are reduced\n"
            "(each rank sums 1/N of the words) to DIR/word.counts and every shard is\n"
            "converted with --counts DIR/word.counts:\n"
            "one vocabulary, the single process's. --times: rank 0 prints the seconds of\n"
            "each phase (count, reduce, convert, verify, wait for the slowest rank,\n"
            "manifest, total after MPI_Init), the CPU seconds of count, convert and\n"
            "verify (work-cpu) and of the counts reduce (reduce-cpu), each the maximum\n"
            "over the ranks.\n"
            "With -o s3://BUCKET/PREFIX each rank writes its shard to DIR (--scratch, default\n"
            "$SEQSTORE_SCRATCH_DIR), verifies it and uploads it; rank 0 then builds the\n"
            "manifest from the shard files (downloading those its DIR lacks: a DIR every\n"
            "rank shares saves that) and uploads the sections store and the manifest last,\n"
            "only when every rank succeeded.\n"
            "--resume converts and uploads only what is missing.\n");
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
    const char *dir; /* the dataset directory, or with url the scratch directory */
    const char *url; /* -o s3://...: the dataset's URL; else NULL */
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

/* Messages from rank 0 only: every rank parses the same arguments. */
static int parse(job *j, int argc, char **argv, int rank) {
    memset(j, 0, sizeof *j);
    j->pass = calloc((size_t)argc + 8, sizeof *j->pass);
    if (!j->pass) return -1;
    const char *scratch = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            if (++i >= argc) return -1;
            j->dir = argv[i];
        } else if (!strcmp(argv[i], "--scratch")) {
            if (++i >= argc) return -1;
            scratch = argv[i];
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
    if (j->dir && strstr(j->dir, "://")) {
        j->url = j->dir;
        if (!scratch || !*scratch) scratch = getenv("SEQSTORE_SCRATCH_DIR");
        if (!scratch || !*scratch) {
            if (rank == 0)
                fprintf(stderr,
                        "seqstore-mpi: -o %s needs --scratch DIR (or SEQSTORE_SCRATCH_DIR): the "
                        "local directory where each rank's shard is written and verified "
                        "before its upload\n",
                        j->url);
            return -1;
        }
        j->dir = scratch;
    } else if (scratch) {
        if (rank == 0)
            fprintf(stderr, "seqstore-mpi: --scratch is for an output URL (-o s3://...)\n");
        return -1;
    }
    return j->dir && j->npass >= 2 && !strcmp(j->pass[0], "convert") ? 0 : -1;
}

/* This rank's conversion and check; 0 = its shard is complete and sound. */
static int convert_rank(const job *j, const char *prog, int rank, int size, const char *shard) {
    /* with a URL the conversion skips a complete shard itself, and uploads it
     * when the object lacks it */
    if (!j->url && j->resume && shard_complete(shard)) return verify_shard(shard);
    char spec[64], kill_after[64], *object = NULL;
    if (j->url && asprintf(&object, "%s/%s", j->url, strrchr(shard, '/') + 1) < 0) return 1;
    snprintf(spec, sizeof spec, "%d/%d", rank, size);
    char **argv = calloc((size_t)j->npass + 10, sizeof *argv);
    if (!argv) return 1;
    int n = 0;
    argv[n++] = (char *)prog;
    for (int i = 0; i < j->npass; i++) argv[n++] = j->pass[i];
    argv[n++] = "--shard", argv[n++] = spec, argv[n++] = "-o";
    argv[n++] = object ? object : (char *)shard;
    if (object) argv[n++] = "--scratch", argv[n++] = (char *)j->dir;
    argv[n++] = "--quiet";
    if (j->count_words) argv[n++] = "--counts", argv[n++] = (char *)j->counts;
    struct stat st;
    if (j->resume && (object || stat(shard, &st) == 0)) argv[n++] = "--resume";
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
    free(object);
    phase_secs[T_CONVERT] = MPI_Wtime() - t0;
    phase_secs[T_CPU] += cpu_secs(RUSAGE_CHILDREN) - c0;
    if (victim && rc == 128 + SIGKILL) raise(SIGKILL);
    if (rc) {
        fprintf(stderr, "seqstore-mpi: rank %d: seqstore convert exited with %d\n", rank, rc);
        return rc;
    }
    if (j->url) return 0; /* verified by the conversion before its upload */
    t0 = MPI_Wtime(), c0 = cpu_secs(RUSAGE_SELF);
    rc = verify_shard(shard);
    phase_secs[T_VERIFY] = MPI_Wtime() - t0;
    phase_secs[T_CPU] += cpu_secs(RUSAGE_SELF) - c0;
    return rc;
}

/* The whole of `path` in *out (malloc'ed, NUL-terminated), its size in *n.
 * 0 or -1. */
static int slurp(const char *path, char **out, size_t *n) {
    FILE *f = fopen(path, "rb");
    *out = NULL;
    if (!f) return -1;
    long size;
    int rc = fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ? -1 : 0;
    if (!rc && !(*out = malloc((size_t)size + 1))) rc = -1;
    if (!rc && fread(*out, 1, (size_t)size, f) != (size_t)size) rc = -1;
    fclose(f);
    if (rc) free(*out), *out = NULL;
    if (!rc) (*out)[size] = 0, *n = (size_t)size;
    return rc;
}

/* ------------------------------------------------------------ word counts
 *
 * Every rank counts the words of its slice (`convert --count-only`: a counts
 * document, converters/wordcounts.c). The documents are then reduced by hash
 * partition: rank r sends each word line to rank hash(section, word) mod N,
 * each rank sums the counts of its 1/N of the words over all N documents,
 * and rank 0 gathers the N disjoint sums into one document that covers the
 * whole input (shard 0 of 1) with the same header: DIR/word.counts, read by
 * every rank's conversion (`--counts`). Each rank thus handles about the
 * distinct words once (its own counts, its partition of everyone's), rank 0
 * the final vocabulary once more, whatever N; ss__vocab_build() orders words
 * by count and bytes only, so the vocabulary is the single process's.
 * Transfers go in pieces of at most 1 GiB: MPI counts are int. */

#define PIECE ((size_t)1 << 30)
#define MAX_SECTIONS 2 /* a parallel corpus's two sides */

typedef struct buf {
    char *d;
    size_t n, cap;
} buf;

static int buf_put(buf *b, const char *p, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->d, cap);
        if (!q) return -1;
        b->d = q;
        b->cap = cap;
    }
    memcpy(b->d + b->n, p, n);
    b->n += n;
    b->d[b->n] = 0;
    return 0;
}

/* FNV-1a, then a 64-bit finalizer: FNV's low bits depend only on the low
 * bits of the bytes, and both the partition (mod N) and the table (mask)
 * use low bits. */
static uint64_t hash_bytes(const char *p, size_t n, uint64_t h) {
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* A counts document split up: the header from "options" on, the section
 * names, and each section's word lines [start, end). */
typedef struct counts_doc {
    const char *rest;
    size_t rest_len;
    int nsec;
    const char *name[MAX_SECTIONS], *words[MAX_SECTIONS], *end[MAX_SECTIONS];
    size_t name_len[MAX_SECTIONS];
} counts_doc;

static const char *line_end(const char *p, const char *e) {
    const char *nl = memchr(p, '\n', (size_t)(e - p));
    return nl ? nl + 1 : e;
}

/* Parse one --count-only document (magic, shard line, header, sections). */
static int parse_counts(counts_doc *c, const char *d, size_t n) {
    const char *e = d + n, *p = line_end(d, e); /* past the magic */
    p = line_end(p, e);                         /* past "shard K N" */
    memset(c, 0, sizeof *c);
    c->rest = p;
    while (p < e && *p != '\t') p = line_end(p, e);
    c->rest_len = (size_t)(p - c->rest);
    while (p < e) {
        if (*p != '\t' || c->nsec == MAX_SECTIONS) return -1;
        const char *nl = line_end(p, e);
        int k = c->nsec++;
        c->name[k] = p + 1;
        c->name_len[k] = (size_t)(nl - p - 1) - (nl[-1] == '\n');
        c->words[k] = p = nl;
        while (p < e && *p != '\t') p = line_end(p, e);
        c->end[k] = p;
    }
    return c->nsec ? 0 : -1;
}

/* Send `n` bytes to / receive from `peer` in pieces (tag base + piece). */
static void big_isend(const char *d, size_t n, int peer, MPI_Request **rq, int *nrq) {
    for (size_t at = 0, k = 0; at < n; at += PIECE, k++) {
        size_t m = n - at < PIECE ? n - at : PIECE;
        MPI_Isend(d + at, (int)m, MPI_CHAR, peer, (int)k, MPI_COMM_WORLD, &(*rq)[(*nrq)++]);
    }
}
static void big_irecv(char *d, size_t n, int peer, MPI_Request **rq, int *nrq) {
    for (size_t at = 0, k = 0; at < n; at += PIECE, k++) {
        size_t m = n - at < PIECE ? n - at : PIECE;
        MPI_Irecv(d + at, (int)m, MPI_CHAR, peer, (int)k, MPI_COMM_WORLD, &(*rq)[(*nrq)++]);
    }
}
static size_t pieces(size_t n) {
    return (n + PIECE - 1) / PIECE;
}

/* All-to-all of byte buffers of any size: out[r] to rank r, in[r] (malloc'ed)
 * from rank r. Collective. 0 or -1 (out of memory, on this rank). */
static int exchange(const buf *out, buf *in, int size) {
    uint64_t *sn = calloc((size_t)size, 8), *rn = calloc((size_t)size, 8);
    int ok = sn && rn;
    for (int r = 0; ok && r < size; r++) sn[r] = out[r].n;
    MPI_Alltoall(sn, 1, MPI_UINT64_T, rn, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    size_t nreq = 0;
    for (int r = 0; ok && r < size; r++) nreq += pieces(sn[r]) + pieces(rn[r]);
    MPI_Request *rq = malloc((nreq ? nreq : 1) * sizeof *rq);
    int nrq = 0;
    for (int r = 0; ok && r < size; r++) {
        in[r].n = in[r].cap = rn[r];
        if (!(in[r].d = malloc(rn[r] + 1))) ok = 0;
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (ok && rq) {
        for (int r = 0; r < size; r++) big_irecv(in[r].d, rn[r], r, &rq, &nrq);
        for (int r = 0; r < size; r++) big_isend(out[r].d, sn[r], r, &rq, &nrq);
        MPI_Waitall(nrq, rq, MPI_STATUSES_IGNORE);
        for (int r = 0; r < size; r++) in[r].d[rn[r]] = 0;
    }
    free(rq);
    free(sn);
    free(rn);
    return ok && rq ? 0 : -1;
}

/* The sums of one section's words: open addressing over the received lines. */
typedef struct word_sum {
    const char *w; /* NULL: empty slot */
    size_t len;
    uint64_t hash, count;
} word_sum;

typedef struct sum_table {
    word_sum *slot;
    size_t cap, n;
} sum_table;

static int sum_add(sum_table *t, const char *w, size_t len, uint64_t h, uint64_t count) {
    if (2 * (t->n + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        word_sum *s = calloc(cap, sizeof *s);
        if (!s) return -1;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->slot[i].w) continue;
            size_t j = t->slot[i].hash & (cap - 1);
            while (s[j].w) j = (j + 1) & (cap - 1);
            s[j] = t->slot[i];
        }
        free(t->slot);
        t->slot = s;
        t->cap = cap;
    }
    size_t j = h & (t->cap - 1);
    for (; t->slot[j].w; j = (j + 1) & (t->cap - 1))
        if (t->slot[j].hash == h && t->slot[j].len == len && !memcmp(t->slot[j].w, w, len)) {
            t->slot[j].count += count;
            return 0;
        }
    t->slot[j] = (word_sum){w, len, h, count};
    t->n++;
    return 0;
}

/* The word lines of one received part ("WORD\tCOUNT\n"...) summed into t. */
static int sum_lines(sum_table *t, const char *p, const char *e) {
    while (p < e) {
        const char *nl = line_end(p, e), *tab = memchr(p, '\t', (size_t)(nl - p));
        if (!tab) return -1;
        uint64_t count = strtoull(tab + 1, NULL, 10);
        size_t len = (size_t)(tab - p);
        if (sum_add(t, p, len, hash_bytes(p, len, 0xcbf29ce484222325ull), count)) return -1;
        p = nl;
    }
    return 0;
}

/* The vocabulary's order (converters/vocab.c): most frequent first, ties
 * by bytes, a prefix first. The partitions are written in it and rank 0
 * merges them, so that every rank's conversion finds the reduced counts in
 * order and does not sort the whole vocabulary again. */
static int word_order(const char *a, size_t alen, uint64_t ca, const char *b, size_t blen,
                      uint64_t cb) {
    if (ca != cb) return ca > cb ? -1 : 1;
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c) return c;
    return alen < blen ? -1 : alen > blen;
}

static int by_word_order(const void *pa, const void *pb) {
    const word_sum *a = pa, *b = pb;
    return word_order(a->w, a->len, a->count, b->w, b->len, b->count);
}

/* This rank's partition: each section's summed words as word lines, in the
 * vocabulary's order. The parts received from each rank hold, per section,
 * a u64 byte count and the lines. */
static int sum_partition(buf *in, int size, int nsec, buf *out, uint64_t *sec_bytes) {
    int rc = 0;
    size_t lines = 0; /* an upper bound of the distinct words: no rehash */
    for (int r = 0; r < size; r++)
        for (const char *p = in[r].d, *e = p + in[r].n; (p = memchr(p, '\n', (size_t)(e - p))); p++)
            lines++;
    for (int s = 0; s < nsec && !rc; s++) {
        sum_table t = {NULL, 0, 0};
        size_t cap = 1024;
        while (cap < 2 * lines + 2) cap *= 2;
        if (!(t.slot = calloc(cap, sizeof *t.slot))) return -1;
        t.cap = cap;
        for (int r = 0; r < size && !rc; r++) {
            const char *p = in[r].d;
            for (int k = 0; k < s; k++) {
                uint64_t n;
                memcpy(&n, p, 8);
                p += 8 + n;
            }
            uint64_t n;
            memcpy(&n, p, 8);
            rc = sum_lines(&t, p + 8, p + 8 + n);
        }
        size_t before = out->n, n = 0;
        for (size_t i = 0; i < t.cap; i++) /* the entries, packed */
            if (t.slot[i].w) t.slot[n++] = t.slot[i];
        if (!rc) qsort(t.slot, n, sizeof *t.slot, by_word_order);
        for (size_t i = 0; i < n && !rc; i++) {
            char digits[24], *d = digits + sizeof digits;
            *--d = '\n';
            for (uint64_t v = t.slot[i].count; d == digits + sizeof digits - 1 || v; v /= 10)
                *--d = (char)('0' + v % 10);
            *--d = '\t';
            if (buf_put(out, t.slot[i].w, t.slot[i].len) ||
                buf_put(out, d, (size_t)(digits + sizeof digits - d)))
                rc = -1;
        }
        sec_bytes[s] = out->n - before;
        free(t.slot);
    }
    return rc;
}

/* One partition's lines of a section, read a line at a time. */
typedef struct word_run {
    const char *p, *e; /* the current line, the run's end */
    const char *tab, *next;
    uint64_t count;
} word_run;

/* Parse the current line: 1, or 0 at the run's end. */
static int run_head(word_run *u) {
    if (u->p >= u->e) return 0;
    u->next = line_end(u->p, u->e);
    u->tab = memchr(u->p, '\t', (size_t)(u->next - u->p));
    if (!u->tab) u->tab = u->next; /* not a word line (never written so): first */
    u->count = u->tab < u->next ? strtoull(u->tab + 1, NULL, 10) : UINT64_MAX;
    return 1;
}

static int run_before(const word_run *a, const word_run *b) {
    return word_order(a->p, (size_t)(a->tab - a->p), a->count, b->p, (size_t)(b->tab - b->p),
                      b->count) < 0;
}

static void sift_down(word_run *u, int *h, int m, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, b = i;
        if (l < m && run_before(&u[h[l]], &u[h[b]])) b = l;
        if (r < m && run_before(&u[h[r]], &u[h[b]])) b = r;
        if (b == i) return;
        int t = h[i];
        h[i] = h[b];
        h[b] = t;
        i = b;
    }
}

/* Write the n runs (each in the vocabulary's order) merged, in that order:
 * a heap of the runs' current lines. 0, or -1 on a write error. */
static int merge_runs(FILE *f, word_run *u, int n) {
    int *h = malloc((size_t)(n ? n : 1) * sizeof *h), m = 0, ok = h != NULL;
    for (int i = 0; ok && i < n; i++)
        if (run_head(&u[i])) h[m++] = i;
    for (int i = m / 2 - 1; ok && i >= 0; i--) sift_down(u, h, m, i);
    while (ok && m) {
        word_run *x = &u[h[0]];
        size_t len = (size_t)(x->next - x->p);
        ok = fwrite(x->p, 1, len, f) == len;
        x->p = x->next;
        if (!run_head(x)) h[0] = h[--m];
        sift_down(u, h, m, 0);
    }
    free(h);
    return ok ? 0 : -1;
}

/* Rank 0: the N partitions' sums as one document covering shard 0 of 1,
 * each section's words merged into the vocabulary's order. */
static int write_reduced(const char *path, const counts_doc *c, char *const *part,
                         uint64_t *const *sec_bytes, int size) {
    char tmp[PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    int ok = f && fprintf(f, "seqstore-counts 1\nshard\t0\t1\n") > 0 &&
             fwrite(c->rest, 1, c->rest_len, f) == c->rest_len;
    size_t *at = calloc((size_t)size, sizeof *at);
    word_run *u = calloc((size_t)size, sizeof *u);
    ok = ok && at && u;
    for (int s = 0; ok && s < c->nsec; s++) {
        ok = fputc('\t', f) != EOF && fwrite(c->name[s], 1, c->name_len[s], f) == c->name_len[s] &&
             fputc('\n', f) != EOF;
        for (int r = 0; ok && r < size; r++) {
            size_t n = (size_t)sec_bytes[r][s];
            u[r] = (word_run){part[r] + at[r], part[r] + at[r] + n, NULL, NULL, 0};
            at[r] += n;
        }
        ok = ok && merge_runs(f, u, size) == 0;
    }
    free(u);
    free(at);
    ok = ok && !fflush(f) && !fsync(fileno(f));
    if (f && fclose(f)) ok = 0;
    if (ok && rename(tmp, path)) ok = 0;
    if (!ok) unlink(tmp);
    return ok ? 0 : -1;
}

/* The partition of this rank's counts by word hash: out[o] holds, per
 * section, a u64 byte count and the word lines rank o sums. */
static int partition_counts(const counts_doc *c, buf *out, int size) {
    for (int s = 0; s < c->nsec; s++) {
        size_t *len_at = calloc((size_t)size, sizeof *len_at);
        if (!len_at) return -1;
        uint64_t zero = 0, salt = hash_bytes(c->name[s], c->name_len[s], 0xcbf29ce484222325ull);
        for (int o = 0; o < size; o++) {
            len_at[o] = out[o].n;
            if (buf_put(&out[o], (const char *)&zero, 8)) return free(len_at), -1;
        }
        for (const char *p = c->words[s]; p < c->end[s];) {
            const char *nl = line_end(p, c->end[s]), *tab = memchr(p, '\t', (size_t)(nl - p));
            if (!tab) return free(len_at), -1;
            /* the high half: the table (sum_add) indexes by the low bits */
            int o = (int)((hash_bytes(p, (size_t)(tab - p), salt) >> 32) % (uint64_t)size);
            if (buf_put(&out[o], p, (size_t)(nl - p))) return free(len_at), -1;
            if (nl[-1] != '\n' && buf_put(&out[o], "\n", 1)) return free(len_at), -1;
            p = nl;
        }
        for (int o = 0; o < size; o++) {
            uint64_t n = out[o].n - len_at[o] - 8;
            memcpy(out[o].d + len_at[o], &n, 8);
        }
        free(len_at);
    }
    return 0;
}

/* Rank 0 gathers every rank's summed partition (pieces of at most 1 GiB)
 * and writes the reduced document. Collective. */
static int gather_reduced(const job *j, const counts_doc *c, const buf *mine,
                          const uint64_t *my_bytes, int rank, int size, int ok) {
    uint64_t meta[1 + MAX_SECTIONS] = {mine->n}, *all = NULL;
    for (int s = 0; s < MAX_SECTIONS; s++) meta[1 + s] = my_bytes[s];
    if (rank == 0) all = calloc((size_t)size * (1 + MAX_SECTIONS), 8);
    MPI_Gather(meta, 1 + MAX_SECTIONS, MPI_UINT64_T, all, 1 + MAX_SECTIONS, MPI_UINT64_T, 0,
               MPI_COMM_WORLD);
    char **part = rank == 0 ? calloc((size_t)size, sizeof *part) : NULL;
    uint64_t **secs = rank == 0 ? calloc((size_t)size, sizeof *secs) : NULL;
    if (rank == 0 && (!all || !part || !secs)) ok = 0;
    for (int r = 0; rank == 0 && ok && r < size; r++) {
        secs[r] = all + (size_t)r * (1 + MAX_SECTIONS) + 1;
        if (!(part[r] = malloc((size_t)all[(size_t)r * (1 + MAX_SECTIONS)] + 1))) ok = 0;
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (ok) {
        size_t nreq = pieces(mine->n);
        for (int r = 0; rank == 0 && r < size; r++)
            nreq += pieces((size_t)all[(size_t)r * (1 + MAX_SECTIONS)]);
        MPI_Request *rq = malloc((nreq ? nreq : 1) * sizeof *rq);
        int nrq = 0;
        if (!rq) MPI_Abort(MPI_COMM_WORLD, 1); /* a few requests: the job cannot go on */
        for (int r = 0; rank == 0 && r < size; r++)
            big_irecv(part[r], (size_t)all[(size_t)r * (1 + MAX_SECTIONS)], r, &rq, &nrq);
        big_isend(mine->d, mine->n, 0, &rq, &nrq);
        MPI_Waitall(nrq, rq, MPI_STATUSES_IGNORE);
        free(rq);
        if (rank == 0 && write_reduced(j->counts, c, part, secs, size)) {
            fprintf(stderr, "seqstore-mpi: cannot write '%s'\n", j->counts);
            ok = 0;
        }
        MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    for (int r = 0; part && r < size; r++) free(part[r]);
    free(part);
    free(secs);
    free(all);
    return ok;
}

/* Count this rank's slice into its counts text (*text, malloc'ed; with text
 * NULL the file DIR/word-RRRRR-of-NNNNN.counts.tmp is left for the caller). */
static int count_slice(const job *j, const char *prog, int rank, int size, char **text,
                       size_t *len) {
    char spec[64], mine[PATH_MAX + 64];
    snprintf(spec, sizeof spec, "%d/%d", rank, size);
    snprintf(mine, sizeof mine, "%s/word-%05d-of-%05d.counts.tmp", j->dir, rank, size);
    char **argv = calloc((size_t)j->npass + 10, sizeof *argv);
    int n = 0, status = 1;
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
    if (!text) return status; /* the caller takes the file */
    if (!status && slurp(mine, text, len)) {
        fprintf(stderr, "seqstore-mpi: rank %d: cannot read '%s'\n", rank, mine);
        status = 1;
    }
    unlink(mine);
    return status;
}

/* With a URL, each rank's DIR may be its node's own: rank 0 sends the
 * reduced document to every rank, and a rank whose DIR lacks it (another
 * node's) writes it there. Collective; 1 on every rank if all went well. */
static int share_counts(const job *j, int rank, int ok) {
    char *text = NULL;
    size_t len = 0;
    uint64_t n = 0;
    if (rank == 0 && ok && slurp(j->counts, &text, &len)) ok = 0;
    n = ok ? (uint64_t)len : UINT64_MAX;
    MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (n == UINT64_MAX) return 0;
    if (rank && !(text = malloc((size_t)n + 1))) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t at = 0; at < n; at += PIECE) /* MPI counts are int */
        MPI_Bcast(text + at, (int)(n - at < PIECE ? n - at : PIECE), MPI_CHAR, 0, MPI_COMM_WORLD);
    int mine = 1;
    if (rank && access(j->counts, F_OK) != 0) {
        char tmp[PATH_MAX + 64];
        snprintf(tmp, sizeof tmp, "%s.%d.tmp", j->counts, rank);
        FILE *f = fopen(tmp, "wb");
        mine = f && fwrite(text, 1, (size_t)n, f) == n && !fflush(f) && !fsync(fileno(f));
        if (f && fclose(f)) mine = 0;
        if (mine && rename(tmp, j->counts)) mine = 0;
        if (!mine) {
            fprintf(stderr, "seqstore-mpi: rank %d: cannot write '%s'\n", rank, j->counts);
            unlink(tmp);
        }
    }
    free(text);
    MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return mine;
}

/* The reduce described above. Collective; 0 on every rank if all went well. */
static int reduce_word_counts(const job *j, const char *prog, int rank, int size) {
    char *text = NULL;
    size_t len = 0;
    if (size == 1) { /* shard 0 of 1 counted everything: the reduced document already */
        char mine[PATH_MAX + 64];
        snprintf(mine, sizeof mine, "%s/word-00000-of-00001.counts.tmp", j->dir);
        int rc = count_slice(j, prog, rank, size, NULL, NULL);
        if (!rc && rename(mine, j->counts)) {
            fprintf(stderr, "seqstore-mpi: cannot write '%s': %s\n", j->counts, strerror(errno));
            rc = 1;
        }
        unlink(mine);
        return rc ? 1 : 0;
    }
    int ok = !count_slice(j, prog, rank, size, &text, &len);
    double t0 = MPI_Wtime(), c0 = cpu_secs(RUSAGE_SELF);
    counts_doc c;
    buf *out = calloc((size_t)size, sizeof *out), *in = calloc((size_t)size, sizeof *in), mine = {0};
    uint64_t sec_bytes[MAX_SECTIONS] = {0};
    if (ok && (!out || !in || parse_counts(&c, text, len))) ok = 0;
    if (ok && partition_counts(&c, out, size)) ok = 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (ok && exchange(out, in, size)) ok = 0;
    for (int r = 0; out && r < size; r++) free(out[r].d);
    if (ok && sum_partition(in, size, c.nsec, &mine, sec_bytes)) ok = 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (ok) ok = gather_reduced(j, &c, &mine, sec_bytes, rank, size, ok);
    else if (rank == 0)
        fprintf(stderr, "seqstore-mpi: counting words failed; no shard converted\n");
    if (ok && j->url) ok = share_counts(j, rank, ok); /* ok: the same on every rank */
    for (int r = 0; in && r < size; r++) free(in[r].d);
    free(in);
    free(out);
    free(mine.d);
    free(text);
    phase_secs[T_REDUCE] = MPI_Wtime() - t0;
    phase_secs[T_RCPU] = cpu_secs(RUSAGE_SELF) - c0;
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

/* Rank 0: `seqstore dataset build DIR part-0 ... part-N-1`, in order; with
 * a URL `dataset build URL part-0 ... --scratch DIR`, which uploads the
 * sections store and the manifest. */
static int build_manifest(const char *prog, const job *j, int size) {
    char **argv = calloc((size_t)size + 8, sizeof *argv);
    if (!argv) return 1;
    int n = 0, rc = 0;
    argv[n++] = (char *)prog, argv[n++] = "dataset", argv[n++] = "build";
    argv[n++] = (char *)(j->url ? j->url : j->dir);
    if (j->url) argv[n++] = "--scratch", argv[n++] = (char *)j->dir;
    int first = n;
    for (int r = 0; r < size && !rc; r++)
        if (asprintf(&argv[n++], "part-%05d-of-%05d.ss", r, size) < 0) rc = 1;
    if (!rc) rc = run(argv);
    for (int i = first; i < n; i++) free(argv[i]);
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
    if (parse(&j, argc, argv, rank)) {
        if (rank == 0) usage(stderr);
        MPI_Finalize();
        return 2;
    }
    char prog[PATH_MAX + 16], shard[PATH_MAX + 64], manifest[PATH_MAX + 32];
    find_seqstore(prog, sizeof prog);
    snprintf(shard, sizeof shard, "%s/part-%05d-of-%05d.ss", j.dir, rank, size);
    snprintf(manifest, sizeof manifest, "%s/dataset.manifest", j.dir);
    int ok = 1;
    /* with a URL, DIR may be each node's own: every rank makes it */
    if (j.url && rank && mkdir(j.dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "seqstore-mpi: '%s': %s\n", j.dir, strerror(errno));
        ok = 0;
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0 && ok) { /* no manifest claims completeness until this run's is written */
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
    if (rank == 0 && !failed) rc = build_manifest(prog, &j, size) ? 1 : 0;
    phase_secs[T_MANIFEST] = MPI_Wtime() - t0;
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    phase_secs[T_ALL] = MPI_Wtime() - start;
    if (j.times) print_times(rank, size);
    free(all);
    free(j.pass);
    MPI_Finalize();
    return rc;
}
