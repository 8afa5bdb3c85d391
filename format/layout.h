/* SPDX-License-Identifier: BSD-2-Clause */
/* layout.h - the on-disk layout of spec/FORMAT.md: constants, keys, blocks and
 * the header. Everything that knows a byte position of the format is here or
 * in layout.c. */
#ifndef SS_LAYOUT_H
#define SS_LAYOUT_H

#include "internal.h"

#include <lmdb.h>
#include <stdint.h>
#include <string.h>

#define SS_MAGIC "SEQSTORE"
#define SS_PAGE 4096u            /* the format's page unit */
#define SS_LMDB_OVERFLOW_HDR 16u /* LMDB's page header before an overflow value */
#define SS_BLOCK_HDR 16u         /* xxh3-64 of the payload, payload length */
#define SS_DEFAULT_CHUNK_PAGES 256u
#define SS_INDEX_ENTRY 16u /* u64 location, u64 start row */
/* Index segments (spec §6.2). Format version 3: 65536 entries after a lead
 * of 4064 reserved bytes, so that the entries start on a page of their own
 * (a block's payload starts 32 bytes into its first page) and a reader can
 * map every segment's entries into one flat array; a full segment is 257
 * pages. Versions 1 and 2: 65534 entries from the payload's start, exactly
 * 256 pages. */
#define SS_SEGMENT_PAGES 257u /* the most pages a segment takes */
#define SS_SEGMENT_ENTRIES_V2 65534u
#define SS_SEGMENT_ENTRIES_V3 65536u
#define SS_SEGMENT_LEAD_V3 4064u
#define SS_HEADER_FIXED 48u
#define SS_FIELD_RECORD 112u
#define SS_ATTR_PREFIX 8u          /* u32 type, u32 reserved, before the attribute bytes */
#define SS_MAX_VALUE 0xFFFFFFFFull /* LMDB's largest value */

/* incompat_flags: a reader must refuse a bit it does not know. */
#define SS_INCOMPAT_INCOMPLETE 0x1u
#define SS_INCOMPAT_KNOWN 0x1u
/* compat_flags: optional parts; unknown bits are ignored. Bit 0: the header
 * payload carries the store's content digest in the 8 bytes after its field
 * records (spec §5; what it digests: ss__content_digest()). The writer sets it
 * in the header of a finished store only. */
#define SS_COMPAT_CONTENT 0x1u
#define SS_HEADER_CONTENT 8u /* the content digest after the field records */

/* Key tags (first byte of every key). */
#define SS_KEY_HEADER 'H'
#define SS_KEY_PROGRESS 'W'
#define SS_KEY_RESUME 'R'
#define SS_KEY_ATTR 'A'
#define SS_KEY_DATA 'D'
#define SS_KEY_INDEX 'I'

/* Entries per index segment, and the payload bytes before the first entry,
 * in format `version`. */
static inline uint64_t ss_segment_entries(uint32_t version) {
    return version >= 3 ? SS_SEGMENT_ENTRIES_V3 : SS_SEGMENT_ENTRIES_V2;
}
static inline uint64_t ss_segment_lead(uint32_t version) {
    return version >= 3 ? SS_SEGMENT_LEAD_V3 : 0;
}
/* The segment holding entry `e` when segments hold `per` entries (one of the
 * two above: a shift or a multiplication, never a division instruction). */
static inline uint64_t ss_segment_of(uint64_t e, uint64_t per) {
    return per == SS_SEGMENT_ENTRIES_V3 ? e >> 16 : e / SS_SEGMENT_ENTRIES_V2;
}

/* Encoded location of an example's first row: chunk << 32 | byte offset. */
#define SS_LOC(chunk, offset) (((uint64_t)(chunk) << 32) | (uint64_t)(offset))
#define SS_LOC_CHUNK(loc) ((loc) >> 32)
#define SS_LOC_OFFSET(loc) ((loc)&0xFFFFFFFFull)

static inline uint64_t ss_le64(const void *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    const unsigned char *b = p;
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = (v << 8) | b[k];
    return v;
#endif
}
static inline uint32_t ss_le32(const void *p) {
    const unsigned char *b = p;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static inline void ss_put_le64(void *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 8);
#else
    unsigned char *b = p;
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)(v >> (8 * k));
#endif
}
static inline void ss_put_le32(void *p, uint32_t v) {
    unsigned char *b = p;
    for (int k = 0; k < 4; k++) b[k] = (unsigned char)(v >> (8 * k));
}

/* Size of the LMDB value holding a block of `payload` bytes: rounded up to
 * k * 4096 - 16 so that its overflow pages are filled exactly, and never below
 * one page so that LMDB always stores it in overflow pages (16-byte aligned). */
uint64_t ss__block_value_size(uint64_t payload);
/* Payload capacity of a data chunk of `pages` pages. */
static inline uint64_t ss_chunk_capacity(uint32_t pages) {
    return (uint64_t)pages * SS_PAGE - SS_LMDB_OVERFLOW_HDR - SS_BLOCK_HDR;
}
/* Keys. Numbers are big-endian so that LMDB's byte order is numeric order. */
typedef struct ss_key {
    unsigned char bytes[1 + SS_MAX_ATTR_NAME];
    size_t size;
} ss_key;

