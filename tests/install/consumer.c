/* SPDX-License-Identifier: BSD-2-Clause */
/* consumer.c - a program built against an installed seqstore: writes a
 * store, reads it back and checks every token. */
#include <seqstore.h>

#include <stdio.h>
#include <string.h>

static int fail(const char *what, int rc) {
    fprintf(stderr, "consumer: %s: %s (%s)\n", what, ss_strerror(rc), ss_error_message());
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    ss_field f = {"tokens", SS_U16, 1, 0, {0}};
    ss_schema schema = {1, &f};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE;
    ss_writer *w;
    int rc = ss_writer_create(&w, argv[1], &schema, &o);
    if (rc) return fail("create", rc);
    uint16_t buf[100];
    for (uint64_t i = 0; i < 1000; i++) {
        for (uint64_t k = 0; k < i % 100; k++) buf[k] = (uint16_t)(i * 3 + k);
        ss_value v = {buf, i % 100};
        if ((rc = ss_writer_append(w, &v))) return fail("append", rc);
    }
    if ((rc = ss_writer_finish(w))) return fail("finish", rc);
    ss_writer_free(w);
    ss_store *s;
    if ((rc = ss_open(&s, argv[1], 0))) return fail("open", rc);
    int bad = ss_count(s) != 1000;
    for (uint64_t i = 0; i < ss_count(s); i++) {
        ss_view v;
        if ((rc = ss_get(&v, s, 0, i))) return fail("get", rc);
        const uint16_t *t = v.data;
        bad |= v.length != i % 100;
        for (uint64_t k = 0; k < v.length; k++) bad |= t[k] != (uint16_t)(i * 3 + k);
    }
    ss_close(s);
    if (bad) {
        fprintf(stderr, "consumer: wrong data read back\n");
        return 1;
    }
    printf("consumer: ok (seqstore %s)\n", ss_version());
    return 0;
}
