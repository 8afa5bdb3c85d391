/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_kill.c - integrity at the converter's edges.
 *
 * 1. A killed `--append` resumed with `--resume` ends identical (every
 *    example, the source field, every attribute, byte for byte) to an
 *    uninterrupted append; the store reads as before the append meanwhile.
 * 2. `--resume` refuses an input or an option that differs from the
 *    interrupted conversion's (naming the difference) and standard input;
 *    a failed conversion from stdin never advises --resume.
 * 3. A truncated or damaged gzip input is an error for lines, text,
 *    parallel and idx (as zcat says), never a short store with exit 0.
 * 4. Messages: a .npy or IDX header declaring more than the file holds, a
 *    directory given as .npy, a full disk (tmpfs; skipped if mount fails).
 * 5. A kill -9 campaign: seeded random SIGKILLs (SS_TEST_KILL_AFTER) across
 *    create, append and resume, each resumed and compared byte for byte
 *    with the uninterrupted run.
 * 6. A live writer (SS_TEST_STALL_AFTER: committed, then asleep) holds its
 *    store: a --resume beside it is refused and leaves it alone; once the
 *    writer is killed, --resume completes the store equal to an
 *    uninterrupted run and removes the lock file the dead writer left. */
#include "testutil.h"

#include "../converters/resume.h"

#include <errno.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char g_err[1 << 16];

static int run(long kill, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int run(long kill, const char *fmt, ...) {
    char env[64];
    snprintf(env, sizeof env, "SS_TEST_KILL_AFTER=%ld", kill);
    va_list ap;
    va_start(ap, fmt);
    int rc = ss_test_cli_v(g_err, sizeof g_err, kill > 0 ? env : NULL, fmt, ap);
    va_end(ap);
    return rc;
}
#define EXPECT_RUN(code, kill, ...) CHECK_EXIT(run((kill), __VA_ARGS__), code, g_err)
#define EXPECT_ERR(text) CHECK_CONTAINS(g_err, text)

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0) {
        fprintf(stderr, "command failed: %s\n", cmd);
        exit(1);
    }
}

/* A text file of `lines` lines of pseudo-random words (seeded). */
static void write_text(const char *path, uint64_t lines, uint64_t seed) {
    static const char *const words[] = {"the",    "a",      "store", "of",  "seq", "data", "kill",
                                        "resume", "append", "zebra", "and", "or",  "x"};
    FILE *f = fopen(path, "w");
    CHECK(f);
    for (uint64_t i = 0; i < lines; i++) {
        uint64_t n = ss_test_rand(&seed) % 12;
        for (uint64_t k = 0; k < n; k++)
            fprintf(f, "%s%s", k ? " " : "", words[ss_test_rand(&seed) % 13]);
        fputc('\n', f);
    }
    CHECK(fclose(f) == 0);
}

static uint64_t count_of(const char *path, unsigned flags) {
    ss_store *s = NULL;
    CHECK_OK(ss_open(&s, path, flags));
    uint64_t n = ss_count(s);
    ss_close(s);
    return n;
}

/* Two complete stores hold the same examples (all fields) and attributes. */
static void same_store(const char *pa, const char *pb) {
    ss_store *a = NULL, *b = NULL;
    CHECK_OK(ss_open(&a, pa, 0));
    CHECK_OK(ss_open(&b, pb, 0));
    CHECK_EQ_U64(ss_count(a), ss_count(b));
    CHECK_EQ_U64(ss_field_count(a), ss_field_count(b));
    for (uint64_t i = 0; i < ss_count(a); i++)
        for (uint32_t f = 0; f < ss_field_count(a); f++) {
            ss_view u, v;
            CHECK_OK(ss_get(&u, a, f, i));
            CHECK_OK(ss_get(&v, b, f, i));
            CHECK_EQ_U64(u.length, v.length);
            CHECK_EQ_U64(u.row_bytes, v.row_bytes);
            if (memcmp(u.data, v.data, u.length * u.row_bytes)) {
                fprintf(stderr, "example %" PRIu64 " field %u differs\n", i, f);
                exit(1);
            }
        }
    CHECK_EQ_U64(ss_attr_count(a), ss_attr_count(b));
    for (uint64_t k = 0; k < ss_attr_count(a); k++) {
        ss_attr x, y;
        CHECK_OK(ss_attr_at(&x, a, k));
        CHECK_OK(ss_attr_at(&y, b, k));
        CHECK(!strcmp(x.name, y.name));
        CHECK_EQ_U64(x.type, y.type);
        if (x.size != y.size || memcmp(x.data, y.data, x.size)) {
            fprintf(stderr, "attribute '%s' differs: '%.*s' vs '%.*s'\n", x.name, (int)x.size,
                    (const char *)x.data, (int)y.size, (const char *)y.data);
            exit(1);
        }
    }
    ss_close(a);
    ss_close(b);
}

