/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_flip.c - the flip campaign: single-byte and single-bit flips in
 * every region of a small store (LMDB meta, branch and leaf pages, the free
 * DB's pages, overflow pages holding the header, attributes, index segments
 * and data chunks, free pages). For each flip, a forked child under alarm()
 * opens the store, reads every example of every field and every attribute,
 * and runs ss_verify(). The outcome is "detected" (a call returned an error),
 * "no effect" (everything read equals what was written), "silent" (no error,
 * different content), "crash" (a signal) or "hang" (the alarm). Anything but
 * detected or no effect fails the test; the per-region table is printed.
 *
 * The regions are found by walking the pristine file's B-trees here, with
 * LMDB's page layout (see format/lmdb_check.c for the byte positions). */
#include "testutil.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---------------------------------------------------------- the store */

#define COUNT 3000u
#define NATTRS 40u
static const ss_field fields[3] = {
    {"tokens", SS_U16, 1, 0, {0}}, {"label", SS_U32, 0, 0, {0}}, {"vec", SS_F32, 0, 1, {3}}};
static const ss_schema schema = {3, fields};

static uint64_t tok_len(uint64_t i) {
    return (i * 37) % 300; /* some examples are empty */
}
static uint16_t tok_at(uint64_t i, uint64_t k) {
    return (uint16_t)(i * 7919 + k * 31 + 1);
}
static uint32_t label_of(uint64_t i) {
    return (uint32_t)(i * 2654435761u);
}
static float vec_at(uint64_t i, unsigned k) {
    return (float)i + 0.25f * (float)k;
}
static void attr_name(unsigned a, char *buf, size_t n) {
    snprintf(buf, n, "attr.%02u", a);
}
static void attr_value(unsigned a, char *buf, size_t n) {
    snprintf(buf, n, "value of attribute %u: %0*u", a, (int)(a % 20), a);
}

static void make_store(const char *path) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = 2;
    o.flags = SS_WRITE_NOSYNC | SS_WRITE_FORCE;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    uint16_t buf[300];
    for (uint64_t i = 0; i < COUNT; i++) {
        for (uint64_t k = 0; k < tok_len(i); k++) buf[k] = tok_at(i, k);
        uint32_t label = label_of(i);
        float vec[3] = {vec_at(i, 0), vec_at(i, 1), vec_at(i, 2)};
        ss_value v[3] = {{buf, tok_len(i)}, {&label, 1}, {vec, 1}};
        CHECK_OK(ss_writer_append(w, v));
        if (i % 700 == 0) CHECK_OK(ss_writer_commit(w)); /* old versions: free pages */
    }
    for (unsigned a = 0; a < NATTRS; a++) {
        char name[32], value[64];
        attr_name(a, name, sizeof name);
        attr_value(a, value, sizeof value);
        CHECK_OK(ss_writer_set_attr(w, name, SS_ATTR_TEXT, value, strlen(value)));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

/* ------------------------------------------------ what a child checks */

enum { OUT_NOEFFECT = 0, OUT_DETECTED = 1, OUT_SILENT = 2, OUT_CRASH, OUT_HANG, OUT_N };
static const char *out_names[OUT_N] = {"no effect", "detected", "silent", "crash", "hang"};

/* 0 when every example equals what make_store() wrote, 1 on an error, 2 on a difference. */
static int read_all(const ss_store *s) {
    if (ss_count(s) != COUNT || ss_field_count(s) != 3) return 2;
    for (uint64_t i = 0; i < COUNT; i++) {
        ss_view v;
        if (ss_get(&v, s, 0, i)) return 1;
        if (v.length != tok_len(i)) return 2;
        for (uint64_t k = 0; k < v.length; k++)
            if (((const uint16_t *)v.data)[k] != tok_at(i, k)) return 2;
        if (ss_get(&v, s, 1, i)) return 1;
        if (v.length != 1 || *(const uint32_t *)v.data != label_of(i)) return 2;
        if (ss_get(&v, s, 2, i)) return 1;
        for (unsigned k = 0; k < 3; k++)
            if (v.length != 1 || ((const float *)v.data)[k] != vec_at(i, k)) return 2;
    }
    if (ss_attr_count(s) != NATTRS + 1) return 2; /* + ss.lengths.tokens, sorted last */
    for (unsigned a = 0; a < NATTRS; a++) {
        char name[32], value[64];
        attr_name(a, name, sizeof name);
        attr_value(a, value, sizeof value);
        ss_attr at;
        if (ss_attr_at(&at, s, a)) return 1;
        if (strcmp(at.name, name) || at.size != strlen(value) || memcmp(at.data, value, at.size))
            return 2;
    }
    return 0;
}

/* The child's whole run. Reads go through SS_OPEN_VERIFY, so a wrong value
 * read is silent even if a later ss_verify() would have found the damage:
 * the reader itself must never return it. */
static int child_run(const char *path) {
    ss_store *s;
    if (ss_open(&s, path, SS_OPEN_VERIFY)) return OUT_DETECTED;
    int r = read_all(s);
    uint64_t problems;
    if (r == 0 && ss_verify(&problems, s, NULL, NULL)) r = 1;
    ss_close(s);
    return r == 1 ? OUT_DETECTED : r == 2 ? OUT_SILENT : OUT_NOEFFECT;
}

static int run_flip(const char *path, char *msg, size_t msglen) {
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        alarm(20);
        int out = child_run(path);
        const char *m = out == OUT_DETECTED ? ss_error_message() : "";
        ssize_t wr = write(fds[1], m, strlen(m));
        (void)wr;
        _exit(out);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], msg, msglen - 1);
    msg[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (WIFSIGNALED(st)) return WTERMSIG(st) == SIGALRM ? OUT_HANG : OUT_CRASH;
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) < OUT_CRASH);
    return WEXITSTATUS(st);
}

