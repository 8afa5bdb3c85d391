/* SPDX-License-Identifier: BSD-2-Clause */
/* layout.c - encoding and checking of blocks, keys and the header. */
#include "layout.h"

#include <xxhash.h>

uint64_t ss__block_value_size(uint64_t payload) {
    uint64_t need = payload + SS_BLOCK_HDR + SS_LMDB_OVERFLOW_HDR;
    uint64_t pages = (need + SS_PAGE - 1) / SS_PAGE;
    if (pages == 0) pages = 1;
    return pages * SS_PAGE - SS_LMDB_OVERFLOW_HDR;
}

uint64_t ss__block_checksum(const void *payload, uint64_t len, const ss_key *key,
                            uint32_t version) {
    if (version < 2) return XXH3_64bits(payload, len);
    return XXH3_64bits_withSeed(payload, len, XXH3_64bits(key->bytes, key->size));
}

void ss__block_seal(void *value, uint64_t value_size, uint64_t payload_len, const ss_key *key,
                    uint32_t version) {
    unsigned char *v = value;
    uint64_t sum = ss__block_checksum(v + SS_BLOCK_HDR, payload_len, key, version);
    ss__block_seal_sum(value, value_size, payload_len, sum);
}

void ss__block_seal_sum(void *value, uint64_t value_size, uint64_t payload_len, uint64_t checksum) {
    unsigned char *v = value;
    memset(v + SS_BLOCK_HDR + payload_len, 0, value_size - SS_BLOCK_HDR - payload_len);
    ss_put_le64(v, checksum);
    ss_put_le64(v + 8, payload_len);
}

int ss__block_open(const void *value, uint64_t value_size, const ss_key *key, uint32_t version,
                   const char *what, const unsigned char **payload, uint64_t *len) {
    const unsigned char *b = value;
    if (value_size < SS_BLOCK_HDR)
        return ss__fail(SS_ECORRUPT, "%s: block of %llu bytes is shorter than its header", what,
                        (unsigned long long)value_size);
    uint64_t n = ss_le64(b + 8);
    if (n > value_size - SS_BLOCK_HDR)
        return ss__fail(SS_ECORRUPT, "%s: block says %llu payload bytes but holds %llu", what,
                        (unsigned long long)n, (unsigned long long)(value_size - SS_BLOCK_HDR));
    if (key && ss__block_checksum(b + SS_BLOCK_HDR, n, key, version) != ss_le64(b))
        return ss__fail(SS_ECORRUPT, "%s: checksum mismatch", what);
    *payload = b + SS_BLOCK_HDR;
    *len = n;
    return 0;
}

void ss__key_numbered(ss_key *k, char tag, uint32_t field, uint64_t number) {
    k->bytes[0] = (unsigned char)tag;
    k->bytes[1] = (unsigned char)field;
    for (int i = 0; i < 8; i++) k->bytes[2 + i] = (unsigned char)(number >> (8 * (7 - i)));
    k->size = 10;
}

void ss__key_named(ss_key *k, char tag, const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n > SS_MAX_ATTR_NAME) n = SS_MAX_ATTR_NAME;
    k->bytes[0] = (unsigned char)tag;
    if (n) memcpy(k->bytes + 1, name, n);
    k->size = 1 + n;
}

uint64_t ss__header_payload_size(uint32_t nfields) {
    return SS_HEADER_FIXED + (uint64_t)nfields * SS_FIELD_RECORD;
}

uint64_t ss__header_size(const ss_header *h) {
    return ss__header_payload_size(h->nfields) +
           (h->compat_flags & SS_COMPAT_CONTENT ? SS_HEADER_CONTENT : 0);
}

