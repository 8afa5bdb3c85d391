/* SPDX-License-Identifier: BSD-2-Clause */
/* test_mpi.c - `mpirun --oversubscribe -n 4 seqstore-mpi convert ...`: the
 * dataset's shards hold exactly the single-process conversion's examples and
 * vocabulary; a rank killed mid-way (SIGKILL) fails the job and leaves no
 * manifest; rerunning with --resume finishes only what is missing. Word
 * vocabularies: each rank counts only its slice and the counts are reduced
 * (DIR/word.counts holds one document, each word once with the sum of the
 * four ranks' counts, the totals adding up to the corpus's words), for text,
 * parallel and JSON-lines corpora. A rank killed from outside (kill -9) while its conversion writes
 * takes the conversion with it (no orphan left writing the shard), and a
 * --resume leaves no lock file of the dead writers in the dataset. */
#include "testutil.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const WORDS[] = {"la", "le", "chat", "dort", "ici", "vite", "très", "z"};

static int mpirun(const char *env, const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "%s %s --oversubscribe -n 4 -x SS_TEST_BLOCK_BYTES=600 %s %s > %s/mpi.out 2>&1", env,
             SS_MPIRUN, SS_MPI, args, ss_test_tmpdir());
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void show_output(void) {
    size_t n;
    char *o = ss_test_read_file(ss_test_path("mpi.out"), &n);
    fprintf(stderr, "--- mpirun output:\n%s---\n", o);
    free(o);
}

static void check_dataset(const char *dir, const char *single) {
    char manifest[1024];
    snprintf(manifest, sizeof manifest, "%s/dataset.manifest", dir);
    CHECK(access(manifest, F_OK) == 0);
    char paths[4][1100];
    const char *p[4];
    for (int k = 0; k < 4; k++) {
        snprintf(paths[k], sizeof paths[k], "%s/part-%05d-of-00004.ss", dir, k);
        p[k] = paths[k];
    }
    ss_test_check_shards(single, p, 4);
    ss_store *d, *s;
    CHECK_OK(ss_open(&d, dir, 0));
    CHECK_OK(ss_open(&s, single, 0));
    CHECK_EQ_U64(ss_count(d), ss_count(s));
    uint64_t problems = 1;
    CHECK_OK(ss_verify(&problems, d, NULL, NULL));
    ss_close(d);
    ss_close(s);
}

/* The reduced counts of a 4-rank run: one document covering the whole input
 * (shard 0 of 1), each word once per section (the ranks' counts summed, not
 * concatenated: its size is the distinct words', whatever the ranks), in the
 * vocabulary's order (most frequent first, ties by bytes: no rank sorts it
 * again), the counts summing to `words`. */
static void check_counts(const char *dir, uint64_t words) {
    char path[1100];
    snprintf(path, sizeof path, "%s/word.counts", dir);
    size_t n;
    char *t = ss_test_read_file(path, &n);
    CHECK(t != NULL);
    int docs = 0, lines = 0, repeated = 0, unordered = 0;
    uint64_t total = 0, last_count = UINT64_MAX;
    const char *last = ""; /* the previous word, in t */
    char seen[64][32];
    int nseen = 0;
    for (char *line = t, *nl; *line; line = nl + 1) {
        CHECK((nl = strchr(line, '\n')) != NULL);
        *nl = 0;
        if (!strcmp(line, "seqstore-counts 1")) {
            CHECK((nl = strchr(nl + 1, '\n')) != NULL);
            *nl = 0;
            CHECK(!strcmp(strchr(line, 0) + 1, "shard\t0\t1"));
            docs++;
        } else if (line[0] == '\t') {
            nseen = 0; /* a new section */
            last_count = UINT64_MAX, last = "";
        } else if (strncmp(line, "options\t", 8) && strncmp(line, "input\t", 6)) {
            char *tab = strrchr(line, '\t');
            uint64_t count = strtoull(tab + 1, NULL, 10);
            total += count;
            *tab = 0;
            unordered += count > last_count || (count == last_count && strcmp(line, last) < 0);
            last_count = count;
            last = line;
            for (int k = 0; k < nseen; k++) repeated += !strcmp(seen[k], line);
            if (nseen < 64) snprintf(seen[nseen++], sizeof seen[0], "%s", line);
            lines++;
        }
    }
    if (docs != 1 || repeated)
        fprintf(stderr, "word.counts: %d documents, %d word lines, %d repeated words\n", docs,
                lines, repeated);
    CHECK(docs == 1);
    CHECK(repeated == 0);
    CHECK_EQ_U64(unordered, 0);
    CHECK_EQ_U64(total, words);
    free(t);
}