/* The checksum of a block's payload stored under `key` in a store of format
 * `version` (spec §4): version 1 hashes the payload alone; version 2 seeds the
 * hash with the hash of the key, so a block only checks under its own key. */
uint64_t ss__block_checksum(const void *payload, uint64_t len, const ss_key *key, uint32_t version);
/* Write the block header for the payload at `value` + 16 (its checksum for
 * `key` and `version`, and its length) and zero the padding. */
void ss__block_seal(void *value, uint64_t value_size, uint64_t payload_len, const ss_key *key,
                    uint32_t version);
/* ss__block_seal() with the checksum given: ss__block_checksum() of the payload,
 * computed before it was copied to `value`. */
void ss__block_seal_sum(void *value, uint64_t value_size, uint64_t payload_len, uint64_t checksum);
/* Check the block `value`/`value_size` as read from LMDB: its sizes, then, if
 * `key` is not NULL, its checksum for `key` and `version`. Returns 0 and sets
 * *payload and *len, or SS_ECORRUPT with a message naming `what`. */
int ss__block_open(const void *value, uint64_t value_size, const ss_key *key, uint32_t version,
                   const char *what, const unsigned char **payload, uint64_t *len);
void ss__key_numbered(ss_key *k, char tag, uint32_t field, uint64_t number);
void ss__key_named(ss_key *k, char tag, const char *name);
static inline MDB_val ss_key_val(ss_key *k) {
    MDB_val v = {k->size, k->bytes};
    return v;
}

/* The header (and progress record): the decoded form. */
typedef struct ss_field_state {
    char name[SS_MAX_NAME + 1];
    ss_field def;       /* def.name points at name */
    uint64_t row_bytes; /* derived */
    uint64_t total_rows;
    uint64_t nchunks;
    uint64_t tail_bytes;
} ss_field_state;

typedef struct ss_header {
    uint32_t format_version;
    uint32_t incompat_flags;
    uint32_t compat_flags;
    uint32_t nfields;
    uint64_t count;
    uint32_t chunk_pages;
    uint64_t segment_entries;
    uint64_t content_digest; /* with SS_COMPAT_CONTENT */
    ss_field_state fields[SS_MAX_FIELDS];
} ss_header;

/* Bytes of the field records' end (48 + 112 nfields): a payload's least size. */
uint64_t ss__header_payload_size(uint32_t nfields);
/* Bytes of `h`'s payload as encoded: the records, and the content digest when
 * compat_flags says so. */
uint64_t ss__header_size(const ss_header *h);
void ss__header_encode(const ss_header *h, unsigned char *payload);
/* Decode and validate (magic, version, flags, the checksum of `block` under
 * key `tag` if `block` is not NULL, schema). `what` names the store. */
int ss__header_decode(ss_header *h, const unsigned char *payload, uint64_t len, const char *what,
                      const MDB_val *block, char tag);
/* Read the header-layout block `v` stored under key `tag` (H or W): magic,
 * version and flags, then the checksum ("metadata checksum mismatch"), then
 * the fields. */
int ss__header_read(ss_header *h, const MDB_val *v, char tag, const char *what);
/* Check every count and size of a decoded header (H or W, named by `tag`)
 * against what `file_bytes` of LMDB pages can hold, before any of them sizes
 * an allocation or bounds an index: SS_ECORRUPT naming the field otherwise. */
int ss__header_check_bounds(const ss_header *h, uint64_t file_bytes, char tag, const char *what);
/* Bytes of the LMDB pages in use by `env` (the newest meta page's last page):
 * every block of every snapshot lies inside them. */
uint64_t ss__env_used_bytes(MDB_env *env);
/* Validate a schema given by a caller and fill h's fields from it. */
int ss__header_set_schema(ss_header *h, const ss_schema *schema);
/* The content digest of the store whose header is `h` (spec §13): XXH3-64
 * of one 16-byte record per block the header names, in key order, after the
 * key's length (u16 LE) and the key: every attribute, the data chunks
 * 0..nchunks-1 and the index segments of every field (D and I keys of other
 * numbers are ignored, as readers ignore them). A block's record is its
 * stored header (checksum and payload length): the checksums, which cover
 * the payloads, are digested, not the payloads, so the cost is one page read
 * per block. A field's last data chunk and last index segment are the
 * exception: an append rewrites them with more bytes before it writes a new
 * header, so their record is XXH3-64 of the payload bytes the header counts
 * (tail_bytes; the lead and count + 1 entries) and that length, u64 LE each.
 * Read through `txn` (the writer's, before it writes H; a reader's snapshot
 * for verify). 0, an LMDB error code, MDB_CORRUPTED (a value shorter than a
 * block header, or than the bytes the header counts) or ENOMEM. */
int ss__content_digest(uint64_t *out, MDB_txn *txn, MDB_dbi dbi, const ss_header *h);
/* Rows per chunk of a fixed field. */
static inline uint64_t ss_fixed_per_chunk(const ss_header *h, const ss_field_state *f) {
    uint64_t per = ss_chunk_capacity(h->chunk_pages) / f->row_bytes;
    return per ? per : 1;
}

#endif