void ss__header_encode(const ss_header *h, unsigned char *p) {
    memset(p, 0, ss__header_size(h));
    memcpy(p, SS_MAGIC, 8);
    ss_put_le32(p + 8, h->format_version);
    ss_put_le32(p + 12, h->incompat_flags);
    ss_put_le32(p + 16, h->compat_flags);
    ss_put_le32(p + 20, h->nfields);
    ss_put_le64(p + 24, h->count);
    ss_put_le32(p + 32, h->chunk_pages);
    ss_put_le64(p + 40, h->segment_entries);
    for (uint32_t i = 0; i < h->nfields; i++) {
        const ss_field_state *f = &h->fields[i];
        unsigned char *r = p + SS_HEADER_FIXED + (uint64_t)i * SS_FIELD_RECORD;
        memcpy(r, f->name, strlen(f->name));
        r[48] = (unsigned char)f->def.dtype;
        r[49] = (unsigned char)f->def.sequence;
        r[50] = (unsigned char)f->def.ndim;
        for (uint32_t d = 0; d < SS_MAX_DIMS; d++) ss_put_le64(r + 56 + 8 * d, f->def.dims[d]);
        ss_put_le64(r + 88, f->total_rows);
        ss_put_le64(r + 96, f->nchunks);
        ss_put_le64(r + 104, f->tail_bytes);
    }
    if (h->compat_flags & SS_COMPAT_CONTENT)
        ss_put_le64(p + ss__header_payload_size(h->nfields), h->content_digest);
}

/* Check one field definition; on success fill the derived row size. */
static int ss_field_check(const ss_field *def, uint64_t *row_bytes) {
    const char *name = def->name ? def->name : "";
    size_t n = strlen(name);
    if (n == 0 || n > SS_MAX_NAME)
        return ss__fail(SS_EINVAL, "field name '%s' must have 1 to %d bytes", name, SS_MAX_NAME);
    size_t es = ss_dtype_size(def->dtype);
    if (es == 0) return ss__fail(SS_EINVAL, "field '%s': unknown dtype %d", name, (int)def->dtype);
    if (def->sequence != 0 && def->sequence != 1)
        return ss__fail(SS_EINVAL, "field '%s': sequence must be 0 or 1", name);
    if (def->ndim > SS_MAX_DIMS)
        return ss__fail(SS_EINVAL, "field '%s': %u trailing dimensions (at most %d)", name,
                        def->ndim, SS_MAX_DIMS);
    uint64_t rb = es;
    for (uint32_t d = 0; d < def->ndim; d++) {
        if (def->dims[d] == 0 || def->dims[d] > SS_MAX_VALUE / rb)
            return ss__fail(SS_EINVAL, "field '%s': dimension %u is %llu (must be 1..%llu)", name,
                            d, (unsigned long long)def->dims[d],
                            (unsigned long long)(SS_MAX_VALUE / rb));
        rb *= def->dims[d];
    }
    for (uint32_t d = def->ndim; d < SS_MAX_DIMS; d++)
        if (def->dims[d] != 0)
            return ss__fail(SS_EINVAL, "field '%s': dims[%u] set beyond ndim %u", name, d,
                            def->ndim);
    *row_bytes = rb;
    return 0;
}

int ss__header_set_schema(ss_header *h, const ss_schema *schema) {
    if (!schema || schema->nfields == 0 || schema->nfields > SS_MAX_FIELDS || !schema->fields)
        return ss__fail(SS_EINVAL, "a schema needs 1 to %d fields", SS_MAX_FIELDS);
    h->nfields = schema->nfields;
    for (uint32_t i = 0; i < schema->nfields; i++) {
        ss_field_state *f = &h->fields[i];
        memset(f, 0, sizeof *f);
        int rc = ss_field_check(&schema->fields[i], &f->row_bytes);
        if (rc) return rc;
        f->def = schema->fields[i];
        strcpy(f->name, schema->fields[i].name);
        f->def.name = f->name;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(h->fields[j].name, f->name) == 0)
                return ss__fail(SS_EINVAL, "field name '%s' appears twice", f->name);
    }
    return 0;
}

/* Magic, version and flags first (so that a newer store is named as such),
 * then the checksum, then the field records. */