/* ------------------------------------------------- the file's regions */

enum { R_META, R_BRANCH, R_LEAF, R_FREEDB, R_HEADER, R_ATTR, R_INDEX, R_DATA, R_FREE, R_N };
static const char *region_names[R_N] = {"LMDB meta",     "main branch", "main leaf",
                                        "free DB pages", "header (H)",  "attributes (A)",
                                        "index (I)",     "data (D)",    "free pages"};

#define PSIZE 4096u
static unsigned char *image; /* the pristine file */
static uint64_t image_pages;
static unsigned char *region; /* region of each page */

static uint16_t rd16(const unsigned char *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static uint64_t rd64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static int tag_region(unsigned char tag) {
    switch (tag) {
    case 'H':
        return R_HEADER;
    case 'A':
        return R_ATTR;
    case 'I':
        return R_INDEX;
    case 'D':
        return R_DATA;
    }
    CHECK(!"unexpected key tag");
    return R_FREE;
}

static void classify(uint64_t pgno, int freedb) {
    const unsigned char *p = image + pgno * PSIZE;
    CHECK(pgno < image_pages && rd64(p) == pgno);
    unsigned flags = rd16(p + 10), n = (rd16(p + 12) - 16u) / 2;
    region[pgno] = freedb ? R_FREEDB : (flags & 1) ? R_BRANCH : R_LEAF;
    for (unsigned i = 0; i < n; i++) {
        const unsigned char *node = p + rd16(p + 16 + 2 * i);
        if (flags & 1) {
            classify(rd16(node) | (uint64_t)rd16(node + 2) << 16 | (uint64_t)rd16(node + 4) << 32,
                     freedb);
            continue;
        }
        if (!(rd16(node + 4) & 1)) continue; /* not F_BIGDATA */
        uint64_t ov = rd64(node + 8 + rd16(node + 6));
        uint64_t pages = *(const uint32_t *)(image + ov * PSIZE + 12);
        for (uint64_t k = 0; k < pages; k++)
            region[ov + k] = freedb ? R_FREEDB : (unsigned char)tag_region(node[8]);
    }
}

static void load_regions(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    image = malloc((size_t)size);
    CHECK(image && fread(image, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    image_pages = (uint64_t)size / PSIZE;
    region = malloc(image_pages);
    memset(region, R_FREE, image_pages);
    region[0] = region[1] = R_META;
    /* The newer meta page: the larger transaction id (after the 16-byte header:
     * 40 bytes to the free DB record, 48 per record, then last page and txnid). */
    const unsigned char *m = image + (rd64(image + 144) > rd64(image + PSIZE + 144) ? 0 : PSIZE);
    for (int dbi = 0; dbi < 2; dbi++) {
        const unsigned char *db = m + 40 + 48 * dbi;
        if (rd16(db + 6)) classify(rd64(db + 40), dbi == 0);
    }
}

/* ----------------------------------------------- named meta-page cases */

static void poke64(const char *path, uint64_t off, uint64_t v) {
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, &v, 8, (off_t)off) == 8);
    close(fd);
}

static void copy_image(const char *to) {
    FILE *f = fopen(to, "wb");
    CHECK(f && fwrite(image, 1, image_pages * PSIZE, f) == image_pages * PSIZE);
    CHECK(fclose(f) == 0);
    char lock[1024];
    snprintf(lock, sizeof lock, "%s-lock", to);
    unlink(lock);
}

/* The older meta page's transaction id raised past the newer one's (parity
 * kept): LMDB then reads the older snapshot, whose header still says
 * "incomplete", and the store used to advise --resume. It is corrupt. */
static void test_older_meta(void) {
    const char *path = ss_test_path("older-meta.ss");
    copy_image(path);
    uint64_t t0 = rd64(image + 144), t1 = rd64(image + PSIZE + 144);
    uint64_t older = t0 < t1 ? 0 : 1, newer_id = t0 < t1 ? t1 : t0;
    poke64(path, older * PSIZE + 144, newer_id + 3);
    ss_store *s;
    CHECK_RC(ss_open(&s, path, 0), SS_ECORRUPT);
    CHECK(strstr(ss_error_message(), "meta pages") && !strstr(ss_error_message(), "--resume"));
    char err[4096];
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "verify '%s'", path), 3, err);
    CHECK_CONTAINS(err, "LMDB meta pages 0 and 1 disagree");
    CHECK(!strstr(err, "--resume"));
    ss_writer *w;
    CHECK_RC(ss_writer_open(&w, path, NULL, NULL), SS_ECORRUPT);
}

