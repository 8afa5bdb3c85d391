/* SPDX-License-Identifier: BSD-2-Clause */
/* consumer.cpp - a C++ program built against an installed seqstore: writes a
 * store, reads it back and checks every token. */
#include <seqstore.h>

#include <cstdio>
#include <vector>

static int fail(const char *what, int rc) {
    std::fprintf(stderr, "consumer_cxx: %s: %s (%s)\n", what, ss_strerror(rc), ss_error_message());
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    ss_field f = {"tokens", SS_U32, 1, 0, {0}};
    ss_schema schema = {1, &f};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE;
    ss_writer *w;
    int rc = ss_writer_create(&w, argv[1], &schema, &o);
    if (rc) return fail("create", rc);
    std::vector<uint32_t> buf;
    for (uint32_t i = 0; i < 500; i++) {
        buf.assign(i % 50, 0);
        for (uint32_t k = 0; k < buf.size(); k++) buf[k] = i * 7 + k;
        ss_value v = {buf.data(), buf.size()};
        if ((rc = ss_writer_append(w, &v))) return fail("append", rc);
    }
    if ((rc = ss_writer_finish(w))) return fail("finish", rc);
    ss_writer_free(w);
    ss_store *s;
    if ((rc = ss_open(&s, argv[1], 0))) return fail("open", rc);
    bool bad = ss_count(s) != 500;
    for (uint64_t i = 0; i < ss_count(s); i++) {
        ss_view v;
        if ((rc = ss_get(&v, s, 0, i))) return fail("get", rc);
        const uint32_t *t = static_cast<const uint32_t *>(v.data);
        bad |= v.length != i % 50;
        for (uint64_t k = 0; k < v.length; k++) bad |= t[k] != i * 7 + k;
    }
    ss_close(s);
    if (bad) {
        std::fprintf(stderr, "consumer_cxx: wrong data read back\n");
        return 1;
    }
    std::printf("consumer_cxx: ok (seqstore %s)\n", ss_version());
    return 0;
}