/* The parent and state of process `pid` (/proc/PID/stat); 0 if it is gone. */
static int proc_stat(pid_t pid, pid_t *ppid, char *state) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    int pp;
    if (!p || sscanf(p + 1, " %c %d", state, &pp) != 2) return 0;
    *ppid = pp;
    return 1;
}

static int alive(pid_t pid) {
    pid_t pp;
    char st;
    return proc_stat(pid, &pp, &st) && st != 'Z' && st != 'X';
}

/* Is `pid` a descendant of `root`, running the program named `name`? */
static int runs_under(pid_t pid, pid_t root, const char *name) {
    char path[64], exe[4096];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = 0;
    const char *base = strrchr(exe, '/');
    if (strcmp(base ? base + 1 : exe, name)) return 0;
    pid_t p = pid, pp;
    char st;
    for (int depth = 0; depth < 16 && proc_stat(p, &pp, &st); depth++, p = pp)
        if (pp == root) return 1;
    return 0;
}

/* The `seqstore convert` processes the ranks of job `root` run. */
static int conversions(pid_t root, pid_t *out, int cap) {
    DIR *d = opendir("/proc");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) && n < cap;) {
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid > 0 && alive(pid) && runs_under(pid, root, "seqstore")) out[n++] = pid;
    }
    if (d) closedir(d);
    return n;
}

/* kill -9 of one rank while the four conversions write (each stalls after
 * 50 examples, SS_TEST_STALL_AFTER): mpirun ends the job, and no conversion
 * may outlive its rank. An orphan found is named and killed. */
static void check_no_orphans(const char *text) {
    const char *dir = ss_test_keep_path("ds3");
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "exec %s --oversubscribe -n 4 -x SS_TEST_BLOCK_BYTES=600 -x SS_TEST_STALL_AFTER=50 %s "
             "convert text %s -o %s > %s/mpi3.out 2>&1",
             SS_MPIRUN, SS_MPI, text, dir, ss_test_tmpdir());
    pid_t job = fork();
    CHECK(job >= 0);
    if (job == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    pid_t conv[16];
    int n = 0;
    for (int t = 0; t < 1200 && n < 4; t++) {
        usleep(50000);
        n = conversions(job, conv, 16);
    }
    CHECK(n == 4);
    sleep(1); /* into their stall */
    pid_t rank;
    char st;
    CHECK(proc_stat(conv[0], &rank, &st));
    CHECK(kill(rank, SIGKILL) == 0);
    int status = 0, waited = 0;
    for (int t = 0; t < 600 && !waited; t++) {
        waited = waitpid(job, &status, WNOHANG) == job;
        if (!waited) usleep(100000);
    }
    if (!waited) kill(job, SIGKILL), waitpid(job, &status, 0);
    CHECK(!WIFEXITED(status) || WEXITSTATUS(status) != 0); /* the job failed */
    int orphans = 0;
    for (int k = 0; k < n; k++) {
        for (int t = 0; t < 50 && alive(conv[k]); t++) usleep(100000);
        if (!alive(conv[k])) continue;
        pid_t pp;
        proc_stat(conv[k], &pp, &st);
        fprintf(stderr, "conversion %d outlived its rank (parent now %d)\n", (int)conv[k],
                (int)pp);
        kill(conv[k], SIGKILL);
        orphans++;
    }
    CHECK(orphans == 0);
}

/* No LMDB lock file left in `dir`. */
static void check_no_lock_files(const char *dir) {
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n >= 5 && !strcmp(e->d_name + n - 5, "-lock")) {
            fprintf(stderr, "'%s/%s' left behind\n", dir, e->d_name);
            exit(1);
        }
    }
    closedir(d);
}