/* The newer meta page's page size: LMDB would take it unchecked and crash
 * in mdb_txn_begin. */
static void test_meta_page_size(void) {
    const char *path = ss_test_path("meta-psize.ss");
    copy_image(path);
    uint64_t newer = rd64(image + 144) > rd64(image + PSIZE + 144) ? 0 : 1;
    unsigned char b = 0xdc; /* 4096 -> 56320 */
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, &b, 1, (off_t)(newer * PSIZE + 16 + 24 + 1)) == 1);
    close(fd);
    char msg[512];
    CHECK(run_flip(path, msg, sizeof msg) == OUT_DETECTED);
    CHECK_CONTAINS(msg, "page size");
}

/* The newer meta page's last page 0 and map size 4096: LMDB would map one page and read meta
 * page 1 past the map (SIGSEGV in mdb_txn_begin, found by fuzz_store). */
static void test_meta_last_page(void) {
    const char *path = ss_test_path("meta-lastpg.ss");
    copy_image(path);
    uint64_t newer = rd64(image + 144) > rd64(image + PSIZE + 144) ? 0 : 1;
    poke64(path, newer * PSIZE + 136, 0);
    poke64(path, newer * PSIZE + 32, 4096); /* its map size: one page */
    fflush(NULL);
    pid_t pid = fork(); /* SS_OPEN_NOLOCK: the way fuzz_store opens, where it crashed */
    CHECK(pid >= 0);
    if (pid == 0) {
        ss_store *s;
        int rc = ss_open(&s, path, SS_OPEN_NOLOCK);
        if (rc == SS_ECORRUPT && strstr(ss_error_message(), "last page 0")) _exit(0);
        fprintf(stderr, "meta last page 0: %s\n", ss_error_message());
        _exit(1);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A node offset of a main-DB leaf page pointed past the page: LMDB would
 * read beyond it. Every tool names the page; verify exits 3. */
static void test_leaf_node_cli(void) {
    const char *path = ss_test_path("leaf-node.ss");
    copy_image(path);
    uint64_t leaf = 0;
    for (uint64_t p = 2; p < image_pages && !leaf; p++)
        if (region[p] == R_LEAF) leaf = p;
    CHECK(leaf > 0);
    uint16_t bad = PSIZE - 6;
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, &bad, 2, (off_t)(leaf * PSIZE + 16 + 2)) == 2);
    close(fd);
    char want[128], err[4096];
    snprintf(want, sizeof want, "corrupt LMDB leaf page %llu (main DB): node 1",
             (unsigned long long)leaf);
    ss_store *s;
    CHECK_RC(ss_open(&s, path, 0), SS_ECORRUPT);
    CHECK_CONTAINS(ss_error_message(), want);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "verify '%s'", path), 3, err);
    CHECK_CONTAINS(err, want);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "info '%s'", path), 1, err);
    CHECK_CONTAINS(err, want);
    CHECK_EXIT(ss_test_cli(err, sizeof err, NULL, "cat '%s'", path), 1, err);
    CHECK_CONTAINS(err, want);
}

