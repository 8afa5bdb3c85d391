/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_header.c - libFuzzer target over the header (H) block and the first
 * index segment, with valid checksums: the input replaces the payload of one
 * block of a valid tiny store, resealed (length and checksum recomputed)
 * through LMDB, so that the decoder's bounds checks, not the checksum, must
 * stop absurd counts and sizes. Then the store is opened, read and verified.
 *
 * Input: byte 0 picks the block (even: the header; odd: index segment 0 of
 * field 0 of a store with a sequence field); the rest is the payload.
 * Seeds: fuzz/corpus/header/, written by running this target with
 * SS_FUZZ_MAKE_SEEDS=<dir>: the two original blocks. */
#include "layout.h"
#include "store_harness.h"

#include <lmdb.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char paths[2][64];

/* The second base store: a sequence field, so that it has an index. */
static int make_sequence_store(const char *path) {
    static const ss_field fields[1] = {{"t", SS_U16, 1, 0, {0}}};
    ss_schema schema = {1, fields};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = 1;
    o.flags = SS_WRITE_NOSYNC | SS_WRITE_FORCE;
    ss_writer *w;
    int rc = ss_writer_create(&w, path, &schema, &o);
    for (uint16_t i = 0; rc == 0 && i < 50; i++) {
        uint16_t t[7] = {i, 1, 2, 3, 4, 5, 6};
        ss_value v = {t, i % 8};
        rc = ss_writer_append(w, &v);
    }
    if (rc == 0) rc = ss_writer_finish(w);
    ss_writer_free(w);
    return rc;
}

/* One write environment per base store, open for the whole run (MDB_NOLOCK:
 * the reader's environment of the same file is only open while nothing is
 * written), and each base block's original payload, put back after each input. */
static MDB_env *envs[2];
static MDB_dbi dbis[2];
static unsigned char *orig[2];
static uint64_t orig_len[2];

static void block_key(int b, ss_key *key) {
    if (b == 0)
        ss__key_named(key, SS_KEY_HEADER, NULL);
    else
        ss__key_numbered(key, SS_KEY_INDEX, 0, 0);
}

/* Replace base store b's block with `payload`, sealed; 0 on success. */
static int put_block(int b, const uint8_t *payload, size_t len) {
    MDB_txn *txn;
    ss_key key;
    block_key(b, &key);
    int rc = mdb_txn_begin(envs[b], NULL, 0, &txn);
    if (rc) return rc;
    MDB_val k = ss_key_val(&key), v = {ss__block_value_size(len), NULL};
    if ((rc = mdb_put(txn, dbis[b], &k, &v, MDB_RESERVE))) {
        mdb_txn_abort(txn);
        return rc;
    }
    memcpy((unsigned char *)v.mv_data + SS_BLOCK_HDR, payload, len);
    /* The checksum binds the key (format version 2); a header payload says
     * its own version (after the 8-byte magic), which decides how it is checked. */
    uint32_t version = SS_FORMAT_VERSION;
    if (b == 0 && len >= 12 && (ss_le32(payload + 8) == 1 || ss_le32(payload + 8) == 2))
        version = ss_le32(payload + 8);
    ss__block_seal(v.mv_data, v.mv_size, len, &key, version);
    return mdb_txn_commit(txn);
}

/* Open base store b for writing and keep its block's payload. The index
 * payload is kept only as long as the store's entries (count + 1): the reader
 * needs no more, and the seed then fits the CI's -max_len=4096. */
static void open_base(int b) {
    MDB_txn *txn;
    if (mdb_env_create(&envs[b]) || mdb_env_set_mapsize(envs[b], 64u << 20) ||
        mdb_env_open(envs[b], paths[b], MDB_NOSUBDIR | MDB_NOSYNC | MDB_NOLOCK, 0644) ||
        mdb_txn_begin(envs[b], NULL, 0, &txn) || mdb_dbi_open(txn, NULL, 0, &dbis[b]))
        abort();
    ss_key key;
    block_key(b, &key);
    MDB_val k = ss_key_val(&key), v;
    const unsigned char *p;
    if (mdb_get(txn, dbis[b], &k, &v) ||
        ss__block_open(v.mv_data, v.mv_size, &key, SS_FORMAT_VERSION, "seed", &p, &orig_len[b]))
        abort();
    if (b == 1) orig_len[b] = 51 * SS_INDEX_ENTRY; /* 50 examples */
    if (!(orig[b] = malloc(orig_len[b]))) abort();
    memcpy(orig[b], p, orig_len[b]);
    if (mdb_txn_commit(txn)) abort();
}

/* Seeds for fuzz/corpus/header: each base block as an input. */
static void write_seeds(const char *dir) {
    for (int b = 0; b < 2; b++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, b ? "index0" : "header");
        unsigned char *in = malloc(orig_len[b] + 1);
        if (!in) abort();
        in[0] = (unsigned char)b;
        memcpy(in + 1, orig[b], orig_len[b]);
        if (ss_fuzz_write_file(p, in, orig_len[b] + 1)) abort();
        free(in);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    for (int b = 0; b < 2; b++) {
        ss_fuzz_temp_path(paths[b], sizeof paths[b], b ? "fuzz_header_seq" : "fuzz_header");
        if (b == 0 ? ss_fuzz_make_store(paths[b], 1) : make_sequence_store(paths[b])) abort();
        open_base(b);
    }
    const char *seeds = getenv("SS_FUZZ_MAKE_SEEDS");
    if (seeds) write_seeds(seeds);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int b = data[0] & 1;
    if (put_block(b, data + 1, size - 1)) return 0; /* e.g. larger than the map */
    ss_fuzz_read_all(paths[b]);
    if (put_block(b, orig[b], orig_len[b])) abort();
    return 0;
}
