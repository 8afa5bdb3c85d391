/* SPDX-License-Identifier: BSD-2-Clause */
/* convert_lines.c - `seqstore convert lines FILE... -o STORE`: one example per
 * line, the line's bytes as u8 tokens (`convert text --tokens bytes`). */
#include "text.h"

#include <stdlib.h>
#include <string.h>

static void lines_usage(FILE *out) {
    fputs("usage: seqstore convert lines FILE... -o STORE [--skip-empty]\n"
          "One example per line of each FILE ('-' = stdin, *.gz decompressed); the\n"
          "line's bytes (without its '\\n') are the tokens, dtype u8, field 'tokens'.\n"
          "The same as 'seqstore convert text --tokens bytes'.\n"
          "Empty lines are examples too (of length 0).\n"
          "  --skip-empty   skip blank (empty or whitespace-only) lines; the summary\n"
          "                 says how many\n",
          out);
}

static int run_lines(ss_conv *c, int argc, char **argv) {
    tx_text_options o;
    memset(&o, 0, sizeof o);
    o.kind = TX_BYTES;
    o.mode = TX_LINES;
    o.min_count = 1;
    o.inputs = calloc((size_t)argc + 1, sizeof *o.inputs);
    if (!o.inputs) return ss__conv_error(c, "out of memory");
    int rc = 0, only_files = 0;
    for (int i = 1; i < argc && !rc; i++) {
        if (only_files || argv[i][0] != '-' || !strcmp(argv[i], "-"))
            o.inputs[o.ninputs++] = argv[i];
        else if (!strcmp(argv[i], "--"))
            only_files = 1;
        else if (!strcmp(argv[i], "--skip-empty"))
            o.skip_empty = 1;
        else
            rc = ss__conv_usage_error(c, "unknown option '%s'", argv[i]);
    }
    if (!rc && !o.ninputs) rc = ss__conv_usage_error(c, "no input file");
    if (!rc) rc = ss__tx_text_convert(c, &o);
    free(o.inputs);
    return rc;
}

const ss_converter ss__converter_lines = {
    "lines", "one example per line of text, bytes as u8 tokens", run_lines, lines_usage};