/* ------------------------------------------------------- the campaign */

/* Outcome classes that other helpers' branches fix, allowed here until the
 * lead merges them (remove each line when its fix is in main):
 * - key bytes are covered by no checksum: a flip in an
 *   attribute's or block's key that keeps LMDB's key order renames it. */
static int allowed_silent(int r) {
    (void)r;
    return 0;
}

/* A third of the flips hit the page header and node table, a third the bytes
 * in use (a B-tree page's nodes, an overflow value's first bytes), the rest
 * anywhere in the page. */
static uint64_t flip_offset(uint64_t pg, unsigned t, uint64_t *rng) {
    const unsigned char *p = image + pg * PSIZE;
    int btree = region[pg] == R_BRANCH || region[pg] == R_LEAF || region[pg] == R_FREEDB;
    unsigned upper = btree && !(rd16(p + 10) & 4) ? rd16(p + 14) : 0;
    if (t % 3 == 0) return ss_test_rand(rng) % 64;
    if (t % 3 == 1 && upper && upper < PSIZE) return upper + ss_test_rand(rng) % (PSIZE - upper);
    if (t % 3 == 1) return ss_test_rand(rng) % 256;
    return ss_test_rand(rng) % PSIZE;
}

int main(void) {
    const char *path = ss_test_path("flip.ss");
    make_store(path);
    load_regions(path);
    test_older_meta();
    test_meta_page_size();
    test_meta_last_page();
    test_leaf_node_cli();
    uint64_t pages_in[R_N] = {0};
    for (uint64_t p = 0; p < image_pages; p++) pages_in[region[p]]++;
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    const char *env_flips = getenv("SS_FLIPS_PER_REGION");
    unsigned per_region = env_flips ? (unsigned)atoi(env_flips) : 400;
    uint64_t table[R_N][OUT_N] = {{0}}, rng = 9;
    int failed = 0;
    for (int r = 0; r < R_N; r++) {
        if (!pages_in[r]) continue;
        for (unsigned t = 0; t < per_region; t++) {
            uint64_t k = ss_test_rand(&rng) % pages_in[r], pg = 0;
            for (pg = 0; pg < image_pages; pg++)
                if (region[pg] == r && k-- == 0) break;
            uint64_t off = flip_offset(pg, t, &rng);
            unsigned char orig = image[pg * PSIZE + off], x;
            x = (t % 2) ? (unsigned char)(1u << (ss_test_rand(&rng) % 8))
                        : (unsigned char)(1 + ss_test_rand(&rng) % 255);
            unsigned char flipped = orig ^ x;
            CHECK(pwrite(fd, &flipped, 1, (off_t)(pg * PSIZE + off)) == 1);
            char msg[512];
            int out = run_flip(path, msg, sizeof msg);
            CHECK(pwrite(fd, &orig, 1, (off_t)(pg * PSIZE + off)) == 1);
            table[r][out]++;
            if (out >= OUT_SILENT && !(out == OUT_SILENT && allowed_silent(r))) {
                failed = 1;
                fprintf(stderr, "%s: page %llu byte %llu ^ 0x%02x: %s\n", region_names[r],
                        (unsigned long long)pg, (unsigned long long)off, x, out_names[out]);
            }
        }
    }
    close(fd);
    printf("%-16s %6s %10s %10s %7s %6s %5s\n", "region", "pages", "detected", "no effect",
           "silent", "crash", "hang");
    for (int r = 0; r < R_N; r++)
        printf("%-16s %6llu %10llu %10llu %7llu %6llu %5llu\n", region_names[r],
               (unsigned long long)pages_in[r], (unsigned long long)table[r][OUT_DETECTED],
               (unsigned long long)table[r][OUT_NOEFFECT], (unsigned long long)table[r][OUT_SILENT],
               (unsigned long long)table[r][OUT_CRASH], (unsigned long long)table[r][OUT_HANG]);
    /* The store is intact again, and every region was hit. */
    CHECK(child_run(path) == OUT_NOEFFECT);
    for (int r = 0; r < R_N; r++) CHECK(pages_in[r] > 0);
    free(image);
    free(region);
    return failed;
}