int ss__header_read(ss_header *h, const MDB_val *v, char tag, const char *what) {
    const unsigned char *p = NULL;
    uint64_t len = 0;
    int rc = ss__block_open(v->mv_data, v->mv_size, NULL, 0, what, &p, &len);
    return rc ? rc : ss__header_decode(h, p, len, what, v, tag);
}

static int ss_all_zero(const unsigned char *p, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (p[k]) return 0;
    return 1;
}

int ss__header_decode(ss_header *h, const unsigned char *p, uint64_t len, const char *what,
                      const MDB_val *block, char tag) {
    memset(h, 0, sizeof *h);
    if (len < SS_HEADER_FIXED || memcmp(p, SS_MAGIC, 8) != 0)
        return ss__fail(SS_ENOTSTORE, "%s: not a seqstore store (bad magic)", what);
    h->format_version = ss_le32(p + 8);
    if (h->format_version > SS_FORMAT_VERSION)
        return ss__fail(SS_EVERSION, "%s: format version %u is newer than this library's %d", what,
                        h->format_version, SS_FORMAT_VERSION);
    if (h->format_version == 0)
        return ss__fail(SS_ECORRUPT, "%s: format version 0 is not valid", what);
    h->incompat_flags = ss_le32(p + 12);
    h->compat_flags = ss_le32(p + 16);
    h->nfields = ss_le32(p + 20);
    h->count = ss_le64(p + 24);
    h->chunk_pages = ss_le32(p + 32);
    h->segment_entries = ss_le64(p + 40);
    if (h->incompat_flags & ~SS_INCOMPAT_KNOWN)
        return ss__fail(SS_EVERSION, "%s: uses features 0x%x this library does not know", what,
                        h->incompat_flags & ~SS_INCOMPAT_KNOWN);
    const unsigned char *checked;
    uint64_t checked_len;
    ss_key key;
    ss__key_named(&key, tag, NULL);
    if (block && ss__block_open(block->mv_data, block->mv_size, &key, h->format_version, what,
                                &checked, &checked_len))
        return ss__fail(SS_ECORRUPT, "%s: metadata checksum mismatch", what);
    if (h->nfields == 0 || h->nfields > SS_MAX_FIELDS || len < ss__header_payload_size(h->nfields))
        return ss__fail(SS_ECORRUPT, "%s: header holds %u fields in %llu bytes", what, h->nfields,
                        (unsigned long long)len);
    if ((h->compat_flags & SS_COMPAT_CONTENT) &&
        len < ss__header_payload_size(h->nfields) + SS_HEADER_CONTENT)
        return ss__fail(SS_ECORRUPT, "%s: header announces a content digest it does not hold",
                        what);
    if (h->compat_flags & SS_COMPAT_CONTENT)
        h->content_digest = ss_le64(p + ss__header_payload_size(h->nfields));
    if (h->chunk_pages == 0 || h->chunk_pages > 1048575u ||
        h->segment_entries != ss_segment_entries(h->format_version))
        return ss__fail(SS_ECORRUPT, "%s: bad chunk or segment size in header", what);
    if (!ss_all_zero(p + 36, 4))
        return ss__fail(SS_ECORRUPT, "%s: header bytes 36..39 are reserved and must be zero",
                        what);
    for (uint32_t i = 0; i < h->nfields; i++) {
        const unsigned char *r = p + SS_HEADER_FIXED + (uint64_t)i * SS_FIELD_RECORD;
        ss_field_state *f = &h->fields[i];
        const unsigned char *end = memchr(r, 0, 48);
        if (end == NULL)
            return ss__fail(SS_ECORRUPT, "%s: field %u name is not terminated", what, i);
        if (!ss_all_zero(end, (size_t)(r + 48 - end)))
            return ss__fail(SS_ECORRUPT,
                            "%s: field %u: name bytes after the terminating NUL must be zero", what,
                            i);
        if (!ss_all_zero(r + 51, 5))
            return ss__fail(SS_ECORRUPT,
                            "%s: field %u: record bytes 51..55 are reserved and must be zero", what,
                            i);
        memcpy(f->name, r, SS_MAX_NAME);
        f->def.name = f->name;
        f->def.dtype = (ss_dtype)r[48];
        f->def.sequence = r[49];
        f->def.ndim = r[50];
        for (uint32_t d = 0; d < SS_MAX_DIMS; d++) f->def.dims[d] = ss_le64(r + 56 + 8 * d);
        f->total_rows = ss_le64(r + 88);
        f->nchunks = ss_le64(r + 96);
        f->tail_bytes = ss_le64(r + 104);
        if (ss_field_check(&f->def, &f->row_bytes) != 0)
            return ss__context(SS_ECORRUPT, "%s: field %u", what, i);
        f->def.name = f->name;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(h->fields[j].name, f->name) == 0)
                return ss__fail(SS_ECORRUPT,
                                "%s: fields %u and %u are both named '%s' (names must be unique)",
                                what, j, i, f->name);
        if (!f->def.sequence && f->total_rows != h->count)
            return ss__fail(SS_ECORRUPT, "%s: fixed field '%s' has %llu rows for %llu examples",
                            what, f->name, (unsigned long long)f->total_rows,
                            (unsigned long long)h->count);
    }
    return 0;
}

