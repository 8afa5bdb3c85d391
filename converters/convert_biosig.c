/* convert_biosig.c - `seqstore convert biosig` (work in progress). */
#include "convert.h"

static void usage_biosig(FILE *out) {
    fprintf(out, "usage: seqstore convert biosig FILE... -o STORE\n");
}

static int run_biosig(ss_conv *c, int argc, char **argv) {
    (void)argc, (void)argv;
    return ss_conv_error(c, "convert biosig: not implemented yet");
}

const ss_converter ss_converter_biosig = {"biosig", "biosignals via BioSig", run_biosig,
                                          usage_biosig};