static void remove_store(const char *p) {
    char lock[900];
    snprintf(lock, sizeof lock, "%s-lock", p);
    unlink(p);
    unlink(lock);
}

/* ------------------------------------------------- 1 + 5: kills and resume */

#define A_LINES 120000
#define B_LINES 90000
#define CB "--commit-bytes 1" /* commit at every full chunk: many resume points */

typedef struct campaign {
    const char *a, *b, *out, *ref_create, *ref_append;
    const char *opts; /* the converter and its options */
    uint64_t kills, committed_some, committed_none, complete_before;
    uint64_t phase[3]; /* kills during a create, an append, a resume */
} campaign;

/* The uninterrupted runs, written under the name the others use (it is in
 * convert.options), then moved aside. */
static void references(campaign *k) {
    EXPECT_RUN(0, -1, "convert %s %s -o %s -q --force " CB, k->opts, k->a, k->out);
    sh("cp %s %s", k->out, k->ref_create);
    EXPECT_RUN(0, -1, "convert %s %s -o %s -q --append " CB, k->opts, k->b, k->out);
    CHECK(rename(k->out, k->ref_append) == 0);
    CHECK_EQ_U64(count_of(k->ref_append, 0), count_of(k->ref_create, 0) + B_LINES);
}

/* Run (killed after `after` examples when > 0) and account the outcome.
 * Returns 1 if killed, 0 if the run finished first (fewer examples left). */
static int killed_run(campaign *k, int phase, long after, const char *fmt, const char *input) {
    int rc = run(after, fmt, k->opts, input, k->out);
    if (rc == 0) {
        k->complete_before++;
        return 0;
    }
    CHECK_EXIT(rc, 128 + SIGKILL, g_err);
    k->kills++;
    k->phase[phase]++;
    return 1;
}

/* Kill a create at `after`, maybe kill its resume at `after2`, resume. */
static void case_create(campaign *k, long after, long after2) {
    killed_run(k, 0, after, "convert %s %s -o %s -q --force " CB, k->a);
    ss_store *s = NULL;
    CHECK_RC(ss_open(&s, k->out, 0), SS_EINCOMPLETE);
    uint64_t n = count_of(k->out, SS_OPEN_INCOMPLETE);
    k->committed_some += n > 0, k->committed_none += n == 0;
    if (after2 <= 0 || killed_run(k, 2, after2, "convert %s %s -o %s -q --resume", k->a))
        EXPECT_RUN(0, -1, "convert %s %s -o %s -q --resume", k->opts, k->a, k->out);
    same_store(k->ref_create, k->out);
}

/* Kill an append of B at `after`, maybe kill its resume, resume. */
static void case_append(campaign *k, long after, long after2) {
    uint64_t base = count_of(k->ref_create, 0);
    sh("cp %s %s && rm -f %s-lock", k->ref_create, k->out, k->out);
    killed_run(k, 1, after, "convert %s %s -o %s -q --append " CB, k->b);
    /* meanwhile the store reads as before the append */
    CHECK_EQ_U64(count_of(k->out, 0), base);
    uint64_t n = count_of(k->out, SS_OPEN_INCOMPLETE) - base;
    k->committed_some += n > 0, k->committed_none += n == 0;
    int again = after2 <= 0 || killed_run(k, 2, after2, "convert %s %s -o %s -q --resume", k->b);
    if (again) {
        CHECK_EQ_U64(count_of(k->out, 0), base);
        /* --append --resume is the same as --resume */
        EXPECT_RUN(0, -1, "convert %s %s -o %s -q %s--resume", k->opts, k->b, k->out,
                   after2 % 2 ? "--append " : "");
    }
    same_store(k->ref_append, k->out);
}

