/* SPDX-License-Identifier: BSD-2-Clause */
/* store_harness.h - shared by the store fuzz targets: a tiny store to start
 * from, and the reader's whole surface over a store file (open, every example
 * of every field, every attribute, verify). Any outcome but a crash, a hang or
 * a sanitizer report is acceptable: errors are the expected answer. */
#ifndef SS_STORE_HARNESS_H
#define SS_STORE_HARNESS_H

#include "seqstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Tiny stores (fixed fields only, so there is no 1 MiB index segment): one
 * field (variant 0); two fields and attributes (1); and an append in several
 * commits, so that the free DB holds pages (2). Returns 0 or an ss_ code. */
static int ss_fuzz_make_store(const char *path, int variant) {
    /* variants 0-2: fixed fields; 3 and 4: a sequence field (its index) in
     * format versions 3 (the flat index) and 2 (segments read in place) */
    static const ss_field fields[2] = {{"x", SS_U8, 0, 1, {5}}, {"y", SS_F32, 0, 0, {0}}};
    static const ss_field seq[2] = {{"t", SS_U16, 1, 0, {0}}, {"y", SS_F32, 0, 0, {0}}};
    ss_schema schema = {variant == 0 ? 1 : 2, variant >= 3 ? seq : fields};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = 1;
    o.flags = SS_WRITE_NOSYNC | SS_WRITE_FORCE;
    o.format_version = variant == 4 ? 2 : 0;
    ss_writer *w;
    int rc = ss_writer_create(&w, path, &schema, &o);
    for (uint32_t i = 0; rc == 0 && i < (variant == 2 ? 900u : variant >= 3 ? 300u : 40u); i++) {
        unsigned char x[5] = {(unsigned char)i, 1, 2, 3, (unsigned char)(i >> 8)};
        uint16_t t[12] = {(uint16_t)i, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, (uint16_t)(i >> 3)};
        float y = (float)i * 0.5f;
        ss_value v[2] = {{x, 1}, {&y, 1}};
        if (variant >= 3) v[0] = (ss_value){t, (i * 7) % 13 == 12 ? 0 : (i * 7) % 13};
        rc = ss_writer_append(w, v);
        if (rc == 0 && variant == 2 && i % 300 == 299) rc = ss_writer_commit(w);
    }
    if (rc == 0 && variant >= 1) rc = ss_writer_set_attr(w, "note", SS_ATTR_TEXT, "tiny", 4);
    if (rc == 0 && variant >= 1) {
        const uint32_t ids[3] = {7, 8, 9};
        rc = ss_writer_set_attr(w, "ids", SS_U32, ids, sizeof ids);
    }
    if (rc == 0) rc = ss_writer_finish(w);
    ss_writer_free(w);
    return rc;
}

/* Everything a reading tool does with the store at `path`. */
static void ss_fuzz_read_all(const char *path) {
    ss_store *s;
    if (ss_open(&s, path, SS_OPEN_NOLOCK)) return;
    uint64_t sum = 0;
    for (uint32_t f = 0; f < ss_field_count(s); f++)
        for (uint64_t i = 0; i < ss_count(s); i++) {
            ss_view v;
            if (ss_get(&v, s, f, i)) break;
            const unsigned char *b = v.data;
            for (uint64_t k = 0; k < v.length * v.row_bytes; k++) sum += b[k];
            if (ss_length(s, f, i) != v.length) abort();
        }
    for (uint32_t f = 0; f < ss_field_count(s); f++) { /* the scan API over the same rows */
        unsigned char buf[64];
        uint64_t len[16], got = 0;
        for (uint64_t i = 0; i < ss_count(s); i += got ? got : 1) {
            uint64_t n = ss_count(s) - i < 16 ? ss_count(s) - i : 16, used = 0;
            if (ss_read_examples(&got, buf, len, s, f, i, n, sizeof buf)) break;
            for (uint64_t k = 0; k < got; k++) used += len[k] * ss_field_row_bytes(s, f);
            if (used > sizeof buf) abort();
            for (uint64_t k = 0; k < used; k++) sum += buf[k];
        }
    }
    for (uint64_t a = 0; a < ss_attr_count(s); a++) {
        ss_attr at;
        if (ss_attr_at(&at, s, a)) continue;
        const unsigned char *b = at.data;
        for (uint64_t k = 0; k < at.size; k++) sum += b[k];
        sum += strlen(at.name);
    }
    uint64_t problems;
    ss_verify(&problems, s, NULL, NULL);
    ss_close(s);
    if (sum == 1) fputs("", stderr); /* keep the reads */
}

/* A file name for this process's store: in memory (/dev/shm) when there is
 * one, since every input is written to it. */
static void ss_fuzz_temp_path(char *buf, size_t n, const char *name) {
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(buf, n, "%s/%s.%d.ss", dir, name, (int)getpid());
}

/* Write `size` bytes to `path` (replacing it). 0 on success. */
static int ss_fuzz_write_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t n = size ? fwrite(data, 1, size, f) : 0;
    return (fclose(f) == 0 && n == size) ? 0 : -1;
}

#endif
