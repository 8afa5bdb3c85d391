/* make_v1_store.c - how tests/data/v1_store.ss was made (kept for the record;
 * not built). It was compiled against seqstore at commit 2c3a209, the last
 * library that wrote format version 1, and run once:
 *   cc -I include tests/data/make_v1_store.c build/libseqstore.a -llmdb -lxxhash
 *   ./a.out tests/data/v1_store.ss
 * The contents are the pure functions below; tests/test_format_keys.c checks
 * them (test_v1_golden) and that every block carries a version-1 checksum. */
#include "seqstore.h"

#include <stdio.h>

static uint64_t tok_len(uint64_t i) {
    return (i * 37) % 50; /* 0..49 rows: empty examples included */
}
static uint16_t tok_at(uint64_t i, uint64_t k) {
    return (uint16_t)(i * 7919 + k * 31 + 1);
}
static uint32_t label_of(uint64_t i) {
    return (uint32_t)(i * 2654435761u);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    static const ss_field fields[2] = {{"tokens", SS_U16, 1, 0, {0}}, {"label", SS_U32, 0, 0, {0}}};
    ss_schema schema = {2, fields};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.chunk_pages = 1;
    o.flags = SS_WRITE_FORCE;
    ss_writer *w;
    if (ss_writer_create(&w, argv[1], &schema, &o)) return 1;
    uint16_t buf[64];
    for (uint64_t i = 0; i < 300; i++) {
        for (uint64_t k = 0; k < tok_len(i); k++) buf[k] = tok_at(i, k);
        uint32_t label = label_of(i);
        ss_value v[2] = {{buf, tok_len(i)}, {&label, 1}};
        if (ss_writer_append(w, v)) return 1;
    }
    if (ss_writer_set_attr(w, "note", SS_ATTR_TEXT, "version 1", 9)) return 1;
    if (ss_writer_finish(w)) return 1;
    ss_writer_free(w);
    printf("%s: format version %d\n", argv[1], SS_FORMAT_VERSION);
    return 0;
}
