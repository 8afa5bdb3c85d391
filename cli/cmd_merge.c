/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_merge.c - `seqstore merge DATASET -o STORE`: one store from a dataset
 * of shards (or any store), streaming: examples are appended one by one from
 * the shards' maps, and the writer commits every --commit-bytes, so memory
 * does not grow with the examples' bytes (only the writer's per-example
 * bookkeeping grows with their number: bench_write_rss). */
#include "commands.h"

#include <getopt.h>
#include <string.h>

static void usage(void) {
    printf("usage: seqstore merge DATASET -o STORE [--force]\n\n"
           "Write one store holding the examples of DATASET (a dataset directory or\n"
           "manifest, or a store) in order, with its attributes (the first shard's but\n"
           "source.shard and the per-shard ss.* ones). Streaming: memory grows with the\n"
           "number of examples (about 50 bytes each), not with their bytes.\n"
           "  -o, --output STORE   the store to create\n"
           "  --force              replace STORE if it exists\n"
           "exit codes: 0 ok, 1 error, 2 usage error\n");
}

static int copy_attrs(ss_writer *w, const ss_store *s) {
    for (uint64_t k = 0; k < ss_attr_count(s); k++) {
        ss_attr a;
        if (ss_attr_at(&a, s, k) || ss_writer_set_attr(w, a.name, a.type, a.data, a.size))
            return -1;
    }
    return 0;
}

static int copy_examples(ss_writer *w, const ss_store *s) {
    uint32_t nf = ss_field_count(s);
    ss_value v[SS_MAX_FIELDS];
    for (uint64_t i = 0; i < ss_count(s); i++) {
        for (uint32_t f = 0; f < nf; f++) {
            ss_view view;
            if (ss_get(&view, s, f, i)) return -1;
            v[f] = (ss_value){view.data, view.length};
        }
        if (ss_writer_append(w, v)) return -1;
    }
    return 0;
}

int ss__cmd_merge(int argc, char **argv) {
    static const struct option longopts[] = {{"output", required_argument, 0, 'o'},
                                             {"force", no_argument, 0, 'f'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *out = NULL;
    int force = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        if (c == 'o')
            out = optarg;
        else if (c == 'f')
            force = 1;
        else if (c == 'h') {
            usage();
            return SS_EXIT_OK;
        } else
            return ss__cli_bad_option("merge", c, argv);
    }
    if (optind != argc - 1) return ss__cli_usage_error("merge", "expected one DATASET");
    if (!out) return ss__cli_usage_error("merge", "no output store (-o STORE)");
    const char *in = argv[optind];
    ss_store *s;
    ss__cli_note_store(in, 0);
    if (ss_open(&s, in, 0)) return ss__cli_store_error("merge", "%s", in);
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_NOSYNC | (force ? SS_WRITE_FORCE : 0);
    ss_writer *w;
    ss__cli_note_store(out, 0);
    int rc = ss_writer_create(&w, out, ss_store_schema(s), &wo);
    if (rc) {
        ss_close(s);
        return ss__cli_store_error("merge", "%s", out);
    }
    if (copy_attrs(w, s) || copy_examples(w, s) || ss_writer_finish(w))
        rc = ss__cli_store_error("merge", "%s -> %s", in, out);
    else
        printf("%s: %llu examples from %s\n", out, (unsigned long long)ss_count(s), in);
    ss_writer_free(w);
    ss_close(s);
    return rc;
}