int main(void) {
    const char *text = ss_test_keep_path("corpus.txt"), *single = ss_test_keep_path("single.ss");
    FILE *f = fopen(text, "w");
    CHECK(f != NULL);
    uint64_t seed = 11, words = 0;
    for (int i = 0; i < 3000; i++) {
        int n = 1 + (int)(ss_test_rand(&seed) % 12);
        words += (uint64_t)n;
        for (int w = 0; w < n; w++)
            fprintf(f, "%s%s", w ? " " : "", WORDS[ss_test_rand(&seed) % 8]);
        fputc('\n', f);
    }
    fclose(f);
    char err[4096], args[4096];
    CHECK_EXIT(
        ss_test_cli(err, sizeof err, NULL, "convert text %s --tokens words -o %s", text, single), 0,
        err);

    /* four ranks */
    const char *dir = ss_test_keep_path("ds");
    snprintf(args, sizeof args, "convert text %s --tokens words -o %s", text, dir);
    if (mpirun("", args) != 0) show_output(), exit(1);
    check_dataset(dir, single);
    check_counts(dir, words);

    /* a parallel corpus (the same lines reversed as target), one vocabulary per side */
    const char *tgt = ss_test_keep_path("tgt.txt"), *psingle = ss_test_keep_path("psingle.ss");
    size_t len;
    char *src = ss_test_read_file(text, &len);
    f = fopen(tgt, "w");
    CHECK(f != NULL);
    for (size_t e = len; e > 0;) { /* lines in reverse order */
        size_t b = e - 1;
        while (b > 0 && src[b - 1] != '\n') b--;
        fwrite(src + b, 1, e - b, f);
        e = b;
    }
    fclose(f);
    free(src);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "convert parallel %s %s --tokens words -o %s",
                           text, tgt, psingle),
               0, err);
    const char *pdir = ss_test_keep_path("pds");
    snprintf(args, sizeof args, "convert parallel %s %s --tokens words -o %s", text, tgt, pdir);
    if (mpirun("", args) != 0) show_output(), exit(1);
    check_dataset(pdir, psingle);

    /* the same lines as JSON lines: one vocabulary, counted per rank */
    const char *jl = ss_test_keep_path("corpus.jsonl"), *jsingle = ss_test_keep_path("jsingle.ss");
    src = ss_test_read_file(text, &len);
    f = fopen(jl, "w");
    CHECK(f != NULL);
    for (char *line = src, *nl; (nl = strchr(line, '\n')); line = nl + 1)
        fprintf(f, "{\"text\": \"%.*s\"}\n", (int)(nl - line), line);
    fclose(f);
    free(src);
    CHECK_EXIT(
        ss_test_cli(err, sizeof err, NULL, "convert jsonl %s --tokens words -o %s", jl, jsingle), 0,
        err);
    const char *jdir = ss_test_keep_path("jds");
    snprintf(args, sizeof args, "convert jsonl %s --tokens words -o %s", jl, jdir);
    if (mpirun("", args) != 0) show_output(), exit(1);
    check_dataset(jdir, jsingle);
    check_counts(jdir, words);

    /* rank 2 killed after 100 of its examples: the job fails, no manifest */
    const char *dir2 = ss_test_keep_path("ds2");
    snprintf(args, sizeof args, "convert text %s --tokens words -o %s", text, dir2);
    int rc = mpirun("SS_MPI_TEST_KILL=2:100", args);
    if (rc == 0) show_output(), exit(1);
    char manifest[1024], part2[1024];
    snprintf(manifest, sizeof manifest, "%s/dataset.manifest", dir2);
    snprintf(part2, sizeof part2, "%s/part-00002-of-00004.ss", dir2);
    CHECK(access(manifest, F_OK) != 0);
    ss_store *s;
    CHECK_RC(ss_open(&s, part2, 0), SS_EINCOMPLETE); /* interrupted: its committed prefix */
    CHECK_RC(ss_open(&s, dir2, 0), SS_ENOTSTORE);    /* not a dataset without a manifest */
    /* --resume: complete shards kept, the interrupted one continued */
    struct stat before, after;
    char part0[1024];
    snprintf(part0, sizeof part0, "%s/part-00000-of-00004.ss", dir2);
    int have0 = stat(part0, &before) == 0;
    strcat(args, " --resume");
    if (mpirun("", args) != 0) show_output(), exit(1);
    check_no_lock_files(dir2);
    check_dataset(dir2, single);
    if (have0 && ss_open(&s, part0, SS_OPEN_NOLOCK) == 0) { /* rank 0 had finished: untouched */
        ss_close(s);
        CHECK(stat(part0, &after) == 0 && after.st_mtime == before.st_mtime &&
              after.st_size == before.st_size);
    }
    check_no_orphans(text);
    /* a usage error on every rank */
    CHECK(mpirun("", "convert text") != 0);
    puts("ok");
    return 0;
}