/* `pair`: the converter takes two inputs (parallel): each file twice. */
static void campaign_run(const char *opts, const char *tag, int pair, int iterations, uint64_t seed,
                         campaign *k) {
    char name[64];
    static char ab[2][2000];
    memset(k, 0, sizeof *k);
    k->opts = opts;
    k->a = ss_test_keep_path("a.txt");
    k->b = ss_test_keep_path("b.txt");
    if (pair) {
        snprintf(ab[0], sizeof ab[0], "%s %s", k->a, k->a);
        snprintf(ab[1], sizeof ab[1], "%s %s", k->b, k->b);
        k->a = ab[0];
        k->b = ab[1];
    }
    snprintf(name, sizeof name, "%s.ss", tag);
    k->out = ss_test_keep_path(name);
    snprintf(name, sizeof name, "%s-ref-create.ss", tag);
    k->ref_create = ss_test_keep_path(name);
    snprintf(name, sizeof name, "%s-ref-append.ss", tag);
    k->ref_append = ss_test_keep_path(name);
    references(k);
    for (int it = 0; it < iterations; it++) {
        int append = (int)(ss_test_rand(&seed) % 2);
        uint64_t total = append ? B_LINES : A_LINES;
        long after = 1 + (long)(ss_test_rand(&seed) % total);
        /* a third of the cases kill the resume too */
        long after2 = ss_test_rand(&seed) % 3 == 0 ? 1 + (long)(ss_test_rand(&seed) % total) : 0;
        if (append)
            case_append(k, after, after2);
        else
            case_create(k, after, after2);
    }
    remove_store(k->out);
    remove_store(k->ref_create);
    remove_store(k->ref_append);
}

