/* SPDX-License-Identifier: BSD-2-Clause */
/* test_format_map.c - ss_store_map(): where the file is mapped.
 *
 * Checks what the header promises, independently of the library's reads:
 * every view and attribute lies in [base, base + size) and p - base is its
 * offset in the file (compared with pread on a descriptor of our own); the
 * descriptor is the file at `path` (device and inode); a second, private
 * copy-on-write map of that descriptor shows the same bytes, and writing to
 * it changes neither the store's views nor the file. */
#include "testutil.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define N 300u

static const ss_field fields[] = {{"x", SS_U8, 1, 0, {0}}, {"id", SS_I64, 0, 0, {0}}};
static const ss_schema schema = {2, fields};

static uint64_t len_of(uint64_t i) {
    return i % 17 == 0 ? 0 : 1 + (i * 37) % 3000; /* empty ones, and values spanning pages */
}

static void write_store(const char *path) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE | SS_WRITE_NOSYNC;
    ss_writer *w;
    CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    static unsigned char buf[4096];
    for (uint64_t i = 0; i < N; i++) {
        for (uint64_t k = 0; k < len_of(i); k++) buf[k] = (unsigned char)(i * 7 + k);
        int64_t id = (int64_t)i;
        ss_value v[2] = {{buf, len_of(i)}, {&id, 1}};
        CHECK_OK(ss_writer_append(w, v));
    }
    const double scale[3] = {0.5, 2.0, -1.0};
    CHECK_OK(ss_writer_set_attr(w, "scale", SS_F64, scale, sizeof scale));
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

/* The bytes at `p` (inside the map) equal the file's at p - base. */
static void check_in_file(int own_fd, const unsigned char *base, uint64_t size, const void *p,
                          uint64_t n) {
    const unsigned char *q = p;
    CHECK(q >= base && (uint64_t)(q - base) + n <= size);
    unsigned char *copy = malloc(n ? n : 1);
    CHECK(copy);
    CHECK(pread(own_fd, copy, n, (off_t)(q - base)) == (ssize_t)n);
    CHECK(memcmp(copy, q, n) == 0);
    free(copy);
}

int main(void) {
    const char *path = ss_test_path("map.ss");
    write_store(path);
    ss_store *s;
    CHECK_OK(ss_open(&s, path, 0));

    const void *vbase = NULL;
    uint64_t size = 0;
    int fd = -1;
    CHECK_RC(ss_store_map(NULL, &size, &fd, s), SS_EINVAL);
    CHECK_RC(ss_store_map(&vbase, NULL, &fd, s), SS_EINVAL);
    CHECK_RC(ss_store_map(&vbase, &size, NULL, s), SS_EINVAL);
    CHECK_RC(ss_store_map(&vbase, &size, &fd, NULL), SS_EINVAL);
    CHECK(vbase == NULL && size == 0 && fd == -1); /* untouched on failure */
    CHECK_OK(ss_store_map(&vbase, &size, &fd, s));
    const unsigned char *base = vbase;

    /* The descriptor is the file at `path`; size is what it holds. */
    struct stat by_fd, by_path;
    CHECK(fstat(fd, &by_fd) == 0 && stat(path, &by_path) == 0);
    CHECK(by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino);
    CHECK_EQ_U64(size, (uint64_t)by_path.st_size);

    int own = open(path, O_RDONLY);
    CHECK(own >= 0);
    for (uint64_t i = 0; i < N; i++)
        for (uint32_t f = 0; f < 2; f++) {
            ss_view v;
            CHECK_OK(ss_get(&v, s, f, i));
            if (v.length) check_in_file(own, base, size, v.data, v.length * v.row_bytes);
        }
    for (uint64_t k = 0; k < ss_attr_count(s); k++) {
        ss_attr a;
        CHECK_OK(ss_attr_at(&a, s, k));
        check_in_file(own, base, size, a.data, a.size);
    }

    /* A private copy-on-write map of the descriptor: same bytes; writes stay in it. */
    unsigned char *priv =
        mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
    CHECK(priv != MAP_FAILED);
    ss_view v;
    CHECK_OK(ss_get(&v, s, 0, 5));
    uint64_t off = (uint64_t)((const unsigned char *)v.data - base), n = v.length;
    CHECK(n > 0 && memcmp(priv + off, v.data, n) == 0);
    memset(priv + off, 0xEE, n);
    CHECK(((const unsigned char *)v.data)[0] == (unsigned char)(5 * 7));
    unsigned char byte;
    CHECK(pread(own, &byte, 1, (off_t)off) == 1 && byte == (unsigned char)(5 * 7));
    CHECK(munmap(priv, size) == 0);
    close(own);

    /* Opens of the same file share LMDB's map: the same base. */
    ss_store *s2;
    const void *base2;
    uint64_t size2;
    int fd2;
    CHECK_OK(ss_open(&s2, path, SS_OPEN_INCOMPLETE));
    CHECK_OK(ss_store_map(&base2, &size2, &fd2, s2));
    CHECK(base2 == vbase && fd2 == fd);
    ss_close(s2);
    ss_close(s);
    puts("test_format_map: ok");
    return 0;
}
