/* SPDX-License-Identifier: BSD-2-Clause */
/* test_dataset_shard_map.c - a dataset maps each shard at its file's size
 * rounded up to 2 MiB (env.h: ss__env_shard_map_bytes()), a store opened
 * directly keeps its 1 TiB map (read from /proc/self/maps, the kernel's
 * account); the inline ss_get() of a dataset (through its shards' tables)
 * agrees with the exported one and with a single store of the same
 * examples; and a shard that another process grows past that small map is
 * never remapped under the dataset: opening it directly meanwhile fails with
 * SS_EBUSY, and works once the dataset is closed. */
#include "testutil.h"

#include "manifest.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const ss_field field = {"tok", SS_U16, 1, 0, {0}};
static const ss_schema schema = {1, &field};

static void append(const char *path, uint64_t a, uint64_t b, int create) {
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_NOSYNC | (create ? SS_WRITE_FORCE : 0);
    ss_writer *w;
    if (create)
        CHECK_OK(ss_writer_create(&w, path, &schema, &o));
    else
        CHECK_OK(ss_writer_open(&w, path, &schema, &o));
    uint16_t buf[100];
    for (uint64_t i = a; i < b; i++) {
        for (int k = 0; k < 100; k++) buf[k] = (uint16_t)(i + k);
        ss_value v = {buf, 1 + i % 100};
        CHECK_OK(ss_writer_append(w, &v));
    }
    CHECK_OK(ss_writer_finish(w));
    ss_writer_free(w);
}

/* Bytes of the mapping of `path` in this process, 0 if none. */
/* Bytes of LMDB's map of `path`: the mappings of the file whose address
 * less file offset is that of the mapping of offset 0 (the reader's flat
 * index maps pages of the same file elsewhere, spec §6.2). */
static uint64_t mapped_bytes(const char *path) {
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f);
    char line[4600];
    uint64_t bytes = 0, base = 0;
    for (int pass = 0; pass < 2; pass++) {
        rewind(f);
        while (fgets(line, sizeof line, f)) {
            unsigned long lo, hi, off;
            char *name = strchr(line, '/');
            if (!name || sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &off) != 3) continue;
            name[strcspn(name, "\n")] = 0;
            if (strcmp(name, path) != 0) continue;
            if (pass == 0 && off == 0) base = lo;
            if (pass == 1 && base && lo - off == base) bytes += hi - lo;
        }
    }
    fclose(f);
    return bytes;
}

static uint64_t file_size(const char *path) {
    struct stat st;
    CHECK(stat(path, &st) == 0);
    return (uint64_t)st.st_size;
}

int main(void) {
    char dir[4200], shard[2][4300], single[4300];
    snprintf(dir, sizeof dir, "%s", ss_test_path("ds"));
    mkdir(dir, 0755);
    ss_manifest m;
    for (int k = 0; k < 2; k++) {
        char name[32];
        snprintf(name, sizeof name, "part-%d.ss", k);
        snprintf(shard[k], sizeof shard[k], "%s/%s", dir, name);
        append(shard[k], 1000 * (uint64_t)k, 1000 * (uint64_t)k + 1000, 1);
        ss_store *s;
        uint64_t digest, rows;
        CHECK_OK(ss_open(&s, shard[k], SS_OPEN_NOLOCK));
        if (k == 0) ss__manifest_init(&m, s);
        rows = ss_flat_size(s, 0);
        CHECK_OK(ss__store_header_digest(&digest, s));
        CHECK_OK(ss__manifest_add(&m, name, ss_count(s), digest, &rows));
        ss_close(s);
    }
    CHECK_OK(ss__manifest_write(&m, dir));
    ss__manifest_free(&m);
    snprintf(single, sizeof single, "%s", ss_test_path("single.ss"));
    append(single, 0, 2000, 1);

    ss_store *ds, *one;
    CHECK_OK(ss_open(&ds, dir, 0));
    CHECK_OK(ss_open(&one, single, 0));
    ss_view v;
    CHECK_OK(ss_get(&v, ds, 0, 10));   /* opens shard 0 */
    CHECK_OK(ss_get(&v, ds, 0, 1500)); /* and shard 1 */
    CHECK_EQ_U64(v.length, 1 + 1500 % 100);
    CHECK_EQ_U64(((const uint16_t *)v.data)[0], 1500);
    const uint64_t unit = 2u << 20;
    for (int k = 0; k < 2; k++) {
        uint64_t got = mapped_bytes(shard[k]), size = file_size(shard[k]);
        CHECK(got >= size && got == (size + unit - 1) / unit * unit);
    }
    CHECK(mapped_bytes(single) >= (1ull << 40));
    /* the inline ss_get() through the shards' tables, the exported one and
     * the single store of the same examples agree on every example */
    for (uint64_t i = 0; i < 2000; i++) {
        ss_view a, b, c;
        CHECK_OK(ss_get(&a, ds, 0, i));
        CHECK_OK((ss_get)(&b, ds, 0, i));
        CHECK_OK(ss_get(&c, one, 0, i));
        CHECK(a.data == b.data && a.length == b.length && a.row_bytes == b.row_bytes);
        CHECK(a.length == c.length && memcmp(a.data, c.data, a.length * 2) == 0);
    }
    CHECK_RC(ss_get(&v, ds, 0, 2000), SS_ERANGE);
    CHECK_RC(ss_get(&v, ds, 1, 0), SS_ERANGE);

    /* another process grows shard 0 past its map */
    uint64_t map0 = mapped_bytes(shard[0]);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        append(shard[0], 1000, 40000, 0);
        _exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(file_size(shard[0]) > map0);
    ss_store *direct;
    CHECK_RC(ss_open(&direct, shard[0], 0), SS_EBUSY); /* no remap under the dataset */
    CHECK_OK(ss_get(&v, ds, 0, 1500));                 /* shard 1: untouched */
    CHECK_EQ_U64(((const uint16_t *)v.data)[0], 1500);
    ss_close(ds);
    CHECK_OK(ss_open(&direct, shard[0], 0));
    CHECK_EQ_U64(ss_count(direct), 40000);
    CHECK_OK(ss_get(&v, direct, 0, 39999));
    CHECK_EQ_U64(((const uint16_t *)v.data)[0], (uint16_t)39999);
    ss_close(direct);
    ss_close(one);
    printf("test_dataset_shard_map: ok\n");
    return 0;
}