static void test_campaign(void) {
    write_text(ss_test_keep_path("a.txt"), A_LINES, 1);
    write_text(ss_test_keep_path("b.txt"), B_LINES, 2);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    campaign bytes, words, pairs;
    campaign_run("text", "bytes", 0, 60, 11, &bytes);
    campaign_run("text --tokens words", "words", 0, 25, 12, &words);
    campaign_run("parallel --tokens words", "pairs", 1, 15, 13, &pairs);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    campaign all = {0};
    const campaign *parts[] = {&bytes, &words, &pairs};
    for (int p = 0; p < 3; p++) {
        all.kills += parts[p]->kills;
        all.complete_before += parts[p]->complete_before;
        all.committed_some += parts[p]->committed_some;
        all.committed_none += parts[p]->committed_none;
        for (int q = 0; q < 3; q++) all.phase[q] += parts[p]->phase[q];
    }
    printf("kill campaign: %" PRIu64 " SIGKILLs during a create, %" PRIu64
           " during an append, %" PRIu64 " during a resume (text bytes %" PRIu64
           ", text words %" PRIu64 ", parallel words %" PRIu64 ")\n",
           all.phase[0], all.phase[1], all.phase[2], bytes.kills, words.kills, pairs.kills);
    printf("kill campaign: %" PRIu64 " SIGKILLs (%" PRIu64 " runs finished first), %" PRIu64
           " interrupted with committed examples, %" PRIu64
           " with none; every resumed store equal to the uninterrupted one; %.1f s\n",
           all.kills, all.complete_before, all.committed_some, all.committed_none,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    CHECK(all.kills >= 100);
    CHECK(bytes.committed_some > 0 && bytes.committed_none > 0);
}

/* ------------------------------------------------------------ 2: mismatch */

static void test_resume_mismatch(void) {
    const char *a = ss_test_keep_path("m.txt"), *b = ss_test_keep_path("m2.txt"),
               *out = ss_test_keep_path("m.ss");
    write_text(a, A_LINES, 3);
    write_text(b, A_LINES, 4);
    EXPECT_RUN(128 + SIGKILL, 100000, "convert text %s -o %s -q --force " CB, a, out);
    uint64_t n = count_of(out, SS_OPEN_INCOMPLETE);
    CHECK(n > 0);
    /* another file */
    EXPECT_RUN(1, -1, "convert text %s -o %s -q --resume", b, out);
    EXPECT_ERR("input 1 '");
    EXPECT_ERR("differs from the interrupted conversion's '");
    /* another file under the same name: size differs */
    sh("cp %s %s.keep && cp %s %s", a, a, b, a);
    EXPECT_RUN(1, -1, "convert text %s -o %s -q --resume", a, out);
    EXPECT_ERR("has changed since the interrupted conversion (size");
    /* the same bytes, touched: modification time differs */
    sh("cp %s.keep %s", a, a);
    EXPECT_RUN(1, -1, "convert text %s -o %s -q --resume", a, out);
    EXPECT_ERR("(modified ");
    EXPECT_RUN(0, -1, "convert text %s -o %s -q --force", a, out); /* a fresh start */
    EXPECT_RUN(128 + SIGKILL, 100000, "convert text %s -o %s -q --force " CB, a, out);
    /* another option that changes the examples */
    EXPECT_RUN(1, -1, "convert text %s -o %s -q --resume --skip-empty", a, out);
    EXPECT_ERR("the options differ from the interrupted conversion's: '--skip-empty'");
    /* another number of inputs */
    EXPECT_RUN(1, -1, "convert text %s %s -o %s -q --resume", a, b, out);
    EXPECT_ERR("had 1 input, this one has 2");
    /* another converter */
    EXPECT_RUN(1, -1, "convert lines %s -o %s -q --resume", a, out);
    EXPECT_ERR("was 'convert text', not 'convert lines'");
    /* a vocabulary file read besides the inputs, changed meanwhile */
    const char *voc = ss_test_keep_path("m.vocab");
    sh("printf '<unk>\\nthe\\na\\nstore\\n' > %s", voc);
    EXPECT_RUN(128 + SIGKILL, 100000,
               "convert text %s --tokens words --vocab %s -o %s -q --force " CB, a, voc, out);
    sh("sleep 0.01; printf 'kill\\n' >> %s", voc);
    EXPECT_RUN(1, -1, "convert text %s --tokens words --vocab %s -o %s -q --resume", a, voc, out);
    EXPECT_ERR("m.vocab' (read besides the inputs) differs from the interrupted conversion's");
    EXPECT_RUN(128 + SIGKILL, 100000, "convert text %s -o %s -q --force " CB, a, out);
    /* the store was left as it was: the same input still resumes */
    CHECK_EQ_U64(count_of(out, SS_OPEN_INCOMPLETE), count_of(out, SS_OPEN_INCOMPLETE));
    EXPECT_RUN(0, -1, "convert text %s -o %s -q --resume --threads 1", a, out);
    CHECK_EQ_U64(count_of(out, 0), A_LINES);

    /* standard input: never resumable, never advised */
    EXPECT_RUN(128 + SIGKILL, 100000, "convert text - -o %s -q --force " CB " < %s", out, a);
    EXPECT_RUN(1, -1, "convert text - -o %s -q --resume < %s", out, a);
    EXPECT_ERR("input 1 is standard input, which cannot be read again");
    sh("printf '1 2\\n3 x\\n' > %s", b);
    EXPECT_RUN(1, -1, "convert text - --tokens ids -o %s --force < %s", out, b);
    EXPECT_ERR("left incomplete");
    CHECK(!strstr(g_err, "rerun with --resume"));
    EXPECT_RUN(1, -1, "convert text %s --tokens ids -o %s --force", b, out);
    EXPECT_ERR("fix the problem and rerun with --resume");
    remove_store(out);

    /* bad input stops a run; the input fixed (so changed) still resumes,
     * into the store an uninterrupted run of the fixed input makes */
    const char *ids = ss_test_keep_path("ids.txt"), *ref = ss_test_keep_path("ids-ref.ss");
    sh("seq 1 200000 | sed 's/$/ 7 9/' > %s", ids);
    EXPECT_RUN(0, -1, "convert text %s --tokens ids -o %s -q " CB, ids, out);
    CHECK(rename(out, ref) == 0);
    sh("sed -i '150000s/ 7 / x /' %s", ids);
    EXPECT_RUN(1, -1, "convert text %s --tokens ids -o %s -q " CB, ids, out);
    EXPECT_ERR(":150000:");
    CHECK(count_of(out, SS_OPEN_INCOMPLETE) > 0);
    sh("sed -i '150000s/ x / 7 /' %s", ids);
    EXPECT_RUN(0, -1, "convert text %s --tokens ids -o %s -q --resume", ids, out);
    same_store(ref, out);
    remove_store(out);
    remove_store(ref);
}

/* --------------------------------------------------------------- 3: gzip */

static void test_truncated_gzip(void) {
    const char *t = ss_test_keep_path("g.txt"), *out = ss_test_keep_path("g.ss");
    char gz[800], cut[800], bad[800];
    write_text(t, 60000, 5);
    snprintf(gz, sizeof gz, "%s.gz", t);
    snprintf(cut, sizeof cut, "%s/cut.txt.gz", ss_test_tmpdir());
    snprintf(bad, sizeof bad, "%s/crc.txt.gz", ss_test_tmpdir());
    sh("gzip -kf %s && head -c 60000 %s > %s", t, gz, cut);
    /* the trailer's CRC flipped: every byte of data intact */
    sh("cp %s %s && printf '\\377' | dd of=%s bs=1 seek=$(($(stat -c %%s %s) - 8)) conv=notrunc "
       "2>/dev/null",
       gz, bad, bad, bad);
    CHECK(system("zcat < /dev/null > /dev/null 2>&1; true") == 0);
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "zcat %s > /dev/null 2>&1", cut);
    CHECK(system(cmd) != 0); /* zcat refuses it too */
    snprintf(cmd, sizeof cmd, "zcat %s > /dev/null 2>&1", bad);
    CHECK(system(cmd) != 0);
    const char *kinds[] = {"lines %s", "text %s", "parallel %s %s"};
    for (int k = 0; k < 3; k++) {
        char args[2000];
        snprintf(args, sizeof args, kinds[k], gz, gz);
        EXPECT_RUN(0, -1, "convert %s -o %s -q --force", args, out); /* intact: fine */
        CHECK_EQ_U64(count_of(out, 0), 60000);
        snprintf(args, sizeof args, kinds[k], cut, cut);
        EXPECT_RUN(1, -1, "convert %s -o %s -q --force", args, out);
        EXPECT_ERR("unexpected end of file");
        EXPECT_ERR("cut.txt.gz");
        snprintf(args, sizeof args, kinds[k], bad, bad);
        EXPECT_RUN(1, -1, "convert %s -o %s -q --force", args, out);
        EXPECT_ERR("incorrect data check");
    }
    /* idx: a gzip file cut short, and one with a damaged trailer */
    const char *idx = ss_test_keep_path("i.idx");
    FILE *f = fopen(idx, "wb");
    CHECK(f);
    unsigned char hdr[16] = {0, 0, 8, 3, 0, 0, 0x4e, 0x20, 0, 0, 0, 28, 0, 0, 0, 28};
    fwrite(hdr, 1, 16, f);
    uint64_t seed = 9;
    for (int i = 0; i < 20000 * 784; i++) fputc((int)(ss_test_rand(&seed) % 7), f);
    CHECK(fclose(f) == 0);
    sh("gzip -kf %s && head -c 200000 %s.gz > %s/cut.idx.gz && cp %s.gz %s/crc.idx.gz && "
       "printf '\\377' | dd of=%s/crc.idx.gz bs=1 seek=$(($(stat -c %%s %s.gz) - 8)) "
       "conv=notrunc 2>/dev/null",
       idx, idx, ss_test_tmpdir(), idx, ss_test_tmpdir(), ss_test_tmpdir(), idx);
    EXPECT_RUN(0, -1, "convert idx %s.gz -o %s -q --force", idx, out);
    CHECK_EQ_U64(count_of(out, 0), 20000);
    EXPECT_RUN(1, -1, "convert idx %s/cut.idx.gz -o %s -q --force", ss_test_tmpdir(), out);
    EXPECT_ERR("truncated");
    EXPECT_RUN(1, -1, "convert idx %s/crc.idx.gz -o %s -q --force", ss_test_tmpdir(), out);
    EXPECT_ERR("incorrect data check");
    remove_store(out);
}

