/* SPDX-License-Identifier: BSD-2-Clause */
/* text_harness.h - drives the text engine (converters/text_*.c) without
 * a store, for tests/test_convert_text.c and fuzz/fuzz_text.c: stubs for the
 * framework calls and a canonical dump of what a job produces.
 * Include it once, in a file that includes nothing else of converters/. */
#ifndef SS_TEXT_HARNESS_H
#define SS_TEXT_HARNESS_H

#include "../converters/convert_text.c"
#include "../converters/text_buffers.c"
#include "../converters/text_input.c"
#include "../converters/text_options.c"
#include "../converters/text_pipeline.c"
#include "../converters/text_split.c"
#include "../converters/text_tokens.c"
#include "../converters/text_vocab.c"
#include "../converters/text_worker.c"
#include "../converters/memlimit.c"
#include "../converters/spm_text.c"
#include "../converters/utf8.c"
#include "../converters/vocab.c"
#include "../converters/wordcounts.c"

static ss_conv_options harness_opts = {NULL, 0, 0, 0, 0, 1, 1};

const ss_conv_options *ss__conv_opts(const ss_conv *c) {
    (void)c;
    return &harness_opts;
}
int ss__conv_error(ss_conv *c, const char *fmt, ...) {
    (void)c;
    (void)fmt;
    return 1;
}
int ss__conv_ss_error(ss_conv *c, const char *fmt, ...) {
    (void)c;
    (void)fmt;
    return 1;
}
int ss__conv_usage_error(ss_conv *c, const char *fmt, ...) {
    (void)c;
    (void)fmt;
    return 2;
}
int ss__conv_bad(ss_conv *c, const char *file, uint64_t location, const char *fmt, ...) {
    (void)c;
    (void)file;
    (void)location;
    (void)fmt;
    return 1;
}
uint32_t ss__conv_add_source(ss_conv *c, const char *path) {
    (void)c;
    (void)path;
    return 0;
}
void ss__conv_add_checked(ss_conv *c, const char *path) {
    (void)c;
    (void)path;
}
void ss__conv_note_store(ss_conv *c, const char *path) {
    (void)c;
    (void)path;
}
int ss__conv_begin(ss_conv *c, const ss_schema *schema, uint64_t *skip) {
    (void)c;
    (void)schema;
    *skip = 0;
    return 1;
}
int ss__conv_append(ss_conv *c, const ss_value *values, uint32_t source, uint64_t location) {
    (void)c;
    (void)values;
    (void)source;
    (void)location;
    return 1;
}
int ss__conv_append_at(ss_conv *c, const ss_value *values, uint32_t source, uint64_t location,
                       uint64_t byte) {
    (void)byte;
    return ss__conv_append(c, values, source, location);
}
int ss__conv_append_many(ss_conv *c, uint64_t n, const void *const *data,
                         const uint64_t *const *lengths, uint32_t source, const uint64_t *locations,
                         uint64_t byte) {
    (void)c;
    (void)n;
    (void)data;
    (void)lengths;
    (void)source;
    (void)locations;
    (void)byte;
    return 1;
}
void ss__conv_later(ss_conv *c, void *(*fn)(void *), void *arg) {
    (void)c;
    fn(arg);
}
ss_writer *ss__conv_writer(ss_conv *c) {
    (void)c;
    return NULL;
}
int ss__conv_set_attr(ss_conv *c, const char *name, uint32_t type, const void *data, size_t size) {
    (void)c;
    (void)name;
    (void)type;
    (void)data;
    (void)size;
    return 1;
}
void ss__conv_no_store(ss_conv *c) {
    (void)c;
}
void ss__conv_shard_spec(const ss_conv *c, uint32_t *k, uint32_t *n) {
    (void)c;
    *k = *n = 0;
}
int ss__conv_shard_size(ss_conv *c, uint32_t source, uint64_t size) {
    (void)c;
    (void)source;
    (void)size;
    return 0;
}
void ss__conv_shard_self(ss_conv *c) {
    (void)c;
}
int ss__conv_shard_range(ss_conv *c, uint32_t source, uint64_t *lo, uint64_t *hi) {
    (void)c;
    (void)source;
    *lo = 0;
    *hi = UINT64_MAX;
    return 1;
}
int ss__conv_in_shard_at(ss_conv *c, uint32_t source, uint64_t byte) {
    (void)c;
    (void)source;
    (void)byte;
    return 1;
}
void ss__conv_set_total(ss_conv *c, uint64_t total_bytes) {
    (void)c;
    (void)total_bytes;
}
void ss__conv_progress(ss_conv *c, uint64_t bytes) {
    (void)c;
    (void)bytes;
}
void ss__conv_skipped(ss_conv *c, uint64_t n, const char *what, const char *why) {
    (void)c;
    (void)n;
    (void)what;
    (void)why;
}
int ss__conv_parse_u64(ss_conv *c, const char *option, const char *text, uint64_t min, uint64_t max,
                       uint64_t *out) {
    (void)c;
    (void)option;
    (void)text;
    (void)min;
    (void)max;
    *out = 0;
    return 2;
}

/* A growable byte buffer. */
typedef struct harness_out {
    uint8_t *buf;
    size_t n, cap;
} harness_out;

static int harness_put(harness_out *o, const void *p, size_t n) {
    if (ss__tx_reserve(&o->buf, &o->cap, o->n + n + 1)) return -1;
    if (n) memcpy(o->buf + o->n, p, n);
    o->n += n;
    return 0;
}

/* Split `j` into blocks of `block_bytes` and dump every example or bad
 * record, in order, as (global line, side, length, tokens | message).
 * @return 0, or -1 out of memory. */
static int harness_run(tx_job *j, size_t block_bytes, harness_out *o) {
    free(j->blocks);
    j->blocks = NULL;
    j->block_bytes = block_bytes;
    o->n = 0;
    if (ss__tx_split(j)) return -1;
    tx_slot s;
    memset(&s, 0, sizeof s);
    uint64_t base = 0;
    uint32_t last = UINT32_MAX;
    int rc = 0;
    for (size_t b = 0; b < j->nblocks && !rc; b++) {
        const tx_block *bl = &j->blocks[b];
        ss__tx_process_block(j, bl, &s);
        if (s.oom) {
            rc = -1;
            break;
        }
        if (j->nsides == 1 && bl->input != last) {
            base = 0;
            last = bl->input;
        }
        for (size_t k = 0; k < s.nitems && !rc; k++) {
            const tx_item *it = &s.items[k];
            uint64_t line = base + it->line;
            rc |= harness_put(o, &line, sizeof line);
            for (int sd = 0; sd < j->nsides; sd++) {
                uint64_t len = it->len[sd];
                if (it->bad[sd]) {
                    const char *m = s.msgs + it->bad[sd] - 1;
                    rc |= harness_put(o, "BAD", 3) | harness_put(o, m, strlen(m) + 1);
                    continue;
                }
                if (it->bad[0] || it->bad[1]) continue;
                const uint8_t *p = it->zero_copy[sd]
                                       ? ss__tx_side_input(j, bl, sd)->data + it->off[sd]
                                       : s.tok[sd] + it->off[sd] * j->tok[sd].esize;
                size_t bytes = (size_t)len * (it->zero_copy[sd] ? 1 : j->tok[sd].esize);
                rc |= harness_put(o, &len, sizeof len) | harness_put(o, p, bytes);
            }
        }
        base += s.nlines;
    }
    ss__tx_slot_free(&s);
    return rc;
}

#endif