uint64_t ss__env_used_bytes(MDB_env *env) {
    MDB_envinfo info;
    MDB_stat st;
    mdb_env_info(env, &info);
    mdb_env_stat(env, &st);
    return ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
}

static int ss_too_big(const char *what, char tag, const char *field, const char *name,
                      uint64_t value, uint64_t file_bytes) {
    const char *rec = tag == SS_KEY_PROGRESS ? "progress record" : "header";
    if (name)
        return ss__fail(
            SS_ECORRUPT, "%s: %s: field '%s': %s is %llu, more than a file of %llu bytes can hold",
            what, rec, name, field, (unsigned long long)value, (unsigned long long)file_bytes);
    return ss__fail(SS_ECORRUPT, "%s: %s: %s is %llu, more than a file of %llu bytes can hold",
                    what, rec, field, (unsigned long long)value, (unsigned long long)file_bytes);
}

/* A checksum-valid header may still hold absurd counts (a damaged writer, a
 * crafted file): bound each by the bytes it needs on disk. Every block is an
 * LMDB value of at least one page (4096 - 16 bytes), each example takes an
 * index entry (sequence) or a row (fixed) of every field, and each row of a
 * field takes row_bytes of its chunks. Division keeps the checks overflow-free. */
int ss__header_check_bounds(const ss_header *h, uint64_t file_bytes, char tag, const char *what) {
    uint64_t blocks = file_bytes / (SS_PAGE - SS_LMDB_OVERFLOW_HDR), used = 0;
    for (uint32_t i = 0; i < h->nfields; i++) {
        const ss_field_state *f = &h->fields[i];
        /* count + 1 index entries, or count rows */
        if (f->def.sequence ? h->count >= file_bytes / SS_INDEX_ENTRY
                            : h->count > file_bytes / f->row_bytes)
            return ss_too_big(what, tag, "count", NULL, h->count, file_bytes);
        if (f->total_rows > file_bytes / f->row_bytes)
            return ss_too_big(what, tag, "total_rows", f->name, f->total_rows, file_bytes);
        if (f->nchunks > blocks || (f->def.sequence && f->nchunks > (1ull << 32)))
            return ss_too_big(what, tag, "nchunks", f->name, f->nchunks, file_bytes);
        if (f->tail_bytes > file_bytes || f->tail_bytes > SS_MAX_VALUE)
            return ss_too_big(what, tag, "tail_bytes", f->name, f->tail_bytes, file_bytes);
        used += f->nchunks;
        if (f->def.sequence) used += ss_segment_of(h->count, h->segment_entries) + 1;
    }
    if (used > blocks)
        return ss__fail(SS_ECORRUPT,
                        "%s: %s: %llu chunks and index segments cannot fit in a file of %llu bytes",
                        what, tag == SS_KEY_PROGRESS ? "progress record" : "header",
                        (unsigned long long)used, (unsigned long long)file_bytes);
    return 0;
}