/* ------------------------------------------------------------ 4: messages */

static void test_messages(void) {
    const char *out = ss_test_keep_path("x.ss"), *dir = ss_test_keep_path("dir.npy"),
               *npy = ss_test_keep_path("huge.npy"), *idx = ss_test_keep_path("huge.idx");
    mkdir(dir, 0755);
    EXPECT_RUN(1, -1, "convert npy %s -o %s -q --force", dir, out);
    EXPECT_ERR("is a directory");
    /* a list of inputs that cannot be read is an error, not an empty list */
    EXPECT_RUN(1, -1, "convert edf --list %s -o %s -q --force", dir, out);
    EXPECT_ERR("cannot read '");
    EXPECT_ERR("Is a directory");
    /* a .npy header declaring 2^40 float32 elements, 8 bytes of data */
    char h[128];
    int n = snprintf(h, sizeof h, "{'descr': '<f4', 'fortran_order': False, 'shape': (%llu,), }",
                     1ULL << 40);
    size_t hlen = 118; /* 10 + 118 = 128 */
    FILE *f = fopen(npy, "wb");
    CHECK(f);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc((int)hlen, f);
    fputc(0, f);
    fwrite(h, 1, (size_t)n, f);
    for (size_t k = (size_t)n; k + 1 < hlen; k++) fputc(' ', f);
    fputc('\n', f);
    fwrite("abcdefgh", 1, 8, f);
    CHECK(fclose(f) == 0);
    EXPECT_RUN(1, -1, "convert npy %s -o %s -q --force", npy, out);
    EXPECT_ERR("huge.npy");
    EXPECT_ERR("the header declares 1099511627776 elements");
    CHECK(!strstr(g_err, "out of memory"));
    /* an IDX header whose one item is 2^39 bytes */
    f = fopen(idx, "wb");
    CHECK(f);
    unsigned char ih[16] = {0, 0, 8, 3, 0, 0, 0, 1, 0, 0x10, 0, 0, 0, 0x08, 0, 0};
    fwrite(ih, 1, 16, f);
    fwrite("12345678", 1, 8, f);
    CHECK(fclose(f) == 0);
    EXPECT_RUN(1, -1, "convert idx %s -o %s -q --force", idx, out);
    EXPECT_ERR("huge.idx: the header declares items of 549755813888 bytes each");
    CHECK(!strstr(g_err, "out of memory"));
}

static char g_mounted[800];
static void unmount_at_exit(void) {
    if (g_mounted[0]) umount(g_mounted);
}

/* A full disk: a 6 MiB tmpfs, an input that does not fit. */
static void test_disk_full(void) {
    const char *mnt = ss_test_keep_path("small"), *t = ss_test_keep_path("big.txt");
    char out[900];
    mkdir(mnt, 0755);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=6m") != 0) {
        printf("test_disk_full: skipped (cannot mount a tmpfs: %s)\n", strerror(errno));
        return;
    }
    snprintf(g_mounted, sizeof g_mounted, "%s", mnt);
    atexit(unmount_at_exit); /* also when a CHECK fails */
    write_text(t, 600000, 6);
    snprintf(out, sizeof out, "%s/full.ss", mnt);
    EXPECT_RUN(1, -1, "convert text %s -o %s -q " CB, t, out);
    EXPECT_ERR("is full");
    EXPECT_ERR("left incomplete with");
    EXPECT_ERR("free some space and rerun with --resume");
    CHECK(umount(mnt) == 0);
    g_mounted[0] = 0;
}

/* The record round-trips any argument or path byte but NUL, and each
 * difference gets its message. */
static void test_record(void) {
    const char *args[] = {"text", "a\tb.txt", "--doc-sep", "x\ny\\n", "", "\\"};
    ss_resume_input in[2] = {{"a\tb.txt", 123, 1700000000, 5}, {"line\nbreak", -1, 0, 0}};
    ss_resume_input voc = {"v\\t", 9, 1, 2};
    ss_resume_rec r = {"text", 77, 2, args, 6, in, 2, &voc, 1, NULL}, d;
    size_t len;
    char msg[512], *t = ss__resume_encode(&r, &len);
    CHECK(t);
    CHECK_EQ_U64(ss__resume_decode(&d, t, len, msg, sizeof msg), 0);
    CHECK(!strcmp(d.kind, "text") && d.base == 77 && d.stopped == 2);
    CHECK_EQ_U64(d.nargs, 6);
    for (int k = 0; k < 6; k++) CHECK(!strcmp(d.args[k], args[k]));
    CHECK_EQ_U64(d.ninputs, 2);
    for (int k = 0; k < 2; k++)
        CHECK(!strcmp(d.inputs[k].path, in[k].path) && d.inputs[k].size == in[k].size &&
              d.inputs[k].mtime_s == in[k].mtime_s && d.inputs[k].mtime_ns == in[k].mtime_ns);
    CHECK(d.nfiles == 1 && !strcmp(d.files[0].path, voc.path) && d.files[0].size == 9);
    /* itself: no difference (input 2 changed is allowed: the run stopped there) */
    ss_resume_input in2[2] = {in[0], {"line\nbreak", 5, 3, 4}};
    ss_resume_rec now = r;
    now.inputs = in2;
    CHECK_EQ_U64(ss__resume_check(&d, &now, msg, sizeof msg), 0);
    in2[0].mtime_ns = 6;
    CHECK(ss__resume_check(&d, &now, msg, sizeof msg) == -1 && strstr(msg, "input 1 ") &&
          strstr(msg,
                 "(modified 2023-11-14 22:13:20.000000006 UTC vs 2023-11-14 22:13:20.000000005"));
    in2[0] = in[0];
    const char *args2[] = {"text",    "a\tb.txt", "--threads", "3",      "--doc-sep",
                           "x\ny\\n", "",         "\\",        "--quiet"};
    now.args = args2, now.nargs = 9; /* steering arguments do not count */
    CHECK_EQ_U64(ss__resume_check(&d, &now, msg, sizeof msg), 0);
    args2[5] = "x\ny";
    CHECK(ss__resume_check(&d, &now, msg, sizeof msg) == -1 && strstr(msg, "the options differ"));
    now.base = 78;
    CHECK(ss__resume_check(&d, &now, msg, sizeof msg) == -1 && strstr(msg, "began with 77"));
    /* damaged records are refused, not trusted */
    CHECK(ss__resume_decode(&r, "seqstore-resume\t1\nbase\tx\n", 26, msg, sizeof msg) == -1);
    CHECK(ss__resume_decode(&r, "hello", 5, msg, sizeof msg) == -1 && strstr(msg, "damaged"));
    free(t);
    ss__resume_rec_free(&d);
}

/* With arguments: only the named parts (record messages gzip mismatch full campaign). */
/* ------------------------------------------------------ 6: a live writer */

static uint64_t committed(const char *path) {
    ss_store *s = NULL;
    if (ss_open(&s, path, SS_OPEN_NOLOCK | SS_OPEN_INCOMPLETE)) return 0;
    uint64_t n = ss_count(s);
    ss_close(s);
    return n;
}

static pid_t g_staller; /* killed at exit if a check fails while it lives */

static void kill_staller(void) {
    if (g_staller > 0) kill(g_staller, SIGKILL);
}

static void test_live_writer(void) {
    const char *in = ss_test_path("live.txt"), *out = ss_test_path("live.ss");
    const char *ref = ss_test_path("live-ref.ss");
    char lock[900];
    snprintf(lock, sizeof lock, "%s-lock", out);
    write_text(in, 20000, 7);
    remove_store(out);
    EXPECT_RUN(0, 0, "convert text %s -o %s --quiet " CB, in, out); /* under the same name */
    CHECK(rename(out, ref) == 0);
    remove_store(out);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setenv("SS_TEST_STALL_AFTER", "3000", 1);
        execl(SS_CLI, SS_CLI, "convert", "text", in, "-o", out, "--quiet", "--commit-bytes", "1",
              (char *)NULL);
        _exit(127);
    }
    g_staller = pid;
    atexit(kill_staller);
    for (int t = 0; t < 600 && committed(out) < 3000; t++) usleep(50000);
    CHECK_EQ_U64(committed(out), 3000);
    EXPECT_RUN(1, 0, "convert text %s -o %s --resume --quiet " CB, in, out);
    EXPECT_ERR("is being written by another live conversion");
    CHECK(waitpid(pid, NULL, WNOHANG) == 0); /* still writing, untouched */
    CHECK_EQ_U64(committed(out), 3000);
    CHECK(kill(pid, SIGKILL) == 0);
    CHECK(waitpid(pid, NULL, 0) == pid);
    g_staller = 0;
    CHECK(access(lock, F_OK) == 0); /* the dead writer's */
    EXPECT_RUN(0, 0, "convert text %s -o %s --resume --quiet " CB, in, out);
    CHECK(access(lock, F_OK) != 0);
    same_store(out, ref);
    remove_store(ref);
    remove_store(out);
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*fn)(void);
    } parts[] = {{"record", test_record},       {"messages", test_messages},
                 {"gzip", test_truncated_gzip}, {"mismatch", test_resume_mismatch},
                 {"full", test_disk_full},      {"campaign", test_campaign},
                 {"live", test_live_writer}};
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
        int on = argc < 2;
        for (int i = 1; i < argc; i++) on |= !strcmp(argv[i], parts[k].name);
        if (on) parts[k].fn();
    }
    printf("test_convert_kill: ok\n");
    return 0;
}
